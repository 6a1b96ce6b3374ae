//! Issues and the issue side of pull requests: creating and listing issues (the listing holds
//! pull requests too, with their `pull_request` key), `GET/PATCH /issues/{n}` for either (with
//! `closed_by`, `state_reason`, and every change of the body recorded as a revision), locking
//! and unlocking the conversation, an issue's labels, and issue comments.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::Uri;
use axum::routing::{delete, get, patch, put};
use serde::Deserialize;
use serde_json::{Value, json};

use super::builder::IssueSpec;
use super::clock::Timestamp;
use super::errors::{
    ApiError, ApiResult, created_response, docs, empty_response, json_response, parse_body,
};
use super::pagination::{QueryParams, page_of, rendered_page_of};
use super::render;
use super::routes_pulls::{Params, change_open_state, number_param};
use super::server::{RequestContext, Shared};
use super::state::{Lock, PullState, RepoState};

pub fn routes() -> Router<Shared> {
    Router::new()
        .route(
            "/repos/{owner}/{repo}/issues",
            get(list_issues).post(create_issue),
        )
        .route(
            "/repos/{owner}/{repo}/issues/{number}",
            get(get_issue).patch(update_issue),
        )
        .route(
            "/repos/{owner}/{repo}/issues/{number}/lock",
            put(lock_issue).delete(unlock_issue),
        )
        .route(
            "/repos/{owner}/{repo}/issues/{number}/labels",
            get(list_labels)
                .post(add_labels)
                .put(replace_labels)
                .delete(remove_all_labels),
        )
        .route(
            "/repos/{owner}/{repo}/issues/{number}/labels/{name}",
            delete(remove_label),
        )
        .route(
            "/repos/{owner}/{repo}/issues/{number}/comments",
            get(list_comments).post(create_comment),
        )
        .route(
            "/repos/{owner}/{repo}/issues/comments/{id}",
            patch(update_comment)
                .get(get_comment)
                .delete(delete_comment),
        )
}

/// Issue or pull request `number` as `GET /issues/{n}` answers it.
fn issue_answer(state: &RepoState, number: u64, api: &str) -> Option<Value> {
    match (state.pulls.get(&number), state.issues.get(&number)) {
        (Some(pull), _) => Some(render::issue(state, pull, api)),
        (None, Some(issue)) => Some(render::real_issue(state, issue, api)),
        (None, None) => None,
    }
}

/// 404 unless `number` is an issue or a pull request.
fn find_issue(state: &RepoState, number: u64, doc: &'static str) -> Result<(), ApiError> {
    if state.has_issue_number(number) {
        Ok(())
    } else {
        Err(ApiError::not_found(doc))
    }
}

async fn get_issue(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
) -> ApiResult {
    let state = shared.repo();
    let number = number_param(&params, "number")?;
    issue_answer(&state, number, &context.api)
        .map(|answer| json_response(200, &answer))
        .ok_or_else(|| ApiError::not_found(docs::ISSUES))
}

/// `GET /repos/{owner}/{repo}/issues`: issues and pull requests (with their `pull_request`
/// key), newest first unless `direction=asc`, filtered by `state` (open by default), `labels`
/// (every one of a comma list) and `creator`.
async fn list_issues(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    uri: Uri,
) -> ApiResult {
    let query = QueryParams::parse(uri.query());
    let wanted_state = query.filter("state").unwrap_or("open");
    if !matches!(wanted_state, "open" | "closed" | "all") {
        return Err(ApiError::validation_failed(
            json!({"resource": "Issue", "field": "state", "code": "invalid"}),
            docs::ISSUES,
        ));
    }
    let labels: Vec<String> = query
        .filter("labels")
        .map(|labels| {
            labels
                .split(',')
                .map(str::trim)
                .filter(|label| !label.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let creator = query.filter("creator");
    let ascending = query.filter("direction") == Some("asc");
    let state = shared.repo();
    let mut entries: Vec<(Timestamp, u64, PullState, &str, &[String])> = state
        .pulls
        .values()
        .map(|pull| {
            let labels: &[String] = &pull.labels;
            (
                pull.created_at,
                pull.number,
                pull.state,
                pull.author.as_str(),
                labels,
            )
        })
        .chain(state.issues.values().map(|issue| {
            let labels: &[String] = &issue.labels;
            (
                issue.created_at,
                issue.number,
                issue.state,
                issue.author.as_str(),
                labels,
            )
        }))
        .filter(|(_, _, open_state, _, _)| {
            wanted_state == "all" || open_state.as_str() == wanted_state
        })
        .filter(|(_, _, _, author, _)| creator.is_none_or(|creator| creator == *author))
        .filter(|(_, _, _, _, carried)| {
            labels.iter().all(|wanted| {
                carried
                    .iter()
                    .any(|label| label.eq_ignore_ascii_case(wanted))
            })
        })
        .collect();
    entries.sort_by_key(|(created_at, number, _, _, _)| (*created_at, *number));
    if !ascending {
        entries.reverse();
    }
    Ok(rendered_page_of(
        &context,
        &uri,
        &entries,
        |(_, number, _, _, _)| issue_answer(&state, *number, &context.api).unwrap_or_default(),
    ))
}

#[derive(Deserialize)]
struct NewIssue {
    title: Option<Value>,
    body: Option<String>,
    labels: Option<Value>,
}

async fn create_issue(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    body: Bytes,
) -> ApiResult {
    let request: NewIssue = parse_body(&body, docs::CREATE_ISSUE)?;
    let title = match request.title {
        Some(Value::String(title)) if !title.is_empty() => title,
        Some(Value::Number(number)) => number.to_string(),
        Some(Value::String(_)) => {
            return Err(ApiError::validation_failed(
                json!({"resource": "Issue", "code": "missing_field", "field": "title"}),
                docs::CREATE_ISSUE,
            ));
        }
        _ => return Err(ApiError::missing_field("title", docs::CREATE_ISSUE)),
    };
    let labels = match &request.labels {
        Some(labels) => label_names(labels)?,
        None => Vec::new(),
    };
    let mut state = shared.repo();
    let number = state.add_issue(IssueSpec {
        title,
        body: request.body,
        author: context.login.clone(),
        labels,
        created_at: None,
    });
    let answer = render::real_issue(&state, &state.issues[&number], &context.api);
    let location = answer["url"].as_str().unwrap_or_default().to_string();
    Ok(created_response(&answer, &location))
}

#[derive(Deserialize)]
struct LockRequest {
    lock_reason: Option<String>,
}

/// The reasons GitHub shows for a locked conversation.
const LOCK_REASONS: [&str; 4] = ["off-topic", "too heated", "resolved", "spam"];

async fn lock_issue(State(shared): State<Shared>, Path(params): Params, body: Bytes) -> ApiResult {
    let request: LockRequest = parse_body(&body, docs::LOCK_ISSUE)?;
    if let Some(reason) = &request.lock_reason
        && !LOCK_REASONS.contains(&reason.as_str())
    {
        return Err(ApiError::validation_failed(
            json!({"resource": "Issue", "code": "invalid", "field": "lock_reason"}),
            docs::LOCK_ISSUE,
        ));
    }
    let number = number_param(&params, "number")?;
    let mut state = shared.repo();
    find_issue(&state, number, docs::LOCK_ISSUE)?;
    state.set_lock(
        number,
        Some(Lock {
            reason: request.lock_reason,
        }),
    );
    Ok(empty_response(204))
}

async fn unlock_issue(State(shared): State<Shared>, Path(params): Params) -> ApiResult {
    let number = number_param(&params, "number")?;
    let mut state = shared.repo();
    find_issue(&state, number, docs::UNLOCK_ISSUE)?;
    state.set_lock(number, None);
    Ok(empty_response(204))
}

#[derive(Deserialize)]
struct IssueUpdate {
    state: Option<String>,
    state_reason: Option<String>,
    title: Option<String>,
    /// `Some(None)` for `"body": null`, which clears the body.
    #[serde(default, deserialize_with = "present")]
    body: Option<Option<String>>,
    labels: Option<Value>,
}

/// A field that is present, `null` included.
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

async fn update_issue(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    body: Bytes,
) -> ApiResult {
    let update: IssueUpdate = parse_body(&body, docs::UPDATE_ISSUE)?;
    let number = number_param(&params, "number")?;
    let mut state = shared.repo();
    find_issue(&state, number, docs::UPDATE_ISSUE)?;
    let labels = match &update.labels {
        Some(labels) => Some(label_names(labels)?),
        None => None,
    };
    if state.pulls.contains_key(&number) {
        if let Some(wanted) = &update.state {
            change_open_state(
                &mut state,
                number,
                wanted,
                &context.login,
                docs::UPDATE_ISSUE,
            )?;
        }
    } else {
        change_issue_state(&mut state, number, &update, &context.login)?;
    }
    if let Some(names) = labels {
        state.set_labels_by(number, names, &context.login);
    }
    if let Some(title) = update.title {
        let now = state.now();
        if let Some(pull) = state.pulls.get_mut(&number) {
            pull.title = title;
            pull.updated_at = now;
        } else if let Some(issue) = state.issues.get_mut(&number) {
            issue.title = title;
            issue.updated_at = now;
        }
    }
    if let Some(body) = update.body {
        let current = match state.pulls.get(&number) {
            Some(pull) => pull.body.clone(),
            None => state.issues[&number].body.clone(),
        };
        if current != body {
            state.edit_body(number, &context.login, body);
        }
    }
    let answer = issue_answer(&state, number, &context.api).expect("found above");
    Ok(json_response(200, &answer))
}

/// `state` and `state_reason` of an issue that is not a pull request: closing records who and
/// why (`completed` unless told `not_planned`), reopening says `reopened`.
fn change_issue_state(
    state: &mut RepoState,
    number: u64,
    update: &IssueUpdate,
    login: &str,
) -> Result<(), ApiError> {
    let invalid = |field: &str| {
        ApiError::validation_failed(
            json!({"resource": "Issue", "code": "invalid", "field": field}),
            docs::UPDATE_ISSUE,
        )
    };
    if let Some(reason) = &update.state_reason
        && !matches!(reason.as_str(), "completed" | "not_planned" | "reopened")
    {
        return Err(invalid("state_reason"));
    }
    let now = state.now();
    let issue = state.issues.get_mut(&number).expect("found by the caller");
    match (update.state.as_deref(), issue.state) {
        (Some("closed"), PullState::Open) => {
            issue.state = PullState::Closed;
            issue.closed_at = Some(now);
            issue.closed_by = Some(login.to_string());
            issue.state_reason = Some(
                update
                    .state_reason
                    .clone()
                    .filter(|reason| reason != "reopened")
                    .unwrap_or_else(|| "completed".to_string()),
            );
            issue.updated_at = now;
        }
        (Some("open"), PullState::Closed) => {
            issue.state = PullState::Open;
            issue.closed_at = None;
            issue.closed_by = None;
            issue.state_reason = Some("reopened".to_string());
            issue.updated_at = now;
        }
        (Some("closed") | None, PullState::Closed) => {
            if let Some(reason) = update.state_reason.clone().filter(|r| r != "reopened") {
                issue.state_reason = Some(reason);
                issue.updated_at = now;
            }
        }
        (Some("open") | None, PullState::Open) => {}
        (Some(_), _) => return Err(invalid("state")),
    }
    Ok(())
}

/// Label names from `{"labels": [...]}` or a bare array, of strings or `{"name"}` objects.
fn label_names(body: &Value) -> Result<Vec<String>, ApiError> {
    let list = match body {
        Value::Array(list) => list,
        Value::Object(object) => match object.get("labels") {
            Some(Value::Array(list)) => list,
            _ => return Err(ApiError::missing_field("labels", docs::LABELS)),
        },
        _ => return Err(ApiError::new(400, "Problems parsing JSON", docs::LABELS)),
    };
    list.iter()
        .map(|item| match item {
            Value::String(name) => Ok(name.clone()),
            Value::Object(object) => object
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| ApiError::missing_field("name", docs::LABELS)),
            _ => Err(ApiError::unprocessable("Invalid request.", docs::LABELS)),
        })
        .collect()
}

/// The labels of issue or pull request `number` (404 when there is none).
fn labels_of(state: &RepoState, number: u64, doc: &'static str) -> Result<Vec<String>, ApiError> {
    state
        .labels_of(number)
        .cloned()
        .ok_or_else(|| ApiError::not_found(doc))
}

fn labels_answer(
    state: &RepoState,
    number: u64,
    context: &RequestContext,
    uri: Option<&Uri>,
) -> ApiResult {
    let labels = labels_of(state, number, docs::LABELS)?;
    let items = render::issue_labels(state, &labels, &context.api);
    Ok(match uri {
        Some(uri) => page_of(context, uri, &items),
        None => json_response(200, &Value::Array(items)),
    })
}

async fn list_labels(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    uri: Uri,
) -> ApiResult {
    let state = shared.repo();
    labels_answer(
        &state,
        number_param(&params, "number")?,
        &context,
        Some(&uri),
    )
}

async fn add_labels(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    body: Bytes,
) -> ApiResult {
    let names = label_names(&parse_body(&body, docs::LABELS)?)?;
    let number = number_param(&params, "number")?;
    let mut state = shared.repo();
    let mut labels = labels_of(&state, number, docs::LABELS)?;
    labels.extend(names);
    state.set_labels_by(number, labels, &context.login);
    labels_answer(&state, number, &context, None)
}

async fn replace_labels(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    body: Bytes,
) -> ApiResult {
    let names = label_names(&parse_body(&body, docs::LABELS)?)?;
    let number = number_param(&params, "number")?;
    let mut state = shared.repo();
    find_issue(&state, number, docs::LABELS)?;
    state.set_labels_by(number, names, &context.login);
    labels_answer(&state, number, &context, None)
}

async fn remove_all_labels(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
) -> ApiResult {
    let number = number_param(&params, "number")?;
    let mut state = shared.repo();
    find_issue(&state, number, docs::LABELS)?;
    state.set_labels_by(number, Vec::new(), &context.login);
    Ok(empty_response(204))
}

async fn remove_label(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
) -> ApiResult {
    let number = number_param(&params, "number")?;
    let name = params.get("name").cloned().unwrap_or_default();
    let mut state = shared.repo();
    let labels = labels_of(&state, number, docs::REMOVE_LABEL)?;
    if !labels.iter().any(|label| label.eq_ignore_ascii_case(&name)) {
        return Err(ApiError::new(
            404,
            "Label does not exist",
            docs::REMOVE_LABEL,
        ));
    }
    let kept = labels
        .into_iter()
        .filter(|label| !label.eq_ignore_ascii_case(&name))
        .collect();
    state.set_labels_by(number, kept, &context.login);
    labels_answer(&state, number, &context, None)
}

async fn list_comments(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    uri: Uri,
) -> ApiResult {
    let number = number_param(&params, "number")?;
    let query = QueryParams::parse(uri.query());
    let since = query
        .filter("since")
        .and_then(super::clock::Timestamp::parse);
    let state = shared.repo();
    find_issue(&state, number, docs::COMMENTS)?;
    let items: Vec<Value> = state
        .comments
        .values()
        .filter(|comment| comment.issue_number == number)
        .filter(|comment| since.is_none_or(|since| comment.updated_at >= since))
        .map(|comment| render::comment(&state, comment, &context.api))
        .collect();
    Ok(page_of(&context, &uri, &items))
}

#[derive(Deserialize)]
struct CommentBody {
    body: Option<String>,
}

async fn create_comment(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    body: Bytes,
) -> ApiResult {
    let request: CommentBody = parse_body(&body, docs::COMMENTS)?;
    let text = request
        .body
        .ok_or_else(|| ApiError::missing_field("body", docs::COMMENTS))?;
    let number = number_param(&params, "number")?;
    let mut state = shared.repo();
    find_issue(&state, number, docs::COMMENTS)?;
    let id = state.add_comment(number, &context.login, &text);
    state.touch_issue(number);
    Ok(json_response(
        201,
        &render::comment(&state, &state.comments[&id], &context.api),
    ))
}

async fn get_comment(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
) -> ApiResult {
    let id = number_param(&params, "id")?;
    let state = shared.repo();
    let comment = state
        .comments
        .get(&id)
        .ok_or_else(|| ApiError::not_found(docs::COMMENTS))?;
    Ok(json_response(
        200,
        &render::comment(&state, comment, &context.api),
    ))
}

async fn update_comment(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    body: Bytes,
) -> ApiResult {
    let request: CommentBody = parse_body(&body, docs::COMMENTS)?;
    let text = request
        .body
        .ok_or_else(|| ApiError::missing_field("body", docs::COMMENTS))?;
    let id = number_param(&params, "id")?;
    let mut state = shared.repo();
    let now = state.now();
    let comment = state
        .comments
        .get_mut(&id)
        .ok_or_else(|| ApiError::not_found(docs::COMMENTS))?;
    comment.body = text;
    comment.updated_at = now;
    Ok(json_response(
        200,
        &render::comment(&state, &state.comments[&id], &context.api),
    ))
}

async fn delete_comment(State(shared): State<Shared>, Path(params): Params) -> ApiResult {
    let id = number_param(&params, "id")?;
    let mut state = shared.repo();
    state
        .comments
        .remove(&id)
        .ok_or_else(|| ApiError::not_found(docs::COMMENTS))?;
    Ok(empty_response(204))
}
