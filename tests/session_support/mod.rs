//! What the session tests share: a claimed candidate with its record beside the ledger, a
//! klaud step with stdin, the writes sent, the context a session wrote, an attempt record, a
//! finish after the agent step timed out, the session log comments.

#![allow(dead_code)] // each including test uses a part of it

use std::io::Write;
use std::process::Stdio;

use chrono::{DateTime, Utc};
use klaud::core::ledger::{Attempt, AttemptEnd, Note, SessionState};
use serde_json::{Value, json};

use super::fake_github::FakeGitHubHandle;
use super::recover_support::*;

pub fn now() -> DateTime<Utc> {
    Utc::now()
}

/// A live session of `candidate` claimed by `parent`, its record on the state branch.
pub fn claimed(world: &mut World, candidate: &str, parent: u64) {
    world.session(candidate, SessionState::Live, parent, None);
    world.claim(candidate, parent);
    world.state.put_file(
        STATE_BRANCH,
        &format!("records/{candidate}.json"),
        &json!({"id": candidate, "family": family(candidate), "baseline": {"tput": 1234.5}, "targets": ["h100"], "owner-note": "passed through"})
            .to_string(),
    );
}

/// `klaud <mode>` for `pass` with `arguments`, stdin `input`; returns (exit code, stdout, stderr).
pub fn run_mode(
    server: &FakeGitHubHandle,
    pass: &Pass,
    mode: &str,
    arguments: &[&str],
    configure: impl FnOnce(&mut std::process::Command),
    input: &str,
) -> (i32, String, String) {
    let mut command = pass.mode_command(server, mode);
    command.args(arguments);
    configure(&mut command);
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

pub fn session_step(server: &FakeGitHubHandle, pass: &Pass, candidate: &str) -> String {
    let (code, stdout, stderr) = run_mode(
        server,
        pass,
        "session",
        &["--candidate", candidate],
        |_| {},
        "",
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    stdout + &stderr
}

pub fn writes(server: &FakeGitHubHandle) -> Vec<String> {
    server
        .request_log()
        .iter()
        .filter(|request| request.is_write())
        .map(|request| format!("{} {}", request.method, request.path))
        .collect()
}

pub fn context_of(pass: &Pass) -> Value {
    let path = pass.outputs()["context-file"].clone();
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

pub fn attempt(number: u32, run: u64, minutes_ago: i64, end: Option<AttemptEnd>) -> Attempt {
    let adopted = now() - chrono::Duration::minutes(minutes_ago);
    Attempt {
        number,
        run,
        adopted_at: adopted,
        deadline: adopted + chrono::Duration::minutes(330),
        ended_at: end.map(|_| adopted + chrono::Duration::minutes(331)),
        end,
        runs: vec![5],
        notes: vec![Note {
            at: adopted + chrono::Duration::minutes(100),
            text: "smoke passed; sweep next".into(),
        }],
        notes_folded: 0,
        agent: None,
    }
}

pub fn finish_after_timeout(server: &FakeGitHubHandle, pass: &Pass) -> String {
    let missing = pass.path("out/outcome.json");
    let (code, stdout, stderr) = run_mode(
        server,
        pass,
        "finish",
        &[
            "--candidate",
            "a",
            "--agent-outcome",
            "failure",
            "--cancel-wait",
            "0",
            "--outcome-file",
            missing.to_str().unwrap(),
        ],
        |_| {},
        "",
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    stdout + &stderr
}

pub fn log_comments(server: &FakeGitHubHandle, number: u64) -> Vec<String> {
    server.with_state(|state| {
        state
            .comments
            .values()
            .filter(|comment| comment.issue_number == number)
            .filter(|comment| {
                comment
                    .body
                    .contains("<!-- klaud:session-log candidate=a -->")
            })
            .map(|comment| comment.body.clone())
            .collect()
    })
}
