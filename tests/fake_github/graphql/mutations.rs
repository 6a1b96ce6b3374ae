//! The mutations: `markPullRequestReadyForReview` and `convertPullRequestToDraft` (addressed by
//! the pull request's node id; a closed one is refused), and `updateRefs`.
//!
//! `updateRefs` is all or nothing: every update is checked first, and one that fails refuses
//! the whole request (`UNPROCESSABLE`, naming each failing ref) with no ref changed. An update
//! whose `beforeOid` is given holds only while the ref is there (all zeros: while it does not
//! exist); an `afterOid` of all zeros deletes the ref, any other moves or creates it and must be
//! a known commit; a move that is not a fast-forward needs `force: true`. Deletions go into
//! `deleted_refs` with the commit they pointed at, as REST deletions do.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::super::state::{DeletedRef, PullState, RepoState};
use super::resolve::{FieldError, Obj, repository_node_id};

/// The object id that means "no object".
pub const ZERO_OID: &str = "0000000000000000000000000000000000000000";

/// Applies the mutation `field` for `caller`; the payload is completed afterwards.
pub fn apply(
    state: &mut RepoState,
    caller: &str,
    field: &str,
    arguments: &Map<String, Value>,
) -> Result<Obj, FieldError> {
    let input = arguments
        .get("input")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let client_mutation_id = input
        .get("clientMutationId")
        .cloned()
        .unwrap_or(Value::Null);
    match field {
        "markPullRequestReadyForReview" => {
            let number = set_draft(state, &input, false)?;
            Ok(Obj::Payload {
                type_name: "MarkPullRequestReadyForReviewPayload",
                client_mutation_id,
                pull_request: Some(number),
            })
        }
        "convertPullRequestToDraft" => {
            let number = set_draft(state, &input, true)?;
            Ok(Obj::Payload {
                type_name: "ConvertPullRequestToDraftPayload",
                client_mutation_id,
                pull_request: Some(number),
            })
        }
        "updateRefs" => {
            update_refs(state, caller, &input)?;
            Ok(Obj::Payload {
                type_name: "UpdateRefsPayload",
                client_mutation_id,
                pull_request: None,
            })
        }
        _ => Err(FieldError {
            kind: None,
            message: format!("the fake GitHub does not resolve Mutation.{field}"),
        }),
    }
}

fn unresolved_node(id: &str) -> FieldError {
    FieldError::new(
        "NOT_FOUND",
        format!("Could not resolve to a node with the global id of '{id}'"),
    )
}

fn set_draft(
    state: &mut RepoState,
    input: &Map<String, Value>,
    to_draft: bool,
) -> Result<u64, FieldError> {
    let node_id = input
        .get("pullRequestId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let number = state
        .pull_by_node_id(node_id)
        .ok_or_else(|| unresolved_node(node_id))?;
    let now = state.now();
    let pull = state.pulls.get_mut(&number).expect("found by node id");
    if pull.state == PullState::Closed {
        let message = if to_draft {
            "Pull request is closed and cannot be converted to draft"
        } else {
            "Pull request is closed and cannot be marked ready for review"
        };
        return Err(FieldError::new("UNPROCESSABLE", message));
    }
    if pull.draft != to_draft {
        pull.draft = to_draft;
        pull.updated_at = now;
    }
    Ok(number)
}

/// One `RefUpdate` of the input.
struct RefUpdate {
    name: String,
    before: Option<String>,
    after: String,
    force: bool,
}

fn ref_updates(input: &Map<String, Value>) -> Vec<RefUpdate> {
    let text =
        |update: &Value, key: &str| update.get(key).and_then(Value::as_str).map(str::to_string);
    input
        .get("refUpdates")
        .and_then(Value::as_array)
        .map(|updates| {
            updates
                .iter()
                .map(|update| RefUpdate {
                    name: text(update, "name").unwrap_or_default(),
                    before: text(update, "beforeOid"),
                    after: text(update, "afterOid").unwrap_or_default(),
                    force: update
                        .get("force")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

/// Why `update` cannot apply to `refs` (the refs as the earlier updates of the request left
/// them), if it cannot.
fn refusal(
    state: &RepoState,
    refs: &BTreeMap<String, String>,
    update: &RefUpdate,
) -> Option<String> {
    let name = &update.name;
    if !name.starts_with("refs/") || name.matches('/').count() < 2 || name.ends_with('/') {
        return Some(format!("{name} is not a fully qualified ref name"));
    }
    let current = refs.get(name);
    match (update.before.as_deref(), current) {
        (Some(ZERO_OID), Some(current)) => {
            return Some(format!(
                "{name} already exists (at {}), but the update expects it not to",
                short(current)
            ));
        }
        (Some(ZERO_OID), None) | (None, _) => {}
        (Some(before), None) => {
            return Some(format!(
                "{name} does not exist, but the update expects it at {}",
                short(before)
            ));
        }
        (Some(before), Some(current)) if before != current => {
            return Some(format!(
                "{name} is at {}, but the update expects it at {}",
                short(current),
                short(before)
            ));
        }
        (Some(_), Some(_)) => {}
    }
    if update.after == ZERO_OID {
        return current
            .is_none()
            .then(|| format!("{name} does not exist, so it cannot be deleted"));
    }
    if !state.commits.contains_key(&update.after) {
        return Some(format!(
            "{name} cannot point at {}: no such commit",
            short(&update.after)
        ));
    }
    match current {
        Some(current) if !update.force && !state.is_ancestor(current, &update.after) => {
            Some(format!(
                "{name} cannot move from {} to {}: not a fast-forward (force was not set)",
                short(current),
                short(&update.after)
            ))
        }
        _ => None,
    }
}

fn update_refs(
    state: &mut RepoState,
    caller: &str,
    input: &Map<String, Value>,
) -> Result<(), FieldError> {
    let repository_id = input
        .get("repositoryId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if repository_id != repository_node_id(state, &state.full_name()) {
        return Err(unresolved_node(repository_id));
    }
    let updates = ref_updates(input);
    let mut refs = state.refs.clone();
    let mut refusals = Vec::new();
    for update in &updates {
        match refusal(state, &refs, update) {
            Some(reason) => refusals.push(reason),
            None if update.after == ZERO_OID => {
                refs.remove(&update.name);
            }
            None => {
                refs.insert(update.name.clone(), update.after.clone());
            }
        }
    }
    if !refusals.is_empty() {
        return Err(FieldError::new(
            "UNPROCESSABLE",
            format!("No ref was updated: {}", refusals.join("; ")),
        ));
    }
    for update in updates {
        if update.after == ZERO_OID {
            if let Some(sha) = state.refs.remove(&update.name) {
                state.deleted_refs.push(DeletedRef {
                    name: update.name,
                    sha,
                    by: caller.to_string(),
                });
            }
        } else {
            state.set_ref(&update.name, &update.after);
        }
    }
    Ok(())
}
