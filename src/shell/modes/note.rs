//! `note` (contract §9): the agent adds an entry to its session's log. The entry goes into the
//! ledger's record of this job's attempt (compare-and-swap; `core::session::notes` bounds and
//! folds it), then the whole log is written as one comment on the session's pull request through
//! the one executor, found by its marker and updated in place, behind a re-check that the pull
//! request is still open, the bot's and not handed off. A fork's pull request gets no comment.
//!
//! Requests: the ledger and the branch's pull requests (2 reads), the ledger write, then the
//! re-check and the comments listing (2 reads) and one comment write. It writes `note.json`
//! and no step outputs: it runs inside the agent's step, whose outputs are not its own.

use chrono::Utc;
use serde::Serialize;

use super::StepContext;
use super::work_files::write_json_file;
use crate::adapters::ledger_store::{LedgerDecision, LedgerStore};
use crate::core::candidate::{CANDIDATE_ID_PATTERN, is_candidate_id};
use crate::core::session::adoption::session_pull_request;
use crate::core::session::notes::{NoteAdded, add_note, log_comment_group};
use crate::shell::cli::NoteArgs;
use crate::shell::error::StepError;
use crate::shell::execute::{ActionResult, Clearance, ExecuteSettings, execute};
use crate::shell::gather::branch_pull_requests;
use crate::shell::github::{RequestReport, connect};

/// The most text a note file may hold before it is refused (the entry keeps 4,000 characters).
const TEXT_FILE_LIMIT: u64 = 1 << 20;

#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
struct NoteRecord<'a> {
    candidate: &'a str,
    attempt: u32,
    characters_cut: usize,
    entries_folded: u32,
    pull_request: Option<u64>,
    comment: &'a str,
    requests: &'a RequestReport,
}

pub async fn run(context: &StepContext, arguments: &NoteArgs) -> Result<(), StepError> {
    let (candidate, text) = read_inputs(arguments)?;
    let run = context
        .environment
        .github_run_id
        .as_deref()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .ok_or_else(|| {
            StepError::bad_input(
                "GITHUB_RUN_ID",
                "note is written from the job that runs the session (set by GitHub Actions)",
            )
        })?;
    let policy = &context.policy;
    let reporter = &context.reporter;
    let connection = connect(context, &arguments.github)?;
    let client = &connection.client;
    let store = LedgerStore::new(client, &policy.state_branch);
    let branch = policy.candidate_branch(&candidate);
    let pulls = branch_pull_requests(client, &branch).await?;
    let now = Utc::now();
    let update = store
        .update(|ledger| {
            let mut next = ledger.clone();
            let Some(session) = next
                .sessions
                .iter_mut()
                .rev()
                .find(|session| session.candidate == candidate)
            else {
                return LedgerDecision::Keep(Err(format!(
                    "the ledger has no session of {candidate}"
                )));
            };
            let added = match add_note(session, run, &text, now) {
                Ok(added) => added,
                Err(refusal) => return LedgerDecision::Keep(Err(refusal.to_string())),
            };
            if session.pull_request.is_none()
                && let Some(pull) = session_pull_request(&pulls, session, policy)
            {
                session.pull_request = Some(pull.number);
            }
            let session = session.clone();
            LedgerDecision::Write {
                message: format!("note {candidate}: attempt {} by run {run}", added.attempt),
                ledger: next,
                result: Ok((added, session)),
            }
        })
        .await
        .map_err(|error| StepError::failed(format!("the ledger could not be written: {error}")))?;
    let (added, session): (NoteAdded, _) = update.result.map_err(StepError::failed)?;
    if added.cut > 0 {
        reporter.warning(&format!(
            "the note was cut by {} characters to the 4,000 an entry keeps",
            added.cut
        ));
    }
    let pull = session_pull_request(&pulls, &session, policy);
    let comment = match log_comment_group(&session, pull, policy) {
        Err(why) => format!("not written: {why}"),
        Ok(group) => {
            let settings = ExecuteSettings {
                bot: policy.bot.clone(),
                now,
                cancel_wait: std::time::Duration::ZERO,
                reserve: 0,
            };
            let execution = execute(
                &connection,
                &settings,
                std::slice::from_ref(&group),
                &[Clearance::Cleared],
            )
            .await;
            execution
                .groups
                .first()
                .and_then(|group| group.actions.first())
                .map(|record| match &record.result {
                    ActionResult::Done(effect) => effect.to_string(),
                    other => format!("not written: {}", other.describe()),
                })
                .unwrap_or_else(|| "not written: the executor sent nothing".into())
        }
    };
    if comment.starts_with("not written") {
        reporter.warning(&format!(
            "session log comment {comment}; the entry is in the ledger"
        ));
    }
    let requests = connection.report();
    let pull_number = pull.map(|pull| pull.number);
    write_json_file(
        &context.directory,
        "note.json",
        &NoteRecord {
            candidate: &candidate,
            attempt: added.attempt,
            characters_cut: added.cut,
            entries_folded: added.folded,
            pull_request: pull_number,
            comment: &comment,
            requests: &requests,
        },
    )?;
    reporter.info(&format!(
        "note {candidate}: entry added to attempt {}; log comment {comment}",
        added.attempt
    ));
    Ok(())
}

/// The candidate and the note's text, checked before any request.
fn read_inputs(arguments: &NoteArgs) -> Result<(String, String), StepError> {
    let candidate = arguments
        .candidate
        .clone()
        .filter(|id| !id.is_empty())
        .ok_or_else(|| StepError::bad_input("candidate", "note needs the candidate id"))?;
    if !is_candidate_id(&candidate) {
        return Err(StepError::bad_input(
            "candidate",
            format!("'{candidate}' does not match {CANDIDATE_ID_PATTERN}"),
        ));
    }
    let text = match (&arguments.text, &arguments.text_file) {
        (Some(_), Some(_)) => {
            return Err(StepError::bad_input(
                "text",
                "give --text or --text-file, not both",
            ));
        }
        (Some(text), None) => text.clone(),
        (None, Some(path)) => {
            use std::io::Read;
            let mut text = String::new();
            let read = std::fs::File::open(path)
                .and_then(|file| file.take(TEXT_FILE_LIMIT + 1).read_to_string(&mut text));
            match read {
                Ok(length) if length as u64 > TEXT_FILE_LIMIT => {
                    return Err(StepError::bad_input(
                        "text-file",
                        format!("{} is larger than 1 MiB", path.display()),
                    ));
                }
                Ok(_) => text,
                Err(error) => {
                    return Err(StepError::bad_input(
                        "text-file",
                        format!("cannot read {}: {error}", path.display()),
                    ));
                }
            }
        }
        (None, None) => {
            return Err(StepError::bad_input(
                "text",
                "note needs --text-file or --text",
            ));
        }
    };
    if text.trim().is_empty() {
        return Err(StepError::bad_input("text", "the note is empty"));
    }
    Ok((candidate, text))
}
