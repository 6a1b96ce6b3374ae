//! One candidate's verdict (contract §5): live, parked, reconciled (its parent ended: record the
//! outcome, clean up per §4), swept (abandoned: cancel the bot's smoke runs, close the bot-only
//! draft, delete the branch closed by the bot), left alone or needs inspection.
//!
//! The decision is a sequence of [`Step`]s (`decide_in_order`): the open pull requests
//! trusted, the session not parked, nothing keeping the candidate alive, every branch listed;
//! then the handoff, the reconcile or the sweep. The first step that reaches a verdict ends the
//! decision.
//!
//! The guards are checked in one place (`guards.rs`) before anything is planned:
//! a pull request whose head moved to a commit that is not the bot's, a sweep run started by
//! anyone but the bot after the session ended, a ready pull request without a validated record,
//! or any read that failed make the candidate "needs inspection", and a candidate that needs
//! inspection gets no action at all — the same pass cannot sweep it afterwards.

use std::ops::ControlFlow::{self, Break, Continue};

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

/// One step of a candidate's decision: `Continue` with what the step found, for the next step
/// to go on with, or `Break` with the decision it already reached (skipped, needs inspection,
/// live…), which ends the candidate's decision there. A sequence of steps ends in `Continue`
/// with the decision of its last step.
type Step<T> = ControlFlow<CandidateDecision, T>;

/// One candidate's verdict: its open pull requests must be listed and the bot's, a parked
/// session waits for room, whatever keeps it alive keeps it live, and only with every candidate
/// branch listed is it handed off, reconciled, swept or left alone.
pub(super) fn decide(facts: &Facts<'_>, id: &str, liveness: &Liveness) -> CandidateDecision {
    let candidate = CandidateFacts::read(facts, id);
    match decide_in_order(facts, &candidate, liveness) {
        Break(decided) | Continue(decided) => decided,
    }
}

/// What one candidate's decision reads about it: its branch, its session (the open one, else
/// the latest) and the open pull requests from its branch in this repository.
struct CandidateFacts<'c> {
    id: &'c str,
    branch: String,
    session: Option<&'c Session>,
    /// `session` while it is live or parked.
    open_session: Option<&'c Session>,
    pulls: Vec<&'c PullRequestFact>,
    /// The first of `pulls`: the pull request the decision is about.
    pull: Option<&'c PullRequestFact>,
    /// The outcome on record for its session.
    recorded: Option<Outcome>,
    /// Its pull request carries the handoff label.
    handed_off: bool,
}

impl<'c> CandidateFacts<'c> {
    fn read(facts: &Facts<'c>, id: &'c str) -> Self {
        let policy = facts.policy;
        let branch = policy.candidate_branch(id);
        let session = facts.session_of(id);
        let pulls: Vec<&PullRequestFact> = facts
            .snapshot
            .open_pull_requests
            .items
            .iter()
            .filter(|pull| pull.head_branch == branch && pull.from_this_repository)
            .collect();
        let pull = pulls.first().copied();
        CandidateFacts {
            id,
            branch,
            session,
            open_session: session.filter(|session| session.state != SessionState::Finished),
            pulls,
            pull,
            recorded: session.and_then(|session| session.outcome),
            handed_off: pull.is_some_and(|pull| pull.labels.contains(&policy.handoff_label)),
        }
    }

    fn number(&self) -> Option<u64> {
        self.pull.map(|pull| pull.number)
    }
}

/// The steps of [`decide`] in order; the first that reaches a decision ends it.
fn decide_in_order(
    facts: &Facts<'_>,
    candidate: &CandidateFacts<'_>,
    liveness: &Liveness,
) -> Step<CandidateDecision> {
    pull_requests_trusted(facts, candidate)?;
    not_parked(candidate)?;
    not_alive(facts, candidate, liveness)?;
    branches_listed(facts, candidate)?;
    if candidate.handed_off {
        return Continue(hand_off(
            facts,
            candidate.id,
            candidate.number(),
            candidate.open_session,
        ));
    }
    match (candidate.open_session, candidate.pull) {
        (Some(session), pull) => reconcile(facts, candidate.id, session, pull, liveness),
        (None, Some(pull)) => sweep(facts, candidate.id, candidate.session, pull, liveness),
        (None, None) => Continue(decision(
            None,
            Verdict::LeftAlone,
            candidate.recorded,
            "no open session or pull request",
            None,
        )),
    }
}

/// The open pull requests decide first when they cannot be trusted: not all listed (skipped),
/// several from the candidate's branch, or one not opened by the bot (needs inspection).
fn pull_requests_trusted(facts: &Facts<'_>, candidate: &CandidateFacts<'_>) -> Step<()> {
    let number = candidate.number();
    let recorded = candidate.recorded;
    if let Some(gap) = &facts.snapshot.open_pull_requests.gap {
        let reason = format!("the open pull requests could not all be listed ({gap})");
        return Break(decision(number, Verdict::Skipped, recorded, reason, None));
    }
    if candidate.pulls.len() > 1 {
        let numbers: Vec<String> = candidate
            .pulls
            .iter()
            .map(|p| format!("#{}", p.number))
            .collect();
        let reason = format!(
            "several open pull requests from {}: {}",
            candidate.branch,
            numbers.join(", ")
        );
        return Break(decision(
            number,
            Verdict::NeedsInspection,
            recorded,
            reason,
            None,
        ));
    }
    if let Some(pull) = candidate.pull
        && pull.author.as_deref() != Some(facts.policy.bot.as_str())
    {
        let reason = format!(
            "#{} was opened by {}, not by the bot",
            pull.number,
            pull.author.as_deref().unwrap_or("a deleted account")
        );
        return Break(decision(
            number,
            Verdict::NeedsInspection,
            recorded,
            reason,
            None,
        ));
    }
    Continue(())
}

/// A parked session waits for room under the cap (`resume::resume_parked` may start it again),
/// unless its pull request was handed off.
fn not_parked(candidate: &CandidateFacts<'_>) -> Step<()> {
    let parked = candidate
        .open_session
        .is_some_and(|session| session.state == SessionState::Parked);
    if parked && !candidate.handed_off {
        return Break(decision(
            candidate.number(),
            Verdict::Parked,
            None,
            "waiting for room under the cap",
            None,
        ));
    }
    Continue(())
}

/// A candidate something keeps alive is live (its draft labelled in progress unless handed
/// off); one whose liveness cannot be told this pass is skipped, or needs inspection when a
/// read about it failed.
fn not_alive(facts: &Facts<'_>, candidate: &CandidateFacts<'_>, liveness: &Liveness) -> Step<()> {
    let number = candidate.number();
    match liveness.of(facts, candidate.id, candidate.session) {
        Alive::Yes(why) => {
            let group = candidate
                .pull
                .filter(|_| !candidate.handed_off)
                .and_then(|pull| {
                    status_label_sync(facts, candidate.id, pull, StatusLabel::InProgress)
                });
            Break(decision(number, Verdict::Live, None, why, group))
        }
        Alive::Unknown(why) => Break(decision(
            number,
            Verdict::Skipped,
            candidate.recorded,
            why,
            None,
        )),
        Alive::Unreadable(why) => Break(decision(
            number,
            Verdict::NeedsInspection,
            candidate.recorded,
            why,
            None,
        )),
        Alive::No => Continue(()),
    }
}

/// While the candidate branches could not all be listed, nothing is cleaned up on a guess: a
/// branch that was not listed may still exist.
fn branches_listed(facts: &Facts<'_>, candidate: &CandidateFacts<'_>) -> Step<()> {
    if let Some(gap) = &facts.snapshot.refs.gap {
        let reason = format!("the candidate branches could not all be listed ({gap})");
        return Break(decision(
            candidate.number(),
            Verdict::Skipped,
            candidate.recorded,
            reason,
            None,
        ));
    }
    Continue(())
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
            .recording(outcome_record(id, session.parent_run, Outcome::Handoff))
        }
        None => {
            let reason = format!("handed off to maintainers ({label})");
            let outcome = facts.session_of(id).and_then(|session| session.outcome);
            decision(number, Verdict::LeftAlone, outcome, reason, None)
        }
    }
}

/// The outcome the ledger records for a reconciled live session.
fn outcome_record(id: &str, parent_run: u64, outcome: Outcome) -> OutcomeRecord {
    OutcomeRecord {
        candidate: id.to_string(),
        parent_run,
        outcome,
        agent_ran: true,
    }
}

/// A live session whose parent ended: record its outcome, then clean up per the outcome.
fn reconcile(
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
    match pull {
        Some(pull) => reconcile_open_pull_request(facts, id, session, pull, ended_at, liveness),
        None => reconcile_without_open_pull_request(facts, id, session, ended_at, liveness),
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
) -> Step<CandidateDecision> {
    let parent = session.parent_run;
    let pending = session.pending_outcome;
    let number = Some(pull.number);
    draft_at_reconcile(id, session, pull)?;
    let (maintainer_commit, final_sweep_succeeded) =
        guards_hold_at_reconcile(facts, pull, ended_at)?;
    let (outcome, why) = reconciled_outcome(final_sweep_succeeded, pending);
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
    Continue(
        decision(number, Verdict::Reconciled, Some(outcome), reason, group)
            .recording(outcome_record(id, parent, outcome)),
    )
}

/// A ready pull request of a reconciled session: reconciled as validated when the session
/// reported validated (it marked it ready before its parent ended), else it needs inspection.
fn draft_at_reconcile(id: &str, session: &Session, pull: &PullRequestFact) -> Step<()> {
    let parent = session.parent_run;
    let number = Some(pull.number);
    let validated = session.pending_outcome == Some(Outcome::Validated);
    match ready_pull_request(pull, validated) {
        Some(ReadyPullRequest::Validated) => {
            let reason = format!(
                "its parent run {parent} ended after it reported validated; #{} stays ready",
                pull.number
            );
            Break(
                decision(
                    number,
                    Verdict::Reconciled,
                    Some(Outcome::Validated),
                    reason,
                    None,
                )
                .recording(outcome_record(id, parent, Outcome::Validated)),
            )
        }
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
) -> Step<CandidateDecision> {
    let parent = session.parent_run;
    let number = pull_request_of_session(facts, id, session)?;
    let ending = how_its_pull_request_ended(facts, session, number)?;
    let outcome = ending.outcome;
    let mut reason = ending.reason;
    // The label goes first, checked on a fresh read: a pull request reopened meanwhile (or
    // handed off) stops the whole group, its branch included.
    let (label, pull_request_check) =
        closed_pull_request_label_checked(facts, number, outcome).unzip();
    let mut actions: Vec<Action> = label.into_iter().collect();
    if outcome.branch_on_cleanup() == BranchOnCleanup::Deleted {
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
        .recording(outcome_record(id, parent, outcome)),
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
        SweepFinding::Maintainer(finding) => {
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

/// An open bot pull request with no live session: abandoned (contract §5) and cleaned up per
/// the outcome on record, unless a ready pull request, the ledger's memory of its head or the
/// §5 guards decide otherwise first.
fn sweep(
    facts: &Facts<'_>,
    id: &str,
    session: Option<&Session>,
    pull: &PullRequestFact,
    liveness: &Liveness,
) -> Step<CandidateDecision> {
    let recorded = session.and_then(|session| session.outcome);
    let since = session
        .and_then(|session| session.finished_at)
        .unwrap_or(pull.created_at);
    draft_at_sweep(pull, recorded)?;
    not_remembered(facts, pull, recorded)?;
    guards_hold_at_sweep(facts, pull, since, recorded)?;
    Continue(clean_up_abandoned(
        facts, id, session, pull, recorded, liveness,
    ))
}

/// A ready pull request is never swept: left alone when validated is on record, else it needs
/// inspection.
fn draft_at_sweep(pull: &PullRequestFact, recorded: Option<Outcome>) -> Step<()> {
    let number = Some(pull.number);
    match ready_pull_request(pull, recorded == Some(Outcome::Validated)) {
        Some(ReadyPullRequest::Validated) => {
            let reason = format!("#{} is ready for review (validated)", pull.number);
            Break(decision(number, Verdict::LeftAlone, recorded, reason, None))
        }
        Some(ReadyPullRequest::Unexplained(reason)) => Break(decision(
            number,
            Verdict::NeedsInspection,
            recorded,
            reason,
            None,
        )),
        None => Continue(()),
    }
}

/// What the ledger remembers of the pull request at its current head decides it again (left
/// alone or needs inspection) without reading its commits.
fn not_remembered(
    facts: &Facts<'_>,
    pull: &PullRequestFact,
    recorded: Option<Outcome>,
) -> Step<()> {
    let object = KeptObject::PullRequest(pull.number);
    let Some(kept) = facts
        .snapshot
        .ledger
        .kept
        .iter()
        .find(|kept| kept.object == object && kept.sha == pull.head_sha)
    else {
        return Continue(());
    };
    let reason = format!("{} (remembered while its head stays)", kept.reason);
    let verdict = match kept.verdict {
        KeptVerdict::NeedsInspection => Verdict::NeedsInspection,
        KeptVerdict::LeftAlone => Verdict::LeftAlone,
    };
    Break(decision(Some(pull.number), verdict, recorded, reason, None))
}

/// The §5 guards on an abandoned pull request since its session ended: an active sweep or a
/// maintainer's commit leaves it alone, a finding or a failed read makes it need inspection,
/// an unread detail waits. A finding that holds while the head stays is remembered.
fn guards_hold_at_sweep(
    facts: &Facts<'_>,
    pull: &PullRequestFact,
    since: DateTime<Utc>,
    recorded: Option<Outcome>,
) -> Step<()> {
    let number = Some(pull.number);
    let maintainer_commit = match examine_pull_request(facts, pull, since, "the session ended") {
        Examination::Clear {
            active_sweep: Some(run),
            ..
        } => {
            let reason = format!("sweep run {run} on its branch is active");
            return Break(decision(number, Verdict::LeftAlone, recorded, reason, None));
        }
        Examination::Clear {
            maintainer_commit, ..
        } => maintainer_commit,
        Examination::NeedsInspection { reason, remember } => {
            let remembered = remember
                .then(|| kept_pull_request(facts, pull, KeptVerdict::NeedsInspection, &reason));
            let decided = decision(number, Verdict::NeedsInspection, recorded, reason, None);
            return Break(match remembered {
                Some(kept) => decided.remembering(kept),
                None => decided,
            });
        }
        Examination::Waiting(what) => return Break(waiting(number, &what)),
    };
    if let Some(login) = maintainer_commit {
        let reason = format!("#{} has a commit by {login}", pull.number);
        let kept = kept_pull_request(facts, pull, KeptVerdict::LeftAlone, &reason);
        return Break(
            decision(number, Verdict::LeftAlone, recorded, reason, None).remembering(kept),
        );
    }
    Continue(())
}

/// The cleanup of an abandoned pull request per the outcome on record (else `no-outcome`):
/// left as the maintainer left it, marked ready when validated earlier, or swept.
fn clean_up_abandoned(
    facts: &Facts<'_>,
    id: &str,
    session: Option<&Session>,
    pull: &PullRequestFact,
    recorded: Option<Outcome>,
    liveness: &Liveness,
) -> CandidateDecision {
    let number = Some(pull.number);
    let outcome = recorded.unwrap_or(Outcome::NoOutcome);
    let (verdict, mut reason) = match outcome.branch_on_cleanup() {
        BranchOnCleanup::LeftAsIs => {
            let reason = format!("{outcome}: left as the maintainer left it");
            return decision(number, Verdict::LeftAlone, recorded, reason, None);
        }
        BranchOnCleanup::KeptReady => (
            Verdict::Reconciled,
            format!(
                "validated earlier but still a draft: #{} is marked ready",
                pull.number
            ),
        ),
        BranchOnCleanup::Deleted => (
            Verdict::Swept,
            match session {
                Some(session) => format!(
                    "abandoned: no planner job or sweep is active and its session finished ({})",
                    session.outcome.map(|o| o.to_string()).unwrap_or_default()
                ),
                None => "abandoned: no session, no planner job or sweep is active".to_string(),
            },
        ),
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
    decision(number, verdict, recorded, reason, Some(group))
}

/// A candidate left as it is because `what` is not read yet.
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
