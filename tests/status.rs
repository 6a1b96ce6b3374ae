//! `klaud status` against the fake GitHub: the ledger and the live sessions in the step summary
//! and `status.json` (with the agent cost and sessions per outcome over 7 days), a text
//! rendering in a terminal, and that it writes nothing to GitHub.

#![allow(clippy::disallowed_methods)] // tests read the environment and spawn the binary

use klaud_fake_github as fake_github;
#[path = "github_mode_support/mod.rs"]
mod github_mode_support;

use chrono::{Duration, Utc};
use fake_github::{FakeGitHub, FakeGitHubHandle, FaultConfig, FaultRule, PullRequestSpec};
use github_mode_support::*;
use klaud::core::execution::AgentRecord;
use klaud::core::ledger::{Attempt, AttemptEnd, Lease, Ledger, SessionState};
use klaud::core::outcome::Outcome;
use serde_json::Value;

/// Live session a (with its draft pull request), parked p after a $1.25 job, c failed an hour
/// ago after a $2.50 job, the recovery lease held by run 90, and klaud's pull request for z
/// that no session owns.
fn busy_repository() -> FakeGitHubHandle {
    let mut state = repository();
    let now = Utc::now();
    let mut ledger = Ledger::empty();
    ledger
        .claim_family("a", "fa", 10, now - Duration::hours(2))
        .unwrap();
    ledger
        .claim_family("p", "fp", 11, now - Duration::hours(3))
        .unwrap();
    ledger.sessions[1].state = SessionState::Parked;
    ledger.sessions[1]
        .attempts
        .push(job_costing(now - Duration::hours(2), 1.25));
    ledger
        .claim_family("c", "fc", 9, now - Duration::hours(2))
        .unwrap();
    ledger.sessions[2]
        .attempts
        .push(job_costing(now - Duration::hours(1), 2.5));
    ledger.finish_session("c", Outcome::Failed, true, now - Duration::hours(1));
    ledger.recovery_lease = Some(Lease {
        owner_run: 90,
        taken_at: now,
    });
    state.put_file("klaud/state", "ledger.json", &ledger.to_json());
    for candidate in ["a", "z"] {
        state.add_pull_request(PullRequestSpec {
            title: format!("klaud: {candidate}"),
            author: BOT.into(),
            head_ref: format!("klaud/auto-{candidate}"),
            draft: true,
            ..PullRequestSpec::default()
        });
    }
    FakeGitHub::start(state)
}

/// One job of a session that ended at `ended` and whose agent cost `cost_usd`.
fn job_costing(ended: chrono::DateTime<Utc>, cost_usd: f64) -> Attempt {
    Attempt {
        number: 1,
        run: 70,
        adopted_at: ended - Duration::hours(1),
        deadline: ended + Duration::hours(4),
        ended_at: Some(ended),
        end: Some(AttemptEnd::Finished),
        runs: Vec::new(),
        notes: Vec::new(),
        notes_folded: 0,
        agent: Some(AgentRecord {
            cost_usd: Some(cost_usd),
            turns: Some(3),
            ..AgentRecord::default()
        }),
    }
}

fn candidates_of(report: &Value, section: &str) -> Vec<String> {
    report[section]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["candidate"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn status_shows_the_ledger_and_live_sessions_in_the_summary_and_status_json() {
    let server = busy_repository();
    let step = Step::default();

    step.run(step.command(&server, "status"), 0);

    let report = step.result_file("status.json");
    assert_eq!(candidates_of(&report, "sessions"), ["p", "a"]);
    assert_eq!(report["sessions"][1]["pull-request"], 1);
    assert_eq!(report["live-sessions"], 1);
    assert_eq!(report["parked-sessions"], 1);
    assert_eq!(report["room"], 4);
    assert_eq!(report["recovery-lease"]["owner-run"], 90);
    assert_eq!(candidates_of(&report, "cooldowns"), ["c"]);
    assert_eq!(
        candidates_of(&report, "pull-requests-without-session"),
        ["z"]
    );
    assert_eq!(report["cost"]["total-usd"], 3.75);
    assert_eq!(report["cost"]["last-24-hours-usd"], 3.75);
    assert_eq!(report["cost"]["attempts-with-cost"], 2);
    let per_outcome: Vec<(String, u64, f64)> = report["cost"]["per-outcome"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["outcome"].as_str().unwrap().to_string(),
                row["sessions"].as_u64().unwrap(),
                row["cost-usd"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        per_outcome,
        [
            ("failed".to_string(), 1, 2.5),
            ("live".to_string(), 1, 0.0),
            ("parked".to_string(), 1, 1.25)
        ]
    );
    assert_eq!(step.output("live-sessions"), "1");
    let summary = step.summary();
    assert!(
        summary.contains("Agent cost over 7 days: $3.75 (2 job(s) with a recorded cost); last 24 hours: $3.75, no daily budget."),
        "{summary}"
    );
    assert!(summary.contains("| failed | 1 | $2.50 |"), "{summary}");
    assert!(summary.contains("### klaud status"), "{summary}");
    assert!(summary.contains("| a | fa | live | 10 |"), "{summary}");
    assert!(summary.contains("| p | fp | parked | 11 |"), "{summary}");
    assert!(
        summary.contains("recovery lease held by run 90"),
        "{summary}"
    );
    assert_eq!(
        write_requests(&server),
        Vec::<String>::new(),
        "status is read-only"
    );
    assert_eq!(
        requests(&server).len(),
        3,
        "the ledger, the branches under the prefix and their open pull requests"
    );
}

#[test]
fn status_in_a_terminal_prints_aligned_text_instead_of_markdown() {
    let server = busy_repository();
    let step = Step::default();
    let mut command = step.command(&server, "status");
    command
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_OUTPUT")
        .env_remove("GITHUB_STEP_SUMMARY");

    let assert = command.assert().code(0);

    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
    assert!(
        stdout.contains("klaud status\nacme/bench: 1 live and 1 parked session(s)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  candidate  family  state   parent run"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("|---|"),
        "no Markdown in a terminal: {stdout}"
    );
}

#[test]
fn status_without_a_ledger_shows_an_empty_one() {
    let server = FakeGitHub::start(repository());
    let step = Step::default();

    step.run(step.command(&server, "status"), 0);

    let report = step.result_file("status.json");
    assert_eq!(report["ledger-found"], false);
    assert_eq!(report["sessions"], Value::Array(Vec::new()));
    assert!(step.summary().contains("no ledger on klaud/state yet"));
}

#[test]
fn pull_requests_that_cannot_be_listed_do_not_hide_the_ledger() {
    let server = busy_repository();
    server.set_faults(FaultConfig::rules(vec![FaultRule::nth(
        "POST", "/graphql", 1, 404,
    )]));
    let step = Step::default();

    let log = step.run(step.command(&server, "status"), 0);

    assert!(
        log.contains("::warning::status: klaud's open pull requests could not all be listed"),
        "{log}"
    );
    let report = step.result_file("status.json");
    assert_eq!(candidates_of(&report, "sessions"), ["p", "a"]);
    assert!(report["pull-requests-unknown"].is_string());
}

#[test]
fn a_ledger_that_cannot_be_read_fails_the_step() {
    let server = busy_repository();
    server.set_faults(FaultConfig::rules(vec![FaultRule::nth(
        "GET",
        "/repos/acme/bench/contents/*",
        1,
        403,
    )]));
    let step = Step::default();

    let log = step.run(step.command(&server, "status"), 1);

    assert!(
        log.contains("the ledger on klaud/state could not be read"),
        "{log}"
    );
}
