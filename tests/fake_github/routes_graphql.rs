//! `POST /graphql` for the two mutations GitHub only offers there: `markPullRequestReadyForReview`
//! and `convertPullRequestToDraft`, addressed by the pull request's node id. Like GitHub, errors
//! are answered with HTTP 200 and an `errors` array (`UNPROCESSABLE` for a closed pull request,
//! `NOT_FOUND` for an unknown node id).

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use serde::Deserialize;
use serde_json::{Value, json};

use super::errors::{ApiResult, docs, json_response, parse_body};
use super::server::Shared;
use super::state::PullState;

pub fn routes() -> Router<Shared> {
    Router::new().route("/graphql", post(graphql))
}

#[derive(Deserialize)]
struct GraphqlRequest {
    query: Option<String>,
    #[serde(default)]
    variables: Value,
}

/// The two supported mutations: field name and whether it makes the pull request a draft.
const MUTATIONS: [(&str, bool); 2] = [
    ("markPullRequestReadyForReview", false),
    ("convertPullRequestToDraft", true),
];

fn find_key<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    match value {
        Value::Object(object) => object
            .get(key)
            .or_else(|| object.values().find_map(|inner| find_key(inner, key))),
        Value::Array(items) => items.iter().find_map(|inner| find_key(inner, key)),
        _ => None,
    }
}

/// The `pullRequestId` argument: from the variables, or written inline (`"…"` or `$name`).
fn pull_request_id(query: &str, variables: &Value) -> Option<String> {
    if let Some(Value::String(id)) = find_key(variables, "pullRequestId") {
        return Some(id.clone());
    }
    let after = &query[query.find("pullRequestId")? + "pullRequestId".len()..];
    let after = after.trim_start().strip_prefix(':')?.trim_start();
    if let Some(literal) = after.strip_prefix('"') {
        return literal.split('"').next().map(str::to_string);
    }
    let name: String = after
        .strip_prefix('$')?
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    variables
        .get(&name)
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn graphql_error(kind: &str, field: &str, message: String) -> Value {
    json!({
        "data": { field: Value::Null },
        "errors": [{
            "type": kind,
            "path": [field],
            "locations": [{ "line": 1, "column": 1 }],
            "message": message,
        }],
    })
}

async fn graphql(State(shared): State<Shared>, body: Bytes) -> ApiResult {
    let request: GraphqlRequest = parse_body(&body, docs::GRAPHQL)?;
    let Some(query) = request.query else {
        return Ok(json_response(
            200,
            &json!({"errors": [{"message": "A query attribute must be specified and must be a string."}]}),
        ));
    };
    let Some((field, to_draft)) = MUTATIONS
        .iter()
        .find(|(field, _)| query.contains(field))
        .copied()
    else {
        return Ok(json_response(
            200,
            &json!({"errors": [{"message": "this fake GitHub answers only markPullRequestReadyForReview and convertPullRequestToDraft"}]}),
        ));
    };
    let Some(node_id) = pull_request_id(&query, &request.variables) else {
        return Ok(json_response(
            200,
            &json!({"errors": [{"message": "Argument 'pullRequestId' on InputObject is required"}]}),
        ));
    };
    let mut state = shared.repo();
    let Some(number) = state.pull_by_node_id(&node_id) else {
        return Ok(json_response(
            200,
            &graphql_error(
                "NOT_FOUND",
                field,
                format!("Could not resolve to a node with the global id of '{node_id}'"),
            ),
        ));
    };
    let now = state.now();
    let pull = state.pulls.get_mut(&number).expect("found by node id");
    if pull.state == PullState::Closed {
        let message = if to_draft {
            "Pull request is closed and cannot be converted to draft".to_string()
        } else {
            "Pull request is closed and cannot be marked ready for review".to_string()
        };
        return Ok(json_response(
            200,
            &graphql_error("UNPROCESSABLE", field, message),
        ));
    }
    if pull.draft != to_draft {
        pull.draft = to_draft;
        pull.updated_at = now;
    }
    let answer = json!({
        "data": { field: { "pullRequest": {
            "id": node_id,
            "number": pull.number,
            "isDraft": pull.draft,
            "state": "OPEN",
        }}}
    });
    Ok(json_response(200, &answer))
}
