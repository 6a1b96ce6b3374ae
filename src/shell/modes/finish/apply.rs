//! Applying `finish`'s plan through the one executor (`shell::execute`): the plan becomes one
//! action group — the session's runs cancelled and waited for (bounded), then, behind the
//! re-check of the pull request, the receipt and each change — and, for a candidate that came
//! from an issue, a second group with klaud's comment on the issue. A change GitHub refuses stops the
//! rest, which the next recovery pass finishes. A dry run goes through the same group with its
//! writes recorded.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::inputs::FinishInputs;
use crate::core::finish::{FinishPlan, receipt_body};
use crate::core::finish_issue::issue_comment_body;
use crate::core::ledger::Session;
use crate::core::plan::ActionGroup;
use crate::core::policy::Policy;
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
    /// The plan's group (the candidate's pull request and branch), when it had one.
    pub fn group(&self, candidate: &str) -> Option<&GroupRecord> {
        self.execution
            .groups
            .iter()
            .find(|group| group.subject == candidate)
    }

    /// One line per action of every group and what became of it.
    pub fn lines(&self) -> Vec<String> {
        self.execution
            .groups
            .iter()
            .flat_map(|group| &group.actions)
            .map(|record| format!("{}: {}", record.description, record.result.describe()))
            .collect()
    }
}

/// Applies `plan` as one group, and the comment on the candidate's issue (when it came from one)
/// as another that rests on no pull request.
pub async fn apply(
    connection: &GitHubConnection,
    plan: &FinishPlan,
    inputs: &FinishInputs,
    session: &Session,
    policy: &Policy,
    now: DateTime<Utc>,
    cancel_wait: Duration,
) -> Applied {
    let body = receipt_body(
        plan,
        session.parent_run,
        &inputs.agent_outcome,
        inputs.reason_code.as_deref(),
    );
    let agent_ran = inputs.agent_outcome != "skipped";
    let issue_comment = issue_comment_body(plan, &session.family, policy, agent_ran, now);
    let groups: Vec<ActionGroup> = plan
        .action_group(body, session.parent_run)
        .into_iter()
        .chain(plan.issue_comment_group(issue_comment))
        .collect();
    if groups.is_empty() {
        return Applied {
            execution: Execution {
                dry_run: connection.client.records_writes(),
                ..Execution::default()
            },
            ..Applied::default()
        };
    };
    let settings = ExecuteSettings {
        bot: policy.bot.clone(),
        now,
        cancel_wait,
        reserve: 0,
    };
    let clearances = vec![Clearance::Cleared; groups.len()];
    let execution = execute(connection, &settings, &groups, &clearances).await;
    let record = execution
        .groups
        .iter()
        .find(|group| group.subject == plan.candidate);
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
    let issue_failure = execution
        .groups
        .iter()
        .filter(|group| group.subject != plan.candidate)
        .find_map(GroupRecord::stopped_at)
        .map(|record| format!("{}: {}", record.description, record.result.describe()));
    let failure = failure.or(issue_failure);
    Applied {
        cancelled: record.map(GroupRecord::cancelled_runs).unwrap_or_default(),
        execution,
        failure,
        dropped,
    }
}
