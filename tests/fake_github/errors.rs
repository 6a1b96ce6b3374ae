//! GitHub's error bodies (`{"message", "documentation_url", "status"}` with the status as a
//! string) and the small response helpers every route uses: JSON with GitHub's content type,
//! `201` with `Location`, pages with `Link`, empty answers.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Documentation links GitHub puts into error bodies, per operation.
pub mod docs {
    pub const REST: &str = "https://docs.github.com/rest";
    pub const GRAPHQL: &str = "https://docs.github.com/graphql";
    pub const USERS: &str = "https://docs.github.com/rest/users/users#get-the-authenticated-user";
    pub const PULLS: &str = "https://docs.github.com/rest/pulls/pulls";
    pub const UPDATE_PULL: &str = "https://docs.github.com/rest/pulls/pulls#update-a-pull-request";
    pub const CREATE_PULL: &str = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request";
    pub const ISSUES: &str = "https://docs.github.com/rest/issues/issues";
    pub const CREATE_ISSUE: &str = "https://docs.github.com/rest/issues/issues#create-an-issue";
    pub const UPDATE_ISSUE: &str = "https://docs.github.com/rest/issues/issues#update-an-issue";
    pub const COLLABORATOR_PERMISSION: &str = "https://docs.github.com/rest/collaborators/collaborators#get-repository-permissions-for-a-user";
    pub const LABELS: &str = "https://docs.github.com/rest/issues/labels";
    pub const CREATE_LABEL: &str = "https://docs.github.com/rest/issues/labels#create-a-label";
    pub const GET_LABEL: &str = "https://docs.github.com/rest/issues/labels#get-a-label";
    pub const UPDATE_LABEL: &str = "https://docs.github.com/rest/issues/labels#update-a-label";
    pub const DELETE_LABEL: &str = "https://docs.github.com/rest/issues/labels#delete-a-label";
    pub const LOCK_ISSUE: &str = "https://docs.github.com/rest/issues/issues#lock-an-issue";
    pub const UNLOCK_ISSUE: &str = "https://docs.github.com/rest/issues/issues#unlock-an-issue";
    pub const CREATE_STATUS: &str =
        "https://docs.github.com/rest/commits/statuses#create-a-commit-status";
    pub const LIST_STATUSES: &str =
        "https://docs.github.com/rest/commits/statuses#list-commit-statuses-for-a-reference";
    pub const COMBINED_STATUS: &str = "https://docs.github.com/rest/commits/statuses#get-the-combined-status-for-a-specific-reference";
    pub const REMOVE_LABEL: &str =
        "https://docs.github.com/rest/issues/labels#remove-a-label-from-an-issue";
    pub const COMMENTS: &str = "https://docs.github.com/rest/issues/comments";
    pub const REFS: &str = "https://docs.github.com/rest/git/refs";
    pub const CREATE_REF: &str = "https://docs.github.com/rest/git/refs#create-a-reference";
    pub const UPDATE_REF: &str = "https://docs.github.com/rest/git/refs#update-a-reference";
    pub const DELETE_REF: &str = "https://docs.github.com/rest/git/refs#delete-a-reference";
    pub const GIT_COMMITS: &str = "https://docs.github.com/rest/git/commits";
    pub const GIT_TREES: &str = "https://docs.github.com/rest/git/trees#create-a-tree";
    pub const COMMITS: &str = "https://docs.github.com/rest/commits/commits";
    pub const GET_CONTENT: &str =
        "https://docs.github.com/rest/repos/contents#get-repository-content";
    pub const PUT_CONTENT: &str =
        "https://docs.github.com/rest/repos/contents#create-or-update-file-contents";
    pub const RUNS: &str = "https://docs.github.com/rest/actions/workflow-runs";
    pub const CANCEL_RUN: &str =
        "https://docs.github.com/rest/actions/workflow-runs#cancel-a-workflow-run";
    pub const DISPATCH: &str =
        "https://docs.github.com/rest/actions/workflows#create-a-workflow-dispatch-event";
    pub const JOBS: &str = "https://docs.github.com/rest/actions/workflow-jobs";
    pub const JOB_LOGS: &str =
        "https://docs.github.com/rest/actions/workflow-jobs#download-job-logs-for-a-workflow-run";
    pub const RATE_LIMITS: &str =
        "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api";
    pub const SECONDARY_RATE_LIMITS: &str = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits";
}

/// An error answer as GitHub shapes it.
#[derive(Clone, Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub documentation_url: &'static str,
    /// `Validation Failed` answers carry an `errors` array.
    pub errors: Option<Value>,
}

impl ApiError {
    pub fn new(status: u16, message: impl Into<String>, documentation_url: &'static str) -> Self {
        ApiError {
            status: StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            message: message.into(),
            documentation_url,
            errors: None,
        }
    }

    pub fn not_found(documentation_url: &'static str) -> Self {
        ApiError::new(404, "Not Found", documentation_url)
    }

    pub fn unprocessable(message: impl Into<String>, documentation_url: &'static str) -> Self {
        ApiError::new(422, message, documentation_url)
    }

    pub fn conflict(message: impl Into<String>, documentation_url: &'static str) -> Self {
        ApiError::new(409, message, documentation_url)
    }

    /// `Invalid request.\n\n"field" wasn't supplied.` — GitHub's answer to a missing field.
    pub fn missing_field(field: &str, documentation_url: &'static str) -> Self {
        ApiError::unprocessable(
            format!("Invalid request.\n\n\"{field}\" wasn't supplied."),
            documentation_url,
        )
    }

    /// `Validation Failed` with one `errors` entry, as for business-rule violations.
    pub fn validation_failed(error: Value, documentation_url: &'static str) -> Self {
        let mut failure = ApiError::unprocessable("Validation Failed", documentation_url);
        failure.errors = Some(json!([error]));
        failure
    }

    pub fn body(&self) -> Value {
        let mut body = json!({
            "message": self.message,
            "documentation_url": self.documentation_url,
            "status": self.status.as_u16().to_string(),
        });
        if let Some(errors) = &self.errors {
            body["errors"] = errors.clone();
        }
        body
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        json_response(self.status.as_u16(), &self.body())
    }
}

/// A JSON answer with GitHub's content type.
pub fn json_response(status: u16, body: &Value) -> Response {
    let mut response = (
        StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
        body.to_string(),
    )
        .into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    response
}

/// `201 Created` with the new resource's API URL in `Location`, as GitHub answers a create.
pub fn created_response(body: &Value, location: &str) -> Response {
    let mut response = json_response(201, body);
    if let Ok(location) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

/// A JSON answer with an optional `Link` header.
pub fn paged_response(body: &Value, link: Option<String>) -> Response {
    let mut response = json_response(200, body);
    if let Some(link) = link.and_then(|link| HeaderValue::from_str(&link).ok()) {
        response.headers_mut().insert(header::LINK, link);
    }
    response
}

/// An empty answer (204 No Content and the like).
pub fn empty_response(status: u16) -> Response {
    StatusCode::from_u16(status)
        .unwrap_or(StatusCode::NO_CONTENT)
        .into_response()
}

/// Parses a JSON request body; malformed JSON is GitHub's 400 `Problems parsing JSON`.
pub fn parse_body<T: DeserializeOwned>(
    body: &[u8],
    documentation_url: &'static str,
) -> Result<T, ApiError> {
    let text = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}".as_slice()
    } else {
        body
    };
    serde_json::from_slice(text)
        .map_err(|_| ApiError::new(400, "Problems parsing JSON", documentation_url))
}

pub type ApiResult = Result<Response, ApiError>;
