//! The open issues carrying a label, with their label events (contract §13): one GraphQL query a
//! page of 100 issues ([`LABELLED_ISSUES`]), each issue with its labels and its newest 100 label
//! events; an issue whose newest 100 do not show the label's latest application is read on its
//! own, older events 100 at a time ([`ISSUE_LABEL_EVENTS`]). GraphQL's `issues` holds no pull
//! requests, so none is ever listed. A page after the first that cannot be read leaves a
//! [`Listed`] with its gap; what cannot be read of one issue's older events leaves the events
//! read so far (the decision then finds no application and says so).

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value, json};

use super::GitHubClient;
use super::error::GitHubError;
use super::graphql::{GraphQlAnswer, ISSUE_LABEL_EVENTS, LABELLED_ISSUES};
use crate::core::discovery::issues::{LabelEvent, LabelledIssue, latest_application};
use crate::core::snapshot::Listed;
use crate::core::text::bounded;

/// Pages of 100 issues read at most: 20,000 labelled issues.
const MAX_ISSUE_PAGES: usize = 200;
/// Pages of 100 older label events read of one issue at most.
const MAX_EVENT_PAGES: usize = 10;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageInfo {
    #[serde(default)]
    has_next_page: bool,
    end_cursor: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EventsPageInfo {
    has_previous_page: bool,
    start_cursor: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Events {
    page_info: EventsPageInfo,
    #[serde(default)]
    nodes: Vec<Option<Value>>,
}

#[derive(Debug, Deserialize)]
struct LabelNode {
    name: String,
}

#[derive(Debug, Deserialize)]
struct Labels {
    #[serde(default)]
    nodes: Vec<Option<LabelNode>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IssueNode {
    number: u64,
    title: String,
    body: String,
    url: String,
    created_at: DateTime<Utc>,
    locked: bool,
    author: Option<Value>,
    labels: Option<Labels>,
    timeline_items: Events,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IssuePage {
    page_info: PageInfo,
    #[serde(default)]
    nodes: Vec<Option<IssueNode>>,
}

/// An account as GraphQL names it; a GitHub App's login gets the `[bot]` REST and permission
/// reads use.
fn account(actor: Option<&Value>) -> Option<String> {
    let actor = actor.filter(|actor| !actor.is_null())?;
    let login = actor.get("login").and_then(Value::as_str)?;
    let is_app = actor.get("__typename").and_then(Value::as_str) == Some("Bot");
    Some(if is_app && !login.ends_with("[bot]") {
        format!("{login}[bot]")
    } else {
        login.to_string()
    })
}

/// The label events of one page, oldest first; other timeline items are skipped.
fn label_events(nodes: &[Option<Value>]) -> Vec<LabelEvent> {
    nodes
        .iter()
        .flatten()
        .filter_map(|node| {
            let labeled = match node.get("__typename").and_then(Value::as_str)? {
                "LabeledEvent" => true,
                "UnlabeledEvent" => false,
                _ => return None,
            };
            let at = node.get("createdAt").and_then(Value::as_str)?;
            Some(LabelEvent {
                labeled,
                label: node
                    .pointer("/label/name")
                    .and_then(Value::as_str)?
                    .to_string(),
                actor: account(node.get("actor")),
                at: DateTime::parse_from_rfc3339(at).ok()?.with_timezone(&Utc),
            })
        })
        .collect()
}

impl IssueNode {
    /// The issue, and the cursor of its older label events when the page did not reach them.
    fn into_issue(self) -> (LabelledIssue, Option<String>) {
        let older = self
            .timeline_items
            .page_info
            .has_previous_page
            .then_some(self.timeline_items.page_info.start_cursor)
            .flatten();
        let issue = LabelledIssue {
            number: self.number,
            title: self.title,
            body: self.body,
            url: self.url,
            author: account(self.author.as_ref()),
            labels: self
                .labels
                .map(|labels| labels.nodes.into_iter().flatten().map(|l| l.name).collect())
                .unwrap_or_default(),
            created_at: self.created_at,
            locked: self.locked,
            label_events: label_events(&self.timeline_items.nodes),
        };
        (issue, older)
    }
}

fn decode<T: for<'de> Deserialize<'de>>(
    answer: &GraphQlAnswer,
    pointer: &str,
    operation: &str,
) -> Result<T, GitHubError> {
    let Some(value) = answer
        .data
        .pointer(pointer)
        .filter(|value| !value.is_null())
    else {
        return Err(GitHubError::GraphQl {
            operation: operation.into(),
            message: if answer.problems.is_empty() {
                format!("the answer has no {pointer}")
            } else {
                answer.message()
            },
        });
    };
    serde_json::from_value(value.clone()).map_err(|error| GitHubError::Decode {
        method: "POST".into(),
        path: format!("graphql {operation}"),
        detail: bounded(&error.to_string(), 300),
    })
}

impl GitHubClient {
    fn owner_and_name(&self) -> (&str, &str) {
        self.repository()
            .split_once('/')
            .unwrap_or((self.repository(), ""))
    }

    /// Every open issue carrying `label`, with its label events: a GraphQL query a page of 100,
    /// plus the older events of an issue whose newest 100 do not show the label's latest
    /// application. The first page failing is an error; a later one leaves a gap.
    pub async fn labelled_issues(&self, label: &str) -> Result<Listed<LabelledIssue>, GitHubError> {
        let (owner, name) = self.owner_and_name();
        let mut issues: Vec<LabelledIssue> = Vec::new();
        let mut after: Option<String> = None;
        for page in 1..=MAX_ISSUE_PAGES {
            let variables = json!({"owner": owner, "name": name, "labels": [label], "after": after, "before": null});
            let read = self
                .graphql_read("labelled issues", LABELLED_ISSUES, variables)
                .await
                .and_then(|answer| {
                    decode::<IssuePage>(&answer, "/repository/issues", "labelled issues")
                });
            let answer = match read {
                Ok(answer) => answer,
                Err(error) if page > 1 => {
                    return Ok(Listed::incomplete(
                        issues,
                        format!(
                            "page {page} of the open issues labelled '{}' could not be read: {}",
                            bounded(label, 100),
                            bounded(&error.to_string(), 300)
                        ),
                    ));
                }
                Err(error) => return Err(error),
            };
            for node in answer.nodes.into_iter().flatten() {
                let (mut issue, older) = node.into_issue();
                if let Some(cursor) = older
                    && latest_application(&issue, label).is_none()
                {
                    self.read_older_label_events(&mut issue, label, cursor)
                        .await;
                }
                issues.push(issue);
            }
            match answer.page_info {
                PageInfo {
                    has_next_page: true,
                    end_cursor: Some(cursor),
                } => after = Some(cursor),
                _ => return Ok(Listed::complete(issues)),
            }
        }
        Ok(Listed::incomplete(
            issues,
            format!(
                "the open issues labelled '{}' fill more than {MAX_ISSUE_PAGES} pages of 100",
                bounded(label, 100)
            ),
        ))
    }

    /// Older label events of `issue`, 100 at a time before `cursor`, until one applies `label`
    /// or there are none left (at most [`MAX_EVENT_PAGES`] reads); a failed read stops there.
    async fn read_older_label_events(
        &self,
        issue: &mut LabelledIssue,
        label: &str,
        cursor: String,
    ) {
        let (owner, name) = self.owner_and_name();
        let mut before = Some(cursor);
        for _ in 0..MAX_EVENT_PAGES {
            let Some(cursor) = before.take() else {
                return;
            };
            let variables =
                json!({"owner": owner, "name": name, "number": issue.number, "before": cursor});
            let read = self
                .graphql_read("issue label events", ISSUE_LABEL_EVENTS, variables)
                .await
                .and_then(|answer| {
                    decode::<Events>(
                        &answer,
                        "/repository/issue/timelineItems",
                        "issue label events",
                    )
                });
            let Ok(events) = read else {
                return;
            };
            let mut older = label_events(&events.nodes);
            older.append(&mut issue.label_events);
            issue.label_events = older;
            if latest_application(issue, label).is_some() {
                return;
            }
            if events.page_info.has_previous_page {
                before = events.page_info.start_cursor;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_events_are_read_with_their_actors_and_other_items_skipped() {
        let nodes: Vec<Option<Value>> = serde_json::from_value(json!([
            {"__typename": "LabeledEvent", "createdAt": "2026-08-01T00:00:00Z",
             "actor": {"__typename": "User", "login": "ann"}, "label": {"name": "klaud"}},
            {"__typename": "UnlabeledEvent", "createdAt": "2026-08-02T00:00:00Z",
             "actor": null, "label": {"name": "klaud"}},
            {"__typename": "LabeledEvent", "createdAt": "2026-08-03T00:00:00Z",
             "actor": {"__typename": "Bot", "login": "triage"}, "label": {"name": "klaud"}},
            null,
            {"__typename": "ClosedEvent"}
        ]))
        .unwrap();
        let events = label_events(&nodes);
        let read: Vec<(bool, Option<&str>)> = events
            .iter()
            .map(|event| (event.labeled, event.actor.as_deref()))
            .collect();
        assert_eq!(
            read,
            [
                (true, Some("ann")),
                (false, None),
                (true, Some("triage[bot]"))
            ]
        );
    }
}
