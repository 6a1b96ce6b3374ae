//! What each mode that talks to GitHub costs on the standard scenario and on the big one
//! (`scenario_big.rs`: the same klaud state inside a repository with 10,000 open and 40,000
//! closed pull requests by people, 2,000 of their branches and 100,000 runs of other
//! workflows). Every mode runs as the real binary, a child process of a small intermediary
//! (`support::child`: its wall time and own peak RSS), against the fake GitHub in this process,
//! on a scenario generated around the real clock: `recover` (first and second pass), `select`,
//! `status`, `status --dashboard`, `prepare-review`, `discover`, `session`, `note`,
//! `check-stop`, `finish` and `wake`, at 0 ms of latency; the first `recover` pass also at
//! 100 ms. Requests are counted from the fake's request log (GraphQL queries are reads,
//! mutations writes).
//!
//! The table gives each mode's reads on both scenarios and their difference, its writes, and its
//! peak RSS and wall time on the big one; the requests whose count differs are listed under it.
//! The goals: every mode reads on the big scenario what it reads on the standard one (±3), no
//! mode's peak RSS on the big one exceeds 50 MB, and the first `recover` pass on the big one
//! takes at most 3 s at 100 ms of latency. It also prints the time to generate the big scenario
//! and this process's resident memory once the fake GitHub serves it.
//!
//! Run with `cargo bench --bench scale`.

#![allow(clippy::disallowed_methods)] // a benchmark spawns the binary and reads no configuration

use klaud_fake_github as fake_github;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use chrono::Utc;
use serde_json::json;

use fake_github::scenario::{self, ScenarioSession, SessionState};
use fake_github::{FakeGitHubHandle, LoggedRequest, RequestCounts, Timestamp};
use support::child::{self, ChildCost};
use support::{big_scenario, standard_scenario};

const SEED: u64 = 42;
/// Reads a mode may differ by between the scenarios.
const READ_TOLERANCE: i64 = 3;
const PEAK_RSS_GOAL_KIB: i64 = 50 * 1024;
const RECOVER_AT_100_MS_GOAL: Duration = Duration::from_secs(3);
/// The candidate whose live session `session`, `note`, `check-stop` and `finish` work in.
const CANDIDATE: &str = "cand-00";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Size {
    Standard,
    Big,
}

impl Size {
    /// The scenario generated around `now`, served on a fake GitHub whose clock then follows
    /// the real one (the binary reads the real clock, and what it creates, a dispatched run
    /// among them, is dated by the fake: a minute spent generating must not age it).
    fn serve(self, now: Timestamp, latency_ms: u64) -> (FakeGitHubHandle, Vec<ScenarioSession>) {
        let (server, sessions) = match self {
            Size::Standard => standard_scenario(SEED, now, latency_ms),
            Size::Big => big_scenario(SEED, now, latency_ms),
        };
        server.with_state(|state| state.now = None);
        (server, sessions)
    }
}

/// One mode's run: what it cost and what it sent.
struct Measured {
    cost: ChildCost,
    counts: RequestCounts,
    log: Vec<LoggedRequest>,
}

/// One step's files: the configuration, the work directory, outputs and summary, the
/// candidates file.
struct Step {
    root: tempfile::TempDir,
    run_id: u64,
}

impl Step {
    fn new(run_id: u64) -> Self {
        let root = tempfile::tempdir().expect("a temporary directory");
        let step = Step { root, run_id };
        step.write("klaud.yml", &format!("bot: {}\n", scenario::BOT));
        let candidates: Vec<_> = (0..60)
            .map(|index| json!({"id": scenario::candidate_id(index), "family": scenario::family_of(index)}))
            .collect();
        step.write("candidates.json", &json!(candidates).to_string());
        step
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.path().join(relative)
    }

    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path(relative);
        std::fs::write(&path, text).expect("a step file");
        path
    }

    /// `klaud <mode>` as an Actions step runs it, through the measuring intermediary.
    fn command(&self, server: &FakeGitHubHandle, mode: &str, stdin: Option<&Path>) -> Command {
        let klaud = Path::new(env!("CARGO_BIN_EXE_klaud"));
        let mut command = match stdin {
            Some(stdin) => child::intermediary_with_stdin(klaud, stdin),
            None => child::intermediary(klaud),
        };
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_API_URL", server.base_url())
            .env("GITHUB_GRAPHQL_URL", server.graphql_url())
            .env("GITHUB_REPOSITORY", "acme/bench")
            .env("GITHUB_RUN_ID", self.run_id.to_string())
            .env("GITHUB_RUN_ATTEMPT", "1")
            .env("GITHUB_TOKEN", scenario::BOT_TOKEN)
            .env("KLAUD_LABEL_TOKEN", scenario::LABEL_TOKEN)
            .env("GITHUB_OUTPUT", self.path("github-output"))
            .env("GITHUB_STEP_SUMMARY", self.path("step-summary"))
            .arg(mode)
            .arg("--directory")
            .arg(self.path("out"))
            .arg("--config")
            .arg(self.path("klaud.yml"));
        if self.path("event.json").exists() {
            command.env("GITHUB_EVENT_PATH", self.path("event.json"));
        }
        command
    }

    fn outputs(&self) -> BTreeMap<String, String> {
        let text = std::fs::read_to_string(self.path("github-output")).unwrap_or_default();
        text.lines()
            .filter_map(|line| line.split_once('='))
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }
}

/// Runs `command` against `server` and returns its cost and the requests it sent.
fn measure(server: &FakeGitHubHandle, mut command: Command, mode: &str) -> Measured {
    server.clear_request_log();
    let cost = child::measure(&mut command);
    assert_eq!(cost.exit_code, 0, "klaud {mode} exited {}", cost.exit_code);
    let log = server.request_log();
    Measured {
        cost,
        counts: RequestCounts::of(&log),
        log,
    }
}

/// The modes one fresh scenario serves in turn.
fn recover_passes(size: Size, now: Timestamp, latency_ms: u64) -> Vec<(String, Measured)> {
    let (server, _) = size.serve(now, latency_ms);
    let step = Step::new(99_000_001);
    let first = measure(&server, step.command(&server, "recover", None), "recover");
    let second = measure(&server, step.command(&server, "recover", None), "recover");
    vec![
        ("recover (first pass)".to_string(), first),
        ("recover (second pass)".to_string(), second),
    ]
}

/// A reading mode on a fresh scenario.
fn on_fresh_scenario(size: Size, now: Timestamp, name: &str) -> Measured {
    let (server, _) = size.serve(now, 0);
    let step = Step::new(99_000_001);
    let command = match name {
        "select" | "prepare-review" => {
            let mut command = step.command(&server, name, None);
            command
                .arg("--candidates")
                .arg(step.path("candidates.json"));
            command
        }
        "status --dashboard" => {
            let mut command = step.command(&server, "status", None);
            command.arg("--dashboard");
            command
        }
        "discover" => {
            let checkout = discover_checkout(&step);
            let mut command = step.command(&server, name, None);
            command.arg("--repo-path").arg(checkout);
            command
        }
        "wake" => {
            wake_event(&step);
            let mut command = step.command(&server, name, None);
            command.args(["--confirm-timeout", "5"]);
            command
        }
        _ => step.command(&server, name, None),
    };
    measure(&server, command, name)
}

/// `session`, `note`, `check-stop` and `finish` in the live session of [`CANDIDATE`], as its
/// job runs them one after the other.
fn session_modes(size: Size, now: Timestamp) -> Vec<(String, Measured)> {
    let (server, sessions) = size.serve(now, 0);
    let parent = sessions
        .iter()
        .find(|session| session.candidate == CANDIDATE && session.state == SessionState::Live)
        .expect("a live session")
        .parent_run_id;
    let step = Step::new(parent);
    let mut measured = Vec::new();
    let mut session = step.command(&server, "session", None);
    session.args(["--candidate", CANDIDATE]);
    measured.push(("session".to_string(), measure(&server, session, "session")));
    let mut note = step.command(&server, "note", None);
    note.args(["--candidate", CANDIDATE, "--text", "smoke passed"]);
    measured.push(("note".to_string(), measure(&server, note, "note")));
    let context_file = step
        .outputs()
        .get("context-file")
        .cloned()
        .expect("session names its context file");
    let hook_input = step.write(
        "hook-input.json",
        r#"{"hook_event_name": "Stop", "stop_hook_active": false}"#,
    );
    let mut check_stop = step.command(&server, "check-stop", Some(&hook_input));
    check_stop
        .env_remove("GITHUB_TOKEN")
        .env("GH_TOKEN", scenario::BOT_TOKEN)
        .arg("--context-file")
        .arg(context_file);
    measured.push((
        "check-stop".to_string(),
        measure(&server, check_stop, "check-stop"),
    ));
    let mut finish = step.command(&server, "finish", None);
    finish.args([
        "--candidate",
        CANDIDATE,
        "--outcome",
        "failed",
        "--cancel-wait",
        "0",
    ]);
    measured.push(("finish".to_string(), measure(&server, finish, "finish")));
    measured
}

/// A committed checkout with one master config family, the runners file and a generator that
/// renders it, and the feeds as local files with that family's row.
fn discover_checkout(step: &Step) -> PathBuf {
    let checkout = step.path("checkout");
    for (path, text) in [
        (
            "configs/x-master.yaml",
            "k1:\n  image: vllm/vllm-openai:v1\n",
        ),
        ("configs/runners.yaml", "b200: [b200-1]\n"),
        (
            "utils/matrix_logic/generate_sweep_configs.py",
            r#"import json, sys
json.dump([{"model-prefix": "dsr1", "runner": "b200", "framework": "vllm", "precision": "fp8",
            "spec-decoding": "none", "disagg": False, "isl": 1024, "osl": 1024,
            "image": "vllm/vllm-openai:v1"}], sys.stdout)
"#,
        ),
    ] {
        let full = checkout.join(path);
        std::fs::create_dir_all(full.parent().expect("a folder")).expect("a folder");
        std::fs::write(full, text).expect("a checkout file");
    }
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.com",
            "commit",
            "-q",
            "-m",
            "configs",
        ],
    ] {
        let status = Command::new("git")
            .args(args)
            .current_dir(&checkout)
            .status()
            .expect("git runs");
        assert!(status.success(), "git {args:?}");
    }
    let catalog = json!([{"model": "dsr1", "hardware": "b200", "framework": "vllm",
        "precision": "fp8", "spec_method": "none", "disagg": false, "isl": 1024, "osl": 1024,
        "benchmark_type": "single_turn", "image": "vllm/vllm-openai:v1", "date": "2026-08-01"}]);
    let images = step.write("latest-images.json", &catalog.to_string());
    let empty = step.write("empty-feed.json", "[]");
    let config = json!({
        "bot": scenario::BOT,
        "discovery": {"feeds": {"images": images, "benchmarks": empty, "workflow-info": empty}},
    });
    step.write("klaud.yml", &config.to_string());
    checkout
}

/// The `workflow_run` event of a smoke run of a live session that ended a minute ago.
fn wake_event(step: &Step) {
    let ended = Utc::now() - chrono::Duration::minutes(1);
    let branch = scenario::candidate_branch(0);
    let event = json!({
        "action": "completed",
        "workflow_run": {
            "id": 501, "name": "E2E tests", "path": format!(".github/workflows/{}", scenario::SMOKE_WORKFLOW),
            "head_branch": branch, "head_sha": "0123456789abcdef0123456789abcdef01234567",
            "event": "workflow_dispatch", "status": "completed", "conclusion": "failure",
            "actor": {"login": scenario::BOT}, "triggering_actor": {"login": scenario::BOT},
            "updated_at": ended.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "repository": {"full_name": "acme/bench"},
            "head_repository": {"full_name": "acme/bench"},
        },
        "workflow": {"path": format!(".github/workflows/{}", scenario::SMOKE_WORKFLOW)},
        "repository": {"full_name": "acme/bench", "default_branch": "main"},
        "sender": {"login": scenario::BOT},
    });
    step.write("event.json", &event.to_string());
}

/// Every mode's run on one scenario, in the table's order.
fn every_mode(size: Size, now: Timestamp) -> Vec<(String, Measured)> {
    let mut measured = recover_passes(size, now, 0);
    for name in [
        "select",
        "status",
        "status --dashboard",
        "prepare-review",
        "discover",
    ] {
        measured.push((name.to_string(), on_fresh_scenario(size, now, name)));
    }
    measured.extend(session_modes(size, now));
    measured.push(("wake".to_string(), on_fresh_scenario(size, now, "wake")));
    measured
}

/// Requests by method and path without the query's page or time window, a GraphQL request by
/// its operation.
fn request_kinds(log: &[LoggedRequest]) -> BTreeMap<String, i64> {
    let mut kinds = BTreeMap::new();
    for request in log {
        let kind = match request.graphql() {
            Some(operation) => format!(
                "graphql {} {}",
                if operation.mutation {
                    "mutation"
                } else {
                    "query"
                },
                operation.fields.join(",")
            ),
            None => {
                let (path, query) = request.path.split_once('?').unwrap_or((&request.path, ""));
                // A time window follows the clock; its bounds are left out.
                let kept: Vec<&str> = query
                    .split('&')
                    .filter(|pair| !pair.is_empty() && !pair.starts_with("page="))
                    .map(|pair| match pair.starts_with("created=") {
                        true => "created=…",
                        false => pair,
                    })
                    .collect();
                match kept.is_empty() {
                    true => format!("{} {path}", request.method),
                    false => format!("{} {path}?{}", request.method, kept.join("&")),
                }
            }
        };
        *kinds.entry(kind).or_default() += 1;
    }
    kinds
}

/// How long the fake takes to answer the listings a big repository makes long.
fn fake_answer_times(server: &FakeGitHubHandle) -> Vec<(String, f64)> {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let client = fake_github::http_client();
    let base = server.base_url();
    let branches: Vec<String> = (0..50).map(scenario::candidate_branch).collect();
    let query = branches
        .iter()
        .enumerate()
        .map(|(index, branch)| {
            format!(
                "b{index}: pullRequests(headRefName: \"{branch}\", states: [OPEN], first: 10) \
                 {{ nodes {{ number headRepository {{ nameWithOwner }} }} }}"
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    let graphql = json!({
        "query": format!("query {{ repository(owner: \"acme\", name: \"bench\") {{ {query} }} }}")
    });
    let requests: Vec<(&str, String, Option<serde_json::Value>)> = vec![
        (
            "GET /pulls?state=open&per_page=100, page 50 of 102",
            format!("{base}/repos/acme/bench/pulls?state=open&per_page=100&page=50"),
            None,
        ),
        (
            "GET /actions/runs?status=in_progress&per_page=100",
            format!("{base}/repos/acme/bench/actions/runs?status=in_progress&per_page=100"),
            None,
        ),
        (
            "GET /actions/runs?per_page=100, every run of the repository",
            format!("{base}/repos/acme/bench/actions/runs?per_page=100"),
            None,
        ),
        (
            "GET /git/matching-refs/heads/klaud/auto-",
            format!("{base}/repos/acme/bench/git/matching-refs/heads/klaud/auto-"),
            None,
        ),
        (
            "POST /graphql, pullRequests(headRefName:) for 50 branches",
            server.graphql_url(),
            Some(graphql),
        ),
    ];
    requests
        .into_iter()
        .map(|(what, url, body)| {
            let mut times: Vec<f64> = (0..5)
                .map(|_| {
                    let started = Instant::now();
                    runtime.block_on(async {
                        let request = match &body {
                            Some(body) => client.post(&url).json(body),
                            None => client.get(&url),
                        };
                        let answer = request
                            .bearer_auth(scenario::BOT_TOKEN)
                            .header("User-Agent", "scale-bench")
                            .send()
                            .await
                            .expect("the fake answers");
                        assert!(answer.status().is_success(), "{what}: {}", answer.status());
                        answer.bytes().await.expect("a body");
                    });
                    started.elapsed().as_secs_f64() * 1000.0
                })
                .collect();
            times.sort_by(f64::total_cmp);
            (what.to_string(), times[2])
        })
        .collect()
}

fn resident_kib() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn mib(kib: i64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn met(yes: bool) -> &'static str {
    if yes { "met" } else { "NOT MET" }
}

fn main() {
    if child::serve_as_intermediary() {
        return;
    }
    let now = Timestamp(Utc::now().timestamp());
    let before_kib = resident_kib();
    let started = Instant::now();
    let generated = scenario::generate_big(SEED, now);
    let generation = started.elapsed();
    drop(generated);
    let (server, _) = big_scenario(SEED, now, 0);
    let serving_kib = resident_kib();
    println!(
        "big scenario, seed {SEED}: generated in {:.2} s; this process resident with the fake \
         GitHub serving it: {} ({} before)",
        generation.as_secs_f64(),
        mib(serving_kib),
        mib(before_kib)
    );
    let big_answers = fake_answer_times(&server);
    drop(server);
    let (server, _) = standard_scenario(SEED, now, 0);
    let standard_answers = fake_answer_times(&server);
    drop(server);
    println!("the fake GitHub's answers, standard / big (median of 5, client included):");
    for ((what, standard), (_, big)) in standard_answers.iter().zip(&big_answers) {
        println!("- {what}: {standard:.1} ms / {big:.1} ms");
    }

    let standard = every_mode(Size::Standard, now);
    let big = every_mode(Size::Big, now);
    let recover_at_100 = recover_passes(Size::Big, now, 100)
        .into_iter()
        .next()
        .expect("a first pass")
        .1;

    println!();
    println!(
        "| mode | reads standard | reads big | difference | writes (standard / big) | peak RSS big | wall big |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut reads_met = true;
    let mut rss_met = true;
    let mut differences = Vec::new();
    for ((name, small), (_, large)) in standard.iter().zip(&big) {
        let difference = large.counts.reads as i64 - small.counts.reads as i64;
        reads_met &= difference.abs() <= READ_TOLERANCE;
        rss_met &= large.cost.peak_rss_kib <= PEAK_RSS_GOAL_KIB;
        println!(
            "| {name} | {} | {} | {difference:+} | {} / {} | {} | {:.2} s |",
            small.counts.reads,
            large.counts.reads,
            small.counts.writes,
            large.counts.writes,
            mib(large.cost.peak_rss_kib),
            large.cost.wall.as_secs_f64(),
        );
        let (small_kinds, large_kinds) = (request_kinds(&small.log), request_kinds(&large.log));
        for kind in small_kinds.keys().chain(large_kinds.keys()) {
            let (before, after) = (
                small_kinds.get(kind).copied().unwrap_or(0),
                large_kinds.get(kind).copied().unwrap_or(0),
            );
            if before != after
                && !differences
                    .iter()
                    .any(|(mode, known, _, _)| mode == name && known == kind)
            {
                differences.push((name.clone(), kind.clone(), before, after));
            }
        }
    }
    println!(
        "| recover (first pass) at 100 ms | | {} | | {} | {} | {:.2} s |",
        recover_at_100.counts.reads,
        recover_at_100.counts.writes,
        mib(recover_at_100.cost.peak_rss_kib),
        recover_at_100.cost.wall.as_secs_f64(),
    );
    println!();
    println!("requests whose count differs (standard → big):");
    for (mode, kind, before, after) in &differences {
        println!("- {mode}: {kind}: {before} → {after}");
    }
    println!();
    println!(
        "- every mode reads on the big scenario what it reads on the standard one (±{READ_TOLERANCE}): {}",
        met(reads_met)
    );
    println!(
        "- every mode's peak RSS on the big scenario ≤ 50 MB: {}",
        met(rss_met)
    );
    println!(
        "- first recover pass on the big scenario ≤ 3 s at 100 ms: {} ({:.2} s)",
        met(recover_at_100.cost.wall <= RECOVER_AT_100_MS_GOAL),
        recover_at_100.cost.wall.as_secs_f64()
    );
}
