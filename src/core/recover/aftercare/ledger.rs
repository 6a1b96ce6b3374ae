//! What after-care changes in the ledger in a recovery pass (contract §12), as data, and the pure
//! functions that make each change on the ledger as it is when the pass writes (re-run on the
//! fresh document after a compare-and-swap conflict, so two passes running at once start one
//! session, never two):
//!
//! - [`AftercareChange`]: a record dropped (its pull request is no longer open), left for good
//!   (a guard failed) or waiting for a maintainer (its sessions used up), each only while the
//!   record still is what the decision saw;
//! - [`AftercareEnding`]: what recording a reconciled session's outcome does to its pull
//!   request's record (watched again at a validated head, waiting for a maintainer, left);
//! - [`AftercareStart`]: a session started in the first write — its live session, its family's
//!   claim, the record's count and last start — under the cap, the one-per-family rule and the
//!   pause, and taken back in the last write when its workflow could not be dispatched.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::core::aftercare::{
    AftercareRecord, AftercareState, AftercareWork, NeedsMaintainerBecause, SessionKind,
};
use crate::core::ledger::{ClaimRefusal, Ledger, Resuming, SessionState};
use crate::core::outcome::Outcome;

/// A change to one after-care record that no session's outcome carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "kebab-case")]
pub enum AftercareChange {
    /// Its pull request is no longer open: the record is dropped.
    Drop { pull_request: u64 },
    /// A guard failed: after-care leaves it for good.
    Leave { pull_request: u64, reason: String },
    /// A session is due and it has used the `used` sessions it may have: it waits for a
    /// maintainer.
    SessionsUsedUp { pull_request: u64, used: u32 },
}

/// What recording a reconciled session's outcome does to the after-care record of its pull
/// request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "record", rename_all = "kebab-case")]
pub enum AftercareEnding {
    /// The session ended `validated` on `head`: the pull request is watched (again) there.
    Validated {
        pull_request: u64,
        head: String,
        family: String,
    },
    /// An after-care session ended with another outcome: the pull request waits for a
    /// maintainer (`Ledger::record_aftercare_ended`).
    Ended { pull_request: u64 },
    /// A maintainer committed to it: after-care leaves it for good.
    Left { pull_request: u64, reason: String },
}

/// An after-care session to start: made live in the first write, taken back in the last when
/// its workflow could not be dispatched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct AftercareStart {
    pub candidate: String,
    pub family: String,
    pub kind: SessionKind,
    pub work: AftercareWork,
    /// The record's count of sessions as decided: the start is made only while the ledger
    /// still says so, and a failed dispatch restores it.
    pub sessions_used: u32,
    /// The record's last start as decided, restored by a failed dispatch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_started_at: Option<DateTime<Utc>>,
}

impl AftercareStart {
    pub fn pull_request(&self) -> u64 {
        self.work.pull_request
    }
}

fn record_mut(ledger: &mut Ledger, number: u64) -> Option<&mut AftercareRecord> {
    ledger
        .aftercare
        .iter_mut()
        .find(|record| record.pull_request == number)
}

/// Each change made on `next` while its record still is what the decision saw; what was done,
/// for the commit message.
pub fn apply_changes(
    next: &mut Ledger,
    changes: &[AftercareChange],
    now: DateTime<Utc>,
) -> Vec<String> {
    let mut said = Vec::new();
    for change in changes {
        match change {
            AftercareChange::Drop { pull_request } => {
                let before = next.aftercare.len();
                next.aftercare
                    .retain(|record| record.pull_request != *pull_request);
                if next.aftercare.len() < before {
                    said.push(format!("#{pull_request} left after-care: no longer open"));
                }
            }
            AftercareChange::Leave {
                pull_request,
                reason,
            } => {
                if leave(next, *pull_request, reason, now) {
                    said.push(format!("#{pull_request} left for good: {reason}"));
                }
            }
            AftercareChange::SessionsUsedUp { pull_request, used } => {
                let Some(record) = record_mut(next, *pull_request) else {
                    continue;
                };
                if record.state == AftercareState::Watched && record.sessions_used == *used {
                    record.state = AftercareState::NeedsMaintainer {
                        since: now,
                        because: NeedsMaintainerBecause::SessionsUsedUp { used: *used },
                    };
                    said.push(format!(
                        "#{pull_request} waits for a maintainer: its sessions are used up"
                    ));
                }
            }
        }
    }
    said
}

/// Record `number` left for good with `reason`, unless it already is; false when unchanged.
fn leave(next: &mut Ledger, number: u64, reason: &str, now: DateTime<Utc>) -> bool {
    match record_mut(next, number) {
        Some(record) if !matches!(record.state, AftercareState::Left { .. }) => {
            record.state = AftercareState::Left {
                since: now,
                reason: reason.to_string(),
            };
            true
        }
        _ => false,
    }
}

/// What recording `outcome` for `candidate`'s session does to its pull request's record.
pub fn apply_ending(
    next: &mut Ledger,
    candidate: &str,
    outcome: Outcome,
    ending: &AftercareEnding,
    now: DateTime<Utc>,
) -> bool {
    match ending {
        AftercareEnding::Validated {
            pull_request,
            head,
            family,
        } => next.record_validated(candidate, family, *pull_request, Some(head), now),
        AftercareEnding::Ended { pull_request } => {
            next.record_aftercare_ended(*pull_request, outcome, now)
        }
        AftercareEnding::Left {
            pull_request,
            reason,
        } => leave(next, *pull_request, reason, now),
    }
}

/// Why a start is refused on the ledger as it is written.
fn start_refusal(
    next: &Ledger,
    start: &AftercareStart,
    live: u32,
    max_live: u32,
) -> Option<String> {
    if let Some(pause) = &next.steering.paused {
        return Some(format!("paused by {} on the dashboard", pause.by));
    }
    if live >= max_live {
        return Some(format!("no room under the cap: {live} of {max_live} live"));
    }
    let unchanged = next
        .aftercare_of(start.pull_request())
        .is_some_and(|record| {
            record.state == AftercareState::Watched && record.sessions_used == start.sessions_used
        });
    if !unchanged {
        return Some("its after-care record changed meanwhile".into());
    }
    if let Some(session) = next.sessions.iter().find(|session| {
        session.candidate == start.candidate && session.state != SessionState::Finished
    }) {
        return Some(format!("a session of {} is open", session.candidate));
    }
    None
}

/// The after-care sessions started on `next` while the live sessions stay under `max_live`
/// (`live` counts them with this pass's resumes), one per family, none while paused: each a live
/// session of this run marked resuming (so one dispatched job adopts it), its family claimed,
/// its record's count raised and its last start now. Returns the starts made and those refused
/// with why.
pub fn start_under_cap(
    next: &mut Ledger,
    starts: &[AftercareStart],
    own_run: u64,
    now: DateTime<Utc>,
    (mut live, max_live): (u32, u32),
) -> (Vec<AftercareStart>, Vec<(String, String)>) {
    let mut started = Vec::new();
    let mut refused = Vec::new();
    for start in starts {
        if let Some(why) = start_refusal(next, start, live, max_live) {
            refused.push((start.candidate.clone(), why));
            continue;
        }
        if let Err(refusal) = next.claim_family(&start.candidate, &start.family, own_run, now) {
            let why = match refusal {
                ClaimRefusal::ClaimedBy {
                    candidate,
                    parent_run,
                } => format!("its family is claimed by {candidate} (run {parent_run})"),
                ClaimRefusal::SessionOpen { candidate } => {
                    format!("its family has an open session of {candidate}")
                }
            };
            refused.push((start.candidate.clone(), why));
            continue;
        }
        if let Some(session) = next.sessions.last_mut() {
            session.kind = start.kind;
            session.aftercare = Some(start.work.clone());
            session.pull_request = Some(start.pull_request());
            session.resuming = Some(Resuming {
                by_run: own_run,
                at: now,
            });
        }
        if let Some(record) = record_mut(next, start.pull_request()) {
            record.sessions_used += 1;
            record.last_started_at = Some(now);
        }
        live += 1;
        started.push(start.clone());
    }
    (started, refused)
}

/// The starts whose workflow could not be dispatched, taken back on `next`: the live session
/// this run opened and its claim removed, the record's count and last start restored (only
/// while they are still what the start made them). What was done, for the commit message.
pub fn take_back(next: &mut Ledger, failed: &[AftercareStart], own_run: u64) -> Vec<String> {
    let mut said = Vec::new();
    for start in failed {
        let before = next.sessions.len();
        next.sessions.retain(|session| {
            !(session.candidate == start.candidate
                && session.parent_run == own_run
                && session.state == SessionState::Live
                && session.kind == start.kind
                && session.attempts.is_empty())
        });
        if next.sessions.len() == before {
            continue;
        }
        next.claims.retain(|claim| {
            !(claim.family == start.family
                && claim.candidate == start.candidate
                && claim.parent_run == own_run)
        });
        if let Some(record) = record_mut(next, start.pull_request())
            .filter(|record| record.sessions_used == start.sessions_used + 1)
        {
            record.sessions_used = start.sessions_used;
            record.last_started_at = start.last_started_at;
        }
        said.push(format!(
            "{}: the {} session of #{} taken back: its run did not start",
            start.candidate,
            start.kind,
            start.pull_request()
        ));
    }
    said
}
