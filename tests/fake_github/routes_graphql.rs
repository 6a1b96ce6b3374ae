//! `POST /graphql`: GitHub's GraphQL API over the fake's state, answered by the executor in
//! [`super::graphql`] against the subset of GitHub's schema that klaud's queries reach. Like
//! GitHub, every answer is HTTP 200: errors travel in its `errors` array.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, State};
use axum::routing::post;
use serde_json::Value;

use super::errors::{ApiResult, docs, json_response, parse_body};
use super::graphql::execute;
use super::graphql::schema::Schema;
use super::server::{RequestContext, Shared};

pub fn routes() -> Router<Shared> {
    Router::new().route("/graphql", post(graphql))
}

async fn graphql(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    body: Bytes,
) -> ApiResult {
    let request: Value = parse_body(&body, docs::GRAPHQL)?;
    let mut state = shared.repo();
    let schema = if state.update_refs_available {
        Schema::github()
    } else {
        Schema::github_without_update_refs()
    };
    let answer = execute::answer(schema, &mut state, &context.login, &request);
    Ok(json_response(200, &answer))
}
