//! A live session whose parent ended (contract §4), or a parked one whose issue was closed
//! (§13): its outcome recorded and the cleanup per the outcome planned, behind the §5 guards
//! (`guards.rs`).
//!
//! With its pull request open, the outcome is `retired` when the issue its candidate came from
//! was closed (`issue.rs`), else validated when the final sweep on its head succeeded, else the
//! one the session reported, else `no-outcome`; a ready pull request stays
//! ready only on a validated report, and a maintainer's commit leaves the draft as it is. With
//! none open, the outcome follows how its pull request ended: merged, closed by a maintainer
//! (`closed-by-maintainer`), closed by the bot or never opened; the closed pull request gets
//! its outcome's status label, and a branch is deleted only when its outcome deletes it and the
//! bot closed its pull request.
//!
//! An after-care session (contract §12) is reconciled the same way, but its cleanup never
//! closes its pull request or deletes its branch: validated only on a head it pushed (ready
//! again, watched at that head), any other outcome leaves the pull request open, labelled
//! `klaud-needs-maintainer`, its record waiting for a maintainer. A propose session reconciled
//! validated puts its pull request in after-care.
//!
//! Each step returns a [`Step`]: it goes on with what it found, or ends the candidate's
//! decision with the verdict it reached (needs inspection, skipped, live).

use std::ops::ControlFlow::{Break, Continue};

use chrono::{DateTime, Utc};

use super::candidates::{Step, waiting};
use super::cleanup::{cancel_bot_smokes, cleanup_group};
use super::guards::{
    BranchFinding, Examination, ReadyPullRequest, SweepFinding, deletable_branch,
    examine_pull_request, maintainer_sweep, ready_pull_request,
};
use super::issue::{closed_issue, retired_because};
use super::labels::status_label_sync;
use super::liveness::Liveness;
use super::{CandidateDecision, Facts, RunSeen, Seen, Verdict, decision};
use crate::core::ledger::Session;
use crate::core::outcome::StatusLabel;
use crate::core::outcome::{BranchOnCleanup, Outcome};
use crate::core::plan::{
    Action, ActionGroup, LedgerExpectation, PullRequestCheck, status_label_action,
    status_label_action_on,
};
use crate::core::recover::aftercare::ledger::AftercareEnding;
use crate::core::recover::ledger_plan::{OutcomeRecord, ParkRecord};
use crate::core::snapshot::PullRequestFact;

/// The outcome the ledger records for a reconciled session (live, or parked when its issue
/// was closed).
pub(super) fn outcome_record(session: &Session, outcome: Outcome) -> OutcomeRecord {
    OutcomeRecord {
        candidate: session.candidate.clone(),
        parent_run: session.parent_run,
        session: session.state,
        outcome,
        agent_ran: true,
        aftercare: None,
    }
}

/// A live session whose parent ended: record its outcome, then clean up per the outcome.
pub(super) fn reconcile(
    facts: &Facts<'_>,
    id: &str,
    session: &Session,
    pull: Option<&PullRequestFact>,
    liveness: &Liveness,
) -> Step<CandidateDecision> {
    let ended_at = match facts.run_state(session.parent_run) {
        RunSeen::Ended(ended_at) => ended_at.unwrap_or(session.started_at),
        // `Alive::No` for a live session means its parent ended.
        _ => session.started_at,
    };
    let closed_issue = closed_issue(facts, id, pull.map(|pull| pull.number))?;
    match pull {
        Some(pull) => {
            reconcile_open_pull_request(facts, id, session, pull, ended_at, liveness, closed_issue)
        }
        None => reconcile_without_open_pull_request(
            facts,
            id,
            session,
            ended_at,
            liveness,
            closed_issue,
        ),
    }
}

/// A live session whose parent ended with its pull request open: a ready one stays ready only
/// on a validated report; the guards must hold; then the outcome (the final sweep's success,
/// else what the session reported, else `no-outcome`) is recorded and the draft cleaned up
/// per the outcome, unless a maintainer committed to it.
fn reconcile_open_pull_request(
    facts: &Facts<'_>,
    id: &str,
    session: &Session,
    pull: &PullRequestFact,
    ended_at: DateTime<Utc>,
    liveness: &Liveness,
    closed_issue: Option<u64>,
) -> Step<CandidateDecision> {
    let parent = session.parent_run;
    let pending = session.pending_outcome;
    let number = Some(pull.number);
    draft_at_reconcile(facts, id, session, pull)?;
    let (maintainer_commit, mut final_sweep_succeeded) =
        guards_hold_at_reconcile(facts, pull, ended_at)?;
    if let Some(work) = &session.aftercare {
        // An after-care session validates only work it pushed: its starting head was
        // validated before the base moved or its checks failed.
        final_sweep_succeeded &= pull.head_sha != work.head_sha;
    }
    let (outcome, why) = match closed_issue {
        Some(issue) => (Outcome::Retired, retired_because(issue)),
        None => {
            let (outcome, why) = reconciled_outcome(final_sweep_succeeded, pending);
            (outcome, why.to_string())
        }
    };
    if maintainer_commit.is_none()
        && outcome == Outcome::NoOutcome
        && let Some(taken) = jobs_left(facts, session)
    {
        let reason = format!(
            "its job (run {parent}) ended without finish after {taken} of {} jobs: parked to continue in a new job",
            facts.policy.session.max_attempts
        );
        let group = status_label_sync(facts, id, pull, StatusLabel::Parked);
        return Continue(
            decision(number, Verdict::Parked, None, reason, group).parking(ParkRecord {
                candidate: id.to_string(),
                parent_run: parent,
            }),
        );
    }
    let mut reason = format!("its parent run {parent} ended; {outcome}: {why}");
    let ending = aftercare_ending(session, pull, outcome, maintainer_commit.as_deref());
    let group = match maintainer_commit {
        Some(login) => {
            reason.push_str(&format!(
                "; #{} has a commit by {login}: left as it is",
                pull.number
            ));
            None
        }
        None if session.kind.is_aftercare() => Some(aftercare_ending_group(
            facts,
            id,
            pull,
            outcome,
            parent,
            &mut reason,
        )),
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
    let mut record = outcome_record(session, outcome);
    record.aftercare = ending;
    Continue(decision(number, Verdict::Reconciled, Some(outcome), reason, group).recording(record))
}

/// What recording a reconciled session's outcome does to its pull request's after-care record
/// (contract §12): validated, it is watched at its head; an after-care session that ended
/// otherwise leaves it waiting for a maintainer, and one whose pull request has a maintainer's
/// commit leaves it for good.
fn aftercare_ending(
    session: &Session,
    pull: &PullRequestFact,
    outcome: Outcome,
    maintainer_commit: Option<&str>,
) -> Option<AftercareEnding> {
    let pull_request = pull.number;
    match maintainer_commit {
        Some(login) if session.kind.is_aftercare() => Some(AftercareEnding::Left {
            pull_request,
            reason: format!("#{pull_request} has a commit by {login}"),
        }),
        Some(_) => None,
        None if outcome == Outcome::Validated => Some(AftercareEnding::Validated {
            pull_request,
            head: pull.head_sha.clone(),
            family: session.family.clone(),
        }),
        None if session.kind.is_aftercare() => Some(AftercareEnding::Ended { pull_request }),
        None => None,
    }
}

/// The cleanup of an after-care session (contract §12), which never closes its pull request or
/// deletes its branch: validated, `klaud-finished` and ready again; any other outcome leaves it
/// open as a draft (redrafted when its job ended before `session` did) with
/// `klaud-needs-maintainer`, as `finish` would.
fn aftercare_ending_group(
    facts: &Facts<'_>,
    id: &str,
    pull: &PullRequestFact,
    outcome: Outcome,
    parent_run: u64,
    reason: &mut String,
) -> ActionGroup {
    let policy = facts.policy;
    let validated = outcome == Outcome::Validated;
    let label = match validated {
        true => StatusLabel::Finished,
        false => StatusLabel::NeedsMaintainer,
    };
    let mut actions: Vec<Action> = status_label_action(policy, pull, Some(label))
        .into_iter()
        .collect();
    if validated && pull.draft {
        actions.push(Action::MarkReady {
            pull_request: pull.number,
            node_id: pull.node_id.clone(),
        });
    }
    if !validated && !pull.draft {
        actions.push(Action::ConvertToDraft {
            pull_request: pull.number,
            node_id: pull.node_id.clone(),
        });
    }
    if !validated {
        reason.push_str(
            "; after-care: left open as a draft with its branch, waiting for a maintainer",
        );
    }
    ActionGroup {
        subject: id.to_string(),
        candidate: Some(id.to_string()),
        pull_request_check: Some(PullRequestCheck::examined(policy, pull)),
        destructive: false,
        ledger_expectation: LedgerExpectation::FinishedByThisPass { parent_run },
        independent: false,
        actions,
    }
}

/// The jobs a session took, when `session` adopted at least one and it may take another (a
/// session started without `session` has no attempts and is reconciled as before).
fn jobs_left(facts: &Facts<'_>, session: &Session) -> Option<usize> {
    let taken = session.attempts.len();
    (taken > 0 && taken < facts.policy.session.max_attempts as usize).then_some(taken)
}

/// A ready pull request of a reconciled session: reconciled as validated when the session
/// reported validated (it marked it ready before its parent ended), else it needs inspection —
/// unless the session is an after-care one, whose validated record explains a ready pull
/// request its job never redrafted (it goes on to be reconciled).
fn draft_at_reconcile(
    facts: &Facts<'_>,
    id: &str,
    session: &Session,
    pull: &PullRequestFact,
) -> Step<()> {
    let parent = session.parent_run;
    let number = Some(pull.number);
    let validated = session.pending_outcome == Some(Outcome::Validated);
    match ready_pull_request(pull, validated) {
        Some(ReadyPullRequest::Validated) => {
            let mut reason = format!(
                "its parent run {parent} ended after it reported validated; #{} stays ready",
                pull.number
            );
            let outcome = Outcome::Validated;
            let group = session
                .kind
                .is_aftercare()
                .then(|| aftercare_ending_group(facts, id, pull, outcome, parent, &mut reason));
            let mut record = outcome_record(session, outcome);
            record.aftercare = aftercare_ending(session, pull, outcome, None);
            Break(
                decision(number, Verdict::Reconciled, Some(outcome), reason, group)
                    .recording(record),
            )
        }
        Some(ReadyPullRequest::Unexplained(_)) if session.kind.is_aftercare() => Continue(()),
        Some(ReadyPullRequest::Unexplained(reason)) => Break(decision(
            number,
            Verdict::NeedsInspection,
            None,
            reason,
            None,
        )),
        None => Continue(()),
    }
}

/// The §5 guards on a reconciled session's open pull request: an active sweep keeps it live, a
/// finding or a failed read makes it need inspection, an unread detail waits. When they hold:
/// the login of a maintainer's commit below the bot's head, and whether the final sweep on the
/// head succeeded.
fn guards_hold_at_reconcile(
    facts: &Facts<'_>,
    pull: &PullRequestFact,
    ended_at: DateTime<Utc>,
) -> Step<(Option<String>, bool)> {
    let number = Some(pull.number);
    match examine_pull_request(facts, pull, ended_at, "its parent ended") {
        Examination::Clear {
            active_sweep: Some(run),
            ..
        } => {
            let reason = format!("sweep run {run} on its branch is active");
            Break(decision(number, Verdict::Live, None, reason, None))
        }
        Examination::Clear {
            maintainer_commit,
            final_sweep_succeeded,
            ..
        } => Continue((maintainer_commit, final_sweep_succeeded)),
        Examination::NeedsInspection { reason, .. } => Break(decision(
            number,
            Verdict::NeedsInspection,
            None,
            reason,
            None,
        )),
        Examination::Waiting(what) => Break(waiting(number, &what)),
    }
}

/// The outcome recorded for a reconciled session with an open pull request, and why: validated
/// when the final sweep on its head succeeded, else the outcome it reported, else `no-outcome`.
fn reconciled_outcome(
    final_sweep_succeeded: bool,
    pending: Option<Outcome>,
) -> (Outcome, &'static str) {
    if final_sweep_succeeded {
        (Outcome::Validated, "the final sweep on its head succeeded")
    } else if let Some(pending) = pending {
        (pending, "the outcome it reported before its parent ended")
    } else {
        (Outcome::NoOutcome, "no outcome was reported")
    }
}

/// A live session whose parent ended without an open pull request: its pull request was
/// closed (by a maintainer: `closed-by-maintainer`), merged, or never opened. The outcome is
/// recorded; the group sets the closed pull request's status label and, for an outcome that
/// deletes the branch, cancels the bot's smoke runs and deletes the branch the bot closed.
fn reconcile_without_open_pull_request(
    facts: &Facts<'_>,
    id: &str,
    session: &Session,
    ended_at: DateTime<Utc>,
    liveness: &Liveness,
    closed_issue: Option<u64>,
) -> Step<CandidateDecision> {
    let parent = session.parent_run;
    let number = pull_request_of_session(facts, id, session)?;
    let mut ending = how_its_pull_request_ended(facts, session, number)?;
    if let (None, Some(issue)) = (number, closed_issue) {
        ending.outcome = Outcome::Retired;
        ending.reason = format!(
            "its parent run {parent} ended before it opened a pull request, and its issue #{issue} was closed; retired"
        );
    }
    let outcome = ending.outcome;
    let mut reason = ending.reason;
    // The label goes first, checked on a fresh read: a pull request reopened meanwhile (or
    // handed off) stops the whole group, its branch included.
    let (label, pull_request_check) =
        closed_pull_request_label_checked(facts, number, outcome).unzip();
    let mut actions: Vec<Action> = label.into_iter().collect();
    // After-care never deletes a branch but when superseding (contract §12).
    if outcome.branch_on_cleanup() == BranchOnCleanup::Deleted && !session.kind.is_aftercare() {
        let (branch_actions, branch_kept) =
            branch_after_close(facts, id, number, ending.closed_by_bot, ended_at, liveness)?;
        actions.extend(branch_actions);
        if let Some(why) = branch_kept {
            reason.push_str(&format!("; branch kept: {why}"));
        }
    }
    let group = ActionGroup {
        subject: id.to_string(),
        candidate: Some(id.to_string()),
        pull_request_check,
        destructive: true,
        ledger_expectation: LedgerExpectation::FinishedByThisPass { parent_run: parent },
        independent: false,
        actions,
    };
    Continue(
        decision(
            number,
            Verdict::Reconciled,
            Some(outcome),
            reason,
            Some(group),
        )
        .recording(outcome_record(session, outcome)),
    )
}

/// The pull request a session without an open one had: the one the ledger names, else the
/// newest from its branch in this repository opened since the session started, else none.
fn pull_request_of_session(facts: &Facts<'_>, id: &str, session: &Session) -> Step<Option<u64>> {
    if let Some(number) = session.pull_request {
        return Continue(Some(number));
    }
    let branch = facts.policy.candidate_branch(id);
    match facts.branch_pull_requests(&branch) {
        Seen::Known(pulls) => Continue(
            pulls
                .iter()
                .filter(|pull| pull.from_this_repository && pull.created_at >= session.started_at)
                .map(|pull| pull.number)
                .max(),
        ),
        Seen::Failed(error) => {
            let reason = format!("the pull requests of {branch} could not be read ({error})");
            Break(decision(None, Verdict::NeedsInspection, None, reason, None))
        }
        Seen::Unread => Break(waiting(None, "its pull requests")),
    }
}

/// How a reconciled session's pull request ended, when it is no longer open.
struct ClosedEnding {
    /// The outcome recorded for the session.
    outcome: Outcome,
    reason: String,
    /// The bot closed it: only then may its branch go.
    closed_by_bot: bool,
}

/// The outcome of a session whose pull request `number` is not open (or was never opened): the
/// one it reported (else `no-outcome`) when it never opened one or the bot closed it, the one
/// it reported (else validated) when merged, `closed-by-maintainer` when someone else closed
/// it. A pull request that is open after all waits for the next pass.
fn how_its_pull_request_ended(
    facts: &Facts<'_>,
    session: &Session,
    number: Option<u64>,
) -> Step<ClosedEnding> {
    let parent = session.parent_run;
    let fallback = session.pending_outcome.unwrap_or(Outcome::NoOutcome);
    let Some(number) = number else {
        return Continue(ClosedEnding {
            outcome: fallback,
            reason: format!(
                "its parent run {parent} ended before it opened a pull request; {fallback}"
            ),
            closed_by_bot: false,
        });
    };
    let issue = match facts.issue(number) {
        Seen::Unread => return Break(waiting(Some(number), "who closed its pull request")),
        Seen::Failed(error) => {
            let reason = format!("#{number} could not be read ({error})");
            return Break(decision(
                Some(number),
                Verdict::NeedsInspection,
                None,
                reason,
                None,
            ));
        }
        Seen::Known(issue) => issue,
    };
    if issue.open {
        let reason = format!("#{number} is open but was not listed: left for the next pass");
        return Break(decision(Some(number), Verdict::Skipped, None, reason, None));
    }
    Continue(if issue.merged {
        let outcome = session.pending_outcome.unwrap_or(Outcome::Validated);
        ClosedEnding {
            outcome,
            reason: format!("its parent run {parent} ended and #{number} was merged; {outcome}"),
            closed_by_bot: false,
        }
    } else if issue.closed_by.as_deref() != Some(facts.policy.bot.as_str()) {
        ClosedEnding {
            outcome: Outcome::ClosedByMaintainer,
            reason: format!(
                "#{number} was closed unmerged by {}",
                issue.closed_by.as_deref().unwrap_or("someone")
            ),
            closed_by_bot: false,
        }
    } else {
        ClosedEnding {
            outcome: fallback,
            reason: format!(
                "its parent run {parent} ended and #{number} was closed by the bot; {fallback}"
            ),
            closed_by_bot: true,
        }
    })
}

/// The status label of a closed pull request and the fresh read that must still find it
/// closed, the bot's and not handed off before the label (and its group) goes ahead.
fn closed_pull_request_label_checked(
    facts: &Facts<'_>,
    number: Option<u64>,
    outcome: Outcome,
) -> Option<(Action, PullRequestCheck)> {
    let number = number?;
    let action = closed_pull_request_label(facts, number, outcome)?;
    let check = PullRequestCheck {
        number,
        head_sha: None,
        author: facts.policy.bot.clone(),
        draft: None,
        handoff_label: facts.policy.handoff_label.clone(),
        open: false,
    };
    Some((action, check))
}

/// The branch of a reconciled session whose pull request is closed, for an outcome that
/// deletes it: no sweep a maintainer started since the parent ended (else it needs
/// inspection), the bot's smoke runs cancelled, and the branch deleted when the bot closed the
/// pull request, or why it is kept.
fn branch_after_close(
    facts: &Facts<'_>,
    id: &str,
    number: Option<u64>,
    closed_by_bot: bool,
    ended_at: DateTime<Utc>,
    liveness: &Liveness,
) -> Step<(Vec<Action>, Option<String>)> {
    let branch = facts.policy.candidate_branch(id);
    match maintainer_sweep(facts, &branch, ended_at, "its parent ended") {
        SweepFinding::Clear => {}
        SweepFinding::Maintainer(finding) | SweepFinding::Unreadable(finding) => {
            return Break(decision(
                number,
                Verdict::NeedsInspection,
                None,
                finding,
                None,
            ));
        }
        SweepFinding::Unread(what) => return Break(waiting(number, &what)),
    }
    let mut actions = cancel_bot_smokes(facts, id, liveness);
    let mut kept = None;
    if closed_by_bot && let Some(number) = number {
        match deletable_branch(facts, &branch, number) {
            Ok(Some(action)) => actions.push(action),
            Ok(None) => {}
            Err(BranchFinding::Waiting(what)) => return Break(waiting(Some(number), &what)),
            Err(BranchFinding::Kept(why)) => kept = Some(why),
        }
    }
    Continue((actions, kept))
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
