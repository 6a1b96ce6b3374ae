//! Applying a recovery plan: the ledger writes around the one executor (`shell::execute`).
//!
//! 1. The first ledger write (compare-and-swap, re-decided on the fresh document on conflict)
//!    takes the recovery lease, records outcomes and moves resumed sessions to live; it says
//!    which action groups are still cleared.
//! 2. The cleared groups go to the executor, which re-checks each target just before it changes
//!    and keeps writes for the last ledger write.
//! 3. The last ledger write releases the claims of candidates whose cleanup completed, parks
//!    again sessions whose run could not be started, takes back the after-care sessions whose
//!    run could not be started (session, claim and count), and releases the lease.
//!
//! A dry run goes through the same steps with a connection that records its writes.

use serde::Serialize;

use crate::adapters::ledger_store::{LedgerDecision, LedgerError, LedgerStore, LoadedLedger};
use crate::core::ledger::{Ledger, PassRecord};
use crate::core::plan::{Action, ActionGroup, LedgerExpectation};
use crate::core::recover::RecoveryPlan;
use crate::core::recover::aftercare::ledger::AftercareStart;
use crate::core::recover::ledger_plan::{
    PassGrants, ResumeRecord, WriteSettings, decide_first_write, decide_second_write,
};
use crate::core::text::bounded;
use crate::shell::execute::{Clearance, ExecuteSettings, GroupRecord, RefDeletionPath, execute};
use crate::shell::github::GitHubConnection;

/// Writes kept back for the last ledger write (and one compare-and-swap retry).
const LEDGER_WRITE_RESERVE: u64 = 2;

/// How to apply.
#[derive(Debug, Clone)]
pub struct ApplySettings {
    pub write: WriteSettings,
    /// The bot's login (the actor of the runs it dispatches).
    pub bot: String,
}

/// What applying did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ApplyReport {
    /// The writes were recorded, not sent.
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
    /// Candidates whose after-care session this pass started (its workflow dispatched).
    pub aftercare_started: Vec<String>,
    /// After-care starts refused, or taken back because their workflow could not be
    /// dispatched, with why.
    pub refused_starts: Vec<(String, String)>,
    pub claims_released: Vec<String>,
    /// The write budget stopped the pass before the end of the plan.
    pub budget_reached: bool,
    /// How refs were deleted (conditionally, or by REST because `updateRefs` is unavailable).
    pub ref_deletions: RefDeletionPath,
    /// The last ledger write failed (the lease stays until this run is seen finished).
    pub final_write_error: Option<String>,
    /// The dashboard's requests went into the first ledger write.
    pub steering_applied: bool,
    /// The ledger as the pass left it (what the dashboard is rendered from).
    #[serde(skip)]
    pub final_ledger: Ledger,
}

/// Applies `plan`; an error means the first ledger write failed and nothing was changed.
pub async fn apply_plan(
    plan: &RecoveryPlan,
    connection: &GitHubConnection,
    store: &LedgerStore<'_>,
    loaded: LoadedLedger,
    settings: &ApplySettings,
) -> Result<ApplyReport, LedgerError> {
    let dry_run = connection.client.records_writes();
    let mut report = ApplyReport {
        dry_run,
        ..ApplyReport::default()
    };
    let said = |message: String| {
        if dry_run {
            format!("(dry run, not written) {message}")
        } else {
            message
        }
    };
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
        report.ledger_writes.push(said(message));
    }
    note_grants(&mut report, &grants);
    report.final_ledger = first.ledger.clone();

    let clearances: Vec<Clearance> = plan
        .groups
        .iter()
        .zip(&grants.groups_cleared)
        .map(|(group, cleared)| match cleared {
            true => Clearance::Cleared,
            false => Clearance::Refused(refusal(group, &grants)),
        })
        .collect();
    let execution = execute(
        connection,
        &ExecuteSettings {
            bot: settings.bot.clone(),
            now: settings.write.now,
            cancel_wait: std::time::Duration::ZERO,
            reserve: LEDGER_WRITE_RESERVE,
        },
        &plan.groups,
        &clearances,
    )
    .await;
    report.groups = execution.groups;
    report.budget_reached = execution.budget_reached;
    report.ref_deletions = execution.ref_deletions;

    let dispatched = |candidate: &str| {
        report.groups.iter().any(|group| {
            group.candidate.as_deref() == Some(candidate)
                && group.actions.iter().any(|record| {
                    matches!(record.action, Action::DispatchCandidate { .. })
                        && record.result.is_done()
                })
        })
    };
    let failed_resumes: Vec<ResumeRecord> = grants
        .resumed
        .iter()
        .filter(|resume| !dispatched(&resume.candidate))
        .cloned()
        .collect();
    let failed_starts: Vec<AftercareStart> = grants
        .aftercare_started
        .iter()
        .filter(|start| !dispatched(&start.candidate))
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
    if grants.lease_held || !failed_resumes.is_empty() || !failed_starts.is_empty() {
        let own_run = settings.write.own_run;
        let pass = grants
            .lease_held
            .then(|| pass_record(&report, connection, &settings.write));
        let start = LoadedLedger {
            ledger: first.ledger.clone(),
            blob_sha: first.blob_sha.clone(),
        };
        let last = store
            .update_starting_from(Some(start), |ledger| {
                match decide_second_write(
                    ledger,
                    own_run,
                    &releases,
                    (&failed_resumes, &failed_starts),
                    pass.as_ref(),
                ) {
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
                report.final_ledger = update.ledger.clone();
                if update.wrote {
                    report.ledger_writes.push(said(update.result));
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
        report
            .aftercare_started
            .retain(|candidate| !failed_starts.iter().any(|s| &s.candidate == candidate));
        for start in &failed_starts {
            report.refused_starts.push((
                start.candidate.clone(),
                format!(
                    "its workflow could not be dispatched: the {} session of #{} is taken back",
                    start.kind,
                    start.pull_request()
                ),
            ));
        }
    }
    Ok(report)
}

/// The pass as the ledger remembers it for the dashboard: what it changed and the requests it
/// sent up to its last ledger write.
fn pass_record(
    report: &ApplyReport,
    connection: &GitHubConnection,
    write: &WriteSettings,
) -> PassRecord {
    let counts = connection.client.request_counts();
    let done = report
        .groups
        .iter()
        .flat_map(|group| &group.actions)
        .filter(|record| record.result.is_done())
        .count();
    let mut said = vec![format!("{done} changes on GitHub")];
    if !report.recorded.is_empty() {
        said.push(format!("{} outcomes recorded", report.recorded.len()));
    }
    if !report.resumed.is_empty() {
        said.push(format!("{} resumed", report.resumed.len()));
    }
    if !report.aftercare_started.is_empty() {
        said.push(format!(
            "{} after-care sessions started",
            report.aftercare_started.len()
        ));
    }
    if report.steering_applied {
        said.push("the dashboard's requests applied".to_string());
    }
    PassRecord {
        mode: "recover".to_string(),
        run: write.own_run,
        at: write.now,
        reads: counts.reads,
        // The last ledger write itself.
        writes: counts.writes + 1,
        summary: said.join(", "),
    }
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
    report.aftercare_started = grants
        .aftercare_started
        .iter()
        .map(|start| start.candidate.clone())
        .collect();
    report.refused_starts = grants.refused_starts.clone();
    report.steering_applied = grants.steering_applied;
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
        LedgerExpectation::AftercareStartedByThisPass => {
            "its after-care session was not started: see the ledger".into()
        }
        LedgerExpectation::Nothing => "not cleared".into(),
    }
}
