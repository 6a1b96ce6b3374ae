//! Git data: branch refs, commits, and files on a branch (the ledger's storage): one file through
//! the contents API with compare-and-swap on its blob, several in one commit through the git data
//! API (tree, commit, ref moved only as a fast-forward), and an orphan branch created with its
//! first files.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use http::Method;
use serde_json::json;

use super::error::GitHubError;
use super::models::{ContentFile, ContentWrite, GitObject, GitReference, GitTree};
use super::pulls::encode;
use super::transport::ApiRequest;
use super::writes::Sent;
use super::{GitHubClient, decode};

/// The blob and commit sha a dry run's recorded file write stands for.
pub const RECORDED_SHA: &str = "0000000000000000000000000000000000000000";

/// A file read from a branch, with the blob sha a compare-and-swap write must name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchFile {
    pub text: String,
    pub blob_sha: String,
}

/// What a compare-and-swap write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileWrite {
    Written {
        blob_sha: String,
        commit_sha: String,
    },
    /// Someone else wrote first (409 stale sha, 422 "sha wasn't supplied", or the branch was
    /// created concurrently): re-read, re-decide, retry.
    Conflict,
}

/// A branch's head commit and the files of its tree, as a commit on top of it must name them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchTree {
    pub commit_sha: String,
    pub tree_sha: String,
    /// Every file below the tree (path with `/` between directories → blob sha).
    pub files: BTreeMap<String, String>,
}

/// One file change of a multi-file commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileChange {
    Write { path: String, text: String },
    Delete { path: String },
}

impl FileChange {
    pub fn path(&self) -> &str {
        match self {
            FileChange::Write { path, .. } | FileChange::Delete { path } => path,
        }
    }

    /// The entry of `POST /git/trees` that makes this change (`"sha": null` deletes).
    fn tree_entry(&self) -> serde_json::Value {
        match self {
            FileChange::Write { path, text } => {
                json!({"path": path, "mode": "100644", "type": "blob", "content": text})
            }
            FileChange::Delete { path } => {
                json!({"path": path, "mode": "100644", "type": "blob", "sha": null})
            }
        }
    }
}

/// What a multi-file commit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilesWrite {
    Written {
        commit_sha: String,
        /// The blob sha of each file at the top of the new tree (GitHub's answer lists the
        /// tree's own entries; a dry run's recorded write names [`RECORDED_SHA`] for each file
        /// it writes).
        blob_shas: BTreeMap<String, String>,
    },
    /// The branch moved (or was created, or deleted) since it was read: re-read, re-decide,
    /// retry.
    Conflict,
}

impl FilesWrite {
    fn recorded(changes: &[FileChange]) -> Self {
        FilesWrite::Written {
            commit_sha: RECORDED_SHA.into(),
            blob_shas: Self::recorded_blobs(changes),
        }
    }

    fn recorded_blobs(changes: &[FileChange]) -> BTreeMap<String, String> {
        changes
            .iter()
            .filter(|change| matches!(change, FileChange::Write { .. }))
            .map(|change| (change.path().to_string(), RECORDED_SHA.to_string()))
            .collect()
    }
}

/// What a guarded branch deletion did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BranchDeletion {
    Deleted,
    /// The branch no longer points where it was checked; left alone.
    Moved {
        now_at: String,
    },
    /// Already gone.
    Missing,
}

impl GitHubClient {
    /// `refs/heads/<branch>`, or `None` when the branch does not exist.
    pub async fn branch(&self, branch: &str) -> Result<Option<GitReference>, GitHubError> {
        self.get_optional(&self.repo_path(&format!("/git/ref/heads/{}", ref_path(branch))))
            .await
    }

    /// Every branch whose name starts with `prefix`.
    pub async fn branches_starting_with(
        &self,
        prefix: &str,
    ) -> Result<Vec<GitReference>, GitHubError> {
        self.list_array(&self.repo_path(&format!("/git/matching-refs/heads/{}", ref_path(prefix))))
            .await
    }

    /// Deletes `branch` as it is; the caller checked where it points. A branch already gone is
    /// [`BranchDeletion::Missing`].
    pub async fn delete_branch(&self, branch: &str) -> Result<BranchDeletion, GitHubError> {
        let path = self.repo_path(&format!("/git/refs/heads/{}", ref_path(branch)));
        match self
            .send_write(ApiRequest::write(Method::DELETE, &path, None))
            .await
        {
            Ok(_) => Ok(BranchDeletion::Deleted),
            Err(error) if is_missing_reference(&error) => Ok(BranchDeletion::Missing),
            Err(error) => Err(error),
        }
    }

    /// Deletes `branch` only if it still points at `expected_sha`, re-checked just before.
    pub async fn delete_branch_if_at(
        &self,
        branch: &str,
        expected_sha: &str,
    ) -> Result<BranchDeletion, GitHubError> {
        let Some(current) = self.branch(branch).await? else {
            return Ok(BranchDeletion::Missing);
        };
        if current.object.sha != expected_sha {
            return Ok(BranchDeletion::Moved {
                now_at: current.object.sha,
            });
        }
        self.delete_branch(branch).await
    }

    /// Reads `path` on `branch`; `None` when the file or the branch does not exist.
    pub async fn read_branch_file(
        &self,
        branch: &str,
        path: &str,
    ) -> Result<Option<BranchFile>, GitHubError> {
        let request_path = self.repo_path(&format!(
            "/contents/{}?ref={}",
            ref_path(path),
            encode(branch)
        ));
        let Some(file) = self.get_optional::<ContentFile>(&request_path).await? else {
            return Ok(None);
        };
        if file.encoding != "base64" {
            return Err(GitHubError::Decode {
                method: "GET".into(),
                path: request_path,
                detail: format!(
                    "content encoding '{}' (the file is too large?)",
                    file.encoding
                ),
            });
        }
        let compact: String = file.content.split_whitespace().collect();
        let bytes = BASE64
            .decode(compact)
            .map_err(|error| GitHubError::Decode {
                method: "GET".into(),
                path: request_path.clone(),
                detail: format!("content is not base64: {error}"),
            })?;
        let text = String::from_utf8(bytes).map_err(|_| GitHubError::Decode {
            method: "GET".into(),
            path: request_path,
            detail: "content is not UTF-8".into(),
        })?;
        Ok(Some(BranchFile {
            text,
            blob_sha: file.sha,
        }))
    }

    /// Writes `path` on an existing `branch` if its blob is still `expected_blob_sha` (`None`:
    /// the file must not exist yet). The commit message becomes the audit log entry.
    pub async fn write_branch_file(
        &self,
        branch: &str,
        path: &str,
        text: &str,
        expected_blob_sha: Option<&str>,
        message: &str,
    ) -> Result<FileWrite, GitHubError> {
        let request_path = self.repo_path(&format!("/contents/{}", ref_path(path)));
        let mut body = json!({
            "message": message,
            "content": BASE64.encode(text.as_bytes()),
            "branch": branch,
        });
        if let Some(sha) = expected_blob_sha {
            body["sha"] = json!(sha);
        }
        match self
            .send_write(ApiRequest::write(Method::PUT, &request_path, Some(body)))
            .await
        {
            Ok(Sent::Recorded) => Ok(FileWrite::Written {
                blob_sha: RECORDED_SHA.into(),
                commit_sha: RECORDED_SHA.into(),
            }),
            Ok(Sent::Response(response)) => {
                let written: ContentWrite = decode(&response, "PUT", &request_path)?;
                Ok(FileWrite::Written {
                    blob_sha: written.content.sha,
                    commit_sha: written.commit.sha,
                })
            }
            Err(error) if is_write_conflict(&error) => Ok(FileWrite::Conflict),
            Err(error) => Err(error),
        }
    }

    /// The head commit of `branch` and every file of its tree, or `None` when the branch does
    /// not exist (2 reads: the ref, then the commit's tree with `recursive`).
    pub async fn branch_tree(&self, branch: &str) -> Result<Option<BranchTree>, GitHubError> {
        let Some(head) = self.branch(branch).await? else {
            return Ok(None);
        };
        let path = self.repo_path(&format!(
            "/git/trees/{}?recursive=1",
            encode(&head.object.sha)
        ));
        // Naming the commit reads its tree: GitHub resolves what names a tree.
        let Some(tree) = self.get_optional::<GitTree>(&path).await? else {
            // The commit is gone only when the branch was rewritten in between.
            return Ok(None);
        };
        if tree.truncated {
            return Err(GitHubError::Decode {
                method: "GET".into(),
                path,
                detail: "GitHub cut the tree listing short".into(),
            });
        }
        let files = tree
            .tree
            .into_iter()
            .filter(|entry| entry.kind == "blob")
            .map(|entry| (entry.path, entry.sha))
            .collect();
        Ok(Some(BranchTree {
            commit_sha: head.object.sha,
            tree_sha: tree.sha,
            files,
        }))
    }

    /// Commits `changes` to `branch` as one commit on top of `base` (as
    /// [`GitHubClient::branch_tree`] read it), moving the branch only if it still points at
    /// `base`'s commit: never forced, so a branch someone moved in between is a
    /// [`FilesWrite::Conflict`] (as is one deleted in between). A deletion must name a file
    /// of `base`: GitHub refuses to delete a missing path.
    pub async fn commit_files_to_branch(
        &self,
        branch: &str,
        base: &BranchTree,
        changes: &[FileChange],
        message: &str,
    ) -> Result<FilesWrite, GitHubError> {
        let entries: Vec<serde_json::Value> = changes.iter().map(FileChange::tree_entry).collect();
        let tree = json!({"base_tree": base.tree_sha, "tree": entries});
        let created = self.create_tree(tree, changes).await?;
        let commit = self
            .create_commit(message, &created.tree_sha, &[base.commit_sha.as_str()])
            .await?;

        let path = self.repo_path(&format!("/git/refs/heads/{}", ref_path(branch)));
        let update = json!({"sha": commit, "force": false});
        match self
            .send_write(ApiRequest::write(Method::PATCH, &path, Some(update)))
            .await
        {
            Ok(Sent::Recorded) => Ok(FilesWrite::recorded(changes)),
            Ok(Sent::Response(_)) => Ok(FilesWrite::Written {
                commit_sha: commit,
                blob_shas: created.blob_shas,
            }),
            // A repeated attempt after a lost answer that had moved the ref is a fast-forward
            // to where it already points, so this is someone else's write.
            Err(error) if is_ref_moved(&error) => Ok(FilesWrite::Conflict),
            Err(error) => Err(error),
        }
    }

    /// Creates `branch` as an orphan (no parent commit) holding `files` (path, text) in one
    /// commit. A branch created concurrently by someone else is a [`FilesWrite::Conflict`].
    pub async fn create_orphan_branch_with_files(
        &self,
        branch: &str,
        files: &[(String, String)],
        message: &str,
    ) -> Result<FilesWrite, GitHubError> {
        let changes: Vec<FileChange> = files
            .iter()
            .map(|(path, text)| FileChange::Write {
                path: path.clone(),
                text: text.clone(),
            })
            .collect();
        let entries: Vec<serde_json::Value> = changes.iter().map(FileChange::tree_entry).collect();
        let created = self.create_tree(json!({"tree": entries}), &changes).await?;
        let commit = self.create_commit(message, &created.tree_sha, &[]).await?;

        let refs = self.repo_path("/git/refs");
        let reference = json!({"ref": format!("refs/heads/{branch}"), "sha": commit});
        // Creating a ref answers 422 the second time, so repeating it is safe.
        match self
            .send_write(ApiRequest::write(Method::POST, &refs, Some(reference)).idempotent())
            .await
        {
            Ok(Sent::Recorded) => Ok(FilesWrite::recorded(&changes)),
            Ok(Sent::Response(_)) => Ok(FilesWrite::Written {
                commit_sha: commit,
                blob_shas: created.blob_shas,
            }),
            Err(error) if is_existing_reference(&error) => {
                // Our own earlier attempt may have created it: only then is it ours.
                match self.branch(branch).await? {
                    Some(existing) if existing.object.sha == commit => Ok(FilesWrite::Written {
                        commit_sha: commit,
                        blob_shas: created.blob_shas,
                    }),
                    _ => Ok(FilesWrite::Conflict),
                }
            }
            Err(error) => Err(error),
        }
    }

    /// `POST /git/trees`: the new tree's sha and the blob shas of its own files. Creating the
    /// same tree twice creates nothing new, so repeating it is safe.
    async fn create_tree(
        &self,
        body: serde_json::Value,
        changes: &[FileChange],
    ) -> Result<CreatedTree, GitHubError> {
        let path = self.repo_path("/git/trees");
        match self
            .send_write(ApiRequest::write(Method::POST, &path, Some(body)).idempotent())
            .await?
        {
            Sent::Response(response) => {
                let tree: GitTree = decode(&response, "POST", &path)?;
                let blob_shas = tree
                    .tree
                    .into_iter()
                    .filter(|entry| entry.kind == "blob")
                    .map(|entry| (entry.path, entry.sha))
                    .collect();
                Ok(CreatedTree {
                    tree_sha: tree.sha,
                    blob_shas,
                })
            }
            Sent::Recorded => Ok(CreatedTree {
                tree_sha: RECORDED_SHA.into(),
                blob_shas: FilesWrite::recorded_blobs(changes),
            }),
        }
    }

    /// `POST /git/commits`: the new commit's sha. Repeating it creates the same commit.
    async fn create_commit(
        &self,
        message: &str,
        tree_sha: &str,
        parents: &[&str],
    ) -> Result<String, GitHubError> {
        let path = self.repo_path("/git/commits");
        let body = json!({"message": message, "tree": tree_sha, "parents": parents});
        match self
            .send_write(ApiRequest::write(Method::POST, &path, Some(body)).idempotent())
            .await?
        {
            Sent::Response(response) => {
                let commit: GitObject = decode(&response, "POST", &path)?;
                Ok(commit.sha)
            }
            Sent::Recorded => Ok(RECORDED_SHA.into()),
        }
    }
}

/// A tree as a new commit answers it: its sha and its own files' blobs.
struct CreatedTree {
    tree_sha: String,
    blob_shas: BTreeMap<String, String>,
}

/// A ref or file path with each segment percent-encoded and the slashes kept.
fn ref_path(path: &str) -> String {
    path.split('/').map(encode).collect::<Vec<_>>().join("/")
}

fn is_write_conflict(error: &GitHubError) -> bool {
    match error.status() {
        Some(409) => true,
        Some(422) => error
            .message()
            .is_some_and(|message| message.contains("sha")),
        _ => false,
    }
}

/// A ref update GitHub refused because the ref is no longer where the commit's parent is
/// (422 "Update is not a fast forward"), or is gone (422 "Reference does not exist").
fn is_ref_moved(error: &GitHubError) -> bool {
    error.status() == Some(422)
        && error.message().is_some_and(|message| {
            message.contains("not a fast forward") || message.contains("Reference does not exist")
        })
}

fn is_existing_reference(error: &GitHubError) -> bool {
    error.status() == Some(422)
        && error
            .message()
            .is_some_and(|message| message.contains("already exists"))
}

fn is_missing_reference(error: &GitHubError) -> bool {
    error.status() == Some(422)
        && error
            .message()
            .is_some_and(|message| message.contains("does not exist"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16, message: &str) -> GitHubError {
        GitHubError::Status {
            method: "PUT".into(),
            path: "/x".into(),
            status,
            message: message.into(),
        }
    }

    #[test]
    fn stale_and_missing_shas_are_conflicts() {
        assert!(is_write_conflict(&status(
            409,
            "ledger.json does not match abc"
        )));
        assert!(is_write_conflict(&status(
            422,
            "Invalid request.\n\n\"sha\" wasn't supplied."
        )));
        assert!(!is_write_conflict(&status(422, "Invalid request")));
        assert!(!is_write_conflict(&status(404, "Not Found")));
    }

    #[test]
    fn a_ref_that_moved_or_went_is_a_conflict_and_nothing_else_is() {
        assert!(is_ref_moved(&status(422, "Update is not a fast forward")));
        assert!(is_ref_moved(&status(422, "Reference does not exist")));
        assert!(!is_ref_moved(&status(422, "Object does not exist")));
        assert!(!is_ref_moved(&status(409, "Git Repository is empty.")));
    }

    #[test]
    fn a_deletion_is_a_null_sha_and_a_write_carries_its_content() {
        let write = FileChange::Write {
            path: "records/a.json".into(),
            text: "{}".into(),
        };
        let delete = FileChange::Delete {
            path: "records/b.json".into(),
        };
        assert_eq!(
            write.tree_entry(),
            json!({"path": "records/a.json", "mode": "100644", "type": "blob", "content": "{}"})
        );
        assert_eq!(
            delete.tree_entry(),
            json!({"path": "records/b.json", "mode": "100644", "type": "blob", "sha": null})
        );
        assert_eq!(
            FilesWrite::recorded(&[write, delete]),
            FilesWrite::Written {
                commit_sha: RECORDED_SHA.into(),
                blob_shas: BTreeMap::from([("records/a.json".into(), RECORDED_SHA.into())]),
            }
        );
    }

    #[test]
    fn ref_paths_keep_their_slashes() {
        assert_eq!(ref_path("klaud/state"), "klaud/state");
        assert_eq!(ref_path("klaud/auto-a b"), "klaud/auto-a%20b");
    }
}
