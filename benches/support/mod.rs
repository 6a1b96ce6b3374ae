//! What every benchmark shares: the standard and the big scenario's sessions (`BENCH-SCENARIO.md`)
//! as klaud's ledger, with a claim for every live session as `select` would have written it, and
//! (`child`) the wall time and peak RSS of one run of the real binary.

// Each benchmark uses part of it.
#![allow(dead_code)]

pub mod child;

use chrono::{DateTime, TimeZone, Utc};
use klaud::core::ledger::{Claim, Ledger, Session, SessionState};
use klaud::core::outcome::Outcome;

use super::fake_github::scenario::{self, ScenarioSession, SessionState as ScenarioState};
use super::fake_github::{FakeGitHub, FakeGitHubHandle, FaultConfig, Timestamp};

/// The standard scenario generated from `seed` around `now`, its sessions written as klaud's
/// ledger, on a fresh fake GitHub answering with `latency_ms` of latency; and the sessions.
pub fn standard_scenario(
    seed: u64,
    now: Timestamp,
    latency_ms: u64,
) -> (FakeGitHubHandle, Vec<ScenarioSession>) {
    serve_with_ledger(scenario::generate(seed, now), latency_ms)
}

/// The big scenario (`scenario::generate_big`: the standard one inside a repository with 50,000
/// pull requests, 2,000 branches and 100,000 runs of people's workflows) generated from `seed`
/// around `now`, its sessions written as klaud's ledger, on a fresh fake GitHub answering with
/// `latency_ms` of latency; and the sessions.
pub fn big_scenario(
    seed: u64,
    now: Timestamp,
    latency_ms: u64,
) -> (FakeGitHubHandle, Vec<ScenarioSession>) {
    serve_with_ledger(scenario::generate_big(seed, now), latency_ms)
}

/// The generated scenario with its sessions written as klaud's ledger, on a fresh fake GitHub.
fn serve_with_ledger(
    mut generated: scenario::BenchScenario,
    latency_ms: u64,
) -> (FakeGitHubHandle, Vec<ScenarioSession>) {
    let ledger = ledger_of(&generated.sessions);
    generated.write_ledger(&ledger.to_json());
    let server = FakeGitHub::start(generated.state);
    server.set_faults(FaultConfig {
        latency_ms,
        ..FaultConfig::default()
    });
    (server, generated.sessions)
}

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
            attempts: Vec::new(),
            resuming: None,
            unadopted_jobs: Vec::new(),
            kind: Default::default(),
            aftercare: None,
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
