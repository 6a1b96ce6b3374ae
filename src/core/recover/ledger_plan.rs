//! The ledger side of a recovery plan, as data, and the two pure decisions that apply it to the
//! ledger as it is when the pass writes (the store re-runs them on the fresh document after a
//! compare-and-swap conflict):
//!
//! 1. [`decide_first_write`], before anything changes on GitHub: take the recovery lease (free,
//!    already ours, or left by a run seen finished — never by time), record reconciled outcomes,
//!    remember what is kept, prune, and move parked sessions to live while the cap allows. It
//!    says which action groups are still cleared: a group whose candidate another pass or mode
//!    changed meanwhile is dropped.
//! 2. [`decide_second_write`], after the actions: release the claims of candidates whose cleanup
//!    finished (the last step of contract §5), return failed resumes to parked, release the lease.

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::RecoveryPlan;
use crate::core::ledger::{Kept, KeptObject, Lease, Ledger, SessionState};
use crate::core::outcome::Outcome;
use crate::core::plan::LedgerExpectation;

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

/// An outcome recorded for a live session whose parent ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct OutcomeRecord {
    pub candidate: String,
    pub parent_run: u64,
    pub outcome: Outcome,
    pub agent_ran: bool,
}

/// A parked session to start again (its parent run as parked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ResumeRecord {
    pub candidate: String,
    pub parent_run: u64,
    pub parent_attempt: Option<u32>,
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
    /// Oldest first.
    pub resumes: Vec<ResumeRecord>,
    pub claim_releases: Vec<ClaimRelease>,
    pub kept_added: Vec<Kept>,
    /// Objects no longer kept: moved or gone.
    pub kept_dropped: Vec<KeptObject>,
}

impl LedgerPlan {
    /// True when the ledger part alone needs the lease.
    pub fn needs_lease(&self) -> bool {
        !self.outcomes.is_empty()
            || !self.claim_releases.is_empty()
            || !self.kept_added.is_empty()
            || !self.kept_dropped.is_empty()
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
    /// Per plan group: may it be applied?
    pub groups_cleared: Vec<bool>,
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
/// commit message)`.
pub fn decide_first_write(
    ledger: &Ledger,
    plan: &RecoveryPlan,
    settings: &WriteSettings,
) -> (Option<Ledger>, PassGrants, String) {
    let mut next = ledger.clone();
    let mut grants = PassGrants::default();
    let mut said = Vec::new();
    if plan.needs_lease() {
        let lease_free = match &ledger.recovery_lease {
            None => true,
            Some(lease) if lease.owner_run == settings.own_run => true,
            Some(lease) => matches!(
                plan.ledger.lease,
                LeaseStanding::OwnerFinished { owner_run } if owner_run == lease.owner_run
            ),
        };
        if lease_free {
            if ledger.recovery_lease.as_ref().map(|lease| lease.owner_run) != Some(settings.own_run)
            {
                said.push("took the recovery lease".to_string());
            }
            next.recovery_lease = Some(Lease {
                owner_run: settings.own_run,
                taken_at: settings.now,
            });
            grants.lease_held = true;
        } else {
            let holder = ledger
                .recovery_lease
                .as_ref()
                .map(|lease| lease.owner_run)
                .unwrap_or_default();
            grants.lease_refusal = Some(format!(
                "run {holder} holds the recovery lease: no destructive work in this pass"
            ));
        }
    }
    if grants.lease_held {
        for record in &plan.ledger.outcomes {
            let session = next.sessions.iter_mut().rev().find(|session| {
                session.candidate == record.candidate
                    && session.state == SessionState::Live
                    && session.parent_run == record.parent_run
            });
            if let Some(session) = session {
                session.state = SessionState::Finished;
                session.outcome = Some(record.outcome);
                session.agent_ran = record.agent_ran;
                session.finished_at = Some(settings.now);
                grants.recorded.insert(record.candidate.clone());
                said.push(format!("{}: {}", record.candidate, record.outcome));
            }
        }
        for object in &plan.ledger.kept_dropped {
            next.kept.retain(|kept| &kept.object != object);
        }
        for kept in &plan.ledger.kept_added {
            next.kept.retain(|existing| existing.object != kept.object);
            next.kept.push(kept.clone());
        }
        if next.kept.len() != ledger.kept.len() || next.kept != ledger.kept {
            said.push("updated what recovery keeps".to_string());
        }
        let pruned = next.prune(settings.now, settings.prune_after);
        if pruned > 0 {
            said.push(format!("pruned {pruned} finished sessions"));
        }
    }
    let mut live = next.live_sessions().count() as u32;
    for resume in &plan.ledger.resumes {
        if live >= settings.max_live {
            grants.refused_resumes.push((
                resume.candidate.clone(),
                format!(
                    "no room under the cap: {live} of {} live",
                    settings.max_live
                ),
            ));
            continue;
        }
        let Some(session) = next.sessions.iter_mut().rev().find(|session| {
            session.candidate == resume.candidate
                && session.state == SessionState::Parked
                && session.parent_run == resume.parent_run
        }) else {
            grants.refused_resumes.push((
                resume.candidate.clone(),
                "no longer parked in the ledger".into(),
            ));
            continue;
        };
        session.state = SessionState::Live;
        session.parent_run = settings.own_run;
        session.parent_attempt = None;
        let family = session.family.clone();
        for claim in next.claims.iter_mut().filter(|claim| {
            claim.family == family
                && claim.candidate == resume.candidate
                && claim.parent_run == resume.parent_run
        }) {
            claim.parent_run = settings.own_run;
        }
        live += 1;
        grants.resumed.push(resume.clone());
        said.push(format!("resumed {}", resume.candidate));
    }
    let resumed: BTreeSet<&str> = grants
        .resumed
        .iter()
        .map(|resume| resume.candidate.as_str())
        .collect();
    grants.groups_cleared = plan
        .groups
        .iter()
        .map(|group| {
            if group.destructive && !grants.lease_held {
                return false;
            }
            let candidate = group.candidate.as_deref().unwrap_or_default();
            match &group.ledger_expectation {
                LedgerExpectation::Nothing => true,
                LedgerExpectation::NoOpenSession => {
                    open_session_of_candidate(&next, candidate).is_none()
                }
                LedgerExpectation::FinishedByThisPass { .. } => grants.recorded.contains(candidate),
                LedgerExpectation::ResumedByThisPass => resumed.contains(candidate),
            }
        })
        .collect();
    let changed = next != *ledger;
    let message = format!(
        "recover (run {}): {}",
        settings.own_run,
        if said.is_empty() {
            "no change".to_string()
        } else {
            said.join("; ")
        }
    );
    (changed.then_some(next), grants, message)
}

/// The last write of a pass: claims released, failed resumes parked again, the lease released.
pub fn decide_second_write(
    ledger: &Ledger,
    own_run: u64,
    releases: &[ClaimRelease],
    failed_resumes: &[ResumeRecord],
) -> (Option<Ledger>, String) {
    let mut next = ledger.clone();
    let mut said = Vec::new();
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
