//! `recover` (contract §3.4, §4, §5): reconcile sessions whose parent run ended, sweep abandoned
//! work without touching anything a maintainer touched, keep one status label per klaud pull
//! request, release claims, delete legacy lock refs, resume parked sessions under the cap and
//! look after validated pull requests (contract §12: after-care sessions started in the room
//! left, superseded pull requests closed).
//!
//! gather the snapshot (`shell::gather`) → `core::recover` decides → the plan is printed →
//! `recover/apply.rs` writes the ledger around the one executor (`shell::execute`; a dry run
//! goes through it with writes recorded, not sent) → outputs, `recover.json` and the step
//! summary.

pub mod apply;

use std::fmt::Write as _;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::StepContext;
use crate::adapters::github::writes::RecordedWrite;
use crate::adapters::ledger_store::LedgerStore;
use crate::core::plan::Action;
use crate::core::policy::Policy;
use crate::core::recover::ledger_plan::WriteSettings;
use crate::core::recover::{AftercareDecided, RecoveryContext, RecoveryPlan, Verdict, recover};
use crate::core::status::{StatusFacts, status_report};
use crate::shell::cli::RecoverArgs;
use crate::shell::dashboard::{DashboardReport, klaud_pull_requests, write_dashboard};
use crate::shell::error::StepError;
use crate::shell::execute::{ActionResult, Effect, RefDeletionPath};
use crate::shell::gather::gather_recovery_facts;
use crate::shell::github::{GitHubConnection, RequestReport, connect};
use crate::shell::modes::status::repository_url;
use crate::shell::outputs::{Reporter, markdown_table};
use apply::{ApplyReport, ApplySettings, apply_plan};

/// Objects a pass may ask about to examine leftover candidate branches (their pull requests,
/// who closed them, their commits) and legacy lock refs whose run is only named in their commit;
/// later passes continue. They are read in batches (`adapters::github::batch`), so this many
/// cost a handful of requests.
pub const INSPECTIONS_PER_PASS: usize = 200;

/// The step outputs of `recover`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct RecoverOutputs {
    /// JSON array of the candidates whose ended session this pass recorded an outcome for.
    pub reconciled: Vec<String>,
    /// JSON array of the abandoned candidates this pass cleaned up.
    pub swept: Vec<String>,
    /// JSON array of the candidates left alone (handed off, ready, a maintainer's commit, …).
    pub left_alone: Vec<String>,
    /// JSON array of the candidates a maintainer may be acting on: nothing of them was touched.
    pub needs_inspection: Vec<String>,
    /// JSON array of the parked candidates this pass started again.
    pub resumed: Vec<String>,
    /// Legacy lock refs and leftover candidate branches this pass deleted.
    pub refs_deleted: usize,
    /// After-care sessions (refresh or repair) this pass started on validated pull requests.
    pub aftercare_started: usize,
    /// JSON object: the GitHub requests of this pass (`reads`, `writes`, `retries`, `waited-ms`)
    /// and its budgets (`max-operations`, `max-reads`).
    pub requests: RequestReport,
}

/// What one pass needs besides its clients and the policy.
#[derive(Debug, Clone)]
pub struct PassSettings {
    /// This run's id: the lease owner.
    pub own_run: u64,
    pub now: DateTime<Utc>,
    pub inspections: usize,
    /// `<server>/<owner>/<name>` when the pass keeps the dashboard (`--dashboard`).
    pub dashboard_url: Option<String>,
}

/// What one pass decided and did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct PassReport {
    pub plan: RecoveryPlan,
    pub applied: ApplyReport,
    /// What became of the dashboard, when the pass keeps it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dashboard: Option<DashboardReport>,
    pub requests: RequestReport,
    /// In a dry run, every write the pass would have sent (method, path, body), in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dry_run_writes: Vec<RecordedWrite>,
}

impl PassReport {
    /// Candidates with a verdict. Reconciled and swept ones count only when this pass recorded
    /// the outcome or was cleared to apply the cleanup (in a dry run: what it would do); a pass
    /// without the lease leaves them to the pass that holds it.
    pub fn candidates_with(&self, verdict: Verdict) -> Vec<String> {
        let applied = &self.applied;
        self.plan
            .candidates
            .iter()
            .filter(|report| report.verdict == verdict)
            .filter(|report| match verdict {
                Verdict::Reconciled | Verdict::Swept if !applied.dry_run => {
                    applied.recorded.contains(&report.candidate)
                        || report
                            .group
                            .and_then(|index| applied.groups.get(index))
                            .is_some_and(|group| group.cleared)
                }
                _ => true,
            })
            .map(|report| report.candidate.clone())
            .collect()
    }

    /// Refs this pass deleted (legacy lock refs and leftover branches).
    pub fn refs_deleted(&self) -> usize {
        self.applied
            .groups
            .iter()
            .flat_map(|group| &group.actions)
            .filter(|record| {
                matches!(
                    record.action,
                    Action::DeleteLockRef { .. } | Action::DeleteBranch { .. }
                ) && record.result == ActionResult::Done(Effect::Deleted)
            })
            .count()
    }
}

/// One recovery pass: snapshot → plan → apply. An error means the ledger could not be read or
/// its first write failed: nothing was changed on GitHub.
pub async fn run_pass(
    connection: &GitHubConnection,
    policy: &Policy,
    settings: &PassSettings,
) -> Result<PassReport, String> {
    let store = LedgerStore::new(&connection.client, &policy.state_branch);
    let context = RecoveryContext {
        own_run: settings.own_run,
        now: settings.now,
        inspections: settings.inspections,
    };
    let gathered = gather_recovery_facts(
        &connection.client,
        &store,
        policy,
        &context,
        settings.dashboard_url.is_some(),
    )
    .await
    .map_err(|error| format!("the ledger could not be read: {error}"))?;
    let mut plan = recover(&gathered.snapshot, policy, &context);
    let mut dashboard_read = gathered.dashboard;
    if let Some(read) = &dashboard_read {
        plan.ledger.steering = read.changes();
    }
    let apply_settings = ApplySettings {
        write: WriteSettings {
            own_run: settings.own_run,
            now: settings.now,
            max_live: policy.max_candidates,
            prune_after: policy.longest_cooldown(),
        },
        bot: policy.bot.clone(),
    };
    let open_pull_requests = klaud_pull_requests(&gathered.snapshot.open_pull_requests, policy);
    let applied = apply_plan(&plan, connection, &store, gathered.loaded, &apply_settings)
        .await
        .map_err(|error| {
            format!("the ledger could not be written, nothing was changed: {error}")
        })?;
    let health = gathered.health.unwrap_or_default();
    let dashboard = match (&mut dashboard_read, &settings.dashboard_url) {
        (Some(read), Some(url)) => {
            if !applied.steering_applied {
                read.not_acted_on("this pass did not hold the recovery lease");
            }
            let ledger = &applied.final_ledger;
            let report = status_report(
                StatusFacts {
                    ledger,
                    ledger_found: true,
                    pull_requests: &open_pull_requests,
                    repository: connection.client.repository(),
                    health: health.facts(policy),
                },
                policy,
                settings.now,
            );
            Some(
                write_dashboard(connection, policy, read, ledger, &report, url, settings.now).await,
            )
        }
        _ => None,
    };
    Ok(PassReport {
        plan,
        applied,
        dashboard,
        requests: connection.report(),
        dry_run_writes: connection.recorded_writes(),
    })
}

pub async fn run(context: &StepContext, arguments: &RecoverArgs) -> Result<(), StepError> {
    let reporter = &context.reporter;
    let own_run = match context.environment.github_run_id.as_deref() {
        Some(text) => text.trim().parse::<u64>().map_err(|_| {
            StepError::bad_input("GITHUB_RUN_ID", format!("'{text}' is not a run id"))
        })?,
        None if context.dry_run => 0,
        None => {
            return Err(StepError::bad_input(
                "GITHUB_RUN_ID",
                "recover needs the id of the run it belongs to: it is the owner of the recovery lease",
            ));
        }
    };
    let connection = connect(context, &arguments.github)?;
    let settings = PassSettings {
        own_run,
        now: Utc::now(),
        inspections: INSPECTIONS_PER_PASS,
        dashboard_url: arguments
            .dashboard
            .then(|| repository_url(context, connection.client.repository())),
    };
    reporter.info(&format!(
        "recover for {} as run {own_run}{}",
        connection.client.repository(),
        if context.dry_run {
            " (dry run: nothing is written)"
        } else {
            ""
        }
    ));
    let report = run_pass(&connection, &context.policy, &settings)
        .await
        .map_err(StepError::failed)?;
    print_plan(reporter, &report.plan);
    print_results(reporter, &report.applied);
    if let Some(dashboard) = &report.dashboard {
        for tick in &dashboard.ticks {
            reporter.info(&format!("dashboard: {tick}"));
        }
        reporter.info(&format!("recover: {}", dashboard.describe()));
    }
    for skipped in &report.plan.skipped {
        reporter.warning(skipped);
    }
    write_record(&context.directory, &report)?;
    let outputs = RecoverOutputs {
        reconciled: report.candidates_with(Verdict::Reconciled),
        swept: report.candidates_with(Verdict::Swept),
        left_alone: report.candidates_with(Verdict::LeftAlone),
        needs_inspection: report.candidates_with(Verdict::NeedsInspection),
        resumed: report.applied.resumed.clone(),
        refs_deleted: report.refs_deleted(),
        aftercare_started: report.applied.aftercare_started.len(),
        requests: report.requests,
    };
    reporter
        .write_outputs(&outputs)
        .map_err(|error| StepError::failed(format!("cannot write step outputs: {error}")))?;
    reporter
        .write_summary(&summary(&report, context.dry_run))
        .map_err(|error| StepError::failed(format!("cannot write the step summary: {error}")))?;
    if let Some(error) = &report.applied.final_write_error {
        return Err(StepError::failed(format!(
            "the last ledger write failed ({error}); the recovery lease stays with run {own_run} until that run is seen finished"
        )));
    }
    Ok(())
}

fn print_plan(reporter: &Reporter, plan: &RecoveryPlan) {
    reporter.begin_group("recovery plan");
    reporter.info(&plan.ledger.lease.describe());
    for report in &plan.candidates {
        let pull = report
            .pull_request
            .map(|number| format!(" #{number}"))
            .unwrap_or_default();
        reporter.info(&format!(
            "{}{pull}: {} — {}",
            report.candidate,
            report.verdict.name(),
            report.reason
        ));
        if let Some(group) = report.group.and_then(|index| plan.groups.get(index)) {
            for (step, action) in group.actions.iter().enumerate() {
                reporter.info(&format!("  {}. {action}", step + 1));
            }
        }
    }
    for aftercare in &plan.aftercare {
        let line = format!(
            "after-care #{} ({}): {} — {}",
            aftercare.pull_request,
            aftercare.candidate,
            aftercare_decided_name(aftercare.decided),
            aftercare.reason
        );
        match aftercare.decided {
            // Said once: the pass that leaves it for good.
            AftercareDecided::Left => reporter.warning(&line),
            _ => reporter.info(&line),
        }
    }
    let refs = &plan.refs;
    reporter.info(&format!(
        "legacy lock refs: {} to delete, {} of running runs, {} kept; leftover branches: {} to delete, {} kept; {} not examined this pass",
        refs.lock_refs_to_delete,
        refs.lock_refs_of_running_runs,
        refs.lock_refs_kept,
        refs.branches_to_delete,
        refs.branches_kept,
        refs.deferred
    ));
    for note in &refs.notes {
        reporter.info(&format!("  {note}"));
    }
    reporter.end_group();
}

fn print_results(reporter: &Reporter, applied: &ApplyReport) {
    reporter.begin_group(if applied.dry_run {
        "dry run: nothing written"
    } else {
        "applied"
    });
    for write in &applied.ledger_writes {
        reporter.info(&format!("ledger: {write}"));
    }
    let mut lock_refs = (0, 0);
    for group in &applied.groups {
        for record in &group.actions {
            if matches!(record.action, Action::DeleteLockRef { .. }) {
                lock_refs.0 += usize::from(record.result.is_done());
                lock_refs.1 += 1;
                if record.result.is_done() {
                    continue;
                }
            }
            let line = format!(
                "{}: {} — {}",
                group.subject,
                record.description,
                result_text(&record.result)
            );
            match &record.result {
                ActionResult::Failed(_) => reporter.warning(&line),
                _ => reporter.info(&line),
            }
        }
    }
    if lock_refs.1 > 0 {
        reporter.info(&format!(
            "legacy lock refs: {} of {} deleted",
            lock_refs.0, lock_refs.1
        ));
    }
    if let Some(refusal) = &applied.lease_refusal {
        reporter.warning(refusal);
    }
    for (candidate, why) in &applied.refused_resumes {
        reporter.info(&format!("{candidate}: not resumed — {why}"));
    }
    for (candidate, why) in &applied.refused_starts {
        reporter.info(&format!(
            "{candidate}: no after-care session started — {why}"
        ));
    }
    if applied.budget_reached {
        reporter.warning(
            "the write budget (max-operations) of this pass is used: the next pass continues",
        );
    }
    if let RefDeletionPath::RestFallback(reason) = &applied.ref_deletions {
        reporter.warning(&rest_fallback_note(reason));
    }
    reporter.end_group();
}

/// The decision's one spelling (its serde name).
fn aftercare_decided_name(decided: AftercareDecided) -> String {
    serde_json::to_value(decided)
        .ok()
        .and_then(|value| value.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The after-care pull requests as a Markdown table, when there are any.
fn aftercare_section(report: &PassReport) -> String {
    let plan = &report.plan;
    if plan.aftercare.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<String>> = plan
        .aftercare
        .iter()
        .map(|aftercare| {
            vec![
                format!("#{}", aftercare.pull_request),
                aftercare.candidate.clone(),
                aftercare_decided_name(aftercare.decided),
                aftercare.reason.clone(),
            ]
        })
        .collect();
    let mut text = format!(
        "\n#### After-care: {} started\n\n",
        report.applied.aftercare_started.len()
    );
    text.push_str(&markdown_table(
        &["pull request", "candidate", "decided", "why"],
        &rows,
    ));
    for (candidate, why) in &report.applied.refused_starts {
        let _ = writeln!(text, "- {candidate}: no after-care session started — {why}");
    }
    text
}

fn result_text(result: &ActionResult) -> String {
    result.describe()
}

/// The writes a dry run would have sent, as a Markdown section.
pub fn dry_run_writes_section(writes: &[RecordedWrite]) -> String {
    let mut text = format!(
        "\n#### The {} write request{} a real pass would send\n\n",
        writes.len(),
        if writes.len() == 1 { "" } else { "s" }
    );
    for write in writes.iter().take(100) {
        let _ = writeln!(text, "- `{} {}`", write.method, write.path);
    }
    if writes.len() > 100 {
        let _ = writeln!(text, "- … and {} more", writes.len() - 100);
    }
    text
}

/// Said once per pass when refs were deleted by REST.
pub fn rest_fallback_note(reason: &str) -> String {
    format!(
        "GitHub does not offer updateRefs here ({reason}): refs were deleted by REST after a fresh listing, so a push landing between that listing and the delete could be lost"
    )
}

fn write_record(directory: &Path, report: &PassReport) -> Result<(), StepError> {
    std::fs::create_dir_all(directory).map_err(|error| {
        StepError::failed(format!("cannot create {}: {error}", directory.display()))
    })?;
    let path = directory.join("recover.json");
    let text = serde_json::to_string_pretty(report).expect("the report serializes");
    std::fs::write(&path, text + "\n")
        .map_err(|error| StepError::failed(format!("cannot write {}: {error}", path.display())))
}

fn summary(report: &PassReport, dry_run: bool) -> String {
    let plan = &report.plan;
    let count = |verdict| report.candidates_with(verdict).len();
    let mut text = format!(
        "### klaud recover{}: {} reconciled, {} swept, {} left alone, {} need inspection, {} resumed, {} live, {} parked\n\n",
        if dry_run { " (dry run)" } else { "" },
        count(Verdict::Reconciled),
        count(Verdict::Swept),
        count(Verdict::LeftAlone),
        count(Verdict::NeedsInspection),
        report.applied.resumed.len(),
        count(Verdict::Live),
        count(Verdict::Parked),
    );
    let _ = writeln!(text, "- {}", plan.ledger.lease.describe());
    if let Some(refusal) = &report.applied.lease_refusal {
        let _ = writeln!(text, "- {refusal}");
    }
    for skipped in &plan.skipped {
        let _ = writeln!(text, "- **skipped**: {skipped}");
    }
    if report.applied.budget_reached {
        let _ = writeln!(
            text,
            "- the write budget (max-operations) was used up: the next pass continues"
        );
    }
    if let RefDeletionPath::RestFallback(reason) = &report.applied.ref_deletions {
        let _ = writeln!(text, "- {}", rest_fallback_note(reason));
    }
    text.push('\n');
    let rows: Vec<Vec<String>> = plan
        .candidates
        .iter()
        .map(|candidate| {
            let actions = candidate
                .group
                .and_then(|index| report.applied.groups.get(index))
                .map(|group| {
                    group
                        .actions
                        .iter()
                        .map(|record| {
                            format!("{}: {}", record.description, result_text(&record.result))
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .unwrap_or_default();
            vec![
                candidate.candidate.clone(),
                candidate
                    .pull_request
                    .map(|number| format!("#{number}"))
                    .unwrap_or_default(),
                candidate.verdict.name().to_string(),
                candidate
                    .outcome
                    .map(|outcome| outcome.to_string())
                    .unwrap_or_default(),
                candidate.reason.clone(),
                actions,
            ]
        })
        .collect();
    if !rows.is_empty() {
        text.push_str(&markdown_table(
            &[
                "candidate",
                "pull request",
                "verdict",
                "outcome",
                "why",
                "actions",
            ],
            &rows,
        ));
        text.push('\n');
    }
    text.push_str(&aftercare_section(report));
    let refs = &plan.refs;
    let _ = writeln!(
        text,
        "Legacy lock refs: {} planned for deletion, {} of running runs kept, {} kept otherwise. Leftover candidate branches: {} planned for deletion, {} kept. {} not examined this pass. Deleted: {}.",
        refs.lock_refs_to_delete,
        refs.lock_refs_of_running_runs,
        refs.lock_refs_kept,
        refs.branches_to_delete,
        refs.branches_kept,
        refs.deferred,
        report.refs_deleted(),
    );
    for write in &report.applied.ledger_writes {
        let _ = writeln!(text, "\nLedger: {write}");
    }
    if dry_run {
        text.push_str(&dry_run_writes_section(&report.dry_run_writes));
    }
    let _ = writeln!(text, "\n{}", report.requests.summary_line());
    text
}
