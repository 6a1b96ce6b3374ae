//! One candidate's verdict (contract §5): live, parked, reconciled (its parent ended: record the
//! outcome, clean up per §4, in `reconcile.rs`), swept (abandoned: cancel the bot's smoke runs,
//! close the bot-only draft, delete the branch closed by the bot), left alone or needs
//! inspection.
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

use super::cleanup::cleanup_group;
use super::guards::{Examination, ReadyPullRequest, examine_pull_request, ready_pull_request};
use super::issue::{closed_issue, retired_because};
use super::labels::status_label_sync;
use super::liveness::{Alive, Liveness};
use super::reconcile::{outcome_record, reconcile};
use super::{CandidateDecision, Facts, Verdict, decision};
use crate::core::ledger::{Kept, KeptObject, KeptVerdict, Session, SessionState};
use crate::core::outcome::{BranchOnCleanup, Outcome, StatusLabel};
use crate::core::plan::LedgerExpectation;
use crate::core::snapshot::PullRequestFact;

/// One step of a candidate's decision: `Continue` with what the step found, for the next step
/// to go on with, or `Break` with the decision it already reached (skipped, needs inspection,
/// live…), which ends the candidate's decision there. A sequence of steps ends in `Continue`
/// with the decision of its last step.
pub(super) type Step<T> = ControlFlow<CandidateDecision, T>;

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
    /// The candidate's facts as the snapshot holds them; reads nothing the snapshot lacks.
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

    /// The number of the pull request the decision is about, if one is open.
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
    not_parked(facts, candidate)?;
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
/// unless its pull request was handed off or the issue it came from was closed: then it goes on
/// to be reconciled (`retired`, contract §13) instead of resumed. It waits while that issue is
/// not read.
fn not_parked(facts: &Facts<'_>, candidate: &CandidateFacts<'_>) -> Step<()> {
    let parked = candidate
        .open_session
        .is_some_and(|session| session.state == SessionState::Parked);
    if !parked || candidate.handed_off {
        return Continue(());
    }
    if closed_issue(facts, candidate.id, candidate.number())?.is_some() {
        return Continue(());
    }
    Break(decision(
        candidate.number(),
        Verdict::Parked,
        None,
        "waiting for room under the cap",
        None,
    ))
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
            .recording(outcome_record(session, Outcome::Handoff))
        }
        None => {
            let reason = format!("handed off to maintainers ({label})");
            let outcome = facts.session_of(id).and_then(|session| session.outcome);
            decision(number, Verdict::LeftAlone, outcome, reason, None)
        }
    }
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
    let closed_issue = closed_issue(facts, id, Some(pull.number))?;
    Continue(clean_up_abandoned(
        facts,
        id,
        session,
        pull,
        Abandoned {
            recorded,
            closed_issue,
        },
        liveness,
    ))
}

/// What decides the cleanup of an abandoned pull request: the outcome on record, and the issue
/// its candidate came from when that is closed.
struct Abandoned {
    recorded: Option<Outcome>,
    closed_issue: Option<u64>,
}

impl Abandoned {
    /// The outcome it is cleaned up per: `retired` when its issue was closed (unless a
    /// maintainer's outcome is on record, which leaves it as it is), else the one on record,
    /// else `no-outcome`.
    fn outcome(&self) -> Outcome {
        let recorded = self.recorded.unwrap_or(Outcome::NoOutcome);
        match self.closed_issue {
            Some(_) if recorded.branch_on_cleanup() != BranchOnCleanup::LeftAsIs => {
                Outcome::Retired
            }
            _ => recorded,
        }
    }
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

/// The cleanup of an abandoned pull request per its outcome (`Abandoned::outcome`): left as the
/// maintainer left it, marked ready when validated earlier, or swept.
fn clean_up_abandoned(
    facts: &Facts<'_>,
    id: &str,
    session: Option<&Session>,
    pull: &PullRequestFact,
    abandoned: Abandoned,
    liveness: &Liveness,
) -> CandidateDecision {
    let number = Some(pull.number);
    let recorded = abandoned.recorded;
    let outcome = abandoned.outcome();
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
        BranchOnCleanup::Deleted => (Verdict::Swept, abandoned_because(session)),
    };
    if let Some(issue) = abandoned
        .closed_issue
        .filter(|_| outcome == Outcome::Retired)
    {
        reason.push_str(&format!("; retired: {}", retired_because(issue)));
    }
    let group = cleanup_group(
        facts,
        id,
        Some(pull),
        outcome,
        LedgerExpectation::NoOpenSession,
        liveness,
        &mut reason,
    );
    let reported = if outcome == Outcome::Retired {
        Some(outcome)
    } else {
        recorded
    };
    decision(number, verdict, reported, reason, Some(group))
}

/// Why an open pull request without a live session is abandoned.
fn abandoned_because(session: Option<&Session>) -> String {
    match session {
        Some(session) => format!(
            "abandoned: no planner job or sweep is active and its session finished ({})",
            session.outcome.map(|o| o.to_string()).unwrap_or_default()
        ),
        None => "abandoned: no session, no planner job or sweep is active".to_string(),
    }
}

/// A candidate left as it is because `what` is not read yet.
pub(super) fn waiting(number: Option<u64>, what: &str) -> CandidateDecision {
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
