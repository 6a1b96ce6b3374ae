//! Running a plan's action groups: candidates' groups concurrently up to their branch deletion,
//! legacy lock refs beside them, then the branch deletions; every target re-checked just before
//! it changes, every write charged to the pass's allowance.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;

use super::{
    ActionResult, ApplySettings, GroupRecord, REFS_PER_CHECK, WRITE_CONCURRENCY, not_attempted,
    record, refusal,
};
use crate::adapters::github::GitHubClient;
use crate::adapters::github::actions::RunCancel;
use crate::adapters::github::error::GitHubError;
use crate::adapters::github::git::BranchDeletion;
use crate::adapters::github::models::PullRequest;
use crate::core::ownership::closed_by_the_bot;
use crate::core::plan::{Action, ActionGroup, PullRequestCheck};
use crate::core::recover::RecoveryPlan;
use crate::core::recover::ledger_plan::PassGrants;
use crate::core::text::bounded;
use crate::shell::gather::issue_fact;
use crate::shell::github::GitHubConnection;

/// Writes the actions may still send.
pub(super) struct Allowance {
    left: Mutex<u64>,
    exhausted: AtomicBool,
}

impl Allowance {
    pub(super) fn new(left: u64) -> Self {
        Allowance {
            left: Mutex::new(left),
            exhausted: AtomicBool::new(false),
        }
    }

    fn take(&self, writes: u64) -> bool {
        let mut left = self.left.lock().expect("allowance lock");
        if *left < writes {
            self.exhausted.store(true, Ordering::SeqCst);
            return false;
        }
        *left -= writes;
        true
    }

    pub(super) fn exhausted(&self) -> bool {
        self.exhausted.load(Ordering::SeqCst)
    }
}

const BUDGET_REACHED: &str = "the write budget of this pass is used: left for the next pass";

pub(super) struct Runner<'a> {
    connection: &'a GitHubConnection,
    settings: &'a ApplySettings,
    /// Writes for the candidates' groups.
    allowance: &'a Allowance,
    /// Writes for legacy lock refs: what the candidates' groups leave.
    lock_allowance: &'a Allowance,
    /// Set when GitHub stops the pass (rate limit, budget): nothing more is sent.
    halted: AtomicBool,
}

/// The pull request as re-read just before it is changed.
struct FreshPullRequest {
    node_id: String,
    labels: Vec<String>,
}

impl<'a> Runner<'a> {
    pub(super) fn new(
        connection: &'a GitHubConnection,
        settings: &'a ApplySettings,
        allowance: &'a Allowance,
        lock_allowance: &'a Allowance,
    ) -> Self {
        Runner {
            connection,
            settings,
            allowance,
            lock_allowance,
            halted: AtomicBool::new(false),
        }
    }
}

impl Runner<'_> {
    fn bot(&self) -> &GitHubClient {
        &self.connection.client
    }

    /// Applies the cleared groups. Candidate groups run concurrently up to their branch
    /// deletion, side by side with the legacy lock refs; then the branches of the groups whose
    /// earlier steps completed are deleted, checked against one fresh listing per batch.
    pub(super) async fn apply_groups(
        &self,
        plan: &RecoveryPlan,
        grants: &PassGrants,
    ) -> Vec<GroupRecord> {
        let cleared = |index: usize| grants.groups_cleared.get(index).copied().unwrap_or(false);
        let candidate_groups = plan
            .groups
            .iter()
            .enumerate()
            .filter(|(index, group)| cleared(*index) && !group.independent)
            .map(|(index, group)| async move { (index, self.apply_until_deletion(group).await) });
        let lock_groups = async {
            let mut done = Vec::new();
            for (index, group) in plan.groups.iter().enumerate() {
                if cleared(index) && group.independent {
                    let deletions: Vec<(String, String, &Action)> = group
                        .actions
                        .iter()
                        .filter_map(|action| match action {
                            Action::DeleteLockRef { name, expected_sha } => {
                                Some((name.clone(), expected_sha.clone(), action))
                            }
                            _ => None,
                        })
                        .collect();
                    let mut results = self
                        .delete_refs_checked(&deletions, self.lock_allowance)
                        .await
                        .into_iter();
                    let progress: Vec<Option<ActionResult>> = group
                        .actions
                        .iter()
                        .map(|action| match action {
                            Action::DeleteLockRef { .. } => results.next(),
                            _ => Some(ActionResult::NotAttempted("not a lock ref deletion".into())),
                        })
                        .collect();
                    done.push((index, progress));
                }
            }
            done
        };
        let (candidates, locks) = tokio::join!(
            futures::stream::iter(candidate_groups)
                .buffer_unordered(WRITE_CONCURRENCY)
                .collect::<Vec<_>>(),
            lock_groups
        );
        let mut progress: BTreeMap<usize, Vec<Option<ActionResult>>> =
            candidates.into_iter().chain(locks).collect();
        self.finish_branch_deletions(plan, &mut progress).await;
        plan.groups
            .iter()
            .enumerate()
            .map(|(index, group)| match progress.remove(&index) {
                Some(results) => record(group, results),
                None => not_attempted(group, &refusal(group, grants)),
            })
            .collect()
    }

    /// Runs a group's actions in order until its first branch deletion (left `None`) or the
    /// first action that does not complete (the rest are not sent).
    async fn apply_until_deletion(&self, group: &ActionGroup) -> Vec<Option<ActionResult>> {
        let mut results: Vec<Option<ActionResult>> = vec![None; group.actions.len()];
        let mut fresh: Option<FreshPullRequest> = None;
        for (index, action) in group.actions.iter().enumerate() {
            if matches!(action, Action::DeleteBranch { .. }) {
                break;
            }
            let needs_check = !matches!(action, Action::CancelRun { .. });
            let result = match (&group.pull_request_check, needs_check, &fresh) {
                (Some(check), true, None) => match self.check_pull_request(check).await {
                    Ok(pull) => {
                        fresh = Some(pull);
                        self.apply_action(action, fresh.as_mut(), self.allowance)
                            .await
                    }
                    Err(result) => result,
                },
                _ => {
                    self.apply_action(action, fresh.as_mut(), self.allowance)
                        .await
                }
            };
            let done = result.is_done();
            results[index] = Some(result);
            if !done {
                break;
            }
        }
        results
    }

    /// The branch deletions candidate groups stopped at, when every earlier step completed;
    /// then whatever follows them in their group.
    async fn finish_branch_deletions(
        &self,
        plan: &RecoveryPlan,
        progress: &mut BTreeMap<usize, Vec<Option<ActionResult>>>,
    ) {
        let mut waiting: Vec<(usize, usize)> = Vec::new();
        for (group_index, results) in progress.iter() {
            let group = &plan.groups[*group_index];
            if group.independent {
                continue;
            }
            if let Some(next) = results.iter().position(Option::is_none)
                && results[..next]
                    .iter()
                    .all(|result| result.as_ref().is_some_and(ActionResult::is_done))
                && matches!(group.actions[next], Action::DeleteBranch { .. })
            {
                waiting.push((*group_index, next));
            }
        }
        // A branch goes only with a pull request the bot closed, read again just before: closing
        // one a maintainer closed first also succeeds, and leaves it the maintainer's.
        let closers: Vec<Result<(), ActionResult>> =
            futures::stream::iter(waiting.iter().map(|(group_index, _)| {
                self.check_closer(closed_pull_request(plan, *group_index))
            }))
            .buffered(WRITE_CONCURRENCY)
            .collect()
            .await;
        let mut cleared = Vec::new();
        for ((group_index, action_index), closer) in waiting.into_iter().zip(closers) {
            match closer {
                Ok(()) => cleared.push((group_index, action_index)),
                Err(result) => {
                    if let Some(progress) = progress.get_mut(&group_index) {
                        progress[action_index] = Some(result);
                    }
                }
            }
        }
        let waiting = cleared;
        let deletions: Vec<(String, String, &Action)> = waiting
            .iter()
            .filter_map(
                |(group, action)| match &plan.groups[*group].actions[*action] {
                    action @ Action::DeleteBranch {
                        branch,
                        expected_sha,
                    } => Some((branch.clone(), expected_sha.clone(), action)),
                    _ => None,
                },
            )
            .collect();
        let results = self.delete_refs_checked(&deletions, self.allowance).await;
        for ((group_index, action_index), result) in waiting.into_iter().zip(results) {
            let group = &plan.groups[group_index];
            let Some(progress) = progress.get_mut(&group_index) else {
                continue;
            };
            let mut done = result.is_done();
            progress[action_index] = Some(result);
            for (action, slot) in group
                .actions
                .iter()
                .zip(progress.iter_mut())
                .skip(action_index + 1)
            {
                if !done {
                    break;
                }
                let result = self.apply_action(action, None, self.allowance).await;
                done = result.is_done();
                *slot = Some(result);
            }
        }
    }

    /// Re-reads who closed pull request `number` (if the deletion rests on one): `Ok` only when
    /// the bot did.
    async fn check_closer(&self, number: Option<u64>) -> Result<(), ActionResult> {
        let Some(number) = number else {
            return Ok(());
        };
        if self.halted.load(Ordering::SeqCst) {
            return Err(ActionResult::NotAttempted(
                "GitHub stopped this pass".into(),
            ));
        }
        let issue = match self.bot().issue(number).await {
            Ok(issue) => issue_fact(number, issue),
            Err(error) => return Err(self.failure(&error)),
        };
        closed_by_the_bot(&issue, &self.settings.bot)
            .map_err(|reason| ActionResult::Dropped(format!("{reason}: branch kept")))
    }

    /// Re-reads the pull request and compares it with what the decision examined.
    async fn check_pull_request(
        &self,
        check: &PullRequestCheck,
    ) -> Result<FreshPullRequest, ActionResult> {
        if self.halted.load(Ordering::SeqCst) {
            return Err(ActionResult::NotAttempted(
                "GitHub stopped this pass".into(),
            ));
        }
        let pull: PullRequest = match self.bot().pull_request(check.number).await {
            Ok(pull) => pull,
            Err(error) => return Err(self.failure(&error)),
        };
        let labels: Vec<String> = pull.labels.iter().map(|label| label.name.clone()).collect();
        let number = check.number;
        let changed = if (pull.state == "open") != check.open {
            Some(if check.open {
                format!("#{number} is no longer open")
            } else {
                format!("#{number} was reopened")
            })
        } else if pull.user.as_ref().map(|user| user.login.as_str()) != Some(check.author.as_str())
        {
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

    async fn apply_action(
        &self,
        action: &Action,
        fresh: Option<&mut FreshPullRequest>,
        allowance: &Allowance,
    ) -> ActionResult {
        if self.halted.load(Ordering::SeqCst) {
            return ActionResult::NotAttempted("GitHub stopped this pass".into());
        }
        if !allowance.take(action.writes()) {
            return ActionResult::NotAttempted(BUDGET_REACHED.into());
        }
        let labels = &self.connection.label_client;
        let result: Result<String, GitHubError> = match action {
            Action::CancelRun { run_id, .. } => {
                self.bot()
                    .cancel_run(*run_id)
                    .await
                    .map(|cancel| match cancel {
                        RunCancel::Requested => "cancel requested".to_string(),
                        RunCancel::AlreadyCompleted => "it had already completed".to_string(),
                    })
            }
            Action::SetStatusLabel {
                pull_request,
                label,
                others,
            } => {
                let Some(fresh) = fresh else {
                    return ActionResult::Failed("no fresh read of the pull request".into());
                };
                set_status_label(labels, *pull_request, label.as_deref(), others, fresh).await
            }
            Action::RemoveLabel {
                pull_request,
                label,
            } => match fresh {
                Some(fresh) if !fresh.labels.contains(label) => Ok("not there".into()),
                _ => self
                    .bot()
                    .remove_label(*pull_request, label)
                    .await
                    .map(|()| "removed".into()),
            },
            Action::MarkReady { node_id, .. } => {
                let node_id = fresh
                    .map(|fresh| fresh.node_id.clone())
                    .unwrap_or(node_id.clone());
                self.bot()
                    .mark_ready_for_review(&node_id)
                    .await
                    .map(|()| "marked ready".into())
            }
            Action::ConvertToDraft { node_id, .. } => {
                let node_id = fresh
                    .map(|fresh| fresh.node_id.clone())
                    .unwrap_or(node_id.clone());
                self.bot()
                    .convert_to_draft(&node_id)
                    .await
                    .map(|()| "converted to a draft".into())
            }
            Action::ClosePullRequest { pull_request } => self
                .bot()
                .close_pull_request(*pull_request)
                .await
                .map(|_| "closed".into()),
            Action::DeleteBranch {
                branch,
                expected_sha,
            } => match self.bot().delete_branch_if_at(branch, expected_sha).await {
                Ok(BranchDeletion::Deleted) => Ok("deleted".into()),
                Ok(BranchDeletion::Missing) => Ok("already gone".into()),
                Ok(BranchDeletion::Moved { now_at }) => {
                    return ActionResult::Dropped(format!(
                        "{branch} moved to {}: kept",
                        now_at.get(..7).unwrap_or(&now_at)
                    ));
                }
                Err(error) => Err(error),
            },
            Action::DeleteLockRef { name, .. } => {
                self.bot()
                    .delete_branch(name)
                    .await
                    .map(|deletion| match deletion {
                        BranchDeletion::Missing => "already gone".to_string(),
                        _ => "deleted".to_string(),
                    })
            }
            Action::DispatchCandidate {
                candidate,
                workflow,
                git_ref,
            } => {
                let inputs = BTreeMap::from([("candidate".to_string(), candidate.clone())]);
                self.bot()
                    .dispatch_workflow_once(
                        workflow,
                        git_ref,
                        &inputs,
                        &self.settings.bot,
                        self.settings.write.now,
                    )
                    .await
                    .map(|()| "dispatched".into())
            }
        };
        match result {
            Ok(detail) => ActionResult::Done(detail),
            Err(error) => self.failure(&error),
        }
    }

    fn failure(&self, error: &GitHubError) -> ActionResult {
        if error.stops_the_pass() {
            self.halted.store(true, Ordering::SeqCst);
            if matches!(error, GitHubError::BudgetExhausted { .. }) {
                self.allowance.exhausted.store(true, Ordering::SeqCst);
                self.lock_allowance.exhausted.store(true, Ordering::SeqCst);
                return ActionResult::NotAttempted(BUDGET_REACHED.into());
            }
        }
        ActionResult::Failed(bounded(&error.to_string(), 300))
    }

    /// Deletes refs (`name`, `expected_sha`): each batch is listed again just before, and only
    /// refs still at their examined sha are deleted; a moved ref is kept.
    async fn delete_refs_checked(
        &self,
        refs: &[(String, String, &Action)],
        allowance: &Allowance,
    ) -> Vec<ActionResult> {
        let mut results: Vec<Option<ActionResult>> = vec![None; refs.len()];
        let indexed: Vec<(usize, &(String, String, &Action))> = refs.iter().enumerate().collect();
        for batch in indexed.chunks(REFS_PER_CHECK) {
            if self.halted.load(Ordering::SeqCst) || allowance.exhausted() {
                break;
            }
            let names: Vec<&str> = batch
                .iter()
                .map(|(_, (name, _, _))| name.as_str())
                .collect();
            let prefix = common_prefix(&names);
            let current: Option<BTreeMap<String, String>> = if prefix.is_empty() {
                None
            } else {
                match self.bot().branches_starting_with(&prefix).await {
                    Ok(references) => Some(
                        references
                            .into_iter()
                            .filter_map(|reference| {
                                let name = reference.name.strip_prefix("refs/heads/")?.to_string();
                                Some((name, reference.object.sha))
                            })
                            .collect(),
                    ),
                    Err(error) => {
                        let failed = self.failure(&error);
                        for (index, _) in batch {
                            results[*index] = Some(failed.clone());
                        }
                        continue;
                    }
                }
            };
            let deletions = batch.iter().map(|(index, (name, expected_sha, _))| {
                let current = &current;
                async move {
                    let result = match current {
                        Some(current) => match current.get(name) {
                            None => ActionResult::Done("already gone".into()),
                            Some(sha) if sha != expected_sha => ActionResult::Dropped(format!(
                                "{name} moved to {}: kept",
                                sha.get(..7).unwrap_or(sha)
                            )),
                            Some(_) => {
                                let raw = Action::DeleteLockRef {
                                    name: name.clone(),
                                    expected_sha: expected_sha.clone(),
                                };
                                self.apply_action(&raw, None, allowance).await
                            }
                        },
                        // No shared prefix to list: read each ref on its own before deleting.
                        None => {
                            let checked = Action::DeleteBranch {
                                branch: name.clone(),
                                expected_sha: expected_sha.clone(),
                            };
                            self.apply_action(&checked, None, allowance).await
                        }
                    };
                    (*index, result)
                }
            });
            let done: Vec<(usize, ActionResult)> = futures::stream::iter(deletions)
                .buffer_unordered(WRITE_CONCURRENCY)
                .collect()
                .await;
            for (index, result) in done {
                results[index] = Some(result);
            }
        }
        results
            .into_iter()
            .map(|result| {
                result.unwrap_or_else(|| ActionResult::NotAttempted(BUDGET_REACHED.into()))
            })
            .collect()
    }
}

/// The pull request whose close the branch deletion of group `index` rests on: the one its
/// check names, else the one its candidate's report names.
fn closed_pull_request(plan: &RecoveryPlan, index: usize) -> Option<u64> {
    plan.groups
        .get(index)
        .and_then(|group| group.pull_request_check.as_ref())
        .map(|check| check.number)
        .or_else(|| {
            plan.candidates
                .iter()
                .find(|report| report.group == Some(index))
                .and_then(|report| report.pull_request)
        })
}

/// Adds `label` when missing and removes the other status labels present, from the fresh read.
async fn set_status_label(
    client: &GitHubClient,
    number: u64,
    label: Option<&str>,
    others: &[String],
    fresh: &mut FreshPullRequest,
) -> Result<String, GitHubError> {
    let mut said = Vec::new();
    if let Some(label) = label
        && !fresh.labels.iter().any(|present| present == label)
    {
        client.add_labels(number, &[label.to_string()]).await?;
        fresh.labels.push(label.to_string());
        said.push(format!("added {label}"));
    }
    for other in others {
        if fresh.labels.contains(other) {
            client.remove_label(number, other).await?;
            fresh.labels.retain(|present| present != other);
            said.push(format!("removed {other}"));
        }
    }
    Ok(if said.is_empty() {
        "already right".into()
    } else {
        said.join(", ")
    })
}

/// The longest common prefix of `names`, cut back to whole characters.
fn common_prefix(names: &[&str]) -> String {
    let Some(first) = names.first() else {
        return String::new();
    };
    let mut length = first.len();
    for name in &names[1..] {
        length = first
            .bytes()
            .zip(name.bytes())
            .take(length)
            .take_while(|(a, b)| a == b)
            .count();
    }
    while !first.is_char_boundary(length) {
        length -= 1;
    }
    first[..length].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_refs_are_listed_again_by_their_common_prefix() {
        assert_eq!(
            common_prefix(&["klaud/recovery-123-a", "klaud/recovery-124-b"]),
            "klaud/recovery-12"
        );
        assert_eq!(common_prefix(&["a"]), "a");
        assert_eq!(common_prefix(&["x/a", "y/b"]), "");
    }

    #[test]
    fn the_allowance_refuses_beyond_what_is_left() {
        let allowance = Allowance::new(3);
        assert!(allowance.take(2));
        assert!(!allowance.take(2));
        assert!(allowance.exhausted());
        assert!(allowance.take(1));
    }
}
