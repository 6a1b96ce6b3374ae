//! The benchmark scenario's figures against `BENCH-SCENARIO.md`, and its determinism.

use crate::NOW;
use crate::fake_github::scenario;
use crate::fake_github::scenario_counts::ScenarioCounts;

#[test]
fn the_benchmark_scenario_has_the_documented_figures() {
    let generated = scenario::generate(7, NOW);
    let counts = ScenarioCounts::measure(&generated);
    let expected = ScenarioCounts {
        candidates: 60,
        families: 60,
        open_pull_requests: 120,
        open_bot_pull_requests: 20,
        open_bot_drafts: 18,
        open_bot_ready: 2,
        open_bot_handoff: 1,
        open_bot_with_maintainer_commit: 2,
        closed_pull_requests: 300,
        closed_bot_pull_requests: 60,
        closed_bot_pull_requests_closed_by_bot: 40,
        closed_bot_pull_requests_closed_by_maintainers: 20,
        legacy_lock_refs: 600,
        legacy_lock_refs_of_running_parents: 40,
        legacy_claim_refs: 30,
        leftover_candidate_branches: 25,
        planner_runs: 5000,
        cancelled_wakes: 50,
        smoke_runs: 2000,
        active_smoke_runs: 12,
        orphaned_smoke_runs: 3,
        sweep_runs: 400,
        active_sweep_runs: 2,
        runs_with_one_to_five_jobs: 7400,
        sessions_by_state: [("finished", 38), ("live", 8), ("parked", 4)]
            .into_iter()
            .map(|(state, count)| (state.to_string(), count))
            .collect(),
        finished_outcomes: [
            ("closed-by-maintainer", 4),
            ("inconclusive", 3),
            ("incompatible", 4),
            ("missing-assets", 6),
            ("no-capacity", 8),
            ("no-outcome", 3),
            ("validated", 10),
        ]
        .into_iter()
        .map(|(outcome, count)| (outcome.to_string(), count))
        .collect(),
    };
    assert_eq!(counts, expected);
    let now_ish = |session: &scenario::ScenarioSession| {
        session.finished_at.is_some_and(|at| at > NOW.minus(86_400))
    };
    assert!(
        generated.sessions.iter().any(now_ish),
        "some one-day cooldowns still run"
    );
    assert!(
        generated
            .sessions
            .iter()
            .any(|s| s.finished_at.is_some_and(|at| at < NOW.minus(7 * 86_400))),
        "some have expired"
    );
}

#[test]
fn the_benchmark_scenario_is_identical_for_the_same_seed() {
    let first = scenario::generate(11, NOW);
    let second = scenario::generate(11, NOW);
    let other = scenario::generate(12, NOW);
    let fingerprint = |generated: &scenario::BenchScenario| {
        (
            serde_json::to_string(&generated.state).unwrap(),
            serde_json::to_string(&generated.sessions).unwrap(),
        )
    };
    assert_eq!(fingerprint(&first), fingerprint(&second));
    assert_ne!(fingerprint(&first), fingerprint(&other));
    let mut with_ledger = first.clone();
    with_ledger.write_ledger("{\"version\":1}");
    assert_eq!(
        with_ledger
            .state
            .read_file(scenario::STATE_BRANCH, scenario::LEDGER_PATH)
            .as_deref(),
        Some("{\"version\":1}")
    );
}
