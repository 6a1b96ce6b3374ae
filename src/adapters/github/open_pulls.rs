//! klaud's open pull requests, found from klaud's own branches rather than from every open pull
//! request of the repository.
//!
//! First the branches under klaud's prefixes, one `git/matching-refs` listing a prefix (GitHub
//! answers it whole, without pages); then the open pull requests whose head is one of those
//! branches, read in batched GraphQL queries (`pullRequests(headRefName:, states: [OPEN])`),
//! [`BRANCHES_PER_QUERY`] branches a query. What this costs follows klaud's branches: a
//! repository with 10,000 open pull requests by people costs what one with none costs.
//!
//! It is complete by construction: GitHub closes a pull request whose head branch is deleted, so
//! every open pull request with its head in this repository under a prefix has its branch in the
//! listing. A fork's pull request may carry the same branch name; it comes back with its head
//! repository, and the rule that reads a pull request as klaud's never takes it. What could not
//! be read makes the listing incomplete, with the reason, never shorter: a branch listing that
//! failed, a query that failed, a branch GitHub left out of an answer, or a branch with more open
//! pull requests than one query reads ([`OPEN_PULL_REQUESTS_PER_BRANCH`]).

use futures::StreamExt;
use serde_json::{Value, json};

use std::collections::BTreeMap;

use super::GitHubClient;
use super::batch::{PULL_REQUEST_FRAGMENT, pull_request_and_issue, repository_variables};
use super::graphql::GraphQlAnswer;
use super::models::PullRequest;
use super::pull_checks::{CHECKS_FRAGMENT, ChecksPage, HEALTH_FRAGMENT, HeadChecks, read_health};
use crate::core::github_state::{MergeStateStatus, Mergeable};
use crate::core::snapshot::Listed;

/// Branches asked about in one query.
pub const BRANCHES_PER_QUERY: usize = 50;
/// Open pull requests read per branch: klaud opens one per candidate branch; more can only be
/// forks' pull requests on a branch of the same name, and more than this makes the listing
/// incomplete rather than short.
pub const OPEN_PULL_REQUESTS_PER_BRANCH: usize = 10;
/// Queries sent at once.
const QUERY_CONCURRENCY: usize = 4;

/// The health fields of one pull request as its listing query read them.
type FirstPage = (Mergeable, MergeStateStatus, ChecksPage);

/// klaud's open pull requests, and with them, when asked, each one's mergeability and checks.
#[derive(Debug)]
pub struct OpenPullRequests {
    pub pulls: Listed<PullRequest>,
    /// By pull request number; a pull request the listing read has an entry when checks were
    /// asked for, else none.
    pub checks: BTreeMap<u64, HeadChecks>,
    /// The first page of each pull request's checks, before the rest is read.
    first_pages: BTreeMap<u64, FirstPage>,
}

impl GitHubClient {
    /// The branches under each of `prefixes`, listed at once (names without `refs/heads/`, sorted,
    /// each once); incomplete when a prefix's listing failed.
    pub async fn branches_under(&self, prefixes: &[&str]) -> Listed<String> {
        let listings = futures::future::join_all(
            prefixes
                .iter()
                .map(|prefix| self.branches_starting_with(prefix)),
        )
        .await;
        let mut names = Vec::new();
        let mut gaps = Vec::new();
        for (prefix, listing) in prefixes.iter().zip(listings) {
            match listing {
                Ok(references) => names.extend(references.into_iter().map(|reference| {
                    reference
                        .name
                        .strip_prefix("refs/heads/")
                        .unwrap_or(&reference.name)
                        .to_string()
                })),
                Err(error) => gaps.push(format!(
                    "the branches under {prefix} could not be listed: {error}"
                )),
            }
        }
        names.sort();
        names.dedup();
        match gaps.is_empty() {
            true => Listed::complete(names),
            false => Listed::incomplete(names, gaps.join("; ")),
        }
    }

    /// The open pull requests whose head branch is one of `branches` (newest first), forks'
    /// included; incomplete when `branches` is, or when some branch's could not all be read.
    pub async fn open_pull_requests_on(&self, branches: &Listed<String>) -> Listed<PullRequest> {
        self.open_pull_requests_read(branches, false).await.pulls
    }

    /// The open pull requests on `branches` as [`Self::open_pull_requests_on`] lists them, each
    /// read in the same queries with its mergeability and the checks on its head (paged past
    /// the first 100 by follow-up queries).
    pub async fn open_pull_requests_with_checks_on(
        &self,
        branches: &Listed<String>,
    ) -> OpenPullRequests {
        let mut read = self.open_pull_requests_read(branches, true).await;
        let pages: Vec<(u64, HeadChecks)> =
            futures::stream::iter(std::mem::take(&mut read.first_pages).into_iter().map(
                |(number, (mergeable, merge_state, page))| async move {
                    let checks = self.remaining_checks(number, page).await;
                    let head = HeadChecks {
                        mergeable,
                        merge_state,
                        checks,
                    };
                    (number, head)
                },
            ))
            .buffered(QUERY_CONCURRENCY)
            .collect()
            .await;
        read.checks.extend(pages);
        read
    }

    async fn open_pull_requests_read(
        &self,
        branches: &Listed<String>,
        with_checks: bool,
    ) -> OpenPullRequests {
        let mut gaps: Vec<String> = branches
            .gap
            .iter()
            .map(|gap| format!("{gap}, so their open pull requests are not known"))
            .collect();
        let chunks: Vec<&[String]> = branches.items.chunks(BRANCHES_PER_QUERY).collect();
        let answers: Vec<(&[String], Result<GraphQlAnswer, String>)> =
            futures::stream::iter(chunks.into_iter().map(|chunk| async move {
                let (query, variables) =
                    open_pull_requests_query(self.repository(), chunk, with_checks);
                let answer = self
                    .graphql_read("open pull requests", &query, variables)
                    .await
                    .map_err(|error| error.to_string());
                (chunk, answer)
            }))
            .buffered(QUERY_CONCURRENCY)
            .collect()
            .await;
        let mut pulls = Vec::new();
        let mut first_pages = BTreeMap::new();
        for (chunk, answer) in answers {
            match answer {
                Ok(answer) => {
                    let read = read_answer(&answer, chunk, self.repository(), with_checks);
                    pulls.extend(read.pulls);
                    first_pages.extend(read.first_pages);
                    gaps.extend(read.gaps);
                }
                Err(error) => gaps.push(format!(
                    "the open pull requests of {} branch(es) could not be read: {error}",
                    chunk.len()
                )),
            }
        }
        pulls.sort_by_key(|pull: &PullRequest| std::cmp::Reverse(pull.number));
        OpenPullRequests {
            pulls: match gaps.is_empty() {
                true => Listed::complete(pulls),
                false => Listed::incomplete(pulls, gaps.join("; ")),
            },
            checks: BTreeMap::new(),
            first_pages,
        }
    }

    /// The branches under `prefixes`, and the open pull requests on them.
    pub async fn open_pull_requests_under(
        &self,
        prefixes: &[&str],
    ) -> (Listed<String>, Listed<PullRequest>) {
        let branches = self.branches_under(prefixes).await;
        let pulls = self.open_pull_requests_on(&branches).await;
        (branches, pulls)
    }
}

/// The query text and variables asking for the open pull requests of `branches`, aliased `b0`,
/// `b1`, …, with their mergeability and first page of checks when `with_checks`; every branch
/// name travels as a variable, never inside the query text.
pub fn open_pull_requests_query(
    repository: &str,
    branches: &[String],
    with_checks: bool,
) -> (String, Value) {
    let (mut variables, mut declarations) = repository_variables(repository);
    let mut fields = Vec::new();
    for (index, branch) in branches.iter().enumerate() {
        let alias = format!("b{index}");
        declarations.push(format!("${alias}: String!"));
        variables.insert(alias.clone(), json!(branch));
        fields.push(format!(
            "{alias}: pullRequests(headRefName: ${alias}, states: [OPEN], first: {OPEN_PULL_REQUESTS_PER_BRANCH}) {{ totalCount nodes {{ ...pull{} }} }}",
            if with_checks { " ...health" } else { "" }
        ));
    }
    let fragments = match with_checks {
        true => format!("{PULL_REQUEST_FRAGMENT} {HEALTH_FRAGMENT} {CHECKS_FRAGMENT}"),
        false => PULL_REQUEST_FRAGMENT.to_string(),
    };
    let query = format!(
        "query({}) {{ repository(owner: $owner, name: $name) {{ id {} }} }} {fragments}",
        declarations.join(", "),
        fields.join(" "),
    );
    (query, Value::Object(variables))
}

/// What one answer gave: the pull requests read, and what it left unknown.
struct ReadAnswer {
    pulls: Vec<PullRequest>,
    first_pages: BTreeMap<u64, FirstPage>,
    gaps: Vec<String>,
}

fn read_answer(
    answer: &GraphQlAnswer,
    branches: &[String],
    repository: &str,
    with_checks: bool,
) -> ReadAnswer {
    let mut read = ReadAnswer {
        pulls: Vec::new(),
        first_pages: BTreeMap::new(),
        gaps: Vec::new(),
    };
    let Some(repository_node) = answer
        .data
        .get("repository")
        .filter(|value| !value.is_null())
    else {
        read.gaps.push(format!(
            "the open pull requests of {} branch(es) could not be read: {}",
            branches.len(),
            match answer.problems.is_empty() {
                true => "the answer names no repository".to_string(),
                false => answer.message(),
            }
        ));
        return read;
    };
    for (index, branch) in branches.iter().enumerate() {
        let alias = format!("b{index}");
        match read_branch(repository_node.get(&alias), repository, with_checks) {
            Ok(pulls) => {
                for (pull, first_page) in pulls {
                    if let Some(first_page) = first_page {
                        read.first_pages.insert(pull.number, first_page);
                    }
                    read.pulls.push(pull);
                }
            }
            Err(reason) => {
                let reason = answer
                    .problems
                    .iter()
                    .find(|problem| problem.path.iter().any(|segment| segment == &alias))
                    .map(|problem| problem.message.clone())
                    .unwrap_or(reason);
                read.gaps.push(format!(
                    "the open pull requests of {branch} could not be read: {}",
                    crate::core::text::bounded(&reason, 300)
                ));
            }
        }
    }
    read
}

/// One branch's connection: every open pull request it has (with its health fields when asked),
/// or why they are not all known.
fn read_branch(
    connection: Option<&Value>,
    repository: &str,
    with_checks: bool,
) -> Result<Vec<(PullRequest, Option<FirstPage>)>, String> {
    let connection = connection
        .filter(|value| !value.is_null())
        .ok_or("the answer leaves it out")?;
    let nodes = connection
        .get("nodes")
        .and_then(Value::as_array)
        .ok_or("no pull request nodes")?;
    let total = connection
        .get("totalCount")
        .and_then(Value::as_u64)
        .ok_or("no totalCount")?;
    if total > nodes.len() as u64 {
        return Err(format!(
            "it has {total} open pull requests and {} were read",
            nodes.len()
        ));
    }
    nodes
        .iter()
        .map(|node| {
            let (pull, _) = pull_request_and_issue(node, repository)?;
            let health = match with_checks {
                true => {
                    Some(read_health(node).map_err(|error| format!("#{}: {error}", pull.number))?)
                }
                false => None,
            };
            Ok((pull, health))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::github::graphql::GraphQlProblem;

    fn node(number: u64, branch: &str, head_repository: &str) -> Value {
        json!({
            "number": number, "id": format!("PR_{number}"), "title": "t", "state": "OPEN",
            "isDraft": true, "merged": false, "mergedAt": null,
            "createdAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-02T00:00:00Z",
            "closedAt": null, "headRefName": branch, "headRefOid": "a".repeat(40),
            "baseRefName": "main", "baseRefOid": "b".repeat(40),
            "isCrossRepository": head_repository != "acme/widgets",
            "headRepository": {"nameWithOwner": head_repository},
            "author": {"__typename": "Bot", "login": "klaud"},
            "labels": {"nodes": []},
            "timelineItems": {"nodes": []}
        })
    }

    fn answer(data: Value, problems: Vec<GraphQlProblem>) -> GraphQlAnswer {
        GraphQlAnswer { data, problems }
    }

    fn branches(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn every_branch_travels_as_a_variable_and_asks_only_for_open_pull_requests() {
        let (query, variables) = open_pull_requests_query(
            "acme/widgets",
            &branches(&["klaud/auto-a\"}", "klaud/auto-b"]),
            false,
        );
        assert!(query.contains("b0: pullRequests(headRefName: $b0, states: [OPEN], first: 10)"));
        assert!(query.contains("b1: pullRequests(headRefName: $b1"));
        assert!(!query.contains("auto-a"));
        assert_eq!(variables["b0"], "klaud/auto-a\"}");
        assert_eq!(variables["owner"], "acme");
        assert_eq!(variables["name"], "widgets");
    }

    #[test]
    fn forks_pull_requests_come_back_with_their_head_repository() {
        let data = json!({"repository": {"id": "R_1",
        "b0": {"totalCount": 2, "nodes": [
            node(7, "klaud/auto-a", "acme/widgets"),
            node(9, "klaud/auto-a", "mallory/widgets")
        ]}}});
        let read = read_answer(
            &answer(data, vec![]),
            &branches(&["klaud/auto-a"]),
            "acme/widgets",
            false,
        );
        assert!(read.gaps.is_empty());
        let heads: Vec<(u64, String)> = read
            .pulls
            .iter()
            .map(|pull| (pull.number, pull.head.repo.clone().unwrap().full_name))
            .collect();
        assert_eq!(
            heads,
            vec![(7, "acme/widgets".into()), (9, "mallory/widgets".into())]
        );
    }

    #[test]
    fn a_branch_with_more_open_pull_requests_than_read_is_a_gap_not_a_shorter_truth() {
        let data = json!({"repository": {"id": "R_1",
            "b0": {"totalCount": 11, "nodes": [node(7, "klaud/auto-a", "acme/widgets")]},
            "b1": {"totalCount": 0, "nodes": []}}});
        let read = read_answer(
            &answer(data, vec![]),
            &branches(&["klaud/auto-a", "klaud/auto-b"]),
            "acme/widgets",
            false,
        );
        assert_eq!(
            read.gaps,
            vec![
                "the open pull requests of klaud/auto-a could not be read: it has 11 open pull requests and 1 were read"
            ]
        );
    }

    #[test]
    fn a_branch_the_answer_leaves_out_or_an_error_names_is_a_gap() {
        let data = json!({"repository": {"id": "R_1", "b0": null}});
        let problems = vec![GraphQlProblem {
            message: "Something went wrong".into(),
            path: vec!["repository".into(), "b0".into()],
            kind: None,
        }];
        let read = read_answer(
            &answer(data, problems),
            &branches(&["klaud/auto-a", "klaud/auto-b"]),
            "acme/widgets",
            false,
        );
        assert_eq!(read.pulls, vec![]);
        assert_eq!(
            read.gaps,
            vec![
                "the open pull requests of klaud/auto-a could not be read: Something went wrong",
                "the open pull requests of klaud/auto-b could not be read: the answer leaves it out"
            ]
        );
    }

    #[test]
    fn an_answer_without_the_repository_leaves_every_branch_unknown() {
        let read = read_answer(
            &answer(json!({"repository": null}), vec![]),
            &branches(&["klaud/auto-a", "klaud/auto-b"]),
            "acme/widgets",
            false,
        );
        assert_eq!(
            read.gaps,
            vec![
                "the open pull requests of 2 branch(es) could not be read: the answer names no repository"
            ]
        );
    }
}
