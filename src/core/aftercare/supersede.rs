//! Closing an after-care pull request that a newer candidate of its family superseded
//! (contract §12): the one group of actions `finish` (of the newer session) and `recover` (when
//! `finish` could not) both apply, after each re-checked every §5 guard on it.

use crate::core::plan::{
    Action, ActionGroup, LedgerExpectation, MarkedComment, PullRequestCheck, status_label_action,
};
use crate::core::policy::Policy;
use crate::core::snapshot::PullRequestFact;

/// The marker of klaud's note on a superseded pull request, one per pull request.
pub fn superseded_marker(number: u64) -> String {
    format!("<!-- klaud:superseded pull={number} -->")
}

/// The note: the marker, then `Superseded by #by` and why, for people.
pub fn superseded_body(number: u64, by: u64) -> String {
    format!(
        "{}\nSuperseded by #{by}: a newer candidate of the same family was validated there, so \
         klaud closes this one and deletes its branch.\n",
        superseded_marker(number)
    )
}

/// The actions that close `pull` as superseded by `by`, behind the re-check of the pull request
/// exactly as examined (open, the bot's, at the same head, not handed off, draft or not as
/// seen): the note, the status labels and the sweep labels off, the pull request closed, and
/// its branch deleted while it still points at the examined head (`branch_sha`, the branch as
/// listed; a branch that moved is kept and `None` says so, §5a).
pub fn supersede_group(
    policy: &Policy,
    pull: &PullRequestFact,
    branch_sha: Option<&str>,
    by: u64,
    expectation: LedgerExpectation,
) -> (ActionGroup, Option<String>) {
    let number = pull.number;
    let mut actions = vec![Action::PostMarkedComment {
        pull_request: number,
        comment: MarkedComment::Superseded,
        marker: superseded_marker(number),
        body: superseded_body(number, by),
    }];
    actions.extend(status_label_action(policy, pull, None));
    actions.extend(
        policy
            .sweep_labels
            .iter()
            .filter(|label| pull.labels.contains(label))
            .map(|label| Action::RemoveLabel {
                pull_request: number,
                label: label.clone(),
            }),
    );
    actions.push(Action::ClosePullRequest {
        pull_request: number,
    });
    let kept = match branch_sha {
        Some(sha) if sha == pull.head_sha => {
            actions.push(Action::DeleteBranch {
                branch: pull.head_branch.clone(),
                expected_sha: sha.to_string(),
                closed_pull_request: number,
            });
            None
        }
        Some(sha) => Some(format!(
            "branch {} kept: it moved to {} after the pull request's head",
            pull.head_branch,
            sha.get(..7).unwrap_or(sha)
        )),
        None => None,
    };
    let candidate = policy
        .candidate_of_branch(&pull.head_branch)
        .map(str::to_string);
    let group = ActionGroup {
        subject: candidate.clone().unwrap_or_else(|| format!("#{number}")),
        candidate,
        pull_request_check: Some(PullRequestCheck::examined(policy, pull)),
        destructive: true,
        ledger_expectation: expectation,
        independent: false,
        actions,
    };
    (group, kept)
}
