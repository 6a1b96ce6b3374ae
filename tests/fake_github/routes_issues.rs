//! The issue side of pull requests: `GET/PATCH /issues/{n}` (with `closed_by` and the
//! `pull_request` key), an issue's labels, and issue comments.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::Uri;
use axum::routing::{delete, get, patch};
use serde::Deserialize;
use serde_json::Value;

use super::errors::{ApiError, ApiResult, docs, empty_response, json_response, parse_body};
use super::pagination::{QueryParams, page_of};
use super::render;
use super::routes_pulls::{Params, change_open_state, find_pull, number_param};
use super::server::{RequestContext, Shared};
use super::state::RepoState;

pub fn routes() -> Router<Shared> {
    Router::new()
        .route(
            "/repos/{owner}/{repo}/issues/{number}",
            get(get_issue).patch(update_issue),
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
        .route("/repos/{owner}/{repo}/labels", get(list_repository_labels))
}

async fn get_issue(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
) -> ApiResult {
    let state = shared.repo();
    let pull = find_pull(&state, number_param(&params, "number")?, docs::ISSUES)?;
    Ok(json_response(
        200,
        &render::issue(&state, pull, &context.api),
    ))
}

#[derive(Deserialize)]
struct IssueUpdate {
    state: Option<String>,
    title: Option<String>,
    body: Option<String>,
    labels: Option<Value>,
}

async fn update_issue(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    body: Bytes,
) -> ApiResult {
    let update: IssueUpdate = parse_body(&body, docs::ISSUES)?;
    let number = number_param(&params, "number")?;
    let mut state = shared.repo();
    find_pull(&state, number, docs::ISSUES)?;
    if let Some(wanted) = &update.state {
        change_open_state(&mut state, number, wanted, &context.login, docs::ISSUES)?;
    }
    if let Some(labels) = &update.labels {
        let names = label_names(labels)?;
        set_labels(&mut state, number, names);
    }
    let now = state.now();
    let pull = state.pulls.get_mut(&number).expect("found above");
    if let Some(title) = update.title {
        pull.title = title;
        pull.updated_at = now;
    }
    if let Some(body) = update.body {
        pull.body = Some(body);
        pull.updated_at = now;
    }
    Ok(json_response(
        200,
        &render::issue(&state, &state.pulls[&number], &context.api),
    ))
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

fn set_labels(state: &mut RepoState, number: u64, names: Vec<String>) {
    for name in &names {
        state.ensure_label(name);
    }
    let now = state.now();
    if let Some(pull) = state.pulls.get_mut(&number) {
        pull.labels.clear();
        for name in names {
            if !pull.labels.contains(&name) {
                pull.labels.push(name);
            }
        }
        pull.updated_at = now;
    }
}

fn labels_answer(state: &RepoState, number: u64, api: &str, uri: Option<&Uri>) -> ApiResult {
    let pull = find_pull(state, number, docs::LABELS)?;
    let items = render::issue_labels(state, pull, api);
    Ok(match uri {
        Some(uri) => page_of(api, uri, &items),
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
        &context.api,
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
    let mut labels = find_pull(&state, number, docs::LABELS)?.labels.clone();
    labels.extend(names);
    set_labels(&mut state, number, labels);
    labels_answer(&state, number, &context.api, None)
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
    find_pull(&state, number, docs::LABELS)?;
    set_labels(&mut state, number, names);
    labels_answer(&state, number, &context.api, None)
}

async fn remove_all_labels(State(shared): State<Shared>, Path(params): Params) -> ApiResult {
    let number = number_param(&params, "number")?;
    let mut state = shared.repo();
    find_pull(&state, number, docs::LABELS)?;
    set_labels(&mut state, number, Vec::new());
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
    let labels = find_pull(&state, number, docs::REMOVE_LABEL)?
        .labels
        .clone();
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
    set_labels(&mut state, number, kept);
    labels_answer(&state, number, &context.api, None)
}

async fn list_repository_labels(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    uri: Uri,
) -> ApiResult {
    let state = shared.repo();
    let items: Vec<Value> = state
        .labels
        .values()
        .map(|label| render::label(label, &context.api, &state))
        .collect();
    Ok(page_of(&context.api, &uri, &items))
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
    find_pull(&state, number, docs::COMMENTS)?;
    let items: Vec<Value> = state
        .comments
        .values()
        .filter(|comment| comment.issue_number == number)
        .filter(|comment| since.is_none_or(|since| comment.updated_at >= since))
        .map(|comment| render::comment(&state, comment, &context.api))
        .collect();
    Ok(page_of(&context.api, &uri, &items))
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
    find_pull(&state, number, docs::COMMENTS)?;
    let id = state.add_comment(number, &context.login, &text);
    let now = state.now();
    if let Some(pull) = state.pulls.get_mut(&number) {
        pull.updated_at = now;
    }
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
