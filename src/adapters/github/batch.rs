//! Many detail reads in one GraphQL request: the pull requests of a branch (with who closed
//! each and its commits), one pull request with who closed it and its commits, and the message
//! of a commit. REST costs a request per object for each of these; a recovery pass that decides
//! 25 leftover branches and 30 legacy claim refs would spend its whole read budget on them.
//!
//! Answers come back as the same structs the REST reads return ([`PullRequest`], [`Issue`],
//! [`Commit`]), so the facts built from them do not depend on how they were read. Each object
//! keeps its own result: an object GitHub could not resolve is an error for that object only,
//! and a request that failed as a whole is an error for every object in it. Nothing is guessed.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use super::GitHubClient;
use super::error::GitHubError;
use super::graphql::{GraphQlAnswer, GraphQlProblem};
use super::models::{
    Account, Commit, Issue, IssuePullRequest, Label, PullRequest, PullRequestBranch, RepositoryName,
};
use crate::core::github_state::PullRequestState;

/// Objects asked for in one request (GitHub's node limit is far above what this asks).
pub const OBJECTS_PER_QUERY: usize = 50;
/// Pull requests listed per branch; klaud opens one per candidate branch.
pub const PULL_REQUESTS_PER_BRANCH: usize = 20;
/// Commits read per pull request (GitHub pages connections at 100).
pub const COMMITS_PER_PULL_REQUEST: usize = 100;

/// The fields read of every pull request. `__typename` tells a GitHub App (`Bot`), whose login
/// GraphQL gives without the `[bot]` that REST and `bot` in the configuration carry.
pub const PULL_REQUEST_FRAGMENT: &str = "fragment pull on PullRequest { number id title state isDraft merged mergedAt createdAt updatedAt closedAt headRefName headRefOid baseRefName baseRefOid isCrossRepository headRepository { nameWithOwner } author { __typename login } labels(first: 100) { nodes { name } } timelineItems(itemTypes: [CLOSED_EVENT], last: 1) { nodes { ... on ClosedEvent { actor { __typename login } } } } }";
/// The commits read of a pull request.
pub const COMMITS_SELECTION: &str = "commits(first: 100) { totalCount nodes { commit { oid author { user { login } } committer { user { login } } } } }";

/// What to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DetailBatch {
    /// Branches whose pull requests (open and closed, newest first) are listed.
    pub branch_pull_requests: BTreeSet<String>,
    /// Pull requests read with who closed them and their commits.
    pub pull_requests: BTreeSet<u64>,
    /// Commits whose message is read.
    pub commit_messages: BTreeSet<String>,
}

impl DetailBatch {
    pub fn is_empty(&self) -> bool {
        self.branch_pull_requests.is_empty()
            && self.pull_requests.is_empty()
            && self.commit_messages.is_empty()
    }

    fn objects(&self) -> Vec<Asked> {
        self.branch_pull_requests
            .iter()
            .cloned()
            .map(Asked::Branch)
            .chain(self.pull_requests.iter().copied().map(Asked::Pull))
            .chain(self.commit_messages.iter().cloned().map(Asked::Message))
            .collect()
    }
}

/// The commits of a pull request, and how many it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestCommits {
    pub commits: Vec<Commit>,
    pub total: u64,
}

impl PullRequestCommits {
    /// Every commit was read.
    pub fn complete(&self) -> bool {
        self.commits.len() as u64 >= self.total
    }
}

/// One pull request as the batch read it: the pull request, its issue side (who closed it) and
/// its commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestDetail {
    pub pull: PullRequest,
    pub issue: Issue,
    pub commits: PullRequestCommits,
}

/// What the batch read, object by object.
#[derive(Debug, Default)]
pub struct DetailAnswers {
    pub branch_pull_requests: BTreeMap<String, Result<Vec<PullRequestDetail>, GitHubError>>,
    pub pull_requests: BTreeMap<u64, Result<PullRequestDetail, GitHubError>>,
    pub commit_messages: BTreeMap<String, Result<String, GitHubError>>,
}

/// One object of a query, under its alias.
#[derive(Debug, Clone)]
enum Asked {
    Branch(String),
    Pull(u64),
    Message(String),
}

impl GitHubClient {
    /// Reads `batch` in as few requests as [`OBJECTS_PER_QUERY`] allows, one after another.
    pub async fn read_detail_batch(&self, batch: &DetailBatch) -> DetailAnswers {
        let asked = batch.objects();
        let mut answers = DetailAnswers::default();
        for chunk in asked.chunks(OBJECTS_PER_QUERY) {
            let (query, variables) = detail_query(self.repository(), chunk);
            match self.graphql_read("details", &query, variables).await {
                Ok(answer) => self.take_answer(chunk, &answer, &mut answers),
                Err(error) => {
                    for object in chunk {
                        answers.put_error(object, error.clone());
                    }
                }
            }
        }
        answers
    }
}

/// The queries (text and variables) that read `batch` of `repository` (`owner/name`), one per
/// [`OBJECTS_PER_QUERY`] objects.
pub fn detail_queries(repository: &str, batch: &DetailBatch) -> Vec<(String, Value)> {
    batch
        .objects()
        .chunks(OBJECTS_PER_QUERY)
        .map(|chunk| detail_query(repository, chunk))
        .collect()
}

/// The variables `$owner` and `$name` of `repository` (`owner/name`) with their declarations,
/// which every batched query starts from.
pub(super) fn repository_variables(repository: &str) -> (Map<String, Value>, Vec<String>) {
    let (owner, name) = repository.split_once('/').unwrap_or((repository, ""));
    let mut variables = Map::new();
    variables.insert("owner".into(), json!(owner));
    variables.insert("name".into(), json!(name));
    let declarations = vec!["$owner: String!".to_string(), "$name: String!".to_string()];
    (variables, declarations)
}

/// The query text and variables for `objects`, aliased `o0`, `o1`, …; every value travels as a
/// variable, never inside the query text.
fn detail_query(repository: &str, objects: &[Asked]) -> (String, Value) {
    let (mut variables, mut declarations) = repository_variables(repository);
    let mut fields = Vec::new();
    for (index, object) in objects.iter().enumerate() {
        let alias = format!("o{index}");
        match object {
            Asked::Branch(branch) => {
                declarations.push(format!("${alias}: String!"));
                variables.insert(alias.clone(), json!(branch));
                fields.push(format!(
                        "{alias}: pullRequests(headRefName: ${alias}, first: {PULL_REQUESTS_PER_BRANCH}, orderBy: {{field: CREATED_AT, direction: DESC}}) {{ nodes {{ ...pull {COMMITS_SELECTION} }} }}"
                    ));
            }
            Asked::Pull(number) => {
                declarations.push(format!("${alias}: Int!"));
                variables.insert(alias.clone(), json!(number));
                fields.push(format!(
                    "{alias}: pullRequest(number: ${alias}) {{ ...pull {COMMITS_SELECTION} }}"
                ));
            }
            Asked::Message(sha) => {
                declarations.push(format!("${alias}: GitObjectID!"));
                variables.insert(alias.clone(), json!(sha));
                fields.push(format!(
                    "{alias}: object(oid: ${alias}) {{ ... on Commit {{ oid message }} }}"
                ));
            }
        }
    }
    // GitHub refuses a document with a fragment it does not use.
    let uses_fragment = objects
        .iter()
        .any(|object| !matches!(object, Asked::Message(_)));
    let query = format!(
        "query({}) {{ repository(owner: $owner, name: $name) {{ id {} }} }}{}",
        declarations.join(", "),
        fields.join(" "),
        if uses_fragment {
            format!(" {PULL_REQUEST_FRAGMENT}")
        } else {
            String::new()
        }
    );
    (query, Value::Object(variables))
}

impl GitHubClient {
    fn take_answer(&self, objects: &[Asked], answer: &GraphQlAnswer, into: &mut DetailAnswers) {
        let repository = answer
            .data
            .get("repository")
            .filter(|value| !value.is_null());
        if let Some(id) = repository
            .and_then(|repository| repository.get("id"))
            .and_then(Value::as_str)
        {
            self.note_repository_node_id(id);
        }
        for (index, object) in objects.iter().enumerate() {
            let alias = format!("o{index}");
            let failure = |detail: String| GitHubError::GraphQl {
                operation: format!("details {}", object.describe()),
                message: crate::core::text::bounded(&detail, 300),
            };
            let value = repository.and_then(|repository| repository.get(&alias));
            let problem = problem_of(&answer.problems, &alias);
            let result = match (value, problem) {
                (_, Some(problem)) => Err(failure(problem.message.clone())),
                (None, None) if repository.is_none() => {
                    Err(failure(if answer.problems.is_empty() {
                        "the answer names no repository".to_string()
                    } else {
                        answer.message()
                    }))
                }
                (None, None) => Err(failure("the answer leaves it out".into())),
                (Some(value), None) => Ok(value),
            };
            let result =
                result.and_then(|value| object.read(value, self.repository()).map_err(failure));
            match result {
                Ok(read) => into.put_read(object, read),
                Err(error) => into.put_error(object, error),
            }
        }
    }
}

/// The error GitHub reported for `alias`, if any.
fn problem_of<'a>(problems: &'a [GraphQlProblem], alias: &str) -> Option<&'a GraphQlProblem> {
    problems
        .iter()
        .find(|problem| problem.path.iter().any(|segment| segment == alias))
}

/// One object's answer, decoded.
enum ReadObject {
    Branch(Vec<PullRequestDetail>),
    Pull(Box<PullRequestDetail>),
    Message(String),
}

impl Asked {
    fn describe(&self) -> String {
        match self {
            Asked::Branch(branch) => format!("pull requests of {branch}"),
            Asked::Pull(number) => format!("#{number}"),
            Asked::Message(sha) => format!("commit {}", sha.get(..7).unwrap_or(sha)),
        }
    }

    fn read(&self, value: &Value, repository: &str) -> Result<ReadObject, String> {
        match self {
            Asked::Branch(_) => {
                let nodes = value
                    .get("nodes")
                    .and_then(Value::as_array)
                    .ok_or("no pull request nodes")?;
                nodes
                    .iter()
                    .map(|node| pull_request_detail(node, repository))
                    .collect::<Result<Vec<_>, _>>()
                    .map(ReadObject::Branch)
            }
            Asked::Pull(_) if value.is_null() => Err("no such pull request".into()),
            Asked::Pull(_) => pull_request_detail(value, repository)
                .map(|detail| ReadObject::Pull(Box::new(detail))),
            Asked::Message(_) => value
                .get("message")
                .and_then(Value::as_str)
                .map(|message| ReadObject::Message(message.to_string()))
                .ok_or_else(|| "no such commit".to_string()),
        }
    }
}

impl DetailAnswers {
    fn put_error(&mut self, object: &Asked, error: GitHubError) {
        match object {
            Asked::Branch(branch) => {
                self.branch_pull_requests.insert(branch.clone(), Err(error));
            }
            Asked::Pull(number) => {
                self.pull_requests.insert(*number, Err(error));
            }
            Asked::Message(sha) => {
                self.commit_messages.insert(sha.clone(), Err(error));
            }
        }
    }

    fn put_read(&mut self, object: &Asked, read: ReadObject) {
        match (object, read) {
            (Asked::Branch(branch), ReadObject::Branch(pulls)) => {
                self.branch_pull_requests.insert(branch.clone(), Ok(pulls));
            }
            (Asked::Pull(number), ReadObject::Pull(pull)) => {
                self.pull_requests.insert(*number, Ok(*pull));
            }
            (Asked::Message(sha), ReadObject::Message(message)) => {
                self.commit_messages.insert(sha.clone(), Ok(message));
            }
            _ => unreachable!("each object is read as its own kind"),
        }
    }
}

fn text<'a>(value: &'a Value, field: &str) -> Result<&'a str, String> {
    value
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("no {field}"))
}

fn time(value: &Value, field: &str) -> Result<Option<DateTime<Utc>>, String> {
    match value.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => DateTime::parse_from_rfc3339(text)
            .map(|time| Some(time.with_timezone(&Utc)))
            .map_err(|_| format!("{field} is not a time")),
        Some(_) => Err(format!("{field} is not a time")),
    }
}

/// An actor's login as REST spells it: a GitHub App's carries `[bot]`.
fn login(actor: Option<&Value>) -> Option<Account> {
    let actor = actor.filter(|actor| !actor.is_null())?;
    let login = actor.get("login").and_then(Value::as_str)?;
    let is_app = actor.get("__typename").and_then(Value::as_str) == Some("Bot");
    Some(Account {
        login: if is_app && !login.ends_with("[bot]") {
            format!("{login}[bot]")
        } else {
            login.to_string()
        },
    })
}

fn pull_request_detail(node: &Value, repository: &str) -> Result<PullRequestDetail, String> {
    let (pull, issue) = pull_request_and_issue(node, repository)?;
    let commits = node.get("commits").ok_or("no commits")?;
    let total = commits
        .get("totalCount")
        .and_then(Value::as_u64)
        .ok_or("no commit count")?;
    let commits = commits
        .get("nodes")
        .and_then(Value::as_array)
        .ok_or("no commit nodes")?
        .iter()
        .map(|node| {
            let commit = node.get("commit").ok_or("no commit")?;
            Ok(Commit {
                sha: text(commit, "oid")?.to_string(),
                author: login(commit.pointer("/author/user")),
                committer: login(commit.pointer("/committer/user")),
                parents: Vec::new(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(PullRequestDetail {
        pull,
        issue,
        commits: PullRequestCommits { commits, total },
    })
}

/// A pull request node read with [`PULL_REQUEST_FRAGMENT`], as REST gives the pull request and
/// its issue side (who closed it).
pub(super) fn pull_request_and_issue(
    node: &Value,
    repository: &str,
) -> Result<(PullRequest, Issue), String> {
    let number = node
        .get("number")
        .and_then(Value::as_u64)
        .ok_or("no number")?;
    // GraphQL spells the state in capitals and tells a merged pull request apart; REST calls
    // a merged one closed.
    let state = match text(node, "state")? {
        "OPEN" => PullRequestState::Open,
        "CLOSED" | "MERGED" => PullRequestState::Closed,
        other => PullRequestState::Other(other.to_string()),
    };
    let open = state.is_open();
    let merged_at = time(node, "mergedAt")?;
    let labels: Vec<Label> = node
        .pointer("/labels/nodes")
        .and_then(Value::as_array)
        .ok_or("no labels")?
        .iter()
        .filter_map(|label| label.get("name").and_then(Value::as_str))
        .map(|name| Label {
            name: name.to_string(),
        })
        .collect();
    let head_repository = node
        .pointer("/headRepository/nameWithOwner")
        .and_then(Value::as_str)
        .map(|name| RepositoryName {
            full_name: name.to_string(),
        });
    let pull = PullRequest {
        number,
        node_id: text(node, "id")?.to_string(),
        state,
        draft: node
            .get("isDraft")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        title: node
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        // The detail query reads no description; `finish` reads it by REST before it writes one.
        body: None,
        user: login(node.get("author")),
        head: PullRequestBranch {
            branch: text(node, "headRefName")?.to_string(),
            sha: text(node, "headRefOid")?.to_string(),
            repo: head_repository,
        },
        base: PullRequestBranch {
            branch: text(node, "baseRefName")?.to_string(),
            sha: text(node, "baseRefOid")?.to_string(),
            repo: Some(RepositoryName {
                full_name: repository.to_string(),
            }),
        },
        labels: labels.clone(),
        created_at: time(node, "createdAt")?.ok_or("no createdAt")?,
        updated_at: time(node, "updatedAt")?.ok_or("no updatedAt")?,
        closed_at: time(node, "closedAt")?,
        merged_at,
    };
    let closer = node
        .pointer("/timelineItems/nodes")
        .and_then(Value::as_array)
        .and_then(|events| events.last())
        .and_then(|event| login(event.get("actor")));
    let issue = Issue {
        number,
        state: pull.state.clone(),
        closed_by: if open { None } else { closer },
        labels,
        pull_request: Some(IssuePullRequest { merged_at }),
    };
    Ok((pull, issue))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pull_node() -> Value {
        json!({
            "number": 7, "id": "PR_7", "title": "t", "state": "CLOSED", "isDraft": true,
            "merged": false, "mergedAt": null, "createdAt": "2026-01-01T00:00:00Z",
            "updatedAt": "2026-01-02T00:00:00Z", "closedAt": "2026-01-02T00:00:00Z",
            "headRefName": "klaud/auto-a", "headRefOid": "a".repeat(40),
            "baseRefName": "main", "baseRefOid": "b".repeat(40), "isCrossRepository": false,
            "headRepository": {"nameWithOwner": "acme/widgets"},
            "author": {"__typename": "Bot", "login": "klaud"},
            "labels": {"nodes": [{"name": "klaud-error"}]},
            "timelineItems": {"nodes": [{"actor": {"__typename": "User", "login": "ada"}}]},
            "commits": {"totalCount": 2, "nodes": [
                {"commit": {"oid": "c".repeat(40), "author": {"user": {"login": "ada"}}, "committer": {"user": null}}}
            ]}
        })
    }

    #[test]
    fn a_pull_request_reads_as_rest_would_give_it() {
        let detail = pull_request_detail(&pull_node(), "acme/widgets").unwrap();
        assert_eq!(detail.pull.state, PullRequestState::Closed);
        assert_eq!(detail.pull.user.unwrap().login, "klaud[bot]");
        assert_eq!(detail.issue.closed_by.unwrap().login, "ada");
        assert_eq!(detail.pull.head.repo.unwrap().full_name, "acme/widgets");
        assert!(!detail.commits.complete());
        assert_eq!(detail.commits.commits[0].committer, None);
    }

    #[test]
    fn an_open_pull_request_names_no_closer() {
        let mut node = pull_node();
        node["state"] = json!("OPEN");
        let detail = pull_request_detail(&node, "acme/widgets").unwrap();
        assert_eq!(detail.issue.closed_by, None);
        assert_eq!(detail.issue.state, PullRequestState::Open);
    }

    #[test]
    fn a_missing_field_is_an_error_not_a_default() {
        let mut node = pull_node();
        node.as_object_mut().unwrap().remove("headRefOid");
        assert_eq!(
            pull_request_detail(&node, "acme/widgets").unwrap_err(),
            "no headRefOid"
        );
    }
}
