//! The re-checks made just before a change, one per kind of target: a pull request is read
//! again and compared with what the decision examined; a branch whose deletion rests on a close
//! goes only while GitHub still says the bot closed that pull request (every such pull request
//! read in one batched request); a run is read again before it is cancelled (still running,
//! started and last run by the bot). Refs are checked by GitHub itself (`refs`).

use std::collections::BTreeSet;

use super::{ActionResult, Effect, Executor, STOPPED};
use crate::adapters::github::batch::DetailBatch;
use crate::core::ownership::{closed_by_the_bot as closed_by, started_by_someone_else};
use crate::core::plan::{Action, PullRequestCheck};
use crate::shell::gather::{describe, issue_fact, run_fact};

/// The pull request as re-read just before it is changed.
pub(super) struct FreshPullRequest {
    pub node_id: String,
    pub labels: Vec<String>,
}

/// Re-reads the pull request and compares it with what the decision examined: open or closed,
/// author, head, draft, no handoff label.
pub(super) async fn pull_request(
    executor: &Executor<'_>,
    check: &PullRequestCheck,
) -> Result<FreshPullRequest, ActionResult> {
    if executor.halted() {
        return Err(ActionResult::NotAttempted(STOPPED.into()));
    }
    let pull = match executor.bot().pull_request(check.number).await {
        Ok(pull) => pull,
        Err(error) => return Err(executor.failure(&error)),
    };
    let labels: Vec<String> = pull.labels.iter().map(|label| label.name.clone()).collect();
    let number = check.number;
    let changed = if pull.state.is_open() != check.open {
        Some(if check.open {
            format!("#{number} is no longer open")
        } else {
            format!("#{number} was reopened")
        })
    } else if pull.user.as_ref().map(|user| user.login.as_str()) != Some(check.author.as_str()) {
        Some(format!("#{number} is not by {}", check.author))
    } else if check
        .head_sha
        .as_ref()
        .is_some_and(|sha| sha != &pull.head.sha)
    {
        Some(format!(
            "the head of #{number} moved to {}",
            pull.head.sha.get(..7).unwrap_or(&pull.head.sha)
        ))
    } else if check.draft.is_some_and(|draft| draft != pull.draft) {
        Some(if pull.draft {
            format!("#{number} became a draft")
        } else {
            format!("#{number} is now ready for review")
        })
    } else if labels.contains(&check.handoff_label) {
        Some(format!(
            "#{number} was handed off ({})",
            check.handoff_label
        ))
    } else {
        None
    };
    match changed {
        Some(reason) => Err(ActionResult::Dropped(reason)),
        None => Ok(FreshPullRequest {
            node_id: pull.node_id,
            labels,
        }),
    }
}

/// Re-reads a run just before it is cancelled: one that ended or is gone is left as it is, and
/// one started or re-run by anyone but the bot since it was examined (a maintainer's re-run
/// keeps its run id) is left running.
pub(super) async fn run(executor: &Executor<'_>, run_id: u64) -> Result<(), ActionResult> {
    if executor.halted() {
        return Err(ActionResult::NotAttempted(STOPPED.into()));
    }
    let run = match executor.bot().workflow_run(run_id).await {
        Ok(run) => run_fact(&run),
        Err(error) if error.is_not_found() => return Err(ActionResult::Done(Effect::AlreadyGone)),
        Err(error) => return Err(executor.failure(&error)),
    };
    if !run.active {
        return Err(ActionResult::Done(Effect::AlreadyCompleted));
    }
    match started_by_someone_else(&run, &executor.settings.bot) {
        Some(login) => Err(ActionResult::Dropped(format!(
            "run {run_id} was started or re-run by {login}: left running"
        ))),
        None => Ok(()),
    }
}

/// The pull request whose close a deletion rests on (none for a lock ref).
pub(super) fn close_it_rests_on(action: &Action) -> Option<u64> {
    match action {
        Action::DeleteBranch {
            closed_pull_request,
            ..
        } => Some(*closed_pull_request),
        _ => None,
    }
}

/// For each deletion (`None`: it rests on no close), `Ok` only when GitHub says, read just now,
/// that the bot closed the pull request. One batched read covers them all; a failed read keeps
/// every branch that rests on it.
pub(super) async fn closed_by_the_bot(
    executor: &Executor<'_>,
    closes: &[Option<u64>],
) -> Vec<Result<(), ActionResult>> {
    let numbers: BTreeSet<u64> = closes.iter().flatten().copied().collect();
    if numbers.is_empty() {
        return closes.iter().map(|_| Ok(())).collect();
    }
    if executor.halted() {
        return closes
            .iter()
            .map(|close| match close {
                Some(_) => Err(ActionResult::NotAttempted(STOPPED.into())),
                None => Ok(()),
            })
            .collect();
    }
    let batch = DetailBatch {
        pull_requests: numbers,
        ..DetailBatch::default()
    };
    let answers = executor.bot().read_detail_batch(&batch).await;
    let closed_by_this_dry_run = executor
        .closed_by_this_dry_run
        .lock()
        .expect("dry run lock")
        .clone();
    closes
        .iter()
        .map(|close| {
            let Some(number) = close else {
                return Ok(());
            };
            match answers.pull_requests.get(number) {
                // A dry run's own close was recorded, not sent: GitHub still shows it open.
                Some(Ok(detail))
                    if detail.issue.state.is_open() && closed_by_this_dry_run.contains(number) =>
                {
                    Ok(())
                }
                Some(Ok(detail)) => closed_by(
                    &issue_fact(*number, detail.issue.clone()),
                    &executor.settings.bot,
                )
                .map_err(|reason| ActionResult::Dropped(format!("{reason}: branch kept"))),
                Some(Err(error)) => Err(ActionResult::Failed(format!(
                    "who closed #{number} could not be read, branch kept: {}",
                    describe(error)
                ))),
                None => Err(ActionResult::Failed(format!(
                    "who closed #{number} was not answered: branch kept"
                ))),
            }
        })
        .collect()
}
