//! The health of klaud's open pull requests (contract §12, "Health"): what GitHub says of each
//! (draft or ready, head, mergeability, the checks on its exact head) read into one `health`
//! value and two flags, and how long its sweep still has to go (`queue.rs`). Read-only: the
//! report is shown by `status` and the dashboard and changes nothing.
//!
//! Every fact comes from one snapshot ([`HealthFacts`]): the pull requests with their checks as
//! one batched GraphQL read gives them, and the jobs of the active sweep runs klaud read. A
//! listing that may be incomplete stays a [`Listed`] with its gap: checks that could not all be
//! read make the health `unknown`, never `passing`.

mod queue;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use super::aftercare::AftercareView;
use super::github_state::{
    CheckConclusion, CheckStatus, MergeStateStatus, Mergeable, RunConclusion, RunStatus,
    StatusState,
};
use super::policy::HealthSettings;
use super::snapshot::Listed;
use super::wake::file_name;

pub use queue::{PoolView, QueueFacts, runs_to_read};

/// One check on a pull request's exact head, as GitHub's status check rollup gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// A check run (every GitHub Actions job is one).
    Run(CheckRun),
    /// A commit status (`POST /statuses/{sha}`), the latest of its context.
    Status(CommitStatus),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRun {
    pub name: String,
    /// The job's id, read from its link, for a GitHub Actions check.
    pub id: Option<u64>,
    pub status: CheckStatus,
    pub conclusion: Option<CheckConclusion>,
    pub url: Option<String>,
    /// The workflow run the check belongs to, for a GitHub Actions check.
    pub workflow_run: Option<CheckWorkflowRun>,
}

/// The workflow run of a check, with its check suite's status and conclusion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckWorkflowRun {
    pub id: u64,
    /// The workflow file (`.github/workflows/run-sweep.yml`).
    pub path: String,
    pub status: CheckStatus,
    pub conclusion: Option<CheckConclusion>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitStatus {
    pub context: String,
    pub state: StatusState,
    pub target_url: Option<String>,
}

/// What GitHub says of one open klaud pull request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestChecks {
    pub number: u64,
    pub candidate: String,
    pub created_at: DateTime<Utc>,
    pub draft: bool,
    pub head_sha: String,
    pub mergeable: Mergeable,
    pub merge_state: MergeStateStatus,
    /// The checks on the head; incomplete when a page of them could not be read.
    pub checks: Listed<Check>,
}

/// One job of a sweep run, as the jobs listing gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepJob {
    pub id: u64,
    pub run_id: u64,
    pub name: String,
    pub status: RunStatus,
    pub conclusion: Option<RunConclusion>,
    /// The `runs-on` labels of the job.
    pub labels: Vec<String>,
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
}

/// Everything the health report is decided from.
#[derive(Debug, Clone, Copy)]
pub struct HealthFacts<'a> {
    /// klaud's open pull requests with their checks.
    pub pulls: &'a Listed<PullRequestChecks>,
    /// The jobs of each active sweep run read in this pass (one page each), by run id.
    pub jobs: &'a BTreeMap<u64, Listed<SweepJob>>,
    /// `workflows.sweep`; none for a repository without a sweep workflow, whose pull requests
    /// are `passing` once nothing failed or is pending.
    pub sweep_workflow: Option<&'a str>,
}

/// A pull request's health: the first row of contract §12's table that applies. The order of
/// the variants is the order the dashboard shows them in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Health {
    /// A check failed and none is pending.
    Failing,
    /// Some checks failed and some are still pending.
    FailingRunning,
    /// The checks could not all be read: nothing is claimed.
    Unknown,
    /// No run of the sweep workflow on the head.
    NoSweep,
    /// Sweep runs on the head, none succeeded.
    SweepSkipped,
    /// Nothing failed, something is pending.
    Running,
    /// Nothing failed or pending, and a sweep run succeeded on the head.
    Passing,
}

impl Health {
    pub const ALL: [Health; 7] = [
        Health::Failing,
        Health::FailingRunning,
        Health::Unknown,
        Health::NoSweep,
        Health::SweepSkipped,
        Health::Running,
        Health::Passing,
    ];

    /// The spelling in `status.json`.
    pub fn name(self) -> &'static str {
        match self {
            Health::Failing => "failing",
            Health::FailingRunning => "failing-running",
            Health::Unknown => "unknown",
            Health::NoSweep => "no-sweep",
            Health::SweepSkipped => "sweep-skipped",
            Health::Running => "running",
            Health::Passing => "passing",
        }
    }

    /// Whether checks are still pending, so the pull request has an estimate.
    pub fn is_running(self) -> bool {
        matches!(self, Health::Running | Health::FailingRunning)
    }
}

/// A check that failed: a check run with its run and job, or a commit status with its target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct FailedCheck {
    pub name: String,
    pub run_id: Option<u64>,
    pub job_id: Option<u64>,
    pub url: Option<String>,
}

/// One open klaud pull request in `status.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct PullRequestHealth {
    pub number: u64,
    pub candidate: String,
    pub created_at: DateTime<Utc>,
    pub draft: bool,
    pub head_sha: String,
    pub health: Health,
    /// Why the health is unknown, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown_because: Option<String>,
    /// `mergeable: CONFLICTING`.
    pub conflicting: bool,
    /// `mergeStateStatus: BEHIND`.
    pub behind: bool,
    pub mergeable: Mergeable,
    pub merge_state: MergeStateStatus,
    /// The checks on the head per state (a check run's conclusion once completed, else its
    /// status; a commit status's state).
    pub checks: BTreeMap<String, usize>,
    /// Pending sweep jobs per runner pool, of the runs read.
    pub pending: BTreeMap<String, usize>,
    /// When its pending sweep jobs may be done, in whole minutes (an estimate); none when it
    /// is not running or waits on no sweep job klaud read.
    pub eta_minutes: Option<u64>,
    /// Some of its active sweep runs were not read: its pending jobs and estimate are a lower
    /// bound.
    pub eta_partial: bool,
    pub failed: Vec<FailedCheck>,
    /// Its after-care (contract §12): its state, the sessions it used and may have, and what
    /// klaud does next; null when it is not in after-care.
    // Health reads only GitHub: `status` fills this from the ledger (`attach_aftercare`).
    pub aftercare: Option<AftercareView>,
}

/// The health part of `status.json` and of the dashboard. When klaud's open pull requests could
/// not all be listed (the status report says why), those read are shown and every estimate is
/// partial.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct HealthReport {
    /// Running pull requests with few pending sweep jobs, soonest estimate first.
    pub almost_ready: Vec<u64>,
    /// Every open klaud pull request, by health (in [`Health`]'s order), newest first in each.
    pub pull_requests: Vec<PullRequestHealth>,
    /// The runner pools klaud's pending sweep jobs wait on.
    pub pools: Vec<PoolView>,
    /// Active sweep runs on the heads of klaud's pull requests, and how many of them were read.
    pub sweep_runs_active: usize,
    pub sweep_runs_read: usize,
}

/// The report for `facts` under `settings`.
pub fn health_report(facts: HealthFacts<'_>, settings: &HealthSettings) -> HealthReport {
    let pulls = &facts.pulls.items;
    let queue = queue::QueueFacts::read(pulls, facts.jobs, facts.sweep_workflow, settings);
    let mut rows: Vec<PullRequestHealth> = pulls
        .iter()
        .map(|pull| pull_request_health(pull, facts.sweep_workflow, &queue))
        .collect();
    if facts.pulls.gap.is_some() {
        // Pull requests not listed may wait on the same pools: every estimate is a lower bound.
        rows.iter_mut()
            .filter(|row| row.health.is_running())
            .for_each(|row| row.eta_partial = true);
    }
    rows.sort_by(|a, b| {
        a.health
            .cmp(&b.health)
            .then(b.created_at.cmp(&a.created_at))
            .then(b.number.cmp(&a.number))
    });
    HealthReport {
        almost_ready: queue.almost_ready(&rows, settings),
        pools: queue.pools(),
        sweep_runs_active: queue.active_runs(),
        sweep_runs_read: queue.runs_read(),
        pull_requests: rows,
    }
}

fn pull_request_health(
    pull: &PullRequestChecks,
    sweep_workflow: Option<&str>,
    queue: &queue::QueueFacts,
) -> PullRequestHealth {
    let checks = &pull.checks.items;
    let health = match &pull.checks.gap {
        Some(_) => Health::Unknown,
        None => health_of(checks, sweep_workflow),
    };
    let estimate = queue.estimate(pull.number, health);
    PullRequestHealth {
        number: pull.number,
        candidate: pull.candidate.clone(),
        created_at: pull.created_at,
        draft: pull.draft,
        head_sha: pull.head_sha.clone(),
        health,
        unknown_because: pull.checks.gap.clone(),
        conflicting: pull.mergeable == Mergeable::Conflicting,
        behind: pull.mergeable != Mergeable::Unknown
            && pull.merge_state == MergeStateStatus::Behind,
        mergeable: pull.mergeable.clone(),
        merge_state: pull.merge_state.clone(),
        checks: check_counts(checks),
        pending: estimate.pending,
        eta_minutes: estimate.minutes,
        eta_partial: estimate.partial,
        failed: checks.iter().filter_map(failed_check).collect(),
        aftercare: None,
    }
}

/// The first row of the health table that applies to `checks` (read whole). Without a sweep
/// workflow, the rows about sweeps do not apply.
pub fn health_of(checks: &[Check], sweep_workflow: Option<&str>) -> Health {
    let failed = checks.iter().any(|check| failed_check(check).is_some());
    let pending = checks.iter().any(is_pending);
    let Some(sweep_workflow) = sweep_workflow else {
        return match (failed, pending) {
            (true, false) => Health::Failing,
            (true, true) => Health::FailingRunning,
            (false, true) => Health::Running,
            (false, false) => Health::Passing,
        };
    };
    let sweep_runs: Vec<(u64, bool)> = sweep_runs_on_head(checks, sweep_workflow);
    match (failed, pending) {
        (true, false) => Health::Failing,
        (true, true) => Health::FailingRunning,
        (false, true) => Health::Running,
        (false, false) if sweep_runs.is_empty() => Health::NoSweep,
        (false, false) if !sweep_runs.iter().any(|(_, succeeded)| *succeeded) => {
            Health::SweepSkipped
        }
        (false, false) => Health::Passing,
    }
}

/// Whether a workflow path is the sweep workflow's (compared by file name).
pub fn is_sweep(path: &str, sweep_workflow: &str) -> bool {
    file_name(path) == file_name(sweep_workflow)
}

/// The sweep runs among the checks' workflow runs, each once, and whether it succeeded: its
/// check suite concluded `SUCCESS` and one of its jobs did (a run whose every job was skipped
/// swept nothing).
pub fn sweep_runs_on_head(checks: &[Check], sweep_workflow: &str) -> Vec<(u64, bool)> {
    let mut runs: BTreeMap<u64, bool> = BTreeMap::new();
    for check in checks {
        let Check::Run(run) = check else { continue };
        let Some(workflow_run) = run
            .workflow_run
            .as_ref()
            .filter(|workflow_run| is_sweep(&workflow_run.path, sweep_workflow))
        else {
            continue;
        };
        let suite_succeeded = workflow_run
            .conclusion
            .as_ref()
            .is_some_and(CheckConclusion::is_success);
        let job_succeeded = run
            .conclusion
            .as_ref()
            .is_some_and(CheckConclusion::is_success);
        *runs.entry(workflow_run.id).or_default() |= suite_succeeded && job_succeeded;
    }
    runs.into_iter().collect()
}

fn is_pending(check: &Check) -> bool {
    match check {
        Check::Run(run) => !run.status.is_completed(),
        Check::Status(status) => status.state.is_pending(),
    }
}

/// The check as a failed one, when it failed.
pub fn failed_check(check: &Check) -> Option<FailedCheck> {
    match check {
        Check::Run(run) => {
            let failed = run.status.is_completed()
                && run
                    .conclusion
                    .as_ref()
                    .is_some_and(CheckConclusion::is_failure);
            failed.then(|| FailedCheck {
                name: run.name.clone(),
                run_id: run
                    .workflow_run
                    .as_ref()
                    .map(|workflow_run| workflow_run.id),
                job_id: run.workflow_run.as_ref().and(run.id),
                url: run.url.clone(),
            })
        }
        Check::Status(status) => status.state.is_failure().then(|| FailedCheck {
            name: status.context.clone(),
            run_id: None,
            job_id: None,
            url: status.target_url.clone(),
        }),
    }
}

/// The word a check is counted under.
fn check_state(check: &Check) -> String {
    match check {
        Check::Run(run) => match (&run.conclusion, run.status.is_completed()) {
            (Some(conclusion), true) => conclusion.as_str().to_string(),
            _ => run.status.as_str().to_string(),
        },
        Check::Status(status) => status.state.as_str().to_string(),
    }
}

fn check_counts(checks: &[Check]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for check in checks {
        *counts.entry(check_state(check)).or_default() += 1;
    }
    counts
}
