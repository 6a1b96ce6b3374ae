//! Running one real `klaud <mode>` step against the fake GitHub inside a simulated Actions step:
//! a temporary root with the work directory `out/`, `github-output`, `step-summary` and an
//! optional event payload; a hermetic environment (no inherited `GITHUB_*`, `KLAUD_*` or
//! `RUNNER_*`); and reading back outputs, summary and result files.

#![allow(dead_code)]

#[path = "../step_support/mod.rs"]
mod step_support;

pub use step_support::{hermetic_klaud, read_output_file};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;

use super::fake_github::{FakeGitHubHandle, RepoState};

pub const TOKEN: &str = "ghs_modeTestToken0123456789abcdef";
pub const BOT: &str = "Klaud-Cold";
pub const REPOSITORY: &str = "acme/bench";

/// `acme/bench` with the bot's token, on the system clock.
pub fn repository() -> RepoState {
    RepoState::new("acme", "bench").with_token(TOKEN, BOT)
}

/// One step's files.
pub struct Step {
    root: TempDir,
    pub run_id: u64,
}

impl Default for Step {
    fn default() -> Self {
        Step::new(7001)
    }
}

impl Step {
    pub fn new(run_id: u64) -> Self {
        Step {
            root: tempfile::tempdir().unwrap(),
            run_id,
        }
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.path().join(relative)
    }

    pub fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path(relative);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `klaud <mode>` against `server` as a GitHub Actions step would run it; the event payload
    /// is `event.json` when the step wrote one.
    pub fn command(&self, server: &FakeGitHubHandle, mode: &str) -> assert_cmd::Command {
        let mut command = hermetic_klaud();
        command
            .current_dir(self.root.path())
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_OUTPUT", self.path("github-output"))
            .env("GITHUB_STEP_SUMMARY", self.path("step-summary"))
            .env("GITHUB_API_URL", server.base_url())
            .env("GITHUB_GRAPHQL_URL", server.graphql_url())
            .env("GITHUB_REPOSITORY", REPOSITORY)
            .env("GITHUB_RUN_ID", self.run_id.to_string())
            .env("GITHUB_RUN_ATTEMPT", "1")
            .env("GITHUB_TOKEN", TOKEN)
            .arg(mode)
            .arg("--directory")
            .arg(self.path("out"))
            .arg("--config")
            .arg(self.path("klaud.yml"));
        if self.path("event.json").exists() {
            command.env("GITHUB_EVENT_PATH", self.path("event.json"));
        }
        let mut command = assert_cmd::Command::from_std(command);
        command.timeout(Duration::from_secs(120));
        command
    }

    /// Runs `command` and checks its exit code; returns stdout and stderr together.
    pub fn run(&self, mut command: assert_cmd::Command, code: i32) -> String {
        let assert = command.assert().code(code);
        let output = assert.get_output();
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    }

    pub fn outputs(&self) -> BTreeMap<String, String> {
        read_output_file(&self.path("github-output"))
    }

    pub fn output(&self, name: &str) -> String {
        self.outputs()
            .get(name)
            .cloned()
            .unwrap_or_else(|| panic!("no output {name}"))
    }

    pub fn summary(&self) -> String {
        std::fs::read_to_string(self.path("step-summary")).unwrap_or_default()
    }

    /// A JSON file the step wrote into its work directory.
    pub fn result_file(&self, name: &str) -> Value {
        let text = std::fs::read_to_string(self.path(&format!("out/{name}")))
            .unwrap_or_else(|_| panic!("{name} was written"));
        serde_json::from_str(&text).unwrap()
    }
}

/// Requests as `METHOD path`, in order.
pub fn requests(server: &FakeGitHubHandle) -> Vec<String> {
    server
        .request_log()
        .iter()
        .map(|request| format!("{} {}", request.method, request.path))
        .collect()
}

/// Requests that change something.
pub fn write_requests(server: &FakeGitHubHandle) -> Vec<String> {
    server
        .request_log()
        .iter()
        .filter(|request| request.is_write())
        .map(|request| format!("{} {}", request.method, request.path))
        .collect()
}
