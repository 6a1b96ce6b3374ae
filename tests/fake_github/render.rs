//! GitHub's REST v3 JSON shapes for the fake's objects: field names and types as GitHub returns
//! them (integer ids, `node_id`s, RFC 3339 `Z` timestamps, nullable users).

use serde_json::{Value, json};

use super::git::FileChange;
use super::prng::user_id;
use super::state::{
    Commit, Issue, IssueComment, Job, Label, PullRequest, PullState, RepoState, Role, Workflow,
    WorkflowRun,
};

pub const HTML_BASE: &str = "https://github.com";

pub fn pull_node_id(pull_id: u64) -> String {
    format!("PR_kwDO{pull_id:010}")
}

/// A repository's node id: REST's `node_id`, GraphQL's `Repository.id`.
pub fn repository_node_id(repository_id: u64) -> String {
    format!("R_kgDO{repository_id:08}")
}

fn issue_node_id(pull_id: u64) -> String {
    format!("I_kwDO{pull_id:010}")
}

/// A login as it appears in URLs (`name[bot]` → `name%5Bbot%5D`).
fn login_in_url(login: &str) -> String {
    login.replace('[', "%5B").replace(']', "%5D")
}

/// A user object (`simple-user`); bots (`name[bot]`) have type `Bot`.
pub fn user(login: &str, api: &str) -> Value {
    let kind = if login.ends_with("[bot]") {
        "Bot"
    } else {
        "User"
    };
    let id = user_id(login);
    let url = format!("{api}/users/{}", login_in_url(login));
    let html_url = match login.strip_suffix("[bot]") {
        Some(app) => format!("{HTML_BASE}/apps/{app}"),
        None => format!("{HTML_BASE}/{login}"),
    };
    json!({
        "login": login,
        "id": id,
        "node_id": format!("U_kgDO{id:08}"),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{id}?v=4"),
        "gravatar_id": "",
        "url": url,
        "html_url": html_url,
        "followers_url": format!("{url}/followers"),
        "following_url": format!("{url}/following{{/other_user}}"),
        "gists_url": format!("{url}/gists{{/gist_id}}"),
        "starred_url": format!("{url}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{url}/subscriptions"),
        "organizations_url": format!("{url}/orgs"),
        "repos_url": format!("{url}/repos"),
        "events_url": format!("{url}/events{{/privacy}}"),
        "received_events_url": format!("{url}/received_events"),
        "type": kind,
        "user_view_type": "public",
        "site_admin": false,
    })
}

/// The caller's own account (`GET /user`, GitHub's `private-user`).
pub fn authenticated_user(login: &str, api: &str) -> Value {
    let mut account = user(login, api);
    let profile = json!({
        "user_view_type": "private",
        "name": login,
        "company": null,
        "blog": "",
        "location": null,
        "email": null,
        "hireable": null,
        "bio": null,
        "twitter_username": null,
        "public_repos": 1,
        "public_gists": 0,
        "followers": 0,
        "following": 0,
        "created_at": "2020-01-01T00:00:00Z",
        "updated_at": "2020-01-01T00:00:00Z",
        "private_gists": 0,
        "total_private_repos": 0,
        "owned_private_repos": 0,
        "disk_usage": 0,
        "collaborators": 0,
        "two_factor_authentication": true,
    });
    extend(&mut account, profile);
    account
}

/// Adds the fields of `more` (an object) to `object`.
fn extend(object: &mut Value, more: Value) {
    if let (Value::Object(object), Value::Object(more)) = (object, more) {
        object.extend(more);
    }
}

fn optional_user(login: Option<&str>, api: &str) -> Value {
    login.map(|login| user(login, api)).unwrap_or(Value::Null)
}

pub fn repository(state: &RepoState, api: &str) -> Value {
    repository_named(state, &state.full_name(), api)
}

/// A repository object for `owner/name` (this repository, or a fork of it): GitHub's
/// `repository` / `full-repository`.
pub fn repository_named(state: &RepoState, full_name: &str, api: &str) -> Value {
    let mut repository = minimal_repository(state, full_name, api);
    let open_issues = if full_name == state.full_name() {
        state
            .pulls
            .values()
            .filter(|pull| pull.state == PullState::Open)
            .count()
    } else {
        0
    };
    let pushed_at = state.now();
    extend(
        &mut repository,
        json!({
            "default_branch": state.default_branch,
            "visibility": "public",
            "clone_url": format!("{HTML_BASE}/{full_name}.git"),
            "git_url": format!("git://github.com/{full_name}.git"),
            "ssh_url": format!("git@github.com:{full_name}.git"),
            "svn_url": format!("{HTML_BASE}/{full_name}"),
            "mirror_url": null,
            "homepage": null,
            "language": null,
            "license": null,
            "size": 0,
            "forks": 0,
            "forks_count": 0,
            "stargazers_count": 0,
            "watchers": 0,
            "watchers_count": 0,
            "network_count": 0,
            "subscribers_count": 0,
            "open_issues": open_issues,
            "open_issues_count": open_issues,
            "has_issues": true,
            "has_projects": true,
            "has_wiki": true,
            "has_pages": false,
            "has_downloads": true,
            "has_discussions": false,
            "archived": false,
            "disabled": false,
            "allow_forking": true,
            "is_template": false,
            "topics": [],
            "created_at": "2020-01-01T00:00:00Z",
            "updated_at": pushed_at,
            "pushed_at": pushed_at,
        }),
    );
    repository
}

/// The repository object workflow runs carry (`minimal-repository`).
pub fn minimal_repository(state: &RepoState, full_name: &str, api: &str) -> Value {
    let (owner, name) = full_name.split_once('/').unwrap_or((full_name, ""));
    let is_this = full_name == state.full_name();
    let id = if is_this {
        state.repository_id
    } else {
        user_id(full_name)
    };
    let url = format!("{api}/repos/{full_name}");
    let mut repository = json!({
        "id": id,
        "node_id": repository_node_id(id),
        "name": name,
        "full_name": full_name,
        "owner": user(owner, api),
        "private": false,
        "html_url": format!("{HTML_BASE}/{full_name}"),
        "description": null,
        "fork": if is_this { state.fork } else { true },
        "url": url,
    });
    for (key, suffix) in REPOSITORY_URLS {
        repository[key] = json!(format!("{url}{suffix}"));
    }
    repository
}

/// The hypermedia URLs (RFC 6570 templates) of a repository object, below its API URL.
const REPOSITORY_URLS: [(&str, &str); 36] = [
    ("archive_url", "/{archive_format}{/ref}"),
    ("assignees_url", "/assignees{/user}"),
    ("blobs_url", "/git/blobs{/sha}"),
    ("branches_url", "/branches{/branch}"),
    ("collaborators_url", "/collaborators{/collaborator}"),
    ("comments_url", "/comments{/number}"),
    ("commits_url", "/commits{/sha}"),
    ("compare_url", "/compare/{base}...{head}"),
    ("contents_url", "/contents/{+path}"),
    ("contributors_url", "/contributors"),
    ("deployments_url", "/deployments"),
    ("downloads_url", "/downloads"),
    ("events_url", "/events"),
    ("forks_url", "/forks"),
    ("git_commits_url", "/git/commits{/sha}"),
    ("git_refs_url", "/git/refs{/sha}"),
    ("git_tags_url", "/git/tags{/sha}"),
    ("hooks_url", "/hooks"),
    ("issue_comment_url", "/issues/comments{/number}"),
    ("issue_events_url", "/issues/events{/number}"),
    ("issues_url", "/issues{/number}"),
    ("keys_url", "/keys{/key_id}"),
    ("labels_url", "/labels{/name}"),
    ("languages_url", "/languages"),
    ("merges_url", "/merges"),
    ("milestones_url", "/milestones{/number}"),
    (
        "notifications_url",
        "/notifications{?since,all,participating}",
    ),
    ("pulls_url", "/pulls{/number}"),
    ("releases_url", "/releases{/id}"),
    ("stargazers_url", "/stargazers"),
    ("statuses_url", "/statuses/{sha}"),
    ("subscribers_url", "/subscribers"),
    ("subscription_url", "/subscription"),
    ("tags_url", "/tags"),
    ("teams_url", "/teams"),
    ("trees_url", "/git/trees{/sha}"),
];

pub fn label(label: &Label, api: &str, state: &RepoState) -> Value {
    json!({
        "id": label.id,
        "node_id": format!("LA_kwDO{:010}", label.id),
        "url": format!("{api}/repos/{}/labels/{}", state.full_name(), label.name),
        "name": label.name,
        "color": label.color,
        "default": false,
        "description": label.description,
    })
}

pub fn issue_labels(state: &RepoState, labels: &[String], api: &str) -> Vec<Value> {
    labels
        .iter()
        .filter_map(|name| state.labels.get(name))
        .map(|found| label(found, api, state))
        .collect()
}

/// A pull request's head or base; `this_repository` is this repository's object, rendered once
/// by the caller (it counts the open issues, a pass over every pull request).
fn branch_end(
    state: &RepoState,
    repo: Option<&str>,
    branch: &str,
    sha: &str,
    api: &str,
    this_repository: &Value,
) -> Value {
    let owner = repo
        .and_then(|full_name| full_name.split_once('/'))
        .map(|(owner, _)| owner)
        .unwrap_or("ghost");
    json!({
        "label": format!("{owner}:{branch}"),
        "ref": branch,
        "sha": sha,
        "user": user(owner, api),
        "repo": match repo {
            Some(full_name) if full_name == state.full_name() => this_repository.clone(),
            Some(full_name) => repository_named(state, full_name, api),
            None => Value::Null,
        },
    })
}

/// A pull request as listings show it (`pull-request-simple`).
pub fn pull_request(state: &RepoState, pull: &PullRequest, api: &str) -> Value {
    pull_request_beside(state, pull, api, &repository(state, api))
}

/// [`pull_request`] with this repository's object rendered once by the caller, as a listing of
/// many pull requests does.
pub fn pull_request_beside(
    state: &RepoState,
    pull: &PullRequest,
    api: &str,
    this_repository: &Value,
) -> Value {
    let full_name = state.full_name();
    let number = pull.number;
    let base_sha = state.branch_sha(&pull.base_ref).unwrap_or_default();
    let url = format!("{api}/repos/{full_name}/pulls/{number}");
    let html_url = format!("{HTML_BASE}/{full_name}/pull/{number}");
    let issue_url = format!("{api}/repos/{full_name}/issues/{number}");
    let statuses_url = format!("{api}/repos/{full_name}/statuses/{}", pull.head_sha);
    let link = |href: &str| json!({ "href": href });
    json!({
        "url": url,
        "id": pull.id,
        "node_id": pull_node_id(pull.id),
        "html_url": html_url,
        "diff_url": format!("{html_url}.diff"),
        "patch_url": format!("{html_url}.patch"),
        "issue_url": issue_url,
        "commits_url": format!("{url}/commits"),
        "review_comments_url": format!("{url}/comments"),
        "review_comment_url": format!("{api}/repos/{full_name}/pulls/comments{{/number}}"),
        "comments_url": format!("{issue_url}/comments"),
        "statuses_url": statuses_url,
        "number": number,
        "state": pull.state.as_str(),
        "locked": false,
        "title": pull.title,
        "user": user(&pull.author, api),
        "body": pull.body,
        "labels": issue_labels(state, &pull.labels, api),
        "created_at": pull.created_at,
        "updated_at": pull.updated_at,
        "closed_at": pull.closed_at,
        "merged_at": pull.merged_at,
        "merge_commit_sha": pull.merge_commit_sha,
        "assignee": Value::Null,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "milestone": Value::Null,
        "draft": pull.draft,
        "head": branch_end(state, pull.head_repo.as_deref(), &pull.head_ref, &pull.head_sha, api, this_repository),
        "base": branch_end(state, Some(&full_name), &pull.base_ref, base_sha, api, this_repository),
        "_links": {
            "self": link(&url),
            "html": link(&html_url),
            "issue": link(&issue_url),
            "comments": link(&format!("{issue_url}/comments")),
            "review_comments": link(&format!("{url}/comments")),
            "review_comment": link(&format!("{api}/repos/{full_name}/pulls/comments{{/number}}")),
            "commits": link(&format!("{url}/commits")),
            "statuses": link(&statuses_url),
        },
        "author_association": if pull.author == state.owner { "OWNER" } else { "CONTRIBUTOR" },
        "auto_merge": Value::Null,
        "active_lock_reason": Value::Null,
    })
}

/// A single pull request (`GET/PATCH /pulls/{n}`, GitHub's `pull-request`): the listing's
/// fields plus merge state and counts.
pub fn pull_request_detail(state: &RepoState, pull: &PullRequest, api: &str) -> Value {
    let mut answer = pull_request(state, pull, api);
    let base = state.branch_sha(&pull.base_ref);
    let (commits, merge_base) = state.commits_between(base, &pull.head_sha);
    let changes = state.diff_commits(merge_base.as_deref(), &pull.head_sha);
    let comments = state
        .comments
        .values()
        .filter(|comment| comment.issue_number == pull.number)
        .count();
    let open = pull.state == PullState::Open;
    let mergeable_state = match (open, pull.draft) {
        (true, true) => "draft",
        (true, false) => "clean",
        (false, _) => "unknown",
    };
    let merged_by = pull
        .merged_at
        .and(pull.closed_by.as_deref())
        .map(|login| user(login, api))
        .unwrap_or(Value::Null);
    extend(
        &mut answer,
        json!({
            "merged": pull.merged_at.is_some(),
            "mergeable": if open { json!(true) } else { Value::Null },
            "rebaseable": if open { json!(true) } else { Value::Null },
            "mergeable_state": mergeable_state,
            "merged_by": merged_by,
            "comments": comments,
            "review_comments": 0,
            "maintainer_can_modify": false,
            "commits": commits.len(),
            "additions": changes.iter().map(|change| change.additions).sum::<u64>(),
            "deletions": changes.iter().map(|change| change.deletions).sum::<u64>(),
            "changed_files": changes.len(),
        }),
    );
    answer
}

/// The issue view of a pull request (`GET /issues/{n}`), with `closed_by` and `pull_request`.
pub fn issue(state: &RepoState, pull: &PullRequest, api: &str) -> Value {
    let full_name = state.full_name();
    let number = pull.number;
    let comments = state
        .comments
        .values()
        .filter(|comment| comment.issue_number == number)
        .count();
    let state_reason = match (pull.state, pull.merged_at) {
        (PullState::Open, _) => Value::Null,
        (PullState::Closed, Some(_)) => json!("completed"),
        (PullState::Closed, None) => json!("not_planned"),
    };
    let url = format!("{api}/repos/{full_name}/issues/{number}");
    json!({
        "url": url,
        "repository_url": format!("{api}/repos/{full_name}"),
        "labels_url": format!("{url}/labels{{/name}}"),
        "comments_url": format!("{url}/comments"),
        "events_url": format!("{url}/events"),
        "id": pull.id + 1_000_000_000,
        "node_id": issue_node_id(pull.id),
        "html_url": format!("{HTML_BASE}/{full_name}/pull/{number}"),
        "number": number,
        "title": pull.title,
        "user": user(&pull.author, api),
        "labels": issue_labels(state, &pull.labels, api),
        "state": pull.state.as_str(),
        "state_reason": state_reason,
        "locked": false,
        "assignee": Value::Null,
        "assignees": [],
        "milestone": Value::Null,
        "comments": comments,
        "created_at": pull.created_at,
        "updated_at": pull.updated_at,
        "closed_at": pull.closed_at,
        "closed_by": optional_user(pull.closed_by.as_deref(), api),
        "body": pull.body,
        "draft": pull.draft,
        "author_association": if pull.author == state.owner { "OWNER" } else { "CONTRIBUTOR" },
        "pull_request": {
            "url": format!("{api}/repos/{full_name}/pulls/{number}"),
            "html_url": format!("{HTML_BASE}/{full_name}/pull/{number}"),
            "diff_url": format!("{HTML_BASE}/{full_name}/pull/{number}.diff"),
            "patch_url": format!("{HTML_BASE}/{full_name}/pull/{number}.patch"),
            "merged_at": pull.merged_at,
        },
    })
}

/// An issue that is not a pull request (`GET /issues/{n}`): no `pull_request` key.
pub fn real_issue(state: &RepoState, issue: &Issue, api: &str) -> Value {
    let full_name = state.full_name();
    let number = issue.number;
    let comments = state
        .comments
        .values()
        .filter(|comment| comment.issue_number == number)
        .count();
    let url = format!("{api}/repos/{full_name}/issues/{number}");
    json!({
        "url": url,
        "repository_url": format!("{api}/repos/{full_name}"),
        "labels_url": format!("{url}/labels{{/name}}"),
        "comments_url": format!("{url}/comments"),
        "events_url": format!("{url}/events"),
        "id": issue.id + 1_000_000_000,
        "node_id": issue_node_id(issue.id),
        "html_url": format!("{HTML_BASE}/{full_name}/issues/{number}"),
        "number": number,
        "title": issue.title,
        "user": user(&issue.author, api),
        "labels": issue_labels(state, &issue.labels, api),
        "state": issue.state.as_str(),
        "state_reason": issue.state_reason,
        "locked": issue.locked,
        "assignee": Value::Null,
        "assignees": [],
        "milestone": Value::Null,
        "comments": comments,
        "created_at": issue.created_at,
        "updated_at": issue.updated_at,
        "closed_at": issue.closed_at,
        "closed_by": optional_user(issue.closed_by.as_deref(), api),
        "body": issue.body,
        "author_association": if issue.author == state.owner { "OWNER" } else { "NONE" },
    })
}

/// `GET /collaborators/{username}/permission`: the legacy `permission`, the `role_name` and the
/// account as a collaborator (`none` for an account without access).
pub fn collaborator_permission(login: &str, role: Option<Role>, api: &str) -> Value {
    let (permission, role_name) = match role {
        Some(role) => (role.permission(), role.as_str()),
        None => ("none", "none"),
    };
    let at_least = |wanted: Role| {
        role.is_some_and(|role| {
            let rank = |role: Role| match role {
                Role::Read => 1,
                Role::Triage => 2,
                Role::Write => 3,
                Role::Maintain => 4,
                Role::Admin => 5,
            };
            rank(role) >= rank(wanted)
        })
    };
    let mut account = user(login, api);
    extend(
        &mut account,
        json!({
            "permissions": {
                "pull": at_least(Role::Read),
                "triage": at_least(Role::Triage),
                "push": at_least(Role::Write),
                "maintain": at_least(Role::Maintain),
                "admin": at_least(Role::Admin),
            },
            "role_name": role_name,
        }),
    );
    json!({
        "permission": permission,
        "role_name": role_name,
        "user": account,
    })
}

pub fn comment(state: &RepoState, comment: &IssueComment, api: &str) -> Value {
    let full_name = state.full_name();
    json!({
        "id": comment.id,
        "node_id": format!("IC_kwDO{:010}", comment.id),
        "url": format!("{api}/repos/{full_name}/issues/comments/{}", comment.id),
        "html_url": format!("{HTML_BASE}/{full_name}/pull/{}#issuecomment-{}", comment.issue_number, comment.id),
        "issue_url": format!("{api}/repos/{full_name}/issues/{}", comment.issue_number),
        "body": comment.body,
        "user": user(&comment.author, api),
        "created_at": comment.created_at,
        "updated_at": comment.updated_at,
        "author_association": if comment.author == state.owner { "OWNER" } else { "NONE" },
    })
}

pub fn git_ref(state: &RepoState, full_ref: &str, sha: &str, api: &str) -> Value {
    let full_name = state.full_name();
    json!({
        "ref": full_ref,
        "node_id": format!("REF_kwDO{}", &sha[..12.min(sha.len())]),
        "url": format!("{api}/repos/{full_name}/git/{full_ref}"),
        "object": {
            "sha": sha,
            "type": "commit",
            "url": format!("{api}/repos/{full_name}/git/commits/{sha}"),
        },
    })
}

fn git_person(identity: &super::state::GitIdentity) -> Value {
    json!({ "name": identity.name, "email": identity.email, "date": identity.date })
}

/// A git commit object (`GET /git/commits/{sha}`): git identities only, no logins.
pub fn git_commit(state: &RepoState, commit: &Commit, api: &str) -> Value {
    let full_name = state.full_name();
    json!({
        "sha": commit.sha,
        "node_id": format!("C_kwDO{}", &commit.sha[..16]),
        "url": format!("{api}/repos/{full_name}/git/commits/{}", commit.sha),
        "html_url": format!("{HTML_BASE}/{full_name}/commit/{}", commit.sha),
        "author": git_person(&commit.author),
        "committer": git_person(&commit.committer),
        "message": commit.message,
        "tree": { "sha": commit.tree, "url": format!("{api}/repos/{full_name}/git/trees/{}", commit.tree) },
        "parents": commit.parents.iter().map(|parent| json!({
            "sha": parent,
            "url": format!("{api}/repos/{full_name}/git/commits/{parent}"),
            "html_url": format!("{HTML_BASE}/{full_name}/commit/{parent}"),
        })).collect::<Vec<_>>(),
        "verification": { "verified": false, "reason": "unsigned", "signature": null, "payload": null, "verified_at": null },
    })
}

/// A REST commit (`GET /commits/{sha}`, pull request commits): the git commit under `commit`
/// plus the GitHub accounts under `author` / `committer` (either may be null).
pub fn rest_commit(state: &RepoState, commit: &Commit, api: &str) -> Value {
    let full_name = state.full_name();
    json!({
        "sha": commit.sha,
        "node_id": format!("C_kwDO{}", &commit.sha[..16]),
        "url": format!("{api}/repos/{full_name}/commits/{}", commit.sha),
        "html_url": format!("{HTML_BASE}/{full_name}/commit/{}", commit.sha),
        "comments_url": format!("{api}/repos/{full_name}/commits/{}/comments", commit.sha),
        "commit": {
            "author": git_person(&commit.author),
            "committer": git_person(&commit.committer),
            "message": commit.message,
            "tree": { "sha": commit.tree, "url": format!("{api}/repos/{full_name}/git/trees/{}", commit.tree) },
            "url": format!("{api}/repos/{full_name}/git/commits/{}", commit.sha),
            "comment_count": 0,
        },
        "author": optional_user(commit.author_login.as_deref(), api),
        "committer": optional_user(commit.committer_login.as_deref(), api),
        "parents": commit.parents.iter().map(|parent| json!({
            "sha": parent,
            "url": format!("{api}/repos/{full_name}/commits/{parent}"),
            "html_url": format!("{HTML_BASE}/{full_name}/commit/{parent}"),
        })).collect::<Vec<_>>(),
    })
}

pub fn pull_file(state: &RepoState, change: &FileChange, api: &str) -> Value {
    let full_name = state.full_name();
    let mut file = json!({
        "sha": change.blob_sha,
        "filename": change.path,
        "status": change.status,
        "additions": change.additions,
        "deletions": change.deletions,
        "changes": change.additions + change.deletions,
        "blob_url": format!("{HTML_BASE}/{full_name}/blob/{}/{}", change.blob_sha.as_deref().unwrap_or("HEAD"), change.path),
        "raw_url": format!("{HTML_BASE}/{full_name}/raw/{}/{}", change.blob_sha.as_deref().unwrap_or("HEAD"), change.path),
        "contents_url": format!("{api}/repos/{full_name}/contents/{}", change.path),
    });
    if let Some(previous) = &change.previous_path {
        file["previous_filename"] = json!(previous);
    }
    file
}

/// The metadata of a file in the contents API (without `content`).
pub fn content_entry(
    state: &RepoState,
    path: &str,
    blob_sha: &str,
    size: usize,
    reference: &str,
    api: &str,
) -> Value {
    let full_name = state.full_name();
    let name = path.rsplit('/').next().unwrap_or(path);
    let url = format!("{api}/repos/{full_name}/contents/{path}?ref={reference}");
    let git_url = format!("{api}/repos/{full_name}/git/blobs/{blob_sha}");
    let html_url = format!("{HTML_BASE}/{full_name}/blob/{reference}/{path}");
    json!({
        "type": "file",
        "name": name,
        "path": path,
        "sha": blob_sha,
        "size": size,
        "url": url,
        "git_url": git_url,
        "html_url": html_url,
        "download_url": format!("https://raw.githubusercontent.com/{full_name}/{reference}/{path}"),
        "_links": { "self": url, "git": git_url, "html": html_url },
    })
}

pub fn workflow(state: &RepoState, workflow: &Workflow, api: &str) -> Value {
    let full_name = state.full_name();
    json!({
        "id": workflow.id,
        "node_id": format!("W_kwDO{:010}", workflow.id),
        "name": workflow.name,
        "path": workflow.path,
        "state": workflow.state,
        "created_at": "2020-01-01T00:00:00Z",
        "updated_at": "2020-01-01T00:00:00Z",
        "url": format!("{api}/repos/{full_name}/actions/workflows/{}", workflow.id),
        "html_url": format!("{HTML_BASE}/{full_name}/blob/{}/{}", state.default_branch, workflow.path),
    })
}

pub fn run(state: &RepoState, run: &WorkflowRun, api: &str) -> Value {
    let full_name = state.full_name();
    let path = state
        .workflows
        .get(&run.workflow_id)
        .map(|workflow| workflow.path.clone())
        .unwrap_or_default();
    let head_repository = run.head_repository.clone().unwrap_or(full_name.clone());
    let head_commit = state.commits.get(&run.head_sha).map(|commit| {
        json!({
            "id": commit.sha,
            "tree_id": commit.tree,
            "message": commit.message,
            "timestamp": commit.committer.date,
            "author": if commit.author_login.is_some() {
                json!({ "name": commit.author.name, "email": commit.author.email })
            } else {
                Value::Null
            },
            "committer": { "name": commit.committer.name, "email": commit.committer.email },
        })
    });
    json!({
        "id": run.id,
        "name": run.name,
        "node_id": format!("WFR_kwLO{:012}", run.id),
        "head_branch": run.head_branch,
        "head_sha": run.head_sha,
        "path": path,
        "display_title": run.display_title,
        "run_number": run.run_number,
        "event": run.event,
        "status": run.status,
        "conclusion": run.conclusion,
        "workflow_id": run.workflow_id,
        "check_suite_id": run.check_suite_id,
        "url": format!("{api}/repos/{full_name}/actions/runs/{}", run.id),
        "html_url": format!("{HTML_BASE}/{full_name}/actions/runs/{}", run.id),
        "jobs_url": format!("{api}/repos/{full_name}/actions/runs/{}/jobs", run.id),
        "logs_url": format!("{api}/repos/{full_name}/actions/runs/{}/logs", run.id),
        "check_suite_url": format!("{api}/repos/{full_name}/check-suites/{}", run.check_suite_id),
        "artifacts_url": format!("{api}/repos/{full_name}/actions/runs/{}/artifacts", run.id),
        "cancel_url": format!("{api}/repos/{full_name}/actions/runs/{}/cancel", run.id),
        "rerun_url": format!("{api}/repos/{full_name}/actions/runs/{}/rerun", run.id),
        "workflow_url": format!("{api}/repos/{full_name}/actions/workflows/{}", run.workflow_id),
        "pull_requests": [],
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "run_started_at": run.run_started_at,
        "run_attempt": run.run_attempt,
        "actor": user(&run.actor, api),
        "triggering_actor": user(&run.triggering_actor, api),
        "head_commit": head_commit,
        "repository": minimal_repository(state, &full_name, api),
        "head_repository": minimal_repository(state, &head_repository, api),
    })
}

pub fn job(state: &RepoState, job: &Job, api: &str) -> Value {
    let full_name = state.full_name();
    let run = state.runs.get(&job.run_id);
    json!({
        "id": job.id,
        "run_id": job.run_id,
        "run_url": format!("{api}/repos/{full_name}/actions/runs/{}", job.run_id),
        "node_id": format!("CR_kwDO{:012}", job.id),
        "head_sha": run.map(|run| run.head_sha.clone()),
        "head_branch": run.and_then(|run| run.head_branch.clone()),
        "run_attempt": run.map(|run| run.run_attempt).unwrap_or(1),
        "workflow_name": run.map(|run| run.name.clone()),
        "url": format!("{api}/repos/{full_name}/actions/jobs/{}", job.id),
        "html_url": format!("{HTML_BASE}/{full_name}/actions/runs/{}/job/{}", job.run_id, job.id),
        "status": job.status,
        "conclusion": job.conclusion,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "completed_at": job.completed_at,
        "name": job.name,
        "steps": [],
        "check_run_url": format!("{api}/repos/{full_name}/check-runs/{}", job.id),
        "labels": ["ubuntu-latest"],
        "runner_id": job.runner_name.as_ref().map(|_| job.id % 16 + 1),
        "runner_name": job.runner_name,
        "runner_group_id": job.runner_name.as_ref().map(|_| 2),
        "runner_group_name": job.runner_name.as_ref().map(|_| "GitHub Actions"),
    })
}

/// The `workflow_run` event GitHub delivers when run `id` ended (`completed`), from the fake's
/// record of the run and its workflow.
pub fn workflow_run_completed_event(state: &RepoState, id: u64) -> Value {
    let run = &state.runs[&id];
    let path = state.workflows[&run.workflow_id].path.clone();
    let full_name = state.full_name();
    json!({
        "action": "completed",
        "workflow_run": {
            "id": run.id,
            "name": run.name,
            "path": path,
            "head_branch": run.head_branch,
            "head_sha": run.head_sha,
            "event": run.event,
            "status": run.status,
            "conclusion": run.conclusion,
            "actor": {"login": run.actor},
            "triggering_actor": {"login": run.triggering_actor},
            "updated_at": run.updated_at,
            "repository": {"full_name": full_name},
            "head_repository": {"full_name": full_name},
        },
        "workflow": {"path": path},
        "repository": {"full_name": full_name, "default_branch": state.default_branch},
        "sender": {"login": run.actor},
    })
}
