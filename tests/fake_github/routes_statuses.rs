//! Commit statuses: setting one on a commit (`201` with `Location`), a ref's statuses newest
//! first, and its combined status (the latest status of each context, and their verdict:
//! `failure` when one failed or errored, `pending` while one is pending or none is set, else
//! `success`). The two reads share their paths with `GET /commits/{ref}` (a ref may hold
//! slashes), which hands them over (`routes_git.rs`).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::Uri;
use axum::routing::post;
use serde::Deserialize;
use serde_json::{Value, json};

use super::errors::{ApiError, ApiResult, created_response, docs, json_response, parse_body};
use super::pagination::page_of;
use super::render;
use super::routes_pulls::Params;
use super::server::{RequestContext, Shared};
use super::state::{CommitStatus, RepoState};

pub fn routes() -> Router<Shared> {
    Router::new().route("/repos/{owner}/{repo}/statuses/{sha}", post(create_status))
}

/// The states a status can have.
const STATES: [&str; 4] = ["error", "failure", "pending", "success"];

#[derive(Deserialize)]
struct NewStatus {
    state: Option<String>,
    target_url: Option<String>,
    description: Option<String>,
    context: Option<String>,
}

async fn create_status(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    body: Bytes,
) -> ApiResult {
    let new: NewStatus = parse_body(&body, docs::CREATE_STATUS)?;
    let status_state = new
        .state
        .ok_or_else(|| ApiError::missing_field("state", docs::CREATE_STATUS))?;
    if !STATES.contains(&status_state.as_str()) {
        return Err(ApiError::validation_failed(
            json!({"resource": "Status", "code": "invalid", "field": "state"}),
            docs::CREATE_STATUS,
        ));
    }
    let sha = params.get("sha").cloned().unwrap_or_default();
    let mut state = shared.repo();
    let commit = commit_of(&state, &sha, docs::CREATE_STATUS)?;
    let id = state.add_status(
        &commit,
        new.context.as_deref().unwrap_or("default"),
        &status_state,
        new.target_url.as_deref(),
        &context.login,
    );
    let status = state
        .statuses
        .iter_mut()
        .find(|status| status.id == id)
        .expect("added above");
    status.description = new.description;
    let status = status.clone();
    let mut answer = status_json(&state, &status, &context.api);
    answer["creator"] = render::user(&status.creator, &context.api);
    let location = answer["url"].as_str().unwrap_or_default().to_string();
    Ok(created_response(&answer, &location))
}

/// The commit a sha or ref names; GitHub's 422 otherwise.
fn commit_of(state: &RepoState, reference: &str, doc: &'static str) -> Result<String, ApiError> {
    state.resolve_commitish(reference).ok_or_else(|| {
        ApiError::unprocessable(format!("No commit found for SHA: {reference}"), doc)
    })
}

/// A status as the combined status lists it (without its creator); statuses never change, so
/// it was last updated when it was created.
fn status_json(state: &RepoState, status: &CommitStatus, api: &str) -> Value {
    json!({
        "url": format!("{api}/repos/{}/statuses/{}", state.full_name(), status.sha),
        "avatar_url": render::user(&status.creator, api)["avatar_url"],
        "id": status.id,
        "node_id": format!("SC_kwDO{:012}", status.id),
        "state": status.state,
        "description": status.description,
        "target_url": status.target_url,
        "context": status.context,
        "created_at": status.created_at,
        "updated_at": status.created_at,
    })
}

/// `GET /commits/{reference}/statuses`: the ref's statuses, newest first.
pub fn list_statuses(
    state: &RepoState,
    reference: &str,
    context: &RequestContext,
    uri: &Uri,
) -> ApiResult {
    let sha = commit_of(state, reference, docs::LIST_STATUSES)?;
    let items: Vec<Value> = state
        .statuses
        .iter()
        .rev()
        .filter(|status| status.sha == sha)
        .map(|status| {
            let mut answer = status_json(state, status, &context.api);
            answer["creator"] = render::user(&status.creator, &context.api);
            answer
        })
        .collect();
    Ok(page_of(context, uri, &items))
}

/// `GET /commits/{reference}/status`: the latest status of each context and their verdict.
pub fn combined_status(state: &RepoState, reference: &str, context: &RequestContext) -> ApiResult {
    let sha = commit_of(state, reference, docs::COMBINED_STATUS)?;
    let latest = state.latest_statuses(&sha);
    let verdict = if latest
        .iter()
        .any(|status| matches!(status.state.as_str(), "error" | "failure"))
    {
        "failure"
    } else if latest.is_empty() || latest.iter().any(|status| status.state == "pending") {
        "pending"
    } else {
        "success"
    };
    let api = &context.api;
    let commit_url = format!("{api}/repos/{}/commits/{sha}", state.full_name());
    let answer = json!({
        "state": verdict,
        "statuses": latest
            .iter()
            .map(|status| status_json(state, status, api))
            .collect::<Vec<_>>(),
        "sha": sha,
        "total_count": latest.len(),
        "repository": render::minimal_repository(state, &state.full_name(), api),
        "commit_url": commit_url,
        "url": format!("{commit_url}/status"),
    });
    Ok(json_response(200, &answer))
}
