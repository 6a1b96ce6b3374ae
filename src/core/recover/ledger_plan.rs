//! The ledger side of a recovery plan, as data, and the two pure decisions that apply it to the
//! ledger as it is when the pass writes (the store re-runs them on the fresh document after a
//! compare-and-swap conflict):
//!
//! 1. [`decide_first_write`], before anything changes on GitHub: take the recovery lease (free,
//!    already ours, or left by a run seen finished — never by time), record reconciled outcomes,
//!    remember what is kept, prune, change after-care records, move parked sessions to live
//!    while the cap allows and start after-care sessions in the room left (contract §12). It
//!    says which action groups are still cleared: a group whose candidate another pass or mode
//!    changed meanwhile is dropped.
//! 2. [`decide_second_write`], after the actions: release the claims of candidates whose cleanup
//!    finished (the last step of contract §5), return failed resumes to parked, take back the
//!    after-care sessions whose workflow could not be dispatched, release the lease.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::RecoveryPlan;
use super::aftercare::ledger::{
    self as aftercare, AftercareChange, AftercareEnding, AftercareStart,
};
use crate::core::dashboard::SteeringChanges;
use crate::core::ledger::{
    AttemptEnd, Kept, KeptObject, Lease, Ledger, PassRecord, Resuming, SessionState,
};
use crate::core::outcome::Outcome;
use crate::core::plan::{ActionGroup, LedgerExpectation};

/// The recovery lease as this pass found it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(tag = "standing", rename_all = "kebab-case")]
pub enum LeaseStanding {
    #[default]
    Free,
    Ours,
    /// Held by a run that has finished: taken over.
    OwnerFinished {
        owner_run: u64,
    },
    /// Held by a running pass: this pass does no destructive work.
    HeldBy {
        owner_run: u64,
        since: DateTime<Utc>,
    },
    /// The holder's status could not be read: treated as held.
    OwnerUnknown {
        owner_run: u64,
        reason: String,
    },
}

impl LeaseStanding {
    /// True when this pass may take the lease.
    pub fn obtainable(&self) -> bool {
        matches!(
            self,
            LeaseStanding::Free | LeaseStanding::Ours | LeaseStanding::OwnerFinished { .. }
        )
    }

    /// A sentence for the summary.
    pub fn describe(&self) -> String {
        match self {
            LeaseStanding::Free => "the recovery lease is free".into(),
            LeaseStanding::Ours => "this run already holds the recovery lease".into(),
            LeaseStanding::OwnerFinished { owner_run } => {
                format!(
                    "the recovery lease of run {owner_run} is taken over: that run has finished"
                )
            }
            LeaseStanding::HeldBy { owner_run, since } => format!(
                "run {owner_run} holds the recovery lease (since {}): no destructive work in this pass",
                since.to_rfc3339()
            ),
            LeaseStanding::OwnerUnknown { owner_run, reason } => format!(
                "run {owner_run} holds the recovery lease and its status is unknown ({reason}): no destructive work in this pass"
            ),
        }
    }
}

/// An outcome recorded for a live session whose parent ended, or for a parked session whose
/// issue was closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct OutcomeRecord {
    pub candidate: String,
    pub parent_run: u64,
    /// The state the session had when the decision was made: it is recorded only while the
    /// ledger still holds it so.
    #[serde(skip_serializing_if = "is_live")]
    pub session: SessionState,
    pub outcome: Outcome,
    pub agent_ran: bool,
    /// What recording the outcome does to its pull request's after-care record (contract §12).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aftercare: Option<AftercareEnding>,
}

fn is_live(state: &SessionState) -> bool {
    *state == SessionState::Live
}

/// A parked session to start again (its parent run as parked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ResumeRecord {
    pub candidate: String,
    pub parent_run: u64,
    pub parent_attempt: Option<u32>,
}

/// A live session whose job ended without `finish`, parked to continue in a new job (it has
/// jobs left): its last attempt ends `job-ended`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ParkRecord {
    pub candidate: String,
    pub parent_run: u64,
}

/// A claim to release once its candidate's actions (if any) completed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ClaimRelease {
    pub family: String,
    pub candidate: String,
    pub parent_run: u64,
    /// The action group that must complete first.
    pub after_group: Option<usize>,
}

/// The ledger changes of a plan.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct LedgerPlan {
    pub lease: LeaseStanding,
    pub outcomes: Vec<OutcomeRecord>,
    /// Live sessions parked for a new job.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parks: Vec<ParkRecord>,
    /// Oldest first.
    pub resumes: Vec<ResumeRecord>,
    pub claim_releases: Vec<ClaimRelease>,
    pub kept_added: Vec<Kept>,
    /// Objects no longer kept: moved or gone.
    pub kept_dropped: Vec<KeptObject>,
    /// What the dashboard's ticks ask, applied with the lease before any resume.
    #[serde(skip_serializing_if = "SteeringChanges::is_empty")]
    pub steering: SteeringChanges,
    /// After-care records dropped, left for good or waiting for a maintainer (no lease needed:
    /// each is made only while its record is what the decision saw).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aftercare: Vec<AftercareChange>,
    /// After-care sessions to start after the resumes, in order, under the cap.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aftercare_starts: Vec<AftercareStart>,
}

impl LedgerPlan {
    /// True when the ledger part alone needs the lease.
    pub fn needs_lease(&self) -> bool {
        !self.outcomes.is_empty()
            || !self.parks.is_empty()
            || !self.claim_releases.is_empty()
            || !self.kept_added.is_empty()
            || !self.kept_dropped.is_empty()
            || !self.steering.is_empty()
    }
}

/// What the first write settled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassGrants {
    pub lease_held: bool,
    /// Why the lease was not taken, when it was needed.
    pub lease_refusal: Option<String>,
    /// Candidates whose outcome this write recorded.
    pub recorded: BTreeSet<String>,
    /// Resumed candidates, oldest first.
    pub resumed: Vec<ResumeRecord>,
    /// Resumes refused, with why.
    pub refused_resumes: Vec<(String, String)>,
    /// After-care sessions started, in order.
    pub aftercare_started: Vec<AftercareStart>,
    /// After-care starts refused, with why.
    pub refused_starts: Vec<(String, String)>,
    /// Per plan group: may it be applied?
    pub groups_cleared: Vec<bool>,
    /// The dashboard's requests were applied (the lease was held).
    pub steering_applied: bool,
}

/// The settings of the first write.
#[derive(Debug, Clone)]
pub struct WriteSettings {
    pub own_run: u64,
    pub now: DateTime<Utc>,
    pub max_live: u32,
    /// Finished sessions older than this are pruned (the longest cooldown).
    pub prune_after: Duration,
}

/// The first write of a pass on `ledger` as it is now: `(new ledger when changed, grants,
/// commit message)`. In order: the lease taken when the plan needs it; with the lease, the
/// outcomes recorded (with what they do to after-care records), what recovery keeps updated and
/// old sessions pruned; the after-care records' changes; parked sessions resumed while the cap
/// allows, then after-care sessions started in the room left; then which groups are still
/// cleared.
pub fn decide_first_write(
    ledger: &Ledger,
    plan: &RecoveryPlan,
    settings: &WriteSettings,
) -> (Option<Ledger>, PassGrants, String) {
    let mut next = ledger.clone();
    let mut grants = PassGrants::default();
    let mut said = Vec::new();
    if plan.needs_lease() {
        match lease_refusal(ledger, &plan.ledger.lease, settings.own_run) {
            None => {
                said.extend(take_lease(&mut next, settings));
                grants.lease_held = true;
            }
            Some(refusal) => grants.lease_refusal = Some(refusal),
        }
    }
    if grants.lease_held {
        said.extend(
            plan.ledger
                .steering
                .apply(&mut next, settings.own_run, settings.now),
        );
        grants.steering_applied = !plan.ledger.steering.is_empty();
        for record in record_outcomes(&mut next, &plan.ledger.outcomes, settings.now) {
            grants.recorded.insert(record.candidate.clone());
            said.push(format!("{}: {}", record.candidate, record.outcome));
        }
        for record in park_sessions(&mut next, &plan.ledger.parks, settings.now) {
            grants.recorded.insert(record.candidate.clone());
            said.push(format!("{}: parked for a new job", record.candidate));
        }
        said.extend(update_kept(&mut next, &ledger.kept, &plan.ledger));
        let pruned = next.prune(settings.now, settings.prune_after);
        if pruned > 0 {
            said.push(format!("pruned {pruned} finished sessions"));
        }
    }
    said.extend(aftercare::apply_changes(
        &mut next,
        &plan.ledger.aftercare,
        settings.now,
    ));
    let (resumed, refused_resumes) = resume_under_cap(&mut next, &plan.ledger.resumes, settings);
    said.extend(
        resumed
            .iter()
            .map(|resume| format!("resumed {}", resume.candidate)),
    );
    grants.resumed = resumed;
    grants.refused_resumes = refused_resumes;
    said.extend(start_aftercare(
        &mut next,
        &plan.ledger.aftercare_starts,
        settings,
        &mut grants,
    ));
    grants.groups_cleared = plan
        .groups
        .iter()
        .map(|group| group_cleared(group, &next, &grants))
        .collect();
    let message = format!(
        "recover (run {}): {}",
        settings.own_run,
        if said.is_empty() {
            "no change".to_string()
        } else {
            said.join("; ")
        }
    );
    let changed = next != *ledger;
    (changed.then_some(next), grants, message)
}

/// After-care sessions started on `next` in the room under the cap the resumes left (contract
/// §12); says what it started.
fn start_aftercare(
    next: &mut Ledger,
    starts: &[AftercareStart],
    settings: &WriteSettings,
    grants: &mut PassGrants,
) -> Vec<String> {
    let live = next.live_sessions().count() as u32;
    let (started, refused_starts) = aftercare::start_under_cap(
        next,
        starts,
        settings.own_run,
        settings.now,
        (live, settings.max_live),
    );
    let said = started.iter().map(|start| {
        format!(
            "started a {} session of {} (#{})",
            start.kind,
            start.candidate,
            start.pull_request()
        )
    });
    let said = said.collect();
    grants.aftercare_started = started;
    grants.refused_starts = refused_starts;
    said
}

/// Why this pass may not take the recovery lease on `ledger`, naming its holder; `None` when
/// the lease is free, already its own, or held by the run the plan saw finished (never taken
/// over by time).
fn lease_refusal(ledger: &Ledger, standing: &LeaseStanding, own_run: u64) -> Option<String> {
    let lease_free = match &ledger.recovery_lease {
        None => true,
        Some(lease) if lease.owner_run == own_run => true,
        Some(lease) => matches!(
            standing,
            LeaseStanding::OwnerFinished { owner_run } if *owner_run == lease.owner_run
        ),
    };
    if lease_free {
        return None;
    }
    let holder = ledger
        .recovery_lease
        .as_ref()
        .map(|lease| lease.owner_run)
        .unwrap_or_default();
    Some(format!(
        "run {holder} holds the recovery lease: no destructive work in this pass"
    ))
}

/// The lease this pass holds from now on; says it took it when it was not already its own.
fn take_lease(next: &mut Ledger, settings: &WriteSettings) -> Option<String> {
    let already_ours =
        next.recovery_lease.as_ref().map(|lease| lease.owner_run) == Some(settings.own_run);
    next.recovery_lease = Some(Lease {
        owner_run: settings.own_run,
        taken_at: settings.now,
    });
    (!already_ours).then(|| "took the recovery lease".to_string())
}

/// Each outcome recorded on the session it is for (the same candidate, parent run and state,
/// live or parked): finished at `now`; returns the outcomes recorded, in plan order. An outcome
/// whose session is no longer in that state with that parent is not recorded.
fn record_outcomes<'p>(
    next: &mut Ledger,
    outcomes: &'p [OutcomeRecord],
    now: DateTime<Utc>,
) -> Vec<&'p OutcomeRecord> {
    let mut recorded = Vec::new();
    for record in outcomes {
        let session = next.sessions.iter_mut().rev().find(|session| {
            session.candidate == record.candidate
                && session.state == record.session
                && session.parent_run == record.parent_run
        });
        if let Some(session) = session {
            session.state = SessionState::Finished;
            session.outcome = Some(record.outcome);
            session.agent_ran = record.agent_ran;
            session.finished_at = Some(now);
            if let Some(ending) = &record.aftercare {
                aftercare::apply_ending(next, &record.candidate, record.outcome, ending, now);
            }
            recorded.push(record);
        }
    }
    recorded
}

/// Each park made on the live session it is for (the same candidate and parent run): parked,
/// its last attempt ended `job-ended` at `now` unless it says how it ended. A park whose session
/// is no longer live with that parent is not made.
fn park_sessions<'p>(
    next: &mut Ledger,
    parks: &'p [ParkRecord],
    now: DateTime<Utc>,
) -> Vec<&'p ParkRecord> {
    let mut parked = Vec::new();
    for record in parks {
        let session = next.sessions.iter_mut().rev().find(|session| {
            session.candidate == record.candidate
                && session.state == SessionState::Live
                && session.parent_run == record.parent_run
        });
        if let Some(session) = session {
            // A resume no job adopted stays recorded: how long that has lasted holds it.
            session.state = SessionState::Parked;
            if let Some(attempt) = session.attempts.last_mut().filter(|a| a.end.is_none()) {
                attempt.end = Some(AttemptEnd::JobEnded);
                attempt.ended_at = Some(now);
            }
            parked.push(record);
        }
    }
    parked
}

/// What recovery keeps: objects that moved or disappeared dropped, new findings replacing older
/// ones of the same object; says so when that changed what `before` held.
fn update_kept(next: &mut Ledger, before: &[Kept], plan: &LedgerPlan) -> Option<String> {
    for object in &plan.kept_dropped {
        next.kept.retain(|kept| &kept.object != object);
    }
    for kept in &plan.kept_added {
        next.kept.retain(|existing| existing.object != kept.object);
        next.kept.push(kept.clone());
    }
    (next.kept.len() != before.len() || next.kept != before)
        .then(|| "updated what recovery keeps".to_string())
}

/// Parked sessions moved to live, oldest first, while live sessions stay under the cap: their
/// parent run (and their claims') becomes this run. Returns the resumes made and those refused
/// with why (no room, or no longer parked in the ledger).
fn resume_under_cap(
    next: &mut Ledger,
    resumes: &[ResumeRecord],
    settings: &WriteSettings,
) -> (Vec<ResumeRecord>, Vec<(String, String)>) {
    let mut live = next.live_sessions().count() as u32;
    let mut resumed = Vec::new();
    let mut refused = Vec::new();
    for resume in resumes {
        if let Some(pause) = &next.steering.paused {
            let why = format!("paused by {} on the dashboard", pause.by);
            refused.push((resume.candidate.clone(), why));
            continue;
        }
        if live >= settings.max_live {
            let why = format!(
                "no room under the cap: {live} of {} live",
                settings.max_live
            );
            refused.push((resume.candidate.clone(), why));
            continue;
        }
        if !resume_session(next, resume, settings.own_run, settings.now) {
            let why = "no longer parked in the ledger".to_string();
            refused.push((resume.candidate.clone(), why));
            continue;
        }
        live += 1;
        resumed.push(resume.clone());
    }
    (resumed, refused)
}

/// The parked session of `resume` made live under `own_run`, its claims moved along; false
/// when the ledger no longer holds it parked with that parent run.
fn resume_session(
    next: &mut Ledger,
    resume: &ResumeRecord,
    own_run: u64,
    now: DateTime<Utc>,
) -> bool {
    let Some(session) = next.sessions.iter_mut().rev().find(|session| {
        session.candidate == resume.candidate
            && session.state == SessionState::Parked
            && session.parent_run == resume.parent_run
    }) else {
        return false;
    };
    // Resumes no job adopted keep counting from the first, unless the dashboard asked again.
    let asked_again = next.steering.resume_first.contains_key(&resume.candidate);
    let since = match &session.resuming {
        Some(earlier) if !asked_again => earlier.at,
        _ => now,
    };
    session.state = SessionState::Live;
    session.parent_run = own_run;
    session.parent_attempt = None;
    session.resuming = Some(Resuming {
        by_run: own_run,
        at: since,
    });
    let family = session.family.clone();
    for claim in next.claims.iter_mut().filter(|claim| {
        claim.family == family
            && claim.candidate == resume.candidate
            && claim.parent_run == resume.parent_run
    }) {
        claim.parent_run = own_run;
    }
    true
}

/// Whether a plan group may still be applied after the first write: a destructive one only
/// under the lease, and only while the ledger says what the group expects of its candidate.
fn group_cleared(group: &ActionGroup, next: &Ledger, grants: &PassGrants) -> bool {
    if group.destructive && !grants.lease_held {
        return false;
    }
    let candidate = group.candidate.as_deref().unwrap_or_default();
    match &group.ledger_expectation {
        LedgerExpectation::Nothing => true,
        LedgerExpectation::NoOpenSession => open_session_of_candidate(next, candidate).is_none(),
        LedgerExpectation::FinishedByThisPass { .. } => grants.recorded.contains(candidate),
        LedgerExpectation::ResumedByThisPass => grants
            .resumed
            .iter()
            .any(|resume| resume.candidate == candidate),
        LedgerExpectation::AftercareStartedByThisPass => grants
            .aftercare_started
            .iter()
            .any(|start| start.candidate == candidate),
    }
}

/// The last write of a pass: claims released, failed resumes parked again, after-care starts
/// whose workflow could not be dispatched taken back (their session and claim removed, the
/// record's count restored), the lease released, and the pass recorded (`pass`, when it changed
/// anything) for the dashboard.
pub fn decide_second_write(
    ledger: &Ledger,
    own_run: u64,
    releases: &[ClaimRelease],
    failed: (&[ResumeRecord], &[AftercareStart]),
    pass: Option<&PassRecord>,
) -> (Option<Ledger>, String) {
    let (failed_resumes, failed_starts) = failed;
    let mut next = ledger.clone();
    let mut said = aftercare::take_back(&mut next, failed_starts, own_run);
    if let Some(pass) = pass {
        next.record_pass(pass.clone());
    }
    for release in releases {
        let before = next.claims.len();
        next.claims.retain(|claim| {
            !(claim.family == release.family
                && claim.candidate == release.candidate
                && claim.parent_run == release.parent_run)
        });
        if next.claims.len() < before {
            said.push(format!("released the claim of {}", release.candidate));
        }
    }
    for resume in failed_resumes {
        if let Some(session) = next.sessions.iter_mut().rev().find(|session| {
            session.candidate == resume.candidate
                && session.state == SessionState::Live
                && session.parent_run == own_run
        }) {
            session.state = SessionState::Parked;
            session.parent_run = resume.parent_run;
            session.parent_attempt = resume.parent_attempt;
            let family = session.family.clone();
            for claim in next.claims.iter_mut().filter(|claim| {
                claim.family == family
                    && claim.candidate == resume.candidate
                    && claim.parent_run == own_run
            }) {
                claim.parent_run = resume.parent_run;
            }
            said.push(format!(
                "{} parked again: its run did not start",
                resume.candidate
            ));
        }
    }
    if next
        .recovery_lease
        .as_ref()
        .is_some_and(|lease| lease.owner_run == own_run)
    {
        next.recovery_lease = None;
        said.push("released the recovery lease".to_string());
    }
    let message = format!("recover (run {own_run}): {}", said.join("; "));
    ((next != *ledger).then_some(next), message)
}

/// The live or parked session of a candidate, if any.
fn open_session_of_candidate<'l>(
    ledger: &'l Ledger,
    candidate: &str,
) -> Option<&'l crate::core::ledger::Session> {
    ledger
        .sessions
        .iter()
        .find(|session| session.candidate == candidate && session.state != SessionState::Finished)
}
