//! The benchmark scenarios' figures, measured from a generated state rather than taken from the
//! generator's plan, so a test can hold them against `BENCH-SCENARIO.md`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::scenario::{
    BOT, BRANCH_PREFIX, BenchScenario, MAINTAINERS, PLANNER_WORKFLOW, SMOKE_WORKFLOW,
    SWEEP_WORKFLOW,
};
use super::state::{PullState, WorkflowRun};

/// The scenario's figures, measured from the generated state (not from the generator's plan).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ScenarioCounts {
    pub candidates: usize,
    pub families: usize,
    pub open_pull_requests: usize,
    pub open_bot_pull_requests: usize,
    pub open_bot_drafts: usize,
    pub open_bot_ready: usize,
    pub open_bot_handoff: usize,
    pub open_bot_with_maintainer_commit: usize,
    pub closed_pull_requests: usize,
    pub closed_bot_pull_requests: usize,
    pub closed_bot_pull_requests_closed_by_bot: usize,
    pub closed_bot_pull_requests_closed_by_maintainers: usize,
    pub legacy_lock_refs: usize,
    pub legacy_lock_refs_of_running_parents: usize,
    pub legacy_claim_refs: usize,
    pub leftover_candidate_branches: usize,
    pub planner_runs: usize,
    pub cancelled_wakes: usize,
    pub smoke_runs: usize,
    pub active_smoke_runs: usize,
    pub orphaned_smoke_runs: usize,
    pub sweep_runs: usize,
    pub active_sweep_runs: usize,
    pub runs_with_one_to_five_jobs: usize,
    pub sessions_by_state: BTreeMap<String, usize>,
    pub finished_outcomes: BTreeMap<String, usize>,
}

impl ScenarioCounts {
    pub fn measure(scenario: &BenchScenario) -> Self {
        let state = &scenario.state;
        let open: Vec<_> = state
            .pulls
            .values()
            .filter(|pull| pull.state == PullState::Open)
            .collect();
        let open_bot: Vec<_> = open.iter().filter(|pull| pull.author == BOT).collect();
        let closed_bot: Vec<_> = state
            .pulls
            .values()
            .filter(|pull| pull.state == PullState::Closed && pull.author == BOT)
            .collect();
        let branches: Vec<&str> = state
            .refs
            .keys()
            .filter_map(|name| name.strip_prefix("refs/heads/"))
            .collect();
        let running: BTreeSet<u64> = state
            .runs
            .values()
            .filter(|run| run.status != "completed")
            .map(|run| run.id)
            .collect();
        let full_name = state.full_name();
        // A fork's pull request may carry the name of a branch of this repository.
        let open_heads: BTreeSet<&str> = open
            .iter()
            .filter(|pull| pull.head_repo.as_deref() == Some(full_name.as_str()))
            .map(|pull| pull.head_ref.as_str())
            .collect();
        let workflow_runs = |file: &str| -> Vec<&WorkflowRun> {
            let id = state.workflow_by_key(file).map(|workflow| workflow.id);
            state
                .runs
                .values()
                .filter(|run| Some(run.workflow_id) == id)
                .collect()
        };
        let smoke = workflow_runs(SMOKE_WORKFLOW);
        let sweep = workflow_runs(SWEEP_WORKFLOW);
        let planner = workflow_runs(PLANNER_WORKFLOW);
        let abandoned_branches: BTreeSet<String> = scenario
            .abandoned_candidates
            .iter()
            .map(|id| format!("{BRANCH_PREFIX}{id}"))
            .collect();
        let mut counts = ScenarioCounts {
            candidates: scenario.candidates.len(),
            families: scenario
                .candidates
                .iter()
                .map(|c| &c.family)
                .collect::<BTreeSet<_>>()
                .len(),
            open_pull_requests: open.len(),
            open_bot_pull_requests: open_bot.len(),
            open_bot_drafts: open_bot.iter().filter(|pull| pull.draft).count(),
            open_bot_ready: open_bot.iter().filter(|pull| !pull.draft).count(),
            open_bot_handoff: open_bot
                .iter()
                .filter(|pull| pull.labels.iter().any(|l| l == "klaud-handoff"))
                .count(),
            open_bot_with_maintainer_commit: open_bot
                .iter()
                .filter(|pull| {
                    let base = state.branch_sha(&pull.base_ref);
                    state
                        .commits_between(base, &pull.head_sha)
                        .0
                        .iter()
                        .any(|commit| {
                            commit.author_login.as_deref() != Some(BOT)
                                || commit.committer_login.as_deref() != Some(BOT)
                        })
                })
                .count(),
            closed_pull_requests: state.pulls.len() - open.len(),
            closed_bot_pull_requests: closed_bot.len(),
            closed_bot_pull_requests_closed_by_bot: closed_bot
                .iter()
                .filter(|pull| pull.closed_by.as_deref() == Some(BOT))
                .count(),
            closed_bot_pull_requests_closed_by_maintainers: closed_bot
                .iter()
                .filter(|pull| {
                    pull.closed_by
                        .as_deref()
                        .is_some_and(|login| MAINTAINERS.contains(&login))
                })
                .count(),
            legacy_lock_refs: branches
                .iter()
                .filter(|name| name.starts_with("klaud/recovery-"))
                .count(),
            legacy_lock_refs_of_running_parents: branches
                .iter()
                .filter_map(|name| name.strip_prefix("klaud/recovery-"))
                .filter_map(|rest| rest.split('-').next()?.parse::<u64>().ok())
                .filter(|parent| running.contains(parent))
                .count(),
            legacy_claim_refs: branches
                .iter()
                .filter(|name| name.starts_with("klaud/claim-"))
                .count(),
            leftover_candidate_branches: branches
                .iter()
                .filter(|name| name.starts_with(BRANCH_PREFIX) && !open_heads.contains(*name))
                .count(),
            planner_runs: planner.len(),
            cancelled_wakes: planner
                .iter()
                .filter(|run| {
                    run.event == "workflow_dispatch"
                        && run.conclusion.as_deref() == Some("cancelled")
                })
                .count(),
            smoke_runs: smoke.len(),
            active_smoke_runs: smoke.iter().filter(|run| run.status != "completed").count(),
            orphaned_smoke_runs: smoke
                .iter()
                .filter(|run| run.status != "completed")
                .filter(|run| {
                    run.head_branch
                        .as_ref()
                        .is_some_and(|branch| abandoned_branches.contains(branch))
                })
                .count(),
            sweep_runs: sweep.len(),
            active_sweep_runs: sweep.iter().filter(|run| run.status != "completed").count(),
            runs_with_one_to_five_jobs: state
                .runs
                .keys()
                .filter(|id| (1..=5).contains(&state.jobs_of_run(**id).len()))
                .count(),
            ..ScenarioCounts::default()
        };
        for session in &scenario.sessions {
            let key = serde_json::to_value(session.state)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            *counts.sessions_by_state.entry(key).or_default() += 1;
            if let Some(outcome) = &session.outcome {
                *counts.finished_outcomes.entry(outcome.clone()).or_default() += 1;
            }
        }
        counts
    }
}

/// The big scenario's figures beyond the standard one's, measured from a generated state: the
/// people's pull requests and branches and the other workflows' runs (`scenario_big.rs`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BigScenarioCounts {
    pub people: usize,
    pub people_open_pull_requests: usize,
    pub people_open_from_this_repository: usize,
    pub people_open_from_forks: usize,
    pub people_open_drafts: usize,
    pub people_closed_pull_requests: usize,
    pub people_closed_merged: usize,
    /// Forks' pull requests whose head branch starts with klaud's prefix, and the open ones.
    pub fork_pull_requests_under_klaud_prefix: usize,
    pub open_fork_pull_requests_under_klaud_prefix: usize,
    /// Of those, the ones whose head branch is also a branch of this repository.
    pub fork_pull_requests_named_like_a_klaud_branch: usize,
    /// Branches that are neither the default branch nor under `klaud/`.
    pub people_branches: usize,
    /// Runs of workflows other than klaud's planner, candidate, smoke and sweep workflows.
    pub other_workflow_runs: BTreeMap<String, usize>,
    pub other_runs_queued: usize,
    pub other_runs_in_progress: usize,
    pub other_runs_with_jobs: usize,
}

impl BigScenarioCounts {
    pub fn measure(scenario: &BenchScenario) -> Self {
        let state = &scenario.state;
        let full_name = state.full_name();
        let people: Vec<_> = state
            .pulls
            .values()
            .filter(|pull| pull.author != BOT)
            .collect();
        let open: Vec<_> = people
            .iter()
            .filter(|pull| pull.state == PullState::Open)
            .collect();
        let from_fork =
            |pull: &&&super::state::PullRequest| pull.head_repo.as_deref() != Some(&full_name);
        let under_prefix: Vec<_> = people
            .iter()
            .filter(|pull| from_fork(pull) && pull.head_ref.starts_with(BRANCH_PREFIX))
            .collect();
        let klaud_workflows: BTreeSet<u64> = [
            PLANNER_WORKFLOW,
            SMOKE_WORKFLOW,
            SWEEP_WORKFLOW,
            super::scenario::CANDIDATE_WORKFLOW,
        ]
        .iter()
        .filter_map(|file| state.workflow_by_key(file).map(|workflow| workflow.id))
        .collect();
        let other_runs: Vec<&WorkflowRun> = state
            .runs
            .values()
            .filter(|run| !klaud_workflows.contains(&run.workflow_id))
            .collect();
        let mut other_workflow_runs = BTreeMap::new();
        for run in &other_runs {
            let file = state.workflows[&run.workflow_id].file_name().to_string();
            *other_workflow_runs.entry(file).or_default() += 1;
        }
        BigScenarioCounts {
            people: people
                .iter()
                .map(|pull| pull.author.as_str())
                .collect::<BTreeSet<_>>()
                .len(),
            people_open_pull_requests: open.len(),
            people_open_from_this_repository: open.iter().filter(|pull| !from_fork(pull)).count(),
            people_open_from_forks: open.iter().filter(|pull| from_fork(pull)).count(),
            people_open_drafts: open.iter().filter(|pull| pull.draft).count(),
            people_closed_pull_requests: people.len() - open.len(),
            people_closed_merged: people
                .iter()
                .filter(|pull| pull.merged_at.is_some())
                .count(),
            fork_pull_requests_under_klaud_prefix: under_prefix.len(),
            open_fork_pull_requests_under_klaud_prefix: under_prefix
                .iter()
                .filter(|pull| pull.state == PullState::Open)
                .count(),
            fork_pull_requests_named_like_a_klaud_branch: under_prefix
                .iter()
                .filter(|pull| state.branch_sha(&pull.head_ref).is_some())
                .count(),
            people_branches: state
                .refs
                .keys()
                .filter_map(|name| name.strip_prefix("refs/heads/"))
                .filter(|name| *name != state.default_branch && !name.starts_with("klaud/"))
                .count(),
            other_workflow_runs,
            other_runs_queued: other_runs
                .iter()
                .filter(|run| run.status == "queued")
                .count(),
            other_runs_in_progress: other_runs
                .iter()
                .filter(|run| run.status == "in_progress")
                .count(),
            other_runs_with_jobs: other_runs
                .iter()
                .filter(|run| !state.jobs_of_run(run.id).is_empty())
                .count(),
        }
    }
}
