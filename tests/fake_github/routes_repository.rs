//! The account and repository endpoints: `GET /user`, `GET /repos/{owner}/{repo}` (with the
//! caller's `permissions`), a collaborator's permission (`role_name` and the legacy
//! `permission`; `none` for an account without access, 404 for one GitHub does not know) and
//! `GET /rate_limit`.

use axum::Router;
use axum::extract::{Extension, Path, State};
use axum::response::Response;
use axum::routing::get;
use serde_json::json;

use super::errors::{ApiError, ApiResult, docs, json_response};
use super::render;
use super::routes_pulls::Params;
use super::server::{RequestContext, Shared};

pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/user", get(authenticated_user))
        .route("/repos/{owner}/{repo}", get(repository))
        .route(
            "/repos/{owner}/{repo}/collaborators/{username}/permission",
            get(collaborator_permission),
        )
        .route("/rate_limit", get(rate_limit))
}

async fn authenticated_user(Extension(context): Extension<RequestContext>) -> Response {
    json_response(
        200,
        &render::authenticated_user(&context.login, &context.api),
    )
}

async fn repository(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
) -> Response {
    let state = shared.repo();
    json_response(
        200,
        &render::full_repository(&state, &context.api, &context.login),
    )
}

/// The counters themselves are in the response headers; the body mirrors GitHub's shape.
async fn rate_limit() -> Response {
    json_response(200, &json!({ "resources": {}, "rate": {} }))
}

async fn collaborator_permission(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
) -> ApiResult {
    let login = params.get("username").cloned().unwrap_or_default();
    let state = shared.repo();
    if !state.knows_account(&login) {
        return Err(ApiError::new(
            404,
            format!("{login} is not a user"),
            docs::COLLABORATOR_PERMISSION,
        ));
    }
    Ok(json_response(
        200,
        &render::collaborator_permission(&login, state.role_of(&login), &context.api),
    ))
}
