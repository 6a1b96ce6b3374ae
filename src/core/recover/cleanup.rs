//! The cleanup of a candidate per its outcome (contract §4, §5), as an action group: validated
//! marks the draft ready with its label; any other outcome that deletes the branch cancels the
//! bot's smoke runs, sets the outcome's status label, removes the sweep labels, closes the draft
//! and deletes its branch while it still points at the examined head.

use super::Facts;
use super::labels::cleanup_label;
use super::liveness::Liveness;
use crate::core::outcome::{BranchOnCleanup, Outcome};
use crate::core::plan::{Action, ActionGroup, LedgerExpectation, PullRequestCheck};
use crate::core::snapshot::PullRequestFact;

/// The cleanup of a candidate per its outcome (contract §4): validated marks the draft ready;
/// otherwise the bot's smoke runs are cancelled, sweep labels removed, the draft closed and its
/// branch deleted while it still points at the examined head.
pub(super) fn cleanup_group(
    facts: &Facts<'_>,
    id: &str,
    pull: Option<&PullRequestFact>,
    outcome: Outcome,
    expectation: LedgerExpectation,
    liveness: &Liveness,
    reason: &mut String,
) -> ActionGroup {
    let policy = facts.policy;
    let mut actions = Vec::new();
    let check = pull.map(|pull| PullRequestCheck::examined_draft(policy, pull));
    match outcome.branch_on_cleanup() {
        BranchOnCleanup::KeptReady => {
            if let Some(pull) = pull {
                actions.extend(cleanup_label(facts, pull, outcome));
                actions.push(Action::MarkReady {
                    pull_request: pull.number,
                    node_id: pull.node_id.clone(),
                });
            }
        }
        BranchOnCleanup::LeftAsIs => reason.push_str("; left as it is"),
        BranchOnCleanup::Deleted => {
            actions.extend(cancel_bot_smokes(facts, id, liveness));
            if let Some(pull) = pull {
                actions.extend(cleanup_label(facts, pull, outcome));
                for label in &policy.sweep_labels {
                    if pull.labels.contains(label) {
                        actions.push(Action::RemoveLabel {
                            pull_request: pull.number,
                            label: label.clone(),
                        });
                    }
                }
                actions.push(Action::ClosePullRequest {
                    pull_request: pull.number,
                });
                let branch_sha = facts.branch_sha(&pull.head_branch).map(str::to_string);
                match branch_sha {
                    Some(sha) if sha == pull.head_sha => actions.push(Action::DeleteBranch {
                        branch: pull.head_branch.clone(),
                        expected_sha: sha,
                        closed_pull_request: pull.number,
                    }),
                    Some(sha) => reason.push_str(&format!(
                        "; branch kept: it moved to {} after the pull request's head",
                        &sha[..sha.len().min(7)]
                    )),
                    None => {}
                }
            }
        }
    }
    ActionGroup {
        subject: id.to_string(),
        candidate: Some(id.to_string()),
        pull_request_check: check,
        destructive: true,
        ledger_expectation: expectation,
        independent: false,
        actions,
    }
}

/// The bot's active smoke runs of a candidate.
pub(super) fn cancel_bot_smokes(facts: &Facts<'_>, id: &str, liveness: &Liveness) -> Vec<Action> {
    let policy = facts.policy;
    let branch = policy.candidate_branch(id);
    let Some(smoke) = &policy.smoke_workflow else {
        return Vec::new();
    };
    liveness
        .runs_of(smoke, id, &branch)
        .into_iter()
        .filter(|run| run.actor.as_deref() == Some(policy.bot.as_str()))
        .map(|run| Action::CancelRun {
            run_id: run.id,
            workflow: run.workflow.clone(),
        })
        .collect()
}
