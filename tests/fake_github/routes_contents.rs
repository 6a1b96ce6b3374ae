//! The contents API on branches: reading a file (base64 with GitHub's line breaks, blob sha, or
//! the file itself for the `raw` media type), listing a directory, and writing or deleting a
//! file as one commit with compare-and-swap on the blob sha — 404 `Branch X not found` first,
//! then 422 `"sha" wasn't supplied` for an existing file without sha, then 409 `<path> does not
//! match <sha>` for a stale one. The first file written to an empty repository makes its default
//! branch.

use std::collections::BTreeSet;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, HeaderValue, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};

use super::errors::{ApiError, ApiResult, docs, json_response, parse_body};
use super::pagination::QueryParams;
use super::render;
use super::routes_pulls::Params;
use super::server::{RequestContext, Shared};
use super::state::RepoState;

const DELETE_CONTENT: &str = "https://docs.github.com/rest/repos/contents#delete-a-file";

pub fn routes() -> Router<Shared> {
    Router::new()
        .route(
            "/repos/{owner}/{repo}/contents/{*path}",
            get(get_content).put(put_content).delete(delete_content),
        )
        // The repository's root directory.
        .route("/repos/{owner}/{repo}/contents", get(get_content))
        .route("/repos/{owner}/{repo}/contents/", get(get_content))
}

fn path_param(params: &std::collections::HashMap<String, String>) -> String {
    params
        .get("path")
        .map(|path| path.trim_matches('/').to_string())
        .unwrap_or_default()
}

/// Base64 with a newline every 60 characters, as GitHub encodes file content.
fn github_base64(content: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(content);
    let mut wrapped = String::with_capacity(encoded.len() + encoded.len() / 60 + 1);
    for chunk in encoded.as_bytes().chunks(60) {
        wrapped.push_str(std::str::from_utf8(chunk).unwrap_or(""));
        wrapped.push('\n');
    }
    wrapped
}

/// The content type of a file asked for raw (`Accept: application/vnd.github.raw`, or the
/// `v3` one), which GitHub answers with the file itself.
fn raw_media_type(headers: &HeaderMap) -> Option<&'static str> {
    let accept = headers.get(header::ACCEPT)?.to_str().ok()?;
    accept.split(',').find_map(|media_type| {
        match media_type.split(';').next().unwrap_or("").trim() {
            "application/vnd.github.v3.raw" => Some("application/vnd.github.v3.raw; charset=utf-8"),
            "application/vnd.github.raw" | "application/vnd.github.raw+json" => {
                Some("application/vnd.github.raw; charset=utf-8")
            }
            _ => None,
        }
    })
}

fn raw_response(content: String, content_type: &'static str) -> Response {
    let mut response = content.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

async fn get_content(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    headers: HeaderMap,
    uri: Uri,
) -> ApiResult {
    let query = QueryParams::parse(uri.query());
    let state = shared.repo();
    if state.refs.is_empty() {
        return Err(ApiError::new(
            404,
            "This repository is empty.",
            docs::GET_CONTENT,
        ));
    }
    let reference = query
        .filter("ref")
        .map(str::to_string)
        .unwrap_or_else(|| state.default_branch.clone());
    let commit = state.resolve_commitish(&reference).ok_or_else(|| {
        ApiError::new(
            404,
            format!("No commit found for the ref {reference}"),
            docs::GET_CONTENT,
        )
    })?;
    let path = path_param(&params);
    if let Some((blob, content)) = state.file_at(&commit, &path) {
        if let Some(content_type) = raw_media_type(&headers) {
            return Ok(raw_response(content, content_type));
        }
        let mut answer = render::content_entry(
            &state,
            &path,
            &blob,
            content.len(),
            &reference,
            &context.api,
        );
        answer["content"] = json!(github_base64(&content));
        answer["encoding"] = json!("base64");
        return Ok(json_response(200, &answer));
    }
    let listing = directory_listing(&state, &commit, &path, &reference, &context.api);
    if listing.is_empty() {
        return Err(ApiError::not_found(docs::GET_CONTENT));
    }
    Ok(json_response(200, &Value::Array(listing)))
}

fn directory_listing(
    state: &RepoState,
    commit: &str,
    directory: &str,
    reference: &str,
    api: &str,
) -> Vec<Value> {
    let prefix = if directory.is_empty() {
        String::new()
    } else {
        format!("{directory}/")
    };
    let files = state.commit_files(commit);
    let mut subdirectories = BTreeSet::new();
    let mut entries = Vec::new();
    for (path, blob) in files.iter().filter(|(path, _)| path.starts_with(&prefix)) {
        let rest = &path[prefix.len()..];
        match rest.split_once('/') {
            Some((subdirectory, _)) => {
                subdirectories.insert(format!("{prefix}{subdirectory}"));
            }
            None => {
                let size = state.blobs.get(blob).map(String::len).unwrap_or(0);
                entries.push(render::content_entry(
                    state, path, blob, size, reference, api,
                ));
            }
        }
    }
    for subdirectory in subdirectories {
        let mut entry = render::content_entry(state, &subdirectory, "", 0, reference, api);
        entry["type"] = json!("dir");
        entry["download_url"] = Value::Null;
        entries.push(entry);
    }
    entries
}

#[derive(Deserialize)]
struct FileWrite {
    message: Option<String>,
    content: Option<String>,
    branch: Option<String>,
    sha: Option<String>,
}

/// The branch to write, which must exist (GitHub checks it before anything else) unless the
/// repository is empty and it is the default branch, which the write then makes.
fn target_branch(
    state: &RepoState,
    requested: Option<String>,
    doc: &'static str,
) -> Result<String, ApiError> {
    let branch = requested.unwrap_or_else(|| state.default_branch.clone());
    let first_write = state.refs.is_empty() && branch == state.default_branch;
    if state.branch_sha(&branch).is_none() && !first_write {
        return Err(ApiError::new(
            404,
            format!("Branch {branch} not found"),
            doc,
        ));
    }
    Ok(branch)
}

fn write_answer(state: &RepoState, commit_sha: &str, path: &str, branch: &str, api: &str) -> Value {
    let commit = &state.commits[commit_sha];
    let content = state.file_at(commit_sha, path).map(|(blob, content)| {
        render::content_entry(state, path, &blob, content.len(), branch, api)
    });
    json!({
        "content": content,
        "commit": render::git_commit(state, commit, api),
    })
}

async fn put_content(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    body: Bytes,
) -> ApiResult {
    let write: FileWrite = parse_body(&body, docs::PUT_CONTENT)?;
    let message = write
        .message
        .ok_or_else(|| ApiError::missing_field("message", docs::PUT_CONTENT))?;
    let encoded = write
        .content
        .ok_or_else(|| ApiError::missing_field("content", docs::PUT_CONTENT))?;
    let cleaned: String = encoded.chars().filter(|c| !c.is_whitespace()).collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(cleaned)
        .map_err(|_| ApiError::unprocessable("content is not valid Base64", docs::PUT_CONTENT))?;
    let content = String::from_utf8_lossy(&bytes).into_owned();
    let path = path_param(&params);
    let mut state = shared.repo();
    let branch = target_branch(&state, write.branch, docs::PUT_CONTENT)?;
    let head = state.branch_sha(&branch).unwrap_or_default().to_string();
    let existing = state.file_at(&head, &path).map(|(blob, _)| blob);
    if let Some(current) = &existing {
        match write.sha.as_deref() {
            None => return Err(ApiError::missing_field("sha", docs::PUT_CONTENT)),
            Some(given) if given != current => {
                return Err(ApiError::conflict(
                    format!("{path} does not match {given}"),
                    docs::PUT_CONTENT,
                ));
            }
            Some(_) => {}
        }
    }
    let now = state.now();
    let commit = state.commit_files_on_branch(
        &branch,
        &[(path.clone(), Some(content))],
        &message,
        &context.login,
        now,
    );
    let status = if existing.is_some() { 200 } else { 201 };
    Ok(json_response(
        status,
        &write_answer(&state, &commit, &path, &branch, &context.api),
    ))
}

async fn delete_content(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    body: Bytes,
) -> ApiResult {
    let write: FileWrite = parse_body(&body, DELETE_CONTENT)?;
    let message = write
        .message
        .ok_or_else(|| ApiError::missing_field("message", DELETE_CONTENT))?;
    let path = path_param(&params);
    let mut state = shared.repo();
    let branch = target_branch(&state, write.branch, DELETE_CONTENT)?;
    let head = state.branch_sha(&branch).unwrap_or_default().to_string();
    let current = state
        .file_at(&head, &path)
        .map(|(blob, _)| blob)
        .ok_or_else(|| ApiError::not_found(DELETE_CONTENT))?;
    match write.sha.as_deref() {
        None => return Err(ApiError::missing_field("sha", DELETE_CONTENT)),
        Some(given) if given != current => {
            return Err(ApiError::conflict(
                format!("{path} does not match {given}"),
                DELETE_CONTENT,
            ));
        }
        Some(_) => {}
    }
    let now = state.now();
    let commit = state.commit_files_on_branch(
        &branch,
        &[(path.clone(), None)],
        &message,
        &context.login,
        now,
    );
    Ok(json_response(
        200,
        &write_answer(&state, &commit, &path, &branch, &context.api),
    ))
}
