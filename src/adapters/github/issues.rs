//! Issues that are not pull requests: the listing of a label's issues (pull requests, which
//! GitHub lists too, dropped; a listing cut short by a failed page is a [`Listed`] with its gap),
//! one issue's body revisions (one GraphQL query, returned oldest first), an account's
//! permission on the repository, and creating and updating an issue through the one write path.

use chrono::{DateTime, Utc};
use http::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use super::error::GitHubError;
use super::graphql::ISSUE_EDIT_HISTORY;
use super::models::{Account, Label};
use super::pagination::{next_link, with_per_page};
use super::pulls::encode;
use super::transport::ApiRequest;
use super::writes::Sent;
use super::{GitHubClient, decode};
use crate::core::github_state::{IssueState, RepositoryPermission};
use crate::core::snapshot::Listed;
use crate::core::text::bounded;

/// More pages than a label's issues can fill; a guard against a `next` loop.
const MAX_ISSUE_PAGES: usize = 100;

/// An issue as klaud reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    pub number: u64,
    pub title: String,
    /// `""` when GitHub holds no body.
    pub body: String,
    /// The author's login (`""` when GitHub names no account).
    pub author: String,
    pub state: IssueState,
    pub labels: Vec<String>,
    pub html_url: String,
}

/// One revision of an issue's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueEdit {
    /// `None` for an account that no longer exists.
    pub editor: Option<String>,
    pub edited_at: DateTime<Utc>,
    /// The body as this revision left it (GitHub's `diff`).
    pub body: Option<String>,
}

/// An issue's body revisions as one query read them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueEditHistory {
    /// Oldest first by `edited_at`, whatever order GitHub sent them in.
    pub edits: Vec<IssueEdit>,
    /// How many revisions GitHub holds (`totalCount`): more than `edits` holds when the query's
    /// page did not reach them all.
    pub total: u64,
}

/// What became of an issue write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IssueWritten {
    /// GitHub's answer: the issue as it now is.
    Sent(Issue),
    /// A dry run recorded the write instead of sending it.
    Recorded,
}

impl IssueWritten {
    /// The issue on GitHub (none for a recorded write).
    pub fn issue(&self) -> Option<&Issue> {
        match self {
            IssueWritten::Sent(issue) => Some(issue),
            IssueWritten::Recorded => None,
        }
    }
}

/// An issue as GitHub's REST API answers it; a pull request carries `pull_request`.
#[derive(Debug, Deserialize)]
struct IssueAnswer {
    number: u64,
    #[serde(default)]
    title: String,
    body: Option<String>,
    user: Option<Account>,
    state: IssueState,
    #[serde(default)]
    labels: Vec<Label>,
    #[serde(default)]
    html_url: String,
    #[serde(default)]
    pull_request: Option<Value>,
}

impl IssueAnswer {
    fn is_pull_request(&self) -> bool {
        self.pull_request
            .as_ref()
            .is_some_and(|value| !value.is_null())
    }

    fn into_issue(self) -> Issue {
        Issue {
            number: self.number,
            title: self.title,
            body: self.body.unwrap_or_default(),
            author: self.user.map(|user| user.login).unwrap_or_default(),
            state: self.state,
            labels: self.labels.into_iter().map(|label| label.name).collect(),
            html_url: self.html_url,
        }
    }
}

/// `GET /collaborators/{username}/permission`.
#[derive(Debug, Deserialize)]
struct PermissionAnswer {
    #[serde(default)]
    permission: Option<String>,
    #[serde(default)]
    role_name: Option<String>,
}

impl PermissionAnswer {
    /// `role_name` when it is there, else the legacy `permission`.
    fn permission(self) -> RepositoryPermission {
        match self
            .role_name
            .filter(|role| !role.is_empty())
            .or(self.permission)
        {
            Some(word) => RepositoryPermission::from(word.as_str()),
            None => RepositoryPermission::Other(String::new()),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EditNode {
    edited_at: DateTime<Utc>,
    editor: Option<Account>,
    diff: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EditConnection {
    total_count: u64,
    #[serde(default)]
    nodes: Vec<Option<EditNode>>,
}

impl GitHubClient {
    /// Every issue carrying `label`, open or closed, pull requests left out. A page after the
    /// first that cannot be read leaves the issues listed so far with the gap saying so.
    pub async fn issues_with_label(&self, label: &str) -> Result<Listed<Issue>, GitHubError> {
        let first = self.repo_path(&format!(
            "/issues?labels={}&state=all&per_page=100",
            encode(label)
        ));
        let mut path = with_per_page(&first);
        let mut issues = Vec::new();
        for page in 1..=MAX_ISSUE_PAGES {
            let response = match self.send(ApiRequest::get(&path)).await {
                Ok(response) => response,
                Err(error) if page > 1 => {
                    return Ok(Listed::incomplete(
                        issues,
                        format!(
                            "page {page} of the issues labelled '{}' could not be read: {}",
                            bounded(label, 100),
                            bounded(&error.to_string(), 300)
                        ),
                    ));
                }
                Err(error) => return Err(error),
            };
            let answers: Vec<IssueAnswer> = decode(&response, "GET", &path)?;
            issues.extend(
                answers
                    .into_iter()
                    .filter(|answer| !answer.is_pull_request())
                    .map(IssueAnswer::into_issue),
            );
            match next_link(&response.headers) {
                Some(next) => path = self.relative_to_api(&next, &path)?,
                None => return Ok(Listed::complete(issues)),
            }
        }
        Ok(Listed::incomplete(
            issues,
            format!(
                "the issues labelled '{}' fill more than {MAX_ISSUE_PAGES} pages",
                bounded(label, 100)
            ),
        ))
    }

    /// The revisions of issue `number`'s body in one GraphQL query: the newest 100, sorted
    /// oldest first, and how many GitHub holds. An issue never edited has none.
    pub async fn issue_edit_history(&self, number: u64) -> Result<IssueEditHistory, GitHubError> {
        let (owner, name) = self
            .repository()
            .split_once('/')
            .unwrap_or((self.repository(), ""));
        let answer = self
            .graphql_read(
                "issue userContentEdits",
                ISSUE_EDIT_HISTORY,
                json!({"owner": owner, "name": name, "number": number}),
            )
            .await?;
        let connection = answer
            .data
            .pointer("/repository/issue/userContentEdits")
            .filter(|value| !value.is_null());
        let Some(connection) = connection else {
            let message = if answer.problems.is_empty() {
                format!("issue #{number} has no edit history in the answer")
            } else {
                answer.message()
            };
            return Err(GitHubError::GraphQl {
                operation: "issue userContentEdits".into(),
                message,
            });
        };
        let connection: EditConnection =
            serde_json::from_value(connection.clone()).map_err(|error| GitHubError::Decode {
                method: "POST".into(),
                path: "graphql issue userContentEdits".into(),
                detail: bounded(&error.to_string(), 300),
            })?;
        let mut edits: Vec<IssueEdit> = connection
            .nodes
            .into_iter()
            .flatten()
            .map(|node| IssueEdit {
                editor: node.editor.map(|editor| editor.login),
                edited_at: node.edited_at,
                body: node.diff,
            })
            .collect();
        // GitHub lists the newest first: reversed, a stable sort keeps revisions made in the
        // same second in the order they were made.
        edits.reverse();
        edits.sort_by_key(|edit| edit.edited_at);
        Ok(IssueEditHistory {
            edits,
            total: connection.total_count,
        })
    }

    /// One issue (`GET /issues/{number}`); `None` when it does not exist or is a pull request.
    pub async fn standalone_issue(&self, number: u64) -> Result<Option<Issue>, GitHubError> {
        let path = self.repo_path(&format!("/issues/{number}"));
        let answer: Option<IssueAnswer> = self.get_optional(&path).await?;
        Ok(answer
            .filter(|answer| !answer.is_pull_request())
            .map(IssueAnswer::into_issue))
    }

    /// `login`'s role on the repository: `role_name` (admin, maintain, write, triage, read, or a
    /// custom role's name as `Other`), else the legacy `permission`; an account GitHub does not
    /// know (404) has none.
    pub async fn collaborator_permission(
        &self,
        login: &str,
    ) -> Result<RepositoryPermission, GitHubError> {
        let path = self.repo_path(&format!("/collaborators/{}/permission", encode(login)));
        let answer: Option<PermissionAnswer> = self.get_optional(&path).await?;
        Ok(answer.map_or(RepositoryPermission::None, PermissionAnswer::permission))
    }

    /// Opens an issue. A POST creates something, so an unknown outcome is returned as
    /// [`GitHubError::OutcomeUnknown`], never sent again: the caller lists the label's issues
    /// before trying again.
    pub async fn create_issue(
        &self,
        title: &str,
        body: &str,
        labels: &[String],
    ) -> Result<IssueWritten, GitHubError> {
        let path = self.repo_path("/issues");
        let request = ApiRequest::write(
            Method::POST,
            &path,
            Some(json!({"title": title, "body": body, "labels": labels})),
        );
        self.issue_write(request, "POST", &path).await
    }

    /// Replaces issue `number`'s body, reopening it too when `reopen` (PATCH, idempotent).
    pub async fn update_issue(
        &self,
        number: u64,
        body: &str,
        reopen: bool,
    ) -> Result<IssueWritten, GitHubError> {
        let path = self.repo_path(&format!("/issues/{number}"));
        let mut change = json!({"body": body});
        if reopen {
            change["state"] = json!("open");
        }
        let request = ApiRequest::write(Method::PATCH, &path, Some(change));
        self.issue_write(request, "PATCH", &path).await
    }

    async fn issue_write(
        &self,
        request: ApiRequest,
        method: &str,
        path: &str,
    ) -> Result<IssueWritten, GitHubError> {
        match self.send_write(request).await? {
            Sent::Recorded => Ok(IssueWritten::Recorded),
            Sent::Response(response) => {
                let answer: IssueAnswer = decode(&response, method, path)?;
                Ok(IssueWritten::Sent(answer.into_issue()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn permission(answer: Value) -> RepositoryPermission {
        serde_json::from_value::<PermissionAnswer>(answer)
            .unwrap()
            .permission()
    }

    #[test]
    fn the_role_name_is_read_before_the_legacy_permission() {
        assert_eq!(
            permission(json!({"permission": "write", "role_name": "maintain"})),
            RepositoryPermission::Maintain
        );
        assert_eq!(
            permission(json!({"permission": "read", "role_name": "triage"})),
            RepositoryPermission::Triage
        );
        assert_eq!(
            permission(json!({"permission": "write", "role_name": "release-manager"})),
            RepositoryPermission::Other("release-manager".into())
        );
        assert_eq!(
            permission(json!({"permission": "admin"})),
            RepositoryPermission::Admin
        );
        assert!(!permission(json!({})).can_steer());
    }

    #[test]
    fn a_listed_pull_request_is_told_apart_from_an_issue() {
        let listed: Vec<IssueAnswer> = serde_json::from_value(json!([
            {"number": 1, "title": "a", "body": null, "user": {"login": "ann"}, "state": "open",
             "labels": [{"name": "x"}], "html_url": "https://github.com/o/r/issues/1"},
            {"number": 2, "title": "b", "body": "text", "user": null, "state": "closed",
             "html_url": "https://github.com/o/r/pull/2", "pull_request": {"url": "u"}},
        ]))
        .unwrap();
        let kinds: Vec<bool> = listed.iter().map(IssueAnswer::is_pull_request).collect();
        assert_eq!(kinds, [false, true]);
        let issue = listed.into_iter().next().unwrap().into_issue();
        assert_eq!(
            (issue.body.as_str(), issue.author.as_str(), issue.labels),
            ("", "ann", vec!["x".to_string()])
        );
    }
}
