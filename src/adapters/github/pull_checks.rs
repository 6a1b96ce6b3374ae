//! What the health of klaud's open pull requests is read from (contract §12): each pull
//! request's mergeability and the checks on its exact head, read in the same batched GraphQL
//! query that lists the open pull requests ([`HEALTH_FRAGMENT`], asked for by
//! `GitHubClient::open_pull_requests_with_checks_on`), a head's checks paged only past 100; and
//! one page of 100 jobs of an active sweep run, with their runner labels.
//!
//! The answers come back as the core's types ([`Check`], [`SweepJob`]); checks that could not
//! all be read are a [`Listed`] with its gap, never a shorter truth.

use serde_json::{Value, json};

use super::GitHubClient;
use super::batch::repository_variables;
use super::error::GitHubError;
use super::models::{Job, JobPage};
use crate::core::github_state::{
    CheckConclusion, CheckStatus, MergeStateStatus, Mergeable, StatusState,
};
use crate::core::health::{Check, CheckRun, CheckWorkflowRun, CommitStatus, SweepJob};
use crate::core::snapshot::Listed;

/// Checks read per page of a head's rollup (GitHub's largest page).
pub const CHECKS_PER_PAGE: usize = 100;
/// Pages of one head's checks read at most: a head with more checks than this is unknown.
pub const MAX_CHECK_PAGES: usize = 10;
/// Jobs read of one sweep run: one page.
pub const JOBS_PER_RUN: usize = 100;

/// The selection of a page of checks.
pub const CHECKS_FRAGMENT: &str = "fragment checks on StatusCheckRollupContextConnection { totalCount pageInfo { hasNextPage endCursor } nodes { __typename ... on CheckRun { name status conclusion detailsUrl checkSuite { status conclusion workflowRun { url file { path } } } } ... on StatusContext { context state targetUrl } } }";
/// The health fields read with each open pull request: its mergeability and the first page of
/// the checks on its head.
pub const HEALTH_FRAGMENT: &str = "fragment health on PullRequest { mergeable mergeStateStatus statusCheckRollup { contexts(first: 100) { ...checks } } }";

/// A pull request's mergeability and the checks on its head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadChecks {
    pub mergeable: Mergeable,
    pub merge_state: MergeStateStatus,
    pub checks: Listed<Check>,
}

/// The checks of a head read from one page, and where the next page starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChecksPage {
    pub checks: Vec<Check>,
    pub next: Option<String>,
}

/// A pull request node's health fields: its mergeability and its first page of checks.
pub fn read_health(node: &Value) -> Result<(Mergeable, MergeStateStatus, ChecksPage), String> {
    let mergeable = node
        .get("mergeable")
        .and_then(Value::as_str)
        .ok_or("no mergeable")?;
    let merge_state = node
        .get("mergeStateStatus")
        .and_then(Value::as_str)
        .ok_or("no mergeStateStatus")?;
    // A head without any check has no rollup.
    let page = match node.pointer("/statusCheckRollup/contexts") {
        None | Some(Value::Null) => ChecksPage {
            checks: Vec::new(),
            next: None,
        },
        Some(connection) => read_checks_page(connection)?,
    };
    Ok((
        Mergeable::from(mergeable),
        MergeStateStatus::from(merge_state),
        page,
    ))
}

/// One page of a `StatusCheckRollupContextConnection`.
pub fn read_checks_page(connection: &Value) -> Result<ChecksPage, String> {
    let nodes = connection
        .get("nodes")
        .and_then(Value::as_array)
        .ok_or("no check nodes")?;
    let checks = nodes.iter().map(read_check).collect::<Result<_, _>>()?;
    let has_next = connection
        .pointer("/pageInfo/hasNextPage")
        .and_then(Value::as_bool)
        .ok_or("no pageInfo.hasNextPage")?;
    let next = match has_next {
        true => Some(
            connection
                .pointer("/pageInfo/endCursor")
                .and_then(Value::as_str)
                .ok_or("a next page without an endCursor")?
                .to_string(),
        ),
        false => None,
    };
    Ok(ChecksPage { checks, next })
}

/// The number that follows `marker` in `url` and ends it (`…/actions/runs/123` → 123). GraphQL's
/// `databaseId` is a 32-bit `Int`, which GitHub's run and job ids have outgrown, so ids are read
/// from the links GitHub gives.
fn trailing_id(url: &str, marker: &str) -> Option<u64> {
    let (_, rest) = url.rsplit_once(marker)?;
    rest.parse().ok()
}

fn word<'a>(node: &'a Value, field: &str) -> Result<&'a str, String> {
    node.get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("a check without {field}"))
}

fn read_check(node: &Value) -> Result<Check, String> {
    match node.get("__typename").and_then(Value::as_str) {
        Some("CheckRun") => {
            let suite = node.get("checkSuite").filter(|suite| !suite.is_null());
            let workflow_run = suite.and_then(|suite| {
                let run = suite.get("workflowRun").filter(|run| !run.is_null())?;
                Some(CheckWorkflowRun {
                    id: trailing_id(run.get("url").and_then(Value::as_str)?, "/actions/runs/")?,
                    path: run
                        .pointer("/file/path")
                        .and_then(Value::as_str)?
                        .to_string(),
                    status: CheckStatus::from(suite.get("status").and_then(Value::as_str)?),
                    conclusion: suite
                        .get("conclusion")
                        .and_then(Value::as_str)
                        .map(CheckConclusion::from),
                })
            });
            Ok(Check::Run(CheckRun {
                name: word(node, "name")?.to_string(),
                id: node
                    .get("detailsUrl")
                    .and_then(Value::as_str)
                    .and_then(|url| trailing_id(url, "/job/")),
                status: CheckStatus::from(word(node, "status")?),
                conclusion: node
                    .get("conclusion")
                    .and_then(Value::as_str)
                    .map(CheckConclusion::from),
                url: node
                    .get("detailsUrl")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                workflow_run,
            }))
        }
        Some("StatusContext") => Ok(Check::Status(CommitStatus {
            context: word(node, "context")?.to_string(),
            state: StatusState::from(word(node, "state")?),
            target_url: node
                .get("targetUrl")
                .and_then(Value::as_str)
                .map(str::to_string),
        })),
        other => Err(format!("a check of type {other:?}")),
    }
}

/// The query reading the page of pull request `number`'s checks after `cursor`.
pub fn checks_page_query(repository: &str, number: u64, cursor: &str) -> (String, Value) {
    let (mut variables, mut declarations) = repository_variables(repository);
    declarations.push("$number: Int!".into());
    declarations.push("$after: String!".into());
    variables.insert("number".into(), json!(number));
    variables.insert("after".into(), json!(cursor));
    let query = format!(
        "query({}) {{ repository(owner: $owner, name: $name) {{ pullRequest(number: $number) {{ statusCheckRollup {{ contexts(first: {CHECKS_PER_PAGE}, after: $after) {{ ...checks }} }} }} }} }} {CHECKS_FRAGMENT}",
        declarations.join(", ")
    );
    (query, Value::Object(variables))
}

impl GitHubClient {
    /// The rest of a head's checks after its first page: every page, or what was read and why
    /// the rest is not known.
    pub async fn remaining_checks(&self, number: u64, first: ChecksPage) -> Listed<Check> {
        let mut checks = first.checks;
        let mut next = first.next;
        for _ in 1..MAX_CHECK_PAGES {
            let Some(cursor) = next.take() else {
                return Listed::complete(checks);
            };
            let (query, variables) = checks_page_query(self.repository(), number, &cursor);
            let page = match self.graphql_read("checks", &query, variables).await {
                Ok(answer) => answer
                    .data
                    .pointer("/repository/pullRequest/statusCheckRollup/contexts")
                    .filter(|connection| !connection.is_null())
                    .ok_or_else(|| match answer.problems.is_empty() {
                        true => "the answer leaves them out".to_string(),
                        false => answer.message(),
                    })
                    .and_then(read_checks_page),
                Err(error) => Err(error.to_string()),
            };
            match page {
                Ok(page) => {
                    checks.extend(page.checks);
                    next = page.next;
                }
                Err(reason) => {
                    let read = checks.len();
                    return Listed::incomplete(
                        checks,
                        format!(
                            "the checks of #{number} past the first {read} could not be read: {reason}"
                        ),
                    );
                }
            }
        }
        match next {
            None => Listed::complete(checks),
            Some(_) => {
                let read = checks.len();
                Listed::incomplete(
                    checks,
                    format!("#{number} has more than the {read} checks klaud reads of a head"),
                )
            }
        }
    }

    /// One page of the jobs of an active sweep run (its latest attempt): whole, or cut with the
    /// count GitHub gave.
    pub async fn sweep_run_jobs(&self, run_id: u64) -> Result<Listed<SweepJob>, GitHubError> {
        let path = self.repo_path(&format!(
            "/actions/runs/{run_id}/jobs?per_page={JOBS_PER_RUN}"
        ));
        let page: JobPage = self.get_json(&path).await?;
        let read = page.jobs.len() as u64;
        let jobs: Vec<SweepJob> = page.jobs.into_iter().map(sweep_job).collect();
        Ok(match page.total_count > read {
            false => Listed::complete(jobs),
            true => Listed::incomplete(
                jobs,
                format!(
                    "run {run_id} has {} jobs and one page of {read} was read",
                    page.total_count
                ),
            ),
        })
    }
}

fn sweep_job(job: Job) -> SweepJob {
    SweepJob {
        id: job.id,
        run_id: job.run_id,
        name: job.name,
        status: job.status,
        conclusion: job.conclusion,
        labels: job.labels,
        started_at: job.started_at,
        completed_at: job.completed_at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_of_checks_reads_check_runs_and_commit_statuses() {
        let connection = json!({"totalCount": 3, "pageInfo": {"hasNextPage": true, "endCursor": "Y3"},
        "nodes": [
            {"__typename": "CheckRun", "name": "sweep (b200)", "status": "COMPLETED",
             "conclusion": "FAILURE", "detailsUrl": "https://github.com/a/b/actions/runs/31000000001/job/70000000007",
             "checkSuite": {"status": "COMPLETED", "conclusion": "FAILURE",
                "workflowRun": {"url": "https://github.com/a/b/actions/runs/31000000001", "file": {"path": ".github/workflows/run-sweep.yml"}}}},
            {"__typename": "CheckRun", "name": "external", "status": "QUEUED",
             "conclusion": null, "detailsUrl": null, "checkSuite": {"status": "QUEUED", "conclusion": null, "workflowRun": null}},
            {"__typename": "StatusContext", "context": "ci/x", "state": "ERROR", "targetUrl": null}
        ]});
        let page = read_checks_page(&connection).unwrap();
        assert_eq!(page.next.as_deref(), Some("Y3"));
        assert_eq!(page.checks.len(), 3);
        let Check::Run(run) = &page.checks[0] else {
            panic!("a check run")
        };
        assert_eq!(run.workflow_run.as_ref().unwrap().id, 31_000_000_001);
        assert_eq!(run.id, Some(70_000_000_007));
        assert_eq!(run.conclusion, Some(CheckConclusion::Failure));
        let Check::Run(external) = &page.checks[1] else {
            panic!("a check run")
        };
        assert_eq!(external.workflow_run, None);
        assert!(
            matches!(&page.checks[2], Check::Status(status) if status.state == StatusState::Error)
        );
    }

    #[test]
    fn a_head_without_checks_has_none_and_a_node_without_mergeability_is_an_error() {
        let node = json!({"mergeable": "UNKNOWN", "mergeStateStatus": "UNKNOWN", "statusCheckRollup": null});
        let (mergeable, state, page) = read_health(&node).unwrap();
        assert_eq!(
            (mergeable, state),
            (Mergeable::Unknown, MergeStateStatus::Unknown)
        );
        assert!(page.checks.is_empty() && page.next.is_none());
        assert_eq!(read_health(&json!({})).unwrap_err(), "no mergeable");
    }

    #[test]
    fn the_next_page_query_carries_number_and_cursor_as_variables() {
        let (query, variables) = checks_page_query("acme/bench", 12, "abc\"}");
        assert!(query.contains("contexts(first: 100, after: $after)"));
        assert!(!query.contains("abc"));
        assert_eq!(variables["number"], 12);
        assert_eq!(variables["after"], "abc\"}");
    }
}
