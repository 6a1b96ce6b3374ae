//! `select` (contract §3.3, §3a, §4): choose the candidates to start and atomically claim their
//! families in the ledger before anything starts.
//!
//! Reads as: inputs (bad input is exit 2 before any request) → facts from GitHub (open pull
//! requests and candidate branches, concurrently) → the capacity gate → the decision
//! (`core::select`), made inside the ledger's compare-and-swap so that a conflict re-reads the
//! ledger and decides again → the plan in the log → `selection.json` and `candidate.json` files →
//! outputs and summary. A dry run decides on the ledger as read and writes nothing to GitHub; its
//! outputs select nothing, so no job starts a session that holds no claim.

pub(crate) mod facts;
mod inputs;
mod report;

use std::collections::BTreeSet;

use chrono::Utc;
use serde::Serialize;

use super::StepContext;
use crate::adapters::ledger_store::{CandidateRecord, LedgerDecision, LedgerError, LedgerStore};
use crate::core::candidate::Candidate;
use crate::core::ledger::{Ledger, SessionState};
use crate::core::policy::Policy;
use crate::core::select::capacity::CapacityGate;
use crate::core::select::review::ReviewInput;
use crate::core::select::{
    GitHubFacts, SelectingRun, SelectionDeferral, SelectionInputs, SelectionPlan,
    SelectionSnapshot, plan_claims,
};
use crate::shell::cli::SelectArgs;
use crate::shell::error::StepError;
use crate::shell::github::{RequestReport, connect};
use facts::{consult_capacity_gate, read_github_facts};
use inputs::read_inputs;
use report::{ClaimReport, log_plan, summary, write_selection_files};

/// Compare-and-swap attempts on the ledger: every lost attempt means another pass wrote, so
/// this bounds how many passes may race this one.
pub const LEDGER_ATTEMPTS: u32 = 8;

/// The step outputs of `select`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct SelectOutputs {
    /// `true` when this pass holds the claim of at least one candidate to start (always `false`
    /// in a dry run, which claims nothing).
    pub selected: bool,
    /// JSON array of the ids of the claimed candidates, in candidates-file order, for a job
    /// matrix (`[]` when none).
    pub candidates: Vec<String>,
    /// JSON object: the GitHub requests of this pass (`reads`, `writes`, `retries`, `waited-ms`)
    /// and its budgets (`max-operations`, `max-reads`).
    pub requests: RequestReport,
}

pub async fn run(context: &StepContext, arguments: &SelectArgs) -> Result<(), StepError> {
    let reporter = &context.reporter;
    let request = read_inputs(arguments, &context.environment, context.dry_run)?;
    if let ReviewInput::Invalid { message } = &request.review {
        reporter.warning(&format!(
            "the review is invalid, so nothing is selected ({}): {message}",
            SelectionDeferral::InvalidReviewOutput
        ));
    }
    let connection = connect(context, &arguments.github)?;
    reporter.info(&format!(
        "{} candidate(s){}{}",
        request.candidates.len(),
        match &request.review {
            ReviewInput::Decisions(_) => ", with review decisions",
            _ => "",
        },
        match &request.baselines {
            Some(baselines) => format!(", {} baseline record(s)", baselines.len()),
            None => String::new(),
        }
    ));

    let facts =
        read_github_facts(&connection.client, &[context.policy.branch_prefix.as_str()]).await;
    for observed in [
        facts.open_pull_requests.incomplete_reason(),
        facts.candidate_branches.incomplete_reason(),
    ]
    .into_iter()
    .flatten()
    {
        reporter.warning(&format!(
            "occupancy is unknown, so nothing is selected ({}): {observed}",
            SelectionDeferral::ListingIncomplete
        ));
    }
    let selection_can_proceed = !request.review.is_invalid()
        && facts.open_pull_requests.incomplete_reason().is_none()
        && facts.candidate_branches.incomplete_reason().is_none();
    let capacity = if selection_can_proceed {
        consult_capacity_gate(&context.config.capacity, &request.candidates, reporter).await
    } else {
        CapacityGate::Open
    };
    let inputs = SelectionInputs {
        candidates: &request.candidates,
        review: &request.review,
        baselines: request.baselines.as_ref(),
        capacity: &capacity,
    };
    let store = LedgerStore::new(&connection.client, &context.policy.state_branch)
        .with_max_attempts(LEDGER_ATTEMPTS);
    let (plan, claims) = decide_and_claim(context, &store, &facts, inputs, request.run).await?;

    if plan.deferred_reason == Some(SelectionDeferral::BudgetExhausted)
        && let Some(reason) = plan.decisions.first().and_then(|d| d.reason.as_ref())
    {
        reporter.warning(&format!(
            "{} ({})",
            reason.message,
            SelectionDeferral::BudgetExhausted
        ));
    }
    log_plan(reporter, &plan, claims);
    let selection = write_selection_files(
        &context.directory,
        &plan,
        &request.candidates,
        &context.policy,
    )?;
    reporter.info(&format!("wrote {}", selection.display()));
    let claimed = claims.claimed_ids(&plan);
    let requests = connection.report();
    let outputs = SelectOutputs {
        selected: !claimed.is_empty(),
        candidates: claimed,
        requests,
    };
    reporter
        .write_outputs(&outputs)
        .map_err(|error| StepError::failed(format!("cannot write step outputs: {error}")))?;
    reporter
        .write_summary(&summary(&plan, claims, &requests))
        .map_err(|error| StepError::failed(format!("cannot write the step summary: {error}")))?;
    Ok(())
}

/// The one place where a dry run is told apart: it decides on the ledger as read; otherwise the
/// decision is made inside the compare-and-swap and re-made on every conflict.
async fn decide_and_claim(
    context: &StepContext,
    store: &LedgerStore<'_>,
    facts: &GitHubFacts,
    inputs: SelectionInputs<'_>,
    run: SelectingRun,
) -> Result<(SelectionPlan, ClaimReport), StepError> {
    let policy = &context.policy;
    let now = Utc::now();
    if context.dry_run {
        let loaded = store
            .load()
            .await
            .map_err(|error| ledger_failure(policy, &error))?;
        let snapshot = SelectionSnapshot {
            ledger: &loaded.ledger,
            github: facts,
        };
        let decision = plan_claims(snapshot, inputs, policy, run, now, &BTreeSet::new());
        let claims = ClaimReport {
            dry_run: true,
            wrote: false,
            conflicts: 0,
        };
        return Ok((decision.plan, claims));
    }
    let mut chosen_on_earlier_readings = BTreeSet::new();
    let update = store
        .update(|ledger| {
            let snapshot = SelectionSnapshot {
                ledger,
                github: facts,
            };
            let decision = plan_claims(
                snapshot,
                inputs,
                policy,
                run,
                now,
                &chosen_on_earlier_readings,
            );
            chosen_on_earlier_readings.extend(decision.plan.selected_ids());
            match decision.ledger {
                Some(ledger) => LedgerDecision::WriteWithRecords {
                    records: claimed_records(inputs.candidates, &decision.plan, &ledger),
                    ledger,
                    message: decision.plan.ledger_message(),
                    result: decision.plan,
                },
                None => LedgerDecision::Keep(decision.plan),
            }
        })
        .await
        .map_err(|error| ledger_failure(policy, &error))?;
    let claims = ClaimReport {
        dry_run: false,
        wrote: update.wrote,
        conflicts: update.conflicts,
    };
    Ok((update.result, claims))
}

/// The records of the candidates this decision claims, exactly as the candidates file gave
/// them, to keep beside the ledger in the claim's commit (contract §9).
fn claimed_records(
    candidates: &[Candidate],
    plan: &SelectionPlan,
    ledger: &Ledger,
) -> Vec<CandidateRecord> {
    plan.selected_ids()
        .iter()
        .filter(|id| {
            ledger
                .sessions
                .iter()
                .any(|session| &session.candidate == *id && session.state == SessionState::Live)
        })
        .filter_map(|id| candidates.iter().find(|candidate| &candidate.id == id))
        .map(|candidate| CandidateRecord {
            candidate: candidate.id.clone(),
            json: serde_json::to_string_pretty(candidate).expect("a candidate serializes") + "\n",
        })
        .collect()
}

fn ledger_failure(policy: &Policy, error: &LedgerError) -> StepError {
    StepError::failed(format!(
        "the ledger on {} could not be read or written, so no session may start from this pass: {error}",
        policy.state_branch
    ))
}
