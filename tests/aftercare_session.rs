//! An after-care session inside the candidate job (contract §12) against the fake GitHub, with
//! the real binary: the ledger as `recover` leaves it when it starts a `repair` session, a job of
//! the candidate workflow it dispatched adopts it — the validated pull request turned back into a
//! draft labelled `klaud-in-progress`, `session.json` with the kind, the base branch at its
//! current commit and the failed jobs with the ends of their logs, read through GitHub's redirect
//! on the blob server without the token — and `finish` ends it: `validated` makes the pull
//! request ready and `klaud-finished` again and watched at its new head; any other outcome leaves
//! it open as a draft with its branch, labelled `klaud-needs-maintainer`, waiting for a
//! maintainer.

#![allow(clippy::disallowed_methods)] // tests read the environment and start processes

use klaud_fake_github as fake_github;
#[path = "aftercare_support/mod.rs"]
mod aftercare_support;
#[path = "recover_support/mod.rs"]
mod recover_support;
#[path = "session_support/mod.rs"]
mod session_support;

use aftercare_support::{Seeded, aftercare_started};
use fake_github::{CommitSpec, FakeGitHubHandle, RunSpec};
use klaud::core::aftercare::{AftercareState, NeedsMaintainerBecause, SessionKind};
use klaud::core::ledger::SessionState;
use klaud::core::outcome::Outcome;
use recover_support::*;
use serde_json::{Value, json};
use session_support::*;

const DISPATCHED_RUN: u64 = 72_000_000_500;

/// A log of `lines` numbered lines.
fn numbered_log(lines: usize) -> String {
    (1..=lines)
        .map(|line| {
            format!(
                "2026-01-01T00:00:{:02}.0000000Z step output {line}\n",
                line % 60
            )
        })
        .collect::<String>()
        + "2026-01-01T00:01:00.0000000Z Error: shard 1 ran out of memory\n"
}

/// A repository with a `repair` session started on the validated pull request of `a`: the
/// sweep's first job failed with a log kept, its second with none; `log-lines: 5`.
fn repair_world() -> (FakeGitHubHandle, Seeded, Pass) {
    let mut world = World::new();
    let log = numbered_log(40);
    let seeded = aftercare_started(&mut world, "a", SessionKind::Repair, &[Some(&log), None]);
    let server = world.start();
    let pass = Pass::new(DISPATCHED_RUN);
    std::fs::write(
        pass.path("klaud.yml"),
        format!("bot: {BOT}\naftercare:\n  log-lines: 5\n"),
    )
    .unwrap();
    (server, seeded, pass)
}

fn labels(server: &FakeGitHubHandle, number: u64) -> Vec<String> {
    server.with_state(|state| state.pulls[&number].labels.clone())
}

fn finish(server: &FakeGitHubHandle, pass: &Pass, outcome: &str) -> String {
    let (code, stdout, stderr) = run_mode(
        server,
        pass,
        "finish",
        &[
            "--candidate",
            "a",
            "--outcome",
            outcome,
            "--agent-outcome",
            "success",
            "--cancel-wait",
            "0",
        ],
        |_| {},
        "",
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    stdout + &stderr
}

/// The agent's push: one more commit of the bot on the candidate's branch; the new head.
fn push(server: &FakeGitHubHandle) -> String {
    server.with_state(|state| {
        state.push_commits(
            &branch("a"),
            vec![
                CommitSpec::by(BOT)
                    .message("klaud: fix the shard's memory")
                    .file("configs/a.yaml", "tuned: again\n"),
            ],
        )
    })
}

#[test]
fn a_dispatched_repair_session_makes_its_pull_request_a_draft_in_progress_and_gets_its_evidence() {
    let (server, seeded, pass) = repair_world();
    let main = server.with_state(|state| state.branch_sha("main").unwrap().to_string());
    let log = session_step(&server, &pass, "a");
    let outputs = pass.outputs();
    assert_eq!(outputs["proceed"], "true", "{log}");
    assert_eq!(outputs["resume"], "false");

    let pull = server.with_state(|state| state.pulls[&seeded.pull].clone());
    assert!(pull.draft, "a draft again");
    assert_eq!(labels(&server, seeded.pull), ["klaud-in-progress"]);
    assert_eq!(
        server.state().branch_sha(&branch("a")),
        Some(seeded.head.as_str())
    );

    let context = context_of(&pass);
    assert_eq!(context["kind"], "repair");
    assert_eq!(context["base"], json!({"branch": "main", "sha": main}));
    assert_eq!(context["pull-request"]["number"], seeded.pull);
    assert_eq!(
        context["pull-request"]["draft"], true,
        "as the session left it"
    );
    let evidence = context["evidence"].as_array().unwrap();
    assert_eq!(evidence.len(), 2);
    let first = &evidence[0];
    assert_eq!(first["name"], "sweep shard 1");
    assert_eq!(first["run-id"], seeded.sweep_run);
    assert_eq!(first["job-id"], seeded.failed_jobs[0]);
    assert_eq!(first["conclusion"], "FAILURE");
    assert_eq!(first["log"]["state"], "tail");
    assert_eq!(first["log"]["lines"], 5);
    let text = first["log"]["text"].as_str().unwrap();
    assert!(
        text.starts_with("2026-01-01T00:00:37.0000000Z step output 37\n")
            && text.ends_with("Error: shard 1 ran out of memory"),
        "{text}"
    );
    assert_eq!(
        first["log"]["cut"],
        "earlier lines left out: the last 5 lines are given (aftercare.log-lines)"
    );
    let second = &evidence[1];
    assert_eq!(second["log"]["state"], "unreadable");
    let why = second["log"]["why"].as_str().unwrap();
    assert!(why.contains("HTTP 404"), "named with why: {why}");

    // The log came through GitHub's redirect from the blob server, which saw no token.
    let blob_log = server.blob_log();
    assert_eq!(blob_log.len(), 1, "{blob_log:?}");
    assert_eq!(
        (
            blob_log[0].job_id,
            blob_log[0].authorization,
            blob_log[0].status
        ),
        (seeded.failed_jobs[0], false, 200)
    );
    let requests: Vec<String> = server
        .request_log()
        .iter()
        .map(|request| format!("{} {}", request.method, request.path))
        .collect();
    for job in &seeded.failed_jobs {
        let logs = format!("GET /repos/acme/bench/actions/jobs/{job}/logs");
        assert_eq!(
            requests.iter().filter(|sent| **sent == logs).count(),
            1,
            "{requests:#?}"
        );
    }
    let report: Value = serde_json::from_str(&outputs["requests"]).unwrap();
    let counts = server.request_counts();
    assert_eq!(
        report["reads"].as_u64().unwrap(),
        counts.reads + blob_log.len() as u64,
        "klaud counts the blob's read too: {report}"
    );
    eprintln!(
        "a repair session with 2 failed jobs sent {} reads and {} writes to GitHub, and {} read to the log's host",
        counts.reads,
        counts.writes,
        blob_log.len()
    );

    let ledger = stored_ledger(&server);
    let session = ledger.sessions.last().unwrap();
    assert_eq!(session.kind, SessionKind::Repair);
    assert_eq!(session.resuming, None);
    assert_eq!(session.attempts.len(), 1);
    assert_eq!(session.attempts[0].run, DISPATCHED_RUN);
}

#[test]
fn a_validated_repair_makes_its_pull_request_ready_finished_and_watched_at_the_new_head() {
    let (server, seeded, pass) = repair_world();
    session_step(&server, &pass, "a");
    let head = push(&server);
    server.with_state(|state| {
        state.add_run(RunSpec {
            workflow: SWEEP.into(),
            head_branch: Some(branch("a")),
            event: "pull_request".into(),
            status: "completed".into(),
            conclusion: Some("success".into()),
            actor: Some(BOT.into()),
            ..RunSpec::default()
        })
    });

    let log = finish(&server, &pass, "validated");
    let pull = server.with_state(|state| state.pulls[&seeded.pull].clone());
    assert!(!pull.draft, "ready again: {log}");
    assert_eq!(pull.head_sha, head);
    assert_eq!(labels(&server, seeded.pull), ["klaud-finished"]);
    let ledger = stored_ledger(&server);
    let record = ledger.aftercare_of(seeded.pull).unwrap();
    assert_eq!(record.state, AftercareState::Watched);
    assert_eq!(record.validated_head.as_deref(), Some(head.as_str()));
    assert_eq!(record.sessions_used, 1);
    let session = ledger.sessions.last().unwrap();
    assert_eq!(
        (session.state, session.outcome),
        (SessionState::Finished, Some(Outcome::Validated))
    );
    assert!(ledger.claims.is_empty(), "the family's claim is released");
}

#[test]
fn a_failed_repair_leaves_an_open_draft_with_its_branch_waiting_for_a_maintainer() {
    let (server, seeded, pass) = repair_world();
    session_step(&server, &pass, "a");
    let head = push(&server);

    let log = finish(&server, &pass, "failed");
    let pull = server.with_state(|state| state.pulls[&seeded.pull].clone());
    assert_eq!(
        pull.state,
        fake_github::PullState::Open,
        "never closed: {log}"
    );
    assert!(pull.draft);
    assert_eq!(
        server.state().branch_sha(&branch("a")),
        Some(head.as_str()),
        "its branch kept"
    );
    assert_eq!(labels(&server, seeded.pull), ["klaud-needs-maintainer"]);
    assert!(server.state().deleted_refs.is_empty());
    let ledger = stored_ledger(&server);
    let record = ledger.aftercare_of(seeded.pull).unwrap();
    assert!(
        matches!(
            record.state,
            AftercareState::NeedsMaintainer {
                because: NeedsMaintainerBecause::Ended(Outcome::Failed),
                ..
            }
        ),
        "{:?}",
        record.state
    );
    let receipt = server.with_state(|state| {
        state
            .comments
            .values()
            .filter(|comment| comment.issue_number == seeded.pull)
            .map(|comment| comment.body.clone())
            .find(|body| body.contains("klaud:receipt"))
    });
    assert!(
        receipt
            .unwrap()
            .contains("stays open as a draft with its branch and waits for a maintainer")
    );
}

#[test]
fn a_refresh_session_gets_its_base_and_no_evidence_and_a_maintainers_pull_request_refuses_it() {
    let mut world = World::new();
    let seeded = aftercare_started(&mut world, "a", SessionKind::Refresh, &[]);
    let server = world.start();
    let pass = Pass::new(DISPATCHED_RUN);
    session_step(&server, &pass, "a");
    let context = context_of(&pass);
    assert_eq!(context["kind"], "refresh");
    assert_eq!(context["base"]["branch"], "main");
    assert!(context.get("evidence").is_none());
    assert!(server.with_state(|state| state.pulls[&seeded.pull].draft));

    let mut world = World::new();
    let seeded = aftercare_started(&mut world, "a", SessionKind::Refresh, &[]);
    world.state.pulls.get_mut(&seeded.pull).unwrap().author = MAINTAINER.into();
    let server = world.start();
    let pass = Pass::new(DISPATCHED_RUN);
    let log = session_step(&server, &pass, "a");
    assert_eq!(pass.outputs()["proceed"], "false");
    assert!(
        log.contains("is not the bot's pull request of this repository"),
        "{log}"
    );
    assert!(writes(&server).is_empty(), "{:?}", writes(&server));
    assert!(!server.with_state(|state| state.pulls[&seeded.pull].draft));
}
