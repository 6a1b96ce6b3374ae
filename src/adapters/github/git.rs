//! Git data: branch refs, commits, and files on a branch through the contents API (the
//! ledger's storage), including creating an orphan branch.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use http::Method;
use serde_json::json;

use super::error::GitHubError;
use super::models::{Commit, ContentFile, ContentWrite, GitCommit, GitObject, GitReference};
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

    pub async fn commit(&self, sha: &str) -> Result<Commit, GitHubError> {
        self.get_json(&self.repo_path(&format!("/commits/{}", encode(sha))))
            .await
    }

    /// The git commit object `sha` (its message).
    pub async fn git_commit(&self, sha: &str) -> Result<GitCommit, GitHubError> {
        self.get_json(&self.repo_path(&format!("/git/commits/{}", encode(sha))))
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

    /// Creates `branch` as an orphan (no parent commit) holding one file. A branch created
    /// concurrently by someone else is a [`FileWrite::Conflict`].
    pub async fn create_orphan_branch_with_file(
        &self,
        branch: &str,
        path: &str,
        text: &str,
        message: &str,
    ) -> Result<FileWrite, GitHubError> {
        let trees = self.repo_path("/git/trees");
        let tree =
            json!({"tree": [{"path": path, "mode": "100644", "type": "blob", "content": text}]});
        let tree = self
            .created_object(
                ApiRequest::write(Method::POST, &trees, Some(tree)).idempotent(),
                &trees,
            )
            .await?;

        let commits = self.repo_path("/git/commits");
        let commit = json!({"message": message, "tree": tree.sha, "parents": []});
        let commit = self
            .created_object(
                ApiRequest::write(Method::POST, &commits, Some(commit)).idempotent(),
                &commits,
            )
            .await?;

        let refs = self.repo_path("/git/refs");
        let reference = json!({"ref": format!("refs/heads/{branch}"), "sha": commit.sha});
        // Creating a ref answers 422 the second time, so repeating it is safe.
        match self
            .send_write(ApiRequest::write(Method::POST, &refs, Some(reference)).idempotent())
            .await
        {
            Ok(Sent::Recorded) => {
                return Ok(FileWrite::Written {
                    blob_sha: RECORDED_SHA.into(),
                    commit_sha: RECORDED_SHA.into(),
                });
            }
            Ok(Sent::Response(_)) => {}
            Err(error) if is_existing_reference(&error) => {
                // Our own earlier attempt may have created it: only then is it ours.
                return match self.branch(branch).await? {
                    Some(existing) if existing.object.sha == commit.sha => {
                        self.blob_of(branch, path, commit.sha).await
                    }
                    _ => Ok(FileWrite::Conflict),
                };
            }
            Err(error) => return Err(error),
        }
        self.blob_of(branch, path, commit.sha).await
    }

    /// The git object a POST created (a recorded one stands for [`RECORDED_SHA`]).
    async fn created_object(
        &self,
        request: ApiRequest,
        path: &str,
    ) -> Result<GitObject, GitHubError> {
        match self.send_write(request).await? {
            Sent::Response(response) => decode(&response, "POST", path),
            Sent::Recorded => Ok(GitObject {
                sha: RECORDED_SHA.into(),
            }),
        }
    }

    async fn blob_of(
        &self,
        branch: &str,
        path: &str,
        commit_sha: String,
    ) -> Result<FileWrite, GitHubError> {
        match self.read_branch_file(branch, path).await? {
            Some(file) => Ok(FileWrite::Written {
                blob_sha: file.blob_sha,
                commit_sha,
            }),
            None => Ok(FileWrite::Conflict),
        }
    }
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
    fn ref_paths_keep_their_slashes() {
        assert_eq!(ref_path("klaud/state"), "klaud/state");
        assert_eq!(ref_path("klaud/auto-a b"), "klaud/auto-a%20b");
    }
}
