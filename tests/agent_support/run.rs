//! One run of the agent CLI in print mode: the command line, a hermetic environment (a fresh
//! `HOME` and `TMPDIR`, `PATH` kept, nothing else inherited), output captured to files, and a
//! time limit that kills the CLI's process group and every process it started — the CLI runs
//! each `Bash` command in a session of its own, out of its group, so those are found by a
//! tracking variable in their environment, as the Actions runner finds a job's orphans.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

use super::model_server::ModelServer;

/// The variable every process of one run carries, with a value unique to the run.
pub const TRACKING_VARIABLE: &str = "AGENT_RUN_TRACKING_ID";
/// The time limit of a run unless [`AgentRun::timeout`] sets another.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A child run to its end or its time limit.
pub struct Finished {
    /// The exit code; `None` when a signal ended the child (as the time limit does).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// Processes carrying the run's tracking value that were still alive once the child had
    /// ended (or been killed); each was killed.
    pub stragglers: Vec<u32>,
}

/// Runs `command` in a process group of its own with stdin empty and stdout and stderr
/// written to files in `capture`; at `limit`, kills the group. Either way, then kills every
/// process whose environment holds `TRACKING_VARIABLE=tracking` (when given; the caller set
/// it on `command`).
pub fn run_bounded(
    command: &mut Command,
    limit: Duration,
    capture: &Path,
    tracking: Option<&str>,
) -> Finished {
    let stdout_path = capture.join("stdout");
    let stderr_path = capture.join("stderr");
    let file = |path: &Path| {
        std::fs::File::create(path)
            .unwrap_or_else(|error| panic!("cannot create {}: {error}", path.display()))
    };
    command
        .stdin(Stdio::null())
        .stdout(file(&stdout_path))
        .stderr(file(&stderr_path))
        .process_group(0);
    let started = Instant::now();
    let mut child = command.spawn().unwrap_or_else(|error| {
        panic!(
            "cannot run {}: {error}",
            command.get_program().to_string_lossy()
        )
    });
    let (status, timed_out) = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break (status, false);
        }
        if started.elapsed() >= limit {
            kill_group(child.id());
            break (child.wait().expect("wait for the killed child"), true);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = started.elapsed();
    let stragglers = tracking.map(kill_tracked).unwrap_or_default();
    let read = |path: &Path| {
        String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned()
    };
    Finished {
        exit_code: status.code(),
        timed_out,
        stdout: read(&stdout_path),
        stderr: read(&stderr_path),
        elapsed,
        stragglers,
    }
}

fn kill_group(leader: u32) {
    let group = i32::try_from(leader).expect("a pid fits in i32");
    // SAFETY: kill(2) with a negative pid signals that process group; no memory is involved.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
}

/// Kills every process whose environment holds `TRACKING_VARIABLE=tracking`, until none is
/// left; returns their pids.
pub fn kill_tracked(tracking: &str) -> Vec<u32> {
    let entry = format!("{TRACKING_VARIABLE}={tracking}").into_bytes();
    let mut killed = Vec::new();
    for _ in 0..100 {
        let alive = tracked_processes(&entry);
        if alive.is_empty() {
            return killed;
        }
        for pid in alive {
            let signalled = i32::try_from(pid).expect("a pid fits in i32");
            // SAFETY: kill(2) on one pid; no memory is involved.
            unsafe {
                libc::kill(signalled, libc::SIGKILL);
            }
            if !killed.contains(&pid) {
                killed.push(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("processes of the run survive SIGKILL: {killed:?}");
}

/// Live processes whose environment has `entry` (zombies have an empty environment).
fn tracked_processes(entry: &[u8]) -> Vec<u32> {
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    processes
        .filter_map(|process| {
            let process = process.ok()?;
            let pid: u32 = process.file_name().to_str()?.parse().ok()?;
            let environment = std::fs::read(process.path().join("environ")).ok()?;
            environment
                .split(|byte| *byte == 0)
                .any(|variable| variable == entry)
                .then_some(pid)
        })
        .collect()
}

/// A unique tracking value per run of this test process.
fn next_tracking_value() -> String {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    )
}

/// `claude -p PROMPT --output-format json [--settings FILE] [--allowedTools TOOLS] [ARGS…]`,
/// built up and then [`run`](AgentRun::run).
pub struct AgentRun {
    cli: PathBuf,
    base_url: Option<String>,
    prompt: String,
    settings: Option<Value>,
    cwd: Option<PathBuf>,
    environment: Vec<(OsString, OsString)>,
    allowed_tools: Option<String>,
    arguments: Vec<OsString>,
    timeout: Duration,
}

impl AgentRun {
    /// A run of the CLI at `cli` (see [`agent_cli`](super::agent_cli)).
    pub fn new(cli: impl Into<PathBuf>) -> AgentRun {
        AgentRun {
            cli: cli.into(),
            base_url: None,
            prompt: String::new(),
            settings: None,
            cwd: None,
            environment: Vec::new(),
            allowed_tools: None,
            arguments: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The model the CLI talks to (required, unless [`base_url`](AgentRun::base_url) is set).
    pub fn model_server(self, server: &ModelServer) -> AgentRun {
        self.base_url(server.base_url())
    }

    /// `ANTHROPIC_BASE_URL` itself, e.g. a closed port on 127.0.0.1.
    pub fn base_url(self, url: impl Into<String>) -> AgentRun {
        AgentRun {
            base_url: Some(url.into()),
            ..self
        }
    }

    pub fn prompt(self, prompt: impl Into<String>) -> AgentRun {
        AgentRun {
            prompt: prompt.into(),
            ..self
        }
    }

    /// Settings given with `--settings` (written to a file of the run).
    pub fn settings_json(self, settings: Value) -> AgentRun {
        AgentRun {
            settings: Some(settings),
            ..self
        }
    }

    /// The working directory [default: an empty directory of the run].
    pub fn cwd(self, directory: impl Into<PathBuf>) -> AgentRun {
        AgentRun {
            cwd: Some(directory.into()),
            ..self
        }
    }

    /// One more variable of the CLI's environment (set last: it may replace a default).
    pub fn env(mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> AgentRun {
        self.environment
            .push((name.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// `--allowedTools TOOLS`: the tools that run without asking (in print mode nobody can
    /// be asked, so any other tool call is denied).
    pub fn allowed_tools(self, tools: impl Into<String>) -> AgentRun {
        AgentRun {
            allowed_tools: Some(tools.into()),
            ..self
        }
    }

    /// One more argument after the others.
    pub fn arg(mut self, argument: impl AsRef<OsStr>) -> AgentRun {
        self.arguments.push(argument.as_ref().to_owned());
        self
    }

    /// The time limit, after which the CLI and everything it started are killed
    /// [default: [`DEFAULT_TIMEOUT`]].
    pub fn timeout(self, limit: Duration) -> AgentRun {
        AgentRun {
            timeout: limit,
            ..self
        }
    }

    /// Runs the CLI to its end or its time limit.
    #[allow(clippy::disallowed_methods)] // spawns the CLI and passes PATH on
    pub fn run(self) -> AgentOutcome {
        let base_url = self.base_url.clone().expect(
            "an agent run needs model_server() or base_url(): the CLI must not reach a real API",
        );
        let directory = tempfile::tempdir().expect("a directory for the run");
        let home = directory.path().join("home");
        let temporary = directory.path().join("tmp");
        let work = directory.path().join("work");
        for path in [&home, &temporary, &work] {
            std::fs::create_dir(path).expect("create a directory of the run");
        }
        let tracking = next_tracking_value();
        let mut command = Command::new(&self.cli);
        command
            .arg("-p")
            .arg(&self.prompt)
            .args(["--output-format", "json"]);
        if let Some(settings) = &self.settings {
            let path = directory.path().join("settings.json");
            std::fs::write(&path, settings.to_string()).expect("write the settings file");
            command.arg("--settings").arg(path);
        }
        if let Some(tools) = &self.allowed_tools {
            command.arg("--allowedTools").arg(tools);
        }
        command
            .args(&self.arguments)
            .current_dir(self.cwd.as_deref().unwrap_or(&work))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("TMPDIR", &temporary)
            .env("ANTHROPIC_BASE_URL", base_url)
            .env("ANTHROPIC_API_KEY", "sk-ant-scripted-model-server")
            .env("DISABLE_TELEMETRY", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env(TRACKING_VARIABLE, &tracking)
            .envs(self.environment.iter().map(|(name, value)| (name, value)));
        let finished = run_bounded(
            &mut command,
            self.timeout,
            directory.path(),
            Some(&tracking),
        );
        let result = serde_json::from_str(finished.stdout.trim()).ok();
        AgentOutcome {
            result,
            finished,
            directory,
        }
    }
}

/// What one run left: the result JSON, the captured output, how it ended, and its directory
/// (`home/` with the CLI's transcripts, `tmp/`, the settings file), kept until this is
/// dropped.
pub struct AgentOutcome {
    /// stdout parsed as JSON: the `--output-format json` result (`None` when it is not JSON,
    /// e.g. after a kill).
    pub result: Option<Value>,
    pub finished: Finished,
    directory: TempDir,
}

impl AgentOutcome {
    /// The result JSON; panics with the run's output when there is none.
    pub fn result(&self) -> &Value {
        self.result
            .as_ref()
            .unwrap_or_else(|| panic!("the CLI printed no result JSON; {}", self.describe()))
    }

    /// The `HOME` the CLI ran with.
    pub fn home(&self) -> PathBuf {
        self.directory.path().join("home")
    }

    /// Exit, time and output, for assertion messages.
    pub fn describe(&self) -> String {
        let finished = &self.finished;
        format!(
            "exit {:?}, timed out {}, {:.1} s, stragglers {:?}\n--- stdout\n{}\n--- stderr\n{}",
            finished.exit_code,
            finished.timed_out,
            finished.elapsed.as_secs_f64(),
            finished.stragglers,
            finished.stdout,
            finished.stderr
        )
    }
}
