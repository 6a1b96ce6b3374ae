//! Running the real `klaud recover` against the fake GitHub: a repository world built piece by
//! piece (planner runs and their jobs, the bot's pull requests, sweeps, smoke runs, ledger
//! sessions and claims), a hermetic environment per pass (no inherited `GITHUB_*`, `KLAUD_*` or
//! `RUNNER_*`), and reading back the outputs, `recover.json`, the ledger and the request log.

#![allow(dead_code)]

#[path = "../step_support/mod.rs"]
mod step_support;

pub use step_support::{hermetic_klaud, read_output_file};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use klaud::core::ledger::{Claim, Ledger, Session, SessionState};
use klaud::core::outcome::Outcome;
use serde_json::Value;
use tempfile::TempDir;

use super::fake_github::clock::{HOUR, MINUTE};
use super::fake_github::{
    ClosedSpec, CommitSpec, FakeGitHubHandle, JobSpec, PullRequestSpec, RepoState, RunSpec,
    Timestamp,
};

pub const BOT: &str = "klaud-bot";
pub const BOT_TOKEN: &str = "ghs_recoverBotToken0123456789";
pub const LABEL_TOKEN: &str = "ghs_recoverLabelToken0123456789";
pub const LABEL_LOGIN: &str = "github-actions[bot]";
pub const MAINTAINER: &str = "maintainer-ada";
pub const STATE_BRANCH: &str = "klaud/state";
pub const LEDGER_FILE: &str = "ledger.json";
pub const PLANNER: &str = "klaud-plan.yml";
pub const CANDIDATE_WORKFLOW: &str = "klaud-candidate.yml";
pub const SMOKE: &str = "e2e-tests.yml";
pub const SWEEP: &str = "run-sweep.yml";

pub fn branch(candidate: &str) -> String {
    format!("klaud/auto-{candidate}")
}

pub fn family(candidate: &str) -> String {
    format!("configs/x-master.yaml:{candidate}")
}

fn time(timestamp: Timestamp) -> DateTime<Utc> {
    Utc.timestamp_opt(timestamp.0, 0).single().unwrap()
}

/// A repository and its ledger, built before the server starts.
pub struct World {
    pub state: RepoState,
    pub ledger: Ledger,
    pub now: Timestamp,
}

impl Default for World {
    fn default() -> Self {
        World::new()
    }
}

impl World {
    pub fn new() -> Self {
        let now = Timestamp::system_now();
        let mut state = RepoState::new("acme", "bench")
            .with_token(BOT_TOKEN, BOT)
            .with_token(LABEL_TOKEN, LABEL_LOGIN);
        state.push_commits(
            "main",
            vec![
                CommitSpec::by(MAINTAINER)
                    .file("configs/x-master.yaml", "x: 1\n")
                    .at(now.minus(48 * HOUR)),
            ],
        );
        for workflow in [PLANNER, CANDIDATE_WORKFLOW, SMOKE, SWEEP] {
            state.ensure_workflow(workflow);
        }
        World {
            state,
            ledger: Ledger::empty(),
            now,
        }
    }

    pub fn ago(&self, seconds: i64) -> Timestamp {
        self.now.minus(seconds)
    }

    /// A planner run that ended `hours` ago, with a finished job per candidate.
    pub fn finished_planner(&mut self, hours: i64, candidates: &[&str]) -> u64 {
        let created = self.ago(hours * HOUR + 30 * MINUTE);
        let mut jobs = vec![JobSpec::completed("select", "success")];
        jobs.extend(
            candidates
                .iter()
                .map(|id| JobSpec::completed(&format!("Run candidate {id}"), "failure")),
        );
        self.state.add_run(RunSpec {
            workflow: PLANNER.into(),
            head_branch: Some("main".into()),
            event: "schedule".into(),
            actor: Some(MAINTAINER.into()),
            created_at: Some(created),
            updated_at: Some(self.ago(hours * HOUR)),
            jobs,
            ..RunSpec::default()
        })
    }

    /// A planner run still in progress, with an active job per candidate.
    pub fn running_planner(&mut self, candidates: &[&str]) -> u64 {
        let mut jobs = vec![JobSpec::completed("select", "success")];
        jobs.extend(
            candidates
                .iter()
                .map(|id| JobSpec::in_progress(&format!("Run candidate {id}"))),
        );
        self.state.add_run(RunSpec {
            workflow: PLANNER.into(),
            head_branch: Some("main".into()),
            event: "schedule".into(),
            status: "in_progress".into(),
            conclusion: None,
            actor: Some(MAINTAINER.into()),
            created_at: Some(self.ago(20 * MINUTE)),
            jobs,
            ..RunSpec::default()
        })
    }

    /// The bot's commit on a candidate's files.
    pub fn bot_commit(&self, candidate: &str, hours: i64) -> CommitSpec {
        CommitSpec::by(BOT)
            .message(&format!("klaud: tune {candidate}"))
            .file(
                &format!("configs/{candidate}.yaml"),
                &format!("tuned: {hours}\n"),
            )
            .at(self.ago(hours * HOUR))
    }

    /// A maintainer's commit on a candidate's files.
    pub fn maintainer_commit(&self, candidate: &str, hours: i64) -> CommitSpec {
        CommitSpec::by(MAINTAINER)
            .message("maintainer fix-up")
            .file(&format!("configs/{candidate}.yaml"), "fixed: by hand\n")
            .at(self.ago(hours * HOUR))
    }

    /// An open pull request of the bot from the candidate's branch.
    pub fn bot_pull(
        &mut self,
        candidate: &str,
        draft: bool,
        commits: Vec<CommitSpec>,
        labels: &[&str],
    ) -> u64 {
        let created = self.ago(10 * HOUR);
        self.state.add_pull_request(PullRequestSpec {
            title: format!("klaud: {candidate}"),
            author: BOT.into(),
            head_ref: branch(candidate),
            draft,
            labels: labels.iter().map(|label| label.to_string()).collect(),
            commits,
            created_at: Some(created),
            ..PullRequestSpec::default()
        })
    }

    /// An open draft of the bot with one bot commit, labelled in progress.
    pub fn bot_draft(&mut self, candidate: &str) -> u64 {
        let commits = vec![self.bot_commit(candidate, 9)];
        self.bot_pull(candidate, true, commits, &["klaud-in-progress"])
    }

    /// A closed pull request of the bot; its branch stays when `keep_branch`.
    pub fn closed_bot_pull(&mut self, candidate: &str, closed_by: &str, keep_branch: bool) -> u64 {
        let commits = vec![self.bot_commit(candidate, 30)];
        let created = self.ago(30 * HOUR);
        self.state.add_pull_request(PullRequestSpec {
            title: format!("klaud: {candidate}"),
            author: BOT.into(),
            head_ref: branch(candidate),
            draft: true,
            labels: vec!["klaud-error".into()],
            commits,
            created_at: Some(created),
            closed: Some(ClosedSpec {
                by: closed_by.into(),
                at: Some(self.ago(20 * HOUR)),
                merged: false,
                delete_branch: !keep_branch,
            }),
            ..PullRequestSpec::default()
        })
    }

    /// A ledger session.
    pub fn session(
        &mut self,
        candidate: &str,
        state: SessionState,
        parent: u64,
        pull_request: Option<u64>,
    ) -> &mut Session {
        self.ledger.sessions.push(Session {
            candidate: candidate.into(),
            family: family(candidate),
            parent_run: parent,
            parent_attempt: None,
            state,
            started_at: time(self.ago(12 * HOUR)),
            finished_at: (state == SessionState::Finished).then(|| time(self.ago(6 * HOUR))),
            outcome: (state == SessionState::Finished).then_some(Outcome::Failed),
            agent_ran: true,
            pull_request,
            pending_outcome: None,
            attempts: Vec::new(),
            resuming: None,
            unadopted_jobs: Vec::new(),
            kind: Default::default(),
            aftercare: None,
        });
        self.ledger.sessions.last_mut().unwrap()
    }

    pub fn claim(&mut self, candidate: &str, parent: u64) {
        self.ledger.claims.push(Claim {
            family: family(candidate),
            candidate: candidate.into(),
            parent_run: parent,
            claimed_at: time(self.ago(12 * HOUR)),
        });
    }

    /// A sweep run on the candidate's branch (at its current head).
    pub fn sweep(
        &mut self,
        candidate: &str,
        actor: &str,
        status: &str,
        conclusion: Option<&str>,
        minutes_ago: i64,
    ) -> u64 {
        self.state.add_run(RunSpec {
            workflow: SWEEP.into(),
            head_branch: Some(branch(candidate)),
            event: "pull_request".into(),
            status: status.into(),
            conclusion: conclusion.map(str::to_string),
            actor: Some(actor.into()),
            created_at: Some(self.ago(minutes_ago * MINUTE)),
            jobs: vec![JobSpec::completed("sweep shard 1", "success")],
            ..RunSpec::default()
        })
    }

    /// A smoke run on the candidate's branch.
    pub fn smoke(&mut self, candidate: &str, actor: &str, active: bool) -> u64 {
        self.state.add_run(RunSpec {
            workflow: SMOKE.into(),
            head_branch: Some(branch(candidate)),
            event: "workflow_dispatch".into(),
            status: if active { "in_progress" } else { "completed" }.into(),
            conclusion: (!active).then(|| "success".to_string()),
            actor: Some(actor.into()),
            created_at: Some(self.ago(15 * MINUTE)),
            jobs: vec![if active {
                JobSpec::in_progress("smoke")
            } else {
                JobSpec::completed("smoke", "success")
            }],
            ..RunSpec::default()
        })
    }

    /// A branch at the default branch's head (e.g. a legacy lock ref).
    pub fn lock_ref(&mut self, name: &str) -> String {
        let main = self.state.branch_sha("main").unwrap().to_string();
        self.state.set_branch(name, &main);
        main
    }

    /// Stores the ledger and serves the repository.
    pub fn start(mut self) -> FakeGitHubHandle {
        self.state
            .put_file(STATE_BRANCH, LEDGER_FILE, &self.ledger.to_json());
        super::fake_github::FakeGitHub::start(self.state)
    }
}

/// The ledger as stored.
pub fn stored_ledger(server: &FakeGitHubHandle) -> Ledger {
    let text = server
        .with_state(|state| state.read_file(STATE_BRANCH, LEDGER_FILE))
        .expect("the ledger is on the state branch");
    Ledger::from_json(&text).expect("a valid ledger")
}

/// Write requests (`METHOD path`) whose path contains `fragment`.
pub fn writes_to(server: &FakeGitHubHandle, fragment: &str) -> Vec<String> {
    server
        .request_log()
        .iter()
        .filter(|request| request.is_write() && request.path.contains(fragment))
        .map(|request| format!("{} {}", request.method, request.path))
        .collect()
}

/// Every write request except the ledger's.
pub fn writes_beside_the_ledger(server: &FakeGitHubHandle) -> Vec<String> {
    server
        .request_log()
        .iter()
        .filter(|request| request.is_write() && !request.path.contains("/contents/ledger.json"))
        .map(|request| format!("{} {}", request.method, request.path))
        .collect()
}

/// One pass's files: the configuration, the work directory `out/`, `github-output` and
/// `step-summary`.
pub struct Pass {
    root: TempDir,
    pub run_id: u64,
}

impl Pass {
    pub fn new(run_id: u64) -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("klaud.yml"), format!("bot: {BOT}\n")).unwrap();
        Pass { root, run_id }
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.path().join(relative)
    }

    /// `klaud recover` for this pass against `server`, inside a simulated Actions step.
    pub fn command(&self, server: &FakeGitHubHandle) -> std::process::Command {
        self.mode_command(server, "recover")
    }

    /// `klaud <mode>` for this pass against `server`, inside a simulated Actions step, with the
    /// work directory and configuration of the pass (mode flags go after).
    pub fn mode_command(&self, server: &FakeGitHubHandle, mode: &str) -> std::process::Command {
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
            .env("GITHUB_TOKEN", BOT_TOKEN)
            .env("KLAUD_LABEL_TOKEN", LABEL_TOKEN)
            .arg(mode)
            .arg("--directory")
            .arg(self.path("out"))
            .arg("--config")
            .arg(self.path("klaud.yml"));
        command
    }

    /// Runs the pass, checks its exit code and returns its log.
    pub fn run_with(
        &self,
        server: &FakeGitHubHandle,
        configure: impl FnOnce(&mut assert_cmd::Command),
        code: i32,
    ) -> String {
        let mut command = assert_cmd::Command::from_std(self.command(server));
        command.timeout(Duration::from_secs(120));
        configure(&mut command);
        let assert = command.assert().code(code);
        let output = assert.get_output();
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    }

    /// Runs the pass and expects exit 0.
    pub fn run(&self, server: &FakeGitHubHandle) -> String {
        self.run_with(server, |_| {}, 0)
    }

    pub fn outputs(&self) -> BTreeMap<String, String> {
        read_output_file(&self.path("github-output"))
    }

    /// A JSON array output as strings.
    pub fn ids(&self, output: &str) -> Vec<String> {
        let outputs = self.outputs();
        let value = outputs
            .get(output)
            .unwrap_or_else(|| panic!("no output {output}: {outputs:?}"));
        serde_json::from_str(value).unwrap()
    }

    pub fn summary(&self) -> String {
        std::fs::read_to_string(self.path("step-summary")).unwrap_or_default()
    }

    /// `recover.json`.
    pub fn record(&self) -> Value {
        let text = std::fs::read_to_string(self.path("out/recover.json"))
            .expect("recover.json was written");
        serde_json::from_str(&text).unwrap()
    }
}
