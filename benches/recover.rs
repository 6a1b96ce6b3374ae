//! Requests and wall time of one `recover` pass on the standard scenario (`BENCH-SCENARIO.md`)
//! at 0 ms and 100 ms of server latency: the whole pass (snapshot, plan, apply with the default
//! write budget of 100, both ledger writes), in process against the fake GitHub. A second row
//! per latency is the next pass on the state the first one left (what a steady repository costs),
//! and the last column counts what the reference design's documented algorithm would read on
//! the same state. The notes give the process's peak RSS during each first pass (reset right
//! before it) and its RSS before the pass; the fake GitHub lives in this process too.
//!
//! A second table runs the real `klaud recover` binary as a child process against the fake
//! GitHub (which stays in this process) on a fresh scenario per latency, generated around the real
//! clock that the binary reads: klaud's own peak RSS, requests and wall time of one standalone
//! first pass.
//!
//! A third table prices after-care (contract §12): the first pass at 0 ms with after-care off
//! and on, first with nothing in after-care (the goal: at most 2 reads more), then with every
//! validated pull request of the scenario that is still open watched.
//!
//! Run with `cargo bench --bench recover`.

#![allow(clippy::disallowed_methods)] // a benchmark spawns the binary and passes PATH on

use klaud_fake_github as fake_github;
mod support;

use support::child::{self, ChildCost};
use support::{standard_scenario, time};

use std::path::Path;
use std::time::{Duration, Instant};

use chrono::Utc;

use fake_github::scenario;
use fake_github::{FakeGitHubHandle, PullState, Timestamp};
use klaud::adapters::github::{GitHubClient, GitHubSettings};
use klaud::core::ledger::Ledger;
use klaud::core::outcome::Outcome;
use klaud::core::policy::{AftercareSettings, Policy, RefreshWhen, RepairWhen};
use klaud::shell::config::Config;
use klaud::shell::github::GitHubConnection;
use klaud::shell::modes::recover::{INSPECTIONS_PER_PASS, PassReport, PassSettings, run_pass};

const SEED: u64 = 42;
const NOW: Timestamp = Timestamp(1_796_040_000); // 2026-11-30T12:00:00Z
/// The planner run this pass belongs to (not one of the scenario's).
const OWN_RUN: u64 = 99_000_000_001;

fn policy() -> Policy {
    let config = Config {
        bot: scenario::BOT.into(),
        ..Config::default()
    };
    config.policy(5, 1.0)
}

/// The policy with after-care off: no event starts a session and nothing is superseded.
fn policy_without_aftercare() -> Policy {
    let config = Config {
        bot: scenario::BOT.into(),
        aftercare: AftercareSettings {
            refresh: RefreshWhen::Never,
            repair: RepairWhen::Never,
            supersede: false,
            ..AftercareSettings::default()
        },
        ..Config::default()
    };
    config.policy(5, 1.0)
}

fn connection(server: &FakeGitHubHandle) -> GitHubConnection {
    let settings = GitHubSettings::new(
        &server.base_url(),
        &server.graphql_url(),
        scenario::BOT_TOKEN,
        "acme/bench",
    );
    let client = GitHubClient::new(&settings).expect("valid settings");
    let label_client = client
        .with_token(scenario::LABEL_TOKEN)
        .expect("valid settings");
    GitHubConnection::new(
        client,
        label_client,
        settings.max_writes,
        settings.max_reads,
    )
}

fn settings() -> PassSettings {
    PassSettings {
        own_run: OWN_RUN,
        now: time(NOW),
        inspections: INSPECTIONS_PER_PASS,
        dashboard_url: None,
    }
}

async fn pass(server: &FakeGitHubHandle) -> (PassReport, Duration) {
    pass_with(server, &policy()).await
}

async fn pass_with(server: &FakeGitHubHandle, policy: &Policy) -> (PassReport, Duration) {
    let connection = connection(server);
    let settings = settings();
    let started = Instant::now();
    let report = run_pass(&connection, policy, &settings)
        .await
        .expect("the pass runs");
    (report, started.elapsed())
}

/// Every validated session's pull request that is still open, watched in the ledger since a day
/// ago at its head (as `finish` records it); how many.
fn watch_validated(server: &FakeGitHubHandle) -> usize {
    server.with_state(|state| {
        let text = state
            .read_file(scenario::STATE_BRANCH, "ledger.json")
            .expect("the scenario's ledger");
        let mut ledger = Ledger::from_json(&text).expect("a valid ledger");
        let validated: Vec<(String, String, u64)> = ledger
            .sessions
            .iter()
            .filter(|session| session.outcome == Some(Outcome::Validated))
            .filter_map(|session| {
                let number = session.pull_request?;
                Some((session.candidate.clone(), session.family.clone(), number))
            })
            .collect();
        for (candidate, family, number) in validated {
            let Some(head) = state
                .pulls
                .get(&number)
                .filter(|pull| pull.state == PullState::Open)
                .map(|pull| pull.head_sha.clone())
            else {
                continue;
            };
            ledger.record_validated(
                &candidate,
                &family,
                number,
                Some(&head),
                time(NOW.minus(86_400)),
            );
        }
        state.put_file(scenario::STATE_BRANCH, "ledger.json", &ledger.to_json());
        ledger.aftercare.len()
    })
}

/// The first pass at 0 ms with after-care off and on: with nothing in after-care (the goal is
/// at most 2 reads more) and with the scenario's validated pull requests watched.
async fn aftercare_costs() {
    println!();
    println!("after-care: the first pass at 0 ms, standard scenario, seed {SEED}");
    println!("| ledger | after-care | reads | writes | after-care decisions |");
    println!("|---|---|---|---|---|");
    let mut reads = Vec::new();
    for watched in [false, true] {
        for (setting, policy) in [("off", policy_without_aftercare()), ("on", policy())] {
            let server = scenario_server(0);
            let records = if watched { watch_validated(&server) } else { 0 };
            let (report, _) = pass_with(&server, &policy).await;
            let counts = report.requests.counts;
            let mut decided: std::collections::BTreeMap<String, usize> = Default::default();
            for aftercare in &report.plan.aftercare {
                let name = serde_json::to_value(aftercare.decided).expect("a name");
                *decided
                    .entry(name.as_str().unwrap_or("?").to_string())
                    .or_default() += 1;
            }
            let decided: Vec<String> = decided.iter().map(|(k, n)| format!("{n} {k}")).collect();
            println!(
                "| {records} watched | {setting} | {} | {} | {} |",
                counts.reads,
                counts.writes,
                if decided.is_empty() {
                    "-".to_string()
                } else {
                    decided.join(", ")
                }
            );
            reads.push(counts.reads);
        }
    }
    let more = reads[1].saturating_sub(reads[0]);
    println!();
    println!(
        "- nothing in after-care: {more} reads more with after-care on (goal: at most 2): {}",
        if more <= 2 { "met" } else { "NOT met" }
    );
    println!(
        "- with the validated pull requests watched: {} reads more with after-care on",
        reads[3] as i64 - reads[2] as i64
    );
}

/// What the reference design reads on this state: planner runs of ~10 days (filtered by a
/// created window, 100 per page) and one artifact listing per run for cooldowns, each claim
/// ref's commit, each ownership artifact of a live session, smoke runs per parent, plus the
/// open pull requests and refs.
fn reference_reads(server: &FakeGitHubHandle) -> u64 {
    server.with_state(|state| {
        let ten_days_ago = NOW.minus(10 * 86_400);
        let planner = state
            .workflow_by_key(scenario::PLANNER_WORKFLOW)
            .map(|w| w.id);
        let planner_runs = state
            .runs
            .values()
            .filter(|run| Some(run.workflow_id) == planner && run.created_at >= ten_days_ago)
            .count() as u64;
        let claim_refs = state
            .refs
            .keys()
            .filter(|name| name.starts_with("refs/heads/klaud/claim-"))
            .count() as u64;
        let open = state
            .pulls
            .values()
            .filter(|pull| pull.state == PullState::Open)
            .count() as u64;
        let live_parents = 2;
        planner_runs.div_ceil(100)
            + planner_runs
            + claim_refs
            + 8
            + live_parents
            + open.div_ceil(100)
            + 1
    })
}

/// A `kB` field of `/proc/self/status` (`VmRSS`, `VmHWM`), in KiB; 0 where there is none.
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Resets this process's peak RSS (`VmHWM`) to its current RSS (Linux: `clear_refs` 5); false
/// where that is not possible.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn row(name: &str, latency_ms: u64, report: &PassReport, wall: Duration, reference: Option<u64>) {
    let counts = report.requests.counts;
    let plan = &report.plan;
    let count = |verdict| {
        plan.candidates
            .iter()
            .filter(|c| c.verdict == verdict)
            .count()
    };
    println!(
        "| {name} | {latency_ms} ms | {} | {} | {:.2} s | {} swept, {} reconciled, {} need inspection, {} live, {} parked, {} refs deleted | {} |",
        counts.reads,
        counts.writes,
        wall.as_secs_f64(),
        count(klaud::core::recover::Verdict::Swept),
        count(klaud::core::recover::Verdict::Reconciled),
        count(klaud::core::recover::Verdict::NeedsInspection),
        count(klaud::core::recover::Verdict::Live),
        count(klaud::core::recover::Verdict::Parked),
        report.refs_deleted(),
        reference
            .map(|reads| reads.to_string())
            .unwrap_or_else(|| "-".into()),
    );
}

/// The first pass's requests by kind, for the note.
fn breakdown(server: &FakeGitHubHandle) -> String {
    let mut kinds: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for request in server.request_log() {
        let path = request.path.as_str();
        let operation = request.graphql();
        let kind = match (request.method.as_str(), path) {
            ("POST", "/graphql") => match operation {
                Some(operation) if operation.mutation && operation.fields == ["updateRefs"] => {
                    "updateRefs (ref deletions)"
                }
                Some(operation) if operation.mutation => "graphql mutation",
                _ => "graphql detail read",
            },
            (_, p) if p.contains("/contents/ledger.json") => "ledger",
            ("GET", p) if p.contains("/pulls?") => "pull request listing",
            ("GET", p) if p.contains("/commits") => "commits",
            ("GET", p) if p.contains("/pulls/") || p.contains("/issues/") => "pull request / issue",
            ("GET", p) if p.contains("/matching-refs/") || p.contains("/git/ref/") => "refs",
            ("GET", p) if p.contains("/jobs") => "jobs",
            ("GET", p) if p.contains("/actions/") => "runs",
            ("GET", _) => "other reads",
            ("POST", p) if p.contains("/cancel") => "cancel",
            (_, p) if p.contains("/labels") => "labels",
            ("PATCH", p) if p.contains("/pulls/") => "close",
            ("DELETE", p) if p.contains("/git/refs/heads/klaud/auto-") => "delete branch",
            ("DELETE", p) if p.contains("/git/refs/") => "delete lock ref",
            _ => "other writes",
        };
        *kinds.entry(kind).or_default() += 1;
    }
    kinds
        .iter()
        .map(|(kind, count)| format!("{kind} {count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One standalone first pass of the real binary (`klaud recover`) on a fresh scenario generated
/// around the real clock; returns its cost, the server for its request counts and its outputs.
fn standalone_pass(latency_ms: u64) -> (ChildCost, FakeGitHubHandle, String) {
    let (server, _) = standard_scenario(SEED, Timestamp(Utc::now().timestamp()), latency_ms);
    let work = tempfile::tempdir().expect("a temporary directory");
    let config = work.path().join("klaud.yml");
    std::fs::write(&config, format!("bot: {}\n", scenario::BOT)).expect("config written");
    let output_file = work.path().join("github-output");
    let mut command = child::intermediary(Path::new(env!("CARGO_BIN_EXE_klaud")));
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GITHUB_API_URL", server.base_url())
        .env("GITHUB_GRAPHQL_URL", server.graphql_url())
        .env("GITHUB_REPOSITORY", "acme/bench")
        .env("GITHUB_RUN_ID", OWN_RUN.to_string())
        .env("GITHUB_RUN_ATTEMPT", "1")
        .env("GITHUB_TOKEN", scenario::BOT_TOKEN)
        .env("KLAUD_LABEL_TOKEN", scenario::LABEL_TOKEN)
        .env("GITHUB_OUTPUT", &output_file)
        .env("GITHUB_STEP_SUMMARY", work.path().join("step-summary"))
        .arg("recover")
        .arg("--directory")
        .arg(work.path().join("out"))
        .arg("--config")
        .arg(&config);
    let cost = child::measure(&mut command);
    assert_eq!(cost.exit_code, 0, "klaud recover failed");
    let outputs = std::fs::read_to_string(&output_file).expect("the step outputs");
    (cost, server, outputs)
}

/// The value of `name=` in a `$GITHUB_OUTPUT` file.
fn output<'a>(outputs: &'a str, name: &str) -> &'a str {
    outputs
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or("?")
}

fn main() {
    if child::serve_as_intermediary() {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    runtime.block_on(in_process());
    runtime.block_on(aftercare_costs());

    println!();
    println!(
        "standard scenario, seed {SEED}, generated around the real clock; klaud recover (real \
         binary, a child process) against the fake GitHub; max-operations 100"
    );
    println!(
        "| latency | reads | writes | wall | peak RSS | swept | needs inspection | refs deleted |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for latency_ms in [0, 100] {
        let (cost, server, outputs) = standalone_pass(latency_ms);
        let counts = server.request_counts();
        println!(
            "| {latency_ms} ms | {} | {} | {:.2} s | {:.1} MiB | {} | {} | {} |",
            counts.reads,
            counts.writes,
            cost.wall.as_secs_f64(),
            cost.peak_rss_kib as f64 / 1024.0,
            output(&outputs, "swept"),
            output(&outputs, "needs-inspection"),
            output(&outputs, "refs-deleted"),
        );
    }
}

/// The passes run in this process, with the notes.
async fn in_process() {
    println!("standard scenario, seed {SEED}; fake GitHub on 127.0.0.1; max-operations 100");
    println!("| pass | latency | reads | writes | wall | what it did | reference design reads |");
    println!("|---|---|---|---|---|---|---|");
    let mut notes = Vec::new();
    for latency_ms in [0, 100] {
        let server = scenario_server(latency_ms);
        let reference = reference_reads(&server);
        let before_kib = status_kib("VmRSS");
        let reset = reset_peak_rss();
        let (first, wall) = pass(&server).await;
        let peak_kib = status_kib("VmHWM");
        row("first pass", latency_ms, &first, wall, Some(reference));
        if reset {
            notes.push(format!(
                "peak RSS during the first pass at {latency_ms} ms: {:.1} MiB for the whole bench \
                 process (the fake GitHub with the scenario included), {:.1} MiB resident just \
                 before the pass, so the pass added {:.1} MiB",
                peak_kib as f64 / 1024.0,
                before_kib as f64 / 1024.0,
                peak_kib.saturating_sub(before_kib) as f64 / 1024.0
            ));
        }
        notes.push(format!(
            "first pass at {latency_ms} ms: {}",
            breakdown(&server)
        ));
        // Later passes clear what is left (nothing, when the first pass could delete every ref
        // conditionally); the last row is a pass with nothing left to do.
        for number in 2..=30 {
            server.clear_request_log();
            let (report, wall) = pass(&server).await;
            let quiet = report.requests.counts.writes == 0;
            if number == 2 || quiet {
                let name = if quiet {
                    format!("pass {number} (nothing left)")
                } else {
                    format!("pass {number}")
                };
                row(&name, latency_ms, &report, wall, None);
            }
            if quiet {
                notes.push(format!(
                    "pass {number} at {latency_ms} ms: {}",
                    breakdown(&server)
                ));
                break;
            }
        }
    }
    for latency_ms in [0, 100] {
        // The same first pass as a dry run, and on a GitHub without `updateRefs`.
        let dry_server = scenario_server(latency_ms);
        let connection = connection(&dry_server).recording();
        let started = Instant::now();
        let dry = run_pass(&connection, &policy(), &settings())
            .await
            .expect("the pass runs");
        row(
            "first pass, dry run",
            latency_ms,
            &dry,
            started.elapsed(),
            None,
        );
        notes.push(format!(
            "dry run at {latency_ms} ms: {} writes listed, {} sent",
            dry.dry_run_writes.len(),
            dry_server
                .request_log()
                .iter()
                .filter(|request| request.is_write())
                .count()
        ));
        let rest_server = scenario_server(latency_ms);
        rest_server.set_update_refs_available(false);
        let (rest, wall) = pass(&rest_server).await;
        row("first pass, REST fallback", latency_ms, &rest, wall, None);
        notes.push(format!(
            "first pass on the REST fallback at {latency_ms} ms: {}",
            breakdown(&rest_server)
        ));
    }
    println!();
    for note in notes {
        println!("- {note}");
    }
}

/// A fresh standard scenario on its own fake GitHub with `latency_ms` per request.
fn scenario_server(latency_ms: u64) -> FakeGitHubHandle {
    standard_scenario(SEED, NOW, latency_ms).0
}
