//! `klaud wake` against the fake GitHub: which ended runs start a recovery pass, that a burst of
//! endings starts one, that nothing from the event reaches a shell or a log line unescaped, and
//! how a dispatch GitHub refuses or loses is handled.

#![allow(clippy::disallowed_methods)] // tests read the environment and spawn the binary

use klaud_fake_github as fake_github;
#[path = "github_mode_support/mod.rs"]
mod github_mode_support;

use chrono::{Duration, SecondsFormat, Utc};
use fake_github::{
    FakeGitHub, FakeGitHubHandle, FaultConfig, FaultRule, RepoState, RunSpec, Timestamp,
};
use github_mode_support::*;
use serde_json::{Value, json};

const PLANNER: &str = "klaud-plan.yml";

/// The repository with a planner workflow that declares one input, `wake` (GitHub refuses a
/// dispatch with any other input).
fn repository_with_planner() -> RepoState {
    let mut state = repository();
    let planner = state.ensure_workflow(PLANNER);
    state.workflows.get_mut(&planner).unwrap().inputs = Some(vec!["wake".into()]);
    state
}

/// A `workflow_run` event: the end of run `id` of the smoke workflow on `branch`, started by
/// `actor`, with its head in `head_repository`.
fn ended_run_event(id: u64, branch: &str, actor: &str, head_repository: &str) -> Value {
    let ended_at = (Utc::now() - Duration::minutes(1)).to_rfc3339_opts(SecondsFormat::Secs, true);
    json!({
        "action": "completed",
        "workflow_run": {
            "id": id,
            "name": "e2e-tests",
            "path": ".github/workflows/e2e-tests.yml",
            "head_branch": branch,
            "head_sha": "0123456789abcdef0123456789abcdef01234567",
            "event": "workflow_dispatch",
            "status": "completed",
            "conclusion": "failure",
            "actor": {"login": actor},
            "triggering_actor": {"login": actor},
            "updated_at": ended_at,
            "repository": {"full_name": REPOSITORY},
            "head_repository": {"full_name": head_repository},
        },
        "workflow": {"path": ".github/workflows/e2e-tests.yml"},
        "repository": {"full_name": REPOSITORY, "default_branch": "main"},
        "sender": {"login": actor},
    })
}

fn bot_smoke_run_ended(id: u64) -> Value {
    ended_run_event(id, "klaud/auto-a", BOT, REPOSITORY)
}

/// Runs `klaud wake` for `event` as a fresh step; returns the step and its log.
fn wake(server: &FakeGitHubHandle, event: &Value, extra: &[&str], code: i32) -> (Step, String) {
    let step = Step::default();
    step.write("event.json", &event.to_string());
    let mut command = step.command(server, "wake");
    command.args(extra);
    let log = step.run(command, code);
    (step, log)
}

fn dispatches(server: &FakeGitHubHandle) -> Vec<(String, String, Value)> {
    server
        .state()
        .dispatches
        .iter()
        .map(|dispatch| {
            (
                dispatch.workflow_path.clone(),
                dispatch.git_ref.clone(),
                dispatch.inputs.clone(),
            )
        })
        .collect()
}

fn one_wake_dispatch() -> Vec<(String, String, Value)> {
    vec![(
        ".github/workflows/klaud-plan.yml".to_string(),
        "main".to_string(),
        json!({"wake": "true"}),
    )]
}

#[test]
fn the_end_of_the_bots_smoke_run_dispatches_one_recovery_pass() {
    let server = FakeGitHub::start(repository_with_planner());

    let (step, _) = wake(&server, &bot_smoke_run_ended(501), &[], 0);

    assert_eq!(dispatches(&server), one_wake_dispatch());
    let dispatched_run = server.state().dispatches[0].run_id;
    assert_eq!(step.output("dispatched"), "true");
    assert_eq!(step.output("wake-reason"), "dispatch");
    assert_eq!(step.output("planner-run"), dispatched_run.to_string());
    assert_eq!(step.result_file("wake.json")["dispatch-ref"], "main");
    assert!(
        step.summary()
            .contains("dispatched a recovery pass of `klaud-plan.yml` on `main`")
    );
    let requests: Value = serde_json::from_str(&step.output("requests")).unwrap();
    assert_eq!(requests["writes"], 1, "one dispatch, nothing else written");
}

#[test]
fn two_endings_in_a_row_dispatch_one_pass() {
    let server = FakeGitHub::start(repository_with_planner());

    let (first, _) = wake(&server, &bot_smoke_run_ended(501), &[], 0);
    let (second, _) = wake(&server, &bot_smoke_run_ended(502), &[], 0);

    assert_eq!(dispatches(&server), one_wake_dispatch());
    assert_eq!(first.output("dispatched"), "true");
    assert_eq!(second.output("dispatched"), "false");
    assert_eq!(second.output("wake-reason"), "pass-pending");
    assert_eq!(second.output("planner-run"), first.output("planner-run"));
}

#[test]
fn two_endings_in_a_row_dispatch_one_pass_even_when_github_lists_the_first_late() {
    let mut state = repository_with_planner();
    state.dispatched_run_listing_lag = 2;
    let server = FakeGitHub::start(state);

    let (first, first_log) = wake(&server, &bot_smoke_run_ended(501), &[], 0);
    let (second, _) = wake(&server, &bot_smoke_run_ended(502), &[], 0);

    assert_eq!(dispatches(&server), one_wake_dispatch());
    let dispatched_run = server.state().dispatches[0].run_id.to_string();
    assert_eq!(first.output("planner-run"), dispatched_run);
    assert!(
        first_log.contains(&format!("GitHub lists it as run {dispatched_run}")),
        "the first wake waited for its run: {first_log}"
    );
    assert_eq!(second.output("wake-reason"), "pass-pending");
    assert_eq!(second.output("planner-run"), dispatched_run);
}

#[test]
fn a_run_whose_head_is_in_a_fork_dispatches_nothing_and_asks_github_nothing() {
    let server = FakeGitHub::start(repository_with_planner());
    let fork_run = ended_run_event(501, "klaud/auto-a", "mallory", "mallory/bench");

    let (step, _) = wake(&server, &fork_run, &[], 0);

    assert!(dispatches(&server).is_empty());
    assert_eq!(step.output("wake-reason"), "fork-head");
    assert_eq!(requests(&server), Vec::<String>::new());
}

#[test]
fn a_maintainers_run_on_a_branch_that_is_not_klauds_dispatches_nothing() {
    let server = FakeGitHub::start(repository_with_planner());
    let maintainer_run = ended_run_event(501, "feature/faster-kernels", "alice", REPOSITORY);

    let (step, _) = wake(&server, &maintainer_run, &[], 0);

    assert!(dispatches(&server).is_empty());
    assert_eq!(step.output("dispatched"), "false");
    assert_eq!(step.output("wake-reason"), "not-klaud-run");
    assert_eq!(requests(&server), Vec::<String>::new());
}

#[test]
fn a_branch_name_full_of_shell_metacharacters_only_leads_to_a_dispatch() {
    let server = FakeGitHub::start(repository_with_planner());
    let marker_directory = tempfile::tempdir().unwrap();
    let marker = marker_directory.path().join("pwned");
    let branch = format!(
        "klaud/auto-x\";$(touch {m});`touch {m}`;'$(touch {m})'|touch {m}&\n::warning::injected\n##[set-output name=dispatched;]false",
        m = marker.display()
    );
    let event = ended_run_event(501, &branch, "alice", REPOSITORY);

    let (step, log) = wake(&server, &event, &[], 0);

    assert_eq!(
        dispatches(&server),
        one_wake_dispatch(),
        "no effect beyond a dispatch"
    );
    assert!(!marker.exists(), "nothing from the event ran in a shell");
    assert_eq!(step.output("dispatched"), "true");
    let written = [
        log,
        step.summary(),
        std::fs::read_to_string(step.path("github-output")).unwrap(),
    ];
    for text in &written {
        for line in text.lines() {
            assert!(
                !line.trim_start().starts_with("::warning::injected"),
                "{line}"
            );
            assert!(!line.contains("##["), "{line}");
            assert!(
                !line.contains("$(touch") && !line.contains("`touch"),
                "{line}"
            );
        }
    }
    assert_eq!(
        step.result_file("wake.json")["run"]["head-branch"],
        branch.as_str()
    );
}

#[test]
fn a_queued_planner_pass_means_no_dispatch_whatever_started_it() {
    let mut state = repository_with_planner();
    let queued = state.add_run(RunSpec {
        workflow: PLANNER.into(),
        event: "schedule".into(),
        status: "queued".into(),
        conclusion: None,
        created_at: Some(Timestamp::system_now().minus(3600)),
        ..RunSpec::default()
    });
    let server = FakeGitHub::start(state);

    let (step, _) = wake(&server, &bot_smoke_run_ended(501), &[], 0);

    assert!(dispatches(&server).is_empty());
    assert_eq!(step.output("wake-reason"), "pass-pending");
    assert_eq!(step.output("planner-run"), queued.to_string());
    assert_eq!(write_requests(&server), Vec::<String>::new());
}

#[test]
fn a_pass_that_started_before_the_ending_may_have_missed_it_so_one_is_dispatched() {
    let mut state = repository_with_planner();
    state.add_run(RunSpec {
        workflow: PLANNER.into(),
        event: "workflow_dispatch".into(),
        status: "in_progress".into(),
        conclusion: None,
        created_at: Some(Timestamp::system_now().minus(600)),
        ..RunSpec::default()
    });
    let server = FakeGitHub::start(state);

    let (step, _) = wake(&server, &bot_smoke_run_ended(501), &[], 0);

    assert_eq!(dispatches(&server), one_wake_dispatch());
    assert_eq!(
        step.output("planner-run"),
        server.state().dispatches[0].run_id.to_string()
    );
}

#[test]
fn a_dry_run_decides_but_dispatches_nothing() {
    let server = FakeGitHub::start(repository_with_planner());

    let (step, log) = wake(&server, &bot_smoke_run_ended(501), &["--dry-run"], 0);

    assert!(dispatches(&server).is_empty());
    assert_eq!(write_requests(&server), Vec::<String>::new());
    assert_eq!(step.output("dispatched"), "false");
    assert_eq!(step.output("wake-reason"), "dispatch");
    assert!(
        log.contains("dry run: would dispatch klaud-plan.yml on main"),
        "{log}"
    );
}

#[test]
fn wake_without_an_event_payload_is_bad_input_before_any_request() {
    let server = FakeGitHub::start(repository_with_planner());
    let step = Step::default();

    let log = step.run(step.command(&server, "wake"), 2);

    assert!(log.contains("::error::GITHUB_EVENT_PATH"), "{log}");
    assert_eq!(requests(&server), Vec::<String>::new());
}

#[test]
fn a_payload_of_another_event_is_bad_input() {
    let server = FakeGitHub::start(repository_with_planner());

    let (_, log) = wake(&server, &json!({"ref": "refs/heads/main"}), &[], 2);

    assert!(log.contains("no workflow_run"), "{log}");
    assert_eq!(requests(&server), Vec::<String>::new());
}

#[test]
fn a_dispatch_github_refuses_fails_the_step_and_names_the_permission() {
    let server = FakeGitHub::start(repository_with_planner());
    server.set_faults(FaultConfig::rules(vec![FaultRule::nth(
        "POST",
        "/repos/*/actions/workflows/*/dispatches",
        1,
        403,
    )]));

    let (step, log) = wake(&server, &bot_smoke_run_ended(501), &[], 1);

    assert!(log.contains("actions: write"), "{log}");
    assert!(dispatches(&server).is_empty());
    assert!(step.outputs().is_empty(), "no outputs from a failed step");
}

#[test]
fn a_dispatch_whose_answer_was_lost_is_found_and_not_sent_twice() {
    let server = FakeGitHub::start(repository_with_planner());
    server.set_faults(FaultConfig::rules(vec![
        FaultRule::nth("POST", "/repos/*/actions/workflows/*/dispatches", 1, 502).after_handling(),
    ]));

    let (step, _) = wake(&server, &bot_smoke_run_ended(501), &[], 0);

    assert_eq!(dispatches(&server), one_wake_dispatch());
    assert_eq!(step.output("dispatched"), "true");
    assert_eq!(
        step.output("planner-run"),
        server.state().dispatches[0].run_id.to_string()
    );
}
