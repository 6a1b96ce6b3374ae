//! Resuming parked sessions (contract §3.4): oldest first, while the live sessions in the
//! ledger stay under `max-candidates`, by dispatching the candidate workflow for a parked draft
//! whose commits are all the bot's. The cap is decided again on the ledger as it is written, so
//! passes running at once never exceed it. Parked sessions that stay parked keep their label.
//! While the dashboard's pause is ticked or the daily budget is used up (contract §10), nothing
//! is resumed: every parked session stays parked with the reason. A session the dashboard's
//! *resume now* put first in line is offered the room before the older ones. A session whose
//! resumes no job has adopted for [`UNADOPTED_RESUMES_HELD_AFTER`] (the candidate workflow's runs
//! end before `session`) is held until the dashboard asks again, so a broken workflow is not
//! dispatched on every pass.

use super::labels::status_label_sync;
use std::collections::BTreeMap;

use chrono::Duration;

use super::{CandidateDecision, CandidateReport, Facts, Seen, Verdict, decision};
use crate::core::cost::budget_exhausted;
use crate::core::ledger::{Session, SessionState};
use crate::core::outcome::StatusLabel;
use crate::core::ownership::{CommitOwnership, commit_ownership};
use crate::core::plan::{Action, ActionGroup, LedgerExpectation, PullRequestCheck};
use crate::core::recover::ledger_plan::ResumeRecord;
use crate::core::snapshot::PullRequestFact;

/// How long resumes of a session may go without a job adopting one before recovery stops
/// dispatching them: a dispatched job adopts within minutes unless its run fails before
/// `session`, and recovery runs about hourly, so this is a handful of failed runs.
pub const UNADOPTED_RESUMES_HELD_AFTER: Duration = Duration::hours(6);

/// Parked sessions, oldest first, start again while live sessions stay under the cap; the
/// others keep their parked status label.
///
/// `decided` holds the candidates' verdicts (only those decided `parked` are considered) and
/// `ending` the live sessions this pass reconciles, whose room under the cap the resumes may
/// take. Returns a decision for every parked candidate: resumed, or parked with its label.
/// A session given room takes it even when it stays parked for another reason.
pub(super) fn resume_parked(
    facts: &Facts<'_>,
    decided: &BTreeMap<String, CandidateReport>,
    ending: usize,
) -> Vec<(String, CandidateDecision)> {
    let max_candidates = facts.policy.max_candidates;
    let live = facts
        .snapshot
        .ledger
        .live_sessions()
        .count()
        .saturating_sub(ending);
    let mut room = (max_candidates as usize).saturating_sub(live);
    let ledger = &facts.snapshot.ledger;
    let budget = budget_exhausted(ledger, facts.policy, facts.context.now);
    let mut decisions = Vec::new();
    for session in parked_in_resume_order(facts, decided) {
        let id = session.candidate.clone();
        let pull = open_pull_request_of(facts, &id);
        let resumed = if let Some(pause) = &ledger.steering.paused {
            Err(StaysParked(format!(
                "paused: nothing is resumed while the dashboard's pause is ticked (by {} since {})",
                pause.by,
                pause.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            )))
        } else if let Some(exhausted) = budget {
            Err(StaysParked(format!(
                "budget-exhausted: nothing is resumed: {}",
                exhausted.figures()
            )))
        } else if let Some(since) = held_since(facts, session) {
            Err(StaysParked(format!(
                "held: no job has adopted a resume of it since {} (the candidate workflow's runs \
                 end before `session`); tick resume now on the dashboard to try again",
                since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            )))
        } else if room == 0 {
            Err(StaysParked(format!(
                "waiting for room under the cap ({live} live of {max_candidates})"
            )))
        } else {
            room -= 1;
            resume(facts, session, pull)
        };
        let resumed_or_parked =
            resumed.unwrap_or_else(|StaysParked(reason)| stays_parked(facts, &id, pull, reason));
        decisions.push((id, resumed_or_parked));
    }
    decisions
}

/// Since when the session's resumes have gone unadopted, when that is long enough to hold it and
/// the dashboard has not asked for it again.
fn held_since(facts: &Facts<'_>, session: &Session) -> Option<chrono::DateTime<chrono::Utc>> {
    let since = session.resuming.as_ref()?.at;
    let asked_again = facts
        .snapshot
        .ledger
        .steering
        .resume_first
        .contains_key(&session.candidate);
    (facts.context.now - since >= UNADOPTED_RESUMES_HELD_AFTER && !asked_again).then_some(since)
}

/// The parked sessions of the candidates decided `parked`: those the dashboard put first in
/// line (in the order asked), then the others oldest first (then by id).
fn parked_in_resume_order<'a>(
    facts: &Facts<'a>,
    decided: &BTreeMap<String, CandidateReport>,
) -> Vec<&'a Session> {
    let mut parked: Vec<&Session> = facts
        .snapshot
        .ledger
        .sessions
        .iter()
        .filter(|session| session.state == SessionState::Parked)
        .filter(|session| {
            decided
                .get(&session.candidate)
                .is_some_and(|report| report.verdict == Verdict::Parked)
        })
        .collect();
    parked.sort_by(|a, b| (a.started_at, &a.candidate).cmp(&(b.started_at, &b.candidate)));
    let order = facts.snapshot.ledger.steering.resume_order(
        &parked
            .iter()
            .map(|session| session.candidate.as_str())
            .collect::<Vec<_>>(),
    );
    order
        .into_iter()
        .filter_map(|candidate| {
            parked
                .iter()
                .find(|session| session.candidate == candidate)
                .copied()
        })
        .collect()
}

/// The open pull request from the candidate's branch in this repository, if any.
fn open_pull_request_of<'a>(facts: &Facts<'a>, id: &str) -> Option<&'a PullRequestFact> {
    let branch = facts.policy.candidate_branch(id);
    facts
        .snapshot
        .open_pull_requests
        .items
        .iter()
        .find(|pull| pull.head_branch == branch && pull.from_this_repository)
}

/// Why a parked session is not resumed this pass.
struct StaysParked(String);

/// A parked session that stays parked, and why: its draft keeps (or gets) the parked label.
fn stays_parked(
    facts: &Facts<'_>,
    id: &str,
    pull: Option<&PullRequestFact>,
    reason: String,
) -> CandidateDecision {
    let group = pull.and_then(|pull| status_label_sync(facts, id, pull, StatusLabel::Parked));
    decision(
        pull.map(|pull| pull.number),
        Verdict::Parked,
        None,
        reason,
        group,
    )
}

/// A parked session given room under the cap, resumed: its open draft by the bot, whose
/// commits are all the bot's, re-checked at its head while the candidate workflow is
/// dispatched on the default branch and the draft labelled in progress. `Err` says why it
/// stays parked.
fn resume(
    facts: &Facts<'_>,
    session: &Session,
    pull: Option<&PullRequestFact>,
) -> Result<CandidateDecision, StaysParked> {
    let policy = facts.policy;
    let id = &session.candidate;
    let pull = pull
        .filter(|pull| pull.draft && pull.author.as_deref() == Some(policy.bot.as_str()))
        .ok_or_else(|| StaysParked("no open draft pull request by the bot to resume".into()))?;
    commits_all_bots(facts, pull)?;
    let git_ref = dispatch_ref(facts)?;
    let resume = ResumeRecord {
        candidate: id.clone(),
        parent_run: session.parent_run,
        parent_attempt: session.parent_attempt,
    };
    let mut actions = vec![Action::DispatchCandidate {
        candidate: id.clone(),
        workflow: policy.candidate_workflow.clone(),
        git_ref,
    }];
    if let Some(group) = status_label_sync(facts, id, pull, StatusLabel::InProgress) {
        actions.extend(group.actions);
    }
    let group = ActionGroup {
        subject: id.clone(),
        candidate: Some(id.clone()),
        pull_request_check: Some(PullRequestCheck::examined_draft(policy, pull)),
        destructive: false,
        ledger_expectation: LedgerExpectation::ResumedByThisPass,
        independent: false,
        actions,
    };
    let reason = format!(
        "resumed oldest first under the cap of {}",
        policy.max_candidates
    );
    let mut resumed = decision(
        Some(pull.number),
        Verdict::Resumed,
        None,
        reason,
        Some(group),
    );
    resumed.resume = Some(resume);
    Ok(resumed)
}

/// Whether every commit of the draft is the bot's, its head above all (a failed read counts as
/// not); `Err` says why it is not resumed, or that its commits are not read yet.
fn commits_all_bots(facts: &Facts<'_>, pull: &PullRequestFact) -> Result<(), StaysParked> {
    let bot_only = match facts.commits(pull.number) {
        Seen::Known(commits) => {
            commit_ownership(commits, pull.number, &pull.head_sha, &facts.policy.bot)
                == CommitOwnership::BotOnly
        }
        Seen::Failed(_) => false,
        Seen::Unread => return Err(StaysParked("waiting for its commits to be read".into())),
    };
    if !bot_only {
        return Err(StaysParked(format!(
            "#{} has commits that are not the bot's: not resumed",
            pull.number
        )));
    }
    Ok(())
}

/// The default branch the candidate workflow is dispatched on; `Err` while it cannot be read.
fn dispatch_ref(facts: &Facts<'_>) -> Result<String, StaysParked> {
    match facts.default_branch() {
        Seen::Known(branch) => Ok(branch.clone()),
        Seen::Failed(error) => Err(StaysParked(format!(
            "the default branch could not be read ({error})"
        ))),
        Seen::Unread => Err(StaysParked(
            "waiting for the default branch to be read".into(),
        )),
    }
}
