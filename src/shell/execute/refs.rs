//! Deleting branches and lock refs only where they still point (contract §5a).
//!
//! Refs go in batches of up to [`REFS_PER_UPDATE`] through GitHub's `updateRefs`, each with
//! `beforeOid` = the sha klaud checked and never forced: GitHub applies a batch atomically and
//! refuses it when any ref moved, so a push that lands between klaud's check and its delete is
//! never lost. A refused batch is listed again: refs gone are done, refs moved are kept, and the
//! refs still at their checked sha are sent again in smaller batches (a batch GitHub refuses
//! with nothing moved is halved until the one ref it refuses is known, and that ref is reported
//! failed). Where GitHub does not offer the mutation (an older GitHub Enterprise Server, a token
//! it refuses), the rest is deleted by REST after a fresh listing, one request per ref; that
//! leaves a moment between the listing and the `DELETE`, which the summary states.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use serde::Serialize;

use futures::StreamExt;

use super::{
    ActionResult, Allowance, BUDGET_REACHED, Effect, Executor, STOPPED, WRITE_CONCURRENCY,
};
use crate::adapters::github::git::BranchDeletion;
use crate::adapters::github::graphql::{ConditionalDeletion, REFS_PER_UPDATE, RefUpdates};
use crate::core::plan::Action;

/// Refs checked by one fresh listing on the REST path.
const REFS_PER_LISTING: usize = 100;

/// How this pass deleted refs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(tag = "path", content = "reason", rename_all = "kebab-case")]
pub enum RefDeletionPath {
    /// Conditionally, through `updateRefs`: GitHub deletes a ref only while it is at the sha
    /// checked.
    #[default]
    Conditional,
    /// By REST `DELETE` after a fresh listing, because GitHub answered that `updateRefs` is
    /// unavailable (its answer): a push between the listing and the delete can be lost.
    RestFallback(String),
}

/// One ref to delete while it is at `sha`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RefToDelete {
    /// Branch name, without `refs/heads/`.
    name: String,
    sha: String,
}

impl RefToDelete {
    pub(super) fn of(action: &Action) -> Option<Self> {
        match action {
            Action::DeleteBranch {
                branch,
                expected_sha,
                ..
            } => Some(RefToDelete {
                name: branch.clone(),
                sha: expected_sha.clone(),
            }),
            Action::DeleteLockRef { name, expected_sha } => Some(RefToDelete {
                name: name.clone(),
                sha: expected_sha.clone(),
            }),
            _ => None,
        }
    }
}

/// Write requests `count` deletions take when nothing is refused.
pub(super) fn requests_for(count: usize) -> u64 {
    count.div_ceil(REFS_PER_UPDATE) as u64
}

/// The deletions of one pass; remembers when GitHub said `updateRefs` is unavailable, so the
/// rest of the pass goes straight to REST.
#[derive(Debug, Default)]
pub(super) struct RefDeleter {
    fallback: Mutex<Option<String>>,
}

impl RefDeleter {
    pub(super) fn path(&self) -> RefDeletionPath {
        match self.fallback.lock().expect("fallback lock").clone() {
            Some(reason) => RefDeletionPath::RestFallback(reason),
            None => RefDeletionPath::Conditional,
        }
    }

    fn falling_back(&self) -> bool {
        self.fallback.lock().expect("fallback lock").is_some()
    }

    /// Deletes `refs`; one result per ref, in order.
    pub(super) async fn delete(
        &self,
        executor: &Executor<'_>,
        refs: &[RefToDelete],
        allowance: &Allowance,
    ) -> Vec<ActionResult> {
        let mut results: Vec<Option<ActionResult>> = vec![None; refs.len()];
        if refs.is_empty() {
            return Vec::new();
        }
        if !self.falling_back() {
            self.conditionally(executor, refs, allowance, &mut results)
                .await;
        }
        if self.falling_back() {
            let left: Vec<usize> = (0..refs.len())
                .filter(|index| results[*index].is_none())
                .collect();
            self.by_rest(executor, refs, &left, allowance, &mut results)
                .await;
        }
        results
            .into_iter()
            .map(|result| {
                result.unwrap_or_else(|| {
                    ActionResult::NotAttempted(if executor.halted() {
                        STOPPED.into()
                    } else {
                        BUDGET_REACHED.into()
                    })
                })
            })
            .collect()
    }

    async fn conditionally(
        &self,
        executor: &Executor<'_>,
        refs: &[RefToDelete],
        allowance: &Allowance,
        results: &mut [Option<ActionResult>],
    ) {
        let repository = match executor.bot().repository_node_id().await {
            Ok(id) if !id.is_empty() => id,
            Ok(_) => {
                fill(results, 0..refs.len(), &|| {
                    ActionResult::Failed("GitHub named no node id for the repository".into())
                });
                return;
            }
            Err(error) => {
                let failed = executor.failure(&error);
                fill(results, 0..refs.len(), &|| failed.clone());
                return;
            }
        };
        let all: Vec<usize> = (0..refs.len()).collect();
        let mut queue: VecDeque<Vec<usize>> =
            all.chunks(REFS_PER_UPDATE).map(<[usize]>::to_vec).collect();
        while let Some(batch) = queue.pop_front() {
            if executor.halted() || self.falling_back() {
                return;
            }
            if !allowance.take(1) {
                return;
            }
            let deletions: Vec<ConditionalDeletion> = batch
                .iter()
                .map(|index| ConditionalDeletion {
                    branch: refs[*index].name.clone(),
                    before: refs[*index].sha.clone(),
                })
                .collect();
            match executor
                .bot()
                .delete_branches_if_at(&repository, &deletions)
                .await
            {
                Ok(RefUpdates::Applied) => {
                    fill(results, batch.iter().copied(), &|| {
                        ActionResult::Done(Effect::Deleted)
                    });
                }
                Ok(RefUpdates::Unavailable { message }) => {
                    *self.fallback.lock().expect("fallback lock") = Some(message);
                    return;
                }
                Ok(RefUpdates::Rejected { message }) => {
                    let still = self
                        .sort_out_refused(executor, refs, &batch, &message, results)
                        .await;
                    if still.len() == batch.len() && still.len() > 1 {
                        let (first, second) = still.split_at(still.len() / 2);
                        queue.push_front(second.to_vec());
                        queue.push_front(first.to_vec());
                    } else if !still.is_empty() {
                        queue.push_front(still);
                    }
                }
                Err(error) => {
                    let failed = executor.failure(&error);
                    fill(results, batch.iter().copied(), &|| failed.clone());
                }
            }
        }
    }

    /// After GitHub refused `batch`: refs gone are done, refs moved are kept; returns the refs
    /// still at their checked sha, to send again (a lone ref refused with nothing moved fails).
    async fn sort_out_refused(
        &self,
        executor: &Executor<'_>,
        refs: &[RefToDelete],
        batch: &[usize],
        message: &str,
        results: &mut [Option<ActionResult>],
    ) -> Vec<usize> {
        let Some(current) = listed_again(executor, refs, batch, results).await else {
            return Vec::new();
        };
        let mut still = Vec::new();
        for index in batch {
            let reference = &refs[*index];
            match current.get(&reference.name) {
                None => results[*index] = Some(ActionResult::Done(Effect::AlreadyGone)),
                Some(sha) if *sha != reference.sha => {
                    results[*index] = Some(moved(&reference.name, sha));
                }
                Some(_) => still.push(*index),
            }
        }
        if still.len() == 1 && batch.len() == 1 {
            results[still[0]] = Some(ActionResult::Failed(format!(
                "GitHub refused its deletion: {message}"
            )));
            return Vec::new();
        }
        still
    }

    /// The REST path: each batch listed again just before, and only refs still at their
    /// checked sha deleted, one `DELETE` each.
    async fn by_rest(
        &self,
        executor: &Executor<'_>,
        refs: &[RefToDelete],
        left: &[usize],
        allowance: &Allowance,
        results: &mut [Option<ActionResult>],
    ) {
        for batch in left.chunks(REFS_PER_LISTING) {
            if executor.halted() || allowance.exhausted() {
                return;
            }
            let Some(current) = listed_again(executor, refs, batch, results).await else {
                continue;
            };
            let deletions = batch.iter().map(|index| {
                let reference = &refs[*index];
                let at = current.get(&reference.name).cloned();
                async move {
                    let result = match at {
                        None => ActionResult::Done(Effect::AlreadyGone),
                        Some(sha) if sha != reference.sha => moved(&reference.name, &sha),
                        Some(_) if executor.halted() => ActionResult::NotAttempted(STOPPED.into()),
                        Some(_) if !allowance.take(1) => {
                            ActionResult::NotAttempted(BUDGET_REACHED.into())
                        }
                        Some(_) => match executor.bot().delete_branch(&reference.name).await {
                            Ok(BranchDeletion::Missing) => ActionResult::Done(Effect::AlreadyGone),
                            Ok(_) => ActionResult::Done(Effect::Deleted),
                            Err(error) => executor.failure(&error),
                        },
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
    }
}

fn fill(
    results: &mut [Option<ActionResult>],
    indices: impl IntoIterator<Item = usize>,
    result: &dyn Fn() -> ActionResult,
) {
    for index in indices {
        results[index] = Some(result());
    }
}

fn moved(name: &str, sha: &str) -> ActionResult {
    ActionResult::Dropped(format!(
        "{name} moved to {}: kept",
        sha.get(..7).unwrap_or(sha)
    ))
}

/// Where the refs of `batch` point now, listed again; `None` (each ref's result the failure)
/// when the listing failed.
async fn listed_again(
    executor: &Executor<'_>,
    refs: &[RefToDelete],
    batch: &[usize],
    results: &mut [Option<ActionResult>],
) -> Option<BTreeMap<String, String>> {
    let names: Vec<&str> = batch
        .iter()
        .map(|index| refs[*index].name.as_str())
        .collect();
    match current_shas(executor, &names).await {
        Ok(current) => Some(current),
        Err(failed) => {
            fill(results, batch.iter().copied(), &|| failed.clone());
            None
        }
    }
}

/// Where each of `names` points now (a name missing from the map is gone), from one listing of
/// their common prefix, or one read each when they share none.
async fn current_shas(
    executor: &Executor<'_>,
    names: &[&str],
) -> Result<BTreeMap<String, String>, ActionResult> {
    let prefix = common_prefix(names);
    let client = executor.bot();
    let mut current = BTreeMap::new();
    if prefix.is_empty() {
        for name in names {
            match client.branch(name).await {
                Ok(Some(reference)) => {
                    current.insert((*name).to_string(), reference.object.sha);
                }
                Ok(None) => {}
                Err(error) => return Err(executor.failure(&error)),
            }
        }
        return Ok(current);
    }
    match client.branches_starting_with(&prefix).await {
        Ok(references) => Ok(references
            .into_iter()
            .filter_map(|reference| {
                let name = reference.name.strip_prefix("refs/heads/")?.to_string();
                Some((name, reference.object.sha))
            })
            .collect()),
        Err(error) => Err(executor.failure(&error)),
    }
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
    fn refs_are_listed_again_by_their_common_prefix() {
        assert_eq!(
            common_prefix(&["klaud/recovery-123-a", "klaud/recovery-124-b"]),
            "klaud/recovery-12"
        );
        assert_eq!(common_prefix(&["a"]), "a");
        assert_eq!(common_prefix(&["x/a", "y/b"]), "");
    }

    #[test]
    fn a_batch_of_deletions_is_one_request() {
        assert_eq!(requests_for(0), 0);
        assert_eq!(requests_for(1), 1);
        assert_eq!(requests_for(REFS_PER_UPDATE), 1);
        assert_eq!(requests_for(REFS_PER_UPDATE + 1), 2);
    }
}
