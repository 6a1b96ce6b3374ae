//! Status labels (contract §4): exactly one status label on each klaud pull request, reflecting
//! its state (`in-progress`, `parked`) or its outcome. Labels are display only — decided from
//! the ledger and the runs, never read back as state — and written with the label token so
//! that label events start no workflows. Only the bot's open drafts without the handoff label
//! get label changes; a pull request that is left alone keeps the labels it has.

use super::Facts;
use crate::core::outcome::{Outcome, StatusLabel};
use crate::core::plan::{
    Action, ActionGroup, LedgerExpectation, PullRequestCheck, status_label_action,
};
use crate::core::snapshot::PullRequestFact;

/// The label of a pull request cleaned up with `outcome`.
pub(super) fn cleanup_label(
    facts: &Facts<'_>,
    pull: &PullRequestFact,
    outcome: Outcome,
) -> Option<Action> {
    let wanted = outcome.status_label()?;
    status_label_action(facts.policy, pull, Some(wanted))
}

/// A group that sets the status label of a live or parked session's draft, when it is wrong.
pub(super) fn status_label_sync(
    facts: &Facts<'_>,
    candidate: &str,
    pull: &PullRequestFact,
    wanted: StatusLabel,
) -> Option<ActionGroup> {
    let policy = facts.policy;
    if !pull.draft
        || !pull.from_this_repository
        || pull.author.as_deref() != Some(policy.bot.as_str())
        || pull.labels.contains(&policy.handoff_label)
    {
        return None;
    }
    let action = status_label_action(facts.policy, pull, Some(wanted))?;
    Some(ActionGroup {
        subject: candidate.to_string(),
        candidate: Some(candidate.to_string()),
        pull_request_check: Some(PullRequestCheck {
            number: pull.number,
            head_sha: None,
            author: policy.bot.clone(),
            draft: Some(true),
            handoff_label: policy.handoff_label.clone(),
            open: true,
        }),
        destructive: false,
        ledger_expectation: LedgerExpectation::Nothing,
        independent: false,
        actions: vec![action],
    })
}
