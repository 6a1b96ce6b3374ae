//! What every benchmark shares: the standard scenario's sessions (`BENCH-SCENARIO.md`) as
//! klaud's ledger, with a claim for every live session as `select` would have written it, and
//! (`child`) the wall time and peak RSS of one run of the real binary.

// Each benchmark uses part of it.
#![allow(dead_code)]

pub mod child;

use chrono::{DateTime, TimeZone, Utc};
use klaud::core::ledger::{Claim, Ledger, Session, SessionState};
use klaud::core::outcome::Outcome;

use super::fake_github::Timestamp;
use super::fake_github::scenario::{ScenarioSession, SessionState as ScenarioState};

/// The fake's timestamp as a time.
pub fn time(timestamp: Timestamp) -> DateTime<Utc> {
    Utc.timestamp_opt(timestamp.0, 0)
        .single()
        .expect("valid time")
}

/// The scenario's sessions as klaud's ledger.
pub fn ledger_of(sessions: &[ScenarioSession]) -> Ledger {
    let mut ledger = Ledger::empty();
    for session in sessions {
        ledger.sessions.push(Session {
            candidate: session.candidate.clone(),
            family: session.family.clone(),
            parent_run: session.parent_run_id,
            parent_attempt: None,
            state: match session.state {
                ScenarioState::Live => SessionState::Live,
                ScenarioState::Parked => SessionState::Parked,
                ScenarioState::Finished => SessionState::Finished,
            },
            started_at: time(session.started_at),
            finished_at: session.finished_at.map(time),
            outcome: session.outcome.as_deref().and_then(Outcome::parse),
            agent_ran: true,
            pull_request: session.pull_request,
            pending_outcome: None,
        });
        if session.state == ScenarioState::Live {
            ledger.claims.push(Claim {
                family: session.family.clone(),
                candidate: session.candidate.clone(),
                parent_run: session.parent_run_id,
                claimed_at: time(session.started_at),
            });
        }
    }
    ledger
}
