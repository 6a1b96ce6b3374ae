//! After-care end to end (contract §12): a repository seeded into the fake GitHub, then the real
//! `klaud` binary for every step as the reference workflows run them — a planner's `select` and
//! the candidate job's `session`, `check-stop` and `finish` around a simulated agent, the hourly
//! `recover` passes that start after-care sessions, the candidate jobs they dispatch, `status`
//! and `recover` with the dashboard. The agent is played as the other waves play it: its commits
//! through the git data API with the bot's token (a merge of the base is a commit with two
//! parents), its draft through the REST API, the smoke and sweep runs added and completed on the
//! fake as GitHub Actions would run them.
//!
//! Every klaud step's requests are counted from the fake's log (and the log host's, for a job
//! log read through its redirect) and printed as the step ends; [`Wave::requests`] keeps them.

#![allow(dead_code)] // each including test uses a part of it

use std::time::Duration;

use serde_json::{Value, json};

use super::fake_github::git::identity_for_login;
use super::fake_github::{
    FakeGitHubHandle, JobSpec, Mergeability, RequestCounts, RunSpec, Timestamp,
};
use super::recover_support::{
    BOT, BOT_TOKEN, CANDIDATE_WORKFLOW, MAINTAINER, PLANNER, Pass, SMOKE, SWEEP, World, branch,
};

/// The repository's full name as the fake serves it.
pub const REPOSITORY: &str = "acme/bench";

/// One klaud step's requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRequests {
    pub step: String,
    pub reads: u64,
    pub writes: u64,
    /// Reads of the host a job log's redirect points at.
    pub log_host_reads: u64,
}

impl std::fmt::Display for StepRequests {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "{:<44} {:>3} reads {:>3} writes",
            self.step, self.reads, self.writes
        )?;
        if self.log_host_reads > 0 {
            write!(formatter, " (+{} to the log host)", self.log_host_reads)?;
        }
        Ok(())
    }
}

/// A candidate job of a planner wave: the planner run that claimed it and the job's files.
pub struct Job {
    pub candidate: String,
    pub planner_run: u64,
    pub pass: Pass,
}

impl Job {
    pub fn outcome_file(&self) -> String {
        self.pass.outputs()["outcome-file"].clone()
    }

    /// `session.json` as the session wrote it.
    pub fn context_text(&self) -> String {
        let path = self.pass.outputs()["context-file"].clone();
        std::fs::read_to_string(path).expect("session.json was written")
    }

    pub fn context(&self) -> Value {
        serde_json::from_str(&self.context_text()).unwrap()
    }
}

/// The fake GitHub with the repository, the configuration every step reads, and the requests
/// each klaud step sent.
pub struct Wave {
    pub server: FakeGitHubHandle,
    configuration: String,
    pub requests: Vec<StepRequests>,
}

impl Wave {
    /// Serves `world` with `.github/klaud.yml` `configuration` for every step.
    pub fn start(world: World, configuration: &str) -> Wave {
        Wave {
            server: world.start(),
            configuration: configuration.to_string(),
            requests: Vec::new(),
        }
    }

    /// A pass's files with the repository's configuration.
    pub fn pass(&self, run_id: u64) -> Pass {
        let pass = Pass::new(run_id);
        std::fs::write(pass.path("klaud.yml"), &self.configuration).unwrap();
        pass
    }

    /// Runs `klaud <mode> <arguments>` for `pass` with `input` on stdin, expecting exit 0; counts
    /// its requests as `step`. Returns (stdout, stderr). `agent` runs it with the agent's token
    /// (`GH_TOKEN`) instead of the step's, as the Stop hook runs.
    pub fn step(
        &mut self,
        step: &str,
        pass: &Pass,
        mode: &str,
        arguments: &[&str],
        input: &str,
        agent: bool,
    ) -> (String, String) {
        let before = self.server.request_log().len();
        let blobs_before = self.server.blob_log().len();
        let mut command = assert_cmd::Command::from_std(pass.mode_command(&self.server, mode));
        if agent {
            command
                .env_remove("GITHUB_TOKEN")
                .env("GH_TOKEN", BOT_TOKEN);
        }
        command
            .args(arguments)
            .write_stdin(input)
            .timeout(Duration::from_secs(120));
        let output = command.assert().get_output().clone();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(
            output.status.code(),
            Some(0),
            "klaud {mode} ({step}):\n{stdout}{stderr}"
        );
        let counts = RequestCounts::of(&self.server.request_log()[before..]);
        let requests = StepRequests {
            step: step.to_string(),
            reads: counts.reads,
            writes: counts.writes,
            log_host_reads: (self.server.blob_log().len() - blobs_before) as u64,
        };
        eprintln!("requests: {requests}");
        self.requests.push(requests);
        (stdout, stderr)
    }

    /// A planner or candidate run of `workflow` in progress, as GitHub lists it while its jobs run.
    pub fn running(&self, workflow: &str) -> u64 {
        self.server.with_state(|state| {
            state.add_run(RunSpec {
                workflow: workflow.into(),
                head_branch: Some("main".into()),
                event: "schedule".into(),
                status: "in_progress".into(),
                conclusion: None,
                actor: Some(MAINTAINER.into()),
                jobs: vec![JobSpec::in_progress("klaud")],
                ..RunSpec::default()
            })
        })
    }

    /// A run ends.
    pub fn ended(&self, run: u64) {
        self.server
            .with_state(|state| state.set_run_status(run, "completed", Some("success")));
    }

    /// A planner wave's `select` over `candidates` (id, family) in a new planner run; the ids
    /// selected, the run and `selection.json`.
    pub fn select(&mut self, step: &str, candidates: &[(&str, &str)]) -> (Vec<String>, u64, Value) {
        let planner = self.running(PLANNER);
        let pass = self.pass(planner);
        let list: Vec<Value> = candidates
            .iter()
            .map(|(id, family)| json!({"id": id, "family": family}))
            .collect();
        let file = pass.path("candidates.json");
        std::fs::write(&file, Value::Array(list).to_string()).unwrap();
        self.step(
            step,
            &pass,
            "select",
            &["--candidates", file.to_str().unwrap()],
            "",
            false,
        );
        let selected: Vec<String> = serde_json::from_str(&pass.outputs()["candidates"]).unwrap();
        let selection = std::fs::read_to_string(pass.path("out/selection.json")).unwrap();
        (selected, planner, serde_json::from_str(&selection).unwrap())
    }

    /// The candidate job's `session` in run `run` (the planner's, or a job a recovery pass
    /// dispatched).
    pub fn session(&mut self, step: &str, candidate: &str, run: u64) -> Job {
        let pass = self.pass(run);
        self.step(
            step,
            &pass,
            "session",
            &["--candidate", candidate],
            "",
            false,
        );
        assert_eq!(pass.outputs()["proceed"], "true", "{step}");
        Job {
            candidate: candidate.to_string(),
            planner_run: run,
            pass,
        }
    }

    /// The agent's Stop hook: `check-stop` on a first stop; the block's answer, or `None` when
    /// the agent may stop.
    pub fn check_stop(&mut self, step: &str, job: &Job) -> Option<Value> {
        let context_file = job.pass.outputs()["context-file"].clone();
        let (stdout, _) = self.step(
            step,
            &job.pass,
            "check-stop",
            &["--context-file", &context_file],
            r#"{"hook_event_name": "Stop", "stop_hook_active": false}"#,
            true,
        );
        let answer = stdout.trim();
        (!answer.is_empty()).then(|| serde_json::from_str(answer).unwrap())
    }

    /// The job's `finish` with the outcome file the agent wrote; `finish.json`.
    pub fn finish(&mut self, step: &str, job: &Job) -> Value {
        let outcome_file = job.outcome_file();
        self.step(
            step,
            &job.pass,
            "finish",
            &[
                "--candidate",
                &job.candidate,
                "--outcome-file",
                &outcome_file,
                "--agent-outcome",
                "success",
                "--cancel-wait",
                "0",
            ],
            "",
            false,
        );
        let text = std::fs::read_to_string(job.pass.path("out/finish.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// An hourly recovery pass in a planner run of its own (ended after the pass); the pass.
    pub fn recover(&mut self, step: &str, arguments: &[&str]) -> Pass {
        let run = self.running(PLANNER);
        let pass = self.pass(run);
        self.step(step, &pass, "recover", arguments, "", false);
        self.ended(run);
        pass
    }

    /// `status --dashboard` in a run of its own.
    pub fn status_dashboard(&mut self, step: &str) -> Pass {
        let run = self.running("klaud-dashboard.yml");
        let pass = self.pass(run);
        self.step(step, &pass, "status", &["--dashboard"], "", false);
        self.ended(run);
        pass
    }

    /// The candidate workflow runs recovery dispatched, in order.
    pub fn dispatched(&self) -> Vec<(String, u64)> {
        self.server.with_state(|state| {
            state
                .dispatches
                .iter()
                .filter(|dispatch| dispatch.workflow_path.ends_with(CANDIDATE_WORKFLOW))
                .map(|dispatch| {
                    let candidate = dispatch.inputs["candidate"].as_str().unwrap_or("");
                    (candidate.to_string(), dispatch.run_id)
                })
                .collect()
        })
    }

    /// The requests of the steps named `step`.
    pub fn requests_of(&self, step: &str) -> Vec<&StepRequests> {
        self.requests.iter().filter(|r| r.step == step).collect()
    }

    // ── The simulated agent and GitHub Actions ──────────────────────────────────────────────

    /// The agent's commit of `file` on `candidate`'s branch through the git data API with the
    /// bot's token, its parent the branch's head (the default branch's when the branch is new,
    /// then created), with `merge` the default branch's head as a second parent (a merge of the
    /// base, as `git merge origin/main` and a push make). The new head.
    pub fn agent_commits(&self, candidate: &str, message: &str, file: &str, merge: bool) -> String {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the agent's requests");
        let head_ref = branch(candidate);
        runtime.block_on(async {
            let git = GitData::new(&self.server);
            let main = git.head("main").await.expect("main exists");
            let existing = git.head(&head_ref).await;
            let parent = existing.clone().unwrap_or_else(|| main.clone());
            let parent_commit = git.get(&format!("/git/commits/{parent}")).await;
            let tree = parent_commit["tree"]["sha"].as_str().unwrap().to_string();
            // git stamps the commit with the machine's clock; a commit is never dated before its
            // parent, so a pull request lists its commits in order, its head last.
            let parent_date = parent_commit["committer"]["date"]
                .as_str()
                .and_then(|date| chrono::DateTime::parse_from_rfc3339(date).ok())
                .map(|date| date.with_timezone(&chrono::Utc));
            let date = parent_date
                .map(|date| date + chrono::Duration::seconds(1))
                .filter(|date| *date > chrono::Utc::now())
                .unwrap_or_else(chrono::Utc::now)
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            let identity = identity_for_login(BOT, Timestamp::system_now());
            let person = json!({"name": identity.name, "email": identity.email, "date": date});
            let tree = git
                .send(
                    "POST",
                    "/git/trees",
                    json!({"base_tree": tree, "tree": [{"path": file, "mode": "100644", "type": "blob", "content": format!("{message}\n")}]}),
                )
                .await["sha"]
                .as_str()
                .unwrap()
                .to_string();
            let mut parents = vec![parent];
            if merge {
                parents.push(main);
            }
            let commit = git
                .send(
                    "POST",
                    "/git/commits",
                    json!({"message": message, "tree": tree, "parents": parents, "author": person, "committer": person}),
                )
                .await["sha"]
                .as_str()
                .unwrap()
                .to_string();
            match existing {
                Some(_) => {
                    git.send(
                        "PATCH",
                        &format!("/git/refs/heads/{head_ref}"),
                        json!({"sha": commit}),
                    )
                    .await;
                }
                None => {
                    git.send(
                        "POST",
                        "/git/refs",
                        json!({"ref": format!("refs/heads/{head_ref}"), "sha": commit}),
                    )
                    .await;
                }
            }
            commit
        })
    }

    /// The agent's draft pull request from `candidate`'s branch, as `gh pr create --draft`.
    pub fn agent_opens_a_draft(&self, candidate: &str) -> u64 {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the agent's request");
        let body = json!({
            "title": format!("klaud: tune {candidate}"),
            "head": branch(candidate),
            "base": "main",
            "draft": true,
            "body": format!("Candidate `{candidate}`."),
        });
        runtime.block_on(super::fake_github::create_pull_request_through_rest(
            &self.server,
            REPOSITORY,
            BOT_TOKEN,
            &body,
        ))
    }

    /// A run of `workflow` the agent started on `candidate`'s branch at its head, in progress.
    pub fn agent_starts(&self, workflow: &str, candidate: &str, jobs: &[&str]) -> u64 {
        self.server.with_state(|state| {
            state.add_run(RunSpec {
                workflow: workflow.into(),
                head_branch: Some(branch(candidate)),
                event: if workflow == SWEEP {
                    "pull_request"
                } else {
                    "workflow_dispatch"
                }
                .into(),
                status: "in_progress".into(),
                conclusion: None,
                actor: Some(BOT.into()),
                jobs: jobs.iter().map(|job| JobSpec::in_progress(job)).collect(),
                ..RunSpec::default()
            })
        })
    }

    /// A run ends with `conclusion`, its jobs with it.
    pub fn run_ends(&self, run: u64, conclusion: &str) {
        self.server
            .with_state(|state| state.set_run_status(run, "completed", Some(conclusion)));
    }

    /// The agent's outcome file.
    pub fn agent_writes_outcome(&self, job: &Job, outcome: Value) {
        std::fs::write(job.outcome_file(), outcome.to_string()).unwrap();
    }

    /// The agent of a first session: its commit, its draft, a smoke and a sweep that succeed on
    /// its head, and `validated`. The pull request's number.
    pub fn agent_validates(&self, job: &Job) -> u64 {
        let candidate = &job.candidate;
        self.agent_commits(
            candidate,
            &format!("klaud: tune {candidate}"),
            &format!("configs/{candidate}.yaml"),
            false,
        );
        let pull = self.agent_opens_a_draft(candidate);
        let smoke = self.agent_starts(SMOKE, candidate, &["smoke"]);
        self.run_ends(smoke, "success");
        let sweep = self.agent_starts(SWEEP, candidate, &["sweep shard 1", "sweep shard 2"]);
        self.run_ends(sweep, "success");
        self.agent_writes_outcome(job, json!({"outcome": "validated", "pull-request": pull}));
        pull
    }

    /// A first session of `candidate` of `family` run to `validated` by a planner wave: select,
    /// session, the agent, finish; the planner run then ends. The pull request's number.
    pub fn validated_by_a_wave(&mut self, candidate: &str, family: &str) -> u64 {
        let (selected, planner, _) = self.select("select", &[(candidate, family)]);
        assert_eq!(selected, [candidate]);
        let job = self.session("session (propose)", candidate, planner);
        let pull = self.agent_validates(&job);
        let finished = self.finish("finish (propose)", &job);
        assert_eq!(finished["plan"]["outcome"], "validated", "{finished}");
        self.ended(planner);
        pull
    }

    // ── What maintainers and GitHub do meanwhile ─────────────────────────────────────────────

    /// A maintainer's commit lands on the default branch; its new head.
    pub fn main_moves(&self, file: &str) -> String {
        self.server.with_state(|state| {
            state.push_commits(
                "main",
                vec![
                    super::fake_github::CommitSpec::by(MAINTAINER)
                        .message("main moves on")
                        .file(file, "changed on main\n"),
                ],
            )
        })
    }

    /// What GitHub computed of pull request `number`'s mergeability.
    pub fn mergeability(&self, number: u64, mergeability: Mergeability) {
        self.server
            .with_state(|state| state.set_mergeability(number, mergeability, false));
    }

    // ── Reading the fake ──────────────────────────────────────────────────────────────────────

    pub fn pull(&self, number: u64) -> super::fake_github::PullRequest {
        self.server.with_state(|state| state.pulls[&number].clone())
    }

    pub fn branch_sha(&self, candidate: &str) -> Option<String> {
        self.server
            .with_state(|state| state.branch_sha(&branch(candidate)).map(str::to_string))
    }

    /// The comments on pull request (or issue) `number`.
    pub fn comments(&self, number: u64) -> Vec<String> {
        self.server.with_state(|state| {
            state
                .comments
                .values()
                .filter(|comment| comment.issue_number == number)
                .map(|comment| comment.body.clone())
                .collect()
        })
    }

    pub fn log_position(&self) -> usize {
        self.server.request_log().len()
    }

    /// The writes since log position `from` (`METHOD path`, GraphQL by its fields).
    pub fn writes_since(&self, from: usize) -> Vec<String> {
        self.server.request_log()[from..]
            .iter()
            .filter(|request| request.is_write())
            .map(|request| match request.graphql() {
                Some(operation) => format!("POST graphql {}", operation.fields.join(", ")),
                None => format!("{} {}", request.method, request.path),
            })
            .collect()
    }
}

/// The agent's git data API calls with the bot's token.
struct GitData {
    base: String,
    client: reqwest::Client,
}

impl GitData {
    fn new(server: &FakeGitHubHandle) -> Self {
        GitData {
            base: format!("{}/repos/{REPOSITORY}", server.base_url()),
            client: super::fake_github::http_client(),
        }
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(BOT_TOKEN)
            .header("user-agent", "agent-git");
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("the fake GitHub answers");
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        let value = serde_json::from_str(&text).unwrap_or(Value::Null);
        (status, value)
    }

    async fn get(&self, path: &str) -> Value {
        let (status, value) = self.call("GET", path, None).await;
        assert_eq!(status, 200, "GET {path}: {value}");
        value
    }

    async fn send(&self, method: &str, path: &str, body: Value) -> Value {
        let (status, value) = self.call(method, path, Some(body)).await;
        assert!(
            (200..300).contains(&status),
            "{method} {path}: {status} {value}"
        );
        value
    }

    /// A branch's head, or none when it does not exist.
    async fn head(&self, name: &str) -> Option<String> {
        let (status, value) = self
            .call("GET", &format!("/git/ref/heads/{name}"), None)
            .await;
        (status == 200).then(|| value["object"]["sha"].as_str().unwrap().to_string())
    }
}
