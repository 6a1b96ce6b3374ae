//! `check-stop` (contract §9): the agent CLI's hook. Reads the hook's JSON on stdin, the session
//! context, the outcome file and — only when the answer depends on it — GitHub (at most two
//! reads, no write, no retry), and prints the answer (`core::session::stop`) on stdout. It never
//! fails: every problem becomes an answer, and the exit code is always 0, because a hook that
//! crashes lets the agent stop unchecked. Nothing but the answer reaches stdout; no token is
//! printed or masked (a mask is a workflow command on stdout).

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use chrono::Utc;

use crate::adapters::github::actions::RunFilter;
use crate::adapters::github::transport::RetryPolicy;
use crate::adapters::github::{GitHubClient, GitHubSettings, token_problem};
use crate::core::outcome_file::parse_outcome_file;
use crate::core::session::SessionContext;
use crate::core::session::stop::{
    HookAnswer, OutcomeFileState, StopStep, first_step, or_the_issue, read_hook_input, with_issue,
    with_pull_requests, with_sweep_runs,
};
use crate::core::snapshot::ReadFailure;
use crate::shell::cli::CheckStopArgs;
use crate::shell::environment::Environment;
use crate::shell::gather::{failed_read, pull_request_fact, run_fact};
use crate::shell::github::graphql_url_for;
use crate::shell::outputs::write_hook_answer;

/// The most stdin, context or outcome file text read (the CLI's hook input is a few KB).
const READ_LIMIT: u64 = 1 << 20;

/// Reads GitHub at most this many times.
pub const MAX_READS: u64 = 2;

/// Answers the hook and returns the exit code, always 0.
/// `flag_token` is `--github-token`; without it the agent's `GH_TOKEN` or `GITHUB_TOKEN` reads.
pub async fn run(
    arguments: &CheckStopArgs,
    flag_token: Option<String>,
    environment: &Environment,
) -> u8 {
    let answer = match tokio::task::spawn(answer(
        arguments.context_file.clone(),
        flag_token,
        environment.agent_token(),
    ))
    .await
    {
        Ok(answer) => answer,
        Err(_) => HookAnswer::Block(
            "klaud's Stop hook failed unexpectedly while checking the session; stop again to retry.".into(),
        ),
    };
    write_hook_answer(&answer.stdout());
    0
}

async fn answer(
    context_file: Option<std::path::PathBuf>,
    flag_token: Option<String>,
    environment_token: Option<String>,
) -> HookAnswer {
    let mut stdin = String::new();
    let event = match std::io::stdin()
        .lock()
        .take(READ_LIMIT)
        .read_to_string(&mut stdin)
    {
        Ok(_) => read_hook_input(&stdin),
        Err(error) => crate::core::session::stop::HookEvent::Unreadable(error.to_string()),
    };
    let context = match &context_file {
        Some(path) => read_context(path),
        None => Err("no --context-file was given to the hook".to_string()),
    };
    let outcome = match &context {
        Ok(context) => read_outcome_file(Path::new(&context.outcome_file)),
        Err(_) => OutcomeFileState::Missing,
    };
    let now = Utc::now();
    let step = first_step(
        &event,
        context.as_ref().map_err(String::as_str),
        &outcome,
        now,
    );
    if !matches!(step, StopStep::NeedsPullRequests) {
        return answer_of(step);
    }
    let context = context.expect("a step that reads GitHub has its context");
    let token = flag_token
        .filter(|token| !token.is_empty())
        .or(environment_token);
    let client = match client_for(&context, token.as_deref()) {
        Ok(client) => client,
        Err(problem) => {
            return answer_of(with_pull_requests(
                &context,
                &outcome,
                Err(ReadFailure::new(problem)),
            ));
        }
    };
    let pulls = client
        .pull_requests_for_branch(&context.branch)
        .await
        .map(|pulls| {
            pulls
                .iter()
                .map(|pull| pull_request_fact(pull, &context.repository))
                .collect::<Vec<_>>()
        })
        .map_err(|error| failed_read(&error));
    let step = with_pull_requests(&context, &outcome, pulls.as_deref().map_err(Clone::clone));
    let step = match step {
        StopStep::NeedsSweepRuns {
            pull_request,
            head_sha,
        } => StopStep::Answer(sweep_answer(&client, &context, pull_request, &head_sha).await),
        step => step,
    };
    match or_the_issue(&context, step) {
        StopStep::NeedsIssue { number, otherwise } => {
            let open = client
                .standalone_issue(number)
                .await
                .map_err(|error| failed_read(&error))
                .map(|issue| issue.is_some_and(|issue| issue.state.is_open()));
            with_issue(open, otherwise)
        }
        step => answer_of(step),
    }
}

/// The answer once the sweep runs on the pull request's head were read.
async fn sweep_answer(
    client: &GitHubClient,
    context: &SessionContext,
    pull_request: u64,
    head_sha: &str,
) -> HookAnswer {
    // The decision asks for sweep runs only when there is a sweep workflow.
    let sweep = context.workflows.sweep.as_deref().unwrap_or_default();
    let mut filter = RunFilter::workflow(sweep);
    filter.head_sha = Some(head_sha.to_string());
    let runs = client
        .workflow_runs(&filter)
        .await
        .map_err(|error| failed_read(&error))
        .and_then(|listed| {
            let runs: Vec<_> = listed.items.iter().map(run_fact).collect();
            match listed.gap {
                Some(gap) if !runs.iter().any(|run| run.succeeded()) => Err(ReadFailure::new(
                    format!("the listing is incomplete: {gap}"),
                )),
                _ => Ok(runs),
            }
        });
    with_sweep_runs(
        context,
        pull_request,
        head_sha,
        runs.as_deref().map_err(Clone::clone),
    )
}

fn answer_of(step: StopStep) -> HookAnswer {
    match step {
        StopStep::Answer(answer) => answer,
        // Only reached by a decision asking for a read the caller does not make: block.
        StopStep::NeedsIssue { .. }
        | StopStep::NeedsPullRequests
        | StopStep::NeedsSweepRuns { .. } => HookAnswer::Block(
            "klaud's Stop hook could not finish its check; stop again to retry.".into(),
        ),
    }
}

fn read_bounded(path: &Path) -> std::io::Result<String> {
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(READ_LIMIT)
        .read_to_string(&mut text)?;
    Ok(text)
}

fn read_context(path: &Path) -> Result<SessionContext, String> {
    let text = read_bounded(path).map_err(|error| format!("{}: {error}", path.display()))?;
    serde_json::from_str(&text).map_err(|error| format!("{}: {error}", path.display()))
}

fn read_outcome_file(path: &Path) -> OutcomeFileState {
    match read_bounded(path) {
        Ok(text) => match parse_outcome_file(&text) {
            Ok(file) => OutcomeFileState::Valid(file),
            Err(error) => OutcomeFileState::Invalid(error),
        },
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => OutcomeFileState::Missing,
        Err(error) => OutcomeFileState::Unreadable(error.to_string()),
    }
}

/// A client of two reads, no writes and no retries, with the agent's token.
fn client_for(context: &SessionContext, token: Option<&str>) -> Result<GitHubClient, String> {
    let token = token.ok_or_else(|| {
        "no token in the agent's environment (GH_TOKEN or GITHUB_TOKEN)".to_string()
    })?;
    if let Some(problem) = token_problem(token) {
        return Err(format!("the token in the agent's environment {problem}"));
    }
    let mut settings = GitHubSettings::new(
        &context.api_url,
        &graphql_url_for(&context.api_url),
        token,
        &context.repository,
    );
    settings.max_reads = MAX_READS;
    settings.max_writes = 0;
    settings.retry = RetryPolicy {
        attempts: 1,
        request_timeout: Duration::from_secs(20),
        secondary_wait_cap: Duration::ZERO,
        ..RetryPolicy::default()
    };
    GitHubClient::new(&settings)
}
