//! What can go wrong talking to GitHub, as data the caller must handle.
//!
//! Messages carry the method, the path, the status and at most 300 characters of GitHub's
//! `message`; never a header, so never the token.

use chrono::{DateTime, Utc};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitHubError {
    /// GitHub answered with an error status that retrying does not fix.
    #[error("{method} {path}: HTTP {status}: {message}")]
    Status {
        method: String,
        path: String,
        status: u16,
        message: String,
    },
    /// 5xx or a transport failure, still failing after the last retry.
    #[error("{method} {path}: {detail} (after {attempts} attempts)")]
    Unavailable {
        method: String,
        path: String,
        detail: String,
        attempts: u32,
    },
    /// A non-idempotent write failed in a way that leaves its effect unknown (5xx, timeout):
    /// the caller must re-check before sending it again.
    #[error("{method} {path}: outcome unknown: {detail}")]
    OutcomeUnknown {
        method: String,
        path: String,
        detail: String,
    },
    /// The primary rate limit is exhausted; the pass stops instead of sleeping until `reset`.
    #[error("the GitHub API rate limit is exhausted until {reset}")]
    RateLimitExhausted { reset: DateTime<Utc> },
    /// Secondary rate limits kept answering longer than the pass may wait.
    #[error("{method} {path}: secondary rate limit still in force after waiting {waited_seconds}s")]
    SecondaryRateLimit {
        method: String,
        path: String,
        waited_seconds: u64,
    },
    /// The pass used its request budget; the next pass continues.
    #[error("the {kind} budget of {limit} requests is used up")]
    BudgetExhausted { kind: &'static str, limit: u64 },
    /// GitHub answered something klaud cannot read.
    #[error("{method} {path}: unexpected response: {detail}")]
    Decode {
        method: String,
        path: String,
        detail: String,
    },
    /// A write reached the client of a dry run outside the recording path (a defect: it is
    /// refused, never sent).
    #[error("{method} {path}: not sent in a dry run")]
    DryRun { method: String, path: String },
    /// A GraphQL mutation answered with errors.
    #[error("graphql {operation}: {message}")]
    GraphQl { operation: String, message: String },
}

impl GitHubError {
    /// The HTTP status when GitHub answered with one.
    pub fn status(&self) -> Option<u16> {
        match self {
            GitHubError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// True for 404.
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// GitHub's `message` of a 4xx answer, if any.
    pub fn message(&self) -> Option<&str> {
        match self {
            GitHubError::Status { message, .. } => Some(message),
            _ => None,
        }
    }

    /// True when the pass should stop asking GitHub anything (budget or rate limit).
    pub fn stops_the_pass(&self) -> bool {
        matches!(
            self,
            GitHubError::RateLimitExhausted { .. } | GitHubError::BudgetExhausted { .. }
        )
    }
}
