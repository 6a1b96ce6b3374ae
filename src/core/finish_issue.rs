//! `finish` on the issue a candidate came from (contract §13): whether the issue's closing ends
//! the candidate `retired` (closed by anything but the merge of its pull request), the line
//! `Closes #<issue>` klaud writes into a validated pull request's body, and klaud's one comment
//! on the issue — found by its marker, updated in place — with the pull request, the outcome and
//! its reason, and when the candidate may run again.

use chrono::{DateTime, SecondsFormat, Utc};

use super::finish::{Cleanup, FinishPlan};
use super::outcome::Outcome;
use super::plan::{Action, ActionGroup, LedgerExpectation};
use super::policy::{Cooldown, Policy};
use super::snapshot::{PullRequestFact, Read};

/// The issue a candidate came from, as `finish` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueFact {
    pub number: u64,
    /// Whether it is open (`Err`: it could not be read, so it is not taken as closed).
    pub open: Read<bool>,
}

/// True when the issue is closed and its pull request is not merged (there is none, or it is
/// open or closed unmerged): something else than that merge closed it.
pub fn closed_without_merge(issue: &IssueFact, pull: Option<&PullRequestFact>) -> bool {
    matches!(issue.open, Ok(false)) && !pull.is_some_and(|pull| pull.merged)
}

/// The body with the line `Closes #<issue>` added at its end, or `None` when a line already
/// says so (compared without case and surrounding spaces).
pub fn linked_body(body: &str, issue: u64) -> Option<String> {
    let line = format!("Closes #{issue}");
    if body
        .lines()
        .any(|existing| existing.trim().eq_ignore_ascii_case(&line))
    {
        return None;
    }
    let body = body.trim_end();
    Some(if body.is_empty() {
        line
    } else {
        format!("{body}\n\n{line}")
    })
}

/// The marker of klaud's comment on a candidate's issue: one comment per candidate, whichever
/// session wrote it last.
pub fn issue_comment_marker(candidate: &str) -> String {
    format!("<!-- klaud:issue candidate={candidate} -->")
}

/// When the candidate may run again, as the comment says it.
fn next_run(
    plan: &FinishPlan,
    family: &str,
    policy: &Policy,
    agent_ran: bool,
    now: DateTime<Utc>,
) -> String {
    let at =
        |duration: chrono::Duration| (now + duration).to_rfc3339_opts(SecondsFormat::Secs, true);
    match plan.cleanup {
        Cleanup::Parked => {
            return "the session is parked: it continues in a new job when there is room".into();
        }
        Cleanup::LeftAlone => {
            return "the outcome is pending: klaud records it once the pull request is left to it again".into();
        }
        Cleanup::Done | Cleanup::Untouched => {}
    }
    if plan.outcome == Outcome::Retired {
        return "not while the issue is closed: reopen it and label it again".into();
    }
    if let (Outcome::Validated, Some(number)) = (plan.outcome, plan.pull_request) {
        return format!("not while #{number} is open: it is the maintainers' to review and merge");
    }
    match policy.cooldown(plan.outcome, agent_ran) {
        Cooldown::None => {
            "at the next planner pass, while a maintainer's label stays on the issue".into()
        }
        Cooldown::Candidate(duration) => {
            format!("after {} (cooldown of `{}`)", at(duration), plan.outcome)
        }
        Cooldown::Family(duration) => format!(
            "after {}: `{}` holds the family {family} until then",
            at(duration),
            plan.outcome
        ),
        Cooldown::WhilePullRequestOpen => {
            "not while its pull request is open: it belongs to the maintainers".into()
        }
    }
}

/// klaud's comment on the issue: its marker, then the pull request, the outcome and reason, and
/// when the candidate may run again.
pub fn issue_comment_body(
    plan: &FinishPlan,
    family: &str,
    policy: &Policy,
    agent_ran: bool,
    now: DateTime<Utc>,
) -> String {
    let mut body = issue_comment_marker(&plan.candidate);
    body.push_str(&format!(
        "\n**klaud** worked on this issue as `{}`: **{}**\n\n",
        plan.candidate, plan.outcome
    ));
    match plan.pull_request {
        Some(number) => body.push_str(&format!("- pull request: #{number}\n")),
        None => body.push_str("- pull request: none\n"),
    }
    body.push_str(&format!("- reason: {}\n", plan.reason));
    body.push_str(&format!(
        "- may run again: {}\n",
        next_run(plan, family, policy, agent_ran, now)
    ));
    body
}

impl FinishPlan {
    /// The comment on the candidate's issue as its own group: it rests on no pull request, so
    /// it is written whatever became of the pull request's changes. `None` without an issue.
    pub fn issue_comment_group(&self, body: String) -> Option<ActionGroup> {
        let issue = self.issue?;
        Some(ActionGroup {
            subject: format!("issue #{issue}"),
            candidate: Some(self.candidate.clone()),
            pull_request_check: None,
            destructive: false,
            ledger_expectation: LedgerExpectation::Nothing,
            independent: true,
            actions: vec![Action::PostIssueComment {
                issue,
                marker: issue_comment_marker(&self.candidate),
                body,
            }],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closing_line_is_added_once_at_the_end() {
        assert_eq!(linked_body("", 7).as_deref(), Some("Closes #7"));
        assert_eq!(
            linked_body("Issue #7: cached the tables.\n", 7).as_deref(),
            Some("Issue #7: cached the tables.\n\nCloses #7")
        );
        assert_eq!(linked_body("text\n  closes #7 \n", 7), None);
        assert_eq!(
            linked_body("Closes #70", 7).as_deref(),
            Some("Closes #70\n\nCloses #7")
        );
    }
}
