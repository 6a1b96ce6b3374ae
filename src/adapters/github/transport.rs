//! The one retry state machine between klaud and GitHub.
//!
//! - Every request sent is counted and charged to the pass's budget, retries included.
//! - Reads and idempotent writes are retried on 5xx, timeouts and transport failures with
//!   jittered exponential backoff; there is no sleep after the last attempt and the last real
//!   error is returned.
//! - Secondary rate limits (403/429 with `Retry-After`, or GitHub's "secondary rate limit"
//!   message) are waited out up to a cap, for every kind of request: GitHub did not process them.
//! - An exhausted primary limit (`x-ratelimit-remaining: 0`) stops the pass instead of sleeping
//!   until the reset.
//! - A non-idempotent write (POST a comment, cancel, dispatch) that fails with 5xx or a timeout is
//!   never re-sent here: its effect is unknown, and the caller must re-check first.
//!
//! octocrab provides the HTTP client, the base URL and the token header; its own retry layer is
//! not compiled in (it would re-send POSTs immediately).

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use http::{HeaderMap, Method, Request};
use octocrab::Octocrab;

use super::budget::{RequestBudget, RequestKind};
use super::error::GitHubError;

/// How a request may be repeated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idempotency {
    /// GET: repeat freely.
    Read,
    /// PUT, PATCH, DELETE and the draft/ready mutations: repeating has the same effect.
    IdempotentWrite,
    /// POST that creates something: never repeated blindly.
    NonIdempotent,
}

impl Idempotency {
    pub fn kind(self) -> RequestKind {
        match self {
            Idempotency::Read => RequestKind::Read,
            Idempotency::IdempotentWrite | Idempotency::NonIdempotent => RequestKind::Write,
        }
    }
}

/// Bounds of retrying and waiting.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Attempts for a request failing transiently (5xx, timeout), the first included.
    pub attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// Total time one request may spend waiting out secondary rate limits.
    pub secondary_wait_cap: Duration,
    /// Wait when a secondary limit names no `Retry-After` (GitHub asks for at least a minute).
    pub secondary_default_wait: Duration,
    /// Deadline of one HTTP exchange.
    pub request_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(10),
            secondary_wait_cap: Duration::from_secs(180),
            secondary_default_wait: Duration::from_secs(60),
            request_timeout: Duration::from_secs(60),
        }
    }
}

/// A finished exchange with a success status.
#[derive(Debug, Clone)]
pub struct ApiResponse {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
}

/// One request as klaud describes it: a path relative to the API base (or to the GraphQL
/// endpoint), an optional JSON body and how it may be repeated.
#[derive(Debug, Clone)]
pub struct ApiRequest {
    pub method: Method,
    pub path_and_query: String,
    pub body: Option<serde_json::Value>,
    pub idempotency: Idempotency,
    pub graphql: bool,
}

impl ApiRequest {
    pub fn get(path_and_query: impl Into<String>) -> Self {
        ApiRequest {
            method: Method::GET,
            path_and_query: path_and_query.into(),
            body: None,
            idempotency: Idempotency::Read,
            graphql: false,
        }
    }

    pub fn write(
        method: Method,
        path_and_query: impl Into<String>,
        body: Option<serde_json::Value>,
    ) -> Self {
        let idempotency = if method == Method::POST {
            Idempotency::NonIdempotent
        } else {
            Idempotency::IdempotentWrite
        };
        ApiRequest {
            method,
            path_and_query: path_and_query.into(),
            body,
            idempotency,
            graphql: false,
        }
    }

    /// Marks a POST as safe to repeat (e.g. creating a ref answers 422 the second time).
    pub fn idempotent(mut self) -> Self {
        self.idempotency = Idempotency::IdempotentWrite;
        self
    }
}

/// The HTTP side of the GitHub client (deliberately not `Debug`: it holds the token).
pub struct Transport {
    rest: Octocrab,
    graphql: Octocrab,
    graphql_path: String,
    pub(super) budget: Arc<RequestBudget>,
    policy: RetryPolicy,
}

/// What went wrong with one attempt that retrying might fix.
struct TransientFailure {
    detail: String,
}

impl Transport {
    pub fn new(
        rest: Octocrab,
        graphql: Octocrab,
        graphql_path: String,
        budget: Arc<RequestBudget>,
        policy: RetryPolicy,
    ) -> Self {
        Transport {
            rest,
            graphql,
            graphql_path,
            budget,
            policy,
        }
    }

    /// Sends `request` under the retry rules in the module documentation.
    pub async fn send(&self, request: &ApiRequest) -> Result<ApiResponse, GitHubError> {
        let mut attempt: u32 = 0;
        let mut secondary_waited = Duration::ZERO;
        let mut is_retry = false;
        loop {
            self.budget.charge(request.idempotency.kind(), is_retry)?;
            is_retry = true;
            let failure = match self.exchange(request).await {
                Ok(response) if (200..400).contains(&response.status) => return Ok(response),
                Ok(response) => {
                    if let Some(wait) = secondary_limit_wait(&response, &self.policy) {
                        if secondary_waited + wait > self.policy.secondary_wait_cap {
                            return Err(GitHubError::SecondaryRateLimit {
                                method: request.method.to_string(),
                                path: request.path_and_query.clone(),
                                waited_seconds: secondary_waited.as_secs(),
                            });
                        }
                        self.pause(wait).await;
                        secondary_waited += wait;
                        continue;
                    }
                    if let Some(reset) = primary_limit_reset(&response) {
                        return Err(GitHubError::RateLimitExhausted { reset });
                    }
                    if response.status < 500 {
                        return Err(GitHubError::Status {
                            method: request.method.to_string(),
                            path: request.path_and_query.clone(),
                            status: response.status,
                            message: github_message(&response.body),
                        });
                    }
                    TransientFailure {
                        detail: format!("HTTP {}", response.status),
                    }
                }
                Err(failure) => failure,
            };
            attempt += 1;
            if request.idempotency == Idempotency::NonIdempotent {
                return Err(GitHubError::OutcomeUnknown {
                    method: request.method.to_string(),
                    path: request.path_and_query.clone(),
                    detail: failure.detail,
                });
            }
            if attempt >= self.policy.attempts {
                return Err(GitHubError::Unavailable {
                    method: request.method.to_string(),
                    path: request.path_and_query.clone(),
                    detail: failure.detail,
                    attempts: attempt,
                });
            }
            self.pause(backoff_delay(&self.policy, attempt)).await;
        }
    }

    async fn pause(&self, wait: Duration) {
        tokio::time::sleep(wait).await;
        self.budget.note_wait(wait);
    }

    async fn exchange(&self, request: &ApiRequest) -> Result<ApiResponse, TransientFailure> {
        let (client, path) = if request.graphql {
            (&self.graphql, self.graphql_path.as_str())
        } else {
            (&self.rest, request.path_and_query.as_str())
        };
        let body = request
            .body
            .as_ref()
            .map(|body| body.to_string())
            .unwrap_or_default();
        let mut builder = Request::builder()
            .method(request.method.clone())
            .uri(path)
            .header(http::header::ACCEPT, "application/vnd.github+json")
            .header("x-github-api-version", "2022-11-28")
            .header(http::header::USER_AGENT, "klaud");
        if request.body.is_some() {
            builder = builder.header(http::header::CONTENT_TYPE, "application/json");
        }
        let http_request = builder.body(body).map_err(|error| TransientFailure {
            detail: format!("invalid request: {error}"),
        })?;
        let exchange = async {
            let response = client.execute(http_request).await?;
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let body = client.body_to_string(response).await?;
            Ok::<_, octocrab::Error>(ApiResponse {
                status,
                headers,
                body,
            })
        };
        match tokio::time::timeout(self.policy.request_timeout, exchange).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(error)) => Err(TransientFailure {
                detail: format!("transport error: {}", transport_detail(&error)),
            }),
            Err(_) => Err(TransientFailure {
                detail: format!(
                    "no answer within {}s",
                    self.policy.request_timeout.as_secs()
                ),
            }),
        }
    }
}

/// A short description of a transport error that cannot contain the token (octocrab's errors
/// describe connections, never headers).
fn transport_detail(error: &octocrab::Error) -> String {
    let text = error.to_string();
    crate::core::text::bounded(&text, 200)
}

/// `Retry-After` of a secondary rate limit, or GitHub's advice when it names none.
fn secondary_limit_wait(response: &ApiResponse, policy: &RetryPolicy) -> Option<Duration> {
    if response.status != 403 && response.status != 429 {
        return None;
    }
    if let Some(seconds) = header(&response.headers, "retry-after").and_then(|v| v.parse().ok()) {
        return Some(Duration::from_secs(seconds));
    }
    if github_message(&response.body)
        .to_ascii_lowercase()
        .contains("secondary rate limit")
    {
        return Some(policy.secondary_default_wait);
    }
    None
}

/// The reset time when the primary rate limit is exhausted.
fn primary_limit_reset(response: &ApiResponse) -> Option<DateTime<Utc>> {
    if response.status != 403 && response.status != 429 {
        return None;
    }
    if header(&response.headers, "x-ratelimit-remaining") != Some("0") {
        return None;
    }
    let reset = header(&response.headers, "x-ratelimit-reset")
        .and_then(|value| value.parse::<i64>().ok())
        .and_then(|seconds| Utc.timestamp_opt(seconds, 0).single())
        .unwrap_or_else(Utc::now);
    Some(reset)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// GitHub's `message` of an error body, at most 300 characters; never the raw body.
pub fn github_message(body: &str) -> String {
    let message = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|value| {
            value
                .get("message")
                .and_then(|m| m.as_str())
                .map(str::to_string)
        })
        .unwrap_or_else(|| "no message".to_string());
    crate::core::text::bounded(&message, 300)
}

/// Exponential backoff with full jitter: a random delay up to `base * 2^(attempt-1)`, capped.
fn backoff_delay(policy: &RetryPolicy, attempt: u32) -> Duration {
    let ceiling = policy
        .base_delay
        .saturating_mul(1 << attempt.saturating_sub(1).min(16))
        .min(policy.max_delay);
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the operating system provides randomness");
    let fraction = (u64::from_le_bytes(bytes) % 1_000) as f64 / 1_000.0;
    // Half fixed, half random, so a retry never fires immediately.
    ceiling.mul_f64(0.5 + fraction / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: u16, headers: &[(&'static str, &str)], body: &str) -> ApiResponse {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(*name, value.parse().unwrap());
        }
        ApiResponse {
            status,
            headers: map,
            body: body.to_string(),
        }
    }

    #[test]
    fn a_retry_after_names_the_secondary_wait() {
        let policy = RetryPolicy::default();
        let limited = response(403, &[("retry-after", "2")], r#"{"message":"x"}"#);
        assert_eq!(
            secondary_limit_wait(&limited, &policy),
            Some(Duration::from_secs(2))
        );
        let limited = response(
            429,
            &[],
            r#"{"message":"You have exceeded a secondary rate limit"}"#,
        );
        assert_eq!(
            secondary_limit_wait(&limited, &policy),
            Some(policy.secondary_default_wait)
        );
    }

    #[test]
    fn an_exhausted_primary_limit_reports_its_reset() {
        let exhausted = response(
            403,
            &[
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", "1800000000"),
            ],
            r#"{"message":"API rate limit exceeded"}"#,
        );
        assert_eq!(
            secondary_limit_wait(&exhausted, &RetryPolicy::default()),
            None
        );
        assert_eq!(
            primary_limit_reset(&exhausted),
            Utc.timestamp_opt(1_800_000_000, 0).single()
        );
    }

    #[test]
    fn a_plain_forbidden_is_neither_limit() {
        let forbidden = response(
            403,
            &[("x-ratelimit-remaining", "4000")],
            r#"{"message":"Resource not accessible by integration"}"#,
        );
        assert_eq!(
            secondary_limit_wait(&forbidden, &RetryPolicy::default()),
            None
        );
        assert_eq!(primary_limit_reset(&forbidden), None);
    }

    #[test]
    fn backoff_grows_and_stays_under_the_cap() {
        let policy = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(300),
            ..RetryPolicy::default()
        };
        let first = backoff_delay(&policy, 1);
        assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
        let late = backoff_delay(&policy, 10);
        assert!(late >= Duration::from_millis(150) && late <= Duration::from_millis(300));
    }

    #[test]
    fn only_the_message_of_an_error_body_is_kept() {
        assert_eq!(
            github_message(r#"{"message":"Not Found","documentation_url":"x"}"#),
            "Not Found"
        );
        assert_eq!(github_message("<html>"), "no message");
    }
}
