//! What `select` reads besides the ledger: the candidate branches and the open pull requests on
//! them (a listing that fails is recorded as incomplete, never as empty), and the
//! capacity gate's answer (config `capacity.command`, run once per pass through the process
//! adapter).

use std::time::Duration;

use crate::adapters::github::GitHubClient;
use crate::adapters::process::{ChildCommand, ChildEnvironment, run_child};
use crate::core::candidate::Candidate;
use crate::core::select::capacity::{CapacityGate, read_capacity_answer, targets_to_ask};
use crate::core::select::{GitHubFacts, OpenPullRequest};
use crate::shell::config::CapacitySettings;
use crate::shell::outputs::Reporter;

/// Seconds the capacity command may take when `capacity.timeout-seconds` is not set.
pub const DEFAULT_CAPACITY_TIMEOUT_SECONDS: u64 = 60;
/// Bytes of the capacity command's stdout kept; more is a garbled answer.
const CAPACITY_STDOUT_LIMIT: usize = 1024 * 1024;

/// Lists the branches under `prefixes`, then the open pull requests on them
/// (`GitHubClient::open_pull_requests_under`); an incomplete branch listing leaves both
/// incomplete.
pub async fn read_github_facts(client: &GitHubClient, prefixes: &[&str]) -> GitHubFacts {
    let (branches, pulls) = client.open_pull_requests_under(prefixes).await;
    GitHubFacts {
        repository: client.repository().to_string(),
        open_pull_requests: pulls.map(|pull| OpenPullRequest {
            number: pull.number,
            head_branch: pull.head.branch,
            head_repository: pull.head.repo.map(|repository| repository.full_name),
        }),
        candidate_branches: branches,
    }
}

/// Runs the capacity command once with every target the candidates name, when one is
/// configured and some candidate names targets.
pub async fn consult_capacity_gate(
    settings: &CapacitySettings,
    candidates: &[Candidate],
    reporter: &Reporter,
) -> CapacityGate {
    match targets_to_ask(candidates) {
        Some(targets) => ask_capacity_gate(settings, &targets, reporter).await,
        None => CapacityGate::Open,
    }
}

/// Runs the capacity command once with `targets`, when one is configured. Its stderr goes to
/// the log only, fenced; the answer records only the kind of a failure.
pub async fn ask_capacity_gate(
    settings: &CapacitySettings,
    targets: &[String],
    reporter: &Reporter,
) -> CapacityGate {
    let Some(argv) = &settings.command else {
        return CapacityGate::Open;
    };
    let Some((program, args)) = argv.split_first() else {
        return CapacityGate::Open;
    };
    let timeout = settings
        .timeout_seconds
        .unwrap_or(DEFAULT_CAPACITY_TIMEOUT_SECONDS);
    let mut command = ChildCommand::new(program, Duration::from_secs(timeout)).args(args);
    command.environment = ChildEnvironment::Inherited(Vec::new());
    command.stdin = Some(serde_json::to_vec(&targets).expect("targets serialize"));
    command.stdout_limit = CAPACITY_STDOUT_LIMIT;
    reporter.info(&format!(
        "capacity gate: asking `{}` about {} target(s)",
        command.display(),
        targets.len()
    ));
    let gate = match run_child(&command).await {
        Err(error) => CapacityGate::Unavailable {
            message: format!(
                "the capacity command could not be started ({})",
                error.kind()
            ),
        },
        Ok(output) => {
            reporter.untrusted_block("capacity command stderr", &output.stderr);
            if output.timed_out {
                CapacityGate::Unavailable {
                    message: format!("the capacity command ran longer than {timeout} s"),
                }
            } else if output.exit != Some(0) {
                CapacityGate::Unavailable {
                    message: match output.exit {
                        Some(code) => format!("the capacity command exited with code {code}"),
                        None => "the capacity command was ended by a signal".to_string(),
                    },
                }
            } else if output.stdout_truncated {
                CapacityGate::Unavailable {
                    message: "the capacity command printed more than 1 MiB".to_string(),
                }
            } else {
                read_capacity_answer(&output.stdout)
            }
        }
    };
    match &gate {
        CapacityGate::Eligible(eligible) => reporter.info(&format!(
            "capacity gate: {} of {} target(s) can run now",
            targets
                .iter()
                .filter(|target| eligible.contains(*target))
                .count(),
            targets.len()
        )),
        CapacityGate::Unavailable { message } => {
            reporter.warning(&format!("capacity gate unavailable: {message}"));
        }
        CapacityGate::Open => {}
    }
    gate
}
