//! Reading what the health report is decided from (contract §12), for `status` and for
//! `recover`'s dashboard: klaud's open pull requests with their mergeability and the checks on
//! their heads (read with the open pull request listing,
//! `GitHubClient::open_pull_requests_with_checks_on`), then one page of jobs of each of the first
//! `health.max-run-reads` active sweep runs on their heads, a few at a time. A read that failed
//! is kept as a gap in the snapshot; the report says what it could not know.

use std::collections::BTreeMap;

use futures::StreamExt;

use crate::adapters::github::GitHubClient;
use crate::adapters::github::open_pulls::OpenPullRequests;
use crate::core::github_state::{MergeStateStatus, Mergeable};
use crate::core::health::{HealthFacts, PullRequestChecks, SweepJob, runs_to_read};
use crate::core::policy::Policy;
use crate::core::snapshot::Listed;

/// Job listings read at once.
const JOB_READS_AT_ONCE: usize = 4;

/// The facts of the health report.
#[derive(Debug, Clone, Default)]
pub struct HealthSnapshot {
    pub pulls: Listed<PullRequestChecks>,
    /// One page of jobs of each active sweep run read, by run id.
    pub jobs: BTreeMap<u64, Listed<SweepJob>>,
}

impl HealthSnapshot {
    pub fn facts<'a>(&'a self, policy: &'a Policy) -> HealthFacts<'a> {
        HealthFacts {
            pulls: &self.pulls,
            jobs: &self.jobs,
            sweep_workflow: policy.sweep_workflow.as_deref(),
        }
    }
}

/// klaud's pull requests among `open` (a `<branch-prefix><id>` head in this repository) with
/// their checks; a listing that may be incomplete stays so.
pub fn klaud_pull_request_checks(
    open: &OpenPullRequests,
    repository: &str,
    policy: &Policy,
) -> Listed<PullRequestChecks> {
    let items = open
        .pulls
        .items
        .iter()
        .filter_map(|pull| {
            let head_repository = pull.head.repo.as_ref().map(|repo| repo.full_name.as_str());
            let candidate =
                policy.candidate_of_pull_request(head_repository, &pull.head.branch, repository)?;
            let head = open.checks.get(&pull.number);
            Some(PullRequestChecks {
                number: pull.number,
                candidate: candidate.to_string(),
                created_at: pull.created_at,
                draft: pull.draft,
                head_sha: pull.head.sha.clone(),
                mergeable: head.map_or(Mergeable::Unknown, |head| head.mergeable.clone()),
                merge_state: head
                    .map_or(MergeStateStatus::Unknown, |head| head.merge_state.clone()),
                checks: head.map_or_else(
                    || Listed::failed("its checks were not read"),
                    |head| head.checks.clone(),
                ),
            })
        })
        .collect();
    Listed {
        items,
        gap: open.pulls.gap.clone(),
    }
}

/// klaud's open pull requests under the configured prefix with their checks, and the jobs of
/// their active sweep runs.
pub async fn read_health(
    client: &GitHubClient,
    policy: &Policy,
) -> (OpenPullRequests, HealthSnapshot) {
    let branches = client
        .branches_under(&[policy.branch_prefix.as_str()])
        .await;
    let open = client.open_pull_requests_with_checks_on(&branches).await;
    let snapshot = health_of_open(client, policy, &open).await;
    (open, snapshot)
}

/// The health snapshot of pull requests already listed with their checks: the jobs of their
/// active sweep runs are read.
pub async fn health_of_open(
    client: &GitHubClient,
    policy: &Policy,
    open: &OpenPullRequests,
) -> HealthSnapshot {
    let pulls = klaud_pull_request_checks(open, client.repository(), policy);
    let runs = runs_to_read(
        &pulls.items,
        policy.sweep_workflow.as_deref(),
        &policy.health,
    );
    let jobs = futures::stream::iter(runs.into_iter().map(|run| async move {
        let jobs = client.sweep_run_jobs(run).await.unwrap_or_else(|error| {
            Listed::failed(format!("the jobs of run {run} could not be read: {error}"))
        });
        (run, jobs)
    }))
    .buffered(JOB_READS_AT_ONCE)
    .collect()
    .await;
    HealthSnapshot { pulls, jobs }
}
