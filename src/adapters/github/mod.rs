//! The GitHub client: the only code that talks to GitHub or knows its JSON.
//!
//! Reads return klaud's own structs ([`models`]), GitHub's state words already read into the
//! core's types ([`crate::core::github_state`]); listings follow `Link` headers with
//! `per_page=100` and say when they could not be completed (the core's
//! [`Listed`](crate::core::snapshot::Listed), whose `gap` says why); writes go through the single
//! retry state machine in [`transport`]. Base URLs come from `GITHUB_API_URL` and
//! `GITHUB_GRAPHQL_URL`, so GitHub Enterprise Server works the same way.

pub mod actions;
pub mod batch;
pub mod budget;
pub mod error;
pub mod event;
pub mod git;
pub mod graphql;
pub mod issues;
pub mod job_logs;
pub mod labelled_issues;
pub mod models;
pub mod open_pulls;
pub mod pagination;
pub mod pull_checks;
pub mod pulls;
pub mod transport;
pub mod writes;

use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;

use budget::{RequestBudget, RequestCounts};
use error::GitHubError;
use transport::{ApiRequest, ApiResponse, RetryPolicy, Transport};
use writes::{Sent, WriteRecorder};

/// Everything needed to reach one repository.
#[derive(Clone)]
pub struct GitHubSettings {
    /// REST base, e.g. `https://api.github.com` or `https://ghe.example/api/v3`.
    pub api_url: String,
    /// GraphQL endpoint, e.g. `https://api.github.com/graphql`.
    pub graphql_url: String,
    pub token: String,
    /// `owner/name`.
    pub repository: String,
    pub max_reads: u64,
    pub max_writes: u64,
    pub retry: RetryPolicy,
    pub connect_timeout: Duration,
    pub read_timeout: Duration,
}

/// Everything but the token.
impl std::fmt::Debug for GitHubSettings {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("GitHubSettings")
            .field("api_url", &self.api_url)
            .field("graphql_url", &self.graphql_url)
            .field("repository", &self.repository)
            .field("max_reads", &self.max_reads)
            .field("max_writes", &self.max_writes)
            .finish_non_exhaustive()
    }
}

impl GitHubSettings {
    /// Settings with the default budgets and timeouts.
    pub fn new(api_url: &str, graphql_url: &str, token: &str, repository: &str) -> Self {
        GitHubSettings {
            api_url: api_url.trim_end_matches('/').to_string(),
            graphql_url: graphql_url.to_string(),
            token: token.to_string(),
            repository: repository.to_string(),
            max_reads: 1_000,
            max_writes: 100,
            retry: RetryPolicy::default(),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
        }
    }
}

/// A client bound to one repository, with the pass's request budget.
pub struct GitHubClient {
    transport: Transport,
    api_base: url::Url,
    /// `/repos/owner/name`, percent-encoded.
    repository_path: String,
    repository: String,
    settings: GitHubSettings,
    /// Set in a dry run: writes are recorded (and charged to the budget), never sent.
    recorder: Option<Arc<WriteRecorder>>,
    /// The repository's GraphQL node id, once a query has named it.
    repository_node_id: std::sync::OnceLock<String>,
}

/// Names the repository and the API, never the token.
impl std::fmt::Debug for GitHubClient {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("GitHubClient")
            .field("api", &self.settings.api_url)
            .field("repository", &self.repository)
            .finish_non_exhaustive()
    }
}

impl GitHubClient {
    pub fn new(settings: &GitHubSettings) -> Result<Self, String> {
        let budget = Arc::new(RequestBudget::new(settings.max_reads, settings.max_writes));
        Self::with_budget(settings, budget)
    }

    /// A client for the same repository acting with another token (e.g. the workflow token that
    /// writes status labels), whose requests count against this client's budget.
    pub fn with_token(&self, token: &str) -> Result<Self, String> {
        let settings = GitHubSettings {
            token: token.to_string(),
            ..self.settings.clone()
        };
        let mut client = Self::with_budget(&settings, Arc::clone(&self.transport.budget))?;
        client.recorder = self.recorder.clone();
        Ok(client)
    }

    /// This client, recording its writes in `recorder` instead of sending them: reads are sent
    /// as usual, every write is charged to the budget and answered as GitHub would answer it
    /// when it succeeds. A dry run applies its plan through such a client.
    pub fn recording_writes(mut self, recorder: Arc<WriteRecorder>) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// True when writes are recorded, not sent.
    pub fn records_writes(&self) -> bool {
        self.recorder.is_some()
    }

    fn with_budget(settings: &GitHubSettings, budget: Arc<RequestBudget>) -> Result<Self, String> {
        if let Some(problem) = token_problem(&settings.token) {
            return Err(format!("the token {problem}"));
        }
        if !valid_repository_name(&settings.repository) {
            return Err(format!(
                "'{}' is not a repository name of the form owner/name",
                settings.repository
            ));
        }
        let api_base = url::Url::parse(&settings.api_url)
            .map_err(|error| format!("GITHUB_API_URL '{}': {error}", settings.api_url))?;
        let graphql = url::Url::parse(&settings.graphql_url)
            .map_err(|error| format!("GITHUB_GRAPHQL_URL '{}': {error}", settings.graphql_url))?;
        let rest = build_octocrab(&origin_of(&api_base), api_base.path(), settings)?;
        let graphql_client = build_octocrab(&origin_of(&graphql), "/", settings)?;
        let transport = Transport::new(
            rest,
            graphql_client,
            graphql.path().to_string(),
            budget,
            settings.retry.clone(),
        );
        Ok(GitHubClient {
            transport,
            api_base,
            repository_path: format!("/repos/{}", settings.repository),
            repository: settings.repository.clone(),
            settings: settings.clone(),
            recorder: None,
            repository_node_id: std::sync::OnceLock::new(),
        })
    }

    /// `owner/name`.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// Requests sent so far.
    pub fn request_counts(&self) -> RequestCounts {
        self.transport.budget.counts()
    }

    /// Writes still allowed in this pass.
    pub fn writes_left(&self) -> u64 {
        self.transport.budget.writes_left()
    }

    /// `/repos/owner/name` followed by `suffix`.
    fn repo_path(&self, suffix: &str) -> String {
        format!("{}{suffix}", self.repository_path)
    }

    /// Sends a read. A write must go through [`Self::send_write`], so that a dry run can
    /// record it; one that does not is refused in a dry run rather than sent.
    async fn send(&self, request: ApiRequest) -> Result<ApiResponse, GitHubError> {
        if self.recorder.is_some() && request.idempotency.kind() == budget::RequestKind::Write {
            return Err(GitHubError::DryRun {
                method: request.method.to_string(),
                path: request.path_and_query.clone(),
            });
        }
        self.transport.send(&request).await
    }

    /// Sends a write, or in a dry run records it (charged to the budget like a sent one).
    async fn send_write(&self, request: ApiRequest) -> Result<Sent, GitHubError> {
        match &self.recorder {
            Some(recorder) => {
                self.transport
                    .budget
                    .charge(budget::RequestKind::Write, false)?;
                recorder.record(&request);
                Ok(Sent::Recorded)
            }
            None => self.transport.send(&request).await.map(Sent::Response),
        }
    }

    async fn get_json<T: DeserializeOwned>(&self, path: &str) -> Result<T, GitHubError> {
        let response = self.send(ApiRequest::get(path)).await?;
        decode(&response, "GET", path)
    }

    /// GET that answers `None` on 404.
    async fn get_optional<T: DeserializeOwned>(
        &self,
        path: &str,
    ) -> Result<Option<T>, GitHubError> {
        match self.get_json(path).await {
            Ok(value) => Ok(Some(value)),
            Err(error) if error.is_not_found() => Ok(None),
            Err(error) => Err(error),
        }
    }

    pub async fn repository_info(&self) -> Result<models::Repository, GitHubError> {
        self.get_json(&self.repo_path("")).await
    }
}

fn decode<T: DeserializeOwned>(
    response: &ApiResponse,
    method: &str,
    path: &str,
) -> Result<T, GitHubError> {
    serde_json::from_str(&response.body).map_err(|error| GitHubError::Decode {
        method: method.to_string(),
        path: path.to_string(),
        detail: crate::core::text::bounded(&error.to_string(), 300),
    })
}

/// Why `token` cannot be sent as a credential, if it cannot. A token is visible ASCII only, which
/// is also all an HTTP header carries; a stray line break in a secret is the usual culprit. The
/// answer never quotes the token.
pub fn token_problem(token: &str) -> Option<&'static str> {
    if token.is_empty() {
        Some("is empty")
    } else if token.bytes().all(|byte| byte.is_ascii_graphic()) {
        None
    } else {
        Some(
            "holds a character no token has (whitespace, a line break, a control or non-ASCII character)",
        )
    }
}

/// Whether `name` is a repository name of the form `owner/name`.
pub fn valid_repository_name(name: &str) -> bool {
    let mut parts = name.split('/');
    let valid = |part: Option<&str>| {
        part.is_some_and(|part| {
            !part.is_empty()
                && part != "."
                && part != ".."
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        })
    };
    valid(parts.next()) && valid(parts.next()) && parts.next().is_none()
}

fn origin_of(url: &url::Url) -> String {
    url.origin().ascii_serialization()
}

fn build_octocrab(
    origin: &str,
    base_path: &str,
    settings: &GitHubSettings,
) -> Result<octocrab::Octocrab, String> {
    let base = format!("{origin}{}", base_path.trim_end_matches('/'));
    octocrab::Octocrab::builder()
        .base_uri(base.as_str())
        .map_err(|error| format!("invalid GitHub URL {base}: {error}"))?
        .personal_token(settings.token.clone())
        .set_connect_timeout(Some(settings.connect_timeout))
        .set_read_timeout(Some(settings.read_timeout))
        .set_write_timeout(Some(settings.read_timeout))
        .build()
        .map_err(|error| format!("cannot build the GitHub client: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_names_are_owner_slash_name() {
        assert!(valid_repository_name("acme/bench"));
        assert!(valid_repository_name("Semi-Analysis_AI/Inference.X"));
        assert!(!valid_repository_name("acme"));
        assert!(!valid_repository_name("acme/bench/x"));
        assert!(!valid_repository_name("acme/../x"));
        assert!(!valid_repository_name("/bench"));
        assert!(!valid_repository_name("acme/.."));
    }

    #[test]
    fn a_token_is_visible_ascii_and_a_problem_never_quotes_it() {
        assert_eq!(token_problem("ghs_0123456789abcdefABCDEF"), None);
        assert_eq!(token_problem("github_pat_11AA-b.c~d"), None);
        for token in [
            "",
            "ghs_secret\n",
            "ghs_a b",
            "ghs_\tx",
            "ghs_é",
            "ghs_\u{7f}",
        ] {
            let problem = token_problem(token).expect("a problem");
            assert!(token.is_empty() || !problem.contains(token), "{problem}");
        }
    }

    #[test]
    fn a_client_with_a_malformed_token_is_refused_instead_of_panicking() {
        let settings = GitHubSettings::new(
            "https://api.github.com",
            "https://api.github.com/graphql",
            "ghs_line\nbreak",
            "acme/bench",
        );
        let error = GitHubClient::new(&settings).expect_err("refused");
        assert!(error.starts_with("the token holds"), "{error}");
        assert!(!error.contains("ghs_line"), "{error}");
    }
}
