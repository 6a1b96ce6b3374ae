//! The requests of `session`, `note` and `check-stop` (the real binary) against the fake GitHub,
//! and `check-stop`'s wall time over 50 runs in each of its three cases: an outcome that needs
//! no read, a stop without an outcome (one read: the branch's pull requests), and `validated`
//! (two reads: the pull requests, then the sweep runs on the head). The hook runs once per stop
//! of the agent, inside the agent's step.
//!
//! Run with `cargo bench --bench session`.

#![allow(clippy::disallowed_methods)] // a benchmark spawns the binary and reads no configuration
#![allow(dead_code)] // the test support is shared with the tests

use klaud_fake_github as fake_github;
#[path = "../tests/recover_support/mod.rs"]
mod recover_support;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fake_github::{FakeGitHubHandle, RunSpec};
use klaud::core::ledger::SessionState;
use recover_support::{BOT, BOT_TOKEN, Pass, STATE_BRANCH, SWEEP, World, branch};

const RUN: u64 = 73_000_000_001;
const RUNS: usize = 50;

fn klaud(pass: &Pass, server: &FakeGitHubHandle, mode: &str) -> Command {
    let mut command = pass.mode_command(server, mode);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

/// Reads and writes `server` received while `run` ran.
fn requests(server: &FakeGitHubHandle, run: impl FnOnce()) -> (usize, usize) {
    let before = server.request_log().len();
    run();
    let log = server.request_log();
    let new = &log[before..];
    let writes = new.iter().filter(|request| request.is_write()).count();
    (new.len() - writes, writes)
}

fn check_stop(pass: &Pass, server: &FakeGitHubHandle, context_file: &str) -> Duration {
    let mut command = klaud(pass, server, "check-stop");
    command
        .args(["--context-file", context_file])
        .env_remove("GITHUB_TOKEN")
        .env("GH_TOKEN", BOT_TOKEN)
        .stdin(Stdio::piped());
    let started = Instant::now();
    let mut child = command.spawn().expect("check-stop starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"hook_event_name": "Stop", "stop_hook_active": false}"#)
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let elapsed = started.elapsed();
    assert_eq!(output.status.code(), Some(0));
    elapsed
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

fn main() {
    let mut world = World::new();
    world.session("a", SessionState::Live, RUN, None);
    world.claim("a", RUN);
    world.state.put_file(
        STATE_BRANCH,
        "records/a.json",
        r#"{"id": "a", "family": "f"}"#,
    );
    let number = world.bot_draft("a");
    let server = world.start();
    let pass = Pass::new(RUN);

    let (reads, writes) = requests(&server, || {
        let output = klaud(&pass, &server, "session")
            .args(["--candidate", "a"])
            .output()
            .unwrap();
        assert!(output.status.success());
    });
    println!("session: {reads} reads, {writes} writes");
    let outputs = recover_support::read_output_file(&pass.path("github-output"));
    let context_file = outputs["context-file"].clone();
    let outcome_file = outputs["outcome-file"].clone();

    for text in [
        "first note",
        "second note (the comment is updated in place)",
    ] {
        let (reads, writes) = requests(&server, || {
            let output = klaud(&pass, &server, "note")
                .args(["--candidate", "a", "--text", text])
                .output()
                .unwrap();
            assert!(output.status.success());
        });
        println!("note ({text}): {reads} reads, {writes} writes");
    }

    server.with_state(|state| {
        let head = state.branch_sha(&branch("a")).unwrap().to_string();
        state.add_run(RunSpec {
            workflow: SWEEP.into(),
            head_branch: Some(branch("a")),
            head_sha: Some(head),
            event: "pull_request".into(),
            status: "completed".into(),
            conclusion: Some("success".into()),
            actor: Some(BOT.into()),
            ..RunSpec::default()
        });
    });
    println!("\ncheck-stop, {RUNS} runs each (wall time of the whole process):");
    println!("| case | reads | writes | median | p90 | max |");
    println!("|---|---|---|---|---|---|");
    let cases: [(&str, Option<String>); 3] = [
        (
            "outcome failed (no read)",
            Some(r#"{"outcome": "failed"}"#.into()),
        ),
        ("no outcome (blocked)", None),
        (
            "validated, sweep on the head",
            Some(format!(
                r#"{{"outcome": "validated", "pull-request": {number}}}"#
            )),
        ),
    ];
    for (case, outcome) in cases {
        match &outcome {
            Some(text) => std::fs::write(&outcome_file, text).unwrap(),
            None => {
                let _ = std::fs::remove_file(&outcome_file);
            }
        }
        let mut times = Vec::with_capacity(RUNS);
        let (reads, writes) = requests(&server, || {
            for _ in 0..RUNS {
                times.push(check_stop(&pass, &server, &context_file));
            }
        });
        times.sort();
        println!(
            "| {case} | {} | {} | {:.1} ms | {:.1} ms | {:.1} ms |",
            reads / RUNS,
            writes,
            percentile(&times, 0.5).as_secs_f64() * 1000.0,
            percentile(&times, 0.9).as_secs_f64() * 1000.0,
            times.last().unwrap().as_secs_f64() * 1000.0,
        );
    }
}
