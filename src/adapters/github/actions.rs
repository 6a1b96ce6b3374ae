//! GitHub Actions: workflow run listings that are complete or say they are not, jobs, cancels
//! and dispatches.
//!
//! GitHub answers at most 1000 results for a filtered run listing (actor, branch, created,
//! event, head_sha, status) while `total_count` keeps the true number. Such a listing is split
//! into `created` windows until every window is under the cap; when a window of one second is
//! still over it, the listing is incomplete (a [`Listed`] with its gap), never silently shorter.

use std::collections::BTreeMap;
use std::collections::HashSet;

use chrono::{DateTime, Duration, SecondsFormat, TimeZone, Utc};
use http::Method;
use serde_json::json;

use super::error::GitHubError;
use super::models::{Job, WorkflowRun, WorkflowRunPage};
use super::pagination::{next_link, with_per_page};
use super::pulls::encode;
use super::transport::ApiRequest;
use super::{GitHubClient, decode};
use crate::core::github_state::RunStatus;
use crate::core::snapshot::Listed;

/// The most results GitHub lets a filtered run listing reach.
pub const FILTERED_LISTING_CAP: u64 = 1_000;

/// Which runs to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// Workflow file name (e.g. `e2e-tests.yml`); `None` lists every workflow's runs.
    pub workflow: Option<String>,
    pub actor: Option<String>,
    pub branch: Option<String>,
    pub event: Option<String>,
    /// Runs of this status only.
    pub status: Option<RunStatus>,
    pub head_sha: Option<String>,
    /// Inclusive `created` window.
    pub created: Option<(DateTime<Utc>, DateTime<Utc>)>,
}

impl RunFilter {
    pub fn workflow(file: &str) -> Self {
        RunFilter {
            workflow: Some(file.to_string()),
            ..RunFilter::default()
        }
    }

    /// True when GitHub caps the listing at 1000 results.
    pub fn is_capped(&self) -> bool {
        self.actor.is_some()
            || self.branch.is_some()
            || self.event.is_some()
            || self.status.is_some()
            || self.head_sha.is_some()
            || self.created.is_some()
    }

    fn path(&self, repo_path: &str) -> String {
        let mut path = match &self.workflow {
            Some(file) => format!("{repo_path}/actions/workflows/{}/runs", encode(file)),
            None => format!("{repo_path}/actions/runs"),
        };
        let mut parameters = Vec::new();
        for (name, value) in [
            ("actor", self.actor.as_deref()),
            ("branch", self.branch.as_deref()),
            ("event", self.event.as_deref()),
            ("status", self.status.as_ref().map(RunStatus::as_str)),
            ("head_sha", self.head_sha.as_deref()),
        ] {
            if let Some(value) = value {
                parameters.push(format!("{name}={}", encode(value)));
            }
        }
        if let Some((start, end)) = self.created {
            parameters.push(format!(
                "created={}..{}",
                encode(&start.to_rfc3339_opts(SecondsFormat::Secs, true)),
                encode(&end.to_rfc3339_opts(SecondsFormat::Secs, true))
            ));
        }
        if !parameters.is_empty() {
            path.push('?');
            path.push_str(&parameters.join("&"));
        }
        with_per_page(&path)
    }
}

/// What cancelling a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunCancel {
    Requested,
    /// The run had already completed (GitHub answers 409).
    AlreadyCompleted,
}

/// One window's listing: complete, or over the cap with its true size.
enum WindowListing {
    Listed { runs: Vec<WorkflowRun>, total: u64 },
    OverCap { total: u64 },
}

impl GitHubClient {
    /// Every run matching `filter`, or the runs listed with why the others are missing.
    pub async fn workflow_runs(
        &self,
        filter: &RunFilter,
    ) -> Result<Listed<WorkflowRun>, GitHubError> {
        let mut windows = vec![filter.clone()];
        let mut runs: Vec<WorkflowRun> = Vec::new();
        let mut seen = HashSet::new();
        let mut shortfall: Option<String> = None;
        while let Some(window) = windows.pop() {
            match self.list_run_window(&window).await? {
                WindowListing::Listed {
                    runs: listed,
                    total,
                } => {
                    let count = listed.len() as u64;
                    if count < total && shortfall.is_none() {
                        shortfall = Some(format!(
                            "GitHub listed {count} of {total} runs of {}",
                            describe(&window)
                        ));
                    }
                    for run in listed {
                        if seen.insert(run.id) {
                            runs.push(run);
                        }
                    }
                }
                WindowListing::OverCap { total } => {
                    let (start, end) = window.created.unwrap_or_else(full_history);
                    if end <= start {
                        shortfall = Some(format!(
                            "{total} runs of {} were created in the same second; GitHub lists at most {FILTERED_LISTING_CAP}",
                            describe(&window)
                        ));
                        continue;
                    }
                    for part in split_window(start, end, total) {
                        windows.push(RunFilter {
                            created: Some(part),
                            ..window.clone()
                        });
                    }
                }
            }
        }
        runs.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        Ok(Listed {
            items: runs,
            gap: shortfall,
        })
    }

    async fn list_run_window(&self, filter: &RunFilter) -> Result<WindowListing, GitHubError> {
        let mut path = filter.path(&self.repo_path(""));
        let mut runs = Vec::new();
        let mut total = None;
        loop {
            let response = self.send(ApiRequest::get(&path)).await?;
            let page: WorkflowRunPage = decode(&response, "GET", &path)?;
            let page_total = *total.get_or_insert(page.total_count);
            if filter.is_capped() && page_total > FILTERED_LISTING_CAP {
                return Ok(WindowListing::OverCap { total: page_total });
            }
            runs.extend(page.workflow_runs);
            match next_link(&response.headers) {
                Some(next) => path = self.relative_to_api(&next, &path)?,
                None => {
                    return Ok(WindowListing::Listed {
                        runs,
                        total: page_total,
                    });
                }
            }
        }
    }

    pub async fn workflow_run(&self, run_id: u64) -> Result<WorkflowRun, GitHubError> {
        self.get_json(&self.repo_path(&format!("/actions/runs/{run_id}")))
            .await
    }

    /// The jobs of a run's latest attempt.
    pub async fn run_jobs(&self, run_id: u64) -> Result<Vec<Job>, GitHubError> {
        let (jobs, _) = self
            .list_envelope(
                &self.repo_path(&format!("/actions/runs/{run_id}/jobs")),
                "jobs",
            )
            .await?;
        Ok(jobs)
    }

    /// Asks GitHub to cancel a run. When the request's outcome is unknown, the run is read
    /// again before the request is repeated.
    pub async fn cancel_run(&self, run_id: u64) -> Result<RunCancel, GitHubError> {
        let path = self.repo_path(&format!("/actions/runs/{run_id}/cancel"));
        let request = ApiRequest::write(Method::POST, &path, None);
        match self.send_write(request.clone()).await {
            Ok(_) => Ok(RunCancel::Requested),
            Err(error) if error.status() == Some(409) => Ok(RunCancel::AlreadyCompleted),
            Err(GitHubError::OutcomeUnknown { .. }) => {
                let run = self.workflow_run(run_id).await?;
                if !run.is_active() {
                    return Ok(RunCancel::AlreadyCompleted);
                }
                match self.send_write(request).await {
                    Ok(_) => Ok(RunCancel::Requested),
                    Err(error) if error.status() == Some(409) => Ok(RunCancel::AlreadyCompleted),
                    Err(error) => Err(error),
                }
            }
            Err(error) => Err(error),
        }
    }

    /// Dispatches `workflow` on `git_ref` with `inputs`. When the request's outcome is unknown,
    /// the dispatch runs by `actor` created since `since` are listed before it is repeated.
    pub async fn dispatch_workflow_once(
        &self,
        workflow: &str,
        git_ref: &str,
        inputs: &BTreeMap<String, String>,
        actor: &str,
        since: DateTime<Utc>,
    ) -> Result<(), GitHubError> {
        let path = self.repo_path(&format!(
            "/actions/workflows/{}/dispatches",
            encode(workflow)
        ));
        let request = ApiRequest::write(
            Method::POST,
            &path,
            Some(json!({"ref": git_ref, "inputs": inputs})),
        );
        match self.send_write(request.clone()).await {
            Ok(_) => Ok(()),
            Err(GitHubError::OutcomeUnknown { .. }) => {
                let recheck = RunFilter {
                    workflow: Some(workflow.to_string()),
                    actor: Some(actor.to_string()),
                    event: Some("workflow_dispatch".to_string()),
                    created: Some((
                        since - Duration::seconds(5),
                        Utc::now() + Duration::minutes(1),
                    )),
                    ..RunFilter::default()
                };
                // Any run listed is the dispatch, whether or not the listing is whole.
                let dispatched = !self.workflow_runs(&recheck).await?.items.is_empty();
                if dispatched {
                    return Ok(());
                }
                self.send_write(request).await.map(|_| ())
            }
            Err(error) => Err(error),
        }
    }
}

impl GitHubClient {
    /// Sends one `workflow_dispatch` of `workflow` on `git_ref` with `inputs`, and never sends it
    /// again: on [`GitHubError::OutcomeUnknown`] the caller decides how to re-check (for instance
    /// by looking for the run it would have started, whoever dispatched it).
    pub async fn dispatch_workflow(
        &self,
        workflow: &str,
        git_ref: &str,
        inputs: &BTreeMap<String, String>,
    ) -> Result<(), GitHubError> {
        let path = self.repo_path(&format!(
            "/actions/workflows/{}/dispatches",
            encode(workflow)
        ));
        let body = json!({"ref": git_ref, "inputs": inputs});
        self.send_write(ApiRequest::write(Method::POST, &path, Some(body)))
            .await
            .map(|_| ())
    }
}

/// Everything since GitHub Actions could have run anything, up to a day from now.
fn full_history() -> (DateTime<Utc>, DateTime<Utc>) {
    let start = Utc
        .with_ymd_and_hms(2018, 1, 1, 0, 0, 0)
        .single()
        .expect("a valid date");
    (start, Utc::now() + Duration::days(1))
}

/// Splits `[start, end]` into windows expected to hold ~900 runs each if runs were spread
/// evenly (at least two); uneven ones are split again when listed.
pub fn split_window(
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    total: u64,
) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
    let parts = total.div_ceil(900).clamp(2, 64) as i64;
    let span = (end - start).num_seconds().max(1);
    let step = (span / parts).max(1);
    let mut windows = Vec::new();
    let mut window_start = start;
    for index in 0..parts {
        if window_start > end {
            break;
        }
        let window_end = if index == parts - 1 {
            end
        } else {
            (window_start + Duration::seconds(step - 1)).min(end)
        };
        windows.push((window_start, window_end));
        window_start = window_end + Duration::seconds(1);
    }
    windows
}

fn describe(filter: &RunFilter) -> String {
    let mut parts = vec![
        filter
            .workflow
            .clone()
            .unwrap_or_else(|| "all workflows".to_string()),
    ];
    if let Some((start, end)) = filter.created {
        parts.push(format!(
            "created {}..{}",
            start.to_rfc3339_opts(SecondsFormat::Secs, true),
            end.to_rfc3339_opts(SecondsFormat::Secs, true)
        ));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn windows_cover_the_range_without_overlap() {
        let start = at("2026-11-01T00:00:00Z");
        let end = at("2026-11-30T23:59:59Z");
        let windows = split_window(start, end, 5_000);
        assert_eq!(windows.len(), 6);
        assert_eq!(windows[0].0, start);
        assert_eq!(windows.last().unwrap().1, end);
        for pair in windows.windows(2) {
            assert_eq!(pair[0].1 + Duration::seconds(1), pair[1].0);
        }
    }

    #[test]
    fn a_two_second_window_splits_into_single_seconds() {
        let start = at("2026-11-01T00:00:00Z");
        let windows = split_window(start, start + Duration::seconds(1), 5_000);
        assert_eq!(
            windows,
            vec![
                (start, start),
                (start + Duration::seconds(1), start + Duration::seconds(1))
            ]
        );
    }

    #[test]
    fn only_filtered_listings_are_capped() {
        assert!(!RunFilter::workflow("klaud-plan.yml").is_capped());
        let filter = RunFilter {
            status: Some("in_progress".into()),
            ..RunFilter::workflow("klaud-plan.yml")
        };
        assert!(filter.is_capped());
    }

    #[test]
    fn the_query_names_every_filter() {
        let filter = RunFilter {
            actor: Some("Klaud-Cold".into()),
            branch: Some("klaud/auto-a".into()),
            created: Some((at("2026-11-01T00:00:00Z"), at("2026-11-02T00:00:00Z"))),
            ..RunFilter::workflow("e2e-tests.yml")
        };
        assert_eq!(
            filter.path("/repos/acme/bench"),
            "/repos/acme/bench/actions/workflows/e2e-tests.yml/runs?actor=Klaud-Cold&branch=klaud%2Fauto-a&created=2026-11-01T00%3A00%3A00Z..2026-11-02T00%3A00%3A00Z&per_page=100"
        );
    }
}
