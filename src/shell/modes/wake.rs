//! `wake` (contract §3.6, §3a): on a `workflow_run` event, start one recovery-only planner pass
//! when a klaud smoke or sweep run ended, so that its session is reconciled within minutes
//! instead of at the next scheduled wave.
//!
//! Reads as: the event payload from `GITHUB_EVENT_PATH` (never from the command line) → is the
//! run klaud's (`core::wake`, no request) → the planner passes not completed (one listing per
//! status, concurrently) → will one of them see the ending → dispatch the planner workflow on
//! the default branch with the single input `wake: "true"` → wait until GitHub lists the run it
//! started → `wake.json`, outputs, summary.
//!
//! De-duplication: a burst of endings starts one pass because every wake after the first finds
//! that pass queued. Two things keep the window between "dispatched" and "listed" from letting
//! a second dispatch through: a wake does not finish until GitHub lists the run it dispatched
//! (`--confirm-timeout`), so a wake that starts after it ended finds the pass; and nothing from
//! the event chooses what is dispatched. The residual race: two wakes running at the same
//! moment both find no pass and both dispatch. The second pass then waits in the planner's
//! concurrency group and recovers again, idempotently; that is the price of never losing a
//! wake, which would leave a session unreconciled until the next scheduled wave.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::StepContext;
use super::work_files::write_json_file;
use crate::adapters::github::GitHubClient;
use crate::adapters::github::actions::RunFilter;
use crate::adapters::github::error::GitHubError;
use crate::adapters::github::event::parse_workflow_run_event;
use crate::core::github_state::{RunConclusion, RunStatus};
use crate::core::policy::Policy;
use crate::core::wake::{
    EndedRun, NOT_STARTED_STATUSES, PlannerPass, STARTED_STATUS, WakeDecision, decide_dispatch,
    judge_ended_run, shown,
};
use crate::shell::cli::WakeArgs;
use crate::shell::error::StepError;
use crate::shell::github::{RequestReport, connect};
use crate::shell::outputs::Reporter;

/// The input a wake dispatch carries, and nothing else.
pub const WAKE_INPUT: (&str, &str) = ("wake", "true");
/// How far before the dispatch a run GitHub lists may have been created and still be the one it
/// started (clock differences between the runner and GitHub).
const CLOCK_SLACK_SECONDS: i64 = 60;
/// Pauses between looks for the dispatched run.
const CONFIRM_PAUSES_SECONDS: [u64; 5] = [1, 2, 3, 4, 5];

/// The step outputs of `wake`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct WakeOutputs {
    /// `true` when this step dispatched a recovery pass of the planner workflow (never in a dry
    /// run).
    pub dispatched: bool,
    /// The decision's code: `dispatch`, `pass-pending`, `not-ended`, `not-smoke-or-sweep`,
    /// `other-repository`, `fork-head` or `not-klaud-run`.
    pub wake_reason: String,
    /// The planner run that will see the ending: the pass found pending, or the one dispatched
    /// once GitHub lists it (absent when neither is known).
    pub planner_run: Option<u64>,
    /// JSON object: the GitHub requests of this step and its budgets.
    pub requests: RequestReport,
}

/// `wake.json` in the work directory.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
struct WakeRecord<'a> {
    run: RunRecord<'a>,
    decision: &'static str,
    message: &'a str,
    dispatched: bool,
    dry_run: bool,
    planner_run: Option<u64>,
    /// The branch the planner workflow was (or would be) dispatched on.
    dispatch_ref: Option<&'a str>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
struct RunRecord<'a> {
    id: u64,
    workflow: &'a str,
    head_branch: Option<&'a str>,
    head_repository: Option<&'a str>,
    actor: Option<&'a str>,
    conclusion: Option<&'a str>,
    ended_at: Option<DateTime<Utc>>,
}

/// What the step did about a decision to dispatch.
#[derive(Debug, Default)]
struct DispatchResult {
    dispatched: bool,
    git_ref: Option<String>,
    listed_run: Option<u64>,
}

pub async fn run(context: &StepContext, arguments: &WakeArgs) -> Result<(), StepError> {
    let reporter = &context.reporter;
    let ended = read_ended_run(context)?;
    let connection = connect(context, &arguments.github)?;
    let client = &connection.client;
    let policy = &context.policy;
    reporter.info(&format!("wake: {}", describe_run(&ended)));

    let decision = match judge_ended_run(&ended, client.repository(), policy) {
        Err(not_klauds) => not_klauds,
        Ok(ownership) => {
            let passes = planner_passes(client, policy, reporter).await;
            decide_dispatch(&ended, ownership, &passes)
        }
    };
    reporter.info(&format!("wake: {}", decision.message));

    let result = if !decision.dispatches() {
        DispatchResult::default()
    } else if context.dry_run {
        let git_ref = default_branch(client, policy).await?;
        reporter.info(&format!(
            "dry run: would dispatch {} on {} with wake=true; nothing was written to GitHub",
            shown(&policy.planner_workflow),
            shown(&git_ref)
        ));
        DispatchResult {
            git_ref: Some(git_ref),
            ..DispatchResult::default()
        }
    } else {
        dispatch_and_confirm(client, policy, &ended, arguments.confirm_timeout, reporter).await?
    };

    let planner_run = decision.covering_pass.or(result.listed_run);
    let record = WakeRecord {
        run: RunRecord {
            id: ended.id,
            workflow: &ended.workflow_path,
            head_branch: ended.head_branch.as_deref(),
            head_repository: ended.head_repository.as_deref(),
            actor: ended.actor.as_deref(),
            conclusion: ended.conclusion.as_ref().map(RunConclusion::as_str),
            ended_at: ended.ended_at,
        },
        decision: decision.reason.code(),
        message: &decision.message,
        dispatched: result.dispatched,
        dry_run: context.dry_run,
        planner_run,
        dispatch_ref: result.git_ref.as_deref(),
    };
    write_json_file(&context.directory, "wake.json", &record)?;
    let requests = connection.report();
    let outputs = WakeOutputs {
        dispatched: result.dispatched,
        wake_reason: decision.reason.code().to_string(),
        planner_run,
        requests,
    };
    reporter
        .write_outputs(&outputs)
        .map_err(|error| StepError::failed(format!("cannot write step outputs: {error}")))?;
    reporter
        .write_summary(&summary(&ended, &decision, &result, context, &requests))
        .map_err(|error| StepError::failed(format!("cannot write the step summary: {error}")))?;
    Ok(())
}

/// The event payload; its absence or a payload of another event is bad input.
fn read_ended_run(context: &StepContext) -> Result<EndedRun, StepError> {
    let path = context
        .environment
        .github_event_path
        .as_ref()
        .ok_or_else(|| {
            StepError::bad_input(
                "GITHUB_EVENT_PATH",
                "wake reads the workflow_run event payload from GITHUB_EVENT_PATH, which is not set",
            )
        })?;
    let text = std::fs::read_to_string(path).map_err(|error| {
        StepError::bad_input(
            "GITHUB_EVENT_PATH",
            format!("cannot read {}: {}", path.display(), error.kind()),
        )
    })?;
    parse_workflow_run_event(&text)
        .map_err(|message| StepError::bad_input("GITHUB_EVENT_PATH", message))
}

/// The planner runs that are not completed. A listing that fails or stays incomplete is warned
/// about and what it did list is used: wrongly seeing no pass costs a second, harmless pass;
/// wrongly seeing one would lose the wake.
async fn planner_passes(
    client: &GitHubClient,
    policy: &Policy,
    reporter: &Reporter,
) -> Vec<PlannerPass> {
    let statuses: Vec<RunStatus> = NOT_STARTED_STATUSES
        .into_iter()
        .chain([STARTED_STATUS])
        .collect();
    let listings = futures::future::join_all(statuses.iter().map(|status| {
        let filter = RunFilter {
            status: Some(status.clone()),
            ..RunFilter::workflow(&policy.planner_workflow)
        };
        async move { client.workflow_runs(&filter).await }
    }))
    .await;
    let mut passes = Vec::new();
    for (status, listing) in statuses.iter().zip(listings) {
        let runs = match listing {
            Ok(listed) => {
                if let Some(reason) = &listed.gap {
                    reporter.warning(&format!(
                        "wake: the {status} planner runs were not all listed ({reason}); a pass missed here may be dispatched twice"
                    ));
                }
                listed.items
            }
            Err(error) => {
                reporter.warning(&format!(
                    "wake: the {status} planner runs could not be listed ({error}); a pass missed here may be dispatched twice"
                ));
                Vec::new()
            }
        };
        passes.extend(runs.into_iter().map(|run| PlannerPass {
            id: run.id,
            status: run.status.unwrap_or_else(|| status.clone()),
            event: run.event,
            started_at: run.run_started_at,
        }));
    }
    passes
}

async fn default_branch(client: &GitHubClient, policy: &Policy) -> Result<String, StepError> {
    client
        .repository_info()
        .await
        .map(|repository| repository.default_branch)
        .map_err(|error| {
            StepError::failed(format!(
                "the default branch to dispatch {} on could not be read: {error}",
                policy.planner_workflow
            ))
        })
}

/// Dispatches the planner workflow once and waits until GitHub lists the run. A dispatch whose
/// outcome is unknown is sent again only when no run appeared within the wait.
async fn dispatch_and_confirm(
    client: &GitHubClient,
    policy: &Policy,
    ended: &EndedRun,
    confirm_timeout: u64,
    reporter: &Reporter,
) -> Result<DispatchResult, StepError> {
    let git_ref = default_branch(client, policy).await?;
    let inputs = BTreeMap::from([(WAKE_INPUT.0.to_string(), WAKE_INPUT.1.to_string())]);
    let sent_at = Utc::now();
    let failed = |error: GitHubError| {
        StepError::failed(format!(
            "{} could not be dispatched on {git_ref} (the token needs actions: write, and the workflow a workflow_dispatch trigger with a wake input): {error}",
            policy.planner_workflow
        ))
    };
    let listed_run = match client
        .dispatch_workflow(&policy.planner_workflow, &git_ref, &inputs)
        .await
    {
        Ok(()) => wait_until_listed(client, policy, ended, sent_at, confirm_timeout).await,
        Err(GitHubError::OutcomeUnknown { .. }) => {
            match wait_until_listed(client, policy, ended, sent_at, confirm_timeout).await {
                Some(run) => Some(run),
                None => {
                    reporter.warning(
                        "wake: the dispatch's outcome was unknown and no planner run appeared; dispatching once more",
                    );
                    client
                        .dispatch_workflow(&policy.planner_workflow, &git_ref, &inputs)
                        .await
                        .map_err(failed)?;
                    wait_until_listed(client, policy, ended, sent_at, 0).await
                }
            }
        }
        Err(error) => return Err(failed(error)),
    };
    match listed_run {
        Some(run) => reporter.info(&format!(
            "wake: dispatched {} on {}; GitHub lists it as run {run}",
            shown(&policy.planner_workflow),
            shown(&git_ref)
        )),
        None => reporter.warning(&format!(
            "wake: dispatched {} on {}, but GitHub did not list the run within {confirm_timeout} s; a wake starting meanwhile may dispatch a second pass, which waits in the planner's concurrency group",
            shown(&policy.planner_workflow),
            shown(&git_ref)
        )),
    }
    Ok(DispatchResult {
        dispatched: true,
        git_ref: Some(git_ref),
        listed_run,
    })
}

/// The newest planner run dispatched since the ending (and at most a minute before this
/// dispatch by the runner's clock), looking again until `timeout_seconds` passed.
async fn wait_until_listed(
    client: &GitHubClient,
    policy: &Policy,
    ended: &EndedRun,
    sent_at: DateTime<Utc>,
    timeout_seconds: u64,
) -> Option<u64> {
    let earliest_by_runner_clock = sent_at - chrono::Duration::seconds(CLOCK_SLACK_SECONDS);
    let earliest = ended.ended_at.map_or(earliest_by_runner_clock, |ended_at| {
        ended_at.max(earliest_by_runner_clock)
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(timeout_seconds);
    let mut pauses = CONFIRM_PAUSES_SECONDS
        .iter()
        .copied()
        .chain(std::iter::repeat(
            *CONFIRM_PAUSES_SECONDS.last().expect("pauses"),
        ));
    loop {
        let filter = RunFilter {
            event: Some("workflow_dispatch".to_string()),
            created: Some((earliest, Utc::now() + chrono::Duration::days(1))),
            ..RunFilter::workflow(&policy.planner_workflow)
        };
        let listed = match client.workflow_runs(&filter).await {
            // Any run listed is the one dispatched, whether or not the listing is whole.
            Ok(listed) => listed.items,
            Err(_) => Vec::new(),
        };
        if let Some(run) = listed.first() {
            return Some(run.id);
        }
        let now = std::time::Instant::now();
        if now >= deadline {
            return None;
        }
        let pause = Duration::from_secs(pauses.next().unwrap_or(5)).min(deadline - now);
        tokio::time::sleep(pause).await;
    }
}

/// The ended run in one line, event text made inert.
fn describe_run(run: &EndedRun) -> String {
    format!(
        "{} run {} ({}) on branch {} of {}, started by {}",
        shown(crate::core::wake::file_name(&run.workflow_path)),
        run.id,
        shown(run.action.as_str()),
        shown_option(run.head_branch.as_deref()),
        shown_option(run.head_repository.as_deref()),
        shown_option(run.actor.as_deref())
    )
}

fn shown_option(text: Option<&str>) -> String {
    text.map_or_else(|| "(unknown)".to_string(), shown)
}

fn summary(
    ended: &EndedRun,
    decision: &WakeDecision,
    result: &DispatchResult,
    context: &StepContext,
    requests: &RequestReport,
) -> String {
    let planner = shown(&context.policy.planner_workflow);
    let headline = if result.dispatched {
        format!(
            "dispatched a recovery pass of `{planner}` on `{}`{}",
            shown(result.git_ref.as_deref().unwrap_or_default()),
            result
                .listed_run
                .map_or_else(String::new, |run| format!(" (run {run})"))
        )
    } else if decision.dispatches() && context.dry_run {
        format!("dry run: would dispatch a recovery pass of `{planner}`")
    } else {
        format!("nothing dispatched (`{}`)", decision.reason.code())
    };
    format!(
        "### klaud wake: {headline}\n\n- ended run: {}\n- decision: {}\n\n{}\n",
        describe_run(ended),
        decision.message,
        requests.summary_line()
    )
}
