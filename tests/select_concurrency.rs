//! Four `klaud select` processes started at once with overlapping candidates, against one fake
//! GitHub with latency so that their reads and compare-and-swap writes interleave: never more
//! live sessions than `max-candidates`, never one family claimed twice, and no ledger write lost
//! (every candidate a pass reports as selected is in the final ledger under that pass's run, and
//! nothing else is). Half of the trials start without a state branch, so the passes also race to
//! create it. The normal suite runs 10 trials; the 50-trial run (about half a second per trial)
//! is `cargo test --test select_concurrency -- --ignored`, which `.ci/run` runs.

#![allow(clippy::disallowed_methods)] // tests read the environment and spawn the binary

#[path = "fake_github/mod.rs"]
mod fake_github;
#[path = "select_support/mod.rs"]
mod select_support;

use std::collections::BTreeSet;
use std::time::Instant;

use chrono::Utc;
use fake_github::{FakeGitHub, FaultConfig};
use klaud::core::ledger::{Ledger, SessionState};
use select_support::*;

const PASSES: u64 = 4;
const MAX_CANDIDATES: usize = 3;
const FAMILIES: u64 = 6;

/// Pass `p` proposes the shared candidates of families p, p+1, p+2 and one candidate of its own
/// in family p+3: every family is wanted by several passes, under different ids too.
fn candidates_of_pass(pass: u64) -> String {
    let mut list: Vec<(String, String)> = (0..3)
        .map(|offset| {
            let family = (pass + offset) % FAMILIES;
            (
                format!("cand-{family}"),
                format!("configs/x.yaml:f{family}"),
            )
        })
        .collect();
    let family = (pass + 3) % FAMILIES;
    list.push((format!("own-{pass}"), format!("configs/x.yaml:f{family}")));
    let borrowed: Vec<(&str, &str)> = list
        .iter()
        .map(|(id, family)| (id.as_str(), family.as_str()))
        .collect();
    candidates_json(&borrowed)
}

/// What one trial saw.
struct TrialResult {
    live_sessions: usize,
    conflicts: usize,
}

fn trial(number: u64) -> TrialResult {
    let mut state = repository();
    let seeded_live = number.is_multiple_of(2);
    if seeded_live {
        let mut ledger = Ledger::empty();
        ledger
            .claim_family("earlier", "configs/x.yaml:f5", 1, Utc::now())
            .unwrap();
        seed_ledger(&mut state, &ledger);
    }
    let server = FakeGitHub::start(state);
    server.set_faults(FaultConfig {
        seed: number,
        latency_ms: 5,
        latency_jitter_ms: 15,
        ..FaultConfig::default()
    });
    let passes: Vec<(u64, Pass)> = (0..PASSES)
        .map(|index| {
            let run_id = 1_000 * (number + 1) + index;
            (run_id, Pass::new(run_id, &candidates_of_pass(index)))
        })
        .collect();
    let mut children: Vec<std::process::Child> = passes
        .iter()
        .map(|(_, pass)| {
            pass.command(&server)
                .args(["--max-candidates", &MAX_CANDIDATES.to_string()])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("klaud starts")
        })
        .collect();
    for (child, (run_id, _)) in children.iter_mut().zip(&passes) {
        let status = child.wait().unwrap();
        assert!(
            status.success(),
            "trial {number}: run {run_id} exited {status}"
        );
    }

    let ledger = stored_ledger(&server);
    let live: Vec<_> = ledger.live_sessions().collect();
    assert!(
        live.len() <= MAX_CANDIDATES,
        "trial {number}: {} live sessions over a cap of {MAX_CANDIDATES}: {live:?}",
        live.len()
    );
    let open_families: Vec<&str> = ledger
        .sessions
        .iter()
        .filter(|session| session.state != SessionState::Finished)
        .map(|session| session.family.as_str())
        .collect();
    let distinct: BTreeSet<&str> = open_families.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        open_families.len(),
        "trial {number}: a family twice: {open_families:?}"
    );
    let claimed: Vec<&str> = ledger
        .claims
        .iter()
        .map(|claim| claim.family.as_str())
        .collect();
    let distinct: BTreeSet<&str> = claimed.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        claimed.len(),
        "trial {number}: a claim twice: {claimed:?}"
    );

    let mut reported_total = 0;
    for (run_id, pass) in &passes {
        let reported: BTreeSet<String> = pass.selected_ids().into_iter().collect();
        let stored: BTreeSet<String> = ledger
            .sessions
            .iter()
            .filter(|session| session.parent_run == *run_id && session.state == SessionState::Live)
            .map(|session| session.candidate.clone())
            .collect();
        assert_eq!(
            reported, stored,
            "trial {number}: run {run_id}'s claims (lost write?)"
        );
        reported_total += reported.len();
    }
    let before = usize::from(seeded_live);
    assert_eq!(live.len(), before + reported_total, "trial {number}");
    assert_eq!(
        live.len(),
        MAX_CANDIDATES,
        "trial {number}: with six wanted families the cap is filled"
    );

    let conflicts = server
        .request_log()
        .iter()
        .filter(|request| request.is_write() && matches!(request.status, 409 | 422))
        .count();
    TrialResult {
        live_sessions: live.len(),
        conflicts,
    }
}

#[test]
fn four_concurrent_passes_never_exceed_the_cap_claim_a_family_twice_or_lose_a_write() {
    run_trials(10);
}

#[test]
#[ignore = "50 trials take about half a minute; run with --ignored (.ci/run does)"]
fn fifty_trials_of_four_concurrent_passes_never_exceed_the_cap_or_lose_a_write() {
    run_trials(50);
}

fn run_trials(trials: u64) {
    let started = Instant::now();
    let mut most_live = 0;
    let mut conflicts = 0;
    for number in 0..trials {
        let result = trial(number);
        most_live = most_live.max(result.live_sessions);
        conflicts += result.conflicts;
    }
    eprintln!(
        "{trials} trials of {PASSES} concurrent passes in {:.1} s: at most {most_live} live \
         sessions (cap {MAX_CANDIDATES}), {conflicts} compare-and-swap conflicts resolved",
        started.elapsed().as_secs_f64()
    );
    assert!(
        conflicts > 0,
        "the passes never raced: the test proves nothing"
    );
}
