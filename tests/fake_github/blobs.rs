//! The blob storage GitHub keeps job logs in, as far as klaud meets it: `GET
//! /actions/jobs/{job_id}/logs` answers `302 Found` with a short-lived signed URL on another host
//! (`grant`), and that host serves the log as plain text to whoever holds the URL. Like Azure
//! Blob Storage with a shared access signature, it refuses a request that also carries an
//! `Authorization` header (a token must never travel there) and one with an unknown signature.
//! It listens on a port of its own, so it is another origin than the API; its requests go to
//! their own log (`FakeGitHubHandle::blob_log`), never the API's request log.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::{Deserialize, Serialize};

use super::pagination::QueryParams;
use super::server::Shared;

/// One request the blob server answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobRequest {
    pub job_id: u64,
    /// Whether it carried an `Authorization` header (refused).
    pub authorization: bool,
    pub status: u16,
}

/// The signed URL of job `job_id`'s log on the blob server, when it listens.
pub fn grant(shared: &Shared, job_id: u64) -> Option<String> {
    let mut control = shared.control();
    let base = control.blob_base.clone()?;
    let signature = format!("sv-{}-{job_id}", control.blob_grants.len() + 1);
    control.blob_grants.insert(signature.clone(), job_id);
    Some(format!(
        "{base}/job-logs/{job_id}?sig={signature}&se=short-lived"
    ))
}

pub fn router(shared: Shared) -> Router {
    Router::new()
        .route("/job-logs/{job_id}", get(serve_log))
        .with_state(shared)
}

async fn serve_log(
    State(shared): State<Shared>,
    Path(job_id): Path<u64>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let authorization = headers.contains_key(header::AUTHORIZATION);
    let query = QueryParams::parse(uri.query());
    let granted = query
        .get("sig")
        .and_then(|signature| shared.control().blob_grants.get(signature).copied())
        == Some(job_id);
    let log = shared.repo().job_logs.get(&job_id).cloned();
    let (status, body) = match (authorization, granted, log) {
        (true, _, _) => (
            StatusCode::BAD_REQUEST,
            "InvalidAuthenticationInfo: authentication information is not given in the correct format"
                .to_string(),
        ),
        (false, false, _) => (
            StatusCode::FORBIDDEN,
            "AuthenticationFailed: signature not valid".to_string(),
        ),
        (false, true, None) => (
            StatusCode::NOT_FOUND,
            "BlobNotFound: the specified blob does not exist".to_string(),
        ),
        (false, true, Some(log)) => (StatusCode::OK, log),
    };
    shared.control().blob_log.push(BlobRequest {
        job_id,
        authorization,
        status: status.as_u16(),
    });
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
