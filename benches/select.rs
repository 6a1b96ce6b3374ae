//! Requests, wall time and peak RSS of one `klaud select` pass (the real binary) on the
//! standard scenario (`BENCH-SCENARIO.md`: 60 candidates, 120 open pull requests, the 50-session
//! ledger), at 0 ms and 100 ms of server latency. With the default cap of 5 the 8 live sessions
//! leave no room (nothing is written); with a cap of 12 the pass claims 4 families (one
//! compare-and-swap write).
//!
//! Run with `cargo bench --bench select` (`--profile dev` for a quick look).

#![allow(clippy::disallowed_methods)] // a benchmark spawns the binary and reads no configuration

#[path = "../tests/fake_github/mod.rs"]
mod fake_github;
mod support;

use support::ledger_of;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chrono::Utc;

use fake_github::scenario;
use fake_github::{FakeGitHub, FakeGitHubHandle, FaultConfig, Timestamp};

const SEED: u64 = 42;

/// The scenario generated around the real clock (select judges cooldowns against it).
fn start(latency_ms: u64) -> (FakeGitHubHandle, String) {
    let now = Timestamp(Utc::now().timestamp());
    let mut generated = scenario::generate(SEED, now);
    let ledger = ledger_of(&generated.sessions);
    generated.write_ledger(&ledger.to_json());
    let candidates = generated.candidates_json();
    let server = FakeGitHub::start(generated.state);
    server.set_faults(FaultConfig {
        latency_ms,
        ..FaultConfig::default()
    });
    (server, candidates)
}

/// What one pass cost.
struct PassCost {
    wall: Duration,
    peak_rss_kib: i64,
    selected: String,
}

/// The argument that makes this program the small intermediary measuring one child.
const MEASURE_CHILD: &str = "--measure-child";

fn run_pass(server: &FakeGitHubHandle, candidates: &str, cap: u32) -> PassCost {
    let work = tempfile::tempdir().expect("a temporary directory");
    let candidates_file = work.path().join("candidates.json");
    std::fs::write(&candidates_file, candidates).expect("candidates written");
    let output_file = work.path().join("github-output");
    // A child's peak RSS includes the memory of the process it was spawned from (Linux records
    // it at exec), and this process holds the whole scenario; a freshly started copy of this
    // program, small, spawns klaud and reports its figures instead.
    let mut command = Command::new(std::env::current_exe().expect("the bench program"));
    command
        .arg(MEASURE_CHILD)
        .arg(env!("CARGO_BIN_EXE_klaud"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GITHUB_API_URL", server.base_url())
        .env("GITHUB_GRAPHQL_URL", server.graphql_url())
        .env("GITHUB_REPOSITORY", "acme/bench")
        .env("GITHUB_RUN_ID", "99000001")
        .env("GITHUB_RUN_ATTEMPT", "1")
        .env("GITHUB_TOKEN", scenario::BOT_TOKEN)
        .env("GITHUB_OUTPUT", &output_file)
        .env("GITHUB_STEP_SUMMARY", work.path().join("step-summary"))
        .arg("select")
        .arg("--candidates")
        .arg(&candidates_file)
        .arg("--directory")
        .arg(work.path().join("out"))
        .arg("--config")
        .arg(work.path().join("klaud.yml"))
        .args(["--max-candidates", &cap.to_string()]);
    let report = command.output().expect("the measuring copy runs");
    let report = String::from_utf8_lossy(&report.stdout);
    let figures: Vec<&str> = report.split_whitespace().collect();
    let [status, wall_seconds, peak_rss_kib] = figures[..] else {
        panic!("unexpected report from the measuring copy: {report}");
    };
    assert_eq!(status, "0", "klaud select exited {status}");
    let outputs = std::fs::read_to_string(&output_file).unwrap_or_default();
    let selected = outputs
        .lines()
        .find_map(|line| line.strip_prefix("candidates="))
        .unwrap_or("?")
        .to_string();
    PassCost {
        wall: Duration::from_secs_f64(wall_seconds.parse().expect("seconds")),
        peak_rss_kib: peak_rss_kib.parse().expect("KiB"),
        selected,
    }
}

/// The intermediary: runs `program args…` with this environment, output discarded, and prints
/// `<exit code> <wall seconds> <peak RSS in KiB>`.
fn measure_child(program: &str, args: &[String]) {
    let started = Instant::now();
    #[allow(clippy::zombie_processes)] // reaped by wait4, which also reports its peak RSS
    let child = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("klaud starts");
    let (status, usage) = wait_with_usage(child.id());
    let wall = started.elapsed();
    println!("{status} {} {}", wall.as_secs_f64(), usage.ru_maxrss);
}

/// Waits for the child and returns its exit code and its own resource usage.
fn wait_with_usage(pid: u32) -> (i32, libc::rusage) {
    let mut status = 0;
    // SAFETY: rusage is plain data that wait4 fills in; the pid is our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid as libc::pid_t, "wait4 failed");
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (code, usage)
}

fn main() {
    let arguments: Vec<String> = std::env::args().collect();
    if arguments.get(1).map(String::as_str) == Some(MEASURE_CHILD) {
        measure_child(&arguments[2], &arguments[3..]);
        return;
    }
    println!("standard scenario, seed {SEED}; klaud select (real binary) against the fake GitHub");
    println!("| latency | max-candidates | reads | writes | wall | peak RSS | selected |");
    println!("|---|---|---|---|---|---|---|");
    for latency_ms in [0, 100] {
        for cap in [5, 12] {
            let (server, candidates) = start(latency_ms);
            let cost = run_pass(&server, &candidates, cap);
            let counts = server.request_counts();
            println!(
                "| {latency_ms} ms | {cap} | {} | {} | {:.2} s | {:.1} MiB | {} |",
                counts.reads,
                counts.writes,
                cost.wall.as_secs_f64(),
                cost.peak_rss_kib as f64 / 1024.0,
                cost.selected
            );
        }
    }
}
