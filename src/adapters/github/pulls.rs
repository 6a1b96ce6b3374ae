//! Pull requests and their issue side: listings, commits, files, who closed them, labels and
//! comments.

use http::Method;
use serde_json::json;

use super::error::GitHubError;
use super::models::{Comment, Commit, Issue, PullRequest, PullRequestFile, PullRequestSize};
use super::transport::ApiRequest;
use super::writes::Sent;
use super::{GitHubClient, decode};
use crate::core::snapshot::Listed;

/// The most changed files GitHub lists for one pull request.
pub const PULL_REQUEST_FILES_CAP: u64 = 3_000;

/// The result of posting a comment that carries a unique marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommentPosted {
    Created(Comment),
    /// The first POST's outcome was unknown and the re-check found it had been created.
    FoundAfterUncertainPost(Comment),
    /// A dry run recorded the POST instead of sending it.
    Recorded,
}

impl CommentPosted {
    /// The comment on GitHub (none for a recorded one).
    pub fn comment(&self) -> Option<&Comment> {
        match self {
            CommentPosted::Created(comment) | CommentPosted::FoundAfterUncertainPost(comment) => {
                Some(comment)
            }
            CommentPosted::Recorded => None,
        }
    }
}

impl GitHubClient {
    /// Pull requests whose head is `branch` in this repository, in any state.
    pub async fn pull_requests_for_branch(
        &self,
        branch: &str,
    ) -> Result<Vec<PullRequest>, GitHubError> {
        let owner = self.repository().split('/').next().unwrap_or_default();
        let head = encode(&format!("{owner}:{branch}"));
        self.list_array(&self.repo_path(&format!("/pulls?state=all&head={head}")))
            .await
    }

    pub async fn pull_request(&self, number: u64) -> Result<PullRequest, GitHubError> {
        self.get_json(&self.repo_path(&format!("/pulls/{number}")))
            .await
    }

    pub async fn pull_request_commits(&self, number: u64) -> Result<Vec<Commit>, GitHubError> {
        self.list_array(&self.repo_path(&format!("/pulls/{number}/commits")))
            .await
    }

    pub async fn pull_request_files(
        &self,
        number: u64,
    ) -> Result<Vec<PullRequestFile>, GitHubError> {
        self.list_array(&self.repo_path(&format!("/pulls/{number}/files")))
            .await
    }

    /// Every changed file GitHub lists, incomplete (with its gap) when the pull request changes
    /// more files than GitHub's listing reaches ([`PULL_REQUEST_FILES_CAP`]), which is checked
    /// against the pull request's `changed_files` only when the cap was reached.
    pub async fn pull_request_files_listing(
        &self,
        number: u64,
    ) -> Result<Listed<PullRequestFile>, GitHubError> {
        let files = self.pull_request_files(number).await?;
        let listed = files.len() as u64;
        if listed < PULL_REQUEST_FILES_CAP {
            return Ok(Listed::complete(files));
        }
        let size: Result<PullRequestSize, GitHubError> = self
            .get_json(&self.repo_path(&format!("/pulls/{number}")))
            .await;
        Ok(match size {
            Ok(size) if size.changed_files <= listed => Listed::complete(files),
            Ok(size) => Listed::incomplete(
                files,
                format!(
                    "GitHub lists at most {PULL_REQUEST_FILES_CAP} files of a pull request; this one changes {}",
                    size.changed_files
                ),
            ),
            Err(_) => Listed::incomplete(
                files,
                format!(
                    "GitHub listed {listed} files, its cap, and the pull request's file count could not be read"
                ),
            ),
        })
    }

    /// The issue side of a pull request (`closed_by`).
    pub async fn issue(&self, number: u64) -> Result<Issue, GitHubError> {
        self.get_json(&self.repo_path(&format!("/issues/{number}")))
            .await
    }

    /// Closes a pull request (PATCH, idempotent).
    pub async fn close_pull_request(&self, number: u64) -> Result<(), GitHubError> {
        let path = self.repo_path(&format!("/pulls/{number}"));
        self.send_write(ApiRequest::write(
            Method::PATCH,
            &path,
            Some(json!({"state": "closed"})),
        ))
        .await?;
        Ok(())
    }

    /// Replaces a pull request's body (PATCH, idempotent).
    pub async fn update_pull_request_body(
        &self,
        number: u64,
        body: &str,
    ) -> Result<(), GitHubError> {
        let path = self.repo_path(&format!("/pulls/{number}"));
        self.send_write(ApiRequest::write(
            Method::PATCH,
            &path,
            Some(json!({"body": body})),
        ))
        .await?;
        Ok(())
    }

    /// Adds labels (POST, but adding a present label changes nothing, so it may be repeated).
    pub async fn add_labels(&self, number: u64, labels: &[String]) -> Result<(), GitHubError> {
        let path = self.repo_path(&format!("/issues/{number}/labels"));
        self.send_write(
            ApiRequest::write(Method::POST, &path, Some(json!({ "labels": labels }))).idempotent(),
        )
        .await?;
        Ok(())
    }

    /// Removes a label; a label that is already gone is not an error.
    pub async fn remove_label(&self, number: u64, label: &str) -> Result<(), GitHubError> {
        let path = self.repo_path(&format!("/issues/{number}/labels/{}", encode(label)));
        match self
            .send_write(ApiRequest::write(Method::DELETE, &path, None))
            .await
        {
            Ok(_) => Ok(()),
            Err(error) if error.is_not_found() => Ok(()),
            Err(error) => Err(error),
        }
    }

    pub async fn comments(&self, number: u64) -> Result<Vec<Comment>, GitHubError> {
        self.list_array(&self.repo_path(&format!("/issues/{number}/comments")))
            .await
    }

    /// Posts a comment whose body contains `marker`, a string unique to this comment.
    ///
    /// A POST is not idempotent: when its outcome is unknown (5xx, timeout), the comments are
    /// listed and the marker looked for before anything is sent again, so the comment is never
    /// posted twice.
    pub async fn post_comment_once(
        &self,
        number: u64,
        body: &str,
        marker: &str,
    ) -> Result<CommentPosted, GitHubError> {
        debug_assert!(body.contains(marker), "the body carries its marker");
        let path = self.repo_path(&format!("/issues/{number}/comments"));
        let request = ApiRequest::write(Method::POST, &path, Some(json!({ "body": body })));
        match self.send_write(request.clone()).await {
            Ok(Sent::Recorded) => Ok(CommentPosted::Recorded),
            Ok(Sent::Response(response)) => {
                Ok(CommentPosted::Created(decode(&response, "POST", &path)?))
            }
            Err(GitHubError::OutcomeUnknown { .. }) => {
                let existing = self.comments(number).await?;
                if let Some(comment) = existing
                    .into_iter()
                    .find(|comment| comment.body.as_deref().is_some_and(|b| b.contains(marker)))
                {
                    return Ok(CommentPosted::FoundAfterUncertainPost(comment));
                }
                match self.send_write(request).await? {
                    Sent::Response(response) => {
                        Ok(CommentPosted::Created(decode(&response, "POST", &path)?))
                    }
                    Sent::Recorded => Ok(CommentPosted::Recorded),
                }
            }
            Err(error) => Err(error),
        }
    }

    /// Replaces a comment's body (PATCH, idempotent).
    pub async fn update_comment(&self, comment_id: u64, body: &str) -> Result<(), GitHubError> {
        let path = self.repo_path(&format!("/issues/comments/{comment_id}"));
        self.send_write(ApiRequest::write(
            Method::PATCH,
            &path,
            Some(json!({ "body": body })),
        ))
        .await?;
        Ok(())
    }
}

/// Percent-encodes a query value or path segment.
pub(super) fn encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_percent_encoded() {
        assert_eq!(encode("acme:klaud/auto-a"), "acme%3Aklaud%2Fauto-a");
        assert_eq!(encode("needs review"), "needs%20review");
    }
}
