//! The GitHub JSON that klaud reads, as its own structs.
//!
//! Only the fields klaud uses are declared, and every field GitHub may send as `null` or omit is
//! optional: octocrab's complete models reject some real payloads (a run whose
//! `head_commit.author` is null, for instance), and a listing must never fail on a field klaud
//! does not even need. No other module knows GitHub's JSON shapes.

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::core::github_state::{PullRequestState, RunConclusion, RunStatus};

/// A user or bot as GitHub embeds it (`user`, `actor`, `closed_by`, commit `author`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Account {
    pub login: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Repository {
    pub full_name: String,
    /// Its GraphQL id (what `updateRefs` names).
    #[serde(default)]
    pub node_id: String,
    pub default_branch: String,
    #[serde(default)]
    pub fork: bool,
}

/// The `full_name` of a repository embedded in another object (a PR head, a run).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RepositoryName {
    pub full_name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Label {
    pub name: String,
}

/// One side (head or base) of a pull request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequestBranch {
    #[serde(rename = "ref")]
    pub branch: String,
    pub sha: String,
    /// Null when the head repository was deleted.
    pub repo: Option<RepositoryName>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequest {
    pub number: u64,
    pub node_id: String,
    pub state: PullRequestState,
    #[serde(default)]
    pub draft: bool,
    #[serde(default)]
    pub title: String,
    /// `None` when the pull request has no description.
    #[serde(default)]
    pub body: Option<String>,
    pub user: Option<Account>,
    pub head: PullRequestBranch,
    pub base: PullRequestBranch,
    #[serde(default)]
    pub labels: Vec<Label>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub closed_at: Option<DateTime<Utc>>,
    pub merged_at: Option<DateTime<Utc>>,
}

/// A commit as `GET /pulls/{n}/commits` returns it (and the batched reads build it): `author` and
/// `committer` are GitHub accounts, null when the commit's e-mail matches none.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Commit {
    pub sha: String,
    pub author: Option<Account>,
    pub committer: Option<Account>,
    #[serde(default)]
    pub parents: Vec<CommitParent>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CommitParent {
    pub sha: String,
}

/// The issue side of a pull request: who closed it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Issue {
    pub number: u64,
    pub state: PullRequestState,
    pub closed_by: Option<Account>,
    #[serde(default)]
    pub labels: Vec<Label>,
    /// Present when the issue is a pull request.
    #[serde(default)]
    pub pull_request: Option<IssuePullRequest>,
}

/// The pull request part of an issue.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IssuePullRequest {
    #[serde(default)]
    pub merged_at: Option<DateTime<Utc>>,
}

/// A git commit object: its message (read in batches, `adapters/github/batch.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct GitCommit {
    pub sha: String,
    #[serde(default)]
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Comment {
    pub id: u64,
    pub body: Option<String>,
    pub user: Option<Account>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A git reference such as `refs/heads/klaud/state`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct GitReference {
    #[serde(rename = "ref")]
    pub name: String,
    pub object: GitObject,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct GitObject {
    pub sha: String,
}

/// A git tree (`GET /git/trees/{sha}`, `POST /git/trees`): its sha and entries (the whole
/// hierarchy when read with `recursive`, else its own entries).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct GitTree {
    pub sha: String,
    #[serde(default)]
    pub tree: Vec<GitTreeEntry>,
    /// True when GitHub cut the listing short (past 100,000 entries or 7 MB).
    #[serde(default)]
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct GitTreeEntry {
    /// Relative to the tree read, with `/` between directories.
    pub path: String,
    /// `blob`, `tree` or `commit` (a submodule).
    #[serde(rename = "type")]
    pub kind: String,
    pub sha: String,
}

/// A file read through the contents API.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ContentFile {
    pub sha: String,
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub encoding: String,
}

/// The answer to a contents API write: the new blob and commit.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ContentWrite {
    pub content: ContentWriteFile,
    pub commit: GitObject,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ContentWriteFile {
    pub sha: String,
}

/// A changed file of a pull request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequestFile {
    pub filename: String,
    pub status: String,
    pub previous_filename: Option<String>,
}

/// How many files a pull request changes (`changed_files` of `GET /pulls/{n}`), which the file
/// listing may not reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct PullRequestSize {
    #[serde(default)]
    pub changed_files: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WorkflowRun {
    pub id: u64,
    pub name: Option<String>,
    #[serde(default)]
    pub path: String,
    pub workflow_id: Option<u64>,
    pub head_branch: Option<String>,
    pub head_sha: String,
    /// The run's title (`run-name`, else what GitHub derives).
    #[serde(default)]
    pub display_title: Option<String>,
    pub event: String,
    pub status: Option<RunStatus>,
    pub conclusion: Option<RunConclusion>,
    pub actor: Option<Account>,
    pub triggering_actor: Option<Account>,
    pub run_attempt: Option<u32>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub run_started_at: Option<DateTime<Utc>>,
    pub head_repository: Option<RepositoryName>,
}

impl WorkflowRun {
    /// True until the run reached `completed` (a run without a status, or with one this version
    /// does not know, is active).
    pub fn is_active(&self) -> bool {
        !self.status.as_ref().is_some_and(RunStatus::is_completed)
    }
}

/// `{"total_count", "workflow_runs": [...]}`.
#[derive(Debug, Clone, Deserialize)]
pub struct WorkflowRunPage {
    pub total_count: u64,
    pub workflow_runs: Vec<WorkflowRun>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Job {
    pub id: u64,
    pub run_id: u64,
    pub name: String,
    pub status: RunStatus,
    pub conclusion: Option<RunConclusion>,
    pub started_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
    /// The job's `runs-on` labels.
    #[serde(default)]
    pub labels: Vec<String>,
}

/// `{"total_count", "jobs": [...]}`.
#[derive(Debug, Clone, Deserialize)]
pub struct JobPage {
    pub total_count: u64,
    pub jobs: Vec<Job>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_whose_head_commit_author_is_null_still_reads() {
        let run: WorkflowRun = serde_json::from_str(
            r#"{"id": 1, "name": "e2e", "path": ".github/workflows/e2e-tests.yml",
                "head_branch": "klaud/auto-a", "head_sha": "abc", "event": "workflow_dispatch",
                "status": "in_progress", "conclusion": null, "actor": {"login": "Klaud-Cold"},
                "triggering_actor": null, "run_attempt": 1,
                "created_at": "2026-11-30T10:00:00Z", "updated_at": "2026-11-30T10:01:00Z",
                "head_commit": {"id": "abc", "author": null, "committer": null},
                "head_repository": {"full_name": "acme/bench"}}"#,
        )
        .unwrap();
        assert!(run.is_active());
        assert_eq!(run.actor.unwrap().login, "Klaud-Cold");
    }

    #[test]
    fn a_pull_request_without_a_draft_field_is_not_a_draft() {
        let pull: PullRequest = serde_json::from_str(
            r#"{"number": 7, "node_id": "PR_7", "state": "open", "user": null,
                "head": {"ref": "klaud/auto-a", "sha": "abc", "repo": null},
                "base": {"ref": "main", "sha": "def", "repo": {"full_name": "acme/bench"}},
                "created_at": "2026-11-30T10:00:00Z", "updated_at": "2026-11-30T10:00:00Z",
                "closed_at": null, "merged_at": null}"#,
        )
        .unwrap();
        assert!(!pull.draft);
        assert!(pull.head.repo.is_none());
    }
}
