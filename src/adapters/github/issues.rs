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

impl EditConnection {
    fn edits(self) -> Vec<IssueEdit> {
        self.nodes
            .into_iter()
            .flatten()
            .map(|node| IssueEdit {
                editor: node.editor.map(|editor| editor.login),
                edited_at: node.edited_at,
                body: node.diff,
            })
            .collect()
    }
}

/// One contiguous run of revisions, oldest first, from the two ends of a connection of `total`
/// (`head` its first nodes, `tail` its last, each in the connection's order, which may be newest
/// or oldest first): every revision when the ends meet, else the end holding the newest one (the
/// revisions between the ends are unread, and a run across the gap would pair revisions that
/// were never next to each other). A stable sort on the edit time keeps revisions made in the
/// same second in the order they were made, once the run is oldest first.
fn newest_contiguous_edits(
    head: Vec<IssueEdit>,
    tail: Vec<IssueEdit>,
    total: u64,
) -> Vec<IssueEdit> {
    let read = (head.len() + tail.len()) as u64;
    let mut run = if read >= total {
        let overlap = (read - total) as usize;
        let mut all = head;
        all.extend(tail.into_iter().skip(overlap));
        all
    } else {
        let newest = |edits: &[IssueEdit]| edits.iter().map(|edit| edit.edited_at).max();
        if newest(&tail) > newest(&head) {
            tail
        } else {
            head
        }
    };
    // Revisions all of one second cannot tell the order: GitHub's, newest first, is assumed.
    let newest_first = match (run.first(), run.last()) {
        (Some(first), Some(last)) => first.edited_at >= last.edited_at,
        _ => false,
    };
    if newest_first {
        run.reverse();
    }
    run.sort_by_key(|edit| edit.edited_at);
    run
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

    /// The revisions of issue `number`'s body in one GraphQL query, and how many GitHub holds: all
    /// of them up to 100, else the newest 50, sorted oldest first. An issue never edited has none.
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
        let end = |alias: &str| -> Result<EditConnection, GitHubError> {
            let Some(connection) = answer
                .data
                .pointer(&format!("/repository/issue/{alias}"))
                .filter(|value| !value.is_null())
            else {
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
            serde_json::from_value(connection.clone()).map_err(|error| GitHubError::Decode {
                method: "POST".into(),
                path: "graphql issue userContentEdits".into(),
                detail: bounded(&error.to_string(), 300),
            })
        };
        let (head, tail) = (end("head")?, end("tail")?);
        let total = head.total_count;
        Ok(IssueEditHistory {
            edits: newest_contiguous_edits(head.edits(), tail.edits(), total),
            total,
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

    /// Revisions 0..count, one a minute, by `editor-<n>`, in the connection's order.
    fn revisions(count: usize, newest_first: bool) -> Vec<IssueEdit> {
        let base = DateTime::parse_from_rfc3339("2026-12-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let mut edits: Vec<IssueEdit> = (0..count)
            .map(|n| IssueEdit {
                editor: Some(format!("editor-{n}")),
                edited_at: base + chrono::Duration::minutes(n as i64),
                body: Some(format!("revision {n}")),
            })
            .collect();
        if newest_first {
            edits.reverse();
        }
        edits
    }

    /// What the query reads of `count` revisions listed in either order: `first: 50` and
    /// `last: 50`, as editor numbers oldest first.
    fn read(count: usize, newest_first: bool) -> Vec<usize> {
        let listed = revisions(count, newest_first);
        let head: Vec<IssueEdit> = listed.iter().take(50).cloned().collect();
        let tail: Vec<IssueEdit> = listed[count.saturating_sub(50)..].to_vec();
        newest_contiguous_edits(head, tail, count as u64)
            .into_iter()
            .map(|edit| edit.editor.unwrap()["editor-".len()..].parse().unwrap())
            .collect()
    }

    #[test]
    fn the_edit_history_is_every_revision_up_to_a_hundred_in_either_order() {
        for newest_first in [true, false] {
            for count in [0, 1, 49, 50, 51, 99, 100] {
                assert_eq!(
                    read(count, newest_first),
                    (0..count).collect::<Vec<_>>(),
                    "{count} revisions, newest first: {newest_first}"
                );
            }
        }
    }

    #[test]
    fn beyond_a_hundred_revisions_the_newest_fifty_are_read_in_either_order() {
        for newest_first in [true, false] {
            for count in [101, 150, 1000] {
                assert_eq!(
                    read(count, newest_first),
                    (count - 50..count).collect::<Vec<_>>(),
                    "{count} revisions, newest first: {newest_first}"
                );
            }
        }
    }

    #[test]
    fn revisions_of_the_same_second_keep_the_order_they_were_made_in() {
        let at = DateTime::parse_from_rfc3339("2026-12-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let edit = |text: &str, seconds: i64| IssueEdit {
            editor: None,
            edited_at: at + chrono::Duration::seconds(seconds),
            body: Some(text.into()),
        };
        let made = ["a", "b", "c", "d"];
        let oldest_first = vec![edit("a", 0), edit("b", 1), edit("c", 1), edit("d", 2)];
        let mut newest_first = oldest_first.clone();
        newest_first.reverse();
        for listed in [oldest_first, newest_first] {
            let bodies: Vec<String> = newest_contiguous_edits(listed.clone(), listed, 4)
                .into_iter()
                .map(|edit| edit.body.unwrap())
                .collect();
            assert_eq!(bodies, made);
        }
    }
}
