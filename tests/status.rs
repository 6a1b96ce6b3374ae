//! `klaud status` against the fake GitHub: the ledger and the live sessions in the step summary
//! and `status.json` (with the agent cost and sessions per outcome over 7 days), a text
//! rendering in a terminal, and that it writes nothing to GitHub.

#![allow(clippy::disallowed_methods)] // tests read the environment and spawn the binary

use klaud_fake_github as fake_github;
#[path = "github_mode_support/mod.rs"]
mod github_mode_support;

use chrono::{Duration, Utc};
use fake_github::{
    FakeGitHub, FakeGitHubHandle, FaultConfig, FaultRule, JobSpec, Mergeability, PullRequestSpec,
    RunSpec,
};
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

/// Four klaud pull requests, ready for review: #1 whose sweep failed on its head beside a
/// passing commit status, #2 whose sweep is running (3 b200 jobs pending of 5, two succeeded in
/// 6 and 10 minutes) and which conflicts with its base, #3 whose sweep passed, #4 running on an
/// unnamed pool (2 jobs pending) and behind its base; a maintainer's pull request is not
/// klaud's and is not shown.
fn repository_with_health() -> FakeGitHubHandle {
    let mut state = repository();
    state.put_file("klaud/state", "ledger.json", &Ledger::empty().to_json());
    let mut numbers = Vec::new();
    for candidate in ["failing", "running", "passing", "other-pool"] {
        numbers.push(state.add_pull_request(PullRequestSpec {
            title: format!("klaud: {candidate}"),
            author: BOT.into(),
            head_ref: format!("klaud/auto-{candidate}"),
            ..PullRequestSpec::default()
        }));
    }
    state.add_pull_request(PullRequestSpec {
        title: "a person's change".into(),
        author: "maintainer-ann".into(),
        head_ref: "feature/x".into(),
        ..PullRequestSpec::default()
    });
    let sweep =
        |branch: &str, status: &str, conclusion: Option<&str>, jobs: Vec<JobSpec>| RunSpec {
            workflow: "run-sweep.yml".into(),
            head_branch: Some(format!("klaud/auto-{branch}")),
            status: status.into(),
            conclusion: conclusion.map(str::to_string),
            event: "pull_request".into(),
            jobs,
            ..RunSpec::default()
        };
    let b200 = ["self-hosted", "b200"];
    let started = state.now().plus(-3600);
    state.add_run(sweep(
        "failing",
        "completed",
        Some("failure"),
        vec![
            JobSpec::completed("sweep (b200)", "success").on(&b200),
            JobSpec::completed("sweep (mi355x)", "failure").on(&["mi355x"]),
        ],
    ));
    let failing_head = state.pulls[&numbers[0]].head_sha.clone();
    state.add_status(&failing_head, "ci/lint", "success", None, "maintainer-ann");
    state.add_run(sweep(
        "running",
        "in_progress",
        None,
        vec![
            JobSpec::completed("sweep 1", "success")
                .on(&b200)
                .took(started, 6),
            JobSpec::completed("sweep 2", "success")
                .on(&b200)
                .took(started, 10),
            JobSpec::queued("sweep 3").on(&b200),
            JobSpec::queued("sweep 4").on(&b200),
            JobSpec::in_progress("sweep 5").on(&b200),
        ],
    ));
    state.set_mergeability(numbers[1], Mergeability::Conflicting, false);
    state.add_run(sweep(
        "passing",
        "completed",
        Some("success"),
        vec![JobSpec::completed("sweep (h100)", "success").on(&["h100"])],
    ));
    state.add_run(sweep(
        "other-pool",
        "in_progress",
        None,
        vec![
            JobSpec::queued("sweep a").on(&["cpu-large"]),
            JobSpec::queued("sweep b").on(&["cpu-large"]),
        ],
    ));
    state.set_mergeability(numbers[3], Mergeability::Mergeable, true);
    FakeGitHub::start(state)
}

/// The estimate, by hand: b200 has 12 runners and 3 pending jobs: ceil(3 / 12) = 1 wave × the
/// median of 6 and 10 minutes = 8 minutes. `other` has 4 runners and 2 pending jobs: 1 wave ×
/// 7 minutes (no job of it completed) = 7 minutes. Both have at most 5 pending jobs: almost
/// ready, the sooner first.
#[test]
fn status_shows_each_pull_requests_health_and_when_its_sweep_may_be_done() {
    let server = repository_with_health();
    let step = Step::default();

    step.run(step.command(&server, "status"), 0);

    let report = step.result_file("status.json");
    let pulls = report["pull-requests"].as_array().unwrap();
    let row = |candidate: &str| {
        pulls
            .iter()
            .find(|pull| pull["candidate"] == candidate)
            .unwrap_or_else(|| panic!("{candidate} in {report:#}"))
            .clone()
    };
    let order: Vec<&str> = pulls
        .iter()
        .map(|pull| pull["health"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["failing", "running", "running", "passing"]);
    let failing = row("failing");
    assert_eq!(failing["failed"][0]["name"], "sweep (mi355x)");
    assert!(failing["failed"][0]["job-id"].as_u64().is_some());
    assert_eq!(failing["checks"]["SUCCESS"], 2, "a job and a commit status");
    let running = row("running");
    assert_eq!(running["conflicting"], true);
    assert_eq!(running["mergeable"], "CONFLICTING");
    assert_eq!(running["pending"]["b200"], 3);
    assert_eq!(running["eta-minutes"], 8);
    assert_eq!(running["eta-partial"], false);
    let other = row("other-pool");
    assert_eq!(other["behind"], true);
    assert_eq!(other["pending"]["other"], 2);
    assert_eq!(other["eta-minutes"], 7);
    assert_eq!(row("passing")["eta-minutes"], Value::Null);
    let almost: Vec<u64> = report["almost-ready"]
        .as_array()
        .unwrap()
        .iter()
        .map(|number| number.as_u64().unwrap())
        .collect();
    assert_eq!(
        almost,
        [
            other["number"].as_u64().unwrap(),
            running["number"].as_u64().unwrap()
        ]
    );
    assert_eq!(report["sweep-runs-read"], 2);
    let schema = klaud::core::status::status_schema();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let problems: Vec<String> = validator
        .iter_errors(&report)
        .map(|error| format!("{}: {error}", error.instance_path()))
        .collect();
    assert!(
        problems.is_empty(),
        "status.json against its schema: {problems:#?}"
    );
    let summary = step.summary();
    assert!(
        summary.contains("#### Pull requests: health and sweep estimates"),
        "{summary}"
    );
    assert!(
        summary.contains("| running, almost ready, conflicting |"),
        "{summary}"
    );
    assert_eq!(write_requests(&server), Vec::<String>::new());
    assert_eq!(
        requests(&server).len(),
        5,
        "the ledger, the branches, their open pull requests with their checks, two job listings"
    );
}

#[test]
fn sweep_runs_past_the_read_bound_make_estimates_partial() {
    let server = repository_with_health();
    let step = Step::default();
    step.write("klaud.yml", "health:\n  max-run-reads: 1\n");

    step.run(step.command(&server, "status"), 0);

    let report = step.result_file("status.json");
    assert_eq!(report["sweep-runs-active"], 2);
    assert_eq!(report["sweep-runs-read"], 1);
    let partial: Vec<&str> = report["pull-requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|pull| pull["eta-partial"] == true)
        .map(|pull| pull["candidate"].as_str().unwrap())
        .collect();
    assert_eq!(
        partial,
        ["other-pool"],
        "the newer pull request's run was not read"
    );
    assert_eq!(requests(&server).len(), 4);
}

/// The running pull request (conflicting) validated and watched in after-care, the failing one
/// waiting for a maintainer after its after-care session failed: each carries its after-care in
/// `status.json` and the summary, the others null.
#[test]
fn each_pull_request_in_aftercare_shows_its_state_sessions_and_what_comes_next() {
    let server = repository_with_health();
    let number_of = |candidate: &str| {
        server.with_state(|state| {
            state
                .pulls
                .values()
                .find(|pull| pull.head_ref == format!("klaud/auto-{candidate}"))
                .map(|pull| pull.number)
                .unwrap()
        })
    };
    let (running, failing) = (number_of("running"), number_of("failing"));
    let mut ledger = Ledger::empty();
    let validated = Utc::now() - Duration::days(1);
    ledger.record_validated("running", "f-running", running, None, validated);
    ledger.record_validated("failing", "f-failing", failing, None, validated);
    let waiting = &mut ledger.aftercare[1];
    waiting.sessions_used = 1;
    waiting.state = klaud::core::aftercare::AftercareState::NeedsMaintainer {
        since: Utc::now() - Duration::hours(1),
        because: klaud::core::aftercare::NeedsMaintainerBecause::Ended(Outcome::Failed),
    };
    server.with_state(|state| {
        state.put_file("klaud/state", "ledger.json", &ledger.to_json());
    });
    let step = Step::default();

    step.run(step.command(&server, "status"), 0);

    let report = step.result_file("status.json");
    let aftercare_of = |number: u64| {
        report["pull-requests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|pull| pull["number"] == number)
            .unwrap()["aftercare"]
            .clone()
    };
    assert_eq!(
        aftercare_of(running),
        serde_json::json!({"state": "watched", "sessions-used": 0, "sessions-allowed": 2,
                           "next": "start", "kind": "refresh"})
    );
    assert_eq!(aftercare_of(failing)["state"], "needs-maintainer");
    assert_eq!(aftercare_of(failing)["next"], "waits-for-maintainer");
    assert_eq!(aftercare_of(number_of("passing")), Value::Null);
    let schema = klaud::core::status::status_schema();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(
        validator.is_valid(&report),
        "status.json against its schema"
    );
    let summary = step.summary();
    assert!(
        summary.contains("| watched, 0/2 sessions: starts a refresh session |"),
        "{summary}"
    );
    assert!(
        summary.contains(
            "needs-maintainer, 1/2 sessions (its after-care session ended failed): waits for a maintainer"
        ),
        "{summary}"
    );
}
