//! Every mode run once as the action runs it, against a small world where it has something to
//! do: a fake GitHub with the bot's draft (or a live session, or a run that ended), the step's
//! files, and, for the modes that start children, a child that records its environment. Used by
//! the tests that look at everything a mode sends and writes (`tests/token_secrecy.rs`,
//! `tests/api_surface.rs`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use klaud::core::ledger::SessionState;
use serde_json::json;

use super::fake_github::{
    self, CommitSpec, FakeGitHub, FakeGitHubHandle, PullRequestSpec, RepoState,
};
use super::github_mode_support::{BOT, REPOSITORY, Step, TOKEN, repository};
use super::recover_support;
use super::verify_baselines_support::{
    StandInData, StandInRepository, candidate, single_node_entry, single_node_row, test_config_args,
};

/// The `label-token`, as recognizable as the `github-token`.
pub const LABEL_TOKEN: &str = "ghs_labelSecretToken9876543210fedcba";
pub const LABEL_LOGIN: &str = "github-actions[bot]";

pub const CANDIDATES: &str = r#"[{"id": "a", "family": "configs/x.yaml:a", "targets": ["b200"]},
                             {"id": "b", "family": "configs/x.yaml:b"}]"#;

/// Every mode klaud has, as `klaud --help` names them: a new mode is run by these tests too
/// (as [`reading_mode`] when it has no setup of its own here).
pub fn all_modes() -> Vec<String> {
    klaud::shell::cli::Mode::names()
}

/// The agent CLI's hook: its stdout is its answer alone, so it masks nothing (a mask is a
/// workflow command) and must print no token.
pub const HOOK_MODE: &str = "check-stop";

/// Modes that never talk to GitHub.
pub const LOCAL_MODES: [&str; 2] = ["install-cli", "verify-baselines"];

/// How the world answers a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Everything works (for the local modes: npm installs, the producer answers).
    Serves,
    /// GitHub refuses every read with 403; the local modes' child fails instead.
    Refuses,
    /// GitHub does not know the token (401).
    Unauthorized,
}

/// One mode's run: its step files, its fake GitHub, and where a child recorded its environment.
pub struct Setup {
    pub step: Step,
    pub server: FakeGitHubHandle,
    pub command: assert_cmd::Command,
    /// Files a child klaud started wrote its environment into.
    pub child_environments: Vec<PathBuf>,
    /// The stand-in producer's repository, kept while the command needs it.
    pub _producer: Option<StandInRepository>,
}

impl Setup {
    /// A run that starts no child klaud watches and needs no producer.
    pub fn of(step: Step, server: FakeGitHubHandle, command: assert_cmd::Command) -> Self {
        Setup {
            step,
            server,
            command,
            child_environments: Vec::new(),
            _producer: None,
        }
    }
}

/// `klaud <mode>` as the action runs it: the token in `KLAUD_GITHUB_TOKEN` and `GITHUB_TOKEN`,
/// the label token in `KLAUD_LABEL_TOKEN`.
pub fn command(step: &Step, server: &FakeGitHubHandle, mode: &str) -> assert_cmd::Command {
    let mut command = step.command(server, mode);
    command
        .env("KLAUD_GITHUB_TOKEN", TOKEN)
        .env("KLAUD_LABEL_TOKEN", LABEL_TOKEN);
    command
}

pub fn populated_repository() -> RepoState {
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
pub fn install_cli(answer: Answer) -> Setup {
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
pub fn verify_baselines(answer: Answer) -> Setup {
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
pub fn reading_mode(mode: &str) -> Setup {
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
pub fn finish() -> Setup {
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
    Setup::of(step, server, command)
}

/// wake on the end of the bot's smoke run, which dispatches a recovery pass.
pub fn wake() -> Setup {
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
    Setup::of(step, server, command)
}

/// A live session of `a` claimed by the step's run, with the bot's draft; `adopted` when
/// `session` already adopted it (its context written in `out/`).
pub fn session_world(step: &Step, adopted: bool) -> FakeGitHubHandle {
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
pub fn session_mode() -> Setup {
    let step = Step::default();
    let server = session_world(&step, false);
    let mut command = command(&step, &server, "session");
    command.args(["--candidate", "a"]);
    Setup::of(step, server, command)
}

/// `note` in the adopted session: the ledger's attempt record and the log comment.
pub fn note_mode() -> Setup {
    let step = Step::default();
    let server = session_world(&step, true);
    let mut command = command(&step, &server, "note");
    command.args(["--candidate", "a", "--text", "smoke passed"]);
    Setup::of(step, server, command)
}

/// `check-stop` as the agent CLI runs it: the token in the agent's `GH_TOKEN` only.
pub fn check_stop_mode() -> Setup {
    let step = Step::default();
    let server = session_world(&step, true);
    let mut command = step.command(&server, HOOK_MODE);
    command
        .env_remove("GITHUB_TOKEN")
        .env("GH_TOKEN", TOKEN)
        .arg("--context-file")
        .arg(step.path("out/session.json"))
        .write_stdin(r#"{"hook_event_name": "Stop", "stop_hook_active": false}"#);
    Setup::of(step, server, command)
}

/// A generator that records its environment and renders one entry of the one family.
const RECORDING_GENERATOR: &str = r#"import json, os, sys
dump = os.environ.get("STAND_IN_ENVIRONMENT_DUMP")
if dump:
    with open(dump, "w") as handle:
        handle.write("\n".join(f"{k}={v}" for k, v in os.environ.items()))
json.dump([{"model-prefix": "dsr1", "runner": "b200", "framework": "vllm", "precision": "fp8",
            "spec-decoding": "none", "disagg": False, "isl": 1024, "osl": 1024,
            "image": "vllm/vllm-openai:v1"}], sys.stdout)
"#;

/// discover of a checkout with one family, its generator recording its environment, and a
/// catalog file with the family's row.
pub fn discover() -> Setup {
    let step = Step::default();
    let server = FakeGitHub::start(populated_repository());
    let checkout = step.path("checkout");
    for (path, text) in [
        (
            "configs/x-master.yaml",
            "k1:\n  image: vllm/vllm-openai:v1\n",
        ),
        ("configs/runners.yaml", "b200: [b200-1]\n"),
        (
            "utils/matrix_logic/generate_sweep_configs.py",
            RECORDING_GENERATOR,
        ),
    ] {
        let full = checkout.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    }
    for args in [
        vec!["init", "-q"],
        vec!["add", "-A"],
        vec![
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-q",
            "-m",
            "x",
        ],
    ] {
        let status = std::process::Command::new("git")
            .args(&args)
            .current_dir(&checkout)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }
    let catalog = json!([{"model": "dsr1", "hardware": "b200", "framework": "vllm",
        "precision": "fp8", "spec_method": "none", "disagg": false, "isl": 1024, "osl": 1024,
        "benchmark_type": "single_turn", "image": "vllm/vllm-openai:v1", "date": "2026-08-01"}]);
    let images = step.write("latest-images.json", &catalog.to_string());
    let empty = step.write("empty-feed.json", "[]");
    let config = json!({
        "producer": {"pass-env": ["STAND_IN_ENVIRONMENT_DUMP"]},
        "discovery": {"feeds": {"images": images, "benchmarks": empty, "workflow-info": empty}},
    });
    step.write("klaud.yml", &config.to_string());
    let environment = step.path("generator-environment");
    let mut command = command(&step, &server, "discover");
    command
        .arg("--repo-path")
        .arg(&checkout)
        .env("STAND_IN_ENVIRONMENT_DUMP", &environment);
    Setup {
        step,
        server,
        command,
        child_environments: vec![environment],
        _producer: None,
    }
}

pub fn setup(mode: &str, answer: Answer) -> Setup {
    let setup = match mode {
        "discover" => discover(),
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
