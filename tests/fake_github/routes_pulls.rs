//! Pull requests: listing with GitHub's filters and sort order, reading, creating, updating
//! (close / reopen / title / body), and a pull request's commits and changed files.

use std::collections::HashMap;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::Uri;
use axum::routing::get;
use serde::Deserialize;
use serde_json::{Value, json};

use super::errors::{ApiError, ApiResult, docs, json_response, parse_body};
use super::pagination::{QueryParams, page_of, rendered_page_of};
use super::render;
use super::server::{RequestContext, Shared};
use super::state::{Mergeability, PullRequest, PullState, RepoState};

/// GitHub lists at most this many commits of a pull request.
const MAX_PULL_COMMITS: usize = 250;
/// GitHub lists at most this many changed files of a pull request.
const MAX_PULL_FILES: usize = 3000;

pub fn routes() -> Router<Shared> {
    Router::new()
        .route(
            "/repos/{owner}/{repo}/pulls",
            get(list_pulls).post(create_pull),
        )
        .route(
            "/repos/{owner}/{repo}/pulls/{number}",
            get(get_pull).patch(update_pull),
        )
        .route(
            "/repos/{owner}/{repo}/pulls/{number}/commits",
            get(pull_commits),
        )
        .route(
            "/repos/{owner}/{repo}/pulls/{number}/files",
            get(pull_files),
        )
}

pub type Params = Path<HashMap<String, String>>;

/// The numeric path parameter `name`; anything else is GitHub's 404.
pub fn number_param(params: &HashMap<String, String>, name: &str) -> Result<u64, ApiError> {
    params
        .get(name)
        .and_then(|value| value.parse().ok())
        .ok_or_else(|| ApiError::not_found(docs::REST))
}

pub fn find_pull<'a>(
    state: &'a RepoState,
    number: u64,
    doc: &'static str,
) -> Result<&'a PullRequest, ApiError> {
    state
        .pulls
        .get(&number)
        .ok_or_else(|| ApiError::not_found(doc))
}

async fn list_pulls(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    uri: Uri,
) -> ApiResult {
    let query = QueryParams::parse(uri.query());
    let state = shared.repo();
    let wanted_state = query.filter("state").unwrap_or("open");
    if !matches!(wanted_state, "open" | "closed" | "all") {
        return Err(ApiError::validation_failed(
            json!({"resource": "Issue", "field": "state", "code": "invalid"}),
            docs::PULLS,
        ));
    }
    // Like GitHub, a `head` without `owner:` is ignored rather than matched.
    let head_filter = query.filter("head").and_then(|head| head.split_once(':'));
    let base_filter = query.filter("base");
    let mut pulls: Vec<&PullRequest> = state
        .pulls
        .values()
        .filter(|pull| wanted_state == "all" || pull.state.as_str() == wanted_state)
        .filter(|pull| {
            head_filter.is_none_or(|(owner, branch)| {
                let head_owner = pull
                    .head_repo
                    .as_deref()
                    .and_then(|repo| repo.split_once('/'))
                    .map(|(owner, _)| owner);
                head_owner.is_some_and(|head_owner| head_owner.eq_ignore_ascii_case(owner))
                    && pull.head_ref == branch
            })
        })
        .filter(|pull| base_filter.is_none_or(|base| pull.base_ref == base))
        .collect();
    let sort = query.filter("sort").unwrap_or("created");
    let direction = query
        .filter("direction")
        .unwrap_or(if matches!(sort, "created" | "updated") {
            "desc"
        } else {
            "asc"
        });
    pulls.sort_by_key(|pull| {
        let time = if sort == "updated" {
            pull.updated_at
        } else {
            pull.created_at
        };
        (time, pull.number)
    });
    if direction == "desc" {
        pulls.reverse();
    }
    let this_repository = render::repository(&state, &context.api);
    Ok(rendered_page_of(&context, &uri, &pulls, |pull| {
        render::pull_request_beside(&state, pull, &context.api, &this_repository)
    }))
}

async fn get_pull(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
) -> ApiResult {
    let state = shared.repo();
    let pull = find_pull(&state, number_param(&params, "number")?, docs::PULLS)?;
    Ok(json_response(
        200,
        &render::pull_request_detail(&state, pull, &context.api),
    ))
}

#[derive(Deserialize)]
struct PullUpdate {
    title: Option<String>,
    body: Option<String>,
    state: Option<String>,
}

/// Closes or reopens an issue or pull request as `login`, with GitHub's refusals.
pub fn change_open_state(
    state: &mut RepoState,
    number: u64,
    wanted: &str,
    login: &str,
    doc: &'static str,
) -> Result<(), ApiError> {
    let now = state.now();
    let full_name = state.full_name();
    let head_exists = {
        let pull = find_pull(state, number, doc)?;
        pull.head_repo.as_deref() != Some(full_name.as_str())
            || state.branch_sha(&pull.head_ref).is_some()
    };
    let pull = state.pulls.get_mut(&number).expect("found above");
    match (wanted, pull.state) {
        ("closed", PullState::Open) => {
            pull.state = PullState::Closed;
            pull.closed_at = Some(now);
            pull.closed_by = Some(login.to_string());
            pull.updated_at = now;
        }
        ("open", PullState::Closed) => {
            let refusal = if pull.merged_at.is_some() {
                Some("state cannot be changed. The pull request has been merged.".to_string())
            } else if !head_exists {
                Some(format!(
                    "state cannot be changed. The {} branch has been deleted.",
                    pull.head_ref
                ))
            } else {
                None
            };
            if let Some(message) = refusal {
                return Err(ApiError::validation_failed(
                    json!({"resource": "PullRequest", "code": "custom", "field": "state", "message": message}),
                    doc,
                ));
            }
            pull.state = PullState::Open;
            pull.closed_at = None;
            pull.closed_by = None;
            pull.updated_at = now;
        }
        ("open" | "closed", _) => {}
        _ => {
            return Err(ApiError::validation_failed(
                json!({"resource": "PullRequest", "code": "invalid", "field": "state"}),
                doc,
            ));
        }
    }
    Ok(())
}

async fn update_pull(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    body: Bytes,
) -> ApiResult {
    let update: PullUpdate = parse_body(&body, docs::UPDATE_PULL)?;
    let number = number_param(&params, "number")?;
    let mut state = shared.repo();
    find_pull(&state, number, docs::UPDATE_PULL)?;
    if let Some(wanted) = &update.state {
        change_open_state(
            &mut state,
            number,
            wanted,
            &context.login,
            docs::UPDATE_PULL,
        )?;
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
    let pull = &state.pulls[&number];
    Ok(json_response(
        200,
        &render::pull_request_detail(&state, pull, &context.api),
    ))
}

#[derive(Deserialize)]
struct NewPull {
    title: Option<String>,
    head: Option<String>,
    base: Option<String>,
    body: Option<String>,
    #[serde(default)]
    draft: bool,
}

async fn create_pull(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    body: Bytes,
) -> ApiResult {
    let new: NewPull = parse_body(&body, docs::CREATE_PULL)?;
    let title = new
        .title
        .ok_or_else(|| ApiError::missing_field("title", docs::CREATE_PULL))?;
    let head = new
        .head
        .ok_or_else(|| ApiError::missing_field("head", docs::CREATE_PULL))?;
    let base = new
        .base
        .ok_or_else(|| ApiError::missing_field("base", docs::CREATE_PULL))?;
    let mut state = shared.repo();
    let branch = head
        .split_once(':')
        .map(|(_, branch)| branch)
        .unwrap_or(&head)
        .to_string();
    let invalid = |field: &str| {
        ApiError::validation_failed(
            json!({"resource": "PullRequest", "field": field, "code": "invalid"}),
            docs::CREATE_PULL,
        )
    };
    let head_sha = state
        .branch_sha(&branch)
        .ok_or_else(|| invalid("head"))?
        .to_string();
    if state.branch_sha(&base).is_none() {
        return Err(invalid("base"));
    }
    let full_name = state.full_name();
    // A fork's pull request may carry the same branch name: only this repository's count.
    if state.pulls.values().any(|pull| {
        pull.state == PullState::Open
            && pull.head_ref == branch
            && pull.base_ref == base
            && pull.head_repo.as_deref() == Some(full_name.as_str())
    }) {
        return Err(ApiError::validation_failed(
            json!({"resource": "PullRequest", "code": "custom",
                   "message": format!("A pull request already exists for {}:{branch}.", state.owner)}),
            docs::CREATE_PULL,
        ));
    }
    let now = state.now();
    let number = state.next_ids.issue_number;
    state.next_ids.issue_number += 1;
    let id = state.next_ids.pull_id;
    state.next_ids.pull_id += 1;
    state.pulls.insert(
        number,
        PullRequest {
            number,
            id,
            title,
            body: new.body,
            author: context.login.clone(),
            state: PullState::Open,
            draft: new.draft,
            head_ref: branch,
            head_sha,
            head_repo: Some(full_name),
            base_ref: base,
            labels: Vec::new(),
            created_at: now,
            updated_at: now,
            closed_at: None,
            merged_at: None,
            merge_commit_sha: None,
            closed_by: None,
            mergeability: Mergeability::default(),
            behind: false,
            lock: None,
        },
    );
    Ok(json_response(
        201,
        &render::pull_request_detail(&state, &state.pulls[&number], &context.api),
    ))
}

async fn pull_commits(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    uri: Uri,
) -> ApiResult {
    let state = shared.repo();
    let pull = find_pull(&state, number_param(&params, "number")?, docs::PULLS)?;
    let base = state.branch_sha(&pull.base_ref);
    let (commits, _) = state.commits_between(base, &pull.head_sha);
    let items: Vec<Value> = commits
        .iter()
        .take(MAX_PULL_COMMITS)
        .map(|commit| render::rest_commit(&state, commit, &context.api))
        .collect();
    Ok(page_of(&context, &uri, &items))
}

async fn pull_files(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    uri: Uri,
) -> ApiResult {
    let state = shared.repo();
    let pull = find_pull(&state, number_param(&params, "number")?, docs::PULLS)?;
    let base = state.branch_sha(&pull.base_ref);
    let (_, merge_base) = state.commits_between(base, &pull.head_sha);
    let items: Vec<Value> = state
        .diff_commits(merge_base.as_deref(), &pull.head_sha)
        .iter()
        .take(MAX_PULL_FILES)
        .map(|change| render::pull_file(&state, change, &context.api))
        .collect();
    Ok(page_of(&context, &uri, &items))
}
