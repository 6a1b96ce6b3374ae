//! The session inside the candidate job (contract §9) against the fake GitHub: `session` adopts
//! the job for the planner's live session or one a resume dispatched (once), and refuses a
//! re-run attempt, a session that is not live and a pull request handed off or closed, with
//! nothing written; `check-stop` answers every hook input with at most two reads and no write;
//! `note` keeps one log comment in place and the ledger's attempt record; `finish` parks a
//! session whose time ran out and ends one out of jobs; `recover` parks a killed job with jobs
//! left and resumes it for one dispatched job.

#![allow(clippy::disallowed_methods)] // tests read the environment and start processes

#[path = "fake_github/mod.rs"]
mod fake_github;
#[path = "recover_support/mod.rs"]
mod recover_support;

use std::io::Write;
use std::process::Stdio;

use chrono::{DateTime, Utc};
use fake_github::{ClosedSpec, FakeGitHubHandle, PullRequestSpec};
use klaud::core::ledger::{Attempt, AttemptEnd, Note, Resuming, SessionState};
use recover_support::*;
use serde_json::{Value, json};

const PLANNER_RUN: u64 = 71_000_000_001;
const DISPATCHED_RUN: u64 = 71_000_000_500;

fn now() -> DateTime<Utc> {
    Utc::now()
}

/// A live session of `candidate` claimed by `parent`, its record on the state branch.
fn claimed(world: &mut World, candidate: &str, parent: u64) {
    world.session(candidate, SessionState::Live, parent, None);
    world.claim(candidate, parent);
    world.state.put_file(
        STATE_BRANCH,
        &format!("records/{candidate}.json"),
        &json!({"id": candidate, "family": family(candidate), "baseline": {"tput": 1234.5}, "targets": ["h100"], "owner-note": "passed through"})
            .to_string(),
    );
}

/// `klaud <mode>` for `pass` with `arguments`, stdin `input`; returns (exit code, stdout, stderr).
fn run_mode(
    server: &FakeGitHubHandle,
    pass: &Pass,
    mode: &str,
    arguments: &[&str],
    configure: impl FnOnce(&mut std::process::Command),
    input: &str,
) -> (i32, String, String) {
    let mut command = pass.mode_command(server, mode);
    command.args(arguments);
    configure(&mut command);
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn session_step(server: &FakeGitHubHandle, pass: &Pass, candidate: &str) -> String {
    let (code, stdout, stderr) = run_mode(
        server,
        pass,
        "session",
        &["--candidate", candidate],
        |_| {},
        "",
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    stdout + &stderr
}

fn writes(server: &FakeGitHubHandle) -> Vec<String> {
    server
        .request_log()
        .iter()
        .filter(|request| request.is_write())
        .map(|request| format!("{} {}", request.method, request.path))
        .collect()
}

fn context_of(pass: &Pass) -> Value {
    let path = pass.outputs()["context-file"].clone();
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_planner_run_adopts_its_session_and_the_agent_gets_everything() {
    let mut world = World::new();
    claimed(&mut world, "a", PLANNER_RUN);
    let number = world.bot_draft("a");
    let server = world.start();
    let pass = Pass::new(PLANNER_RUN);
    session_step(&server, &pass, "a");

    let outputs = pass.outputs();
    assert_eq!(outputs["proceed"], "true");
    assert_eq!(outputs["attempt"], "1");
    assert_eq!(outputs["resume"], "false");
    assert_eq!(outputs["time-limit-minutes"], "330");
    let deadline = DateTime::parse_from_rfc3339(&outputs["deadline"]).unwrap();
    let minutes = (deadline.with_timezone(&Utc) - now()).num_minutes();
    assert!((328..=330).contains(&minutes), "{minutes}");
    let schema: Value = serde_json::from_str(&outputs["outcome-schema"]).unwrap();
    assert!(!outputs["outcome-schema"].contains('\n'), "compact");
    // The published schema without `$schema`, which the agent CLI's --json-schema refuses.
    let mut published = klaud::core::outcome_file::outcome_schema();
    assert!(
        published
            .as_object_mut()
            .unwrap()
            .remove("$schema")
            .is_some()
    );
    assert_eq!(schema, published);
    let settings: Value = serde_json::from_str(&outputs["agent-settings"]).unwrap();
    let command = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        command.contains("check-stop --context-file") && command.contains("session.json"),
        "{command}"
    );
    assert!(settings["hooks"]["PostToolUse"].is_array());

    let context = context_of(&pass);
    assert_eq!(context["candidate"]["owner-note"], "passed through");
    assert_eq!(context["candidate"]["baseline"]["tput"], 1234.5);
    assert_eq!(context["branch"], "klaud/auto-a");
    assert_eq!(context["pull-request"]["number"], number);
    assert_eq!(context["earlier-attempts"], json!([]));
    assert_eq!(context["outcome-file"], outputs["outcome-file"]);
    assert!(
        context["note-command"]
            .as_str()
            .unwrap()
            .contains("note --candidate a")
    );
    assert_eq!(
        context["outcomes"].as_array().unwrap().len(),
        11,
        "every outcome but closed-by-maintainer and handoff"
    );
    let text = std::fs::read_to_string(&outputs["context-file"]).unwrap();
    assert!(!text.contains(BOT_TOKEN) && !text.contains(LABEL_TOKEN));

    let session = stored_ledger(&server).sessions.remove(0);
    assert_eq!(session.attempts.len(), 1);
    assert_eq!(session.attempts[0].run, PLANNER_RUN);
    assert_eq!(writes(&server).len(), 1, "{:?}", writes(&server));
    assert!(
        server
            .request_log()
            .iter()
            .filter(|r| !r.is_write())
            .count()
            <= 3,
        "ledger, pull requests, record"
    );

    // The step run again in the same run: refused, nothing written.
    let again = Pass::new(PLANNER_RUN);
    session_step(&server, &again, "a");
    assert_eq!(again.outputs()["proceed"], "false");
    assert!(again.summary().contains("already runs the session"));
    assert_eq!(writes(&server).len(), 1);
}

#[test]
fn re_runs_unclaimed_candidates_and_maintainers_pull_requests_are_refused_with_nothing_written() {
    let mut world = World::new();
    claimed(&mut world, "a", PLANNER_RUN);
    claimed(&mut world, "closed", PLANNER_RUN);
    claimed(&mut world, "handed", PLANNER_RUN);
    let commits = vec![world.bot_commit("closed", 9)];
    let created = world.ago(10 * 3600);
    world.state.add_pull_request(PullRequestSpec {
        title: "klaud: closed".into(),
        author: BOT.into(),
        head_ref: branch("closed"),
        draft: true,
        commits,
        created_at: Some(created),
        closed: Some(ClosedSpec {
            by: MAINTAINER.into(),
            at: None,
            merged: false,
            delete_branch: false,
        }),
        ..PullRequestSpec::default()
    });
    let handed = world.bot_draft("handed");
    world.state.add_label_to_issue(handed, "klaud-handoff");
    let server = world.start();

    let rerun = Pass::new(PLANNER_RUN);
    let (code, _, _) = run_mode(
        &server,
        &rerun,
        "session",
        &["--candidate", "a"],
        |command| {
            command.env("GITHUB_RUN_ATTEMPT", "2");
        },
        "",
    );
    assert_eq!(code, 0);
    assert_eq!(rerun.outputs()["proceed"], "false");
    assert!(rerun.summary().contains("attempt 2"), "{}", rerun.summary());
    assert!(server.request_log().is_empty(), "a re-run makes no request");

    for (candidate, expected) in [
        ("unclaimed", "no session"),
        ("closed", "was closed"),
        ("handed", "handed off"),
    ] {
        let pass = Pass::new(PLANNER_RUN);
        session_step(&server, &pass, candidate);
        assert_eq!(pass.outputs()["proceed"], "false", "{candidate}");
        assert!(
            pass.summary().contains(expected),
            "{candidate}: {}",
            pass.summary()
        );
    }
    let other_run = Pass::new(PLANNER_RUN + 1);
    session_step(&server, &other_run, "a");
    assert_eq!(other_run.outputs()["proceed"], "false");
    assert!(writes(&server).is_empty(), "{:?}", writes(&server));
}

fn attempt(number: u32, run: u64, minutes_ago: i64, end: Option<AttemptEnd>) -> Attempt {
    let adopted = now() - chrono::Duration::minutes(minutes_ago);
    Attempt {
        number,
        run,
        adopted_at: adopted,
        deadline: adopted + chrono::Duration::minutes(330),
        ended_at: end.map(|_| adopted + chrono::Duration::minutes(331)),
        end,
        runs: vec![5],
        notes: vec![Note {
            at: adopted + chrono::Duration::minutes(100),
            text: "smoke passed; sweep next".into(),
        }],
        notes_folded: 0,
    }
}

#[test]
fn a_resumed_session_is_adopted_by_one_dispatched_job_that_reads_the_earlier_attempt() {
    let mut world = World::new();
    claimed(&mut world, "a", 9_000);
    let number = world.bot_draft("a");
    {
        let session = world.ledger.sessions.last_mut().unwrap();
        session
            .attempts
            .push(attempt(1, PLANNER_RUN, 400, Some(AttemptEnd::TimeRanOut)));
        session.resuming = Some(Resuming {
            by_run: 9_000,
            at: now(),
        });
        session.pull_request = Some(number);
    }
    let server = world.start();
    let first = Pass::new(DISPATCHED_RUN);
    session_step(&server, &first, "a");
    assert_eq!(first.outputs()["proceed"], "true");
    assert_eq!(first.outputs()["resume"], "true");
    assert_eq!(first.outputs()["attempt"], "2");
    let context = context_of(&first);
    assert_eq!(
        context["earlier-attempts"][0]["notes"][0]["text"],
        "smoke passed; sweep next"
    );
    assert_eq!(context["earlier-attempts"][0]["end"], "time-ran-out");
    assert_eq!(context["pull-request"]["number"], number);

    let second = Pass::new(DISPATCHED_RUN + 1);
    session_step(&server, &second, "a");
    assert_eq!(second.outputs()["proceed"], "false");
    let session = stored_ledger(&server).sessions.remove(0);
    assert_eq!(session.attempts.len(), 2);
    assert_eq!(session.resuming, None);
}

/// `check-stop` with `input` on stdin for the context `pass`'s session wrote; (stdout, reads).
fn check_stop(server: &FakeGitHubHandle, pass: &Pass, input: &str) -> (String, usize) {
    let before = server.request_log().len();
    let context_file = pass.outputs()["context-file"].clone();
    let (code, stdout, stderr) = run_mode(
        server,
        pass,
        "check-stop",
        &["--context-file", &context_file],
        |command| {
            command
                .env_remove("GITHUB_TOKEN")
                .env("GH_TOKEN", BOT_TOKEN);
        },
        input,
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.contains(BOT_TOKEN) && !stderr.contains(BOT_TOKEN));
    let log = server.request_log();
    assert!(log[before..].iter().all(|request| !request.is_write()));
    (stdout, log.len() - before)
}

fn stop_input() -> String {
    let inputs: Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/claude-code/stop-hook-inputs.json",
            fixtures_dir()
        ))
        .unwrap(),
    )
    .unwrap();
    inputs["first-stop"].to_string()
}

fn fixtures_dir() -> String {
    std::env::var("KLAUD_FIXTURES")
        .unwrap_or_else(|_| format!("{}/../shared/fixtures", env!("CARGO_MANIFEST_DIR")))
}

fn decision(stdout: &str) -> Option<Value> {
    (!stdout.trim().is_empty()).then(|| serde_json::from_str(stdout.trim()).unwrap())
}

#[test]
fn the_stop_hook_holds_the_agent_to_a_valid_outcome_with_at_most_two_reads() {
    let mut world = World::new();
    claimed(&mut world, "a", PLANNER_RUN);
    let number = world.bot_draft("a");
    let server = world.start();
    let pass = Pass::new(PLANNER_RUN);
    session_step(&server, &pass, "a");
    let outcome_file = pass.outputs()["outcome-file"].clone();
    let input = stop_input();

    let (stdout, reads) = check_stop(&server, &pass, &input);
    let answer = decision(&stdout).expect("blocked without an outcome");
    assert_eq!(answer["decision"], "block");
    assert!(answer["reason"].as_str().unwrap().contains(&outcome_file));
    assert_eq!(reads, 1);

    std::fs::write(&outcome_file, r#"{"outcome": "validatd"}"#).unwrap();
    let (stdout, _) = check_stop(&server, &pass, &input);
    let reason = decision(&stdout).unwrap()["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains("outcome-file.outcome"), "{reason}");

    std::fs::write(
        &outcome_file,
        r#"{"outcome": "failed", "reason-code": "smoke-failed"}"#,
    )
    .unwrap();
    let (stdout, reads) = check_stop(&server, &pass, &input);
    assert_eq!(decision(&stdout), None, "a valid outcome lets it stop");
    assert_eq!(reads, 0);

    std::fs::write(
        &outcome_file,
        format!(r#"{{"outcome": "validated", "pull-request": {number}}}"#),
    )
    .unwrap();
    let (stdout, reads) = check_stop(&server, &pass, &input);
    let reason = decision(&stdout).unwrap()["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.contains("no run-sweep.yml run succeeded"),
        "{reason}"
    );
    assert_eq!(reads, 2);

    server.with_state(|state| {
        let head = state.branch_sha(&branch("a")).unwrap().to_string();
        state.add_run(fake_github::RunSpec {
            workflow: SWEEP.into(),
            head_branch: Some(branch("a")),
            head_sha: Some(head),
            event: "workflow_dispatch".into(),
            status: "completed".into(),
            conclusion: Some("success".into()),
            actor: Some(BOT.into()),
            ..fake_github::RunSpec::default()
        });
    });
    let (stdout, reads) = check_stop(&server, &pass, &input);
    assert_eq!(decision(&stdout), None, "{stdout}");
    assert_eq!(reads, 2);

    // Every input is answered with valid output and exit 0.
    std::fs::remove_file(&outcome_file).unwrap();
    for garbage in [
        "",
        "not json",
        "[]",
        r#"{"hook_event_name": 3}"#,
        "\u{0}\u{1}",
    ] {
        let (stdout, _) = check_stop(&server, &pass, garbage);
        assert_eq!(
            decision(&stdout).unwrap()["decision"],
            "block",
            "{garbage:?}"
        );
    }
    let (stdout, reads) = check_stop(&server, &pass, r#"{"hook_event_name": "PostToolUse"}"#);
    assert_eq!(
        (stdout.as_str(), reads),
        ("", 0),
        "no warning before the wrap-up time"
    );

    // A failed read blocks with the reason.
    let (code, stdout, _) = run_mode(
        &server,
        &pass,
        "check-stop",
        &["--context-file", &pass.outputs()["context-file"]],
        |command| {
            command.env_remove("GITHUB_TOKEN").env_remove("GH_TOKEN");
        },
        &input,
    );
    assert_eq!(code, 0);
    let reason = decision(&stdout).unwrap()["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains("no token"), "{reason}");
}
