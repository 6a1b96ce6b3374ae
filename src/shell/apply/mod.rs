//! Applying a recovery plan: the one place `recover` writes to GitHub, and where dry-run is
//! checked, once.
//!
//! 1. The first ledger write (compare-and-swap, re-decided on the fresh document on conflict)
//!    takes the recovery lease, records outcomes and moves resumed sessions to live; it says
//!    which action groups are still cleared.
//! 2. The cleared groups run: candidates' groups concurrently, each group's actions in order up
//!    to its branch deletion, side by side with the legacy lock refs. A pull request is read
//!    again before the group's first change to it (open, author, head, draft, no handoff label);
//!    a check that fails drops the rest of the group and says why. Then the branches of the
//!    groups whose earlier steps completed are deleted. Branches and lock refs are listed again
//!    just before each batch of deletions and deleted only while still at the examined sha.
//!    The write budget keeps room for the last ledger write and serves candidates before legacy
//!    refs; what does not fit is left for the next pass, which decides it again.
//! 3. The last ledger write releases the claims of candidates whose cleanup completed, parks
//!    again sessions whose run could not be started, and releases the lease.

mod runner;

use serde::Serialize;

use super::github::GitHubConnection;
use crate::adapters::ledger_store::{LedgerDecision, LedgerError, LedgerStore, LoadedLedger};
use crate::core::plan::{Action, ActionGroup, LedgerExpectation};
use crate::core::recover::RecoveryPlan;
use crate::core::recover::ledger_plan::{
    PassGrants, ResumeRecord, WriteSettings, decide_first_write, decide_second_write,
};
use crate::core::text::bounded;
use runner::{Allowance, Runner};

/// Groups (and lock-ref deletions) sent at once.
pub const WRITE_CONCURRENCY: usize = 8;
/// Writes kept back for the last ledger write (and one compare-and-swap retry).
const LEDGER_WRITE_RESERVE: u64 = 2;
/// Refs deleted per fresh listing of them.
const REFS_PER_CHECK: usize = 100;

/// How to apply.
#[derive(Debug, Clone)]
pub struct ApplySettings {
    pub dry_run: bool,
    pub write: WriteSettings,
    /// The bot's login (the actor of the runs it dispatches).
    pub bot: String,
}

/// What happened to one action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", content = "detail", rename_all = "kebab-case")]
pub enum ActionResult {
    Done(String),
    /// Its re-check failed: the target changed since it was examined.
    Dropped(String),
    Failed(String),
    /// Not sent (dry run, write budget, an earlier step of its group did not complete).
    NotAttempted(String),
}

impl ActionResult {
    pub fn is_done(&self) -> bool {
        matches!(self, ActionResult::Done(_))
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ActionRecord {
    pub description: String,
    pub action: Action,
    pub result: ActionResult,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct GroupRecord {
    pub subject: String,
    pub candidate: Option<String>,
    /// This pass was cleared to apply it (it holds what the group needs, and the ledger still
    /// says what the decision saw).
    pub cleared: bool,
    /// Every action done.
    pub completed: bool,
    pub actions: Vec<ActionRecord>,
}

/// What applying did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ApplyReport {
    pub dry_run: bool,
    pub lease_held: bool,
    pub lease_refusal: Option<String>,
    /// Candidates whose outcome this pass recorded.
    pub recorded: Vec<String>,
    /// Commit messages of the ledger writes made.
    pub ledger_writes: Vec<String>,
    pub groups: Vec<GroupRecord>,
    pub resumed: Vec<String>,
    pub refused_resumes: Vec<(String, String)>,
    pub claims_released: Vec<String>,
    /// The write budget stopped the pass before the end of the plan.
    pub budget_reached: bool,
    /// The last ledger write failed (the lease stays until this run is seen finished).
    pub final_write_error: Option<String>,
}

/// Applies `plan`; an error means the first ledger write failed and nothing was changed.
pub async fn apply_plan(
    plan: &RecoveryPlan,
    connection: &GitHubConnection,
    store: &LedgerStore<'_>,
    loaded: LoadedLedger,
    settings: &ApplySettings,
) -> Result<ApplyReport, LedgerError> {
    let mut report = ApplyReport {
        dry_run: settings.dry_run,
        ..ApplyReport::default()
    };
    if settings.dry_run {
        let (_, grants, message) = decide_first_write(&loaded.ledger, plan, &settings.write);
        report
            .ledger_writes
            .push(format!("(dry run, not written) {message}"));
        note_grants(&mut report, &grants);
        report.groups = plan
            .groups
            .iter()
            .zip(&grants.groups_cleared)
            .map(|(group, cleared)| {
                let reason = if *cleared {
                    "dry run: not sent".to_string()
                } else {
                    format!("dry run: {}", refusal(group, &grants))
                };
                GroupRecord {
                    cleared: *cleared,
                    ..not_attempted(group, &reason)
                }
            })
            .collect();
        return Ok(report);
    }

    let first = store
        .update_starting_from(Some(loaded), |ledger| {
            let (next, grants, message) = decide_first_write(ledger, plan, &settings.write);
            match next {
                Some(ledger) => LedgerDecision::Write {
                    ledger,
                    message: message.clone(),
                    result: (grants, message),
                },
                None => LedgerDecision::Keep((grants, message)),
            }
        })
        .await?;
    let (grants, message) = first.result.clone();
    if first.wrote {
        report.ledger_writes.push(message);
    }
    note_grants(&mut report, &grants);

    // Candidates' cleanup comes first; legacy lock refs get what their actions leave.
    let available = connection
        .client
        .writes_left()
        .saturating_sub(LEDGER_WRITE_RESERVE);
    let candidate_writes: u64 = plan
        .groups
        .iter()
        .zip(&grants.groups_cleared)
        .filter(|(group, cleared)| **cleared && !group.independent)
        .map(|(group, _)| group.writes())
        .sum();
    let allowance = Allowance::new(available.min(candidate_writes));
    let lock_allowance = Allowance::new(available.saturating_sub(candidate_writes));
    let runner = Runner::new(connection, settings, &allowance, &lock_allowance);
    report.groups = runner.apply_groups(plan, &grants).await;
    report.budget_reached = allowance.exhausted() || lock_allowance.exhausted();

    let failed_resumes: Vec<ResumeRecord> = grants
        .resumed
        .iter()
        .filter(|resume| {
            !report.groups.iter().any(|group| {
                group.candidate.as_deref() == Some(resume.candidate.as_str())
                    && group.actions.iter().any(|record| {
                        matches!(record.action, Action::DispatchCandidate { .. })
                            && record.result.is_done()
                    })
            })
        })
        .cloned()
        .collect();
    let releases: Vec<_> = if grants.lease_held {
        plan.ledger
            .claim_releases
            .iter()
            .filter(|release| {
                release.after_group.is_none_or(|index| {
                    report
                        .groups
                        .get(index)
                        .is_some_and(|group| group.completed)
                })
            })
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    if grants.lease_held || !failed_resumes.is_empty() {
        let own_run = settings.write.own_run;
        let start = LoadedLedger {
            ledger: first.ledger.clone(),
            blob_sha: first.blob_sha.clone(),
        };
        let last = store
            .update_starting_from(Some(start), |ledger| {
                match decide_second_write(ledger, own_run, &releases, &failed_resumes) {
                    (Some(next), message) => LedgerDecision::Write {
                        ledger: next,
                        message: message.clone(),
                        result: message,
                    },
                    (None, message) => LedgerDecision::Keep(message),
                }
            })
            .await;
        match last {
            Ok(update) => {
                if update.wrote {
                    report.ledger_writes.push(update.result);
                }
                report.claims_released = releases
                    .iter()
                    .map(|release| release.candidate.clone())
                    .filter(|candidate| {
                        !update
                            .ledger
                            .claims
                            .iter()
                            .any(|claim| &claim.candidate == candidate)
                    })
                    .collect();
            }
            Err(error) => report.final_write_error = Some(bounded(&error.to_string(), 300)),
        }
        report.resumed.retain(|candidate| {
            !failed_resumes
                .iter()
                .any(|resume| &resume.candidate == candidate)
        });
        for resume in &failed_resumes {
            report.refused_resumes.push((
                resume.candidate.clone(),
                "its workflow could not be dispatched: parked again".into(),
            ));
        }
    }
    Ok(report)
}

fn note_grants(report: &mut ApplyReport, grants: &PassGrants) {
    report.lease_held = grants.lease_held;
    report.recorded = grants.recorded.iter().cloned().collect();
    report.lease_refusal = grants.lease_refusal.clone();
    report.resumed = grants
        .resumed
        .iter()
        .map(|resume| resume.candidate.clone())
        .collect();
    report.refused_resumes = grants.refused_resumes.clone();
}

/// Why a group is not applied.
fn refusal(group: &ActionGroup, grants: &PassGrants) -> String {
    if group.destructive && !grants.lease_held {
        return grants
            .lease_refusal
            .clone()
            .unwrap_or_else(|| "this pass does not hold the recovery lease".into());
    }
    match &group.ledger_expectation {
        LedgerExpectation::NoOpenSession => {
            "the ledger now has an open session for it: decided again next pass".into()
        }
        LedgerExpectation::FinishedByThisPass { parent_run } => format!(
            "the ledger no longer has its live session of parent run {parent_run}: decided again next pass"
        ),
        LedgerExpectation::ResumedByThisPass => "not resumed: see the ledger".into(),
        LedgerExpectation::Nothing => "not cleared".into(),
    }
}

fn not_attempted(group: &ActionGroup, reason: &str) -> GroupRecord {
    GroupRecord {
        subject: group.subject.clone(),
        candidate: group.candidate.clone(),
        cleared: false,
        completed: false,
        actions: group
            .actions
            .iter()
            .map(|action| ActionRecord {
                description: action.to_string(),
                action: action.clone(),
                result: ActionResult::NotAttempted(reason.to_string()),
            })
            .collect(),
    }
}

/// The record of a group from its per-action results (`None`: not sent).
fn record(group: &ActionGroup, results: Vec<Option<ActionResult>>) -> GroupRecord {
    let mut stopped: Option<String> = None;
    let actions: Vec<ActionRecord> = group
        .actions
        .iter()
        .zip(results)
        .map(|(action, result)| {
            let result = match result {
                Some(result) => result,
                None => ActionResult::NotAttempted(stopped.clone().unwrap_or_else(|| {
                    "not sent: an earlier step of its group did not complete".into()
                })),
            };
            if !result.is_done() && stopped.is_none() && !group.independent {
                stopped = Some(format!(
                    "not sent: '{action}' did not complete ({})",
                    describe_result(&result)
                ));
            }
            ActionRecord {
                description: action.to_string(),
                action: action.clone(),
                result,
            }
        })
        .collect();
    GroupRecord {
        subject: group.subject.clone(),
        candidate: group.candidate.clone(),
        cleared: true,
        completed: actions.iter().all(|record| record.result.is_done()),
        actions,
    }
}

fn describe_result(result: &ActionResult) -> String {
    match result {
        ActionResult::Done(detail) => detail.clone(),
        ActionResult::Dropped(reason) => format!("dropped: {reason}"),
        ActionResult::Failed(error) => format!("failed: {error}"),
        ActionResult::NotAttempted(reason) => reason.clone(),
    }
}
