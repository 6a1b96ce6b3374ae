//! Git data: refs (read, match, list under a prefix as `GET /git/refs/…` still answers, create
//! with `Location`, fast-forward-checked update, delete), commits (REST and
//! git views, history by path), trees (read by sha or by what names one, `recursive` or not;
//! created from a base tree with writes and deletions, a deletion of nothing refused as GitHub
//! does) and `POST /git/commits`: enough to build an orphan branch or commit several files.

use std::collections::BTreeMap;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::Uri;
use axum::routing::{get, patch, post};
use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};

use super::clock::Timestamp;
use super::errors::{
    ApiError, ApiResult, created_response, docs, empty_response, json_response, parse_body,
};
use super::git::{NewCommit, identity_for_login};
use super::pagination::{QueryParams, page_of};
use super::prng::user_id;
use super::render;
use super::routes_pulls::Params;
use super::routes_statuses;
use super::server::{RequestContext, Shared};
use super::state::{DeletedRef, GitIdentity, RepoState};

const GET_TREE: &str = "https://docs.github.com/rest/git/trees#get-a-tree";

pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/repos/{owner}/{repo}/git/ref/{*reference}", get(get_ref))
        .route(
            "/repos/{owner}/{repo}/git/matching-refs/{*reference}",
            get(matching_refs),
        )
        .route(
            "/repos/{owner}/{repo}/git/refs",
            post(create_ref).get(refs_below),
        )
        .route("/repos/{owner}/{repo}/git/refs/", get(refs_below))
        .route(
            "/repos/{owner}/{repo}/git/refs/{*reference}",
            patch(update_ref).delete(delete_ref).get(refs_below),
        )
        .route("/repos/{owner}/{repo}/git/commits", post(create_commit))
        .route(
            "/repos/{owner}/{repo}/git/commits/{sha}",
            get(get_git_commit),
        )
        .route("/repos/{owner}/{repo}/git/trees", post(create_tree))
        .route("/repos/{owner}/{repo}/git/trees/{*sha}", get(get_tree))
        .route("/repos/{owner}/{repo}/git/blobs/{sha}", get(get_blob))
        .route("/repos/{owner}/{repo}/commits", get(list_commits))
        .route(
            "/repos/{owner}/{repo}/commits/{*reference}",
            get(get_commit),
        )
}

/// `heads/x` from the wildcard, as `refs/heads/x`.
fn full_ref(params: &std::collections::HashMap<String, String>) -> String {
    let reference = params
        .get("reference")
        .map(|value| value.trim_start_matches('/'))
        .unwrap_or("");
    let reference = reference.strip_prefix("refs/").unwrap_or(reference);
    format!("refs/{reference}")
}

async fn get_ref(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
) -> ApiResult {
    let state = shared.repo();
    let name = full_ref(&params);
    let sha = state
        .refs
        .get(&name)
        .ok_or_else(|| ApiError::not_found(docs::REFS))?;
    Ok(json_response(
        200,
        &render::git_ref(&state, &name, sha, &context.api),
    ))
}

/// `GET /git/refs/{ref}`, the older reading GitHub still answers: the ref itself when one is
/// named exactly, else every ref below it (all of them for `/git/refs/`) as an array, unpaginated;
/// 404 when there is none.
async fn refs_below(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    params: Option<Path<std::collections::HashMap<String, String>>>,
) -> ApiResult {
    let state = shared.repo();
    let name = params
        .map(|Path(params)| full_ref(&params))
        .unwrap_or_else(|| "refs/".to_string());
    if let Some(sha) = state.refs.get(&name) {
        return Ok(json_response(
            200,
            &render::git_ref(&state, &name, sha, &context.api),
        ));
    }
    let prefix = format!("{}/", name.trim_end_matches('/'));
    let items: Vec<Value> = state
        .refs
        .range(prefix.clone()..)
        .take_while(|(below, _)| below.starts_with(&prefix))
        .map(|(below, sha)| render::git_ref(&state, below, sha, &context.api))
        .collect();
    if items.is_empty() {
        return Err(ApiError::not_found(docs::REFS));
    }
    Ok(json_response(200, &Value::Array(items)))
}

/// Every matching ref, unpaginated, as GitHub answers this endpoint.
async fn matching_refs(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
) -> ApiResult {
    let state = shared.repo();
    let prefix = full_ref(&params);
    let items: Vec<Value> = state
        .refs
        .range(prefix.clone()..)
        .take_while(|(name, _)| name.starts_with(&prefix))
        .map(|(name, sha)| render::git_ref(&state, name, sha, &context.api))
        .collect();
    Ok(json_response(200, &Value::Array(items)))
}

#[derive(Deserialize)]
struct NewRef {
    #[serde(rename = "ref")]
    reference: Option<String>,
    sha: Option<String>,
}

async fn create_ref(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    body: Bytes,
) -> ApiResult {
    let new: NewRef = parse_body(&body, docs::CREATE_REF)?;
    let name = new
        .reference
        .ok_or_else(|| ApiError::missing_field("ref", docs::CREATE_REF))?;
    let sha = new
        .sha
        .ok_or_else(|| ApiError::missing_field("sha", docs::CREATE_REF))?;
    if !name.starts_with("refs/") || name.matches('/').count() < 2 || name.ends_with('/') {
        return Err(ApiError::unprocessable(
            "Reference name is not well formed",
            docs::CREATE_REF,
        ));
    }
    let mut state = shared.repo();
    if state.refs.contains_key(&name) {
        return Err(ApiError::unprocessable(
            "Reference already exists",
            docs::CREATE_REF,
        ));
    }
    if !state.commits.contains_key(&sha) {
        return Err(ApiError::unprocessable(
            "Object does not exist",
            docs::CREATE_REF,
        ));
    }
    state.set_ref(&name, &sha);
    let answer = render::git_ref(&state, &name, &sha, &context.api);
    let location = answer["url"].as_str().unwrap_or_default().to_string();
    Ok(created_response(&answer, &location))
}

#[derive(Deserialize)]
struct RefUpdate {
    sha: Option<String>,
    #[serde(default)]
    force: bool,
}

async fn update_ref(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    body: Bytes,
) -> ApiResult {
    let update: RefUpdate = parse_body(&body, docs::UPDATE_REF)?;
    let sha = update
        .sha
        .ok_or_else(|| ApiError::missing_field("sha", docs::UPDATE_REF))?;
    let name = full_ref(&params);
    let mut state = shared.repo();
    let current = state
        .refs
        .get(&name)
        .cloned()
        .ok_or_else(|| ApiError::unprocessable("Reference does not exist", docs::UPDATE_REF))?;
    if !state.commits.contains_key(&sha) {
        return Err(ApiError::unprocessable(
            "Object does not exist",
            docs::UPDATE_REF,
        ));
    }
    if !update.force && !state.is_ancestor(&current, &sha) {
        return Err(ApiError::unprocessable(
            "Update is not a fast forward",
            docs::UPDATE_REF,
        ));
    }
    state.set_ref(&name, &sha);
    Ok(json_response(
        200,
        &render::git_ref(&state, &name, &sha, &context.api),
    ))
}

async fn delete_ref(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
) -> ApiResult {
    let name = full_ref(&params);
    let mut state = shared.repo();
    let Some(sha) = state.refs.remove(&name) else {
        return Err(ApiError::unprocessable(
            "Reference does not exist",
            docs::DELETE_REF,
        ));
    };
    state.deleted_refs.push(DeletedRef {
        name,
        sha,
        by: context.login,
    });
    Ok(empty_response(204))
}

async fn get_git_commit(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
) -> ApiResult {
    let state = shared.repo();
    let sha = params.get("sha").cloned().unwrap_or_default();
    let commit = state
        .commits
        .get(&sha)
        .ok_or_else(|| ApiError::not_found(docs::GIT_COMMITS))?;
    Ok(json_response(
        200,
        &render::git_commit(&state, commit, &context.api),
    ))
}

#[derive(Deserialize)]
struct PersonInput {
    name: String,
    email: String,
    date: Option<String>,
}

#[derive(Deserialize)]
struct NewCommitInput {
    message: Option<String>,
    tree: Option<String>,
    #[serde(default)]
    parents: Vec<String>,
    author: Option<PersonInput>,
    committer: Option<PersonInput>,
}

/// The account GitHub would attach to an identity: the caller's own, or the one whose noreply
/// email this is, else none.
fn login_for_identity(identity: &GitIdentity, caller: &str) -> Option<String> {
    let own = identity_for_login(caller, identity.date);
    if identity.email == own.email {
        return Some(caller.to_string());
    }
    let (number, rest) = identity.email.split_once('+')?;
    let login = rest.strip_suffix("@users.noreply.github.com")?;
    (number.parse::<u64>().ok()? == user_id(login)).then(|| login.to_string())
}

fn identity_from(input: Option<PersonInput>, caller: &str, now: Timestamp) -> GitIdentity {
    match input {
        Some(person) => GitIdentity {
            name: person.name,
            email: person.email,
            date: person
                .date
                .as_deref()
                .and_then(Timestamp::parse)
                .unwrap_or(now),
        },
        None => identity_for_login(caller, now),
    }
}

async fn create_commit(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    body: Bytes,
) -> ApiResult {
    let input: NewCommitInput = parse_body(&body, docs::GIT_COMMITS)?;
    let message = input
        .message
        .ok_or_else(|| ApiError::missing_field("message", docs::GIT_COMMITS))?;
    let tree = input
        .tree
        .ok_or_else(|| ApiError::missing_field("tree", docs::GIT_COMMITS))?;
    let mut state = shared.repo();
    if !state.trees.contains_key(&tree) {
        return Err(ApiError::unprocessable(
            "Tree SHA does not exist",
            docs::GIT_COMMITS,
        ));
    }
    if let Some(missing) = input
        .parents
        .iter()
        .find(|parent| !state.commits.contains_key(*parent))
    {
        return Err(ApiError::unprocessable(
            format!("Parent SHA does not exist or is not a commit object: {missing}"),
            docs::GIT_COMMITS,
        ));
    }
    let now = state.now();
    let author = identity_from(input.author, &context.login, now);
    let committer = match input.committer {
        Some(person) => identity_from(Some(person), &context.login, now),
        None => author.clone(),
    };
    let author_login = login_for_identity(&author, &context.login);
    let committer_login = login_for_identity(&committer, &context.login);
    let sha = state.store_commit(NewCommit {
        tree,
        parents: input.parents,
        message,
        author,
        committer,
        author_login,
        committer_login,
    });
    Ok(json_response(
        201,
        &render::git_commit(&state, &state.commits[&sha], &context.api),
    ))
}

#[derive(Deserialize)]
struct TreeEntryInput {
    path: String,
    /// Absent (`None`), `null` (`Some(None)`: delete the path) or a blob sha.
    #[serde(default, deserialize_with = "present")]
    sha: Option<Option<String>>,
    content: Option<String>,
}

/// A field that is present, `null` or not: serde reads a `null` `Option<Option<_>>` as absent.
fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}

#[derive(Deserialize)]
struct NewTreeInput {
    tree: Option<Vec<TreeEntryInput>>,
    base_tree: Option<String>,
}

/// A tree as GitHub answers it: its own entries, or with `recursive` every entry below it.
fn tree_answer(state: &mut RepoState, sha: &str, recursive: bool, api: &str) -> Value {
    let full_name = state.full_name();
    let entries: Vec<Value> = state
        .tree_listing(sha, recursive)
        .iter()
        .map(|entry| match entry.size {
            Some(size) => json!({
                "path": entry.path, "mode": "100644", "type": "blob", "sha": entry.sha,
                "size": size,
                "url": format!("{api}/repos/{full_name}/git/blobs/{}", entry.sha),
            }),
            None => json!({
                "path": entry.path, "mode": "040000", "type": "tree", "sha": entry.sha,
                "url": format!("{api}/repos/{full_name}/git/trees/{}", entry.sha),
            }),
        })
        .collect();
    json!({
        "sha": sha,
        "url": format!("{api}/repos/{full_name}/git/trees/{sha}"),
        "tree": entries,
        "truncated": false,
    })
}

async fn create_tree(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    body: Bytes,
) -> ApiResult {
    let input: NewTreeInput = parse_body(&body, docs::GIT_TREES)?;
    let entries = input
        .tree
        .ok_or_else(|| ApiError::missing_field("tree", docs::GIT_TREES))?;
    let mut state = shared.repo();
    let mut files: BTreeMap<String, String> = match &input.base_tree {
        Some(base) if !state.trees.contains_key(base) => {
            return Err(ApiError::unprocessable(
                "base_tree is not a valid tree oid",
                docs::GIT_TREES,
            ));
        }
        Some(base) => state.tree_files(base),
        None => BTreeMap::new(),
    };
    for entry in entries {
        match (entry.content, entry.sha) {
            (Some(content), _) => {
                let blob = state.store_blob(&content);
                files.insert(entry.path, blob);
            }
            (None, Some(None)) => {
                // A deletion names a file or a directory of the tree being built; GitHub
                // refuses one that names nothing.
                let directory = format!("{}/", entry.path);
                let before = files.len();
                files.retain(|path, _| *path != entry.path && !path.starts_with(&directory));
                if files.len() == before {
                    return Err(ApiError::unprocessable(
                        "GitRPC::BadObjectState",
                        docs::GIT_TREES,
                    ));
                }
            }
            (None, Some(Some(blob))) => {
                if !state.blobs.contains_key(&blob) {
                    return Err(ApiError::unprocessable(
                        format!("GitRPC::BadObjectState: {blob}"),
                        docs::GIT_TREES,
                    ));
                }
                files.insert(entry.path, blob);
            }
            (None, None) => {
                return Err(ApiError::missing_field("sha", docs::GIT_TREES));
            }
        }
    }
    let sha = state.store_tree(files);
    Ok(json_response(
        201,
        &tree_answer(&mut state, &sha, false, &context.api),
    ))
}

/// `GET /git/trees/{tree}`: a tree sha, or what names one (a commit sha, a branch or tag);
/// `recursive` with any value lists every entry below it.
async fn get_tree(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    uri: Uri,
) -> ApiResult {
    let recursive = QueryParams::parse(uri.query()).get("recursive").is_some();
    let mut state = shared.repo();
    let named = params
        .get("sha")
        .map(|value| value.trim_start_matches('/').to_string())
        .unwrap_or_default();
    let sha = if state.trees.contains_key(&named) {
        Some(named)
    } else {
        state
            .resolve_commitish(&named)
            .and_then(|commit| state.commits.get(&commit))
            .map(|commit| commit.tree.clone())
    };
    let sha = sha.ok_or_else(|| ApiError::not_found(GET_TREE))?;
    Ok(json_response(
        200,
        &tree_answer(&mut state, &sha, recursive, &context.api),
    ))
}

async fn get_blob(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
) -> ApiResult {
    let state = shared.repo();
    let sha = params.get("sha").cloned().unwrap_or_default();
    let content = state
        .blobs
        .get(&sha)
        .ok_or_else(|| ApiError::not_found(docs::REST))?;
    Ok(json_response(
        200,
        &json!({
            "sha": sha,
            "node_id": format!("B_kwDO{}", &sha[..12.min(sha.len())]),
            "size": content.len(),
            "url": format!("{}/repos/{}/git/blobs/{sha}", context.api, state.full_name()),
            "content": base64::engine::general_purpose::STANDARD.encode(content),
            "encoding": "base64",
        }),
    ))
}

/// `GET /commits/{ref}`, or a ref's statuses (`…/statuses`, `…/status`), whose paths it shares.
async fn get_commit(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    uri: Uri,
) -> ApiResult {
    let state = shared.repo();
    let reference = params
        .get("reference")
        .map(|value| value.trim_start_matches('/').to_string())
        .unwrap_or_default();
    if let Some(reference) = reference.strip_suffix("/statuses") {
        return routes_statuses::list_statuses(&state, reference, &context, &uri);
    }
    if let Some(reference) = reference.strip_suffix("/status") {
        return routes_statuses::combined_status(&state, reference, &context);
    }
    let commit = state
        .resolve_commitish(&reference)
        .and_then(|sha| state.commits.get(&sha))
        .ok_or_else(|| {
            ApiError::unprocessable(
                format!("No commit found for SHA: {reference}"),
                docs::COMMITS,
            )
        })?;
    let mut answer = render::rest_commit(&state, commit, &context.api);
    let parent = commit.parents.first().map(String::as_str);
    let files: Vec<Value> = state
        .diff_commits(parent, &commit.sha)
        .iter()
        .map(|change| render::pull_file(&state, change, &context.api))
        .collect();
    answer["files"] = Value::Array(files);
    Ok(json_response(200, &answer))
}

/// `GET /commits?sha=&path=&author=&since=&until=`, newest first, paginated.
async fn list_commits(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    uri: Uri,
) -> ApiResult {
    let query = QueryParams::parse(uri.query());
    let state = shared.repo();
    let start = query
        .filter("sha")
        .map(str::to_string)
        .unwrap_or_else(|| state.default_branch.clone());
    let head = state
        .resolve_commitish(&start)
        .ok_or_else(|| ApiError::not_found(docs::COMMITS))?;
    let author = query.filter("author");
    let since = query.filter("since").and_then(Timestamp::parse);
    let until = query.filter("until").and_then(Timestamp::parse);
    let items: Vec<Value> = state
        .history(&head, query.filter("path"))
        .into_iter()
        .filter(|commit| {
            author.is_none_or(|author| {
                commit.author_login.as_deref() == Some(author) || commit.author.email == author
            })
        })
        .filter(|commit| since.is_none_or(|since| commit.committer.date >= since))
        .filter(|commit| until.is_none_or(|until| commit.committer.date <= until))
        .map(|commit| render::rest_commit(&state, commit, &context.api))
        .collect();
    Ok(page_of(&context, &uri, &items))
}
