//! `klaud finish` end to end against the fake GitHub (contract §3.5, §4, §5): every row of the
//! outcome table, the maintainer-closed ready pull request (never redrafted), the closed ready
//! pull request with a pending cleanup (finishes instead of getting stuck), legacy outcome
//! names, a skipped agent step, the agent's execution record (read, or reported when unusable),
//! the receipt updated in place, the guards and the dry run.

#![allow(clippy::disallowed_methods)] // tests read the environment and start processes

use klaud_fake_github as fake_github;
#[path = "recover_support/mod.rs"]
mod recover_support;

use std::time::Duration;

use fake_github::{ClosedSpec, FakeGitHubHandle, PullRequestSpec, PullState};
use klaud::core::ledger::{Session, SessionState};
use klaud::core::outcome::Outcome;
use recover_support::*;

const FINISH_RUN: u64 = 88_000_000_001;

/// A candidate with a live session and the bot's draft labelled in progress.
fn live_draft(world: &mut World, candidate: &str, parent: u64) -> u64 {
    let number = world.bot_draft(candidate);
    world.session(candidate, SessionState::Live, parent, Some(number));
    world.claim(candidate, parent);
    number
}

/// `klaud finish --candidate <id>` plus `arguments`, expecting exit `code`; returns the log.
fn finish(
    server: &FakeGitHubHandle,
    pass: &Pass,
    candidate: &str,
    arguments: &[&str],
    code: i32,
) -> String {
    let mut command = pass.command(server);
    // The support builds a recover pass; finish is the same step with another mode.
    let args: Vec<String> = command
        .get_args()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    let mut finish = std::process::Command::new(command.get_program());
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => finish.env(name, value),
            None => finish.env_remove(name),
        };
    }
    finish.arg("finish");
    finish.args(args.iter().skip(1));
    finish.args(["--candidate", candidate, "--cancel-wait", "0"]);
    finish.args(arguments);
    command = finish;
    let mut command = assert_cmd::Command::from_std(command);
    command.timeout(Duration::from_secs(120));
    let assert = command.assert().code(code);
    let output = assert.get_output();
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn pull_state(server: &FakeGitHubHandle, number: u64) -> fake_github::PullRequest {
    server.with_state(|state| state.pulls[&number].clone())
}

fn branch_exists(server: &FakeGitHubHandle, candidate: &str) -> bool {
    server.with_state(|state| state.branch_sha(&branch(candidate)).is_some())
}

fn session_of(server: &FakeGitHubHandle, candidate: &str) -> Session {
    stored_ledger(server)
        .sessions
        .into_iter()
        .rev()
        .find(|session| session.candidate == candidate)
        .expect("the candidate has a session")
}

/// The draft/ready mutations sent (GraphQL also carries batched reads and `updateRefs`).
fn graphql_requests(server: &FakeGitHubHandle) -> Vec<String> {
    server
        .request_log()
        .iter()
        .filter_map(|request| request.graphql())
        .filter(|operation| {
            operation.mutation
                && operation.fields.iter().any(|field| {
                    field == "markPullRequestReadyForReview" || field == "convertPullRequestToDraft"
                })
        })
        .map(|operation| operation.fields.join(", "))
        .collect()
}

fn receipts(server: &FakeGitHubHandle, number: u64) -> Vec<String> {
    server.with_state(|state| {
        state
            .comments
            .values()
            .filter(|comment| comment.issue_number == number)
            .filter(|comment| comment.body.contains("<!-- klaud:receipt candidate="))
            .map(|comment| comment.body.clone())
            .collect()
    })
}

#[test]
fn every_deleting_outcome_closes_the_draft_labels_it_and_deletes_the_branch() {
    let rows = [
        ("no-capacity", Outcome::NoCapacity, "klaud-infra"),
        ("missing-assets", Outcome::MissingAssets, "klaud-infra"),
        ("weights-missing", Outcome::WeightsMissing, "klaud-infra"),
        ("incompatible", Outcome::Incompatible, "klaud-incompatible"),
        ("inconclusive", Outcome::Inconclusive, "klaud-error"),
        ("failed", Outcome::Failed, "klaud-error"),
        ("no-outcome", Outcome::NoOutcome, "klaud-error"),
        ("duplicate", Outcome::Duplicate, "klaud-retired"),
        ("retired", Outcome::Retired, "klaud-retired"),
        ("already-updated", Outcome::AlreadyUpdated, "klaud-retired"),
    ];
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    let mut pulls = Vec::new();
    for (index, (name, _, _)) in rows.iter().enumerate() {
        let candidate = format!("c{index}");
        let number = live_draft(&mut world, &candidate, parent);
        world.state.add_label_to_issue(number, "full-sweep-enabled");
        pulls.push((candidate, number, *name));
    }
    let bot_smoke = world.smoke("c0", BOT, true);
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);

    for ((candidate, number, name), (_, outcome, label)) in pulls.iter().zip(rows) {
        finish(&server, &pass, candidate, &["--outcome", name], 0);

        let pull = pull_state(&server, *number);
        assert_eq!(pull.state, PullState::Closed, "{name}");
        assert_eq!(
            pull.labels,
            [label],
            "{name}: one status label, no sweep label"
        );
        assert!(!branch_exists(&server, candidate), "{name}: branch deleted");
        let session = session_of(&server, candidate);
        assert_eq!(session.state, SessionState::Finished, "{name}");
        assert_eq!(session.outcome, Some(outcome), "{name}");
        assert_eq!(receipts(&server, *number).len(), 1, "{name}: one receipt");
        assert_eq!(pass.outputs()["outcome"], *name);
        assert_eq!(pass.outputs()["cleanup"], "done");
    }
    let runs = server.with_state(|state| state.runs.clone());
    assert_eq!(runs[&bot_smoke].conclusion.as_deref(), Some("cancelled"));
    assert!(
        stored_ledger(&server).claims.is_empty(),
        "the families' claims are released"
    );
    assert!(
        graphql_requests(&server).is_empty(),
        "drafts are closed as they are"
    );
    assert!(
        server
            .request_log()
            .iter()
            .filter(|request| request.is_write() && request.path.contains("/labels"))
            .all(|request| request.login.as_deref() == Some(LABEL_LOGIN)
                || request.path.contains("full-sweep")),
        "status labels are written with the label token"
    );
}

#[test]
fn a_draft_a_maintainer_closed_just_before_the_bots_close_keeps_its_branch() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    let number = live_draft(&mut world, "a", parent);
    let server = world.start();
    // After finish re-read the draft as open, a maintainer closes it; the bot's close then
    // succeeds without changing who closed it.
    server.before_request(
        "PATCH",
        &format!("/repos/acme/bench/pulls/{number}"),
        |state| {
            let now = state.now();
            for pull in state.pulls.values_mut() {
                if pull.state == PullState::Open {
                    pull.state = PullState::Closed;
                    pull.closed_by = Some(MAINTAINER.into());
                    pull.closed_at = Some(now);
                }
            }
        },
    );
    let pass = Pass::new(FINISH_RUN);

    finish(&server, &pass, "a", &["--outcome", "failed"], 0);

    let pull = pull_state(&server, number);
    assert_eq!(pull.closed_by.as_deref(), Some(MAINTAINER));
    assert!(
        branch_exists(&server, "a"),
        "a maintainer-closed pull request keeps its branch"
    );
}

#[test]
fn validated_marks_the_draft_ready_after_a_successful_final_sweep_and_keeps_the_branch() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    let number = live_draft(&mut world, "a", parent);
    world.sweep("a", BOT, "completed", Some("success"), 30);
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);

    finish(&server, &pass, "a", &["--outcome", "validated"], 0);

    let pull = pull_state(&server, number);
    assert_eq!(pull.state, PullState::Open);
    assert!(!pull.draft, "ready for review");
    assert_eq!(pull.labels, ["klaud-finished"]);
    assert!(branch_exists(&server, "a"));
    assert_eq!(session_of(&server, "a").outcome, Some(Outcome::Validated));
}

#[test]
fn validated_without_a_successful_final_sweep_is_left_alone_with_the_outcome_pending() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    let number = live_draft(&mut world, "a", parent);
    world.sweep("a", BOT, "completed", Some("failure"), 30);
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);

    finish(&server, &pass, "a", &["--outcome", "validated"], 0);

    assert!(pull_state(&server, number).draft, "not marked ready");
    assert_eq!(pass.outputs()["cleanup"], "left-alone");
    let session = session_of(&server, "a");
    assert_eq!(session.state, SessionState::Live);
    assert_eq!(session.pending_outcome, Some(Outcome::Validated));
    assert_eq!(writes_beside_the_ledger(&server), Vec::<String>::new());
}

/// Candidate `a`'s bot-only pull request, once ready for review, closed an hour ago by `by`
/// (unmerged, its branch kept).
fn closed_ready_pull_request(world: &mut World, by: &str) -> u64 {
    let commits = vec![world.bot_commit("a", 9)];
    let created_at = Some(world.ago(10 * 3600));
    let closed_at = Some(world.ago(3600));
    world.state.add_pull_request(PullRequestSpec {
        title: "klaud: a".into(),
        author: BOT.into(),
        head_ref: branch("a"),
        draft: false,
        labels: vec!["klaud-in-progress".into()],
        commits,
        created_at,
        closed: Some(ClosedSpec {
            by: by.into(),
            at: closed_at,
            merged: false,
            delete_branch: false,
        }),
        ..PullRequestSpec::default()
    })
}

#[test]
fn a_ready_pull_request_a_maintainer_closed_is_never_redrafted() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    let number = closed_ready_pull_request(&mut world, MAINTAINER);
    world.session("a", SessionState::Live, parent, Some(number));
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);

    finish(&server, &pass, "a", &["--outcome", "failed"], 0);

    assert_eq!(
        graphql_requests(&server),
        Vec::<String>::new(),
        "no redraft call"
    );
    let pull = pull_state(&server, number);
    assert_eq!(pull.state, PullState::Closed);
    assert!(!pull.draft);
    assert!(
        branch_exists(&server, "a"),
        "left as the maintainer left it"
    );
    let session = session_of(&server, "a");
    assert_eq!(session.outcome, Some(Outcome::ClosedByMaintainer));
    assert_eq!(pass.outputs()["outcome"], "closed-by-maintainer");
    assert_eq!(pull.labels, Vec::<String>::new(), "no status label");
}

#[test]
fn a_closed_ready_pull_request_with_a_pending_cleanup_still_finishes() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    let number = closed_ready_pull_request(&mut world, BOT);
    world
        .session("a", SessionState::Live, parent, Some(number))
        .pending_outcome = Some(Outcome::Failed);
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);

    finish(&server, &pass, "a", &["--outcome", "failed"], 0);

    assert_eq!(
        graphql_requests(&server),
        Vec::<String>::new(),
        "no redraft call"
    );
    let session = session_of(&server, "a");
    assert_eq!(session.state, SessionState::Finished);
    assert_eq!(session.outcome, Some(Outcome::Failed));
    assert_eq!(pull_state(&server, number).labels, ["klaud-error"]);
    assert!(!branch_exists(&server, "a"), "the bot's branch is deleted");
}

#[test]
fn a_handed_off_pull_request_is_not_touched() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    let commits = vec![world.bot_commit("a", 9)];
    let number = world.bot_pull("a", true, commits, &["klaud-in-progress", "klaud-handoff"]);
    world.session("a", SessionState::Live, parent, Some(number));
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);

    finish(&server, &pass, "a", &["--outcome", "failed"], 0);

    assert_eq!(writes_beside_the_ledger(&server), Vec::<String>::new());
    assert_eq!(session_of(&server, "a").outcome, Some(Outcome::Handoff));
    assert_eq!(pass.outputs()["cleanup"], "untouched");
}

#[test]
fn a_legacy_outcome_name_is_recorded_under_its_new_name() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    let number = live_draft(&mut world, "a", parent);
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);

    finish(&server, &pass, "a", &["--outcome", "uncertain"], 0);

    assert_eq!(
        session_of(&server, "a").outcome,
        Some(Outcome::Inconclusive)
    );
    assert_eq!(pass.outputs()["outcome"], "inconclusive");
    assert_eq!(pull_state(&server, number).labels, ["klaud-error"]);
}

#[test]
fn a_skipped_agent_step_records_no_cooldown() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    let number = live_draft(&mut world, "a", parent);
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);
    std::fs::write(
        pass.path("outcome.json"),
        r#"{"outcome": "no-outcome", "phase": "install-cli", "reason-code": "cli-install-failed"}"#,
    )
    .unwrap();
    let file = pass.path("outcome.json");

    finish(
        &server,
        &pass,
        "a",
        &[
            "--outcome-file",
            file.to_str().unwrap(),
            "--agent-outcome",
            "skipped",
        ],
        0,
    );

    let session = session_of(&server, "a");
    assert_eq!(session.outcome, Some(Outcome::NoOutcome));
    assert!(
        !session.agent_ran,
        "no cooldown for an agent that never ran"
    );
    let receipt = receipts(&server, number).join("\n");
    assert!(receipt.contains("agent step: skipped"), "{receipt}");
    assert!(receipt.contains("cli-install-failed"), "{receipt}");
}

#[test]
fn finishing_twice_updates_the_one_receipt_in_place() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    let number = live_draft(&mut world, "a", parent);
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);

    finish(&server, &pass, "a", &["--outcome", "failed", "--park"], 0);
    assert_eq!(session_of(&server, "a").state, SessionState::Parked);
    assert_eq!(pull_state(&server, number).labels, ["klaud-parked"]);
    assert!(pull_state(&server, number).draft);
    finish(&server, &pass, "a", &["--outcome", "failed"], 0);

    let bodies = receipts(&server, number);
    assert_eq!(bodies.len(), 1, "one receipt per session");
    assert!(bodies[0].contains(&format!(
        "<!-- klaud:receipt candidate=a parent={parent} -->"
    )));
    assert!(!bodies[0].contains("parked"), "refreshed: {}", bodies[0]);
}

#[test]
fn a_draft_with_a_maintainer_commit_is_left_alone() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    let commits = vec![
        world.bot_commit("a", 9),
        world.maintainer_commit("a", 8),
        world.bot_commit("a", 7),
    ];
    let number = world.bot_pull("a", true, commits, &["klaud-in-progress"]);
    world.session("a", SessionState::Live, parent, Some(number));
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);

    let log = finish(&server, &pass, "a", &["--outcome", "failed"], 0);

    assert!(log.contains("left alone"), "{log}");
    assert_eq!(writes_beside_the_ledger(&server), Vec::<String>::new());
    assert_eq!(pull_state(&server, number).state, PullState::Open);
    assert_eq!(
        session_of(&server, "a").pending_outcome,
        Some(Outcome::Failed)
    );
}

#[test]
fn a_ready_pull_request_without_a_validated_record_is_left_alone() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    let commits = vec![world.bot_commit("a", 9)];
    let number = world.bot_pull("a", false, commits, &["klaud-in-progress"]);
    world.session("a", SessionState::Live, parent, Some(number));
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);

    finish(&server, &pass, "a", &["--outcome", "failed"], 0);

    assert_eq!(writes_beside_the_ledger(&server), Vec::<String>::new());
    assert_eq!(pass.outputs()["cleanup"], "left-alone");
}

#[test]
fn a_dry_run_writes_nothing() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    live_draft(&mut world, "a", parent);
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);

    let log = finish(
        &server,
        &pass,
        "a",
        &["--outcome", "failed", "--dry-run"],
        0,
    );

    assert!(log.contains("close #"), "the plan is printed: {log}");
    assert_eq!(
        server
            .request_log()
            .iter()
            .filter(|request| request.is_write())
            .count(),
        0
    );
    assert_eq!(session_of(&server, "a").state, SessionState::Live);
}

#[test]
fn an_unknown_outcome_is_bad_input_before_any_request() {
    let world = World::new();
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);

    let log = finish(&server, &pass, "a", &["--outcome", "succeeded"], 2);

    assert!(log.contains("unknown outcome 'succeeded'"), "{log}");
    assert!(server.request_log().is_empty());
}

#[test]
fn a_missing_outcome_file_records_no_outcome() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    live_draft(&mut world, "a", parent);
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);
    let file = pass.path("never-written.json");

    let log = finish(
        &server,
        &pass,
        "a",
        &[
            "--outcome-file",
            file.to_str().unwrap(),
            "--agent-outcome",
            "skipped",
        ],
        0,
    );

    assert!(log.contains("recording no-outcome"), "{log}");
    let session = session_of(&server, "a");
    assert_eq!(session.outcome, Some(Outcome::NoOutcome));
    assert!(!session.agent_ran);
}

/// A file of the real agent CLI's data, in `tests/fixtures/claude-code/`.
fn agent_fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code")
        .join(name)
}

#[test]
fn the_agents_execution_record_goes_into_the_attempt_finish_json_and_the_summary() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    live_draft(&mut world, "a", parent);
    let adopted = chrono::DateTime::from_timestamp(world.ago(3600).0, 0).unwrap();
    world.ledger.sessions[0]
        .attempts
        .push(klaud::core::ledger::Attempt {
            number: 1,
            run: FINISH_RUN,
            adopted_at: adopted,
            deadline: adopted + chrono::Duration::hours(5),
            ended_at: None,
            end: None,
            runs: Vec::new(),
            notes: Vec::new(),
            notes_folded: 0,
            agent: None,
        });
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);
    // The stream of a run whose model API refused connections: `success` with `is_error`.
    let record = agent_fixture("stream-api-unreachable.json");

    let log = finish(
        &server,
        &pass,
        "a",
        &[
            "--outcome",
            "failed",
            "--agent-outcome",
            "failure",
            "--execution-file",
            record.to_str().unwrap(),
        ],
        0,
    );

    assert!(
        log.contains("agent result: failed (success, api_error, is_error)"),
        "{log}"
    );
    let agent = session_of(&server, "a").attempts[0].agent.clone().unwrap();
    assert_eq!(agent.is_error, Some(true));
    assert_eq!(agent.subtype.as_deref(), Some("success"));
    assert_eq!(agent.terminal_reason.as_deref(), Some("api_error"));
    assert_eq!(agent.turns, Some(1));
    assert_eq!(agent.cost_usd, Some(0.0));
    let finish_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(pass.path("out/finish.json")).unwrap())
            .unwrap();
    assert_eq!(finish_json["agent-result"]["is-error"], true);
    assert_eq!(finish_json["agent-result"]["turns"], 1);
    assert!(
        pass.summary()
            .contains("Agent run: failed (success, api_error, is_error), 1 turns, $0.0000"),
        "{}",
        pass.summary()
    );
}

#[test]
fn an_unreadable_execution_record_is_reported_and_the_outcome_still_recorded() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    live_draft(&mut world, "a", parent);
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);
    let record = pass.path("execution.json");
    std::fs::write(&record, "[{\"type\": \"assistant\"}").unwrap();

    let log = finish(
        &server,
        &pass,
        "a",
        &[
            "--outcome",
            "failed",
            "--execution-file",
            record.to_str().unwrap(),
        ],
        0,
    );

    assert!(log.contains("says nothing usable (not JSON"), "{log}");
    assert_eq!(session_of(&server, "a").outcome, Some(Outcome::Failed));
    assert!(!pass.summary().contains("Agent run:"));
}

/// An open issue handed to the agent, its candidate's live session with the bot's draft, and the
/// candidate's record (with `issue` and `task`) on the state branch; returns (issue, candidate,
/// draft).
fn issue_candidate(world: &mut World, parent: u64) -> (u64, String, u64) {
    let issue = world.state.add_issue(fake_github::builder::IssueSpec {
        title: "Cache the parser tables".into(),
        body: Some("They are rebuilt on every call.".into()),
        author: MAINTAINER.into(),
        labels: vec!["klaud".into()],
        ..Default::default()
    });
    let candidate = format!("issue-{issue}");
    let draft = live_draft(world, &candidate, parent);
    let record = serde_json::json!({
        "id": candidate, "family": family(&candidate),
        "issue": {"number": issue, "title": "Cache the parser tables",
                  "url": format!("https://github.com/acme/bench/issues/{issue}"),
                  "labels": ["klaud"], "author": MAINTAINER, "label-actor": MAINTAINER},
        "task": {"title": "Cache the parser tables", "body": "They are rebuilt on every call."},
    });
    world.state.put_file(
        STATE_BRANCH,
        &format!("records/{candidate}.json"),
        &record.to_string(),
    );
    (issue, candidate, draft)
}

/// klaud's comments on `issue`.
fn issue_comments(server: &FakeGitHubHandle, issue: u64) -> Vec<String> {
    server.with_state(|state| {
        state
            .comments
            .values()
            .filter(|comment| comment.issue_number == issue && comment.author == BOT)
            .map(|comment| comment.body.clone())
            .collect()
    })
}

fn close_issue(server: &FakeGitHubHandle, issue: u64) {
    server.with_state(|state| {
        let closed = state.issues.get_mut(&issue).unwrap();
        closed.state = PullState::Closed;
        closed.closed_by = Some(MAINTAINER.into());
    });
}

#[test]
fn a_validated_issue_candidate_links_its_issue_and_keeps_one_comment_there() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    let (issue, candidate, draft) = issue_candidate(&mut world, parent);
    world.sweep(&candidate, BOT, "completed", Some("success"), 30);
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);

    finish(&server, &pass, &candidate, &["--outcome", "validated"], 0);
    finish(&server, &pass, &candidate, &["--outcome", "validated"], 0);

    let pull = pull_state(&server, draft);
    assert!(!pull.draft, "ready for review");
    let body = pull.body.unwrap_or_default();
    assert_eq!(
        body.matches(&format!("Closes #{issue}")).count(),
        1,
        "written once: {body}"
    );
    let comments = issue_comments(&server, issue);
    assert_eq!(
        comments.len(),
        1,
        "one comment, updated in place: {comments:?}"
    );
    let comment = &comments[0];
    assert!(comment.starts_with(&format!("<!-- klaud:issue candidate={candidate} -->")));
    assert!(comment.contains("**validated**"), "{comment}");
    assert!(
        comment.contains(&format!("- pull request: #{draft}")),
        "{comment}"
    );
    assert!(comment.contains("- may run again:"), "{comment}");
}

#[test]
fn a_failed_issue_candidate_says_on_the_issue_when_it_may_run_again() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    let (issue, candidate, draft) = issue_candidate(&mut world, parent);
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);
    std::fs::write(
        pass.path("klaud.yml"),
        format!("bot: {BOT}\ncooldowns:\n  failed: 2\n"),
    )
    .unwrap();

    finish(&server, &pass, &candidate, &["--outcome", "failed"], 0);

    assert_eq!(pull_state(&server, draft).state, PullState::Closed);
    let comments = issue_comments(&server, issue);
    assert_eq!(comments.len(), 1);
    assert!(comments[0].contains("**failed**"), "{}", comments[0]);
    assert!(
        comments[0].contains("- may run again: after ")
            && comments[0].contains("(cooldown of `failed`)"),
        "{}",
        comments[0]
    );
    assert!(
        pull_state(&server, draft)
            .body
            .unwrap_or_default()
            .find("Closes #")
            .is_none(),
        "only a validated pull request closes its issue"
    );
}

#[test]
fn an_issue_closed_mid_session_retires_its_candidate_and_a_ready_pull_request_is_left_alone() {
    let mut world = World::new();
    let parent = world.running_planner(&[]);
    let (issue, candidate, draft) = issue_candidate(&mut world, parent);
    let (ready_issue, ready_candidate, ready) = issue_candidate(&mut world, parent);
    world.state.pulls.get_mut(&ready).unwrap().draft = false;
    world
        .ledger
        .sessions
        .iter_mut()
        .find(|session| session.candidate == ready_candidate)
        .unwrap()
        .outcome = Some(Outcome::Validated);
    let server = world.start();
    close_issue(&server, issue);
    close_issue(&server, ready_issue);
    let pass = Pass::new(FINISH_RUN);

    finish(&server, &pass, &candidate, &["--outcome", "validated"], 0);
    finish(
        &server,
        &pass,
        &ready_candidate,
        &["--outcome", "failed"],
        0,
    );

    let session = session_of(&server, &candidate);
    assert_eq!(session.outcome, Some(Outcome::Retired));
    let pull = pull_state(&server, draft);
    assert_eq!(pull.state, PullState::Closed, "the draft is cleaned up");
    assert!(
        !branch_exists(&server, &candidate),
        "retired deletes the branch"
    );
    let comment = &issue_comments(&server, issue)[0];
    assert!(comment.contains("**retired**"), "{comment}");
    assert!(comment.contains("its issue was closed"), "{comment}");

    assert_eq!(
        session_of(&server, &ready_candidate).outcome,
        Some(Outcome::Retired)
    );
    let ready_pull = pull_state(&server, ready);
    assert_eq!(ready_pull.state, PullState::Open, "left to the maintainers");
    assert!(!ready_pull.draft);
    assert!(branch_exists(&server, &ready_candidate));
}

/// The family `old` and `new` share.
const SHARED_FAMILY: &str = "configs/x-master.yaml:shared";

/// Candidate `old`'s ready pull request, validated five hours ago and watched in after-care
/// (when `in_aftercare`), and candidate `new` of the same family with a live draft whose final
/// sweep succeeded. Returns (old's number, new's number).
fn a_newer_candidate_of_the_family(world: &mut World, in_aftercare: bool) -> (u64, u64) {
    let parent = world.finished_planner(20, &[]);
    let commits = vec![world.bot_commit("old", 20)];
    let old = world.bot_pull("old", false, commits, &["klaud-finished"]);
    let session = world.session("old", SessionState::Finished, parent, Some(old));
    session.family = SHARED_FAMILY.into();
    session.outcome = Some(Outcome::Validated);
    if in_aftercare {
        let validated = chrono::Utc::now() - chrono::Duration::hours(5);
        world
            .ledger
            .record_validated("old", SHARED_FAMILY, old, None, validated);
    }
    let running = world.running_planner(&[]);
    let new = live_draft(world, "new", running);
    for session in world
        .ledger
        .sessions
        .iter_mut()
        .filter(|s| s.candidate == "new")
    {
        session.family = SHARED_FAMILY.into();
    }
    for claim in world
        .ledger
        .claims
        .iter_mut()
        .filter(|c| c.candidate == "new")
    {
        claim.family = SHARED_FAMILY.into();
    }
    world.sweep("new", BOT, "completed", Some("success"), 30);
    (old, new)
}

fn finish_json(pass: &Pass) -> serde_json::Value {
    let text = std::fs::read_to_string(pass.path("out/finish.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Requests of the log as (reads, writes).
fn counted(server: &FakeGitHubHandle) -> (usize, usize) {
    let log = server.request_log();
    let writes = log.iter().filter(|request| request.is_write()).count();
    (log.len() - writes, writes)
}

#[test]
fn a_validated_candidate_closes_the_older_pull_request_of_its_family_as_superseded() {
    let mut world = World::new();
    let (old, new) = a_newer_candidate_of_the_family(&mut world, true);
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);

    let log = finish(&server, &pass, "new", &["--outcome", "validated"], 0);

    assert!(!pull_state(&server, new).draft, "the newer one is ready");
    let closed = pull_state(&server, old);
    assert_eq!(closed.state, PullState::Closed, "{log}");
    assert!(closed.labels.is_empty(), "{:?}", closed.labels);
    assert!(!branch_exists(&server, "old"), "its branch is deleted");
    let notes: Vec<String> = server.with_state(|state| {
        state
            .comments
            .values()
            .filter(|comment| comment.issue_number == old)
            .map(|comment| comment.body.clone())
            .collect()
    });
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains(&format!("Superseded by #{new}")),
        "{notes:?}"
    );
    let record = stored_ledger(&server).aftercare_of(old).cloned().unwrap();
    assert!(
        matches!(record.state, klaud::core::aftercare::AftercareState::Superseded { by, .. } if by == new),
        "{record:?}"
    );
    assert_eq!(pass.outputs()["superseded"], format!("[{old}]"));
    let reported = &finish_json(&pass)["superseded"]["pull-requests"][0];
    assert_eq!(reported["pull-request"], old);
    assert_eq!(reported["verdict"], "close");
    assert_eq!(reported["result"], "closed");
    assert!(
        pass.summary()
            .contains(&format!("#{old} (old) superseded by #{new}: closed"))
    );
}

/// What superseding one older pull request costs `finish`: the requests of the same finish
/// without and with it.
#[test]
fn superseding_one_older_pull_request_costs_five_reads_and_four_writes() {
    let mut without = World::new();
    a_newer_candidate_of_the_family(&mut without, false);
    let without = without.start();
    finish(
        &without,
        &Pass::new(FINISH_RUN),
        "new",
        &["--outcome", "validated"],
        0,
    );
    let mut with = World::new();
    a_newer_candidate_of_the_family(&mut with, true);
    let with = with.start();
    finish(
        &with,
        &Pass::new(FINISH_RUN),
        "new",
        &["--outcome", "validated"],
        0,
    );

    let (reads_without, writes_without) = counted(&without);
    let (reads_with, writes_with) = counted(&with);
    // Reads: the pull request with its commits (one GraphQL request), its sweeps since it was
    // validated, its re-check, the note's marker, who closed it. Writes: the note, the status
    // label, the close, the branch's conditional deletion.
    assert_eq!(
        (reads_with - reads_without, writes_with - writes_without),
        (5, 4),
        "{:#?}",
        with.request_log()
            .iter()
            .map(|request| format!("{} {}", request.method, request.path))
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_superseded_pull_request_a_maintainer_swept_is_left_for_good_with_nothing_written() {
    let mut world = World::new();
    let (old, new) = a_newer_candidate_of_the_family(&mut world, true);
    world.sweep("old", MAINTAINER, "completed", Some("success"), 60);
    let server = world.start();
    let pass = Pass::new(FINISH_RUN);

    finish(&server, &pass, "new", &["--outcome", "validated"], 0);

    assert!(!pull_state(&server, new).draft);
    let kept = pull_state(&server, old);
    assert_eq!(kept.state, PullState::Open);
    assert_eq!(kept.labels, ["klaud-finished"]);
    assert!(branch_exists(&server, "old"));
    assert!(writes_to(&server, &format!("/issues/{old}/")).is_empty());
    let record = stored_ledger(&server).aftercare_of(old).cloned().unwrap();
    let klaud::core::aftercare::AftercareState::Left { reason, .. } = &record.state else {
        panic!("left for good: {record:?}");
    };
    assert!(reason.contains(MAINTAINER), "{reason}");
    assert_eq!(pass.outputs()["superseded"], "[]");
    assert_eq!(finish_json(&pass)["superseded"]["ledger"], "written");
}

#[test]
fn a_superseded_pull_request_whose_sweeps_cannot_be_read_stays_superseded_for_recover() {
    let mut world = World::new();
    let (old, _) = a_newer_candidate_of_the_family(&mut world, true);
    let server = world.start();
    // finish's own listing of the newer branch's sweeps is the first; old's is the second.
    server.set_faults(fake_github::FaultConfig::rules(vec![
        fake_github::FaultRule::nth(
            "GET",
            "/repos/*/actions/workflows/run-sweep.yml/runs",
            2,
            422,
        ),
    ]));
    let pass = Pass::new(FINISH_RUN);

    let log = finish(&server, &pass, "new", &["--outcome", "validated"], 0);

    assert_eq!(pull_state(&server, old).state, PullState::Open);
    assert!(branch_exists(&server, "old"));
    assert!(writes_to(&server, &format!("/issues/{old}/")).is_empty());
    let record = stored_ledger(&server).aftercare_of(old).cloned().unwrap();
    assert!(
        matches!(
            record.state,
            klaud::core::aftercare::AftercareState::Superseded { .. }
        ),
        "{record:?}"
    );
    assert!(log.contains("the next recover closes it"), "{log}");
    assert_eq!(
        finish_json(&pass)["superseded"]["pull-requests"][0]["verdict"],
        "later"
    );
}

#[test]
fn a_dry_run_that_would_supersede_lists_the_writes_and_sends_none() {
    let mut world = World::new();
    let (old, _) = a_newer_candidate_of_the_family(&mut world, true);
    world.sweep("old", MAINTAINER, "completed", Some("success"), 60);
    let mut second = World::new();
    let (second_old, _) = a_newer_candidate_of_the_family(&mut second, true);
    for (world, old, verdict) in [(world, old, "left"), (second, second_old, "close")] {
        let server = world.start();
        let pass = Pass::new(FINISH_RUN);

        finish(
            &server,
            &pass,
            "new",
            &["--outcome", "validated", "--dry-run"],
            0,
        );

        assert!(
            server
                .request_log()
                .iter()
                .all(|request| !request.is_write()),
            "{verdict}: nothing is sent"
        );
        let record = finish_json(&pass);
        assert_eq!(
            record["superseded"]["pull-requests"][0]["verdict"], verdict,
            "{record:#}"
        );
        let writes = record["dry-run-writes"].to_string();
        match verdict {
            "close" => assert!(writes.contains(&format!("/pulls/{old}")), "{writes}"),
            _ => assert_eq!(record["superseded"]["ledger"], "not-written"),
        }
    }
}
