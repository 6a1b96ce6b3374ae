//! The tokens never leave klaud except to GitHub: every mode is run with a recognizable
//! `github-token` and `label-token` — succeeding, failing, refused by GitHub and unauthorized
//! where the mode talks to GitHub — and both are looked for in stdout, stderr, the step outputs,
//! the summary, every file of the work directory and every request body the fake GitHub received
//! (comments, pull request and ledger writes, dispatches). The one line allowed to carry a token
//! is `::add-mask::`, which tells the runner to hide it. The children klaud starts (npm, the
//! producer, the capacity command) must not see either token in their environment.

#![allow(clippy::disallowed_methods)] // tests read the environment and start processes
#![allow(clippy::duplicate_mod)] // github_mode_support and recover_support each bring step_support

#[path = "fake_github/mod.rs"]
mod fake_github;
#[path = "github_mode_support/mod.rs"]
mod github_mode_support;
#[path = "recover_support/mod.rs"]
mod recover_support;
#[path = "verify_baselines_support/mod.rs"]
mod verify_baselines_support;

use std::path::{Path, PathBuf};

use base64::Engine;
use fake_github::{CommitSpec, FakeGitHub, FakeGitHubHandle, PullRequestSpec, RepoState};
use github_mode_support::{BOT, REPOSITORY, Step, TOKEN, repository};
use klaud::core::ledger::SessionState;
use serde_json::{Value, json};
use verify_baselines_support::{
    StandInData, StandInRepository, candidate, single_node_entry, single_node_row, test_config_args,
};

/// The `label-token`, as recognizable as the `github-token`.
const LABEL_TOKEN: &str = "ghs_labelSecretToken9876543210fedcba";
const LABEL_LOGIN: &str = "github-actions[bot]";

const CANDIDATES: &str = r#"[{"id": "a", "family": "configs/x.yaml:a", "targets": ["b200"]},
                             {"id": "b", "family": "configs/x.yaml:b"}]"#;

const ALL_MODES: [&str; 11] = [
    "install-cli",
    "verify-baselines",
    "select",
    "recover",
    "finish",
    "wake",
    "prepare-review",
    "status",
    "session",
    "note",
    "check-stop",
];

/// The agent CLI's hook: its stdout is its answer alone, so it masks nothing (a mask is a
/// workflow command) and must print no token.
const HOOK_MODE: &str = "check-stop";

/// Modes that never talk to GitHub.
const LOCAL_MODES: [&str; 2] = ["install-cli", "verify-baselines"];

/// How the world answers a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    /// Everything works (for the local modes: npm installs, the producer answers).
    Serves,
    /// GitHub refuses every read with 403; the local modes' child fails instead.
    Refuses,
    /// GitHub does not know the token (401).
    Unauthorized,
}

/// One mode's run: its step files, its fake GitHub, and where a child recorded its environment.
struct Setup {
    step: Step,
    server: FakeGitHubHandle,
    command: assert_cmd::Command,
    /// Files a child klaud started wrote its environment into.
    child_environments: Vec<PathBuf>,
    /// The stand-in producer's repository, kept while the command needs it.
    _producer: Option<StandInRepository>,
}

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

/// `klaud <mode>` as the action runs it: the token in `KLAUD_GITHUB_TOKEN` and `GITHUB_TOKEN`,
/// the label token in `KLAUD_LABEL_TOKEN`.
fn command(step: &Step, server: &FakeGitHubHandle, mode: &str) -> assert_cmd::Command {
    let mut command = step.command(server, mode);
    command
        .env("KLAUD_GITHUB_TOKEN", TOKEN)
        .env("KLAUD_LABEL_TOKEN", LABEL_TOKEN);
    command
}

fn populated_repository() -> RepoState {
    let mut state = repository().with_token(LABEL_TOKEN, LABEL_LOGIN);
    state.add_pull_request(PullRequestSpec {
        author: BOT.to_string(),
        head_ref: "klaud/auto-a".to_string(),
        draft: true,
        commits: vec![CommitSpec::by(BOT).file("configs/x.yaml", "a: 1\n")],
        ..PullRequestSpec::default()
    });
    state
}

/// install-cli with the fake npm of `tests/fixtures`, behind a wrapper that records the
/// environment npm sees; `Refuses` installs a CLI reporting the wrong version (exit 1).
fn install_cli(answer: Answer) -> Setup {
    let step = Step::default();
    let server = FakeGitHub::start(repository());
    let environment = step.path("npm-environment");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-npm/npm");
    let wrapper = step.write(
        "npm",
        &format!(
            "#!/usr/bin/env bash\nenv >> '{}'\nexec '{}' \"$@\"\n",
            environment.display(),
            fixture.display()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut command = command(&step, &server, "install-cli");
    command
        .arg("--npm")
        .arg(&wrapper)
        .args(["--cli-version", "2.1.282", "--cli-attempts", "1"])
        .env(
            "FAKE_NPM_SCENARIO",
            if answer == Answer::Serves {
                "ok"
            } else {
                "wrong-version"
            },
        );
    Setup {
        step,
        server,
        command,
        child_environments: vec![environment],
        _producer: None,
    }
}

/// verify-baselines with a stand-in producer that records its environment; `Refuses` makes the
/// producer fail (a deferral, exit 0).
fn verify_baselines(answer: Answer) -> Setup {
    let step = Step::default();
    let server = FakeGitHub::start(repository());
    let producer = StandInRepository::new();
    let mut data = StandInData::new(true).with_key(
        "k1",
        vec![single_node_entry("h100", 8)],
        vec![single_node_entry("h100", 8)],
    );
    if answer != Answer::Serves {
        data.failure = Some((1, "Traceback: the producer failed\n".to_string()));
    }
    let head = producer.commit_producer(&data);
    let candidates = json!([candidate(
        "a",
        &head,
        &test_config_args("k1"),
        vec![single_node_row("h100", 8)]
    )]);
    let candidates = step.write("candidates.json", &candidates.to_string());
    step.write(
        "klaud.yml",
        "producer:\n  pass-env: [STAND_IN_ENVIRONMENT_DUMP]\n",
    );
    let environment = step.path("producer-environment");
    let mut command = command(&step, &server, "verify-baselines");
    command
        .arg("--candidates")
        .arg(&candidates)
        .arg("--repo-path")
        .arg(&producer.path)
        .env("STAND_IN_ENVIRONMENT_DUMP", &environment);
    Setup {
        step,
        server,
        command,
        child_environments: vec![environment],
        _producer: Some(producer),
    }
}

/// select, prepare-review, status and recover on a repository with one bot draft; select also
/// asks a capacity command that records its environment.
fn reading_mode(mode: &str) -> Setup {
    let step = Step::default();
    let server = FakeGitHub::start(populated_repository());
    let candidates = step.write("candidates.json", CANDIDATES);
    let mut child_environments = Vec::new();
    let mut command = command(&step, &server, mode);
    if mode == "select" {
        let environment = step.path("capacity-environment");
        let script = format!("env > '{}'; cat", environment.display());
        let config = json!({"capacity": {"command": ["sh", "-c", script], "timeout-seconds": 10}});
        step.write("klaud.yml", &config.to_string());
        child_environments.push(environment);
    }
    if mode == "select" || mode == "prepare-review" {
        command.arg("--candidates").arg(&candidates);
    }
    if mode == "status" || mode == "recover" {
        // The dashboard issue is written too: its body must carry no token either.
        command.arg("--dashboard");
    }
    Setup {
        step,
        server,
        command,
        child_environments,
        _producer: None,
    }
}

/// finish of a live session whose draft it closes, commenting the receipt and labelling it.
fn finish() -> Setup {
    let mut world = recover_support::World::new();
    world.state.add_token(TOKEN, recover_support::BOT);
    world.state.add_token(LABEL_TOKEN, LABEL_LOGIN);
    let parent = world.running_planner(&[]);
    let number = world.bot_draft("a");
    world.session("a", SessionState::Live, parent, Some(number));
    world.claim("a", parent);
    let server = world.start();
    let step = Step::default();
    step.write("klaud.yml", &format!("bot: {}\n", recover_support::BOT));
    let mut command = command(&step, &server, "finish");
    command.args([
        "--candidate",
        "a",
        "--outcome",
        "failed",
        "--cancel-wait",
        "0",
    ]);
    Setup {
        step,
        server,
        command,
        child_environments: Vec::new(),
        _producer: None,
    }
}

/// wake on the end of the bot's smoke run, which dispatches a recovery pass.
fn wake() -> Setup {
    let mut state = repository().with_token(LABEL_TOKEN, LABEL_LOGIN);
    let planner = state.ensure_workflow("klaud-plan.yml");
    state.workflows.get_mut(&planner).unwrap().inputs = Some(vec!["wake".into()]);
    let server = FakeGitHub::start(state);
    let step = Step::default();
    let ended = chrono::Utc::now() - chrono::Duration::minutes(1);
    let event = json!({
        "action": "completed",
        "workflow_run": {
            "id": 501, "name": "e2e-tests", "path": ".github/workflows/e2e-tests.yml",
            "head_branch": "klaud/auto-a", "head_sha": "0123456789abcdef0123456789abcdef01234567",
            "event": "workflow_dispatch", "status": "completed", "conclusion": "failure",
            "actor": {"login": BOT}, "triggering_actor": {"login": BOT},
            "updated_at": ended.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "repository": {"full_name": REPOSITORY},
            "head_repository": {"full_name": REPOSITORY},
        },
        "workflow": {"path": ".github/workflows/e2e-tests.yml"},
        "repository": {"full_name": REPOSITORY, "default_branch": "main"},
        "sender": {"login": BOT},
    });
    step.write("event.json", &event.to_string());
    let mut command = command(&step, &server, "wake");
    command.args(["--confirm-timeout", "5"]);
    Setup {
        step,
        server,
        command,
        child_environments: Vec::new(),
        _producer: None,
    }
}

/// A live session of `a` claimed by the step's run, with the bot's draft; `adopted` when
/// `session` already adopted it (its context written in `out/`).
fn session_world(step: &Step, adopted: bool) -> FakeGitHubHandle {
    let mut world = recover_support::World::new();
    world.state.add_token(TOKEN, recover_support::BOT);
    world.state.add_token(LABEL_TOKEN, LABEL_LOGIN);
    let number = world.bot_draft("a");
    world.session("a", SessionState::Live, step.run_id, Some(number));
    world.claim("a", step.run_id);
    world.state.put_file(
        "klaud/state",
        "records/a.json",
        r#"{"id": "a", "family": "f"}"#,
    );
    let server = world.start();
    step.write("klaud.yml", &format!("bot: {}\n", recover_support::BOT));
    if adopted {
        let mut session = command(step, &server, "session");
        session.args(["--candidate", "a"]);
        session.assert().code(0);
        server.clear_request_log();
    }
    server
}

/// `session` adopting the planner run's session: session.json, the agent's settings.
fn session_mode() -> Setup {
    let step = Step::default();
    let server = session_world(&step, false);
    let mut command = command(&step, &server, "session");
    command.args(["--candidate", "a"]);
    Setup {
        step,
        server,
        command,
        child_environments: Vec::new(),
        _producer: None,
    }
}

/// `note` in the adopted session: the ledger's attempt record and the log comment.
fn note_mode() -> Setup {
    let step = Step::default();
    let server = session_world(&step, true);
    let mut command = command(&step, &server, "note");
    command.args(["--candidate", "a", "--text", "smoke passed"]);
    Setup {
        step,
        server,
        command,
        child_environments: Vec::new(),
        _producer: None,
    }
}

/// `check-stop` as the agent CLI runs it: the token in the agent's `GH_TOKEN` only.
fn check_stop_mode() -> Setup {
    let step = Step::default();
    let server = session_world(&step, true);
    let mut command = step.command(&server, HOOK_MODE);
    command
        .env_remove("GITHUB_TOKEN")
        .env("GH_TOKEN", TOKEN)
        .arg("--context-file")
        .arg(step.path("out/session.json"))
        .write_stdin(r#"{"hook_event_name": "Stop", "stop_hook_active": false}"#);
    Setup {
        step,
        server,
        command,
        child_environments: Vec::new(),
        _producer: None,
    }
}

fn setup(mode: &str, answer: Answer) -> Setup {
    let setup = match mode {
        "install-cli" => install_cli(answer),
        "verify-baselines" => verify_baselines(answer),
        "finish" => finish(),
        "wake" => wake(),
        "session" => session_mode(),
        "note" => note_mode(),
        HOOK_MODE => check_stop_mode(),
        _ => reading_mode(mode),
    };
    match answer {
        Answer::Serves => {}
        Answer::Refuses => setup
            .server
            .set_faults(fake_github::FaultConfig::rules(vec![
                fake_github::FaultRule::nth("GET", "*", 1, 403).times(u64::MAX),
            ])),
        Answer::Unauthorized => setup.server.with_state(|state| state.tokens.clear()),
    }
    setup
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
    for mode in ALL_MODES {
        run_and_check(mode, Answer::Serves);
    }
}

#[test]
fn no_mode_writes_a_token_anywhere_when_github_refuses_or_a_child_fails() {
    for mode in ALL_MODES {
        run_and_check(mode, Answer::Refuses);
    }
}

#[test]
fn no_mode_echoes_a_token_github_does_not_know() {
    for mode in ALL_MODES
        .into_iter()
        .filter(|mode| !LOCAL_MODES.contains(mode))
    {
        run_and_check(mode, Answer::Unauthorized);
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
    ] {
        setup.command.assert().code(0);
        for dump in &setup.child_environments {
            let seen = std::fs::read_to_string(dump).expect("the child ran");
            assert!(seen.contains("PATH"), "{seen}");
        }
    }
}
