//! Applying `finish`'s plan through the one executor (`shell::execute`): the plan becomes one
//! action group — the session's runs cancelled and waited for (bounded), then, behind the
//! re-check of the pull request, the receipt and each change. A change GitHub refuses stops the
//! rest, which the next recovery pass finishes. A dry run goes through the same group with its
//! writes recorded.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::inputs::FinishInputs;
use crate::core::finish::{FinishPlan, receipt_body};
use crate::core::ledger::Session;
use crate::shell::execute::{
    ActionResult, Clearance, ExecuteSettings, Execution, GroupRecord, execute,
};
use crate::shell::github::GitHubConnection;

/// What applying did: the executor's record of the plan's group, and what it means for the
/// step.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Applied {
    #[serde(flatten)]
    pub execution: Execution,
    /// Runs whose cancellation GitHub accepted.
    pub cancelled: Vec<u64>,
    /// Why the cleanup stopped before its end, if it did.
    pub failure: Option<String>,
    /// Why the pull request changes were dropped by their re-check, if they were.
    pub dropped: Option<String>,
}

impl Applied {
    /// The plan's group, when it had one.
    pub fn group(&self) -> Option<&GroupRecord> {
        self.execution.groups.first()
    }

    /// One line per action and what became of it.
    pub fn lines(&self) -> Vec<String> {
        self.group()
            .into_iter()
            .flat_map(|group| &group.actions)
            .map(|record| format!("{}: {}", record.description, record.result.describe()))
            .collect()
    }
}

/// Applies `plan` as one group.
pub async fn apply(
    connection: &GitHubConnection,
    plan: &FinishPlan,
    inputs: &FinishInputs,
    session: &Session,
    bot: &str,
    now: DateTime<Utc>,
    cancel_wait: Duration,
) -> Applied {
    let body = receipt_body(
        plan,
        session.parent_run,
        &inputs.agent_outcome,
        inputs.reason_code.as_deref(),
    );
    let Some(group) = plan.action_group(body, session.parent_run) else {
        return Applied {
            execution: Execution {
                dry_run: connection.client.records_writes(),
                ..Execution::default()
            },
            ..Applied::default()
        };
    };
    let settings = ExecuteSettings {
        bot: bot.to_string(),
        now,
        cancel_wait,
        reserve: 0,
    };
    let execution = execute(
        connection,
        &settings,
        std::slice::from_ref(&group),
        &[Clearance::Cleared],
    )
    .await;
    let record = execution.groups.first();
    let stopped = record.and_then(GroupRecord::stopped_at);
    let (failure, dropped) = match stopped.map(|record| (&record.result, record)) {
        Some((ActionResult::Dropped(reason), _)) => (None, Some(reason.clone())),
        Some((ActionResult::Failed(_) | ActionResult::NotAttempted(_), record)) => (
            Some(format!(
                "{}: {}",
                record.description,
                record.result.describe()
            )),
            None,
        ),
        Some((ActionResult::Done(_), _)) | None => (None, None),
    };
    Applied {
        cancelled: record.map(GroupRecord::cancelled_runs).unwrap_or_default(),
        execution,
        failure,
        dropped,
    }
}
