//! The fake's GraphQL objects and their fields, read from the repository state. Each field of
//! the schema subset that klaud's queries reach is resolved here as GitHub answers it:
//!
//! - `Repository.id` is the same node id REST gives as `node_id`;
//! - `PullRequest.state` is `MERGED` for a merged pull request, `baseRefOid` and the commits are
//!   what REST's `GET /pulls/{n}` and `/pulls/{n}/commits` give (at most 250 commits);
//! - an `Actor` is a `Bot` when its REST login ends in `[bot]`, and its GraphQL `login` lacks
//!   that suffix; `GitActor.user` is typed `User`, so a commit by a GitHub App has no user;
//! - the timeline holds the pull request's commits and, once closed (merged ones too), a
//!   `ClosedEvent` whose actor is who closed it;
//! - connections need `first` or `last` (at most 100), as on GitHub;
//! - `Repository.issue` resolves issues that are not pull requests (a pull request's number is
//!   GitHub's `NOT_FOUND`); `Issue.body` is `""` for a body GitHub holds as null;
//! - `Repository.issues` lists only issues, never pull requests (unlike REST's listing), by
//!   `states` and `labels` (any of them), oldest first by default, with cursors; an issue's
//!   `timelineItems` holds its `LabeledEvent`s and `UnlabeledEvent`s with their actors and, once
//!   closed, a `ClosedEvent`, oldest first, with cursors;
//! - `userContentEdits` lists the body's revisions newest first (the original, by the author at
//!   creation time, last; oldest first with `edits_listed_oldest_first`), none for a body never
//!   edited; it alone takes cursors
//!   (`after`/`before`, from its `pageInfo`) and an unknown cursor is `INVALID_CURSOR_ARGUMENTS`;
//! - `viewer` is the account of the request's token, its `databaseId` the REST `id`.

use serde_json::{Map, Value, json};

use super::super::clock::Timestamp;
use super::super::prng::user_id;
use super::super::render;
use super::super::state::{BodyEdit, LabelEvent, PullState, RepoState};
use super::resolve_issues::{issue_timeline, issues};

/// Commits GitHub lists of one pull request.
const MAX_PULL_COMMITS: usize = 250;
/// The largest `first` or `last` a connection accepts.
const MAX_PAGE: i64 = 100;

/// An object of the fake's GraphQL graph.
#[derive(Clone, Debug)]
pub enum Obj {
    /// The query root, asked by the token of `viewer`'s login.
    Query {
        viewer: String,
    },
    Repository {
        full_name: String,
    },
    PullRequestConnection {
        numbers: Vec<u64>,
        total: usize,
    },
    PullRequest(u64),
    /// An issue that is not a pull request.
    Issue(u64),
    /// A page of the repository's issues.
    IssueConnection {
        numbers: Vec<u64>,
        total: usize,
        page_info: PageInfo,
    },
    /// A page of an issue's timeline.
    IssueTimelineConnection {
        items: Vec<Obj>,
        total: usize,
        page_info: PageInfo,
    },
    /// A label added to (`LabeledEvent`) or removed from (`UnlabeledEvent`) an issue.
    LabelEvent(LabelEvent),
    /// A page of a body's revisions, newest first.
    UserContentEditConnection {
        edits: Vec<BodyEdit>,
        total: usize,
        page_info: PageInfo,
    },
    UserContentEdit(BodyEdit),
    PageInfo(PageInfo),
    /// An account by its REST login: a `Bot` when it ends in `[bot]`, else a `User`.
    Actor(String),
    LabelConnection {
        names: Vec<String>,
        total: usize,
    },
    Label(String),
    TimelineConnection {
        items: Vec<Obj>,
        total: usize,
    },
    ClosedEvent {
        actor: Option<String>,
        at: Timestamp,
    },
    PullRequestCommitConnection {
        shas: Vec<String>,
        total: usize,
    },
    PullRequestCommit(String),
    Commit(String),
    /// The checks on commit `sha` of a pull request's head.
    StatusCheckRollup(String),
    /// A page of a rollup's checks.
    CheckConnection {
        checks: Vec<Obj>,
        total: usize,
        page_info: PageInfo,
    },
    /// A GitHub Actions job as a check run.
    CheckRun {
        run_id: u64,
        job_id: u64,
    },
    /// The latest commit status of a context, by its id.
    StatusContext(u64),
    /// A workflow run's check suite.
    CheckSuite(u64),
    WorkflowRun(u64),
    WorkflowRunFile(u64),
    GitActor {
        login: Option<String>,
    },
    /// A mutation's payload.
    Payload {
        type_name: &'static str,
        client_mutation_id: Value,
        pull_request: Option<u64>,
    },
}

impl Obj {
    /// The object's GraphQL type.
    pub fn type_name(&self) -> &str {
        match self {
            Obj::Query { .. } => "Query",
            Obj::Repository { .. } => "Repository",
            Obj::PullRequestConnection { .. } => "PullRequestConnection",
            Obj::PullRequest(_) => "PullRequest",
            Obj::Issue(_) => "Issue",
            Obj::IssueConnection { .. } => "IssueConnection",
            Obj::IssueTimelineConnection { .. } => "IssueTimelineItemsConnection",
            Obj::LabelEvent(event) if event.labeled => "LabeledEvent",
            Obj::LabelEvent(_) => "UnlabeledEvent",
            Obj::UserContentEditConnection { .. } => "UserContentEditConnection",
            Obj::UserContentEdit(_) => "UserContentEdit",
            Obj::PageInfo(_) => "PageInfo",
            Obj::Actor(login) if login.ends_with("[bot]") => "Bot",
            Obj::Actor(_) => "User",
            Obj::LabelConnection { .. } => "LabelConnection",
            Obj::Label(_) => "Label",
            Obj::TimelineConnection { .. } => "PullRequestTimelineItemsConnection",
            Obj::ClosedEvent { .. } => "ClosedEvent",
            Obj::PullRequestCommitConnection { .. } => "PullRequestCommitConnection",
            Obj::PullRequestCommit(_) => "PullRequestCommit",
            Obj::Commit(_) => "Commit",
            Obj::StatusCheckRollup(_) => "StatusCheckRollup",
            Obj::CheckConnection { .. } => "StatusCheckRollupContextConnection",
            Obj::CheckRun { .. } => "CheckRun",
            Obj::StatusContext(_) => "StatusContext",
            Obj::CheckSuite(_) => "CheckSuite",
            Obj::WorkflowRun(_) => "WorkflowRun",
            Obj::WorkflowRunFile(_) => "WorkflowRunFile",
            Obj::GitActor { .. } => "GitActor",
            Obj::Payload { type_name, .. } => type_name,
        }
    }
}

/// A connection page's `pageInfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageInfo {
    pub start_cursor: Option<String>,
    pub end_cursor: Option<String>,
    pub has_next_page: bool,
    pub has_previous_page: bool,
}

/// What a field resolved to, before it is completed against the field's type.
#[derive(Clone, Debug)]
pub enum Resolved {
    Null,
    Leaf(Value),
    Object(Obj),
    List(Vec<Resolved>),
}

impl Resolved {
    fn leaf(value: impl serde::Serialize) -> Self {
        Resolved::Leaf(json!(value))
    }

    fn optional_leaf<T: serde::Serialize>(value: Option<T>) -> Self {
        value.map(Resolved::leaf).unwrap_or(Resolved::Null)
    }

    fn objects(objects: impl IntoIterator<Item = Obj>) -> Self {
        Resolved::List(objects.into_iter().map(Resolved::Object).collect())
    }
}

/// A field that could not be resolved: its value is null and the answer carries the error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// GitHub's `type` (`NOT_FOUND`, `UNPROCESSABLE`, `EXCESSIVE_PAGINATION`, …).
    pub kind: Option<&'static str>,
    pub message: String,
}

impl FieldError {
    pub fn new(kind: &'static str, message: impl Into<String>) -> Self {
        FieldError {
            kind: Some(kind),
            message: message.into(),
        }
    }
}

pub type FieldResult = Result<Resolved, FieldError>;

/// The repository's GraphQL node id, which REST gives as `node_id`.
pub fn repository_node_id(state: &RepoState, full_name: &str) -> String {
    let id = if full_name == state.full_name() {
        state.repository_id
    } else {
        user_id(full_name)
    };
    render::repository_node_id(id)
}

/// An account's login as GraphQL gives it: a GitHub App's without `[bot]`.
pub fn graphql_login(login: &str) -> &str {
    login.strip_suffix("[bot]").unwrap_or(login)
}

pub(super) fn text<'a>(arguments: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    arguments.get(name).and_then(Value::as_str)
}

/// Resolves `field` of `object` (its arguments coerced, defaults applied).
pub fn field(
    state: &RepoState,
    object: &Obj,
    field: &str,
    arguments: &Map<String, Value>,
) -> FieldResult {
    let unresolved = || {
        Err(FieldError {
            kind: None,
            message: format!(
                "the fake GitHub does not resolve {}.{field}",
                object.type_name()
            ),
        })
    };
    match object {
        Obj::Query { viewer } => match field {
            "repository" => repository(state, arguments),
            "viewer" => Ok(Resolved::Object(Obj::Actor(viewer.clone()))),
            _ => unresolved(),
        },
        Obj::Repository { full_name } => {
            let this = *full_name == state.full_name();
            match field {
                "id" => Ok(Resolved::leaf(repository_node_id(state, full_name))),
                "nameWithOwner" => Ok(Resolved::leaf(full_name)),
                "pullRequests" if this => pull_requests(state, arguments),
                "issues" if this => issues(state, arguments),
                "issues" => Ok(Resolved::Object(Obj::IssueConnection {
                    numbers: Vec::new(),
                    total: 0,
                    page_info: PageInfo {
                        start_cursor: None,
                        end_cursor: None,
                        has_next_page: false,
                        has_previous_page: false,
                    },
                })),
                "pullRequests" => Ok(Resolved::Object(Obj::PullRequestConnection {
                    numbers: Vec::new(),
                    total: 0,
                })),
                "pullRequest" => {
                    let number = arguments.get("number").and_then(Value::as_u64);
                    match number.filter(|number| this && state.pulls.contains_key(number)) {
                        Some(number) => Ok(Resolved::Object(Obj::PullRequest(number))),
                        None => Err(FieldError::new(
                            "NOT_FOUND",
                            format!(
                                "Could not resolve to a PullRequest with the number of {}.",
                                arguments.get("number").unwrap_or(&Value::Null)
                            ),
                        )),
                    }
                }
                "issue" => {
                    let number = arguments.get("number").and_then(Value::as_u64);
                    match number.filter(|number| this && state.issues.contains_key(number)) {
                        Some(number) => Ok(Resolved::Object(Obj::Issue(number))),
                        None => Err(FieldError::new(
                            "NOT_FOUND",
                            format!(
                                "Could not resolve to an Issue with the number of {}.",
                                arguments.get("number").unwrap_or(&Value::Null)
                            ),
                        )),
                    }
                }
                "object" if this => Ok(git_object(state, arguments)),
                "object" => Ok(Resolved::Null),
                _ => unresolved(),
            }
        }
        Obj::PullRequestConnection { numbers, total } => match field {
            "nodes" => Ok(Resolved::objects(
                numbers.iter().copied().map(Obj::PullRequest),
            )),
            "totalCount" => Ok(Resolved::leaf(total)),
            _ => unresolved(),
        },
        Obj::PullRequest(number) => pull_request_field(state, *number, field, arguments),
        Obj::Issue(number) => {
            let Some(issue) = state.issues.get(number) else {
                return Ok(Resolved::Null);
            };
            match field {
                "number" => Ok(Resolved::leaf(issue.number)),
                "title" => Ok(Resolved::leaf(&issue.title)),
                "body" => Ok(Resolved::leaf(issue.body.clone().unwrap_or_default())),
                "url" => Ok(Resolved::leaf(format!(
                    "{}/{}/issues/{}",
                    render::HTML_BASE,
                    state.full_name(),
                    issue.number
                ))),
                "createdAt" => Ok(Resolved::leaf(issue.created_at)),
                "locked" => Ok(Resolved::leaf(issue.lock.is_some())),
                "author" => Ok(Resolved::Object(Obj::Actor(issue.author.clone()))),
                "labels" => label_connection(state, issue.labels.clone(), arguments),
                "timelineItems" => issue_timeline(state, *number, arguments),
                "userContentEdits" => user_content_edits(state, *number, arguments),
                _ => unresolved(),
            }
        }
        Obj::IssueConnection {
            numbers,
            total,
            page_info,
        } => match field {
            "nodes" => Ok(Resolved::objects(numbers.iter().copied().map(Obj::Issue))),
            "totalCount" => Ok(Resolved::leaf(total)),
            "pageInfo" => Ok(Resolved::Object(Obj::PageInfo(page_info.clone()))),
            _ => unresolved(),
        },
        Obj::IssueTimelineConnection {
            items,
            total,
            page_info,
        } => match field {
            "nodes" => Ok(Resolved::objects(items.iter().cloned())),
            "totalCount" => Ok(Resolved::leaf(total)),
            "pageInfo" => Ok(Resolved::Object(Obj::PageInfo(page_info.clone()))),
            _ => unresolved(),
        },
        Obj::LabelEvent(event) => match field {
            "actor" => Ok(event
                .actor
                .clone()
                .map(|login| Resolved::Object(Obj::Actor(login)))
                .unwrap_or(Resolved::Null)),
            "createdAt" => Ok(Resolved::leaf(event.at)),
            "label" => Ok(Resolved::Object(Obj::Label(event.label.clone()))),
            _ => unresolved(),
        },
        Obj::UserContentEditConnection {
            edits,
            total,
            page_info,
        } => match field {
            "nodes" => Ok(Resolved::objects(
                edits.iter().cloned().map(Obj::UserContentEdit),
            )),
            "totalCount" => Ok(Resolved::leaf(total)),
            "pageInfo" => Ok(Resolved::Object(Obj::PageInfo(page_info.clone()))),
            _ => unresolved(),
        },
        Obj::UserContentEdit(edit) => match field {
            "editedAt" => Ok(Resolved::leaf(edit.edited_at)),
            "editor" => Ok(edit
                .editor
                .clone()
                .map(|login| Resolved::Object(Obj::Actor(login)))
                .unwrap_or(Resolved::Null)),
            "diff" => Ok(Resolved::optional_leaf(edit.body.clone())),
            _ => unresolved(),
        },
        Obj::PageInfo(info) => match field {
            "startCursor" => Ok(Resolved::optional_leaf(info.start_cursor.clone())),
            "endCursor" => Ok(Resolved::optional_leaf(info.end_cursor.clone())),
            "hasNextPage" => Ok(Resolved::leaf(info.has_next_page)),
            "hasPreviousPage" => Ok(Resolved::leaf(info.has_previous_page)),
            _ => unresolved(),
        },
        Obj::Actor(login) => match field {
            "login" => Ok(Resolved::leaf(graphql_login(login))),
            // The account's REST `id`.
            "databaseId" => Ok(Resolved::leaf(user_id(login))),
            _ => unresolved(),
        },
        Obj::LabelConnection { names, total } => match field {
            "nodes" => Ok(Resolved::objects(names.iter().cloned().map(Obj::Label))),
            "totalCount" => Ok(Resolved::leaf(total)),
            _ => unresolved(),
        },
        Obj::Label(name) => match field {
            "name" => Ok(Resolved::leaf(name)),
            _ => unresolved(),
        },
        Obj::TimelineConnection { items, total } => match field {
            "nodes" => Ok(Resolved::objects(items.iter().cloned())),
            "totalCount" => Ok(Resolved::leaf(total)),
            _ => unresolved(),
        },
        Obj::ClosedEvent { actor, at } => match field {
            "actor" => Ok(actor
                .clone()
                .map(|login| Resolved::Object(Obj::Actor(login)))
                .unwrap_or(Resolved::Null)),
            "createdAt" => Ok(Resolved::leaf(at)),
            _ => unresolved(),
        },
        Obj::PullRequestCommitConnection { shas, total } => match field {
            "nodes" => Ok(Resolved::objects(
                shas.iter().cloned().map(Obj::PullRequestCommit),
            )),
            "totalCount" => Ok(Resolved::leaf(total)),
            _ => unresolved(),
        },
        Obj::PullRequestCommit(sha) => match field {
            "commit" => Ok(Resolved::Object(Obj::Commit(sha.clone()))),
            _ => unresolved(),
        },
        Obj::Commit(sha) => {
            let Some(commit) = state.commits.get(sha) else {
                return Ok(Resolved::Null);
            };
            match field {
                "oid" => Ok(Resolved::leaf(&commit.sha)),
                "message" => Ok(Resolved::leaf(&commit.message)),
                "author" => Ok(Resolved::Object(Obj::GitActor {
                    login: commit.author_login.clone(),
                })),
                "committer" => Ok(Resolved::Object(Obj::GitActor {
                    login: commit.committer_login.clone(),
                })),
                _ => unresolved(),
            }
        }
        Obj::StatusCheckRollup(_)
        | Obj::CheckConnection { .. }
        | Obj::CheckRun { .. }
        | Obj::StatusContext(_)
        | Obj::CheckSuite(_)
        | Obj::WorkflowRun(_)
        | Obj::WorkflowRunFile(_) => super::checks::field(state, object, field, arguments),
        Obj::GitActor { login } => match field {
            // `user` is a `User`: a GitHub App's account (a `Bot`) is none.
            "user" => Ok(login
                .clone()
                .filter(|login| !login.ends_with("[bot]"))
                .map(|login| Resolved::Object(Obj::Actor(login)))
                .unwrap_or(Resolved::Null)),
            _ => unresolved(),
        },
        Obj::Payload {
            client_mutation_id,
            pull_request,
            ..
        } => match field {
            "clientMutationId" => Ok(Resolved::Leaf(client_mutation_id.clone())),
            "pullRequest" => Ok(pull_request
                .map(|number| Resolved::Object(Obj::PullRequest(number)))
                .unwrap_or(Resolved::Null)),
            _ => unresolved(),
        },
    }
}

fn repository(state: &RepoState, arguments: &Map<String, Value>) -> FieldResult {
    let owner = text(arguments, "owner").unwrap_or_default();
    let name = text(arguments, "name").unwrap_or_default();
    if owner.eq_ignore_ascii_case(&state.owner) && name.eq_ignore_ascii_case(&state.name) {
        Ok(Resolved::Object(Obj::Repository {
            full_name: state.full_name(),
        }))
    } else {
        Err(FieldError::new(
            "NOT_FOUND",
            format!("Could not resolve to a Repository with the name '{owner}/{name}'."),
        ))
    }
}

/// `first`/`last` applied to `items`, as GitHub's connections take them (no cursors: this
/// fake's connections give none).
pub(super) fn page<T>(
    mut items: Vec<T>,
    arguments: &Map<String, Value>,
    connection: &str,
) -> Result<(Vec<T>, usize), FieldError> {
    for cursor in ["after", "before"] {
        if let Some(value) = arguments.get(cursor).filter(|value| !value.is_null()) {
            return Err(FieldError::new(
                "INVALID_CURSOR_ARGUMENTS",
                format!(
                    "`{}` does not appear to be a valid cursor.",
                    value.as_str().unwrap_or_default()
                ),
            ));
        }
    }
    let first = arguments.get("first").and_then(Value::as_i64);
    let last = arguments.get("last").and_then(Value::as_i64);
    if first.is_none() && last.is_none() {
        return Err(FieldError::new(
            "MISSING_PAGINATION_BOUNDARIES",
            format!(
                "You must provide a `first` or `last` value to properly paginate the `{connection}` connection."
            ),
        ));
    }
    for (name, value) in [("first", first), ("last", last)] {
        match value {
            Some(value) if value > MAX_PAGE => {
                return Err(FieldError::new(
                    "EXCESSIVE_PAGINATION",
                    format!(
                        "Requesting {value} records on the `{connection}` connection exceeds the `{name}` limit of {MAX_PAGE} records."
                    ),
                ));
            }
            Some(value) if value < 0 => {
                return Err(FieldError {
                    kind: None,
                    message: format!(
                        "`{name}` on the `{connection}` connection cannot be less than zero."
                    ),
                });
            }
            _ => {}
        }
    }
    let total = items.len();
    if let Some(first) = first {
        items.truncate(first as usize);
    }
    if let Some(last) = last {
        let skip = items.len().saturating_sub(last as usize);
        items.drain(..skip);
    }
    Ok((items, total))
}

/// A cursor of the `userContentEdits` connection: the position of an edit, newest first.
pub(super) fn edit_cursor(position: usize) -> String {
    format!("Y3Vyc29yOnYyOpK{position:08}")
}

pub(super) fn edit_position(cursor: &str) -> Option<usize> {
    cursor.strip_prefix("Y3Vyc29yOnYyOpK")?.parse().ok()
}

/// The revisions of issue `number`'s body, newest first, paged as a Relay connection:
/// `after`/`before` cut at a cursor, then `first` keeps the head and `last` the tail.
fn user_content_edits(
    state: &RepoState,
    number: u64,
    arguments: &Map<String, Value>,
) -> FieldResult {
    let mut edits: Vec<BodyEdit> = state.body_edits_of(number).to_vec();
    if !state.edits_listed_oldest_first {
        edits.reverse();
    }
    let total = edits.len();
    let cursor = |name: &str| -> Result<Option<usize>, FieldError> {
        match arguments.get(name).and_then(Value::as_str) {
            None => Ok(None),
            Some(text) => edit_position(text)
                .filter(|position| *position < total)
                .map(Some)
                .ok_or_else(|| {
                    FieldError::new(
                        "INVALID_CURSOR_ARGUMENTS",
                        format!("`{text}` does not appear to be a valid cursor."),
                    )
                }),
        }
    };
    let after = cursor("after")?;
    let before = cursor("before")?;
    let start = after.map_or(0, |after| after + 1);
    let end = before.unwrap_or(total).max(start);
    let window: Vec<(usize, BodyEdit)> = edits
        .into_iter()
        .enumerate()
        .skip(start)
        .take(end - start)
        .collect();
    let mut arguments = arguments.clone();
    arguments.remove("after");
    arguments.remove("before");
    let cut = window.len();
    let (window, _) = page(window, &arguments, "userContentEdits")?;
    let first = arguments
        .get("first")
        .and_then(Value::as_u64)
        .map(|n| n as usize);
    let last = arguments
        .get("last")
        .and_then(Value::as_u64)
        .map(|n| n as usize);
    let after_first = first.map_or(cut, |first| cut.min(first));
    let page_info = PageInfo {
        start_cursor: window.first().map(|(position, _)| edit_cursor(*position)),
        end_cursor: window.last().map(|(position, _)| edit_cursor(*position)),
        has_next_page: first.is_some_and(|first| cut > first) || end < total,
        has_previous_page: last.is_some_and(|last| after_first > last) || start > 0,
    };
    Ok(Resolved::Object(Obj::UserContentEditConnection {
        edits: window.into_iter().map(|(_, edit)| edit).collect(),
        total,
        page_info,
    }))
}

pub(super) fn strings(arguments: &Map<String, Value>, name: &str) -> Option<Vec<String>> {
    arguments.get(name)?.as_array().map(|items| {
        items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    })
}

/// `(field, direction)` of an `orderBy` argument.
pub(super) fn order(arguments: &Map<String, Value>) -> Option<(String, bool)> {
    let order = arguments.get("orderBy")?.as_object()?;
    let field = order.get("field")?.as_str()?.to_string();
    let descending = order.get("direction").and_then(Value::as_str) == Some("DESC");
    Some((field, descending))
}

fn graphql_state(state: PullState, merged: bool) -> &'static str {
    match (state, merged) {
        (PullState::Open, _) => "OPEN",
        (PullState::Closed, true) => "MERGED",
        (PullState::Closed, false) => "CLOSED",
    }
}

fn pull_requests(state: &RepoState, arguments: &Map<String, Value>) -> FieldResult {
    let states = strings(arguments, "states");
    let labels = strings(arguments, "labels");
    let head = text(arguments, "headRefName");
    let base = text(arguments, "baseRefName");
    let pulls: Vec<_> = state
        .pulls
        .values()
        .filter(|pull| {
            states.as_ref().is_none_or(|states| {
                states
                    .iter()
                    .any(|wanted| wanted == graphql_state(pull.state, pull.merged_at.is_some()))
            })
        })
        .filter(|pull| {
            labels
                .as_ref()
                .is_none_or(|labels| pull.labels.iter().any(|label| labels.contains(label)))
        })
        .filter(|pull| head.is_none_or(|head| pull.head_ref == head))
        .filter(|pull| base.is_none_or(|base| pull.base_ref == base))
        .collect();
    let entries = pulls
        .iter()
        .map(|pull| (pull.number, pull.created_at, pull.updated_at))
        .collect();
    let numbers = match order(arguments) {
        Some((field, descending)) => ordered_numbers(state, entries, &field, descending),
        None => entries.into_iter().map(|(number, _, _)| number).collect(),
    };
    let (numbers, total) = page(numbers, arguments, "pullRequests")?;
    Ok(Resolved::Object(Obj::PullRequestConnection {
        numbers,
        total,
    }))
}

/// An issue's or pull request's labels as a `LabelConnection`, in the order asked for.
fn label_connection(
    state: &RepoState,
    mut names: Vec<String>,
    arguments: &Map<String, Value>,
) -> FieldResult {
    let (order_field, descending) = order(arguments).unwrap_or(("CREATED_AT".into(), false));
    if order_field == "NAME" {
        names.sort();
    } else {
        names.sort_by_key(|name| state.labels.get(name).map(|label| label.id));
    }
    if descending {
        names.reverse();
    }
    let (names, total) = page(names, arguments, "labels")?;
    Ok(Resolved::Object(Obj::LabelConnection { names, total }))
}

fn git_object(state: &RepoState, arguments: &Map<String, Value>) -> Resolved {
    let sha = match (text(arguments, "oid"), text(arguments, "expression")) {
        (Some(oid), _) => Some(oid.to_string()).filter(|oid| state.commits.contains_key(oid)),
        (None, Some(expression)) => state.resolve_commitish(expression),
        (None, None) => None,
    };
    sha.filter(|sha| state.commits.contains_key(sha))
        .map(|sha| Resolved::Object(Obj::Commit(sha)))
        .unwrap_or(Resolved::Null)
}

/// Issue or pull request numbers (with their creation and update times) in the order of an
/// `orderBy` field — `CREATED_AT`, `UPDATED_AT` or `COMMENTS` —, ties by number, `DESC`
/// reversed.
pub(super) fn ordered_numbers(
    state: &RepoState,
    mut entries: Vec<(u64, Timestamp, Timestamp)>,
    field: &str,
    descending: bool,
) -> Vec<u64> {
    let comments = |number: u64| {
        state
            .comments
            .values()
            .filter(|comment| comment.issue_number == number)
            .count() as i64
    };
    entries.sort_by_key(|(number, created, updated)| {
        let key = match field {
            "UPDATED_AT" => updated.0,
            "COMMENTS" => comments(*number),
            _ => created.0,
        };
        (key, *number)
    });
    if descending {
        entries.reverse();
    }
    entries.into_iter().map(|(number, _, _)| number).collect()
}

/// A timeline's items (time, `itemTypes` word, item) in time order, filtered as GitHub's
/// `timelineItems` arguments ask: `itemTypes`, `since`, then `skip`.
pub(super) fn timeline_items(
    mut items: Vec<(Timestamp, &str, Obj)>,
    arguments: &Map<String, Value>,
) -> Vec<Obj> {
    items.sort_by_key(|(at, _, _)| *at);
    let kinds = strings(arguments, "itemTypes");
    let since = text(arguments, "since").and_then(Timestamp::parse);
    let skip = arguments.get("skip").and_then(Value::as_u64).unwrap_or(0) as usize;
    items
        .into_iter()
        .filter(|(_, kind, _)| {
            kinds
                .as_ref()
                .is_none_or(|kinds| kinds.iter().any(|wanted| wanted == kind))
        })
        .filter(|(at, _, _)| since.is_none_or(|since| *at >= since))
        .skip(skip)
        .map(|(_, _, item)| item)
        .collect()
}

/// The commits of a pull request, as REST lists them.
fn pull_commits(state: &RepoState, number: u64) -> Vec<String> {
    let pull = &state.pulls[&number];
    let base = state.branch_sha(&pull.base_ref);
    let (commits, _) = state.commits_between(base, &pull.head_sha);
    commits
        .iter()
        .take(MAX_PULL_COMMITS)
        .map(|commit| commit.sha.clone())
        .collect()
}

fn pull_request_field(
    state: &RepoState,
    number: u64,
    field: &str,
    arguments: &Map<String, Value>,
) -> FieldResult {
    let Some(pull) = state.pulls.get(&number) else {
        return Ok(Resolved::Null);
    };
    let full_name = state.full_name();
    Ok(match field {
        "number" => Resolved::leaf(pull.number),
        "id" => Resolved::leaf(render::pull_node_id(pull.id)),
        "title" => Resolved::leaf(&pull.title),
        "state" => Resolved::leaf(graphql_state(pull.state, pull.merged_at.is_some())),
        "isDraft" => Resolved::leaf(pull.draft),
        "merged" => Resolved::leaf(pull.merged_at.is_some()),
        "mergedAt" => Resolved::optional_leaf(pull.merged_at),
        "createdAt" => Resolved::leaf(pull.created_at),
        "updatedAt" => Resolved::leaf(pull.updated_at),
        "closedAt" => Resolved::optional_leaf(pull.closed_at),
        "headRefName" => Resolved::leaf(&pull.head_ref),
        "headRefOid" => Resolved::leaf(&pull.head_sha),
        "baseRefName" => Resolved::leaf(&pull.base_ref),
        "baseRefOid" => Resolved::leaf(state.branch_sha(&pull.base_ref).unwrap_or_default()),
        "isCrossRepository" => Resolved::leaf(pull.head_repo.as_deref() != Some(&full_name)),
        "headRepository" => pull
            .head_repo
            .clone()
            .map(|full_name| Resolved::Object(Obj::Repository { full_name }))
            .unwrap_or(Resolved::Null),
        "author" => Resolved::Object(Obj::Actor(pull.author.clone())),
        "labels" => label_connection(state, pull.labels.clone(), arguments)?,
        "timelineItems" => {
            let mut items: Vec<(Timestamp, &str, Obj)> = pull_commits(state, number)
                .into_iter()
                .map(|sha| {
                    let at = state.commits[&sha].committer.date;
                    (at, "PULL_REQUEST_COMMIT", Obj::PullRequestCommit(sha))
                })
                .collect();
            if pull.state == PullState::Closed
                && let Some(at) = pull.closed_at
            {
                let actor = pull.closed_by.clone();
                items.push((at, "CLOSED_EVENT", Obj::ClosedEvent { actor, at }));
            }
            let items = timeline_items(items, arguments);
            let (items, total) = page(items, arguments, "timelineItems")?;
            Resolved::Object(Obj::TimelineConnection { items, total })
        }
        "mergeable" => Resolved::leaf(pull.mergeable_word()),
        "mergeStateStatus" => Resolved::leaf(pull.merge_state_status()),
        "statusCheckRollup" => super::checks::rollup(state, &pull.head_sha),
        "commits" => {
            let (shas, total) = page(pull_commits(state, number), arguments, "commits")?;
            Resolved::Object(Obj::PullRequestCommitConnection { shas, total })
        }
        _ => {
            return Err(FieldError {
                kind: None,
                message: format!("the fake GitHub does not resolve PullRequest.{field}"),
            });
        }
    })
}
