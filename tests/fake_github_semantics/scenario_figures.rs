//! The benchmark scenarios' figures against `BENCH-SCENARIO.md` (and the big one's against
//! `scenario_big.rs`), and the standard one's determinism.

use crate::NOW;
use crate::fake_github::scenario;
use crate::fake_github::scenario_counts::{BigScenarioCounts, ScenarioCounts};

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

/// klaud's part of a scenario: its sessions and candidates, its pull requests, its refs (under
/// `klaud/`) and the runs and jobs of its workflows, serialized.
fn klauds_part(generated: &scenario::BenchScenario) -> String {
    let state = &generated.state;
    let klaud_workflows: Vec<u64> = [
        scenario::PLANNER_WORKFLOW,
        scenario::CANDIDATE_WORKFLOW,
        scenario::SMOKE_WORKFLOW,
        scenario::SWEEP_WORKFLOW,
    ]
    .iter()
    .filter_map(|file| state.workflow_by_key(file).map(|workflow| workflow.id))
    .collect();
    let pulls: Vec<_> = state
        .pulls
        .values()
        .filter(|pull| pull.author == scenario::BOT)
        .collect();
    let refs: Vec<_> = state
        .refs
        .iter()
        .filter(|(name, _)| name.starts_with("refs/heads/klaud/"))
        .collect();
    let runs: Vec<_> = state
        .runs
        .values()
        .filter(|run| klaud_workflows.contains(&run.workflow_id))
        .map(|run| (run, state.jobs_of_run(run.id)))
        .collect();
    serde_json::to_string(&(
        &generated.sessions,
        &generated.candidates,
        &generated.abandoned_candidates,
        pulls,
        refs,
        runs,
    ))
    .unwrap()
}

/// The big scenario (`scenario_big.rs`) is the standard one, klaud's part identical, with the
/// people's pull requests and branches and the other workflows' runs it promises.
#[test]
fn the_big_scenario_is_the_standard_one_in_a_busy_repository() {
    let big = scenario::generate_big(7, NOW);
    let standard = scenario::generate(7, NOW);
    assert_eq!(
        klauds_part(&big),
        klauds_part(&standard),
        "klaud's part is identical"
    );
    let standard_counts = ScenarioCounts::measure(&standard);
    let big_standard_counts = ScenarioCounts::measure(&big);
    assert_eq!(
        big_standard_counts,
        ScenarioCounts {
            open_pull_requests: standard_counts.open_pull_requests + 10_000,
            closed_pull_requests: standard_counts.closed_pull_requests + 40_000,
            // The other workflows' 35 queued or running runs carry jobs.
            runs_with_one_to_five_jobs: standard_counts.runs_with_one_to_five_jobs + 35,
            ..standard_counts.clone()
        }
    );
    let counts = BigScenarioCounts::measure(&big);
    let standard_people_branches = BigScenarioCounts::measure(&standard).people_branches;
    assert_eq!(
        counts,
        BigScenarioCounts {
            people: 40,
            people_open_pull_requests: 100 + 10_000,
            people_open_from_this_repository: 100 + 1_500,
            people_open_from_forks: 8_500,
            people_open_drafts: 2_541,
            people_closed_pull_requests: 240 + 40_000,
            people_closed_merged: 24_131,
            fork_pull_requests_under_klaud_prefix: 8,
            open_fork_pull_requests_under_klaud_prefix: 6,
            fork_pull_requests_named_like_a_klaud_branch: 5,
            people_branches: standard_people_branches + 2_000,
            other_workflow_runs: [
                ("ci.yml", 45_000),
                ("codeql.yml", 14_970),
                ("docs.yml", 15_000),
                ("lint.yml", 25_000),
                ("nightly.yml", 30),
            ]
            .into_iter()
            .map(|(file, count)| (file.to_string(), count))
            .collect(),
            other_runs_queued: 5,
            other_runs_in_progress: 30,
            other_runs_with_jobs: 35,
        }
    );
}
