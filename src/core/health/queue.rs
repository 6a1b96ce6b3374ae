//! Queue and estimate (contract §12): the pending jobs of the active sweep runs on the heads of
//! klaud's pull requests, grouped by runner pool, and from them when each running pull request's
//! sweep may be done.
//!
//! A job's pool is the first of its `runs-on` labels that `health.pools` names, else `other`. A
//! pool's job minutes are the median duration of its jobs that completed with `success` or
//! `failure` in the runs read (the mean of the two middle ones for an even count), else
//! `health.job-minutes`. A running pull request's estimate is the largest, over the pools it
//! waits on, of ceil(pending jobs of the pool across klaud's pull requests ÷ its runners) × the
//! pool's job minutes, rounded up to whole minutes. A job in progress counts whole, as the
//! pessimistic estimate. Runs past `health.max-run-reads`, a listing that failed and a run
//! with more jobs than one page make the estimates that depend on them partial.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::{Check, Health, PullRequestChecks, PullRequestHealth, SweepJob, is_sweep};
use crate::core::github_state::RunConclusion;
use crate::core::policy::HealthSettings;
use crate::core::snapshot::Listed;

/// The pool of a job no configured pool names.
pub const OTHER_POOL: &str = "other";

/// One runner pool klaud's pending sweep jobs wait on, in `status.json`.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct PoolView {
    pub pool: String,
    pub runners: u32,
    /// Pending jobs across klaud's pull requests (of the runs read).
    pub pending: usize,
    /// Minutes one job takes: measured, else the configured figure.
    pub job_minutes: f64,
    /// Completed jobs the minutes were measured on (0: the configured figure).
    pub measured_jobs: usize,
}

/// What the estimates of one pass are made from.
#[derive(Debug)]
pub struct QueueFacts {
    settings: HealthSettings,
    /// Every active sweep run with the pull request it runs for.
    active: Vec<(u64, u64)>,
    /// Runs whose jobs were read whole.
    read_whole: BTreeSet<u64>,
    pool_pending: BTreeMap<String, usize>,
    /// Durations in minutes of the completed jobs, by pool.
    durations: BTreeMap<String, Vec<f64>>,
    pull_pending: BTreeMap<u64, BTreeMap<String, usize>>,
}

/// A pull request's pending jobs and estimate.
#[derive(Debug, Default)]
pub struct Estimate {
    pub pending: BTreeMap<String, usize>,
    pub minutes: Option<u64>,
    pub partial: bool,
}

/// The active sweep runs on the heads of `pulls` with the pull request each runs for: oldest
/// pull request first, then by run id, each run once.
fn active_sweep_runs(pulls: &[PullRequestChecks], sweep_workflow: Option<&str>) -> Vec<(u64, u64)> {
    let Some(sweep_workflow) = sweep_workflow else {
        return Vec::new();
    };
    let mut pulls: Vec<&PullRequestChecks> = pulls.iter().collect();
    pulls.sort_by_key(|pull| (pull.created_at, pull.number));
    let mut seen = BTreeSet::new();
    let mut active = Vec::new();
    for pull in pulls {
        let mut runs: Vec<u64> = pull
            .checks
            .items
            .iter()
            .filter_map(|check| match check {
                Check::Run(run) => run.workflow_run.as_ref(),
                Check::Status(_) => None,
            })
            .filter(|run| is_sweep(&run.path, sweep_workflow) && !run.status.is_completed())
            .map(|run| run.id)
            .collect();
        runs.sort_unstable();
        for run in runs {
            if seen.insert(run) {
                active.push((run, pull.number));
            }
        }
    }
    active
}

/// The active sweep runs whose jobs a pass reads: the first `health.max-run-reads` of them,
/// the oldest pull request's first.
pub fn runs_to_read(
    pulls: &[PullRequestChecks],
    sweep_workflow: Option<&str>,
    settings: &HealthSettings,
) -> Vec<u64> {
    active_sweep_runs(pulls, sweep_workflow)
        .into_iter()
        .map(|(run, _)| run)
        .take(settings.max_run_reads as usize)
        .collect()
}

impl QueueFacts {
    pub fn read(
        pulls: &[PullRequestChecks],
        jobs: &BTreeMap<u64, Listed<SweepJob>>,
        sweep_workflow: Option<&str>,
        settings: &HealthSettings,
    ) -> QueueFacts {
        let mut facts = QueueFacts {
            settings: settings.clone(),
            active: active_sweep_runs(pulls, sweep_workflow),
            read_whole: BTreeSet::new(),
            pool_pending: BTreeMap::new(),
            durations: BTreeMap::new(),
            pull_pending: BTreeMap::new(),
        };
        for (run, pull) in facts.active.clone() {
            let Some(listing) = jobs.get(&run) else {
                continue;
            };
            if listing.is_complete() {
                facts.read_whole.insert(run);
            }
            for job in &listing.items {
                facts.count(pull, job);
            }
        }
        facts
    }

    fn count(&mut self, pull: u64, job: &SweepJob) {
        let pool = self.pool_of(job);
        if !job.status.is_completed() {
            *self.pool_pending.entry(pool.clone()).or_default() += 1;
            *self
                .pull_pending
                .entry(pull)
                .or_default()
                .entry(pool)
                .or_default() += 1;
            return;
        }
        let measured = matches!(
            job.conclusion,
            Some(RunConclusion::Success | RunConclusion::Failure)
        );
        if let (true, Some(started), Some(completed)) = (measured, job.started_at, job.completed_at)
            && completed >= started
        {
            let minutes = (completed - started).num_milliseconds() as f64 / 60_000.0;
            self.durations.entry(pool).or_default().push(minutes);
        }
    }

    /// The first of the job's labels that names a configured pool, else `other`.
    fn pool_of(&self, job: &SweepJob) -> String {
        job.labels
            .iter()
            .find(|label| self.settings.pools.contains_key(label.as_str()))
            .cloned()
            .unwrap_or_else(|| OTHER_POOL.to_string())
    }

    fn runners(&self, pool: &str) -> u32 {
        self.settings
            .pools
            .get(pool)
            .copied()
            .unwrap_or(self.settings.default_runners)
            .max(1)
    }

    /// The pool's job minutes and how many completed jobs they were measured on.
    fn job_minutes(&self, pool: &str) -> (f64, usize) {
        match self.durations.get(pool) {
            Some(durations) if !durations.is_empty() => (median(durations), durations.len()),
            _ => (self.settings.job_minutes, 0),
        }
    }

    pub fn active_runs(&self) -> usize {
        self.active.len()
    }

    pub fn runs_read(&self) -> usize {
        self.read_whole.len()
    }

    /// The pending jobs and estimate of pull request `number` of health `health`.
    pub fn estimate(&self, number: u64, health: Health) -> Estimate {
        let pending = self.pull_pending.get(&number).cloned().unwrap_or_default();
        let partial = self
            .active
            .iter()
            .any(|(run, pull)| *pull == number && !self.read_whole.contains(run));
        let minutes = health
            .is_running()
            .then(|| {
                pending
                    .keys()
                    .map(|pool| {
                        let queued = self.pool_pending.get(pool).copied().unwrap_or(0);
                        let waves = queued.div_ceil(self.runners(pool) as usize);
                        waves as f64 * self.job_minutes(pool).0
                    })
                    .fold(None, |longest: Option<f64>, minutes| {
                        Some(longest.map_or(minutes, |longest| longest.max(minutes)))
                    })
            })
            .flatten()
            .map(|minutes| minutes.ceil() as u64);
        Estimate {
            pending,
            minutes,
            partial,
        }
    }

    /// The running pull requests with at most `health.almost-ready-jobs` pending sweep jobs
    /// (all of their runs read), soonest estimate first; none known last; then newest first.
    pub fn almost_ready(&self, rows: &[PullRequestHealth], settings: &HealthSettings) -> Vec<u64> {
        let mut ready: Vec<&PullRequestHealth> = rows
            .iter()
            .filter(|row| row.health == Health::Running && !row.eta_partial)
            .filter(|row| {
                row.pending.values().sum::<usize>() <= settings.almost_ready_jobs as usize
            })
            .collect();
        ready.sort_by(|a, b| {
            let soonest = |row: &PullRequestHealth| row.eta_minutes.unwrap_or(u64::MAX);
            soonest(a)
                .cmp(&soonest(b))
                .then(b.created_at.cmp(&a.created_at))
                .then(b.number.cmp(&a.number))
        });
        ready.into_iter().map(|row| row.number).collect()
    }

    /// The pools with pending jobs, busiest first.
    pub fn pools(&self) -> Vec<PoolView> {
        let mut pools: Vec<PoolView> = self
            .pool_pending
            .iter()
            .map(|(pool, pending)| {
                let (job_minutes, measured_jobs) = self.job_minutes(pool);
                PoolView {
                    pool: pool.clone(),
                    runners: self.runners(pool),
                    pending: *pending,
                    job_minutes,
                    measured_jobs,
                }
            })
            .collect();
        pools.sort_by(|a, b| b.pending.cmp(&a.pending).then(a.pool.cmp(&b.pool)));
        pools
    }
}

/// The median of `values` (not empty): the middle one, or the mean of the two middle ones.
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    match sorted.len() % 2 {
        1 => sorted[middle],
        _ => (sorted[middle - 1] + sorted[middle]) / 2.0,
    }
}
