//! The two GraphQL mutations klaud needs (REST has no draft/ready toggle). Both set a state, so
//! repeating them is safe. GraphQL answers errors with HTTP 200 and an `errors` array, e.g. when
//! asked to redraft a closed pull request.

use http::Method;
use serde_json::json;

use super::GitHubClient;
use super::error::GitHubError;
use super::transport::{ApiRequest, Idempotency};

const MARK_READY: &str = "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { number isDraft } } }";
const CONVERT_TO_DRAFT: &str = "mutation($id: ID!) { convertPullRequestToDraft(input: {pullRequestId: $id}) { pullRequest { number isDraft } } }";

impl GitHubClient {
    /// Marks a draft pull request ready for review.
    pub async fn mark_ready_for_review(
        &self,
        pull_request_node_id: &str,
    ) -> Result<(), GitHubError> {
        self.mutate(
            "markPullRequestReadyForReview",
            MARK_READY,
            pull_request_node_id,
        )
        .await
    }

    /// Converts an open pull request back to a draft. Callers never ask this of a closed one.
    pub async fn convert_to_draft(&self, pull_request_node_id: &str) -> Result<(), GitHubError> {
        self.mutate(
            "convertPullRequestToDraft",
            CONVERT_TO_DRAFT,
            pull_request_node_id,
        )
        .await
    }

    async fn mutate(&self, operation: &str, query: &str, node_id: &str) -> Result<(), GitHubError> {
        let request = ApiRequest {
            method: Method::POST,
            path_and_query: "graphql".to_string(),
            body: Some(json!({"query": query, "variables": {"id": node_id}})),
            idempotency: Idempotency::IdempotentWrite,
            graphql: true,
        };
        let response = self.send(request).await?;
        let answer: serde_json::Value =
            serde_json::from_str(&response.body).map_err(|error| GitHubError::Decode {
                method: "POST".into(),
                path: "graphql".into(),
                detail: crate::core::text::bounded(&error.to_string(), 300),
            })?;
        if let Some(errors) = answer.get("errors").and_then(|errors| errors.as_array())
            && !errors.is_empty()
        {
            let message = errors
                .iter()
                .filter_map(|error| error.get("message").and_then(|m| m.as_str()))
                .collect::<Vec<_>>()
                .join("; ");
            return Err(GitHubError::GraphQl {
                operation: operation.to_string(),
                message: crate::core::text::bounded(&message, 300),
            });
        }
        Ok(())
    }
}
