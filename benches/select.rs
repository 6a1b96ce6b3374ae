//! Requests, wall time and peak RSS of one `klaud select` pass (the real binary) on the
//! standard scenario (`BENCH-SCENARIO.md`: 60 candidates, 120 open pull requests, the 50-session
//! ledger), at 0 ms and 100 ms of server latency. With the default cap of 5 the 8 live sessions
//! leave no room (nothing is written); with a cap of 12 the pass claims 4 families (one
//! compare-and-swap write).
//!
//! Run with `cargo bench --bench select` (`--profile dev` for a quick look).

#![allow(clippy::disallowed_methods)] // a benchmark spawns the binary and reads no configuration

use klaud_fake_github as fake_github;
mod support;

use support::child;
use support::ledger_of;

use std::path::Path;
use std::time::Duration;

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

fn run_pass(server: &FakeGitHubHandle, candidates: &str, cap: u32) -> PassCost {
    let work = tempfile::tempdir().expect("a temporary directory");
    let candidates_file = work.path().join("candidates.json");
    std::fs::write(&candidates_file, candidates).expect("candidates written");
    let output_file = work.path().join("github-output");
    // klaud's own peak RSS, measured by a small fresh copy of this program (support::child).
    let mut command = child::intermediary(Path::new(env!("CARGO_BIN_EXE_klaud")));
    command
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
    let cost = child::measure(&mut command);
    assert_eq!(cost.exit_code, 0, "klaud select exited {}", cost.exit_code);
    let outputs = std::fs::read_to_string(&output_file).unwrap_or_default();
    let selected = outputs
        .lines()
        .find_map(|line| line.strip_prefix("candidates="))
        .unwrap_or("?")
        .to_string();
    PassCost {
        wall: cost.wall,
        peak_rss_kib: cost.peak_rss_kib,
        selected,
    }
}

fn main() {
    if child::serve_as_intermediary() {
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
