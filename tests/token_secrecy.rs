//! The token never leaves klaud except to GitHub: every mode that talks to GitHub is run with a
//! recognizable token — succeeding, failing and refused — and the token is looked for in stdout,
//! stderr, the step outputs, the summary and every file of the work directory. The one line
//! allowed to carry it is `::add-mask::`, which tells the runner to hide it.

#![allow(clippy::disallowed_methods)] // tests read the environment and start processes

#[path = "fake_github/mod.rs"]
mod fake_github;
#[path = "github_mode_support/mod.rs"]
mod github_mode_support;

use fake_github::{CommitSpec, FakeGitHub, PullRequestSpec};
use github_mode_support::{BOT, Step, TOKEN, repository};

const CANDIDATES: &str = r#"[{"id": "a", "family": "configs/x.yaml:a"},
                             {"id": "b", "family": "configs/x.yaml:b"}]"#;

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

fn assert_secret_kept(step: &Step, log: &str, mode: &str) {
    assert!(
        log.lines()
            .any(|line| line == format!("::add-mask::{TOKEN}")),
        "{mode}: the token is masked before anything else\n{log}"
    );
    let written = everything_written(step, log);
    assert!(
        !written.contains(TOKEN),
        "{mode}: the token leaked:\n{written}"
    );
}

fn populated_repository() -> fake_github::RepoState {
    let mut state = repository();
    state.add_pull_request(PullRequestSpec {
        author: BOT.to_string(),
        head_ref: "klaud/auto-a".to_string(),
        draft: true,
        commits: vec![CommitSpec::by(BOT).file("configs/x.yaml", "a: 1\n")],
        ..PullRequestSpec::default()
    });
    state
}

#[test]
fn no_mode_writes_the_token_anywhere_when_it_succeeds() {
    let server = FakeGitHub::start(populated_repository());
    for mode in ["select", "prepare-review", "status", "recover"] {
        let step = Step::default();
        let candidates = step.write("candidates.json", CANDIDATES);
        let mut command = step.command(&server, mode);
        if mode != "status" && mode != "recover" {
            command.arg("--candidates").arg(&candidates);
        }
        let log = step.run(command, 0);
        assert_secret_kept(&step, &log, mode);
    }
}

#[test]
fn no_mode_writes_the_token_anywhere_when_github_refuses_every_request() {
    let server = FakeGitHub::start(populated_repository());
    server.set_faults(fake_github::FaultConfig::rules(vec![
        fake_github::FaultRule::nth("GET", "*", 1, 403).times(u64::MAX),
    ]));
    for mode in ["select", "prepare-review", "status", "recover"] {
        let step = Step::default();
        let candidates = step.write("candidates.json", CANDIDATES);
        let mut command = step.command(&server, mode);
        if mode != "status" && mode != "recover" {
            command.arg("--candidates").arg(&candidates);
        }
        let output = command.output().unwrap();
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert_secret_kept(&step, &log, mode);
    }
}

#[test]
fn a_refused_token_is_not_echoed() {
    let server = FakeGitHub::start(fake_github::RepoState::new("acme", "bench"));
    let step = Step::default();
    let output = step.command(&server, "status").output().unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(1), "{log}");
    assert!(log.contains("401"), "{log}");
    assert_secret_kept(&step, &log, "status");
}
