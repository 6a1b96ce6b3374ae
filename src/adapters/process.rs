//! The one place klaud starts child processes: a deadline that kills the whole process group,
//! bounded capture of stdout and stderr, and an explicit environment policy.
//!
//! Callers decide what the output means; this module only runs and reports.

#![allow(clippy::disallowed_methods)] // the sanctioned home of process spawning

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// The variables that carry a token klaud was given (the action's `github-token` and
/// `label-token` inputs, and the `GITHUB_TOKEN` fallback): no child inherits them, so neither npm,
/// the packages it installs, nor a configured command ever sees a token.
pub const TOKEN_VARIABLES: [&str; 3] = ["GITHUB_TOKEN", "KLAUD_GITHUB_TOKEN", "KLAUD_LABEL_TOKEN"];

/// Which environment the child sees.
#[derive(Debug, Clone)]
pub enum ChildEnvironment {
    /// Everything klaud itself sees except [`TOKEN_VARIABLES`], plus these additions.
    Inherited(Vec<(OsString, OsString)>),
    /// Only these variables (no token reaches the child by accident).
    Only(Vec<(OsString, OsString)>),
}

/// A command to run.
#[derive(Debug, Clone)]
pub struct ChildCommand {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub working_directory: Option<PathBuf>,
    pub environment: ChildEnvironment,
    pub stdin: Option<Vec<u8>>,
    pub timeout: Duration,
    /// Bytes of stdout kept; the rest is drained and dropped.
    pub stdout_limit: usize,
    /// Bytes of stderr kept; the rest is drained and dropped.
    pub stderr_limit: usize,
}

impl ChildCommand {
    pub fn new(program: impl Into<OsString>, timeout: Duration) -> Self {
        ChildCommand {
            program: program.into(),
            args: Vec::new(),
            working_directory: None,
            environment: ChildEnvironment::Inherited(Vec::new()),
            stdin: None,
            timeout,
            stdout_limit: 4 * 1024 * 1024,
            stderr_limit: 256 * 1024,
        }
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn args<I: IntoIterator<Item = A>, A: Into<OsString>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// A human-readable rendering of the command line, for logs.
    pub fn display(&self) -> String {
        std::iter::once(&self.program)
            .chain(self.args.iter())
            .map(|part| part.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What a finished (or killed) child left behind.
#[derive(Debug, Clone)]
pub struct ChildOutput {
    /// The exit code; `None` when a signal ended it.
    pub exit: Option<i32>,
    /// True when the deadline passed and the process group was killed.
    pub timed_out: bool,
    pub stdout: String,
    pub stdout_truncated: bool,
    pub stderr: String,
    pub stderr_truncated: bool,
    pub elapsed: Duration,
}

impl ChildOutput {
    pub fn succeeded(&self) -> bool {
        !self.timed_out && self.exit == Some(0)
    }

    /// The last non-empty stderr line, trimmed.
    pub fn last_stderr_line(&self) -> Option<&str> {
        self.stderr
            .lines()
            .map(str::trim)
            .rev()
            .find(|line| !line.is_empty())
    }
}

/// How long readers may keep draining pipes after the group was killed (a grandchild that left
/// the group could hold them open forever).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Runs the command to completion or to its deadline.
///
/// The child leads a new process group, so a timeout kills every process it started (npm starts
/// node, which starts more). Spawn failures (e.g. program not found) are returned as errors.
pub async fn run_child(command: &ChildCommand) -> std::io::Result<ChildOutput> {
    let mut process = Command::new(&command.program);
    process
        .args(&command.args)
        .stdin(if command.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(directory) = &command.working_directory {
        process.current_dir(directory);
    }
    match &command.environment {
        ChildEnvironment::Inherited(additions) => {
            for name in TOKEN_VARIABLES {
                process.env_remove(name);
            }
            process.envs(additions.iter().cloned());
        }
        ChildEnvironment::Only(variables) => {
            process.env_clear().envs(variables.iter().cloned());
        }
    }

    let started = Instant::now();
    let mut child = process.spawn()?;
    let group = child.id();

    if let (Some(input), Some(mut stdin)) = (command.stdin.clone(), child.stdin.take()) {
        tokio::spawn(async move {
            // A child that exits without reading its input is not an error of ours.
            let _ = stdin.write_all(&input).await;
        });
    }
    let stdout_reader = tokio::spawn(read_bounded(
        child.stdout.take().expect("stdout is piped"),
        command.stdout_limit,
    ));
    let stderr_reader = tokio::spawn(read_bounded(
        child.stderr.take().expect("stderr is piped"),
        command.stderr_limit,
    ));

    let (status, timed_out) = match tokio::time::timeout(command.timeout, child.wait()).await {
        Ok(status) => (Some(status?), false),
        Err(_) => {
            kill_group(group);
            let _ = child.kill().await;
            (child.wait().await.ok(), true)
        }
    };
    if !timed_out {
        // The leader is gone; anything it left running in its group goes too.
        kill_group(group);
    }

    let (stdout, stdout_truncated) = collect(stdout_reader).await;
    let (stderr, stderr_truncated) = collect(stderr_reader).await;
    Ok(ChildOutput {
        exit: status.and_then(|status| status.code()),
        timed_out,
        stdout,
        stdout_truncated,
        stderr,
        stderr_truncated,
        elapsed: started.elapsed(),
    })
}

fn kill_group(group: Option<u32>) {
    if let Some(pid) = group.and_then(|pid| i32::try_from(pid).ok()) {
        // SAFETY: kill(2) with a negative pid signals the process group we created; it touches no
        // memory. ESRCH (group already gone) is expected and ignored.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

async fn collect(reader: tokio::task::JoinHandle<(Vec<u8>, bool)>) -> (String, bool) {
    let abort = reader.abort_handle();
    match tokio::time::timeout(DRAIN_GRACE, reader).await {
        Ok(Ok((bytes, truncated))) => (String::from_utf8_lossy(&bytes).into_owned(), truncated),
        Ok(Err(_)) => (String::new(), true),
        Err(_) => {
            abort.abort();
            (String::new(), true)
        }
    }
}

async fn read_bounded(mut source: impl AsyncRead + Unpin, limit: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buffer = [0u8; 8192];
    loop {
        match source.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                let room = limit.saturating_sub(kept.len());
                if read > room {
                    truncated = true;
                }
                kept.extend_from_slice(&buffer[..read.min(room)]);
            }
        }
    }
    (kept, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(script: &str, timeout: Duration) -> ChildCommand {
        ChildCommand::new("sh", timeout).args(["-c", script])
    }

    #[tokio::test]
    async fn captures_exit_stdout_and_stderr_separately() {
        let output = run_child(&shell(
            "echo out; echo err >&2; exit 3",
            Duration::from_secs(10),
        ))
        .await
        .unwrap();
        assert_eq!(output.exit, Some(3));
        assert_eq!(output.stdout, "out\n");
        assert_eq!(output.last_stderr_line(), Some("err"));
        assert!(!output.timed_out);
    }

    #[tokio::test]
    async fn a_deadline_kills_the_whole_group_including_grandchildren() {
        let output = run_child(&shell(
            "sleep 30 & sleep 30; wait",
            Duration::from_millis(300),
        ))
        .await
        .unwrap();
        assert!(output.timed_out);
        assert!(
            output.elapsed < Duration::from_secs(10),
            "{:?}",
            output.elapsed
        );
    }

    #[tokio::test]
    async fn stdout_beyond_the_limit_is_dropped_and_flagged() {
        let mut command = shell("head -c 100000 /dev/zero", Duration::from_secs(10));
        command.stdout_limit = 1000;
        let output = run_child(&command).await.unwrap();
        assert_eq!(output.stdout.len(), 1000);
        assert!(output.stdout_truncated);
        assert!(output.succeeded());
    }

    #[tokio::test]
    async fn an_only_environment_hides_everything_else() {
        let mut command = ChildCommand::new("/usr/bin/env", Duration::from_secs(10));
        command.environment = ChildEnvironment::Only(vec![("HOME".into(), "/nowhere".into())]);
        let output = run_child(&command).await.unwrap();
        assert_eq!(output.stdout, "HOME=/nowhere\n");
    }

    #[tokio::test]
    async fn stdin_reaches_the_child() {
        let mut command = shell("cat", Duration::from_secs(10));
        command.stdin = Some(b"[\"a\"]".to_vec());
        let output = run_child(&command).await.unwrap();
        assert_eq!(output.stdout, "[\"a\"]");
    }

    #[tokio::test]
    async fn a_missing_program_is_a_spawn_error() {
        let command = ChildCommand::new("/nonexistent/klaud-test-program", Duration::from_secs(1));
        assert!(run_child(&command).await.is_err());
    }
}
