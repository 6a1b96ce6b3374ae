//! Connecting a mode to GitHub: the repository, API URLs and tokens from the environment and
//! inputs, the pass's request budget, and the report of what the pass cost.

use clap::Args;
use serde::Serialize;

use super::cli::parse_positive_u64;
use super::error::StepError;
use super::modes::StepContext;
use std::sync::Arc;

use crate::adapters::github::budget::RequestCounts;
use crate::adapters::github::writes::{RecordedWrite, WriteRecorder};
use crate::adapters::github::{GitHubClient, GitHubSettings, token_problem};

/// Flags of every mode that talks to GitHub.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "GitHub options")]
pub struct GitHubArgs {
    /// Token that writes the display-only status labels, so label events start no workflows
    /// [default: the github-token]
    #[arg(
        long,
        env = "KLAUD_LABEL_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub label_token: Option<String>,

    /// Write budget of this pass (POST, PUT, PATCH, DELETE and GraphQL requests, retries
    /// included); what is left over is done by the next pass
    #[arg(long, env = "KLAUD_MAX_OPERATIONS", value_name = "N", default_value = "100", value_parser = parse_positive_u64)]
    pub max_operations: u64,

    /// Read budget of this pass (GET requests, retries included)
    #[arg(long, env = "KLAUD_MAX_READS", value_name = "N", default_value = "1000", value_parser = parse_positive_u64)]
    pub max_reads: u64,
}

/// The clients of one pass: both count against one budget, and in a dry run both record
/// their writes in one recorder instead of sending them.
#[derive(Debug)]
pub struct GitHubConnection {
    /// Acts as the bot (`github-token`).
    pub client: GitHubClient,
    /// Writes status labels (`label-token`).
    pub label_client: GitHubClient,
    pub max_operations: u64,
    pub max_reads: u64,
    recorder: Option<Arc<WriteRecorder>>,
}

/// Builds the clients; a missing repository or token is bad input.
pub fn connect(
    context: &StepContext,
    arguments: &GitHubArgs,
) -> Result<GitHubConnection, StepError> {
    let environment = &context.environment;
    let repository = environment.github_repository.clone().ok_or_else(|| {
        StepError::bad_input(
            "GITHUB_REPOSITORY",
            "must name the repository as owner/name",
        )
    })?;
    let token = context.github_token.clone().ok_or_else(|| {
        StepError::bad_input("github-token", "a token is required (or GITHUB_TOKEN)")
    })?;
    if let Some(problem) = token_problem(&token) {
        return Err(StepError::bad_input(
            "github-token",
            format!("the token {problem}"),
        ));
    }
    let api_url = environment
        .github_api_url
        .clone()
        .unwrap_or_else(|| "https://api.github.com".to_string());
    let graphql_url = environment
        .github_graphql_url
        .clone()
        .unwrap_or_else(|| graphql_url_for(&api_url));
    let mut settings = GitHubSettings::new(&api_url, &graphql_url, &token, &repository);
    settings.max_reads = arguments.max_reads;
    settings.max_writes = arguments.max_operations;
    settings.retry = context.retry.clone();
    let client = GitHubClient::new(&settings)
        .map_err(|message| StepError::bad_input("GITHUB_REPOSITORY", message))?;
    let label_client = match arguments.label_token.as_deref().filter(|t| !t.is_empty()) {
        Some(label_token) => {
            context.reporter.mask(label_token);
            client
                .with_token(label_token)
                .map_err(|message| StepError::bad_input("label-token", message))?
        }
        None => client
            .with_token(&token)
            .map_err(|message| StepError::bad_input("github-token", message))?,
    };
    let connection = GitHubConnection::new(
        client,
        label_client,
        arguments.max_operations,
        arguments.max_reads,
    );
    Ok(if context.dry_run {
        connection.recording()
    } else {
        connection
    })
}

/// The GraphQL endpoint beside a REST base: `https://api.github.com/graphql`, or
/// `https://host/api/graphql` for GitHub Enterprise Server's `https://host/api/v3`.
pub fn graphql_url_for(api_url: &str) -> String {
    let base = api_url.trim_end_matches('/');
    match base.strip_suffix("/api/v3") {
        Some(host) => format!("{host}/api/graphql"),
        None => format!("{base}/graphql"),
    }
}

/// The `requests` output of a GitHub mode.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct RequestReport {
    #[serde(flatten)]
    pub counts: RequestCounts,
    pub max_operations: u64,
    pub max_reads: u64,
}

impl GitHubConnection {
    /// A connection that sends what it is asked to send.
    pub fn new(
        client: GitHubClient,
        label_client: GitHubClient,
        max_operations: u64,
        max_reads: u64,
    ) -> Self {
        GitHubConnection {
            client,
            label_client,
            max_operations,
            max_reads,
            recorder: None,
        }
    }

    /// The same connection for a dry run: reads are sent, writes recorded (and charged to the
    /// budget) instead.
    pub fn recording(self) -> Self {
        let recorder = Arc::new(WriteRecorder::default());
        GitHubConnection {
            client: self.client.recording_writes(Arc::clone(&recorder)),
            label_client: self.label_client.recording_writes(Arc::clone(&recorder)),
            recorder: Some(recorder),
            ..self
        }
    }

    /// The writes a dry run recorded, in order (none for a real pass).
    pub fn recorded_writes(&self) -> Vec<RecordedWrite> {
        self.recorder
            .as_ref()
            .map(|recorder| recorder.writes())
            .unwrap_or_default()
    }

    pub fn report(&self) -> RequestReport {
        RequestReport {
            counts: self.client.request_counts(),
            max_operations: self.max_operations,
            max_reads: self.max_reads,
        }
    }
}

impl RequestReport {
    /// One Markdown line for the step summary.
    pub fn summary_line(&self) -> String {
        format!(
            "GitHub requests: {} reads of {} allowed, {} writes of {} allowed ({} retries, {:.1} s waiting)",
            self.counts.reads,
            self.max_reads,
            self.counts.writes,
            self.max_operations,
            self.counts.retries,
            self.counts.waited_ms as f64 / 1000.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graphql_sits_beside_the_rest_base() {
        assert_eq!(
            graphql_url_for("https://api.github.com"),
            "https://api.github.com/graphql"
        );
        assert_eq!(
            graphql_url_for("https://ghe.example/api/v3/"),
            "https://ghe.example/api/graphql"
        );
        assert_eq!(
            graphql_url_for("http://127.0.0.1:8080"),
            "http://127.0.0.1:8080/graphql"
        );
    }

    #[test]
    fn budgets_are_positive_whole_numbers() {
        assert_eq!(parse_positive_u64("100"), Ok(100));
        assert!(parse_positive_u64("0").is_err());
        assert!(parse_positive_u64("-1").is_err());
        assert!(parse_positive_u64("many").is_err());
    }
}
