//! Running the real `klaud select` against the fake GitHub: a work directory per pass, a
//! hermetic environment (no inherited `GITHUB_*`, `KLAUD_*` or `RUNNER_*`), the step's output and
//! summary files, and reading back `selection.json`, the outputs and the stored ledger.

#![allow(dead_code)]

#[path = "../step_support/mod.rs"]
mod step_support;

pub use step_support::{hermetic_klaud, read_output_file};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use klaud::core::ledger::Ledger;
use serde_json::Value;
use tempfile::TempDir;

use super::fake_github::{FakeGitHubHandle, RepoState};

pub const TOKEN: &str = "ghs_selectTestToken0123456789";
pub const BOT: &str = "klaud-bot";
pub const STATE_BRANCH: &str = "klaud/state";
pub const LEDGER_FILE: &str = "ledger.json";

/// `acme/bench` with the bot's token.
pub fn repository() -> RepoState {
    RepoState::new("acme", "bench").with_token(TOKEN, BOT)
}

/// Stores `ledger` on the state branch.
pub fn seed_ledger(state: &mut RepoState, ledger: &Ledger) {
    state.put_file(STATE_BRANCH, LEDGER_FILE, &ledger.to_json());
}

/// The ledger as stored, or an empty one when the branch or file does not exist.
pub fn stored_ledger(server: &FakeGitHubHandle) -> Ledger {
    match server.with_state(|state| state.read_file(STATE_BRANCH, LEDGER_FILE)) {
        Some(text) => Ledger::from_json(&text).expect("a valid ledger"),
        None => Ledger::empty(),
    }
}

/// Candidates `(id, family)` as a candidates file's JSON.
pub fn candidates_json(candidates: &[(&str, &str)]) -> String {
    let list: Vec<Value> = candidates
        .iter()
        .map(|(id, family)| serde_json::json!({"id": id, "family": family}))
        .collect();
    Value::Array(list).to_string()
}

/// One pass's files: `candidates.json`, the work directory `out/`, `github-output` and
/// `step-summary`.
pub struct Pass {
    root: TempDir,
    run_id: u64,
}

impl Pass {
    pub fn new(run_id: u64, candidates: &str) -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("candidates.json"), candidates).unwrap();
        Pass { root, run_id }
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.path().join(relative)
    }

    pub fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path(relative);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `klaud select` for this pass against `server`, inside a simulated Actions step.
    pub fn command(&self, server: &FakeGitHubHandle) -> std::process::Command {
        let mut command = hermetic_klaud();
        command
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_OUTPUT", self.path("github-output"))
            .env("GITHUB_STEP_SUMMARY", self.path("step-summary"))
            .env("GITHUB_API_URL", server.base_url())
            .env("GITHUB_GRAPHQL_URL", server.graphql_url())
            .env("GITHUB_REPOSITORY", "acme/bench")
            .env("GITHUB_RUN_ID", self.run_id.to_string())
            .env("GITHUB_RUN_ATTEMPT", "1")
            .env("GITHUB_TOKEN", TOKEN)
            .arg("select")
            .arg("--candidates")
            .arg(self.path("candidates.json"))
            .arg("--directory")
            .arg(self.path("out"))
            .arg("--config")
            .arg(self.path("klaud.yml"));
        command
    }

    /// `klaud select` wrapped for assertions, with a deadline.
    pub fn assert_command(&self, server: &FakeGitHubHandle) -> assert_cmd::Command {
        let mut command = assert_cmd::Command::from_std(self.command(server));
        command.timeout(Duration::from_secs(60));
        command
    }

    /// Runs the pass and checks its exit code; returns stdout (workflow commands and log).
    pub fn run(
        &self,
        server: &FakeGitHubHandle,
        configure: impl FnOnce(&mut assert_cmd::Command),
        code: i32,
    ) -> String {
        let mut command = self.assert_command(server);
        configure(&mut command);
        let assert = command.assert().code(code);
        let output = assert.get_output();
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    }

    /// The step outputs written to `$GITHUB_OUTPUT`.
    pub fn outputs(&self) -> BTreeMap<String, String> {
        read_output_file(&self.path("github-output"))
    }

    pub fn summary(&self) -> String {
        std::fs::read_to_string(self.path("step-summary")).unwrap_or_default()
    }

    pub fn selection(&self) -> Value {
        let text = std::fs::read_to_string(self.path("out/selection.json"))
            .expect("selection.json was written");
        serde_json::from_str(&text).unwrap()
    }

    pub fn candidate_file(&self, id: &str) -> Value {
        let text =
            std::fs::read_to_string(self.path(&format!("out/candidates/{id}/candidate.json")))
                .expect("candidate.json was written");
        serde_json::from_str(&text).unwrap()
    }

    /// `candidates` output as ids.
    pub fn selected_ids(&self) -> Vec<String> {
        let outputs = self.outputs();
        serde_json::from_str(outputs.get("candidates").expect("a candidates output")).unwrap()
    }
}

/// Each candidate's decision in `selection.json`, in file order.
pub fn decisions(selection: &Value) -> Vec<(String, String)> {
    selection["candidates"]
        .as_array()
        .expect("a candidates array")
        .iter()
        .map(|record| {
            (
                record["id"].as_str().unwrap().to_string(),
                record["decision"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Requests that change something, from the fake's log.
pub fn write_requests(server: &FakeGitHubHandle) -> Vec<String> {
    server
        .request_log()
        .iter()
        .filter(|request| request.is_write())
        .map(|request| format!("{} {}", request.method, request.path))
        .collect()
}
