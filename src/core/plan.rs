//! Writes as data: every change a mode wants made on GitHub is an [`Action`], grouped into
//! [`ActionGroup`]s that the shell applies in order, re-checking each target just before it is
//! changed. Nothing here performs a write; `shell::execute` is the one executor every mode's
//! groups go through (a dry run too, with its writes recorded instead of sent).

use std::fmt;

use serde::Serialize;

use super::outcome::StatusLabel;
use super::policy::Policy;
use super::snapshot::PullRequestFact;

/// One change on GitHub.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Action {
    /// Cancel a run that has not finished (a run that finished meanwhile is not an error).
    CancelRun {
        run_id: u64,
        workflow: String,
    },
    /// Make `label` the pull request's only status label: add it when missing and remove each
    /// of `others` (every other status label) that is there. Written with the label token.
    SetStatusLabel {
        pull_request: u64,
        label: Option<String>,
        others: Vec<String>,
    },
    /// Remove a label (a sweep label) when present.
    RemoveLabel {
        pull_request: u64,
        label: String,
    },
    MarkReady {
        pull_request: u64,
        node_id: String,
    },
    /// Redraft an open pull request (never a closed one).
    ConvertToDraft {
        pull_request: u64,
        node_id: String,
    },
    ClosePullRequest {
        pull_request: u64,
    },
    /// Delete a branch only while it still points at `expected_sha`, and only while GitHub says
    /// the bot closed `closed_pull_request` (closing one a maintainer closed a moment earlier
    /// also succeeds, and leaves it the maintainer's: contract §4 keeps its branch).
    DeleteBranch {
        branch: String,
        expected_sha: String,
        closed_pull_request: u64,
    },
    /// Delete a legacy lock ref only while it still points at `expected_sha`.
    DeleteLockRef {
        name: String,
        expected_sha: String,
    },
    /// Post one of klaud's comments, or refresh the bot's comment carrying `marker` in place
    /// (nothing is sent when its text is already `body`).
    PostMarkedComment {
        pull_request: u64,
        comment: MarkedComment,
        marker: String,
        body: String,
    },
    /// Add the line `Closes #<issue>` to the pull request's body, once: klaud writes it, the rest
    /// of the body stays as it is.
    LinkIssue {
        pull_request: u64,
        issue: u64,
    },
    /// Post klaud's comment on the issue a candidate came from, or refresh the bot's comment
    /// carrying `marker` in place (nothing is sent when its text is already `body`).
    PostIssueComment {
        issue: u64,
        marker: String,
        body: String,
    },
    /// Start a candidate's workflow again (`workflow_dispatch` with the candidate as input).
    DispatchCandidate {
        candidate: String,
        workflow: String,
        git_ref: String,
    },
    /// Create the dashboard issue (`issue: None`) with its title and label, or rewrite klaud's
    /// dashboard (reopening it when `reopen`) only while its body is still `expected_body`: an
    /// edit made since it was read is never overwritten.
    WriteDashboard {
        issue: Option<u64>,
        title: String,
        label: String,
        body: String,
        reopen: bool,
        #[serde(skip)]
        expected_body: Option<String>,
    },
}

/// Which of klaud's comments a [`Action::PostMarkedComment`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MarkedComment {
    /// The completion receipt `finish` posts.
    Receipt,
    /// The session log `note` keeps.
    SessionLog,
    /// The note on an after-care pull request a newer one superseded (contract §12).
    Superseded,
}

impl MarkedComment {
    pub fn name(self) -> &'static str {
        match self {
            MarkedComment::Receipt => "completion receipt",
            MarkedComment::SessionLog => "session log",
            MarkedComment::Superseded => "superseded note",
        }
    }
}

impl Action {
    /// The pull request this action changes, if any.
    pub fn pull_request(&self) -> Option<u64> {
        match self {
            Action::SetStatusLabel { pull_request, .. }
            | Action::RemoveLabel { pull_request, .. }
            | Action::MarkReady { pull_request, .. }
            | Action::ConvertToDraft { pull_request, .. }
            | Action::ClosePullRequest { pull_request }
            | Action::LinkIssue { pull_request, .. }
            | Action::PostMarkedComment { pull_request, .. } => Some(*pull_request),
            _ => None,
        }
    }

    /// Writes this action sends at most when nothing goes wrong. A ref deletion is one write
    /// when sent alone; the executor sends many in one request and charges the request.
    pub fn writes(&self) -> u64 {
        match self {
            // Usually one label added and the previous one removed.
            Action::SetStatusLabel { .. } => 2,
            _ => 1,
        }
    }

    /// A branch or lock ref deletion (sent in batches, conditional on the sha checked).
    pub fn is_ref_deletion(&self) -> bool {
        matches!(
            self,
            Action::DeleteBranch { .. } | Action::DeleteLockRef { .. }
        )
    }

    /// Whether the group's pull request check must hold before this action is sent: every
    /// action but cancelling a run and deleting a ref, which re-check their own targets (a
    /// resume's dispatch too: a handed-off pull request is not resumed).
    pub fn rests_on_pull_request(&self) -> bool {
        !matches!(
            self,
            Action::CancelRun { .. }
                | Action::DeleteBranch { .. }
                | Action::DeleteLockRef { .. }
                | Action::WriteDashboard { .. }
                | Action::PostIssueComment { .. }
        )
    }
}

/// The action making `wanted` the pull request's only status label (none at all for `None`),
/// or `None` when the labels already say so. Status labels are display only: this reads the
/// labels to avoid a needless write, never to decide anything else.
pub fn status_label_action(
    policy: &Policy,
    pull: &PullRequestFact,
    wanted: Option<StatusLabel>,
) -> Option<Action> {
    status_label_action_on(policy, pull.number, &pull.labels, wanted)
}

/// [`status_label_action`] for pull request `number` carrying `labels` (also a closed one, read
/// through its issue).
pub fn status_label_action_on(
    policy: &Policy,
    number: u64,
    labels: &[String],
    wanted: Option<StatusLabel>,
) -> Option<Action> {
    let wanted_name = wanted.map(|label| policy.status_label(label).to_string());
    let others: Vec<String> = policy
        .all_status_labels()
        .into_iter()
        .filter(|name| Some(*name) != wanted_name.as_deref())
        .map(str::to_string)
        .collect();
    let has_wanted = wanted_name
        .as_ref()
        .is_none_or(|name| labels.contains(name));
    let has_others = others.iter().any(|name| labels.contains(name));
    (!has_wanted || has_others).then_some(Action::SetStatusLabel {
        pull_request: number,
        label: wanted_name,
        others,
    })
}

impl fmt::Display for Action {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::CancelRun { run_id, workflow } => {
                write!(formatter, "cancel run {run_id} ({workflow})")
            }
            Action::SetStatusLabel {
                pull_request,
                label: Some(label),
                ..
            } => write!(formatter, "set status label {label} on #{pull_request}"),
            Action::SetStatusLabel {
                pull_request,
                label: None,
                ..
            } => write!(formatter, "remove the status labels of #{pull_request}"),
            Action::RemoveLabel {
                pull_request,
                label,
            } => write!(formatter, "remove label {label} from #{pull_request}"),
            Action::MarkReady { pull_request, .. } => {
                write!(formatter, "mark #{pull_request} ready for review")
            }
            Action::ConvertToDraft { pull_request, .. } => {
                write!(formatter, "convert #{pull_request} to a draft")
            }
            Action::ClosePullRequest { pull_request } => write!(formatter, "close #{pull_request}"),
            Action::DeleteBranch {
                branch,
                expected_sha,
                ..
            } => write!(
                formatter,
                "delete branch {branch} (if still at {})",
                short(expected_sha)
            ),
            Action::DeleteLockRef { name, expected_sha } => write!(
                formatter,
                "delete legacy lock ref {name} (if still at {})",
                short(expected_sha)
            ),
            Action::PostMarkedComment {
                pull_request,
                comment,
                ..
            } => write!(
                formatter,
                "post or refresh the {} on #{pull_request}",
                comment.name()
            ),
            Action::LinkIssue {
                pull_request,
                issue,
            } => write!(
                formatter,
                "link #{pull_request} to issue #{issue} (Closes #{issue})"
            ),
            Action::PostIssueComment { issue, .. } => {
                write!(
                    formatter,
                    "post or refresh klaud's comment on issue #{issue}"
                )
            }
            Action::DispatchCandidate {
                candidate,
                workflow,
                git_ref,
            } => write!(
                formatter,
                "dispatch {workflow} on {git_ref} for candidate {candidate}"
            ),
            Action::WriteDashboard {
                issue,
                title,
                reopen,
                ..
            } => formatter.write_str(&dashboard_write(*issue, title, *reopen)),
        }
    }
}

/// How a dashboard write reads: created, or rewritten (and reopened).
fn dashboard_write(issue: Option<u64>, title: &str, reopen: bool) -> String {
    match (issue, reopen) {
        (None, _) => format!("create the dashboard issue \"{title}\""),
        (Some(number), true) => format!("reopen and rewrite the dashboard #{number}"),
        (Some(number), false) => format!("rewrite the dashboard #{number}"),
    }
}

/// What a pull request must still look like, re-read just before the group's first change to
/// it; any difference drops the group's remaining actions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct PullRequestCheck {
    pub number: u64,
    /// The head the decision examined; `None` when any head will do (status labels of a live
    /// session, whose agent may still push).
    pub head_sha: Option<String>,
    /// The author the pull request must have (the bot).
    pub author: String,
    /// `Some(true)`: must still be a draft; `Some(false)`: must still be ready.
    pub draft: Option<bool>,
    /// The label that hands a pull request to maintainers: it must not be there.
    pub handoff_label: String,
    /// `true`: must still be open; `false`: must still be closed (the status label of a closed
    /// pull request is the only change made to one).
    pub open: bool,
}

impl PullRequestCheck {
    /// The bot's open draft `pull` exactly as examined: still open, a draft, by the bot, at
    /// the same head and not handed off.
    pub fn examined_draft(policy: &Policy, pull: &PullRequestFact) -> Self {
        PullRequestCheck {
            number: pull.number,
            head_sha: Some(pull.head_sha.clone()),
            author: policy.bot.clone(),
            draft: Some(true),
            handoff_label: policy.handoff_label.clone(),
            open: true,
        }
    }

    /// The bot's open pull request `pull` exactly as examined, draft or ready as it was: still
    /// open, in that state, by the bot, at the same head and not handed off.
    pub fn examined(policy: &Policy, pull: &PullRequestFact) -> Self {
        PullRequestCheck {
            draft: Some(pull.draft),
            ..PullRequestCheck::examined_draft(policy, pull)
        }
    }

    /// The bot's open pull request `number` at any head, draft or ready, not handed off (a
    /// live session's agent may still push).
    pub fn open_by_the_bot(policy: &Policy, number: u64) -> Self {
        PullRequestCheck {
            number,
            head_sha: None,
            author: policy.bot.clone(),
            draft: None,
            handoff_label: policy.handoff_label.clone(),
            open: true,
        }
    }
}

/// What the ledger must still say about the group's candidate when the pass writes it, or the
/// group is dropped (another pass or mode changed the candidate meanwhile).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "expect", rename_all = "kebab-case")]
pub enum LedgerExpectation {
    /// No live or parked session of the candidate.
    NoOpenSession,
    /// The live session with this parent run, finished by this pass.
    FinishedByThisPass { parent_run: u64 },
    /// The parked session resumed by this pass.
    ResumedByThisPass,
    /// The after-care session started by this pass (contract §12).
    AftercareStartedByThisPass,
    /// Nothing about the candidate (legacy refs, labels of live sessions).
    Nothing,
}

/// Actions applied one after another; the first one that fails or is dropped stops the rest
/// (unless `independent`), which the next pass does again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ActionGroup {
    /// What the group is about: a candidate id, or e.g. `legacy lock refs`.
    pub subject: String,
    pub candidate: Option<String>,
    /// Checked before the group's first pull request change.
    pub pull_request_check: Option<PullRequestCheck>,
    /// Only a pass holding the recovery lease may apply it.
    pub destructive: bool,
    pub ledger_expectation: LedgerExpectation,
    /// Each action stands alone: one failing does not stop the others.
    pub independent: bool,
    pub actions: Vec<Action>,
}

impl ActionGroup {
    pub fn writes(&self) -> u64 {
        self.actions.iter().map(Action::writes).sum()
    }
}

fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_read_as_sentences() {
        let actions = [
            Action::CancelRun {
                run_id: 7,
                workflow: "e2e-tests.yml".into(),
            },
            Action::SetStatusLabel {
                pull_request: 3,
                label: Some("klaud-error".into()),
                others: vec!["klaud-in-progress".into()],
            },
            Action::ClosePullRequest { pull_request: 3 },
            Action::DeleteBranch {
                branch: "klaud/auto-a".into(),
                expected_sha: "0123456789abcdef".into(),
                closed_pull_request: 3,
            },
        ];
        let lines: Vec<String> = actions.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "cancel run 7 (e2e-tests.yml)",
                "set status label klaud-error on #3",
                "close #3",
                "delete branch klaud/auto-a (if still at 0123456)",
            ]
        );
        assert_eq!(actions[1].writes(), 2);
        assert_eq!(actions[2].pull_request(), Some(3));
    }
}
