//! One simulated day of klaud's reference cadence against the fake GitHub on loopback, with the
//! real `klaud` binary for every step, counting the requests per hour of the day, per mode and
//! per token.
//!
//! The day, as `.github/workflows/klaud-plan.yml`, `klaud-candidate.yml` and `klaud-wake.yml`
//! run it (each step with the tokens its job gives it):
//!
//! - 6 waves (00:17, 04:17, … 20:17): `recover --dashboard`, `discover`, `prepare-review`, the
//!   review a reviewer writes from prepare-review's output, `verify-baselines`, `select`; the
//!   wave's `status --dashboard` once its sessions have ended (the dashboard job needs them).
//! - 24 hourly backstops (hh:47): `recover --dashboard` alone.
//! - The sessions each wave's `select` claims: `session`, the agent played as the demo plays it
//!   (a commit on the candidate branch, a draft pull request through the REST API, a smoke run
//!   and, for a validated result, a sweep run), 3 `note`s, 10 `check-stop`s (the Stop hook) and
//!   `finish` with the outcome file. A parked session a recovery pass resumes is played the
//!   same way in the run recovery dispatched.
//! - Every smoke and sweep run that ends: `wake` on its `workflow_run` event, and the recovery
//!   pass it dispatches (`recover --dashboard` in the dispatched planner run).
//! - After-care (`day/aftercare.rs`): some validated pull requests conflict with their base or
//!   have a check fail on their head after their session ended, and an older validated pull
//!   request of a family is superseded by a newer candidate's; each after-care session a
//!   recovery pass starts (`aftercare-started`) is played in the candidate run it dispatched as a
//!   resumed session is, with a sweep run on its new head when it ends `validated`.
//!
//! Every session's agent run costs [`AGENT_USD_PER_MINUTE`] per minute of the session, given to
//! `finish` as the agent CLI's result (`--execution-file`), so the ledger records what the day's
//! sessions cost, after-care's among them.
//!
//! The binary reads the system clock, so the day's steps run back to back on it (minutes, not a
//! day) and each step's requests are placed in its hour of the simulated day; the fake GitHub
//! keeps the same clock. Cooldowns, deadlines and holds that a real day would see expire during
//! the day therefore do not; the sessions' own durations on the simulated clock decide how much
//! room each wave's `select` finds.
//!
//! `discover` reads a checkout of the 208 real families of InferenceX's master configs at
//! 843c6254f with the recorded generator and the derived catalog on a loopback feed server
//! (`tests/discovery_support/`), its renderings kept between waves as the planner keeps them;
//! the scenario's 60 families have no configuration of their own to render, so the day's
//! candidates are those families', and the scenario's sessions, pull requests, refs and runs are
//! the repository they work in. The benchmarks and workflow-info feeds publish no row, so
//! `verify-baselines` defers every candidate, and `select` runs without `baselines.json`.
//!
//! Run with `cargo bench --bench day`.

#![allow(clippy::disallowed_methods)] // a benchmark spawns the binary and reads its environment
#![allow(dead_code)] // the test support is shared with the tests

#[path = "day/aftercare.rs"]
mod aftercare;
#[path = "../tests/discovery_support/mod.rs"]
mod discovery_support;
use klaud_fake_github as fake_github;
#[path = "day/report.rs"]
mod report;
#[path = "../tests/step_support/mod.rs"]
mod step_support;
#[path = "day/steps.rs"]
mod steps;
mod support;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use discovery_support::{Checkout, Feed, derived_catalog, serve};
use fake_github::render;
use fake_github::scenario::{
    self, BOT, BOT_TOKEN, CANDIDATE_WORKFLOW, MAINTAINERS, PLANNER_WORKFLOW, SMOKE_WORKFLOW,
    SWEEP_WORKFLOW, ScenarioSession, SessionState,
};
use fake_github::{CommitSpec, FakeGitHubHandle, JobSpec, RunSpec, Timestamp};
use klaud::core::aftercare::SessionKind;
use steps::{Ran, Runner, Step, Token, Tokens};

const SEED: u64 = 42;
/// `max-candidates`: the planner's default (`vars.KLAUD_MAX_CANDIDATES || '5'`).
const MAX_CANDIDATES: &str = "5";
const MINUTES_IN_A_DAY: u32 = 24 * 60;
/// The wave schedule `17 */4 * * *` and the backstop `47 * * * *`, in minutes of the day.
const WAVE_MINUTE: u32 = 17;
const BACKSTOP_MINUTE: u32 = 47;
/// When the scenario's live sessions' parent runs (yesterday's last wave) end.
const YESTERDAYS_WAVE_ENDS: u32 = 5;
/// What the agents of the claimed sessions report, in claim order: every other one validated
/// (each with a sweep run); every session has a smoke run. The waves claim 18 of them (the
/// after-care sessions take the room of two), so 27 runs end during the day, and 2 more: the
/// sweep runs of the after-care sessions that end validated.
const OUTCOMES: [&str; 20] = [
    "validated",
    "failed",
    "validated",
    "no-capacity",
    "validated",
    "inconclusive",
    "validated",
    "missing-assets",
    "validated",
    "incompatible",
    "validated",
    "failed",
    "validated",
    "no-capacity",
    "validated",
    "inconclusive",
    "validated",
    "failed",
    "validated",
    "no-capacity",
];
/// How long each claimed session runs, in claim order, in minutes: most end before the next
/// wave; some run past it and hold their room under the cap through it. None claimed by the
/// last wave runs past the end of the day.
const DURATIONS: [u32; 20] = [
    150, 150, 150, 150, 300, 300, 150, 150, 150, 150, 150, 150, 300, 300, 150, 300, 150, 150, 150,
    150,
];
/// The sessions each wave's `select` claims with these durations and a cap of 5 (the first
/// wave's recovery resumes the scenario's 4 parked sessions, which leaves room for one; the
/// second wave finds the first refresh session live, and the after-care sessions move the
/// 300-minute sessions' claims to other waves).
const CLAIMS_PER_WAVE: [usize; 6] = [1, 4, 3, 3, 5, 2];
/// A session recovery resumed runs this long; its agent continues on its draft, starts no run
/// and reports this.
const RESUMED_DURATION: u32 = 120;
const RESUMED_OUTCOME: &str = "failed";
/// What the simulated agent's run costs per minute of its session, in US dollars.
const AGENT_USD_PER_MINUTE: f64 = 0.02;
const STOP_HOOK_INPUT: &str = r#"{"hook_event_name": "Stop", "stop_hook_active": false}"#;

/// What happens at a minute of the day.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    YesterdaysWaveEnds,
    Wave(usize),
    Backstop(u32),
    SessionStarts(usize),
    AgentOpensDraft(usize),
    Note(usize, u32),
    SweepStarts(usize),
    RunEnds(u64, &'static str),
    CheckStop(usize, u32),
    Finish(usize),
    WaveEnds(usize),
    /// A validated pull request conflicts or has a check fail (`aftercare::TROUBLES`).
    Trouble(usize),
}

/// A session played during the day.
struct Played {
    candidate: String,
    /// The planner run that claimed it, or the candidate run recovery dispatched.
    run: u64,
    /// The wave that claimed it; `None` for a resumed or an after-care session.
    wave: Option<usize>,
    /// Its place in the order the waves claimed sessions; `None` when no wave claimed it.
    claim: Option<usize>,
    /// What the session is for: `propose`, or after-care's `refresh` or `repair`.
    kind: SessionKind,
    outcome: &'static str,
    duration: u32,
    context_file: String,
    outcome_file: String,
    pull_request: Option<u64>,
}

/// A wave's planner run and what became of it.
#[derive(Default)]
struct Wave {
    run: u64,
    candidates: usize,
    claimed: Vec<String>,
    resumed: usize,
    /// `baselines.json`'s candidates by status.
    baselines: BTreeMap<String, usize>,
    sessions_running: usize,
}

/// The day's figures besides the requests.
#[derive(Default)]
struct Tally {
    wakes: usize,
    dispatched: usize,
    backstops: usize,
    resumed: usize,
    refused: usize,
    /// What each wake that dispatched nothing said (`wake.json`).
    not_dispatched: Vec<String>,
}

struct Day {
    runner: Runner,
    checkout: Checkout,
    render_cache: tempfile::TempDir,
    queue: BinaryHeap<Reverse<(u32, u64, Event)>>,
    order: u64,
    sessions: Vec<Played>,
    waves: Vec<Wave>,
    tally: Tally,
    aftercare: aftercare::Tally,
    agent: tokio::runtime::Runtime,
}

impl Day {
    fn at(&mut self, minute: u32, event: Event) {
        assert!(
            minute < MINUTES_IN_A_DAY,
            "{event:?} at minute {minute} falls outside the day"
        );
        self.order += 1;
        self.queue.push(Reverse((minute, self.order, event)));
    }

    fn server(&self) -> &FakeGitHubHandle {
        &self.runner.server
    }

    fn run(&mut self) {
        self.at(YESTERDAYS_WAVE_ENDS, Event::YesterdaysWaveEnds);
        for wave in 0..6 {
            self.at(wave as u32 * 240 + WAVE_MINUTE, Event::Wave(wave));
        }
        for hour in 0..24 {
            self.at(hour * 60 + BACKSTOP_MINUTE, Event::Backstop(hour));
        }
        while let Some(Reverse((minute, _, event))) = self.queue.pop() {
            self.handle(minute, event);
        }
    }

    fn handle(&mut self, minute: u32, event: Event) {
        match event {
            Event::YesterdaysWaveEnds => self.yesterdays_wave_ends(),
            Event::Wave(wave) => self.wave(minute, wave),
            Event::Backstop(_) => {
                self.tally.backstops += 1;
                let run = self.planner_run("schedule");
                self.recover(minute, run, "recover (hourly backstop)");
                self.end_run(run, "success");
            }
            Event::SessionStarts(index) => self.session(minute, index),
            Event::AgentOpensDraft(index) => self.agent_opens_draft(minute, index),
            Event::Note(index, number) => self.note(minute, index, number),
            Event::SweepStarts(index) => {
                let sweep = self.agent_run(index, SWEEP_WORKFLOW, "pull_request", "sweep");
                let duration = self.sessions[index].duration;
                self.at(minute + duration / 4, Event::RunEnds(sweep, "success"));
            }
            Event::RunEnds(run, conclusion) => self.run_ends(minute, run, conclusion),
            Event::CheckStop(index, number) => self.check_stop(minute, index, number),
            Event::Finish(index) => self.finish(minute, index),
            Event::WaveEnds(wave) => {
                let run = self.waves[wave].run;
                self.dashboard(minute, run);
                self.end_run(run, "success");
            }
            Event::Trouble(index) => self.trouble(minute, index),
        }
    }

    /// The scenario's live sessions belong to yesterday's last wave, whose run ends now.
    fn yesterdays_wave_ends(&mut self) {
        let parents: Vec<u64> = self.server().with_state(|state| {
            let ledger = state
                .read_file(scenario::STATE_BRANCH, scenario::LEDGER_PATH)
                .expect("the ledger");
            let ledger = klaud::core::ledger::Ledger::from_json(&ledger).expect("a ledger");
            ledger
                .sessions
                .iter()
                .filter(|session| session.state == klaud::core::ledger::SessionState::Live)
                .map(|session| session.parent_run)
                .collect()
        });
        for parent in parents {
            self.end_run(parent, "success");
        }
    }

    /// A planner run in progress with its recover job, as a schedule or dispatch starts it.
    fn planner_run(&self, event: &str) -> u64 {
        self.server().with_state(|state| {
            state.add_run(RunSpec {
                workflow: PLANNER_WORKFLOW.into(),
                head_branch: Some("main".into()),
                event: event.into(),
                status: "in_progress".into(),
                conclusion: None,
                actor: Some(MAINTAINERS[0].into()),
                jobs: vec![JobSpec::in_progress("Recover")],
                ..RunSpec::default()
            })
        })
    }

    /// A job of a run that goes on ends successfully.
    fn complete_job(&self, run: u64, name: &str) {
        self.server().with_state(|state| {
            let now = state.now();
            for job in state.jobs.entry(run).or_default() {
                if job.name == name {
                    job.status = "completed".into();
                    job.conclusion = Some("success".into());
                    job.completed_at = Some(now);
                }
            }
        });
    }

    fn end_run(&self, run: u64, conclusion: &str) {
        self.server()
            .with_state(|state| state.set_run_status(run, "completed", Some(conclusion)));
    }

    /// `recover --dashboard` in planner run `run`; plays the sessions it resumed and the
    /// after-care sessions it started.
    fn recover(&mut self, minute: u32, run: u64, kind: &'static str) -> Ran {
        let ran = self.runner.run(
            minute,
            Step {
                mode: "recover",
                kind,
                run_id: run,
                tokens: Tokens::Action {
                    github: Token::Bot,
                    label: Token::Workflow,
                },
                arguments: vec![OsStr::new("--dashboard")],
                directory: None,
                stdin: None,
                event: None,
            },
        );
        let resumed: Vec<String> = ran
            .output("resumed")
            .map(|ids| serde_json::from_str(ids).expect("a JSON array"))
            .unwrap_or_default();
        for candidate in resumed {
            self.tally.resumed += 1;
            let dispatched = self.dispatched_run(&candidate);
            let index = self.sessions.len();
            self.sessions.push(Played {
                candidate,
                run: dispatched,
                wave: None,
                claim: None,
                kind: SessionKind::Propose,
                outcome: RESUMED_OUTCOME,
                duration: RESUMED_DURATION,
                context_file: String::new(),
                outcome_file: String::new(),
                pull_request: None,
            });
            self.at(minute + 5, Event::SessionStarts(index));
        }
        let started: usize = ran
            .output("aftercare-started")
            .and_then(|count| count.parse().ok())
            .expect("the aftercare-started output");
        let record = ran.result_file("recover.json");
        self.play_aftercare_started(minute, &record, started);
        ran
    }

    /// The candidate run a recovery pass dispatched for `candidate`, started with its session
    /// job.
    fn dispatched_run(&self, candidate: &str) -> u64 {
        self.server().with_state(|state| {
            let dispatch = state
                .dispatches
                .iter()
                .rev()
                .find(|dispatch| {
                    dispatch.workflow_path.ends_with(CANDIDATE_WORKFLOW)
                        && dispatch.inputs["candidate"] == candidate
                })
                .expect("the dispatch of the candidate workflow")
                .run_id;
            state.set_run_status(dispatch, "in_progress", None);
            state.add_job(dispatch, JobSpec::in_progress("Session"));
            dispatch
        })
    }

    fn wave(&mut self, minute: u32, wave: usize) {
        let run = self.planner_run("schedule");
        // The wave's run stays in progress through its sessions, and `wake` counts a pass in
        // progress as covering an ending only when it started at or after it, to the second;
        // on the compressed clock a run could end within the second the wave started.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        self.waves.push(Wave {
            run,
            ..Wave::default()
        });
        let resumed_before = self.tally.resumed;
        self.recover(minute, run, "recover (wave)");
        self.complete_job(run, "Recover");
        self.waves[wave].resumed = self.tally.resumed - resumed_before;

        let evidence = self.runner.directory("evidence");
        let repo = self.checkout.root().to_path_buf();
        let cache = self.render_cache.path().to_path_buf();
        let workflow_token = Tokens::Action {
            github: Token::Workflow,
            label: Token::Workflow,
        };
        let discover = self.runner.run(
            minute,
            Step {
                mode: "discover",
                kind: "discover",
                run_id: run,
                tokens: workflow_token,
                arguments: vec![
                    OsStr::new("--repo-path"),
                    repo.as_os_str(),
                    OsStr::new("--render-cache"),
                    cache.as_os_str(),
                ],
                directory: Some(&evidence),
                stdin: None,
                event: None,
            },
        );
        let candidates_file = PathBuf::from(
            discover
                .output("candidates-file")
                .expect("discover's candidates file"),
        );
        let prepare = self.runner.run(
            minute,
            Step {
                mode: "prepare-review",
                kind: "prepare-review",
                run_id: run,
                tokens: workflow_token,
                arguments: vec![OsStr::new("--candidates"), candidates_file.as_os_str()],
                directory: Some(&evidence),
                stdin: None,
                event: None,
            },
        );
        if prepare.output("has-candidates") != Some("true") {
            self.at(minute + 10, Event::WaveEnds(wave));
            return;
        }
        let candidates = candidates_of(&candidates_file);
        self.waves[wave].candidates = candidates.len();
        let review = evidence.join("review.json");
        std::fs::write(&review, review_of(&candidates, &prepare).to_string())
            .expect("the review is written");
        let verify = self.runner.run(
            minute,
            Step {
                mode: "verify-baselines",
                kind: "verify-baselines",
                run_id: run,
                tokens: Tokens::None,
                arguments: vec![
                    OsStr::new("--candidates"),
                    candidates_file.as_os_str(),
                    OsStr::new("--review"),
                    review.as_os_str(),
                    OsStr::new("--repo-path"),
                    repo.as_os_str(),
                ],
                directory: Some(&evidence),
                stdin: None,
                event: None,
            },
        );
        for record in verify.result_file("baselines.json")["candidates"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let status = format!(
                "{} {}",
                record["status"].as_str().unwrap_or("?"),
                record["reason"]["code"].as_str().unwrap_or_default()
            );
            *self.waves[wave]
                .baselines
                .entry(status.trim().to_string())
                .or_default() += 1;
        }
        let select = self.runner.run(
            minute,
            Step {
                mode: "select",
                kind: "select",
                run_id: run,
                tokens: Tokens::Action {
                    github: Token::Bot,
                    label: Token::Workflow,
                },
                arguments: vec![
                    OsStr::new("--candidates"),
                    candidates_file.as_os_str(),
                    OsStr::new("--review"),
                    review.as_os_str(),
                    OsStr::new("--max-candidates"),
                    OsStr::new(MAX_CANDIDATES),
                ],
                directory: None,
                stdin: None,
                event: None,
            },
        );
        let claimed: Vec<String> = select
            .output("candidates")
            .map(|ids| serde_json::from_str(ids).expect("a JSON array"))
            .unwrap_or_default();
        if claimed.is_empty() {
            self.at(minute + 10, Event::WaveEnds(wave));
        }
        for (offset, candidate) in claimed.iter().enumerate() {
            let claim = self.sessions.iter().filter(|s| s.wave.is_some()).count();
            assert!(
                claim < OUTCOMES.len(),
                "wave {wave} claims a session beyond the day's {}",
                OUTCOMES.len()
            );
            self.server().with_state(|state| {
                state.add_job(
                    run,
                    JobSpec::in_progress(&format!("Run candidate {candidate}")),
                )
            });
            let index = self.sessions.len();
            let family = candidates
                .iter()
                .find(|record| record["id"] == candidate.as_str())
                .and_then(|record| record["family"].as_str())
                .expect("the claimed candidate's family")
                .to_string();
            self.seed_older_pull_request(claim, candidate, &family);
            self.sessions.push(Played {
                candidate: candidate.clone(),
                run,
                wave: Some(wave),
                claim: Some(claim),
                kind: SessionKind::Propose,
                outcome: OUTCOMES[claim],
                duration: DURATIONS[claim],
                context_file: String::new(),
                outcome_file: String::new(),
                pull_request: None,
            });
            self.waves[wave].sessions_running += 1;
            self.at(minute + 8 + offset as u32, Event::SessionStarts(index));
        }
        self.waves[wave].claimed = claimed;
    }

    fn session(&mut self, minute: u32, index: usize) {
        let (candidate, run, kind) = (
            self.sessions[index].candidate.clone(),
            self.sessions[index].run,
            self.sessions[index].kind,
        );
        let ran = self.runner.run(
            minute,
            Step {
                mode: "session",
                kind: step_kind("session", kind),
                run_id: run,
                tokens: Tokens::Action {
                    github: Token::Bot,
                    label: Token::Workflow,
                },
                arguments: vec![OsStr::new("--candidate"), OsStr::new(&candidate)],
                directory: None,
                stdin: None,
                event: None,
            },
        );
        if ran.output("proceed") != Some("true") {
            self.tally.refused += 1;
            self.job_ends(minute, index);
            return;
        }
        let context_file = ran
            .output("context-file")
            .expect("a context file")
            .to_string();
        let context: Value =
            serde_json::from_str(&std::fs::read_to_string(&context_file).expect("the context"))
                .expect("a JSON context");
        assert_eq!(context["kind"], kind.name(), "session.json's kind");
        if kind == SessionKind::Repair {
            self.count_evidence(&context);
        }
        let played = &mut self.sessions[index];
        played.pull_request = context["pull-request"]["number"].as_u64();
        played.outcome_file = ran.output("outcome-file").expect("an outcome file").into();
        played.context_file = context_file;
        let duration = played.duration;
        let validated = played.outcome == "validated";
        let part = |fraction: f64| minute + (duration as f64 * fraction) as u32;
        self.at(minute + 5, Event::AgentOpensDraft(index));
        for (number, fraction) in [0.2, 0.5, 0.8].into_iter().enumerate() {
            self.at(part(fraction), Event::Note(index, number as u32));
        }
        if validated {
            self.at(part(0.45), Event::SweepStarts(index));
        }
        for number in 0..10 {
            self.at(
                part(0.55 + 0.04 * number as f64),
                Event::CheckStop(index, number),
            );
        }
        self.at(minute + duration, Event::Finish(index));
    }

    /// The agent's first work: a commit on the candidate branch, its draft pull request (unless
    /// the session already has one) and, in a session a wave claimed, a smoke run on it.
    fn agent_opens_draft(&mut self, minute: u32, index: usize) {
        if self.sessions[index].kind.is_aftercare() {
            self.aftercare_agent_works(index);
            self.runner.take_agents_requests(minute);
            return;
        }
        let candidate = self.sessions[index].candidate.clone();
        let branch = format!("{}{candidate}", scenario::BRANCH_PREFIX);
        self.server().with_state(|state| {
            state.push_commits(
                &branch,
                vec![
                    CommitSpec::by(BOT)
                        .message(&format!("klaud: tune {candidate}"))
                        .file(&format!("tuned/{candidate}.yaml"), "tuned: true\n"),
                ],
            )
        });
        if self.sessions[index].pull_request.is_none() {
            let number = self.open_draft(&candidate, &branch);
            self.sessions[index].pull_request = Some(number);
        }
        self.runner.take_agents_requests(minute);
        if self.sessions[index].wave.is_none() {
            return;
        }
        let smoke = self.agent_run(index, SMOKE_WORKFLOW, "workflow_dispatch", "smoke");
        let played = &self.sessions[index];
        let conclusion = if played.outcome == "validated" {
            "success"
        } else {
            "failure"
        };
        let ends = minute + played.duration * 3 / 10;
        self.at(ends, Event::RunEnds(smoke, conclusion));
    }

    /// `POST /repos/{owner}/{repo}/pulls` with the bot's token, as the agent's
    /// `gh pr create --draft`.
    fn open_draft(&self, candidate: &str, branch: &str) -> u64 {
        let body = json!({
            "title": format!("klaud: tune {candidate}"),
            "head": branch,
            "base": "main",
            "draft": true,
            "body": format!("Candidate `{candidate}`."),
        });
        self.agent
            .block_on(fake_github::create_pull_request_through_rest(
                self.server(),
                "acme/bench",
                BOT_TOKEN,
                &body,
            ))
    }

    /// A run the agent starts on its branch (in progress).
    fn agent_run(&self, index: usize, workflow: &str, event: &str, job: &str) -> u64 {
        let branch = format!(
            "{}{}",
            scenario::BRANCH_PREFIX,
            self.sessions[index].candidate
        );
        self.server().with_state(|state| {
            state.add_run(RunSpec {
                workflow: workflow.into(),
                head_branch: Some(branch),
                event: event.into(),
                status: "in_progress".into(),
                conclusion: None,
                actor: Some(BOT.into()),
                jobs: vec![JobSpec::in_progress(job)],
                ..RunSpec::default()
            })
        })
    }

    fn note(&mut self, minute: u32, index: usize, number: u32) {
        let played = &self.sessions[index];
        let (candidate, run, kind) = (played.candidate.clone(), played.run, played.kind);
        let text = self.runner.directory("note").join("note.md");
        std::fs::write(
            &text,
            format!("Progress {}: the smoke run is under way.", number + 1),
        )
        .expect("the note is written");
        self.runner.run(
            minute,
            Step {
                mode: "note",
                kind: step_kind("note", kind),
                run_id: run,
                tokens: Tokens::Agent,
                arguments: vec![
                    OsStr::new("--candidate"),
                    OsStr::new(&candidate),
                    OsStr::new("--text-file"),
                    text.as_os_str(),
                ],
                directory: None,
                stdin: None,
                event: None,
            },
        );
    }

    /// The Stop hook; before the last stop the agent writes its outcome file.
    fn check_stop(&mut self, minute: u32, index: usize, number: u32) {
        let played = &self.sessions[index];
        if number == 9 {
            std::fs::write(
                &played.outcome_file,
                json!({"outcome": played.outcome, "pull-request": played.pull_request}).to_string(),
            )
            .expect("the outcome file is written");
        }
        let (context_file, run, kind) = (played.context_file.clone(), played.run, played.kind);
        self.runner.run(
            minute,
            Step {
                mode: "check-stop",
                kind: step_kind("check-stop", kind),
                run_id: run,
                tokens: Tokens::Agent,
                arguments: vec![OsStr::new("--context-file"), OsStr::new(&context_file)],
                directory: None,
                stdin: Some(STOP_HOOK_INPUT),
                event: None,
            },
        );
    }

    /// `finish` with the outcome file and the agent's result (what its run cost); schedules
    /// its pull request's trouble, if it has one.
    fn finish(&mut self, minute: u32, index: usize) {
        let played = &self.sessions[index];
        let (candidate, run, outcome_file, kind, duration) = (
            played.candidate.clone(),
            played.run,
            played.outcome_file.clone(),
            played.kind,
            played.duration,
        );
        let execution = self.runner.directory("agent").join("result.json");
        std::fs::write(
            &execution,
            json!({
                "type": "result",
                "subtype": "success",
                "is_error": false,
                "num_turns": duration / 3,
                "duration_ms": u64::from(duration) * 60_000,
                "total_cost_usd": f64::from(duration) * AGENT_USD_PER_MINUTE,
            })
            .to_string(),
        )
        .expect("the agent's result is written");
        let ran = self.runner.run(
            minute,
            Step {
                mode: "finish",
                kind: step_kind("finish", kind),
                run_id: run,
                tokens: Tokens::Action {
                    github: Token::Bot,
                    label: Token::Workflow,
                },
                arguments: vec![
                    OsStr::new("--candidate"),
                    OsStr::new(&candidate),
                    OsStr::new("--outcome-file"),
                    OsStr::new(&outcome_file),
                    OsStr::new("--agent-outcome"),
                    OsStr::new("success"),
                    OsStr::new("--cancel-wait"),
                    OsStr::new("0"),
                    OsStr::new("--execution-file"),
                    execution.as_os_str(),
                ],
                directory: None,
                stdin: None,
                event: None,
            },
        );
        let superseded: Vec<u64> = ran
            .output("superseded")
            .map(|numbers| serde_json::from_str(numbers).expect("a JSON array"))
            .unwrap_or_default();
        self.aftercare.superseded_by_finish.extend(superseded);
        self.schedule_trouble(minute, index);
        self.job_ends(minute, index);
    }

    /// The session's job ends: its wave's run goes on to the dashboard once its last session
    /// ended; a resumed session's candidate run ends.
    fn job_ends(&mut self, minute: u32, index: usize) {
        let played = &self.sessions[index];
        let (run, candidate) = (played.run, played.candidate.clone());
        match played.wave {
            Some(wave) => {
                self.complete_job(run, &format!("Run candidate {candidate}"));
                self.waves[wave].sessions_running -= 1;
                if self.waves[wave].sessions_running == 0 {
                    self.at(minute + 2, Event::WaveEnds(wave));
                }
            }
            None => self.end_run(run, "success"),
        }
    }

    /// `wake` on the ended run's event; the recovery pass it dispatched runs right after.
    fn run_ends(&mut self, minute: u32, run: u64, conclusion: &str) {
        self.end_run(run, conclusion);
        self.tally.wakes += 1;
        let event = self
            .server()
            .with_state(|state| render::workflow_run_completed_event(state, run));
        let wake = self.runner.run(
            minute,
            Step {
                mode: "wake",
                kind: "wake",
                run_id: 95_000_000 + self.tally.wakes as u64,
                tokens: Tokens::Action {
                    github: Token::Workflow,
                    label: Token::Workflow,
                },
                arguments: Vec::new(),
                directory: None,
                stdin: None,
                event: Some(&event),
            },
        );
        if wake.output("dispatched") != Some("true") {
            let record = wake.result_file("wake.json");
            self.tally.not_dispatched.push(format!(
                "{}: {}",
                record["decision"].as_str().unwrap_or("?"),
                record["message"].as_str().unwrap_or("?")
            ));
        } else {
            self.tally.dispatched += 1;
            let planner: u64 = wake
                .output("planner-run")
                .and_then(|id| id.parse().ok())
                .expect("the dispatched planner run");
            self.server().with_state(|state| {
                state.set_run_status(planner, "in_progress", None);
                state.add_job(planner, JobSpec::in_progress("Recover"));
            });
            self.recover(minute + 1, planner, "recover (a wake's pass)");
            self.end_run(planner, "success");
        }
    }

    /// The wave's dashboard job: `status --dashboard` in the wave's run.
    fn dashboard(&mut self, minute: u32, run: u64) {
        self.runner.run(
            minute,
            Step {
                mode: "status",
                kind: "status --dashboard (wave)",
                run_id: run,
                tokens: Tokens::Action {
                    github: Token::Bot,
                    label: Token::Workflow,
                },
                arguments: vec![OsStr::new("--dashboard")],
                directory: None,
                stdin: None,
                event: None,
            },
        );
    }
}

/// How a session's step is counted: an after-care session's apart.
fn step_kind(mode: &'static str, kind: SessionKind) -> &'static str {
    if !kind.is_aftercare() {
        return mode;
    }
    match mode {
        "session" => "session (after-care)",
        "note" => "note (after-care)",
        "check-stop" => "check-stop (after-care)",
        "finish" => "finish (after-care)",
        other => other,
    }
}

/// The candidates of a candidates file (an array, or an object with `candidates`).
fn candidates_of(path: &Path) -> Vec<Value> {
    let document: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the candidates file"))
            .expect("JSON");
    match document {
        Value::Array(candidates) => candidates,
        mut object => object["candidates"]
            .as_array_mut()
            .map(std::mem::take)
            .expect("a candidates array"),
    }
}

/// The review a reviewer writes from prepare-review's evidence: `duplicate` for a candidate an
/// open pull request of klaud already works on (its branch among `open-prs.json`), otherwise
/// `proceed`, naming the catalog row's model as the baseline's display model where the
/// configuration has none for it.
fn review_of(candidates: &[Value], prepare: &Ran) -> Value {
    let open = std::fs::read_to_string(prepare.directory.join("open-prs.json")).unwrap_or_default();
    let known_models = ["dsr1", "dsv4"];
    let decisions: Vec<Value> = candidates
        .iter()
        .map(|candidate| {
            let id = candidate["id"].as_str().expect("an id");
            let branch = format!("{}{id}", scenario::BRANCH_PREFIX);
            let mut decision = if open.contains(&format!("\"{branch}\"")) {
                json!({
                    "candidate-id": id,
                    "decision": "duplicate",
                    "family": candidate["family"],
                    "pull-requests": [],
                    "reason": "An open pull request of klaud works on this candidate.",
                })
            } else {
                json!({
                    "candidate-id": id,
                    "decision": "proceed",
                    "family": candidate["family"],
                    "pull-requests": [],
                    "reason": "No open pull request of klaud changes this family.",
                })
            };
            let model = candidate["source"]["model"].as_str().unwrap_or_default();
            if !known_models.contains(&model) && !model.is_empty() {
                decision["baseline-model"] = Value::String(model.into());
            }
            decision
        })
        .collect();
    json!({ "decisions": decisions })
}

/// The repository's `.github/klaud.yml`: the bot and the feeds discover and verify-baselines
/// read.
fn configuration(images: &str, feeds: &Path) -> String {
    let quoted = |text: &str| Value::String(text.to_string()).to_string();
    format!(
        "bot: {BOT}\ndiscovery:\n  feeds:\n    images: {}\n    benchmarks: {}\n    workflow-info: {}\n",
        quoted(images),
        quoted(&feeds.join("benchmarks.json").display().to_string()),
        quoted(&feeds.join("workflow-info.json").display().to_string()),
    )
}

/// A scenario of the fake GitHub: its server and its sessions.
type Scenario = fn(u64, Timestamp, u64) -> (FakeGitHubHandle, Vec<ScenarioSession>);

fn day(name: &str, scenario: Scenario) {
    let started = std::time::Instant::now();
    let (server, sessions) = scenario(SEED, Timestamp::system_now(), 0);
    // The binary reads the system clock; the fake keeps the same one.
    server.with_state(|state| state.now = None);
    let live = sessions
        .iter()
        .filter(|session| session.state == SessionState::Live)
        .count();
    let feed = serve(Feed::Catalog(derived_catalog()));
    let feeds = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(feeds.path().join("benchmarks.json"), "[]\n").expect("a feed file");
    std::fs::write(
        feeds.path().join("workflow-info.json"),
        "{\"runConfigs\": []}\n",
    )
    .expect("a feed file");
    let runner = Runner::new(
        server,
        Path::new(env!("CARGO_BIN_EXE_klaud")),
        &configuration(&feed.url, feeds.path()),
    );
    let mut day = Day {
        runner,
        checkout: Checkout::new(),
        render_cache: tempfile::tempdir().expect("a temporary directory"),
        queue: BinaryHeap::new(),
        order: 0,
        sessions: Vec::new(),
        waves: Vec::new(),
        tally: Tally::default(),
        aftercare: aftercare::Tally::default(),
        agent: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the agent's requests"),
    };
    day.run();
    let aftercare = day.aftercare_figures();
    let aftercare_started: usize = day.aftercare.started.values().sum();

    println!(
        "\n# {name}: one day of the reference cadence (seed {SEED}, {live} live sessions at its \
         start, max-candidates {MAX_CANDIDATES}), {:.0} s of wall time",
        started.elapsed().as_secs_f64()
    );
    for (index, wave) in day.waves.iter().enumerate() {
        println!(
            "- wave {} ({:02}:17): {} candidates to review, baselines {:?}, {} claimed, {} resumed by its recovery pass",
            index + 1,
            index * 4,
            wave.candidates,
            wave.baselines,
            wave.claimed.len(),
            wave.resumed
        );
    }
    let claimed = day.sessions.iter().filter(|s| s.wave.is_some()).count();
    println!(
        "- sessions: {claimed} claimed by select, {} resumed by recovery, {aftercare_started} after-care \
         sessions started by recovery, {} refused by session; {} runs ended ({} wakes dispatched \
         a recovery pass); {} hourly backstops",
        day.tally.resumed,
        day.tally.refused,
        day.tally.wakes,
        day.tally.dispatched,
        day.tally.backstops
    );
    for message in &day.tally.not_dispatched {
        println!("- a wake that dispatched nothing: {message}");
    }
    let peaks = report::print(name, &day.runner.records);
    report::aftercare(name, &day.aftercare, &aftercare, &day.runner.records);
    let workflow = peaks[&Token::Workflow];
    println!(
        "\n{name}: the workflow token's peak hour is {workflow} requests: target ≤ {} {}",
        report::PEAK_HOUR_TARGET,
        if workflow <= report::PEAK_HOUR_TARGET {
            "met"
        } else {
            "not met"
        }
    );
    // The day as it is made: checked once its figures are printed.
    let claims: Vec<usize> = day.waves.iter().map(|wave| wave.claimed.len()).collect();
    assert_eq!(
        claims, CLAIMS_PER_WAVE,
        "the waves claimed other numbers of sessions than the day is made of"
    );
    assert_eq!(day.tally.refused, 0, "a session step refused its session");
    // A smoke run per claimed session, a sweep run per validated one, after-care's included.
    let runs: usize = day
        .sessions
        .iter()
        .map(|played| {
            usize::from(played.wave.is_some()) + usize::from(played.outcome == "validated")
        })
        .sum();
    assert_eq!(
        day.tally.wakes, runs,
        "a wake for every smoke and sweep run"
    );
    assert_eq!(
        aftercare_started,
        aftercare::TROUBLES.len(),
        "an after-care session for every trouble"
    );
    assert_eq!(
        day.aftercare.superseded_by_finish.len(),
        1,
        "the older pull request superseded by finish"
    );
    day.check_aftercare_ends();
}

fn main() {
    day("standard scenario", support::standard_scenario);
    day("big repository", support::big_scenario);
}
