//! The account and repository endpoints: `GET /user`, `GET /repos/{owner}/{repo}` and
//! `GET /rate_limit`.

use axum::extract::{Extension, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use super::render;
use super::server::{RequestContext, Shared};

pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/user", get(authenticated_user))
        .route("/repos/{owner}/{repo}", get(repository))
        .route("/rate_limit", get(rate_limit))
}

async fn authenticated_user(
    Extension(context): Extension<RequestContext>,
) -> Json<serde_json::Value> {
    Json(render::authenticated_user(&context.login, &context.api))
}

async fn repository(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
) -> Json<serde_json::Value> {
    let state = shared.repo();
    Json(render::repository(&state, &context.api))
}

/// The counters themselves are in the response headers; the body mirrors GitHub's shape.
async fn rate_limit() -> Json<serde_json::Value> {
    Json(json!({ "resources": {}, "rate": {} }))
}
