//! One candidate's verdict (contract §5): live, parked, reconciled (its parent ended: record the
//! outcome, clean up per §4), swept (abandoned: cancel the bot's smoke runs, close the bot-only
//! draft, delete the branch closed by the bot), left alone or needs inspection.
//!
//! The guards are checked in one place (`guards.rs`) before anything is planned:
//! a pull request whose head moved to a commit that is not the bot's, a sweep run started by
//! anyone but the bot after the session ended, a ready pull request without a validated record,
//! or any read that failed make the candidate "needs inspection", and a candidate that needs
//! inspection gets no action at all — the same pass cannot sweep it afterwards.

use chrono::{DateTime, Utc};

use super::cleanup::{cancel_bot_smokes, cleanup_group};
use super::guards::{
    BranchFinding, Examination, ReadyPullRequest, SweepFinding, deletable_branch,
    examine_pull_request, maintainer_sweep, ready_pull_request,
};
use super::labels::status_label_sync;
use super::liveness::{Alive, Liveness};
use super::{CandidateDecision, Facts, RunSeen, Seen, Verdict, decision};
use crate::core::ledger::{Kept, KeptObject, KeptVerdict, Session, SessionState};
use crate::core::outcome::{BranchOnCleanup, Outcome, StatusLabel};
use crate::core::plan::{
    Action, ActionGroup, LedgerExpectation, PullRequestCheck, status_label_action_on,
};
use crate::core::recover::ledger_plan::OutcomeRecord;
use crate::core::snapshot::PullRequestFact;

pub(super) fn decide(facts: &Facts<'_>, id: &str, liveness: &Liveness) -> CandidateDecision {
    let snapshot = facts.snapshot;
    let policy = facts.policy;
    let branch = policy.candidate_branch(id);
    let session = facts.session_of(id);
    let open_session = session.filter(|session| session.state != SessionState::Finished);
    let pulls: Vec<&PullRequestFact> = snapshot
        .open_pull_requests
        .items
        .iter()
        .filter(|pull| pull.head_branch == branch && pull.from_this_repository)
        .collect();
    let pull = pulls.first().copied();
    let number = pull.map(|pull| pull.number);
    let recorded = session.and_then(|session| session.outcome);

    if let Some(gap) = &snapshot.open_pull_requests.gap {
        let reason = format!("the open pull requests could not all be listed ({gap})");
        return decision(number, Verdict::Skipped, recorded, reason, None);
    }
    if pulls.len() > 1 {
        let numbers: Vec<String> = pulls.iter().map(|p| format!("#{}", p.number)).collect();
        let reason = format!(
            "several open pull requests from {branch}: {}",
            numbers.join(", ")
        );
        return decision(number, Verdict::NeedsInspection, recorded, reason, None);
    }
    if let Some(pull) = pull
        && pull.author.as_deref() != Some(policy.bot.as_str())
    {
        let reason = format!(
            "#{} was opened by {}, not by the bot",
            pull.number,
            pull.author.as_deref().unwrap_or("a deleted account")
        );
        return decision(number, Verdict::NeedsInspection, recorded, reason, None);
    }
    let handed_off = pull.is_some_and(|pull| pull.labels.contains(&policy.handoff_label));
    if open_session.is_some_and(|session| session.state == SessionState::Parked) && !handed_off {
        return decision(
            number,
            Verdict::Parked,
            None,
            "waiting for room under the cap",
            None,
        );
    }
    match liveness.of(facts, id, session) {
        Alive::Yes(why) => {
            let group = pull
                .filter(|_| !handed_off)
                .and_then(|pull| status_label_sync(facts, id, pull, StatusLabel::InProgress));
            return decision(number, Verdict::Live, None, why, group);
        }
        Alive::Unknown(why) => {
            return decision(number, Verdict::Skipped, recorded, why, None);
        }
        Alive::Unreadable(why) => {
            return decision(number, Verdict::NeedsInspection, recorded, why, None);
        }
        Alive::No => {}
    }
    if let Some(gap) = &snapshot.refs.gap {
        // A branch that was not listed may still exist: nothing is cleaned up on a guess.
        let reason = format!("the candidate branches could not all be listed ({gap})");
        return decision(number, Verdict::Skipped, recorded, reason, None);
    }
    if handed_off {
        return hand_off(facts, id, pull.map(|pull| pull.number), open_session);
    }
    match (open_session, pull) {
        (Some(session), _) => reconcile(facts, id, session, pull, liveness),
        (None, Some(pull)) => sweep(facts, id, session, pull, liveness),
        (None, None) => decision(
            None,
            Verdict::LeftAlone,
            recorded,
            "no open session or pull request",
            None,
        ),
    }
}

/// A handed-off pull request is never changed again; a live session whose parent ended is
/// recorded as `handoff`.
fn hand_off(
    facts: &Facts<'_>,
    id: &str,
    number: Option<u64>,
    session: Option<&Session>,
) -> CandidateDecision {
    let label = facts.policy.handoff_label.clone();
    match session.filter(|session| session.state == SessionState::Live) {
        Some(session) => {
            let record = OutcomeRecord {
                candidate: id.to_string(),
                parent_run: session.parent_run,
                outcome: Outcome::Handoff,
                agent_ran: true,
            };
            let reason = format!(
                "its parent run {} ended and the pull request carries {label}: recorded as handoff, nothing on GitHub touched",
                session.parent_run
            );
            decision(
                number,
                Verdict::Reconciled,
                Some(Outcome::Handoff),
                reason,
                None,
            )
            .recording(record)
        }
        None => {
            let reason = format!("handed off to maintainers ({label})");
            let outcome = facts.session_of(id).and_then(|session| session.outcome);
            decision(number, Verdict::LeftAlone, outcome, reason, None)
        }
    }
}

/// A live session whose parent ended: record its outcome, then clean up per the outcome.
fn reconcile(
    facts: &Facts<'_>,
    id: &str,
    session: &Session,
    pull: Option<&PullRequestFact>,
    liveness: &Liveness,
) -> CandidateDecision {
    let parent = session.parent_run;
    let ended_at = match facts.run_state(parent) {
        RunSeen::Ended(ended_at) => ended_at.unwrap_or(session.started_at),
        // `Alive::No` for a live session means its parent ended.
        _ => session.started_at,
    };
    let pending = session.pending_outcome;
    let record = |outcome| OutcomeRecord {
        candidate: id.to_string(),
        parent_run: parent,
        outcome,
        agent_ran: true,
    };
    let Some(pull) = pull else {
        return reconcile_without_open_pull_request(facts, id, session, ended_at, liveness);
    };
    let number = Some(pull.number);
    match ready_pull_request(pull, pending == Some(Outcome::Validated)) {
        Some(ReadyPullRequest::Validated) => {
            // The session reported validated and marked it ready before its parent ended.
            let reason = format!(
                "its parent run {parent} ended after it reported validated; #{} stays ready",
                pull.number
            );
            return decision(
                number,
                Verdict::Reconciled,
                Some(Outcome::Validated),
                reason,
                None,
            )
            .recording(record(Outcome::Validated));
        }
        Some(ReadyPullRequest::Unexplained(reason)) => {
            return decision(number, Verdict::NeedsInspection, None, reason, None);
        }
        None => {}
    }
    let (maintainer_commit, final_sweep_succeeded) =
        match examine_pull_request(facts, pull, ended_at, "its parent ended") {
            Examination::Clear {
                active_sweep: Some(run),
                ..
            } => {
                let reason = format!("sweep run {run} on its branch is active");
                return decision(number, Verdict::Live, None, reason, None);
            }
            Examination::Clear {
                maintainer_commit,
                final_sweep_succeeded,
                ..
            } => (maintainer_commit, final_sweep_succeeded),
            Examination::NeedsInspection { reason, .. } => {
                return decision(number, Verdict::NeedsInspection, None, reason, None);
            }
            Examination::Waiting(what) => return waiting(number, &what),
        };
    let (outcome, why) = if final_sweep_succeeded {
        (
            Outcome::Validated,
            "the final sweep on its head succeeded".to_string(),
        )
    } else if let Some(pending) = pending {
        (
            pending,
            "the outcome it reported before its parent ended".to_string(),
        )
    } else {
        (Outcome::NoOutcome, "no outcome was reported".to_string())
    };
    let mut reason = format!("its parent run {parent} ended; {outcome}: {why}");
    let group = match maintainer_commit {
        Some(login) => {
            reason.push_str(&format!(
                "; #{} has a commit by {login}: left as it is",
                pull.number
            ));
            None
        }
        None => Some(cleanup_group(
            facts,
            id,
            Some(pull),
            outcome,
            LedgerExpectation::FinishedByThisPass { parent_run: parent },
            liveness,
            &mut reason,
        )),
    };
    decision(number, Verdict::Reconciled, Some(outcome), reason, group).recording(record(outcome))
}

/// A live session whose parent ended without an open pull request: its pull request was
/// closed (by a maintainer: `closed-by-maintainer`), merged, or never opened.
fn reconcile_without_open_pull_request(
    facts: &Facts<'_>,
    id: &str,
    session: &Session,
    ended_at: DateTime<Utc>,
    liveness: &Liveness,
) -> CandidateDecision {
    let branch = facts.policy.candidate_branch(id);
    let parent = session.parent_run;
    let number = match session.pull_request {
        Some(number) => Some(number),
        None => match facts.branch_pull_requests(&branch) {
            Seen::Known(pulls) => pulls
                .iter()
                .filter(|pull| pull.from_this_repository && pull.created_at >= session.started_at)
                .map(|pull| pull.number)
                .max(),
            Seen::Failed(error) => {
                let reason = format!("the pull requests of {branch} could not be read ({error})");
                return decision(None, Verdict::NeedsInspection, None, reason, None);
            }
            Seen::Unread => return waiting(None, "its pull requests"),
        },
    };
    let fallback = session.pending_outcome.unwrap_or(Outcome::NoOutcome);
    let mut closed_by_bot = false;
    let (outcome, mut reason) = match number {
        None => (
            fallback,
            format!("its parent run {parent} ended before it opened a pull request; {fallback}"),
        ),
        Some(number) => match facts.issue(number) {
            Seen::Unread => {
                return waiting(Some(number), "who closed its pull request");
            }
            Seen::Failed(error) => {
                let reason = format!("#{number} could not be read ({error})");
                return decision(Some(number), Verdict::NeedsInspection, None, reason, None);
            }
            Seen::Known(issue) if issue.open => {
                let reason =
                    format!("#{number} is open but was not listed: left for the next pass");
                return decision(Some(number), Verdict::Skipped, None, reason, None);
            }
            Seen::Known(issue) if issue.merged => {
                let outcome = session.pending_outcome.unwrap_or(Outcome::Validated);
                (
                    outcome,
                    format!("its parent run {parent} ended and #{number} was merged; {outcome}"),
                )
            }
            Seen::Known(issue) if issue.closed_by.as_deref() != Some(facts.policy.bot.as_str()) => {
                (
                    Outcome::ClosedByMaintainer,
                    format!(
                        "#{number} was closed unmerged by {}",
                        issue.closed_by.as_deref().unwrap_or("someone")
                    ),
                )
            }
            Seen::Known(_) => {
                closed_by_bot = true;
                (
                    fallback,
                    format!(
                        "its parent run {parent} ended and #{number} was closed by the bot; {fallback}"
                    ),
                )
            }
        },
    };
    let mut actions = Vec::new();
    // The label goes first, checked on a fresh read: a pull request reopened meanwhile (or
    // handed off) stops the whole group, its branch included.
    let mut pull_request_check = None;
    if let Some(number) = number
        && let Some(action) = closed_pull_request_label(facts, number, outcome)
    {
        actions.push(action);
        pull_request_check = Some(PullRequestCheck {
            number,
            head_sha: None,
            author: facts.policy.bot.clone(),
            draft: None,
            handoff_label: facts.policy.handoff_label.clone(),
            open: false,
        });
    }
    if outcome.branch_on_cleanup() == BranchOnCleanup::Deleted {
        match maintainer_sweep(facts, &branch, ended_at, "its parent ended") {
            SweepFinding::Clear => {}
            SweepFinding::Maintainer(finding) => {
                return decision(number, Verdict::NeedsInspection, None, finding, None);
            }
            SweepFinding::Unread(what) => return waiting(number, &what),
        }
        actions.extend(cancel_bot_smokes(facts, id, liveness));
        if closed_by_bot && let Some(number) = number {
            match deletable_branch(facts, &branch, number) {
                Ok(Some(action)) => actions.push(action),
                Ok(None) => {}
                Err(BranchFinding::Waiting(what)) => {
                    return waiting(Some(number), &what);
                }
                Err(BranchFinding::Kept(why)) => reason.push_str(&format!("; branch kept: {why}")),
            }
        }
    }
    let record = OutcomeRecord {
        candidate: id.to_string(),
        parent_run: parent,
        outcome,
        agent_ran: true,
    };
    let group = ActionGroup {
        subject: id.to_string(),
        candidate: Some(id.to_string()),
        pull_request_check,
        destructive: true,
        ledger_expectation: LedgerExpectation::FinishedByThisPass { parent_run: parent },
        independent: false,
        actions,
    };
    decision(
        number,
        Verdict::Reconciled,
        Some(outcome),
        reason,
        Some(group),
    )
    .recording(record)
}

/// The status label a reconciled session's closed (or merged) pull request shows from now on:
/// its outcome's label, none for `closed-by-maintainer`, so that the list no longer says
/// "in progress". A pull request handed off to maintainers is never touched.
fn closed_pull_request_label(facts: &Facts<'_>, number: u64, outcome: Outcome) -> Option<Action> {
    let Seen::Known(issue) = facts.issue(number) else {
        return None;
    };
    let policy = facts.policy;
    if issue.labels.contains(&policy.handoff_label) {
        return None;
    }
    status_label_action_on(policy, number, &issue.labels, outcome.status_label())
}

/// An open bot pull request with no live session: abandoned (contract §5).
fn sweep(
    facts: &Facts<'_>,
    id: &str,
    session: Option<&Session>,
    pull: &PullRequestFact,
    liveness: &Liveness,
) -> CandidateDecision {
    let number = Some(pull.number);
    let recorded = session.and_then(|session| session.outcome);
    let since = session
        .and_then(|session| session.finished_at)
        .unwrap_or(pull.created_at);
    match ready_pull_request(pull, recorded == Some(Outcome::Validated)) {
        Some(ReadyPullRequest::Validated) => {
            let reason = format!("#{} is ready for review (validated)", pull.number);
            return decision(number, Verdict::LeftAlone, recorded, reason, None);
        }
        Some(ReadyPullRequest::Unexplained(reason)) => {
            return decision(number, Verdict::NeedsInspection, recorded, reason, None);
        }
        None => {}
    }
    let object = KeptObject::PullRequest(pull.number);
    if let Some(kept) = facts
        .snapshot
        .ledger
        .kept
        .iter()
        .find(|kept| kept.object == object && kept.sha == pull.head_sha)
    {
        let reason = format!("{} (remembered while its head stays)", kept.reason);
        let verdict = match kept.verdict {
            KeptVerdict::NeedsInspection => Verdict::NeedsInspection,
            KeptVerdict::LeftAlone => Verdict::LeftAlone,
        };
        return decision(number, verdict, recorded, reason, None);
    }
    let maintainer_commit = match examine_pull_request(facts, pull, since, "the session ended") {
        Examination::Clear {
            active_sweep: Some(run),
            ..
        } => {
            let reason = format!("sweep run {run} on its branch is active");
            return decision(number, Verdict::LeftAlone, recorded, reason, None);
        }
        Examination::Clear {
            maintainer_commit, ..
        } => maintainer_commit,
        Examination::NeedsInspection { reason, remember } => {
            let remembered = remember
                .then(|| kept_pull_request(facts, pull, KeptVerdict::NeedsInspection, &reason));
            let decided = decision(number, Verdict::NeedsInspection, recorded, reason, None);
            return match remembered {
                Some(kept) => decided.remembering(kept),
                None => decided,
            };
        }
        Examination::Waiting(what) => return waiting(number, &what),
    };
    if let Some(login) = maintainer_commit {
        let reason = format!("#{} has a commit by {login}", pull.number);
        let kept = kept_pull_request(facts, pull, KeptVerdict::LeftAlone, &reason);
        return decision(number, Verdict::LeftAlone, recorded, reason, None).remembering(kept);
    }
    let outcome = recorded.unwrap_or(Outcome::NoOutcome);
    match outcome.branch_on_cleanup() {
        BranchOnCleanup::LeftAsIs => {
            let reason = format!("{outcome}: left as the maintainer left it");
            decision(number, Verdict::LeftAlone, recorded, reason, None)
        }
        BranchOnCleanup::KeptReady => {
            let mut reason = format!(
                "validated earlier but still a draft: #{} is marked ready",
                pull.number
            );
            let group = cleanup_group(
                facts,
                id,
                Some(pull),
                outcome,
                LedgerExpectation::NoOpenSession,
                liveness,
                &mut reason,
            );
            decision(number, Verdict::Reconciled, recorded, reason, Some(group))
        }
        BranchOnCleanup::Deleted => {
            let mut reason = match session {
                Some(session) => format!(
                    "abandoned: no planner job or sweep is active and its session finished ({})",
                    session.outcome.map(|o| o.to_string()).unwrap_or_default()
                ),
                None => "abandoned: no session, no planner job or sweep is active".to_string(),
            };
            let group = cleanup_group(
                facts,
                id,
                Some(pull),
                outcome,
                LedgerExpectation::NoOpenSession,
                liveness,
                &mut reason,
            );
            decision(number, Verdict::Swept, recorded, reason, Some(group))
        }
    }
}

fn waiting(number: Option<u64>, what: &str) -> CandidateDecision {
    let reason = format!("{what} could not be read this pass: left as it is");
    decision(number, Verdict::Skipped, None, reason, None)
}

/// The ledger's memory of a pull request decided `verdict` while its head stays.
fn kept_pull_request(
    facts: &Facts<'_>,
    pull: &PullRequestFact,
    verdict: KeptVerdict,
    reason: &str,
) -> Kept {
    Kept {
        object: KeptObject::PullRequest(pull.number),
        sha: pull.head_sha.clone(),
        verdict,
        reason: reason.to_string(),
        since: facts.context.now,
    }
}
