//! Applying `finish`'s plan, the one place it writes to GitHub and where dry-run is checked:
//! the session's runs are cancelled and waited for (bounded), then the pull request is read
//! again and compared with what the decision examined; only when it still matches is the
//! receipt posted or refreshed and each change sent. A change GitHub refuses stops the rest,
//! which the next recovery pass finishes.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::inputs::FinishInputs;
use crate::adapters::github::GitHubClient;
use crate::adapters::github::actions::RunCancel;
use crate::adapters::github::error::GitHubError;
use crate::adapters::github::git::BranchDeletion;
use crate::core::finish::{FinishPlan, receipt_body, receipt_marker};
use crate::core::ledger::Session;
use crate::core::ownership::closed_by_the_bot;
use crate::core::plan::Action;
use crate::shell::gather::{describe, issue_fact};
use crate::shell::github::GitHubConnection;

/// How often cancelled runs are read again while waiting for them to end.
const CANCEL_POLL: Duration = Duration::from_secs(2);

/// One step and what became of it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct StepRecord {
    pub description: String,
    pub result: String,
}

/// What applying did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Applied {
    pub steps: Vec<StepRecord>,
    pub cancelled: Vec<u64>,
    pub pending_runs: Vec<u64>,
    /// Why the cleanup stopped before its end, if it did.
    pub failure: Option<String>,
    /// Why the pull request changes were dropped by their re-check, if they were.
    pub dropped: Option<String>,
    #[serde(skip)]
    pub lines: Vec<String>,
}

impl Applied {
    fn note(&mut self, description: String, result: impl Into<String>) {
        let result = result.into();
        self.lines.push(format!("{description}: {result}"));
        self.steps.push(StepRecord {
            description,
            result,
        });
    }
}

/// Applies `plan`; in a dry run, only records what would be done.
pub async fn apply(
    connection: &GitHubConnection,
    plan: &FinishPlan,
    inputs: &FinishInputs,
    session: &Session,
    bot: &str,
    dry_run: bool,
    cancel_wait: Duration,
) -> Applied {
    let mut applied = Applied::default();
    if dry_run {
        if plan.receipt {
            applied.note("post or refresh the completion receipt".into(), "dry run");
        }
        for action in plan.cancel.iter().chain(&plan.actions) {
            applied.note(action.to_string(), "dry run");
        }
        return applied;
    }
    let client = &connection.client;
    for action in &plan.cancel {
        let Action::CancelRun { run_id, .. } = action else {
            continue;
        };
        match client.cancel_run(*run_id).await {
            Ok(RunCancel::Requested) => {
                applied.cancelled.push(*run_id);
                applied.note(action.to_string(), "cancel requested");
            }
            Ok(RunCancel::AlreadyCompleted) => applied.note(action.to_string(), "already ended"),
            Err(error) => {
                applied.note(action.to_string(), format!("failed: {}", describe(&error)));
                applied.failure = Some(format!("run {run_id} could not be cancelled"));
                return applied;
            }
        }
    }
    applied.pending_runs = wait_for_runs(client, &applied.cancelled, cancel_wait).await;
    let Some(number) = plan.pull_request else {
        return applied;
    };
    if !plan.receipt && plan.actions.is_empty() {
        return applied;
    }
    let labels = match recheck(client, plan, number).await {
        Ok(labels) => labels,
        Err(reason) => {
            applied.note(format!("re-check #{number}"), format!("dropped: {reason}"));
            applied.dropped = Some(reason);
            return applied;
        }
    };
    if plan.receipt {
        let body = receipt_body(
            plan,
            session.parent_run,
            &inputs.agent_outcome,
            inputs.reason_code.as_deref(),
        );
        let marker = receipt_marker(&plan.candidate, session.parent_run);
        match post_receipt(client, bot, number, &body, &marker).await {
            Ok(result) => applied.note("completion receipt".into(), result),
            Err(error) => {
                applied.note(
                    "completion receipt".into(),
                    format!("failed: {}", describe(&error)),
                );
                applied.failure = Some("the receipt could not be written".into());
                return applied;
            }
        }
    }
    let mut labels = labels;
    for action in &plan.actions {
        if matches!(action, Action::DeleteBranch { .. }) {
            // Closing a pull request a maintainer closed first also succeeds: the branch goes
            // only when GitHub says the bot closed it.
            match closer(client, number, bot).await {
                Ok(()) => {}
                Err(Closer::Kept(reason)) => {
                    applied.note(action.to_string(), format!("kept: {reason}"));
                    applied.dropped = Some(reason);
                    return applied;
                }
                Err(Closer::Unread(error)) => {
                    applied.note(action.to_string(), format!("failed: {}", describe(&error)));
                    applied.failure = Some(format!("who closed #{number} could not be read"));
                    return applied;
                }
            }
        }
        match apply_action(connection, action, &mut labels).await {
            Ok(result) => applied.note(action.to_string(), result),
            Err(error) => {
                applied.note(action.to_string(), format!("failed: {}", describe(&error)));
                applied.failure = Some(format!("{action} failed"));
                return applied;
            }
        }
    }
    applied
}

/// Reads the cancelled runs until each ended or `wait` is over; returns those still running.
async fn wait_for_runs(client: &GitHubClient, runs: &[u64], wait: Duration) -> Vec<u64> {
    let deadline = Instant::now() + wait;
    let mut pending: Vec<u64> = runs.to_vec();
    loop {
        let mut still = Vec::new();
        for id in &pending {
            match client.workflow_run(*id).await {
                Ok(run) if !run.is_active() => {}
                Err(error) if error.is_not_found() => {}
                _ => still.push(*id),
            }
        }
        pending = still;
        if pending.is_empty() || Instant::now() + CANCEL_POLL > deadline {
            return pending;
        }
        tokio::time::sleep(CANCEL_POLL).await;
    }
}

/// The pull request read again: still the bot's, at the examined head, in the examined state
/// and not handed off. Returns its labels.
async fn recheck(
    client: &GitHubClient,
    plan: &FinishPlan,
    number: u64,
) -> Result<Vec<String>, String> {
    let pull = client
        .pull_request(number)
        .await
        .map_err(|error| format!("#{number} could not be read again ({})", describe(&error)))?;
    let expected = &plan.examined;
    let labels: Vec<String> = pull.labels.iter().map(|label| label.name.clone()).collect();
    if let Some(expected) = expected {
        if pull.head.sha != expected.head_sha {
            return Err(format!("the head of #{number} moved"));
        }
        if (pull.state == "open") != expected.open {
            return Err(format!("#{number} was opened or closed meanwhile"));
        }
        if pull.draft != expected.draft {
            return Err(format!("#{number} changed between draft and ready"));
        }
        if labels.contains(&expected.handoff_label) {
            return Err(format!("#{number} was handed off"));
        }
    }
    Ok(labels)
}

/// Why a branch deletion does not go ahead.
enum Closer {
    /// The pull request is not one the bot closed.
    Kept(String),
    /// Who closed it could not be read.
    Unread(GitHubError),
}

/// `Ok` when pull request `number` is closed, unmerged and closed by `bot`, read just now.
async fn closer(client: &GitHubClient, number: u64, bot: &str) -> Result<(), Closer> {
    let issue = client.issue(number).await.map_err(Closer::Unread)?;
    closed_by_the_bot(&issue_fact(number, issue), bot).map_err(Closer::Kept)
}

/// Posts the receipt, or updates the bot's existing one in place when its text changed.
async fn post_receipt(
    client: &GitHubClient,
    bot: &str,
    number: u64,
    body: &str,
    marker: &str,
) -> Result<String, GitHubError> {
    let existing = client.comments(number).await?.into_iter().find(|comment| {
        comment
            .body
            .as_deref()
            .is_some_and(|text| text.contains(marker))
            && comment.user.as_ref().map(|user| user.login.as_str()) == Some(bot)
    });
    match existing {
        Some(comment) if comment.body.as_deref() == Some(body) => Ok("unchanged".into()),
        Some(comment) => {
            client.update_comment(comment.id, body).await?;
            Ok("updated".into())
        }
        None => {
            client.post_comment_once(number, body, marker).await?;
            Ok("posted".into())
        }
    }
}

async fn apply_action(
    connection: &GitHubConnection,
    action: &Action,
    labels: &mut Vec<String>,
) -> Result<String, GitHubError> {
    let client = &connection.client;
    match action {
        Action::SetStatusLabel {
            pull_request,
            label,
            others,
        } => {
            let mut said = Vec::new();
            if let Some(label) = label
                && !labels.contains(label)
            {
                connection
                    .label_client
                    .add_labels(*pull_request, std::slice::from_ref(label))
                    .await?;
                labels.push(label.clone());
                said.push(format!("added {label}"));
            }
            for other in others {
                if labels.contains(other) {
                    connection
                        .label_client
                        .remove_label(*pull_request, other)
                        .await?;
                    labels.retain(|present| present != other);
                    said.push(format!("removed {other}"));
                }
            }
            Ok(if said.is_empty() {
                "already right".into()
            } else {
                said.join(", ")
            })
        }
        Action::RemoveLabel {
            pull_request,
            label,
        } => {
            if !labels.contains(label) {
                return Ok("not there".into());
            }
            client.remove_label(*pull_request, label).await?;
            labels.retain(|present| present != label);
            Ok("removed".into())
        }
        Action::MarkReady { node_id, .. } => {
            client.mark_ready_for_review(node_id).await?;
            Ok("marked ready".into())
        }
        Action::ConvertToDraft { node_id, .. } => {
            client.convert_to_draft(node_id).await?;
            Ok("converted to a draft".into())
        }
        Action::ClosePullRequest { pull_request } => {
            client.close_pull_request(*pull_request).await?;
            Ok("closed".into())
        }
        Action::DeleteBranch {
            branch,
            expected_sha,
        } => Ok(
            match client.delete_branch_if_at(branch, expected_sha).await? {
                BranchDeletion::Deleted => "deleted".into(),
                BranchDeletion::Missing => "already gone".into(),
                BranchDeletion::Moved { now_at } => {
                    format!("kept: it moved to {}", now_at.get(..7).unwrap_or(&now_at))
                }
            },
        ),
        Action::CancelRun { .. }
        | Action::DeleteLockRef { .. }
        | Action::DispatchCandidate { .. } => Ok("not a finish step".into()),
    }
}
