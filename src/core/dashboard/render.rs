//! The dashboard's body, rendered from the ledger (through the status report) and this pass's
//! verdicts on the ticks: GitHub-flavoured Markdown within GitHub's 65,536-character body
//! limit, long sections cut with a count of what was left out.
//!
//! The rendering depends on nothing but its inputs (times are absolute, never "3 hours ago"),
//! so a pass that finds nothing new renders the body it finds and writes nothing. Every name
//! from outside (candidate, family, account) is shown in a code span, so none can format,
//! link or mention anything.

mod aftercare;

use std::collections::BTreeSet;

use chrono::{DateTime, SecondsFormat, Utc};

use super::checkbox::{BoxKey, RenderedBox};
use super::ticks::{JudgedTick, TickVerdict};
use crate::core::cooldown::CooldownScope;
use crate::core::github_state::Mergeable;
use crate::core::health::{Health, HealthReport, PullRequestHealth};
use crate::core::ledger::Ledger;
use crate::core::status::StatusReport;
use crate::core::steering::IgnoredTick;

/// GitHub's limit on an issue body, in characters.
pub const BODY_LIMIT: usize = 65_536;
/// Rows a section shows before the body needs cutting.
const MOST_ROWS: usize = 200;
/// The first line of every dashboard body: what makes it recognizable as klaud's rendering.
pub const BODY_MARKER: &str = "<!-- klaud:dashboard -->";

/// Everything the body is rendered from.
#[derive(Debug, Clone, Copy)]
pub struct DashboardView<'a> {
    pub report: &'a StatusReport,
    pub ledger: &'a Ledger,
    /// `https://github.com/owner/name`, for links to runs.
    pub repository_url: &'a str,
    /// This pass's verdicts on the changed boxes.
    pub ticks: &'a [JudgedTick],
    /// Issues with the dashboard label that someone else wrote (number, author).
    pub others: &'a [(u64, String)],
}

/// One part of the body: a heading, lines before the rows, and rows (table rows under a
/// header, or list items) that may be cut.
struct Section {
    heading: String,
    intro: Vec<String>,
    header: Vec<String>,
    rows: Vec<String>,
    /// Shown instead of the rows when there are none.
    empty: Option<String>,
}

impl Section {
    fn new(heading: impl Into<String>) -> Self {
        Section {
            heading: heading.into(),
            intro: Vec::new(),
            header: Vec::new(),
            rows: Vec::new(),
            empty: None,
        }
    }

    fn render(&self, most_rows: usize, out: &mut String) {
        out.push_str(&format!("\n## {}\n\n", self.heading));
        for line in &self.intro {
            out.push_str(line);
            out.push('\n');
        }
        if self.rows.is_empty() {
            if let Some(empty) = &self.empty {
                out.push_str(empty);
                out.push('\n');
            }
            return;
        }
        if !self.intro.is_empty() {
            out.push('\n');
        }
        for line in &self.header {
            out.push_str(line);
            out.push('\n');
        }
        for row in self.rows.iter().take(most_rows) {
            out.push_str(row);
            out.push('\n');
        }
        let left_out = self.rows.len().saturating_sub(most_rows);
        if left_out > 0 {
            out.push_str(&format!("\n_… and {left_out} more not shown._\n"));
        }
    }
}

/// The body for `view`.
pub fn render(view: &DashboardView<'_>) -> String {
    let sections = sections(view);
    let mut most_rows = MOST_ROWS;
    loop {
        let body = assemble(view, &sections, most_rows);
        if body.chars().count() <= BODY_LIMIT || most_rows == 0 {
            return body;
        }
        most_rows = most_rows * 3 / 4;
    }
}

fn assemble(view: &DashboardView<'_>, sections: &[Section], most_rows: usize) -> String {
    let report = view.report;
    let mut out = String::new();
    out.push_str(BODY_MARKER);
    out.push_str("\n# klaud dashboard\n\n");
    out.push_str(&format!(
        "Rewritten by klaud from the ledger on {} of {}. Tick a box to steer klaud: \
         the next recovery pass acts on ticks by accounts with write, maintain or admin \
         permission and clears the others, naming who made them.\n",
        code(&report.state_branch),
        code(&report.repository)
    ));
    for section in sections {
        section.render(most_rows, &mut out);
    }
    out
}

fn sections(view: &DashboardView<'_>) -> Vec<Section> {
    let placed = placed_keys(view);
    vec![
        steering_section(view),
        sessions_section(view),
        pull_requests_section(view),
        aftercare::aftercare_section(view),
        resume_section(view),
        cooldowns_section(view),
        selection_section(view),
        cost_section(view),
        requests_section(view, &placed),
    ]
}

/// How a box is drawn: ticked as klaud renders it, or as the person left it when its tick
/// waits for a later pass.
fn drawn(view: &DashboardView<'_>, key: BoxKey, rendered_ticked: bool, label: String) -> String {
    let waiting = view
        .ticks
        .iter()
        .find(|tick| tick.key == key && tick.verdict.keeps_tick());
    RenderedBox {
        key,
        rendered_ticked,
        shown_ticked: waiting.map_or(rendered_ticked, |tick| tick.ticked),
        label,
    }
    .line()
}

fn steering_section(view: &DashboardView<'_>) -> Section {
    let steering = &view.ledger.steering;
    let mut section = Section::new("Steering");
    let state = match &steering.paused {
        Some(pause) => format!(
            "**Paused** by {} since {}: no session starts and none is resumed. Untick to go on.",
            code(&pause.by),
            time(pause.at)
        ),
        None => {
            "Running. Tick to pause: no session starts and none is resumed while it stays ticked."
                .to_string()
        }
    };
    section.rows.push(drawn(
        view,
        BoxKey::Pause,
        steering.is_paused(),
        format!("pause — {state}"),
    ));
    section
}

fn sessions_section(view: &DashboardView<'_>) -> Section {
    let report = view.report;
    let mut section = Section::new(format!(
        "Sessions: {} live, {} parked, cap {}",
        report.live_sessions, report.parked_sessions, report.max_candidates
    ));
    section.empty = Some("No live or parked session.".to_string());
    section.header = vec![
        "| candidate | family | state | pull request | started | attempts | run |".to_string(),
        "|---|---|---|---|---|---|---|".to_string(),
    ];
    for session in &report.sessions {
        let pull = session
            .pull_request
            .map_or("—".to_string(), |number| format!("#{number}"));
        section.rows.push(format!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            cell(&session.candidate),
            cell(&session.family),
            session.state,
            pull,
            time(session.started_at),
            session.attempts,
            run_link(view.repository_url, session.parent_run)
        ));
    }
    section
}

/// Failed check names shown in a pull request's line before the rest are counted.
const FAILED_NAMES_SHOWN: usize = 3;

/// Every open klaud pull request on one line: *almost ready* first (soonest first), then by
/// health, newest first in each (contract §12).
fn pull_requests_section(view: &DashboardView<'_>) -> Section {
    let health = &view.report.health;
    let mut section = Section::new(format!(
        "Pull requests: {} open",
        health.pull_requests.len()
    ));
    if !health.pull_requests.is_empty() {
        section.intro.push(pull_request_counts(health));
    }
    section.empty = Some("No open klaud pull request.".to_string());
    section.header = vec![
        "| pull request | candidate | health | checks | pending sweep jobs | ETA | failed |"
            .to_string(),
        "|---|---|---|---|---|---|---|".to_string(),
    ];
    let almost_ready = health.almost_ready.iter().filter_map(|number| {
        health
            .pull_requests
            .iter()
            .find(|pull| pull.number == *number)
    });
    let others = health
        .pull_requests
        .iter()
        .filter(|pull| !health.almost_ready.contains(&pull.number));
    for pull in almost_ready {
        section.rows.push(pull_request_line(view, pull, true));
    }
    for pull in others {
        section.rows.push(pull_request_line(view, pull, false));
    }
    section
}

/// How many pull requests have each health, and the queue they wait in.
fn pull_request_counts(health: &HealthReport) -> String {
    let counts: Vec<String> = Health::ALL
        .iter()
        .filter_map(|kind| {
            let count = health
                .pull_requests
                .iter()
                .filter(|pull| pull.health == *kind)
                .count();
            (count > 0).then(|| format!("{count} {}", kind.name()))
        })
        .collect();
    let pools: Vec<String> = health
        .pools
        .iter()
        .map(|pool| {
            format!(
                "{} {} pending on {} runners, {:.1} min a job",
                code(&pool.pool),
                pool.pending,
                pool.runners,
                pool.job_minutes
            )
        })
        .collect();
    let mut line = format!(
        "{}; {} almost ready.",
        counts.join(", "),
        health.almost_ready.len()
    );
    if !pools.is_empty() {
        line.push_str(&format!(" Queue: {}.", pools.join("; ")));
    }
    if health.sweep_runs_read < health.sweep_runs_active {
        line.push_str(&format!(
            " {} of {} active sweep runs read: estimates past them are partial (≥).",
            health.sweep_runs_read, health.sweep_runs_active
        ));
    }
    line
}

fn pull_request_line(view: &DashboardView<'_>, pull: &PullRequestHealth, almost: bool) -> String {
    let mut state = pull.health.name().to_string();
    if almost {
        state.push_str(", almost ready");
    }
    if pull.conflicting {
        state.push_str(", conflicting");
    }
    if pull.behind {
        state.push_str(", behind");
    }
    if pull.mergeable == Mergeable::Unknown {
        state.push_str(", mergeability unknown");
    }
    if pull.draft {
        state.push_str(", draft");
    }
    let checks = match pull.checks.is_empty() {
        true => "—".to_string(),
        false => pull
            .checks
            .iter()
            .map(|(word, count)| format!("{count} {}", word.to_ascii_lowercase()))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let pending = match pull.pending.is_empty() {
        true => "—".to_string(),
        false => pull
            .pending
            .iter()
            .map(|(pool, count)| format!("{} {count}", cell(pool)))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let eta = match (pull.eta_minutes, pull.eta_partial) {
        (Some(minutes), false) => format!("~{minutes} min"),
        (Some(minutes), true) => format!("≥ ~{minutes} min"),
        (None, true) => "unknown (runs not read)".to_string(),
        (None, false) => "—".to_string(),
    };
    let mut failed: Vec<String> = pull
        .failed
        .iter()
        .take(FAILED_NAMES_SHOWN)
        .map(|check| match &check.url {
            Some(url) if url.starts_with("https://") && !url.contains([')', ' ', '|']) => {
                format!("[{}]({url})", text(&check.name))
            }
            _ => cell(&check.name),
        })
        .collect();
    if pull.failed.len() > FAILED_NAMES_SHOWN {
        failed.push(format!("+{} more", pull.failed.len() - FAILED_NAMES_SHOWN));
    }
    format!(
        "| [#{number}]({url}/pull/{number}) | {} | {state} | {checks} | {pending} | {eta} | {} |",
        cell(&pull.candidate),
        match failed.is_empty() {
            true => "—".to_string(),
            false => failed.join(", "),
        },
        number = pull.number,
        url = view.repository_url,
    )
}

/// A `resume now` box per parked session.
fn resume_section(view: &DashboardView<'_>) -> Section {
    let mut section = Section::new("Parked sessions");
    section.empty = Some("No session is parked.".to_string());
    for session in view.report.sessions.iter().filter(|s| s.state == "parked") {
        let label = match view.ledger.steering.resume_first.get(&session.candidate) {
            Some(mark) => format!(
                "resume {} now — first in line (asked by {})",
                code(&session.candidate),
                code(&mark.by)
            ),
            None => format!("resume {} now", code(&session.candidate)),
        };
        section.rows.push(drawn(
            view,
            BoxKey::ResumeNow(session.candidate.clone()),
            false,
            label,
        ));
    }
    section
}

fn cooldowns_section(view: &DashboardView<'_>) -> Section {
    let mut section = Section::new("Cooldowns and family holds");
    section.empty = Some("No cooldown is running.".to_string());
    let mut shown_holds = BTreeSet::new();
    for cooldown in &view.report.cooldowns {
        let (key, what) = if cooldown.holds == CooldownScope::Family.name() {
            if !shown_holds.insert(cooldown.family.clone()) {
                continue;
            }
            (
                BoxKey::ReleaseHold(cooldown.family.clone()),
                format!(
                    "release the hold on family {} — `{}` of {} holds it until {}",
                    code(&cooldown.family),
                    cooldown.outcome,
                    code(&cooldown.candidate),
                    time(cooldown.until)
                ),
            )
        } else {
            (
                BoxKey::RetryNow(cooldown.candidate.clone()),
                format!(
                    "retry {} now — `{}` at {}, cooling down until {}",
                    code(&cooldown.candidate),
                    cooldown.outcome,
                    time(cooldown.finished_at),
                    time(cooldown.until)
                ),
            )
        };
        section.rows.push(drawn(view, key, false, what));
    }
    section
}

fn selection_section(view: &DashboardView<'_>) -> Section {
    let mut section = Section::new("Last selection that claimed");
    let Some(selection) = &view.ledger.last_selection else {
        section.empty = Some("No selection has claimed a candidate yet.".to_string());
        return section;
    };
    section.intro.push(format!(
        "{} at {}: started {}.",
        run_link(view.repository_url, selection.run),
        time(selection.at),
        if selection.selected.is_empty() {
            "nothing".to_string()
        } else {
            selection
                .selected
                .iter()
                .map(|candidate| code(candidate))
                .collect::<Vec<_>>()
                .join(", ")
        }
    ));
    section.empty = Some("Nothing was held back.".to_string());
    section.header = vec![
        "| candidate | held back | why |".to_string(),
        "|---|---|---|".to_string(),
    ];
    for deferral in &selection.deferred {
        section.rows.push(format!(
            "| {} | `{}` | {} |",
            cell(&deferral.candidate),
            deferral.code,
            text(&deferral.message)
        ));
    }
    section
}

fn cost_section(view: &DashboardView<'_>) -> Section {
    let cost = &view.report.cost;
    let mut section = Section::new(format!("Cost and outcomes, last {} days", cost.days));
    let budget = match cost.daily_budget_usd {
        Some(budget) => format!(
            "; last 24 hours {} of the daily budget of {}",
            usd(cost.last_24_hours_usd),
            usd(budget)
        ),
        None => format!(
            "; last 24 hours {}, no daily budget",
            usd(cost.last_24_hours_usd)
        ),
    };
    section.intro.push(format!(
        "{} over {} agent runs with a recorded cost{budget}.",
        usd(cost.total_usd),
        cost.attempts_with_cost
    ));
    section.empty = Some("No session in the window.".to_string());
    section.header = vec![
        "| outcome | sessions | cost |".to_string(),
        "|---|---|---|".to_string(),
    ];
    for outcome in &cost.per_outcome {
        section.rows.push(format!(
            "| {} | {} | {} |",
            cell(&outcome.outcome),
            outcome.sessions,
            usd(outcome.cost_usd)
        ));
    }
    section
}

fn requests_section(view: &DashboardView<'_>, placed: &BTreeSet<BoxKey>) -> Section {
    let ledger = view.ledger;
    let mut section = Section::new("Requests");
    match ledger.passes.last() {
        Some(pass) => section.intro.push(format!(
            "Last pass that changed anything: `{}` {} at {}, {} reads and {} writes: {}.",
            pass.mode,
            run_link(view.repository_url, pass.run),
            time(pass.at),
            pass.reads,
            pass.writes,
            text(&pass.summary)
        )),
        None => section
            .intro
            .push("No pass has changed anything yet.".to_string()),
    }
    for (number, author) in view.others {
        section.intro.push(format!(
            "\nIssue #{number} carries the dashboard label but was written by {}: klaud never edits it and its boxes steer nothing.",
            code(author)
        ));
    }
    // A waiting tick whose box no section draws any more is kept here, so the rewrite does not
    // lose it; why it waits is in the pass's log and summary, not here, so that passes that see
    // it differently (`status` acts on no tick) render the same body.
    let mut rows: Vec<String> = view
        .ticks
        .iter()
        .filter(|tick| tick.verdict.keeps_tick() && !placed.contains(&tick.key))
        .map(|tick| {
            RenderedBox {
                key: tick.key.clone(),
                rendered_ticked: !tick.ticked,
                shown_ticked: tick.ticked,
                label: format!(
                    "{} — waiting for a recovery pass that can act on it",
                    text(&tick.key.request(tick.ticked).to_string())
                ),
            }
            .line()
        })
        .collect();
    let mut ignored: Vec<&IgnoredTick> = ledger.steering.ignored.iter().collect();
    ignored.extend(view.ticks.iter().filter_map(|tick| match &tick.verdict {
        TickVerdict::Ignored(ignored) if !ledger.steering.ignored.contains(ignored) => {
            Some(ignored)
        }
        _ => None,
    }));
    let ignored = ignored.into_iter().map(|tick| {
        format!(
            "- Ignored: {} ticked by {} (permission `{}`) at {}: only write, maintain or admin counts.",
            text(&tick.request.to_string()),
            code(&tick.by),
            tick.permission,
            time(tick.edited_at)
        )
    });
    rows.extend(ignored);
    rows.extend(ledger.steering.audit.iter().rev().map(|entry| {
        format!(
            "- Acted on: {} asked by {} (edit of {}), by {} at {}.",
            text(&entry.request.to_string()),
            code(&entry.by),
            time(entry.edited_at),
            run_link(view.repository_url, entry.run),
            time(entry.acted_at)
        )
    }));
    section.rows = rows;
    section
}

/// The boxes the regular sections draw (a waiting tick of any other box is kept in the
/// requests section, so the rewrite does not lose it).
fn placed_keys(view: &DashboardView<'_>) -> BTreeSet<BoxKey> {
    let report = view.report;
    let mut keys = BTreeSet::from([BoxKey::Pause]);
    keys.extend(
        report
            .sessions
            .iter()
            .filter(|session| session.state == "parked")
            .map(|session| BoxKey::ResumeNow(session.candidate.clone())),
    );
    keys.extend(report.cooldowns.iter().map(|cooldown| {
        if cooldown.holds == CooldownScope::Family.name() {
            BoxKey::ReleaseHold(cooldown.family.clone())
        } else {
            BoxKey::RetryNow(cooldown.candidate.clone())
        }
    }));
    keys.extend(aftercare::aftercare_keys(view));
    keys
}

fn time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn usd(amount: f64) -> String {
    format!("${amount:.2}")
}

fn run_link(repository_url: &str, run: u64) -> String {
    format!("[run {run}]({repository_url}/actions/runs/{run})")
}

/// `name` as an inert code span on one line (outside tables).
fn code(name: &str) -> String {
    code_span(name, false)
}

/// `name` as an inert code span inside a table cell (a `|` escaped, as GFM tables need even in
/// code spans).
pub fn cell(name: &str) -> String {
    code_span(name, true)
}

fn code_span(name: &str, in_table: bool) -> String {
    if name.is_empty() {
        return "—".to_string();
    }
    let one_line: String = name
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let one_line = if in_table {
        one_line.replace('|', "\\|")
    } else {
        one_line
    };
    let longest_run = one_line
        .split(|c| c != '`')
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest_run + 1);
    if one_line.starts_with('`') || one_line.ends_with('`') || longest_run > 0 {
        format!("{fence} {one_line} {fence}")
    } else {
        format!("{fence}{one_line}{fence}")
    }
}

/// klaud's own sentence (it may quote names): on one line, with what Markdown or GitHub would
/// act on escaped.
fn text(sentence: &str) -> String {
    let mut out = String::with_capacity(sentence.len());
    for c in sentence.chars() {
        match c {
            c if c.is_control() => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|' | '~' | '!' | '&' => {
                out.push('\\');
                out.push(c);
            }
            // A zero-width space after `@` keeps GitHub from reading a mention.
            '@' => out.push_str("@\u{200B}"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_inert_code_spans() {
        assert_eq!(code("c-1"), "`c-1`");
        assert_eq!(code("a`b"), "`` a`b ``");
        assert_eq!(cell("a|b"), "`a\\|b`");
        assert_eq!(code("x\ny"), "`x y`");
        assert_eq!(text("@team <b>"), "@\u{200B}team \\<b\\>");
    }
}
