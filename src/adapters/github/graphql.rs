//! GraphQL, where it does what REST cannot: the draft/ready toggles, deleting refs on a condition
//! (`updateRefs`, contract §5a), an issue's edit history ([`ISSUE_EDIT_HISTORY`], read by
//! [`super::issues`]) and reading many objects in one request ([`super::batch`]).
//!
//! GraphQL answers errors with HTTP 200 and an `errors` array, e.g. when asked to redraft a
//! closed pull request; a query that GitHub rejects as a whole (an unknown field, an older GitHub
//! Enterprise Server) has no `data` at all. Every query and mutation text klaud sends is a
//! constant here or in `batch`, so a test can hold each one to GitHub's published schema.

use http::Method;
use serde_json::{Value, json};

use super::GitHubClient;
use super::error::GitHubError;
use super::transport::{ApiRequest, Idempotency};
use super::writes::Sent;
use crate::core::text::bounded;

pub const MARK_READY: &str = "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { number isDraft } } }";
pub const CONVERT_TO_DRAFT: &str = "mutation($id: ID!) { convertPullRequestToDraft(input: {pullRequestId: $id}) { pullRequest { number isDraft } } }";
/// An issue's body revisions from both ends of the connection (`head`: the first 50, `tail`: the
/// last 50), so the newest ones are read whichever order GitHub lists them in; `totalCount` says
/// how many there are in all.
pub const ISSUE_EDIT_HISTORY: &str = "query($owner: String!, $name: String!, $number: Int!) { repository(owner: $owner, name: $name) { issue(number: $number) { number head: userContentEdits(first: 50) { totalCount nodes { editedAt editor { login } diff } } tail: userContentEdits(last: 50) { totalCount nodes { editedAt editor { login } diff } } } } }";
/// The label events of an issue's timeline, as both queries below read them.
macro_rules! label_events {
    () => {
        "timelineItems(itemTypes: [LABELED_EVENT, UNLABELED_EVENT], last: 100, before: $before) { totalCount pageInfo { hasPreviousPage startCursor } nodes { __typename ... on LabeledEvent { createdAt actor { __typename login } label { name } } ... on UnlabeledEvent { createdAt actor { __typename login } label { name } } } }"
    };
}
/// The open issues carrying one of `$labels` (never pull requests: GraphQL's `issues` holds
/// none), 100 a page oldest first from `$after`, each with its labels and its newest 100 label
/// events (`$before` is null here; it is the same selection as [`ISSUE_LABEL_EVENTS`]).
pub const LABELLED_ISSUES: &str = concat!(
    "query($owner: String!, $name: String!, $labels: [String!], $after: String, $before: String) { repository(owner: $owner, name: $name) { issues(first: 100, after: $after, labels: $labels, states: [OPEN], orderBy: {field: CREATED_AT, direction: ASC}) { totalCount pageInfo { hasNextPage endCursor } nodes { number title body url createdAt locked author { __typename login } labels(first: 100) { nodes { name } } ",
    label_events!(),
    " } } } }"
);
/// One issue's label events older than `$before`, 100 at a time: for an issue whose newest 100
/// do not show who applied the label last.
pub const ISSUE_LABEL_EVENTS: &str = concat!(
    "query($owner: String!, $name: String!, $number: Int!, $before: String) { repository(owner: $owner, name: $name) { issue(number: $number) { ",
    label_events!(),
    " } } }"
);
pub const UPDATE_REFS: &str =
    "mutation($input: UpdateRefsInput!) { updateRefs(input: $input) { clientMutationId } }";

/// The object id git uses for "no object": as `afterOid` it deletes the ref.
pub const ZERO_OID: &str = "0000000000000000000000000000000000000000";

/// Refs deleted by one `updateRefs` request.
pub const REFS_PER_UPDATE: usize = 250;

/// One error of a GraphQL answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphQlProblem {
    /// GitHub's `type` (`NOT_FOUND`, `FORBIDDEN`, `UNPROCESSABLE`) or `extensions.code`
    /// (`undefinedField`), when it names one.
    pub kind: Option<String>,
    pub message: String,
    /// The first alias or field of `path`, when the error belongs to one.
    pub path: Vec<String>,
}

/// A GraphQL answer: its `data` (null when GitHub rejected the whole request) and its errors.
#[derive(Debug, Clone)]
pub struct GraphQlAnswer {
    pub data: Value,
    pub problems: Vec<GraphQlProblem>,
}

impl GraphQlAnswer {
    /// The problems joined into one bounded message.
    pub fn message(&self) -> String {
        let joined = self
            .problems
            .iter()
            .map(|problem| problem.message.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        bounded(&joined, 300)
    }
}

/// What one `updateRefs` request did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefUpdates {
    /// Every update applied (or, in a dry run, recorded).
    Applied,
    /// GitHub refused the batch (a ref no longer at its `beforeOid`, or any other refusal):
    /// none of it applied.
    Rejected { message: String },
    /// This GitHub does not offer the mutation, or refuses it to this token: fall back.
    Unavailable { message: String },
}

/// A ref deletion that holds only while the ref is at `before`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionalDeletion {
    /// The branch name, without `refs/heads/`.
    pub branch: String,
    pub before: String,
}

impl GitHubClient {
    /// Marks a draft pull request ready for review.
    pub async fn mark_ready_for_review(
        &self,
        pull_request_node_id: &str,
    ) -> Result<(), GitHubError> {
        self.pull_request_mutation(
            "markPullRequestReadyForReview",
            MARK_READY,
            pull_request_node_id,
        )
        .await
    }

    /// Converts an open pull request back to a draft. Callers never ask this of a closed one.
    pub async fn convert_to_draft(&self, pull_request_node_id: &str) -> Result<(), GitHubError> {
        self.pull_request_mutation(
            "convertPullRequestToDraft",
            CONVERT_TO_DRAFT,
            pull_request_node_id,
        )
        .await
    }

    async fn pull_request_mutation(
        &self,
        operation: &str,
        query: &str,
        node_id: &str,
    ) -> Result<(), GitHubError> {
        let request = graphql_request(query, json!({"id": node_id}), true);
        let Some(answer) = self.graphql_write(operation, request).await? else {
            return Ok(());
        };
        if answer.problems.is_empty() {
            Ok(())
        } else {
            Err(GitHubError::GraphQl {
                operation: operation.to_string(),
                message: answer.message(),
            })
        }
    }

    /// Deletes each branch of `deletions` only while it points at its `before`, all or none, in
    /// one request (GitHub's `updateRefs`, never forced).
    pub async fn delete_branches_if_at(
        &self,
        repository_node_id: &str,
        deletions: &[ConditionalDeletion],
    ) -> Result<RefUpdates, GitHubError> {
        let updates: Vec<Value> = deletions
            .iter()
            .map(|deletion| {
                json!({
                    "name": format!("refs/heads/{}", deletion.branch),
                    "beforeOid": deletion.before,
                    "afterOid": ZERO_OID,
                    "force": false,
                })
            })
            .collect();
        let variables = json!({"input": {
            "repositoryId": repository_node_id,
            "refUpdates": updates,
        }});
        let request = graphql_request(UPDATE_REFS, variables, true);
        let Some(answer) = self.graphql_write("updateRefs", request).await? else {
            return Ok(RefUpdates::Applied);
        };
        if answer.problems.is_empty() {
            return Ok(RefUpdates::Applied);
        }
        let message = answer.message();
        if answer.problems.iter().any(mutation_unavailable) {
            Ok(RefUpdates::Unavailable { message })
        } else {
            Ok(RefUpdates::Rejected { message })
        }
    }

    /// The repository's GraphQL node id (what `updateRefs` names), read once per client.
    pub async fn repository_node_id(&self) -> Result<String, GitHubError> {
        if let Some(id) = self.repository_node_id.get() {
            return Ok(id.clone());
        }
        let info = self.repository_info().await?;
        let _ = self.repository_node_id.set(info.node_id.clone());
        Ok(info.node_id)
    }

    /// Remembers the repository's node id a query returned.
    pub(super) fn note_repository_node_id(&self, id: &str) {
        let _ = self.repository_node_id.set(id.to_string());
    }

    /// Sends a GraphQL query (a read).
    pub(super) async fn graphql_read(
        &self,
        operation: &str,
        query: &str,
        variables: Value,
    ) -> Result<GraphQlAnswer, GitHubError> {
        let response = self.send(graphql_request(query, variables, false)).await?;
        parse_answer(operation, &response.body)
    }

    /// Sends a GraphQL mutation; `None` when a dry run recorded it.
    async fn graphql_write(
        &self,
        operation: &str,
        request: ApiRequest,
    ) -> Result<Option<GraphQlAnswer>, GitHubError> {
        match self.send_write(request).await? {
            Sent::Recorded => Ok(None),
            Sent::Response(response) => parse_answer(operation, &response.body).map(Some),
        }
    }
}

fn graphql_request(query: &str, variables: Value, mutation: bool) -> ApiRequest {
    ApiRequest {
        method: Method::POST,
        path_and_query: "graphql".to_string(),
        body: Some(json!({"query": query, "variables": variables})),
        // Every mutation klaud sends sets a state (ready, draft, a ref gone), so it is safe
        // to repeat; a query only reads.
        idempotency: if mutation {
            Idempotency::IdempotentWrite
        } else {
            Idempotency::Read
        },
        graphql: true,
    }
}

fn parse_answer(operation: &str, body: &str) -> Result<GraphQlAnswer, GitHubError> {
    let answer: Value = serde_json::from_str(body).map_err(|error| GitHubError::Decode {
        method: "POST".into(),
        path: format!("graphql {operation}"),
        detail: bounded(&error.to_string(), 300),
    })?;
    let problems = answer
        .get("errors")
        .and_then(Value::as_array)
        .map(|errors| errors.iter().map(problem).collect())
        .unwrap_or_default();
    Ok(GraphQlAnswer {
        data: answer.get("data").cloned().unwrap_or(Value::Null),
        problems,
    })
}

fn problem(error: &Value) -> GraphQlProblem {
    let kind = error
        .get("type")
        .and_then(Value::as_str)
        .or_else(|| {
            error
                .get("extensions")
                .and_then(|extensions| extensions.get("code"))
                .and_then(Value::as_str)
        })
        .map(str::to_string);
    let path = error
        .get("path")
        .and_then(Value::as_array)
        .map(|path| {
            path.iter()
                .map(|segment| match segment {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    GraphQlProblem {
        kind,
        message: bounded(
            error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("no message"),
            300,
        ),
        path,
    }
}

/// GitHub does not know the mutation (an older GitHub Enterprise Server answers that the field
/// or its input type does not exist) or refuses it to this token.
fn mutation_unavailable(problem: &GraphQlProblem) -> bool {
    let kind = problem.kind.as_deref().unwrap_or_default();
    let message = problem.message.to_ascii_lowercase();
    matches!(
        kind,
        "undefinedField" | "undefinedType" | "FORBIDDEN" | "missingRequiredInputObjectAttribute"
    ) || (message.contains("updaterefs")
        && (message.contains("doesn't exist") || message.contains("does not exist")))
        || message.contains("resource not accessible")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_mutation_is_unavailable_and_a_moved_ref_is_a_rejection() {
        let unknown = parse_answer(
            "updateRefs",
            r#"{"errors":[{"message":"Field 'updateRefs' doesn't exist on type 'Mutation'","extensions":{"code":"undefinedField","typeName":"Mutation","fieldName":"updateRefs"}}]}"#,
        )
        .unwrap();
        assert!(unknown.data.is_null());
        assert!(unknown.problems.iter().any(mutation_unavailable));
        let moved = parse_answer(
            "updateRefs",
            r#"{"data":{"updateRefs":null},"errors":[{"type":"UNPROCESSABLE","path":["updateRefs"],"message":"refs/heads/a is at 1234 but expected 5678"}]}"#,
        )
        .unwrap();
        assert!(!moved.problems.iter().any(mutation_unavailable));
        assert_eq!(moved.problems[0].path, ["updateRefs"]);
        assert_eq!(moved.problems[0].kind.as_deref(), Some("UNPROCESSABLE"));
    }

    #[test]
    fn an_answer_that_is_not_json_is_a_decode_error() {
        assert!(matches!(
            parse_answer("updateRefs", "<html>"),
            Err(GitHubError::Decode { .. })
        ));
    }
}
