//! The admin surface under `/_fake/…` (no token, no faults, not logged): load and dump the state,
//! read or clear the request log, configure faults and the rate limit, finish runs, and write
//! files on branches.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::routing::{get, patch, post, put};
use serde::Deserialize;
use serde_json::json;

use super::errors::{ApiError, ApiResult, docs, empty_response, json_response, parse_body};
use super::faults::{FaultConfig, RateLimitConfig};
use super::routes_pulls::{Params, number_param};
use super::server::{RequestCounts, Shared};
use super::state::RepoState;

pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/_fake/state", get(dump_state).put(load_state))
        .route(
            "/_fake/requests",
            get(request_log).delete(clear_request_log),
        )
        .route("/_fake/requests/counts", get(request_counts))
        .route("/_fake/faults", get(get_faults).put(set_faults))
        .route("/_fake/rate-limit", put(set_rate_limit))
        .route("/_fake/runs/{id}", patch(update_run))
        .route("/_fake/files", post(write_file))
}

fn to_json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or_default()
}

async fn dump_state(State(shared): State<Shared>) -> ApiResult {
    Ok(json_response(200, &to_json(&*shared.repo())))
}

async fn load_state(State(shared): State<Shared>, body: Bytes) -> ApiResult {
    let state: RepoState = serde_json::from_slice(&body).map_err(|error| {
        ApiError::new(400, format!("not a fake GitHub state: {error}"), docs::REST)
    })?;
    *shared.repo() = state;
    Ok(empty_response(204))
}

async fn request_log(State(shared): State<Shared>) -> ApiResult {
    Ok(json_response(200, &to_json(&shared.control().log)))
}

async fn clear_request_log(State(shared): State<Shared>) -> ApiResult {
    shared.control().log.clear();
    Ok(empty_response(204))
}

async fn request_counts(State(shared): State<Shared>) -> ApiResult {
    Ok(json_response(
        200,
        &to_json(&RequestCounts::of(&shared.control().log)),
    ))
}

async fn get_faults(State(shared): State<Shared>) -> ApiResult {
    Ok(json_response(
        200,
        &to_json(&shared.control().faults.config),
    ))
}

async fn set_faults(State(shared): State<Shared>, body: Bytes) -> ApiResult {
    let config: FaultConfig = serde_json::from_slice(&body).map_err(|error| {
        ApiError::new(
            400,
            format!("not a fault configuration: {error}"),
            docs::REST,
        )
    })?;
    shared.control().set_faults(config);
    Ok(empty_response(204))
}

async fn set_rate_limit(State(shared): State<Shared>, body: Bytes) -> ApiResult {
    let config: RateLimitConfig = serde_json::from_slice(&body).map_err(|error| {
        ApiError::new(
            400,
            format!("not a rate-limit configuration: {error}"),
            docs::REST,
        )
    })?;
    shared.control().set_rate_limit(config);
    Ok(empty_response(204))
}

#[derive(Deserialize)]
struct RunUpdate {
    status: String,
    conclusion: Option<String>,
}

/// Moves a run along (e.g. a dispatched run to `completed`/`success`).
async fn update_run(State(shared): State<Shared>, Path(params): Params, body: Bytes) -> ApiResult {
    let update: RunUpdate = parse_body(&body, docs::REST)?;
    let id = number_param(&params, "id")?;
    let mut state = shared.repo();
    if !state.runs.contains_key(&id) {
        return Err(ApiError::not_found(docs::RUNS));
    }
    state.set_run_status(id, &update.status, update.conclusion.as_deref());
    Ok(json_response(
        200,
        &json!({"id": id, "status": update.status, "conclusion": update.conclusion}),
    ))
}

#[derive(Deserialize)]
struct FileSeed {
    branch: String,
    path: String,
    content: String,
}

/// Writes a file on a branch (created as an orphan when missing), as seeding does.
async fn write_file(State(shared): State<Shared>, body: Bytes) -> ApiResult {
    let seed: FileSeed = parse_body(&body, docs::REST)?;
    let commit = shared
        .repo()
        .put_file(&seed.branch, &seed.path, &seed.content);
    Ok(json_response(201, &json!({"commit": commit})))
}
