//! Four klaud processes started at once against one fake GitHub with latency, so that their
//! reads and compare-and-swap writes interleave (contract §7): never more live sessions than
//! `max-candidates`, never one family claimed twice, and no ledger write lost. The invariant
//! checker (`invariants/`) compares the states before and after every trial.
//!
//! - Four `select` passes with overlapping candidates: every candidate a pass reports as selected
//!   is in the final ledger under that pass's run, and nothing else is. Half of the trials start
//!   without a state branch, so the passes also race to create it.
//! - Four passes of mixed modes (`select`, `recover`, `finish`) on a ledger one short of its
//!   cap, where recovery reconciles an ended session and resumes parked ones, `finish` ends
//!   sessions and `select` claims what room there is: what each pass reports (claims,
//!   reconciled, resumed, finished) is in the final ledger, a parked session is started at most
//!   once, and the lease is released.
//!
//! The normal suite runs 10 trials of each; `cargo test --test concurrency -- --ignored` runs
//! 50 select trials and 100 mixed ones, as `.ci/run` does.

#![allow(clippy::disallowed_methods)]
// tests read the environment and spawn the binary
// Both supports include the shared step support: one copy each, as in their own suites.
#![allow(clippy::duplicate_mod)]

use klaud_fake_github as fake_github;
#[path = "invariants/mod.rs"]
mod invariants;
#[path = "recover_support/mod.rs"]
mod recover_support;
#[path = "select_support/mod.rs"]
mod select_support;

use std::collections::BTreeSet;
use std::time::Instant;

use chrono::Utc;
use fake_github::{FakeGitHub, FakeGitHubHandle, FaultConfig};
use invariants::{Rules, assert_none, check};
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
    let before = server.state();
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
    assert_none(
        &format!("trial {number}"),
        &check(&Rules::new(BOT, MAX_CANDIDATES), &before, &server.state()),
    );

    let mut reported_total = 0;
    for (run_id, pass) in &passes {
        let reported: BTreeSet<String> = pass.selected_ids().into_iter().collect();
        let stored = live_sessions_started_by(&ledger, *run_id);
        assert_eq!(
            reported, stored,
            "trial {number}: run {run_id}'s claims (lost write?)"
        );
        reported_total += reported.len();
    }
    let seeded = usize::from(seeded_live);
    assert_eq!(live.len(), seeded + reported_total, "trial {number}");
    assert_eq!(
        live.len(),
        MAX_CANDIDATES,
        "trial {number}: with six wanted families the cap is filled"
    );

    let conflicts = conflicts(&server);
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

/// Writes answered 409 or 422: compare-and-swap conflicts.
fn conflicts(server: &FakeGitHubHandle) -> usize {
    server
        .request_log()
        .iter()
        .filter(|request| request.is_write() && matches!(request.status, 409 | 422))
        .count()
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

// Mixed modes.

const MIXED_CAP: usize = 5;
/// Families select wants: four free ones and one held by a live session.
const WANTED: [&str; 5] = ["s0", "s1", "s2", "s3", "a"];
const FINISH_OUTCOMES: [&str; 3] = ["failed", "no-capacity", "incompatible"];

/// One pass of a mixed trial.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Select,
    Recover,
    /// Finishes this candidate.
    Finish(&'static str),
}

/// The four passes of trial `number`.
fn mixed_steps(number: u64) -> [Step; 4] {
    use Step::*;
    match number % 4 {
        0 => [Select, Select, Recover, Finish("f0")],
        1 => [Select, Recover, Recover, Finish("f0")],
        2 => [Select, Recover, Finish("f0"), Finish("f1")],
        _ => [Recover, Select, Finish("f0"), Select],
    }
}

/// A ledger one short of its cap of five: `a`, `f0`, `f1` live under a running planner, `b` live
/// under one that ended (recovery reconciles it), `p0`, `p1` parked (recovery resumes them when
/// there is room), and an abandoned draft `gone`.
fn mixed_world() -> recover_support::World {
    use recover_support::World;
    let mut world = World::new();
    let running = world.running_planner(&["a", "f0", "f1"]);
    for live in ["a", "f0", "f1"] {
        let number = world.bot_draft(live);
        world.session(live, SessionState::Live, running, Some(number));
        world.claim(live, running);
    }
    let ended = world.finished_planner(3, &["b"]);
    let number = world.bot_draft("b");
    world.session("b", SessionState::Live, ended, Some(number));
    world.claim("b", ended);
    let old = world.finished_planner(30, &["p0", "p1"]);
    for (age, parked) in ["p0", "p1"].into_iter().enumerate() {
        let commits = vec![world.bot_commit(parked, 29)];
        let number = world.bot_pull(parked, true, commits, &["klaud-parked"]);
        world
            .session(parked, SessionState::Parked, old, Some(number))
            .started_at = Utc::now() - chrono::Duration::hours(30 - age as i64);
    }
    world.finished_planner(3, &["gone"]);
    world.bot_draft("gone");
    world
}

/// What the newest session of `candidate` is in `ledger`.
/// The candidates whose live session run `run` started, as the stored ledger says: what a select
/// pass reported claiming must be exactly this, or a write was lost.
fn live_sessions_started_by(ledger: &Ledger, run: u64) -> BTreeSet<String> {
    ledger
        .sessions
        .iter()
        .filter(|session| session.parent_run == run && session.state == SessionState::Live)
        .map(|session| session.candidate.clone())
        .collect()
}

fn newest(ledger: &Ledger, candidate: &str) -> Option<klaud::core::ledger::Session> {
    ledger
        .sessions
        .iter()
        .rev()
        .find(|session| session.candidate == candidate)
        .cloned()
}

/// What the passes of mixed trials did.
#[derive(Default)]
struct MixedTally {
    conflicts: usize,
    claimed: usize,
    reconciled: usize,
    resumed: usize,
    finished: usize,
    most_live: usize,
}

fn mixed_trial(number: u64, tally: &mut MixedTally) {
    use recover_support::Pass as StepPass;
    let mut world = mixed_world();
    let steps = mixed_steps(number);
    // Select and recover passes are planner runs; a finish pass runs in a candidate run.
    let runs: Vec<u64> = steps
        .iter()
        .enumerate()
        .map(|(index, step)| match step {
            Step::Finish(_) => 90_000 + 10 * number + index as u64,
            _ => world.running_planner(&[]),
        })
        .collect();
    let outcome = FINISH_OUTCOMES[(number % 3) as usize];
    let server = world.start();
    let before = server.state();
    server.set_faults(FaultConfig {
        seed: number,
        latency_ms: 5,
        latency_jitter_ms: 15,
        ..FaultConfig::default()
    });
    let passes: Vec<StepPass> = runs.iter().map(|run| StepPass::new(*run)).collect();
    let wanted: Vec<(String, String)> = WANTED
        .iter()
        .map(|id| (id.to_string(), recover_support::family(id)))
        .collect();
    let borrowed: Vec<(&str, &str)> = wanted
        .iter()
        .map(|(id, family)| (id.as_str(), family.as_str()))
        .collect();
    let candidates = candidates_json(&borrowed);
    let mut children: Vec<std::process::Child> = steps
        .iter()
        .zip(&passes)
        .map(|(step, pass)| {
            let mut command = match step {
                Step::Select => {
                    let path = pass.path("candidates.json");
                    std::fs::write(&path, &candidates).unwrap();
                    let mut command = pass.mode_command(&server, "select");
                    command.arg("--candidates").arg(path);
                    command
                }
                Step::Recover => pass.mode_command(&server, "recover"),
                Step::Finish(candidate) => {
                    let mut command = pass.mode_command(&server, "finish");
                    command.args([
                        "--candidate",
                        candidate,
                        "--outcome",
                        outcome,
                        "--cancel-wait",
                        "0",
                    ]);
                    command
                }
            };
            command
                .args(["--max-candidates", &MIXED_CAP.to_string()])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("klaud starts")
        })
        .collect();
    for (child, step) in children.iter_mut().zip(&steps) {
        let status = child.wait().unwrap();
        assert!(status.success(), "trial {number}: {step:?} exited {status}");
    }

    let after = server.state();
    assert_none(
        &format!("trial {number} {steps:?}"),
        &check(
            &Rules::new(recover_support::BOT, MIXED_CAP),
            &before,
            &after,
        ),
    );
    let ledger = recover_support::stored_ledger(&server);
    let context = format!("trial {number} {steps:?}");
    for ((step, pass), run) in steps.iter().zip(&passes).zip(&runs) {
        match step {
            Step::Select => {
                let reported: BTreeSet<String> = pass.ids("candidates").into_iter().collect();
                let stored = live_sessions_started_by(&ledger, *run);
                assert_eq!(
                    reported, stored,
                    "{context}: run {run}'s claims (lost write?)"
                );
                tally.claimed += reported.len();
                assert!(!reported.contains("a"), "{context}: a's family is occupied");
            }
            Step::Recover => {
                tally.reconciled += pass.ids("reconciled").len();
                tally.resumed += pass.ids("resumed").len();
                for candidate in pass.ids("reconciled") {
                    let session = newest(&ledger, &candidate).unwrap();
                    assert_eq!(
                        session.state,
                        SessionState::Finished,
                        "{context}: {candidate} reconciled by run {run} (lost write?)"
                    );
                }
                for candidate in pass.ids("resumed") {
                    let session = newest(&ledger, &candidate).unwrap();
                    assert_ne!(
                        session.state,
                        SessionState::Parked,
                        "{context}: {candidate} resumed by run {run} (lost write?)"
                    );
                }
            }
            Step::Finish(candidate) => {
                tally.finished += 1;
                let session = newest(&ledger, candidate).unwrap();
                assert_eq!(
                    session.state,
                    SessionState::Finished,
                    "{context}: {candidate}"
                );
                assert_eq!(
                    session.outcome.map(|outcome| outcome.name()),
                    Some(outcome),
                    "{context}: {candidate}'s outcome (lost write?)"
                );
            }
        }
    }
    let dispatches = after.dispatches;
    for parked in ["p0", "p1"] {
        let started = dispatches
            .iter()
            .filter(|dispatch| dispatch.inputs["candidate"] == parked)
            .count();
        assert!(started <= 1, "{context}: {parked} started {started} times");
    }
    assert_eq!(
        ledger.recovery_lease, None,
        "{context}: the lease is released"
    );
    tally.most_live = tally.most_live.max(ledger.live_sessions().count());
    tally.conflicts += conflicts(&server);
}

fn run_mixed_trials(trials: u64) {
    let started = Instant::now();
    let mut tally = MixedTally::default();
    for number in 0..trials {
        mixed_trial(number, &mut tally);
    }
    eprintln!(
        "{trials} trials of 4 concurrent select, recover and finish passes in {:.1} s: \
         {} claims, {} reconciled, {} resumed, {} finished, at most {} live (cap {MIXED_CAP}), \
         {} compare-and-swap conflicts resolved",
        started.elapsed().as_secs_f64(),
        tally.claimed,
        tally.reconciled,
        tally.resumed,
        tally.finished,
        tally.most_live,
        tally.conflicts
    );
    assert!(
        tally.conflicts > 0 && tally.claimed > 0 && tally.resumed > 0,
        "the passes never raced or never claimed and resumed: the test proves nothing"
    );
}

#[test]
fn four_concurrent_passes_of_mixed_modes_keep_the_cap_and_every_write() {
    run_mixed_trials(10);
}

#[test]
#[ignore = "100 trials; run with --ignored (.ci/run does)"]
fn a_hundred_trials_of_four_concurrent_passes_of_mixed_modes_keep_the_cap_and_every_write() {
    run_mixed_trials(100);
}
