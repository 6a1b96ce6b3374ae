//! One `klaud` step of the day as the reference workflows run it: the real binary with the
//! environment its job gives it (the tokens of `klaud-plan.yml`, `klaud-candidate.yml` and
//! `klaud-wake.yml`, or the agent's environment for `note` and `check-stop`), against the fake
//! GitHub; and the requests each step sent, taken from the fake's request log and kept with the
//! step's simulated minute. Requests sent between two steps are the simulated agent's.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use tempfile::TempDir;

use super::fake_github::FakeGitHubHandle;
use super::fake_github::scenario::{BOT, BOT_TOKEN, LABEL_LOGIN, LABEL_TOKEN};
use super::step_support::read_output_file;

/// Who a request was sent as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Token {
    /// The bot's token (`github-token: secrets.KLAUD_BOT_TOKEN`).
    Bot,
    /// The workflow token (`GITHUB_TOKEN`: `label-token`, and `github-token` where a job gives
    /// it).
    Workflow,
}

impl Token {
    fn secret(self) -> &'static str {
        match self {
            Token::Bot => BOT_TOKEN,
            Token::Workflow => LABEL_TOKEN,
        }
    }

    /// The token of a request the fake logged with `login`.
    fn of_login(login: Option<&str>) -> Option<Token> {
        match login {
            Some(BOT) => Some(Token::Bot),
            Some(LABEL_LOGIN) => Some(Token::Workflow),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Token::Bot => "bot token (github-token)",
            Token::Workflow => "workflow token (GITHUB_TOKEN)",
        }
    }
}

/// The tokens a step's environment holds.
#[derive(Debug, Clone, Copy)]
pub enum Tokens {
    /// A `uses: ./` step: `github-token` and `label-token` as the job passes them (action.yml
    /// defaults both to the workflow token).
    Action { github: Token, label: Token },
    /// A step given no token (verify-baselines).
    None,
    /// Inside the agent's step: `GH_TOKEN` and `GITHUB_TOKEN` are the bot's.
    Agent,
}

/// One request of a step, as counted.
#[derive(Debug, Clone)]
pub struct Request {
    pub write: bool,
    /// `None` for a token the fake does not know (none is expected).
    pub token: Option<Token>,
}

/// What one step sent, placed at its minute of the simulated day.
#[derive(Debug, Clone)]
pub struct StepRecord {
    pub minute: u32,
    /// What is counted: a mode with the job it ran in, or the simulated agent.
    pub kind: &'static str,
    pub requests: Vec<Request>,
}

/// What a step left behind.
pub struct Ran {
    pub directory: PathBuf,
    outputs: BTreeMap<String, String>,
}

impl Ran {
    pub fn output(&self, name: &str) -> Option<&str> {
        self.outputs.get(name).map(String::as_str)
    }

    /// A JSON result file the step wrote into its work directory.
    pub fn result_file(&self, name: &str) -> Value {
        let path = self.directory.join(name);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|_| panic!("{} was written", path.display()));
        serde_json::from_str(&text).expect("a JSON result file")
    }
}

/// A step to run: the mode, where it is counted, the planner or candidate run it belongs to.
pub struct Step<'a> {
    pub mode: &'a str,
    pub kind: &'static str,
    pub run_id: u64,
    pub tokens: Tokens,
    pub arguments: Vec<&'a OsStr>,
    /// The work directory, when the step shares its job's (the evidence job's steps do).
    pub directory: Option<&'a Path>,
    pub stdin: Option<&'a str>,
    /// The `workflow_run` payload (`GITHUB_EVENT_PATH`).
    pub event: Option<&'a Value>,
}

/// Runs the steps of the day against `server` with the repository's configuration, and keeps
/// what each sent.
pub struct Runner {
    pub server: FakeGitHubHandle,
    binary: PathBuf,
    root: TempDir,
    config: PathBuf,
    invocations: usize,
    pub records: Vec<StepRecord>,
}

impl Runner {
    pub fn new(server: FakeGitHubHandle, binary: &Path, configuration: &str) -> Runner {
        let root = tempfile::tempdir().expect("a temporary directory");
        let config = root.path().join("klaud.yml");
        std::fs::write(&config, configuration).expect("the configuration is written");
        server.clear_request_log();
        Runner {
            server,
            binary: binary.to_path_buf(),
            root,
            config,
            invocations: 0,
            records: Vec::new(),
        }
    }

    /// A fresh directory under the day's root.
    pub fn directory(&mut self, name: &str) -> PathBuf {
        self.invocations += 1;
        let path = self
            .root
            .path()
            .join(format!("{:04}-{name}", self.invocations));
        std::fs::create_dir_all(&path).expect("a directory");
        path
    }

    /// The requests logged since the last step, as the agent's at `minute`.
    pub fn take_agents_requests(&mut self, minute: u32) {
        let requests = self.take_log();
        if !requests.is_empty() {
            self.records.push(StepRecord {
                minute,
                kind: "the simulated agent",
                requests,
            });
        }
    }

    fn take_log(&self) -> Vec<Request> {
        let log = self.server.request_log();
        self.server.clear_request_log();
        log.iter()
            .map(|request| Request {
                write: request.is_write(),
                token: Token::of_login(request.login.as_deref()),
            })
            .collect()
    }

    /// Runs `step` at `minute`, expecting exit 0, and records its requests.
    pub fn run(&mut self, minute: u32, step: Step<'_>) -> Ran {
        self.take_agents_requests(minute);
        let directory = match step.directory {
            Some(directory) => directory.to_path_buf(),
            None => self.directory(step.mode),
        };
        let files = self.directory(&format!("{}-files", step.mode));
        let output_file = files.join("github-output");
        let mut command = Command::new(&self.binary);
        command.env_clear();
        for name in ["PATH", "HOME", "LANG", "TMPDIR"] {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        command
            .current_dir(&files)
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_OUTPUT", &output_file)
            .env("GITHUB_STEP_SUMMARY", files.join("step-summary"))
            .env("RUNNER_TEMP", &files)
            .env("GITHUB_API_URL", self.server.base_url())
            .env("GITHUB_GRAPHQL_URL", self.server.graphql_url())
            .env("GITHUB_REPOSITORY", "acme/bench")
            .env("GITHUB_RUN_ID", step.run_id.to_string())
            .env("GITHUB_RUN_ATTEMPT", "1");
        match step.tokens {
            Tokens::Action { github, label } => {
                command
                    .env("KLAUD_GITHUB_TOKEN", github.secret())
                    .env("KLAUD_LABEL_TOKEN", label.secret());
            }
            Tokens::None => {}
            Tokens::Agent => {
                command
                    .env("GH_TOKEN", Token::Bot.secret())
                    .env("GITHUB_TOKEN", Token::Bot.secret());
            }
        }
        if let Some(event) = step.event {
            let path = files.join("event.json");
            std::fs::write(&path, event.to_string()).expect("the event is written");
            command.env("GITHUB_EVENT_PATH", path);
        }
        command
            .arg(step.mode)
            .arg("--directory")
            .arg(&directory)
            .arg("--config")
            .arg(&self.config)
            .args(&step.arguments)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("klaud starts");
        let mut stdin = child.stdin.take().expect("a stdin");
        if let Some(text) = step.stdin {
            stdin.write_all(text.as_bytes()).expect("stdin is written");
        }
        drop(stdin);
        let output = child.wait_with_output().expect("klaud runs");
        assert!(
            output.status.success(),
            "klaud {} exited {:?} at minute {minute}:\n{}{}",
            step.mode,
            output.status.code(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let requests = self.take_log();
        self.records.push(StepRecord {
            minute,
            kind: step.kind,
            requests,
        });
        Ran {
            directory,
            outputs: read_output_file(&output_file),
        }
    }
}
