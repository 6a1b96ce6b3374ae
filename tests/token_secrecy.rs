//! The tokens never leave klaud except to GitHub: every mode is run with a recognizable
//! `github-token` and `label-token` — succeeding, failing, refused by GitHub and unauthorized
//! where the mode talks to GitHub — and both are looked for in stdout, stderr, the step outputs,
//! the summary, every file of the work directory and every request body the fake GitHub received
//! (comments, pull request and ledger writes, dispatches). The one line allowed to carry a token
//! is `::add-mask::`, which tells the runner to hide it. The children klaud starts (npm, the
//! producer, the capacity command) must not see either token in their environment.

#![allow(clippy::disallowed_methods)] // tests read the environment and start processes
#![allow(clippy::duplicate_mod)] // github_mode_support and recover_support each bring step_support

use klaud_fake_github as fake_github;
#[path = "github_mode_support/mod.rs"]
mod github_mode_support;
#[path = "mode_runs_support/mod.rs"]
mod mode_runs_support;
#[path = "recover_support/mod.rs"]
mod recover_support;
#[path = "verify_baselines_support/mod.rs"]
mod verify_baselines_support;

use base64::Engine;
use fake_github::FakeGitHubHandle;
use github_mode_support::{Step, TOKEN};
use mode_runs_support::{
    Answer, HOOK_MODE, LABEL_LOGIN, LABEL_TOKEN, LOCAL_MODES, Setup, all_modes, setup,
};
use serde_json::Value;

/// Everything a step left behind, as one text.
fn everything_written(step: &Step, log: &str) -> String {
    let mut text = log
        .lines()
        .filter(|line| !line.starts_with("::add-mask::"))
        .collect::<Vec<_>>()
        .join("\n");
    text.push_str(&step.summary());
    text.push_str(&std::fs::read_to_string(step.path("github-output")).unwrap_or_default());
    let mut pending = vec![step.path("out")];
    while let Some(directory) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&directory) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                text.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
            }
        }
    }
    text
}

/// Every request body the fake received, with base64 `content` fields (file writes) decoded.
fn everything_sent(server: &FakeGitHubHandle) -> String {
    let mut text = String::new();
    for request in server.request_log() {
        text.push_str(&request.body);
        text.push('\n');
        if let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(&request.body)
            && let Some(Value::String(content)) = fields.get("content")
        {
            // A git blob may also be sent as plain text, which the body already shows.
            if let Ok(decoded) =
                base64::engine::general_purpose::STANDARD.decode(content.replace('\n', ""))
            {
                text.push_str(&String::from_utf8_lossy(&decoded));
                text.push('\n');
            }
        }
    }
    text
}

fn assert_secret_kept(setup: &Setup, log: &str, what: &str) {
    let talks_to_github = !setup.server.request_log().is_empty();
    let mut masked = vec![TOKEN];
    if talks_to_github {
        masked.push(LABEL_TOKEN);
    }
    if what.starts_with(HOOK_MODE) {
        masked.clear();
    }
    for token in masked {
        assert!(
            log.lines()
                .any(|line| line == format!("::add-mask::{token}")),
            "{what}: {token} is masked\n{log}"
        );
    }
    let written = everything_written(&setup.step, log);
    let sent = everything_sent(&setup.server);
    for token in [TOKEN, LABEL_TOKEN] {
        assert!(
            !written.contains(token),
            "{what}: {token} leaked into the log or a file:\n{written}"
        );
        assert!(
            !sent.contains(token),
            "{what}: {token} leaked into a request body:\n{sent}"
        );
    }
    // Whether the child ran at all is checked by the last test; a run that stopped before it
    // left no record.
    for dump in &setup.child_environments {
        let Ok(seen) = std::fs::read_to_string(dump) else {
            continue;
        };
        for token in [TOKEN, LABEL_TOKEN] {
            assert!(
                !seen.contains(token),
                "{what}: a child saw {token} in its environment:\n{seen}"
            );
        }
    }
}

/// Runs `mode` against `answer` and checks that no token left klaud; returns the exit code.
fn run_and_check(mode: &str, answer: Answer) -> Option<i32> {
    let mut setup = setup(mode, answer);
    let output = setup.command.output().unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let what = format!("{mode} ({answer:?})");
    assert_secret_kept(&setup, &log, &what);
    if LOCAL_MODES.contains(&mode) {
        assert!(
            setup.server.request_log().is_empty(),
            "{what}: a local mode sent no request"
        );
    }
    if answer == Answer::Serves {
        assert_eq!(output.status.code(), Some(0), "{what}\n{log}");
    }
    if answer == Answer::Unauthorized && !LOCAL_MODES.contains(&mode) {
        // The hook never fails: its block names the refusal.
        let code = if mode == HOOK_MODE { 0 } else { 1 };
        assert_eq!(output.status.code(), Some(code), "{what}\n{log}");
        assert!(log.contains("401"), "{what}: the refusal is named\n{log}");
    }
    output.status.code()
}

#[test]
fn no_mode_writes_a_token_anywhere_when_it_succeeds() {
    for mode in all_modes() {
        run_and_check(&mode, Answer::Serves);
    }
}

#[test]
fn no_mode_writes_a_token_anywhere_when_github_refuses_or_a_child_fails() {
    for mode in all_modes() {
        run_and_check(&mode, Answer::Refuses);
    }
}

#[test]
fn no_mode_echoes_a_token_github_does_not_know() {
    for mode in all_modes()
        .into_iter()
        .filter(|mode| !LOCAL_MODES.contains(&mode.as_str()))
    {
        run_and_check(&mode, Answer::Unauthorized);
    }
}

#[test]
fn the_successful_runs_did_what_carries_a_token_risk() {
    // The cases above are only worth something if the risky paths ran: the receipt comment,
    // the label written with the label token, the ledger write, the dispatch, the children.
    let mut finish = setup("finish", Answer::Serves);
    finish.command.assert().code(0);
    let log = finish.server.request_log();
    assert!(
        log.iter()
            .any(|request| request.method == "POST" && request.path.ends_with("/comments")),
        "finish posted its receipt"
    );
    assert!(
        log.iter().any(|request| request.is_write()
            && request.path.contains("/labels")
            && request.login.as_deref() == Some(LABEL_LOGIN)),
        "finish wrote a label with the label token"
    );
    let mut wake = setup("wake", Answer::Serves);
    wake.command.assert().code(0);
    assert_eq!(wake.server.state().dispatches.len(), 1, "wake dispatched");
    let mut select = setup("select", Answer::Serves);
    let log = select.command.assert().code(0).get_output().stdout.clone();
    let log = String::from_utf8_lossy(&log);
    assert!(
        select
            .server
            .request_log()
            .iter()
            .any(|request| request.is_write() && !request.body.is_empty()),
        "select wrote the ledger\n{log}"
    );
    let mut note = setup("note", Answer::Serves);
    note.command.assert().code(0);
    assert!(
        note.server
            .request_log()
            .iter()
            .any(|request| request.method == "POST"
                && request.path.ends_with("/comments")
                && request.body.contains("smoke passed")),
        "note posted the session log"
    );
    let mut hook = setup(HOOK_MODE, Answer::Serves);
    let answer = hook.command.assert().code(0).get_output().stdout.clone();
    assert!(
        String::from_utf8_lossy(&answer).contains("\"decision\":\"block\""),
        "the hook blocked a stop without an outcome"
    );
    assert!(
        hook.server
            .request_log()
            .iter()
            .any(|request| request.login.as_deref() == Some(recover_support::BOT)),
        "the hook read GitHub with the agent's token"
    );
    for mut setup in [
        setup("select", Answer::Serves),
        setup("install-cli", Answer::Serves),
        setup("verify-baselines", Answer::Serves),
        setup("discover", Answer::Serves),
    ] {
        setup.command.assert().code(0);
        for dump in &setup.child_environments {
            let seen = std::fs::read_to_string(dump).expect("the child ran");
            assert!(seen.contains("PATH"), "{seen}");
        }
    }
}
