//! `status` (contract §3.7): the ledger and the live sessions, read-only.
//!
//! Reads as: the ledger and klaud's open pull requests (concurrently; the branches under the
//! prefix, then the open pull requests on them) → `core::status` → the report:
//! `status.json` in the work directory, the `live-sessions` output, and either a Markdown
//! summary (inside GitHub Actions) or a text rendering for a terminal (`klaud status` run by
//! hand). A ledger that cannot be read fails the step; open pull requests that cannot all be
//! listed are reported as unknown and the ledger is still shown.

use std::fmt::Write as _;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use super::StepContext;
use super::work_files::write_json_file;
use crate::adapters::ledger_store::LedgerStore;
use crate::core::github_state::Mergeable;
use crate::core::snapshot::Listed;
use crate::core::status::{KlaudPullRequest, StatusFacts, StatusReport, status_report};
use crate::shell::cli::StatusArgs;
use crate::shell::dashboard::{DashboardReport, TickReading, read_dashboard, write_dashboard};
use crate::shell::error::StepError;
use crate::shell::github::{RequestReport, connect};
use crate::shell::health::read_health;
use crate::shell::outputs::markdown_table;

/// `status.json`: the report, and what became of the dashboard when it was kept.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
struct StatusFile<'a> {
    #[serde(flatten)]
    report: &'a StatusReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    dashboard: Option<&'a DashboardReport>,
}

/// `<server>/<owner>/<name>`, for links in the dashboard.
pub fn repository_url(context: &StepContext, repository: &str) -> String {
    let server = context
        .environment
        .github_server_url
        .as_deref()
        .unwrap_or("https://github.com")
        .trim_end_matches('/');
    format!("{server}/{repository}")
}

/// The step outputs of `status`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct StatusOutputs {
    /// Sessions live in the ledger (those counting against `max-candidates`).
    pub live_sessions: usize,
    /// JSON object: the GitHub requests of this step and its budgets.
    pub requests: RequestReport,
}

pub async fn run(context: &StepContext, arguments: &StatusArgs) -> Result<(), StepError> {
    let reporter = &context.reporter;
    let connection = connect(context, &arguments.github)?;
    let client = &connection.client;
    let policy = &context.policy;
    let store = LedgerStore::new(client, &policy.state_branch);
    let (loaded, (open, health)) = tokio::join!(store.load(), read_health(client, policy));
    let loaded = loaded.map_err(|error| {
        StepError::failed(format!(
            "the ledger on {} could not be read: {error}",
            policy.state_branch
        ))
    })?;
    if let Some(gap) = &open.pulls.gap {
        reporter.warning(&format!(
            "status: klaud's open pull requests could not all be listed, so they are not shown: {gap}"
        ));
    }
    let pull_requests = Listed {
        items: open
            .pulls
            .items
            .iter()
            .filter_map(|pull| {
                let head_repository = pull.head.repo.as_ref().map(|repo| repo.full_name.as_str());
                let candidate = policy.candidate_of_pull_request(
                    head_repository,
                    &pull.head.branch,
                    client.repository(),
                )?;
                Some(KlaudPullRequest {
                    number: pull.number,
                    candidate: candidate.to_string(),
                    draft: pull.draft,
                    labels: pull.labels.iter().map(|label| label.name.clone()).collect(),
                })
            })
            .collect(),
        gap: open
            .pulls
            .gap
            .clone()
            .map(|gap| format!("klaud's open pull requests could not all be listed: {gap}")),
    };
    let facts = StatusFacts {
        ledger: &loaded.ledger,
        ledger_found: loaded.blob_sha.is_some(),
        pull_requests: &pull_requests,
        repository: client.repository(),
        health: health.facts(policy),
    };
    let now = Utc::now();
    let report = status_report(facts, policy, now);
    let dashboard = if arguments.dashboard {
        let read = read_dashboard(client, policy, &loaded.ledger, TickReading::Keep).await;
        let written = write_dashboard(
            &connection,
            policy,
            &read,
            &loaded.ledger,
            &report,
            &repository_url(context, client.repository()),
            now,
        )
        .await;
        reporter.info(&format!("status: {}", written.describe()));
        Some(written)
    } else {
        None
    };
    let path = write_json_file(
        &context.directory,
        "status.json",
        &StatusFile {
            report: &report,
            dashboard: dashboard.as_ref(),
        },
    )?;
    reporter.info(&format!(
        "status: {} live and {} parked session(s) of a cap of {}; wrote {}",
        report.live_sessions,
        report.parked_sessions,
        report.max_candidates,
        path.display()
    ));
    let requests = connection.report();
    let outputs = StatusOutputs {
        live_sessions: report.live_sessions,
        requests,
    };
    reporter
        .write_outputs(&outputs)
        .map_err(|error| StepError::failed(format!("cannot write step outputs: {error}")))?;
    let mut rendering = if context.environment.in_github_actions {
        markdown(&report, &requests)
    } else {
        terminal_text(&report)
    };
    if let Some(dashboard) = &dashboard {
        rendering.push_str(&format!("\n{}\n", dashboard.describe()));
    }
    reporter
        .write_summary(&rendering)
        .map_err(|error| StepError::failed(format!("cannot write the step summary: {error}")))?;
    Ok(())
}

fn time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The headline both renderings share.
fn headline(report: &StatusReport) -> String {
    let ledger = if report.ledger_found {
        format!("ledger.json on {}", report.state_branch)
    } else {
        format!("no ledger on {} yet", report.state_branch)
    };
    let lease = match &report.recovery_lease {
        Some(lease) => format!(
            "recovery lease held by run {} since {}",
            lease.owner_run,
            time(lease.taken_at)
        ),
        None => "recovery lease free".to_string(),
    };
    format!(
        "{}: {} live and {} parked session(s), cap {} (room for {}); {}; {}",
        report.repository,
        report.live_sessions,
        report.parked_sessions,
        report.max_candidates,
        report.room,
        lease,
        ledger
    )
}

/// What the agent runs cost, both renderings share.
fn cost_line(report: &StatusReport) -> String {
    let cost = &report.cost;
    let budget = match cost.daily_budget_usd {
        Some(budget) => format!(" of a daily budget of ${budget:.2}"),
        None => ", no daily budget".to_string(),
    };
    format!(
        "agent cost over {} days: ${:.2} ({} job(s) with a recorded cost); last 24 hours: ${:.2}{budget}",
        cost.days, cost.total_usd, cost.attempts_with_cost, cost.last_24_hours_usd
    )
}

/// The tables of the report: (title, header, rows, what to say when empty).
type Section = (
    &'static str,
    Vec<&'static str>,
    Vec<Vec<String>>,
    &'static str,
);

fn sections(report: &StatusReport) -> Vec<Section> {
    let sessions = report
        .sessions
        .iter()
        .map(|session| {
            vec![
                session.candidate.clone(),
                session.family.clone(),
                session.state.clone(),
                session.parent_run.to_string(),
                time(session.started_at),
                match (session.pull_request, session.pull_request_draft) {
                    (Some(number), Some(true)) => format!("#{number} (draft)"),
                    (Some(number), _) => format!("#{number}"),
                    (None, _) => "-".to_string(),
                },
                session
                    .pending_outcome
                    .clone()
                    .unwrap_or_else(|| "-".to_string()),
            ]
        })
        .collect();
    let claims = report
        .claims
        .iter()
        .map(|claim| {
            vec![
                claim.family.clone(),
                claim.candidate.clone(),
                claim.parent_run.to_string(),
                time(claim.claimed_at),
            ]
        })
        .collect();
    let cooldowns = report
        .cooldowns
        .iter()
        .map(|cooldown| {
            vec![
                cooldown.candidate.clone(),
                cooldown.family.clone(),
                cooldown.outcome.clone(),
                time(cooldown.finished_at),
                time(cooldown.until),
                cooldown.holds.clone(),
            ]
        })
        .collect();
    let orphans = report
        .pull_requests_without_session
        .iter()
        .map(|pull| {
            vec![
                format!("#{}", pull.number),
                pull.candidate.clone(),
                if pull.draft { "draft" } else { "ready" }.to_string(),
                pull.labels.join(", "),
            ]
        })
        .collect();
    let pulls = report
        .health
        .pull_requests
        .iter()
        .map(|pull| {
            let mut health = pull.health.name().to_string();
            for (flag, on) in [
                (
                    "almost ready",
                    report.health.almost_ready.contains(&pull.number),
                ),
                ("conflicting", pull.conflicting),
                ("behind", pull.behind),
                ("mergeability unknown", pull.mergeable == Mergeable::Unknown),
                ("draft", pull.draft),
            ] {
                if on {
                    health.push_str(&format!(", {flag}"));
                }
            }
            let joined =
                |counts: &std::collections::BTreeMap<String, usize>| match counts.is_empty() {
                    true => "-".to_string(),
                    false => counts
                        .iter()
                        .map(|(word, count)| format!("{word} {count}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                };
            vec![
                format!("#{}", pull.number),
                pull.candidate.clone(),
                health,
                joined(&pull.checks),
                joined(&pull.pending),
                match (pull.eta_minutes, pull.eta_partial) {
                    (Some(minutes), false) => format!("~{minutes} min"),
                    (Some(minutes), true) => format!(">= ~{minutes} min"),
                    (None, true) => "unknown".to_string(),
                    (None, false) => "-".to_string(),
                },
                match pull.failed.is_empty() {
                    true => "-".to_string(),
                    false => pull
                        .failed
                        .iter()
                        .map(|check| check.name.clone())
                        .collect::<Vec<_>>()
                        .join(", "),
                },
                pull.aftercare
                    .as_ref()
                    .map_or("-".to_string(), ToString::to_string),
            ]
        })
        .collect();
    let per_outcome = report
        .cost
        .per_outcome
        .iter()
        .map(|row| {
            vec![
                row.outcome.clone(),
                row.sessions.to_string(),
                format!("${:.2}", row.cost_usd),
            ]
        })
        .collect();
    vec![
        (
            "Sessions",
            vec![
                "candidate",
                "family",
                "state",
                "parent run",
                "started",
                "pull request",
                "pending outcome",
            ],
            sessions,
            "no live or parked session",
        ),
        (
            "Claims",
            vec!["family", "candidate", "parent run", "claimed"],
            claims,
            "no claim",
        ),
        (
            "Cooling down",
            vec![
                "candidate",
                "family",
                "outcome",
                "finished",
                "until",
                "holds",
            ],
            cooldowns,
            "no cooldown running",
        ),
        (
            "Pull requests: health and sweep estimates",
            vec![
                "pull request",
                "candidate",
                "health",
                "checks",
                "pending sweep jobs",
                "ETA",
                "failed",
                "after-care",
            ],
            pulls,
            "no open klaud pull request",
        ),
        (
            "klaud pull requests without a session",
            vec!["pull request", "candidate", "state", "labels"],
            orphans,
            "none",
        ),
        (
            "Sessions and cost per outcome, last 7 days",
            vec!["outcome", "sessions", "cost"],
            per_outcome,
            "no session in the last 7 days",
        ),
    ]
}

/// The step summary.
fn markdown(report: &StatusReport, requests: &RequestReport) -> String {
    let mut text = format!(
        "### klaud status\n\n{}.\n\n{}.\n",
        headline(report),
        capitalized(&cost_line(report))
    );
    if let Some(reason) = &report.pull_requests_unknown {
        let _ = writeln!(text, "\nOpen pull requests unknown: {reason}.");
    }
    for (title, header, rows, empty) in sections(report) {
        let _ = write!(text, "\n#### {title}\n\n");
        if rows.is_empty() {
            let _ = writeln!(text, "{}.", capitalized(empty));
        } else {
            text.push_str(&markdown_table(&header, &rows));
        }
    }
    let _ = write!(text, "\n{}\n", requests.summary_line());
    text
}

/// The report for a person at a terminal: aligned columns, no Markdown.
fn terminal_text(report: &StatusReport) -> String {
    let mut text = format!(
        "klaud status\n{}\n{}\n",
        headline(report),
        cost_line(report)
    );
    if let Some(reason) = &report.pull_requests_unknown {
        let _ = writeln!(text, "open pull requests unknown: {reason}");
    }
    for (title, header, rows, empty) in sections(report) {
        let _ = write!(text, "\n{title}\n");
        if rows.is_empty() {
            let _ = writeln!(text, "  {empty}");
        } else {
            text.push_str(&aligned_columns(&header, &rows));
        }
    }
    text
}

fn aligned_columns(header: &[&str], rows: &[Vec<String>]) -> String {
    let clean = |cell: &str| cell.replace(['\n', '\r', '\t'], " ");
    let mut widths: Vec<usize> = header.iter().map(|title| title.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(clean(cell).chars().count());
        }
    }
    let line = |cells: Vec<String>| -> String {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        format!("  {}\n", padded.join("  ").trim_end())
    };
    let mut text = line(header.iter().map(|title| title.to_string()).collect());
    for row in rows {
        text.push_str(&line(row.iter().map(|cell| clean(cell)).collect()));
    }
    text
}

fn capitalized(text: &str) -> String {
    let mut characters = text.chars();
    match characters.next() {
        Some(first) => first.to_uppercase().chain(characters).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_columns_line_up_whatever_the_cell_widths() {
        let text = aligned_columns(
            &["candidate", "state"],
            &[
                vec!["a".into(), "live".into()],
                vec!["long-name".into(), "parked".into()],
            ],
        );
        assert_eq!(
            text,
            "  candidate  state\n  a          live\n  long-name  parked\n"
        );
    }
}
