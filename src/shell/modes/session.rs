//! `session` (contract §9): the first klaud step of the candidate job. Decides whether this job
//! runs the candidate's session — a re-run attempt is refused before any request, then the
//! ledger and the session's pull request decide — and, when it does, adopts the session through
//! the ledger's compare-and-swap (`core::session::adoption`) and writes what the agent gets:
//! `session.json` (the candidate's record as `select` claimed it, the branch, the pull request,
//! earlier attempts with their notes, the deadline), the agent CLI's settings with klaud's
//! hooks, the outcome schema and the run's own cap (`max-budget-usd`, `core::cost::run_cap`). A
//! refusal — a spent day's budget among them — is exit 0 with `proceed: false`, the reason in
//! the summary, and nothing written to GitHub.
//!
//! A candidate that comes from a labelled issue (contract §13) gets its task quoted as the
//! maintainers' request, with the issue's last 20 comments by accounts with write permission,
//! read once adopted (`core::session::request`).
//!
//! An after-care session (`refresh` or `repair`, contract §12; `core::session::aftercare`) is
//! refused unless its pull request is listed on its branch and the bot's. Before adopting, the
//! pull request's base branch is read (the commit it points at now) and, for a `repair`, the end
//! of each failed job's log (`adapters::github::job_logs`: GitHub's redirect, then the log's
//! host without the token; a log that cannot be read is named in `session.json`, never fatal).
//! Once adopted, the pull request is turned back into a draft labelled `klaud-in-progress`
//! through the executor, behind a re-check that it is still open, the bot's and not handed off;
//! a change that fails is said, and the session runs all the same (`finish` ends it as a draft
//! either way).
//!
//! Requests: the ledger, the branch's pull requests and the candidate's record (3 reads), one
//! ledger write when adopted; for an issue's candidate, its comments and one permission read per
//! comment author. An after-care session adds the base branch (1 read), for a `repair` two reads
//! per failed job with a job id (GitHub's redirect and the log), and the re-check of the pull
//! request (1 read) with its draft conversion and status label (up to 3 writes).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{SecondsFormat, Utc};
use futures::StreamExt;
use serde::Serialize;
use serde_json::{Value, json};

use super::StepContext;
use super::work_files::write_json_file;
use crate::adapters::github::GitHubClient;
use crate::adapters::ledger_store::{LedgerDecision, LedgerStore};
use crate::core::aftercare::SessionKind;
use crate::core::aftercare::evidence::{JobLog, evidence};
use crate::core::candidate::{CANDIDATE_ID_PATTERN, is_candidate_id};
use crate::core::cost::RunCap;
use crate::core::github_state::RepositoryPermission;
use crate::core::ledger::Session;
use crate::core::outcome_file::structured_output_schema;
use crate::core::session::adoption::{
    Adoption, JobIdentity, Refusal, adopt_under_budget, newest_session, pull_request_refusal,
    session_pull_request,
};
use crate::core::session::aftercare::{AftercareContext, BaseRef, aftercare_refusal, start_group};
use crate::core::session::request::{
    IssueComment, IssueTask, MaintainersRequest, comment_authors, issue_task, maintainers_request,
    record_without_task,
};
use crate::core::session::{ContextSetting, agent_settings, session_context, shell_quoted};
use crate::core::snapshot::{PullRequestFact, Read, ReadFailure};
use crate::shell::cli::SessionArgs;
use crate::shell::error::StepError;
use crate::shell::execute::{ActionResult, Clearance, ExecuteSettings, execute};
use crate::shell::gather::{describe, failed_read, pull_request_fact};
use crate::shell::github::{RequestReport, connect};

/// The context file's name in the work directory.
pub const CONTEXT_FILE: &str = "session.json";
/// The outcome file's name in the work directory.
pub const OUTCOME_FILE: &str = "outcome.json";

/// The step outputs of `session`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct SessionOutputs {
    /// `true` when this job runs the session.
    pub proceed: bool,
    pub context_file: String,
    pub outcome_file: String,
    /// The outcome file's JSON Schema, compact, as the agent CLI's `--json-schema` takes it.
    pub outcome_schema: String,
    /// Settings JSON for the agent CLI: klaud's Stop hook and deadline warning.
    pub agent_settings: String,
    /// RFC 3339.
    pub deadline: String,
    pub time_limit_minutes: String,
    pub attempt: String,
    pub resume: bool,
    /// The agent run's own cap in US dollars for the CLI's `--max-budget-usd`: the least of
    /// `budget.session-usd` and what is left of `budget.daily-usd` in the last 24 hours; empty
    /// when neither is configured (or the session is not run).
    pub max_budget_usd: String,
    pub requests: RequestReport,
}

pub async fn run(context: &StepContext, arguments: &SessionArgs) -> Result<(), StepError> {
    let candidate = read_candidate(arguments)?;
    let job = job_identity(context)?;
    let reporter = &context.reporter;
    let policy = &context.policy;
    if job.run_attempt != 1 {
        let refusal = Refusal::RerunAttempt {
            attempt: job.run_attempt,
        };
        return refuse(context, &candidate, &refusal.to_string(), None);
    }
    let connection = connect(context, &arguments.github)?;
    let client = &connection.client;
    let store = LedgerStore::new(client, &policy.state_branch);
    let loaded = store
        .load()
        .await
        .map_err(|error| StepError::failed(format!("the ledger could not be read: {error}")))?;
    let now = Utc::now();
    if let Err(refusal) = adopt_under_budget(&loaded.ledger, &candidate, job, policy, now) {
        return refuse(
            context,
            &candidate,
            &refusal.to_string(),
            Some(&connection.report()),
        );
    }
    let session = newest_session(&loaded.ledger, &candidate)
        .cloned()
        .expect("an adoptable session exists");
    let branch = policy.candidate_branch(&candidate);
    let (pulls, bases) = branch_pull_requests(client, &branch).await?;
    let pull = session_pull_request(&pulls, &session, policy).cloned();
    if let Some(refusal) = pull
        .as_ref()
        .and_then(|pull| pull_request_refusal(pull, policy))
        .or_else(|| aftercare_refusal(&session, pull.as_ref(), policy))
    {
        return refuse(
            context,
            &candidate,
            &refusal.to_string(),
            Some(&connection.report()),
        );
    }
    let record = match store.read_record(&candidate).await.map_err(|error| {
        StepError::failed(format!("the candidate's record could not be read: {error}"))
    })? {
        Some(text) => serde_json::from_str::<Value>(&text).map_err(|error| {
            StepError::failed(format!(
                "the candidate's stored record is not JSON: {error}"
            ))
        })?,
        None => {
            reporter.warning(&format!(
                "the state branch keeps no record of {candidate} (claimed by an earlier klaud?): the context names only its id and family"
            ));
            json!({"id": candidate, "family": session.family})
        }
    };
    if context.dry_run {
        let plan = adopt_under_budget(&loaded.ledger, &candidate, job, policy, now)
            .map(|(adoption, _)| adoption.attempt().number)
            .unwrap_or_default();
        return refuse(
            context,
            &candidate,
            &format!(
                "dry run: this job would adopt the session as attempt {plan}; the agent does not run without an adopted session"
            ),
            Some(&connection.report()),
        );
    }

    let aftercare = match (&pull, session.kind.is_aftercare()) {
        (Some(pull), true) => {
            let base_branch = bases
                .get(&pull.number)
                .map(String::as_str)
                .unwrap_or_default();
            Some(read_aftercare(context, client, &session, base_branch).await?)
        }
        _ => None,
    };

    let update = store
        .update_starting_from(Some(loaded), |ledger| {
            match adopt_under_budget(ledger, &candidate, job, policy, now) {
                Ok((adoption, cap)) => LedgerDecision::Write {
                    message: format!(
                        "session {candidate}: attempt {} adopted by run {}",
                        adoption.attempt().number,
                        job.run_id
                    ),
                    ledger: adoption.ledger.clone(),
                    result: Ok((adoption, cap)),
                },
                Err(refusal) => LedgerDecision::Keep(Err(refusal)),
            }
        })
        .await
        .map_err(|error| StepError::failed(format!("the ledger could not be written: {error}")))?;
    let (adoption, cap) = match update.result {
        Ok(adopted) => adopted,
        Err(refusal) => {
            return refuse(
                context,
                &candidate,
                &refusal.to_string(),
                Some(&connection.report()),
            );
        }
    };
    let request = match issue_task(&record) {
        Some(task) => Some(read_maintainers_request(client, &task).await),
        None => None,
    };
    let started = match &pull {
        Some(pull) => start_aftercare(context, &connection, &adoption.session, pull, now).await,
        None => None,
    };
    // `session.json` shows the pull request as the session left it: a draft once made one.
    let pull = pull.map(|mut pull| {
        pull.draft |= started.as_ref().is_some_and(|started| started.drafted);
        pull
    });
    let written = write_context(
        context,
        &candidate,
        &adoption,
        pull.as_ref(),
        (record_without_task(record), request, aftercare),
        client.repository(),
    )?;
    let attempt = adoption.attempt();
    let requests = connection.report();
    let outputs = SessionOutputs {
        proceed: true,
        context_file: written.context_file.display().to_string(),
        outcome_file: written.outcome_file.display().to_string(),
        outcome_schema: structured_output_schema().to_string(),
        agent_settings: written.agent_settings.to_string(),
        deadline: attempt.deadline.to_rfc3339_opts(SecondsFormat::Secs, true),
        time_limit_minutes: policy.session.time_limit_minutes.to_string(),
        attempt: attempt.number.to_string(),
        resume: adoption.resume,
        max_budget_usd: cap.max_budget_usd(),
        requests,
    };
    reporter.info(&format!(
        "session {candidate}: attempt {} of {} adopted by run {}{}, deadline {}, cap {}",
        attempt.number,
        policy.session.max_attempts,
        job.run_id,
        if adoption.resume { " (resumed)" } else { "" },
        outputs.deadline,
        cap.describe()
    ));
    reporter
        .write_outputs(&outputs)
        .map_err(|error| StepError::failed(format!("cannot write step outputs: {error}")))?;
    let mut summary = adopted_summary(&candidate, &adoption, pull.as_ref(), &outputs, &cap);
    if let Some(started) = &started {
        let said = &started.said;
        summary.push_str(&format!("- {}: {said}\n", adoption.session.kind));
    }
    reporter
        .write_summary(&summary)
        .map_err(|error| StepError::failed(format!("cannot write the step summary: {error}")))?;
    Ok(())
}

/// The request of a candidate that comes from a labelled issue: its task quoted, and the issue's
/// comments with their authors' permissions (read now, one read per author); comments that
/// cannot be read leave the task alone, with why.
async fn read_maintainers_request(client: &GitHubClient, task: &IssueTask) -> MaintainersRequest {
    let comments: Result<Vec<IssueComment>, ReadFailure> = client
        .comments(task.number)
        .await
        .map(|comments| {
            comments
                .into_iter()
                .map(|comment| IssueComment {
                    author: comment.user.map(|user| user.login),
                    created_at: comment.created_at,
                    body: comment.body.unwrap_or_default(),
                })
                .collect()
        })
        .map_err(|error| failed_read(&error));
    let authors = comments.as_deref().map(comment_authors).unwrap_or_default();
    let permissions: BTreeMap<String, Read<RepositoryPermission>> = futures::stream::iter(authors)
        .map(|author| async move {
            let permission = client
                .collaborator_permission(&author)
                .await
                .map_err(|error| failed_read(&error));
            (author, permission)
        })
        .buffer_unordered(8)
        .collect()
        .await;
    maintainers_request(
        task,
        comments.as_deref().map_err(Clone::clone),
        &permissions,
    )
}

/// The pull requests of the candidate's branch, with each one's base branch by number.
async fn branch_pull_requests(
    client: &GitHubClient,
    branch: &str,
) -> Result<(Vec<PullRequestFact>, BTreeMap<u64, String>), StepError> {
    let listed = client
        .pull_requests_for_branch(branch)
        .await
        .map_err(|error| {
            StepError::failed(format!(
                "the pull requests of {branch} could not be listed: {}",
                describe(&error)
            ))
        })?;
    let bases = listed
        .iter()
        .map(|pull| (pull.number, pull.base.branch.clone()))
        .collect();
    let facts = listed
        .iter()
        .map(|pull| pull_request_fact(pull, client.repository()))
        .collect();
    Ok((facts, bases))
}

/// What an after-care session is given besides: its base branch with the commit it points at
/// now (a failed read fails the step before anything is written), and for a `repair` the end of
/// each failed job's log (a log that cannot be read is named, never fatal).
async fn read_aftercare(
    context: &StepContext,
    client: &GitHubClient,
    session: &Session,
    base_branch: &str,
) -> Result<AftercareContext, StepError> {
    let sha = client
        .branch(base_branch)
        .await
        .map_err(|error| {
            StepError::failed(format!(
                "the base branch {base_branch} could not be read: {}",
                describe(&error)
            ))
        })?
        .ok_or_else(|| StepError::failed(format!("the base branch {base_branch} does not exist")))?
        .object
        .sha;
    let base = BaseRef {
        branch: base_branch.to_string(),
        sha,
    };
    if session.kind != SessionKind::Repair {
        return Ok(AftercareContext {
            base,
            evidence: None,
        });
    }
    let settings = &context.policy.aftercare;
    let failed = session
        .aftercare
        .as_ref()
        .map(|work| work.failed.clone())
        .unwrap_or_default();
    let job_ids: Vec<u64> = failed.iter().filter_map(|job| job.job_id).collect();
    let logs: BTreeMap<u64, Read<JobLog>> = client
        .job_logs(&job_ids, settings.max_log_bytes)
        .await
        .into_iter()
        .map(|(job_id, log)| {
            let log = log.map_err(|error| {
                context.reporter.warning(&format!(
                    "the log of job {job_id} could not be read: {error}"
                ));
                ReadFailure::new(crate::core::text::bounded(&error.to_string(), 300))
            });
            (job_id, log)
        })
        .collect();
    Ok(AftercareContext {
        base,
        evidence: Some(evidence(&failed, &logs, settings)),
    })
}

/// What `session` did to start an after-care session on its pull request.
struct AftercareStarted {
    /// What was done, or why not.
    said: String,
    /// The pull request was made a draft.
    drafted: bool,
}

/// Starts an after-care session on its pull request: a draft again, labelled
/// `klaud-in-progress`, through the executor behind the re-check of the pull request. What was
/// done, or why not; `None` for a session that is no after-care session of this pull request.
async fn start_aftercare(
    context: &StepContext,
    connection: &crate::shell::github::GitHubConnection,
    session: &Session,
    pull: &PullRequestFact,
    now: chrono::DateTime<Utc>,
) -> Option<AftercareStarted> {
    let policy = &context.policy;
    if !session.kind.is_aftercare() {
        return None;
    }
    let Some(group) = start_group(session, pull, policy) else {
        return Some(AftercareStarted {
            said: format!(
                "#{} is already a draft labelled {}",
                pull.number,
                policy.status_label(crate::core::outcome::StatusLabel::InProgress)
            ),
            drafted: false,
        });
    };
    let settings = ExecuteSettings {
        bot: policy.bot.clone(),
        now,
        cancel_wait: std::time::Duration::ZERO,
        reserve: 0,
    };
    let execution = execute(
        connection,
        &settings,
        std::slice::from_ref(&group),
        &[Clearance::Cleared],
    )
    .await;
    let lines: Vec<String> = execution
        .groups
        .iter()
        .flat_map(|group| &group.actions)
        .map(|record| {
            if !matches!(record.result, ActionResult::Done(_)) {
                context.reporter.warning(&format!(
                    "{}: {}; the session runs all the same",
                    record.description,
                    record.result.describe()
                ));
            }
            format!("{}: {}", record.description, record.result.describe())
        })
        .collect();
    for line in &lines {
        context.reporter.info(line);
    }
    let drafted = execution
        .groups
        .iter()
        .flat_map(|group| &group.actions)
        .any(|record| {
            matches!(
                record.action,
                crate::core::plan::Action::ConvertToDraft { .. }
            ) && matches!(record.result, ActionResult::Done(_))
        });
    Some(AftercareStarted {
        said: lines.join("; "),
        drafted,
    })
}

fn read_candidate(arguments: &SessionArgs) -> Result<String, StepError> {
    let candidate = arguments
        .candidate
        .clone()
        .filter(|id| !id.is_empty())
        .ok_or_else(|| StepError::bad_input("candidate", "session needs the candidate id"))?;
    if !is_candidate_id(&candidate) {
        return Err(StepError::bad_input(
            "candidate",
            format!("'{candidate}' does not match {CANDIDATE_ID_PATTERN}"),
        ));
    }
    Ok(candidate)
}

/// `GITHUB_RUN_ID` and `GITHUB_RUN_ATTEMPT`, both required: who adopts is decided by them.
fn job_identity(context: &StepContext) -> Result<JobIdentity, StepError> {
    let environment = &context.environment;
    let number = |name: &str, value: Option<&String>| -> Result<u64, StepError> {
        value
            .and_then(|text| text.trim().parse::<u64>().ok())
            .filter(|number| *number > 0)
            .ok_or_else(|| {
                StepError::bad_input(name, "session needs it as a number (set by GitHub Actions)")
            })
    };
    let run_id = number("GITHUB_RUN_ID", environment.github_run_id.as_ref())?;
    let run_attempt = number(
        "GITHUB_RUN_ATTEMPT",
        environment.github_run_attempt.as_ref(),
    )?;
    Ok(JobIdentity {
        run_id,
        run_attempt: u32::try_from(run_attempt).unwrap_or(u32::MAX),
    })
}

struct WrittenContext {
    context_file: PathBuf,
    outcome_file: PathBuf,
    agent_settings: Value,
}

/// Writes `session.json` and removes an outcome file left from before this job adopted the
/// session (it cannot be this attempt's).
fn write_context(
    context: &StepContext,
    candidate: &str,
    adoption: &Adoption,
    pull: Option<&PullRequestFact>,
    (record, maintainers_request, aftercare): (
        Value,
        Option<MaintainersRequest>,
        Option<AftercareContext>,
    ),
    repository: &str,
) -> Result<WrittenContext, StepError> {
    let directory = absolute(&context.directory);
    let outcome_file = directory.join(OUTCOME_FILE);
    match std::fs::remove_file(&outcome_file) {
        Ok(()) => context.reporter.warning(&format!(
            "removed {} left from before this job: the agent writes this attempt's outcome there",
            outcome_file.display()
        )),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => {
            return Err(StepError::failed(format!(
                "cannot remove the stale outcome file {}: {error}",
                outcome_file.display()
            )));
        }
    }
    let klaud = std::env::current_exe()
        .map_err(|error| StepError::failed(format!("cannot find klaud's own path: {error}")))?;
    let klaud = klaud.display().to_string();
    let api_url = context
        .environment
        .github_api_url
        .clone()
        .unwrap_or_else(|| "https://api.github.com".into());
    let html_url = context
        .environment
        .github_server_url
        .clone()
        .unwrap_or_else(|| "https://github.com".into());
    let setting = ContextSetting {
        record,
        maintainers_request,
        repository: repository.to_string(),
        api_url,
        html_url,
        outcome_file: outcome_file.display().to_string(),
        note_command: format!(
            "{} note --candidate {} --text-file FILE",
            shell_quoted(&klaud),
            shell_quoted(candidate)
        ),
        aftercare,
    };
    let session_context = session_context(
        &adoption.session,
        pull,
        &context.policy,
        setting,
        adoption.resume,
    );
    let context_file = write_json_file(&directory, CONTEXT_FILE, &session_context)?;
    let agent_settings = agent_settings(&klaud, &context_file.display().to_string());
    Ok(WrittenContext {
        context_file,
        outcome_file,
        agent_settings,
    })
}

/// The work directory as an absolute path: the hook runs from the agent's working directory.
fn absolute(directory: &Path) -> PathBuf {
    if directory.is_absolute() {
        return directory.to_path_buf();
    }
    std::env::current_dir()
        .map(|current| current.join(directory))
        .unwrap_or_else(|_| directory.to_path_buf())
}

/// A refusal: exit 0, `proceed: false`, the reason in the log and summary, nothing written.
fn refuse(
    context: &StepContext,
    candidate: &str,
    reason: &str,
    requests: Option<&RequestReport>,
) -> Result<(), StepError> {
    let reporter = &context.reporter;
    reporter.warning(&format!(
        "session {candidate}: not run by this job: {reason}"
    ));
    let outputs = SessionOutputs {
        proceed: false,
        context_file: String::new(),
        outcome_file: String::new(),
        outcome_schema: structured_output_schema().to_string(),
        agent_settings: String::new(),
        deadline: String::new(),
        time_limit_minutes: context.policy.session.time_limit_minutes.to_string(),
        attempt: String::new(),
        resume: false,
        max_budget_usd: String::new(),
        requests: requests.copied().unwrap_or_default(),
    };
    reporter
        .write_outputs(&outputs)
        .map_err(|error| StepError::failed(format!("cannot write step outputs: {error}")))?;
    reporter
        .write_summary(&format!(
            "### klaud session `{candidate}`: not run by this job\n\n{reason}\n\nNothing was written.\n"
        ))
        .map_err(|error| StepError::failed(format!("cannot write the step summary: {error}")))?;
    Ok(())
}

fn adopted_summary(
    candidate: &str,
    adoption: &Adoption,
    pull: Option<&PullRequestFact>,
    outputs: &SessionOutputs,
    cap: &RunCap,
) -> String {
    let attempt = adoption.attempt();
    let mut text = format!(
        "### klaud session `{candidate}`: attempt {}{}\n\n- deadline: {} ({} minutes)\n- the run's cap: {}\n- pull request: {}\n",
        attempt.number,
        if adoption.resume { ", resumed" } else { "" },
        outputs.deadline,
        outputs.time_limit_minutes,
        cap.describe(),
        pull.map(|pull| format!("#{}", pull.number))
            .unwrap_or_else(|| "none yet".into()),
    );
    for earlier in &adoption.session.attempts[..adoption.session.attempts.len() - 1] {
        text.push_str(&format!(
            "- attempt {} (run {}): {}, {} notes\n",
            earlier.number,
            earlier.run,
            earlier.end.map(|end| end.name()).unwrap_or("ended unseen"),
            earlier.notes.len()
        ));
    }
    text
}
