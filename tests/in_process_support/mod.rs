//! Running modes in process against the fake GitHub, as the chaos suite and the write-path
//! tests do: recover's `run_pass` on a connection of the bot and label tokens, and `select` or
//! `finish` through their `run` with a `StepContext` whose retries wait milliseconds.

#![allow(dead_code)] // each including file uses part of it

use std::time::Duration;

use clap::Parser;
use klaud::adapters::github::transport::RetryPolicy;
use klaud::adapters::github::{GitHubClient, GitHubSettings};
use klaud::shell::cli::{Cli, Mode};
use klaud::shell::config::Config;
use klaud::shell::environment::Environment;
use klaud::shell::github::GitHubConnection;
use klaud::shell::modes::StepContext;
use klaud::shell::outputs::Reporter;
use serde_json::Value;

use super::fake_github::FakeGitHubHandle;
use super::recover_support::{BOT, BOT_TOKEN, LABEL_TOKEN};

pub fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        attempts: 4,
        base_delay: Duration::from_millis(2),
        max_delay: Duration::from_millis(10),
        secondary_wait_cap: Duration::from_secs(5),
        secondary_default_wait: Duration::from_millis(5),
        request_timeout: Duration::from_secs(20),
    }
}

/// The bot's connection to `acme/bench` on `server`, labels written with the label token.
pub fn connection(server: &FakeGitHubHandle) -> GitHubConnection {
    connection_retrying(server, fast_retries())
}

/// [`connection`] with the retries of `retry`.
pub fn connection_retrying(server: &FakeGitHubHandle, retry: RetryPolicy) -> GitHubConnection {
    let mut settings = GitHubSettings::new(
        &server.base_url(),
        &server.graphql_url(),
        BOT_TOKEN,
        "acme/bench",
    );
    settings.retry = retry;
    let client = GitHubClient::new(&settings).unwrap();
    let label_client = client.with_token(LABEL_TOKEN).unwrap();
    GitHubConnection::new(
        client,
        label_client,
        settings.max_writes,
        settings.max_reads,
    )
}

/// `klaud select` or `klaud finish` in process, as run `run_id`, with `arguments` after the mode
/// (`{dir}` in them stands for the step's directory); a dry run when `dry_run`. Returns the
/// JSON record the mode wrote (`finish.json`, `selection.json`), if any.
pub async fn step(
    server: &FakeGitHubHandle,
    run_id: u64,
    cap: u32,
    arguments: &[String],
    dry_run: bool,
) -> Result<Option<Value>, String> {
    let directory = tempfile::tempdir().unwrap();
    let mut command = vec!["klaud".to_string()];
    command.extend(
        arguments
            .iter()
            .map(|argument| argument.replace("{dir}", &directory.path().display().to_string())),
    );
    command.extend(["--label-token".into(), LABEL_TOKEN.into()]);
    let cli = Cli::try_parse_from(&command).map_err(|error| error.to_string())?;
    let environment = Environment {
        github_repository: Some("acme/bench".into()),
        github_run_id: Some(run_id.to_string()),
        github_run_attempt: Some("1".into()),
        github_api_url: Some(server.base_url()),
        github_graphql_url: Some(server.graphql_url()),
        github_token: Some(BOT_TOKEN.into()),
        ..Environment::default()
    };
    let config = Config {
        bot: BOT.into(),
        ..Config::default()
    };
    let context = StepContext {
        reporter: Reporter::new(&environment),
        policy: config.policy(cap, 1.0),
        config,
        directory: directory.path().join("out"),
        dry_run,
        cooldown_days: 1.0,
        max_candidates: cap,
        github_token: Some(BOT_TOKEN.into()),
        environment,
        retry: fast_retries(),
    };
    let (result, file) = match &cli.mode {
        Mode::Select(arguments) => (
            klaud::shell::modes::select::run(&context, arguments).await,
            "selection.json",
        ),
        Mode::Finish(arguments) => (
            klaud::shell::modes::finish::run(&context, arguments).await,
            "finish.json",
        ),
        other => panic!("not a mode that runs in process here: {other:?}"),
    };
    let record = std::fs::read_to_string(context.directory.join(file))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
    result.map(|()| record).map_err(|error| error.to_string())
}
