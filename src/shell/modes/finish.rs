//! `finish` (contract §3.5, §4, §5): record the outcome of one session and clean up after it.
//!
//! inputs (`finish/inputs.rs`: bad input before any request) → the ledger's session of the
//! candidate and the facts of its pull request, commits, runs and branch → `core::finish`
//! decides → the plan is printed → the ledger records the outcome by compare-and-swap →
//! `finish/apply.rs` hands the plan to the one executor as one group: the session's runs
//! cancelled, then the receipt and the changes behind the re-check of the pull request (a dry
//! run goes through all of it, ledger write included, with its writes recorded, not sent) →
//! `finish.json`, outputs, summary. For a candidate that came from an issue (its record's
//! `issue`), the issue is read too (a closed one retires the candidate) and klaud's comment on it
//! is a second action group. A validated first session marks the other after-care pull requests
//! of its family superseded in the same ledger write, and `finish/supersede.rs` closes them
//! behind every §5 guard (contract §12).

mod apply;
pub mod inputs;
mod supersede;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::StepContext;
use super::work_files::write_json_file;
use crate::adapters::github::GitHubClient;
use crate::adapters::github::actions::RunFilter;
use crate::adapters::github::writes::RecordedWrite;
use crate::adapters::ledger_store::{LedgerDecision, LedgerStore, LoadedLedger};
use crate::core::execution::{AgentRecord, read_execution_file, read_structured_output};
use crate::core::finish::{
    Cleanup, DeadlineVerdict, FinishFacts, FinishPlan, FinishRequest, JobEnding, decide, job_ending,
};
use crate::core::finish_issue::IssueFact;
use crate::core::finish_supersede::record_superseding;
use crate::core::ledger::{JobRef, Session};
use crate::core::outcome_file::parse_outcome_file;
use crate::core::policy::Policy;
use crate::core::session::request::issue_task;
use crate::core::snapshot::{Read, ReadFailure, RunFact};
use crate::shell::cli::FinishArgs;
use crate::shell::error::StepError;
use crate::shell::execute::RefDeletionPath;
use crate::shell::gather::{
    describe, failed_read, listed_commits, listed_runs, pull_request_fact, run_fact,
};
use crate::shell::github::{RequestReport, connect};
use crate::shell::modes::recover::{dry_run_writes_section, rest_fallback_note};
use crate::shell::outputs::markdown_table;
use apply::{Applied, apply};
use inputs::{FinishInputs, read_inputs};
use supersede::{Superseding, supersede};

/// The step outputs of `finish`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct FinishOutputs {
    /// The outcome recorded (public name; a legacy name reads back as its new name).
    pub outcome: String,
    /// `done`, `parked`, `untouched` (handed off, maintainer-closed, merged) or `left-alone`
    /// (a guard of contract §5 held: nothing changed).
    pub cleanup: String,
    /// The session's pull request number, or empty.
    pub pull_request: String,
    /// JSON array of the runs this step asked GitHub to cancel.
    pub cancelled: Vec<u64>,
    /// JSON array of cancelled runs that had not ended when the wait was over.
    pub pending_runs: Vec<u64>,
    /// JSON array of the older pull requests of the family this validated session closed as
    /// superseded (contract §12).
    pub superseded: Vec<u64>,
    /// JSON object: the GitHub requests of this step and its budgets.
    pub requests: RequestReport,
}

/// `finish.json`: the decision and what became of it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
struct FinishRecord<'a> {
    dry_run: bool,
    agent_outcome: &'a str,
    reason_code: Option<&'a str>,
    phase: Option<&'a str>,
    plan: &'a FinishPlan,
    /// `written`, `unchanged` or `not-written` (dry run).
    ledger: &'a str,
    applied: &'a Applied,
    /// The after-care pull requests this validated session superseded and what became of each.
    #[serde(skip_serializing_if = "is_nothing_superseded")]
    superseded: &'a Superseding,
    requests: &'a RequestReport,
    /// In a dry run, every write the step would have sent (method, path, body), in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    dry_run_writes: Vec<RecordedWrite>,
    /// What the agent's execution file says about how it ended, when one was given and read.
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_result: Option<AgentRecord>,
}

pub async fn run(context: &StepContext, arguments: &FinishArgs) -> Result<(), StepError> {
    let mut inputs = read_inputs(arguments)?;
    let (agent_result, structured_output) = read_agent_result(context, arguments);
    outcome_from_structured_output(context, &mut inputs, structured_output.as_ref());
    let job = own_job(context);
    let own_run = job.run;
    let connection = connect(context, &arguments.github)?;
    let policy = &context.policy;
    let reporter = &context.reporter;
    let now = Utc::now();
    let store = LedgerStore::new(&connection.client, &policy.state_branch);
    let loaded = store
        .load()
        .await
        .map_err(|error| StepError::failed(format!("the ledger could not be read: {error}")))?;
    let session = loaded
        .ledger
        .session_of(&inputs.candidate)
        .cloned()
        .ok_or_else(|| {
            StepError::failed(format!(
                "the ledger has no session of candidate {}",
                inputs.candidate
            ))
        })?;
    let mut facts = gather(&connection.client, policy, &inputs, &session, own_run, now)
        .await
        .map_err(StepError::failed)?;
    facts.issue = candidate_issue(context, &store, &connection.client, &inputs.candidate).await;
    let ending = job_ending(
        &session,
        own_run,
        matches!(inputs.agent_outcome.as_str(), "failure" | "cancelled"),
        inputs.outcome_file_problem.is_none(),
        agent_result.as_ref(),
        policy.session,
        now,
    );
    report_ending(context, &inputs.candidate, ending);
    if let Some(code) = ending.reason_code() {
        inputs.reason_code = Some(code.to_string());
    }
    let request = FinishRequest {
        candidate: inputs.candidate.clone(),
        outcome: inputs.outcome,
        agent_ran: inputs.agent_outcome != "skipped",
        park: ending.park(inputs.park),
        job,
        attempt_end: ending.attempt_end(),
        runs_seen: runs_seen(&facts),
        agent: agent_result.clone(),
    };
    if let Some(problem) = &inputs.outcome_file_problem {
        reporter.warning(&format!(
            "the outcome file could not be used ({problem}): recording no-outcome"
        ));
    }
    let plan = decide(&request, &session, &facts, policy);
    print_plan(context, &plan);
    if plan.cleanup == Cleanup::LeftAlone {
        reporter.warning(&format!("{}: {}", plan.candidate, plan.reason));
    }

    let (ledger_result, written) = {
        let parent = session.parent_run;
        let update = store
            .update_starting_from(Some(loaded), |ledger| {
                match record_superseding(ledger, &plan, &request, policy, now) {
                    Some(next) => LedgerDecision::Write {
                        ledger: next,
                        message: format!(
                            "finish {}: {} ({}) by run {own_run}, parent {parent}",
                            plan.candidate,
                            plan.outcome,
                            plan.cleanup.name()
                        ),
                        result: (),
                    },
                    None => LedgerDecision::Keep(()),
                }
            })
            .await
            .map_err(|error| {
                StepError::failed(format!(
                    "the ledger could not be written, nothing was changed: {error}"
                ))
            })?;
        let result = match (update.wrote, context.dry_run) {
            (true, true) => "not-written",
            (true, false) => "written",
            (false, _) => "unchanged",
        };
        let written = LoadedLedger {
            ledger: update.ledger,
            blob_sha: update.blob_sha,
        };
        (result, written)
    };
    reporter.info(&format!("ledger: {ledger_result}"));

    let applied = apply(
        &connection,
        &plan,
        &inputs,
        &session,
        policy,
        now,
        std::time::Duration::from_secs(arguments.cancel_wait),
    )
    .await;
    for line in applied.lines() {
        reporter.info(&line);
    }
    let hold = applied.failure.clone().or(applied.dropped.clone());
    let superseded = supersede(&connection, &store, written, &plan, policy, now, hold).await;
    for line in superseded.lines() {
        reporter.info(&line);
    }
    let requests = connection.report();
    write_json_file(
        &context.directory,
        "finish.json",
        &FinishRecord {
            dry_run: context.dry_run,
            agent_outcome: &inputs.agent_outcome,
            reason_code: inputs.reason_code.as_deref(),
            phase: inputs.phase.as_deref(),
            plan: &plan,
            ledger: ledger_result,
            applied: &applied,
            superseded: &superseded,
            requests: &requests,
            dry_run_writes: connection.recorded_writes(),
            agent_result: agent_result.clone(),
        },
    )?;
    let outputs = FinishOutputs {
        outcome: plan.outcome.to_string(),
        cleanup: plan.cleanup.name().to_string(),
        pull_request: plan
            .pull_request
            .map(|number| number.to_string())
            .unwrap_or_default(),
        cancelled: applied.cancelled.clone(),
        pending_runs: applied.execution.pending_runs.clone(),
        superseded: superseded.closed(),
        requests,
    };
    reporter
        .write_outputs(&outputs)
        .map_err(|error| StepError::failed(format!("cannot write step outputs: {error}")))?;
    reporter
        .write_summary(&summary(
            &plan,
            &applied,
            &superseded,
            agent_result.as_ref(),
            &requests,
            &connection.recorded_writes(),
        ))
        .map_err(|error| StepError::failed(format!("cannot write the step summary: {error}")))?;
    if let Some(failure) = &applied.failure {
        return Err(StepError::failed(format!(
            "{}: the outcome is recorded, but the cleanup did not finish ({failure}); the next recovery pass continues it",
            plan.candidate
        )));
    }
    Ok(())
}

/// Says in the log why a job without an outcome is parked or ends.
fn report_ending(context: &StepContext, candidate: &str, ending: JobEnding) {
    let reporter = &context.reporter;
    match ending {
        JobEnding::BudgetStop { cost_usd } => reporter.warning(&format!(
            "{candidate}: the agent CLI stopped the run on its cap (--max-budget-usd) after {}: it ends no-outcome, reason budget, never parked",
            cost_usd.map_or("an unreported cost".to_string(), |cost| format!("${cost:.4}"))
        )),
        JobEnding::Deadline(DeadlineVerdict::Park {
            attempt,
            max_attempts,
        }) => reporter.info(&format!(
            "{candidate}: the agent step ran past the deadline of attempt {attempt} of {max_attempts} without an outcome: parking the session to continue in a new job"
        )),
        JobEnding::Deadline(DeadlineVerdict::OutOfAttempts { attempts }) => {
            reporter.warning(&format!(
                "{candidate}: the last of the session's {attempts} jobs ran out of time without an outcome: it ends no-outcome"
            ))
        }
        JobEnding::Deadline(DeadlineVerdict::NotReached) => {}
    }
}

/// The execution record's result, when one was given: a file that is empty of a result (the
/// agent loop was killed) or unreadable is said in the log, never fails the step.
fn read_agent_result(
    context: &StepContext,
    arguments: &FinishArgs,
) -> (Option<AgentRecord>, Option<serde_json::Value>) {
    let Some(path) = arguments
        .execution_file
        .as_ref()
        .filter(|path| !path.as_os_str().is_empty())
    else {
        return (None, None);
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) => {
            context.reporter.warning(&format!(
                "the execution file {} says nothing usable ({error})",
                path.display()
            ));
            return (None, None);
        }
    };
    let structured_output = read_structured_output(&text);
    match read_execution_file(&text) {
        Ok(result) => {
            context
                .reporter
                .info(&format!("agent result: {}", result.describe()));
            (Some(result), structured_output)
        }
        Err(error) => {
            context.reporter.warning(&format!(
                "the execution file {} says nothing usable ({error})",
                path.display()
            ));
            (None, structured_output)
        }
    }
}

/// Without a valid outcome file, the outcome the agent returned as its structured output
/// (`--json-schema`: a `StructuredOutput` call ends the agent's run, so it may end without
/// writing the file): used when it is a valid outcome file's content, said in the log.
fn outcome_from_structured_output(
    context: &StepContext,
    inputs: &mut FinishInputs,
    structured_output: Option<&serde_json::Value>,
) {
    let Some(problem) = inputs.outcome_file_problem.clone() else {
        return;
    };
    let Some(output) = structured_output else {
        return;
    };
    match parse_outcome_file(&output.to_string()) {
        Ok(file) => {
            context.reporter.info(&format!(
                "the outcome file could not be used ({problem}); the agent's structured output says {}",
                file.outcome
            ));
            inputs.outcome = file.outcome;
            inputs.phase = file.phase;
            inputs.reason_code = file.reason_code;
            inputs.pull_request = file.pull_request;
            inputs.run_ids = file.run_ids;
            inputs.outcome_file_problem = None;
        }
        Err(error) => context.reporter.warning(&format!(
            "the agent's structured output is not an outcome either ({error})"
        )),
    }
}

/// The runs this job saw on the session's branch and in the outcome file, to keep with the
/// attempt.
fn runs_seen(facts: &FinishFacts) -> Vec<u64> {
    let mut runs: Vec<u64> = facts
        .named_runs
        .iter()
        .chain(
            facts
                .branch_runs
                .iter()
                .filter_map(|read| read.as_ref().ok())
                .flatten(),
        )
        .map(|run| run.id)
        .collect();
    runs.sort_unstable();
    runs.dedup();
    runs
}

/// This job: `GITHUB_RUN_ID` (0 outside GitHub Actions) and `GITHUB_RUN_ATTEMPT` (1 when
/// absent).
fn own_job(context: &StepContext) -> JobRef {
    let number = |value: Option<&str>| value.and_then(|text| text.trim().parse::<u64>().ok());
    let environment = &context.environment;
    JobRef {
        run: number(environment.github_run_id.as_deref()).unwrap_or(0),
        run_attempt: number(environment.github_run_attempt.as_deref())
            .and_then(|attempt| u32::try_from(attempt).ok())
            .filter(|attempt| *attempt > 0)
            .unwrap_or(1),
    }
}

/// Reads what the decision needs about the candidate's pull request, runs and branch.
async fn gather(
    client: &GitHubClient,
    policy: &Policy,
    inputs: &FinishInputs,
    session: &Session,
    own_run: u64,
    now: DateTime<Utc>,
) -> Result<FinishFacts, String> {
    let branch = policy.candidate_branch(&inputs.candidate);
    let repository = client.repository().to_string();
    let pulls = client
        .pull_requests_for_branch(&branch)
        .await
        .map_err(|error| {
            format!(
                "the pull requests of {branch} could not be listed: {}",
                describe(&error)
            )
        })?;
    let pull = pulls
        .iter()
        .map(|pull| pull_request_fact(pull, &repository))
        .filter(|pull| pull.from_this_repository && pull.head_branch == branch)
        .max_by_key(|pull| (pull.open, pull.number));
    let mut facts = FinishFacts {
        own_run,
        ..FinishFacts::default()
    };
    for id in &inputs.run_ids {
        match client.workflow_run(*id).await {
            Ok(run) => facts.named_runs.push(run_fact(&run)),
            Err(error) if error.is_not_found() => {}
            Err(error) => return Err(format!("run {id} could not be read: {}", describe(&error))),
        }
    }
    facts.branch_sha = client
        .branch(&branch)
        .await
        .map_err(|error| {
            format!(
                "the branch {branch} could not be read: {}",
                describe(&error)
            )
        })?
        .map(|reference| reference.object.sha);
    let Some(pull) = pull else {
        return Ok(facts);
    };
    facts.commits = Some(listed_commits(client, pull.number).await);
    if !pull.open {
        facts.closed_by = Some(
            client
                .issue(pull.number)
                .await
                .map(|issue| issue.closed_by.map(|account| account.login))
                .map_err(|error| failed_read(&error)),
        );
    }
    let since = session.started_at - Duration::hours(1);
    facts.branch_runs = Some(branch_runs(client, policy, &branch, since, now).await);
    facts.pull = Some(pull);
    Ok(facts)
}

/// The issue the candidate came from (its record's `issue.number`) and whether it is open. A
/// record that cannot be read is said and leaves the issue unknown: the outcome is recorded all
/// the same.
async fn candidate_issue(
    context: &StepContext,
    store: &LedgerStore<'_>,
    client: &GitHubClient,
    candidate: &str,
) -> Option<IssueFact> {
    let record = match store.read_record(candidate).await {
        Ok(record) => record?,
        Err(error) => {
            context.reporter.warning(&format!(
                "{candidate}: its record could not be read ({error}): an issue it came from is not commented on"
            ));
            return None;
        }
    };
    let record: serde_json::Value = serde_json::from_str(&record).ok()?;
    let number = issue_task(&record)?.number;
    let open = client
        .standalone_issue(number)
        .await
        .map_err(|error| failed_read(&error))
        .and_then(|issue| {
            issue
                .map(|issue| issue.state.is_open())
                .ok_or_else(|| ReadFailure::new(format!("issue #{number} does not exist")))
        });
    Some(IssueFact { number, open })
}

/// The smoke and sweep runs on the candidate branch since the session began.
async fn branch_runs(
    client: &GitHubClient,
    policy: &Policy,
    branch: &str,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Read<Vec<RunFact>> {
    let mut runs = Vec::new();
    for workflow in [&policy.smoke_workflow, &policy.sweep_workflow]
        .into_iter()
        .flatten()
    {
        let filter = RunFilter {
            branch: Some(branch.to_string()),
            created: Some((since, now + Duration::hours(1))),
            ..RunFilter::workflow(workflow)
        };
        runs.extend(listed_runs(client, &filter).await?.into_whole()?);
    }
    Ok(runs)
}

fn print_plan(context: &StepContext, plan: &FinishPlan) {
    let reporter = &context.reporter;
    reporter.begin_group("finish plan");
    let pull = plan
        .pull_request
        .map(|number| format!(" #{number}"))
        .unwrap_or_default();
    reporter.info(&format!(
        "{}{pull}: {} — {} ({})",
        plan.candidate,
        plan.outcome,
        plan.cleanup.name(),
        plan.reason
    ));
    let mut step = 0;
    if plan.receipt {
        step += 1;
        reporter.info(&format!("  {step}. post or refresh the completion receipt"));
    }
    for action in plan.cancel.iter().chain(&plan.actions) {
        step += 1;
        reporter.info(&format!("  {step}. {action}"));
    }
    reporter.end_group();
}

fn is_nothing_superseded(superseding: &Superseding) -> bool {
    superseding.pull_requests.is_empty()
}

fn summary(
    plan: &FinishPlan,
    applied: &Applied,
    superseded: &Superseding,
    agent: Option<&AgentRecord>,
    requests: &RequestReport,
    dry_run_writes: &[RecordedWrite],
) -> String {
    let dry_run = applied.execution.dry_run;
    let mut text = format!(
        "## klaud finish{}\n\n`{}`: **{}** — {} ({})\n\n",
        if dry_run {
            " (dry run: nothing written)"
        } else {
            ""
        },
        plan.candidate,
        plan.outcome,
        plan.cleanup.name(),
        plan.reason
    );
    if let Some(agent) = agent {
        text.push_str(&format!("Agent run: {}\n\n", agent.describe()));
    }
    if let Some(group) = applied.group(&plan.candidate) {
        let rows: Vec<Vec<String>> = group
            .actions
            .iter()
            .map(|record| vec![record.description.clone(), record.result.describe()])
            .collect();
        text.push_str(&markdown_table(&["step", "result"], &rows));
        text.push('\n');
    }
    let superseded_lines = superseded.lines();
    if !superseded_lines.is_empty() {
        text.push_str("Superseded (contract §12):\n\n");
        for line in superseded_lines {
            text.push_str(&format!("- {line}\n"));
        }
        text.push('\n');
    }
    if !applied.execution.pending_runs.is_empty() {
        text.push_str(&format!(
            "Cancelled runs not yet ended: {:?}\n\n",
            applied.execution.pending_runs
        ));
    }
    let fallback = match &applied.execution.ref_deletions {
        RefDeletionPath::RestFallback(reason) => Some(reason),
        _ => superseded.rest_fallback.as_ref(),
    };
    if let Some(reason) = fallback {
        text.push_str(&format!("{}\n\n", rest_fallback_note(reason)));
    }
    text.push_str(&requests.summary_line());
    text.push('\n');
    if dry_run {
        text.push_str(&dry_run_writes_section(dry_run_writes));
    }
    text
}
