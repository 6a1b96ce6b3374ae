//! The dashboard issue (contract §10) against the fake GitHub: `status --dashboard` creates one
//! issue and then writes nothing while nothing changes; each checkbox end to end (*retry now* →
//! the next `select` picks the candidate, *resume now* → the next `recover` resumes it first,
//! *release hold* → the family is selectable, *pause* → `select` starts nothing and `recover`
//! resumes nothing until it is unticked); a tick by a read-only account and one by a write
//! account on the same body (only the second acts, the first is named); a tick read twice acts
//! once; a job that ran the agent and `finish` without `session` counts toward the budget and
//! the dashboard's cost, once; a tick after 150 revisions acts whether GitHub lists the history newest or oldest
//! first; *retry after-care* granting one session once while a reader's tick is ignored; an
//! issue someone else wrote is never edited; the body read by a real CommonMark/GFM parser, and
//! its snapshots (the standard scenario, fifty pull requests, and their after-care).

#![allow(clippy::disallowed_methods)] // tests read the environment and start processes

#[path = "../benches/support/mod.rs"]
mod bench_support;
#[path = "dashboard_support/mod.rs"]
mod dashboard_support;
use klaud_fake_github as fake_github;
#[path = "recover_support/mod.rs"]
mod recover_support;

use chrono::{TimeZone, Utc};
use fake_github::{
    FakeGitHubHandle, FaultConfig, FaultRule, IssueSpec, MAINTAINER_ANN, Person, READER_ROB,
    Timestamp,
};
use klaud::core::dashboard::checkbox::{BoxKey, read_boxes};
use klaud::core::dashboard::render::{DashboardView, render};
use klaud::core::health::HealthFacts;
use klaud::core::ledger::SessionState;
use klaud::core::outcome::Outcome;
use klaud::core::policy::Policy;
use klaud::core::snapshot::Listed;
use klaud::core::status::{StatusFacts, status_report};
use klaud::core::steering::Request;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use recover_support::*;
use serde_json::Value;

const LABEL: &str = "klaud-dashboard";

/// A world where the people can reach the repository.
fn world() -> World {
    let mut world = World::new();
    for person in [MAINTAINER_ANN, READER_ROB] {
        world.state.add_token(person.token, person.login);
        if let Some(role) = person.role {
            world.state.set_role(person.login, role);
        }
    }
    world
}

/// A finished session of `candidate` that ended with `outcome` `hours` ago.
fn finished(world: &mut World, candidate: &str, outcome: Outcome, hours: i64) {
    let parent = world.finished_planner(hours + 1, &[candidate]);
    world.session(candidate, SessionState::Finished, parent, None);
    let finished_at = time(world.ago(hours * 3600));
    let session = world.ledger.sessions.last_mut().unwrap();
    session.outcome = Some(outcome);
    session.finished_at = Some(finished_at);
}

/// A parked session of `candidate` with its open bot draft, started `hours` ago.
fn parked(world: &mut World, candidate: &str, hours: i64) -> u64 {
    let parent = world.finished_planner(hours, &[candidate]);
    world.session(candidate, SessionState::Parked, parent, None);
    world.claim(candidate, parent);
    let commits = vec![world.bot_commit(candidate, hours)];
    let number = world.bot_pull(candidate, true, commits, &["klaud-parked"]);
    let started_at = time(world.ago(hours * 3600));
    let session = world.ledger.sessions.last_mut().unwrap();
    session.pull_request = Some(number);
    session.started_at = started_at;
    number
}

fn time(timestamp: Timestamp) -> chrono::DateTime<Utc> {
    Utc.timestamp_opt(timestamp.0, 0).single().unwrap()
}

/// `klaud <mode> --dashboard` (or without for select) for `pass`, expecting exit 0.
fn step(server: &FakeGitHubHandle, pass: &Pass, mode: &str, arguments: &[&str]) -> String {
    let mut command = assert_cmd::Command::from_std(pass.mode_command(server, mode));
    command
        .args(arguments)
        .timeout(std::time::Duration::from_secs(120));
    let assert = command.assert();
    let output = assert.get_output();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(0), "{log}");
    log
}

fn status(server: &FakeGitHubHandle, run: u64) -> Pass {
    let pass = Pass::new(run);
    step(server, &pass, "status", &["--dashboard"]);
    pass
}

fn recover(server: &FakeGitHubHandle, run: u64) -> Pass {
    let pass = Pass::new(run);
    step(server, &pass, "recover", &["--dashboard"]);
    pass
}

/// `select` over `candidates` (id, family); returns the selected ids.
fn select(server: &FakeGitHubHandle, run: u64, candidates: &[(&str, &str)]) -> (Pass, Vec<String>) {
    let pass = Pass::new(run);
    let list: Vec<Value> = candidates
        .iter()
        .map(|(id, family)| serde_json::json!({"id": id, "family": family}))
        .collect();
    let file = pass.path("candidates.json");
    std::fs::write(&file, Value::Array(list).to_string()).unwrap();
    step(
        server,
        &pass,
        "select",
        &["--candidates", file.to_str().unwrap()],
    );
    let selected = pass.ids("candidates");
    (pass, selected)
}

/// klaud's dashboard issue: (number, body).
fn dashboard(server: &FakeGitHubHandle) -> (u64, String) {
    dashboard_support::dashboard(server, BOT, LABEL)
}

/// `person` flips the dashboard's box whose marker contains `marker`.
fn toggle(server: &FakeGitHubHandle, person: Person, marker: &str) {
    let (number, _) = dashboard(server);
    dashboard_support::toggle(server, person, number, marker);
}

fn writes(server: &FakeGitHubHandle) -> Vec<String> {
    server
        .request_log()
        .iter()
        .filter(|request| request.is_write())
        .map(|request| format!("{} {}", request.method, request.path))
        .collect()
}

fn requests(pass: &Pass) -> (u64, u64) {
    let requests: Value = serde_json::from_str(&pass.outputs()["requests"]).unwrap();
    (
        requests["reads"].as_u64().unwrap(),
        requests["writes"].as_u64().unwrap(),
    )
}

#[test]
fn status_creates_one_dashboard_and_writes_nothing_while_nothing_changes() {
    let mut world = world();
    parked(&mut world, "p", 3);
    finished(&mut world, "c", Outcome::Failed, 2);
    let server = world.start();

    let first = status(&server, 9_001);
    let (number, body) = dashboard(&server);
    let (reads, written) = requests(&first);
    assert!(reads <= 6, "{reads} reads");
    assert_eq!(written, 1, "{:?}", writes(&server));
    assert_eq!(
        server.with_state(|state| state.issues[&number].title.clone()),
        "klaud dashboard"
    );
    let boxes = read_boxes(&body);
    assert!(boxes.contains_key(&BoxKey::ResumeNow("p".into())), "{body}");
    assert!(boxes.contains_key(&BoxKey::RetryNow("c".into())), "{body}");
    assert!(boxes.contains_key(&BoxKey::Pause));

    let before = writes(&server).len();
    let second = status(&server, 9_002);
    assert_eq!(requests(&second).1, 0);
    assert_eq!(
        writes(&server).len(),
        before,
        "nothing new, nothing written"
    );
    let (reads, _) = requests(&second);
    assert!(reads <= 6, "{reads} reads");
}

#[test]
fn a_readers_tick_is_ignored_and_named_and_a_writers_retry_now_is_picked_by_the_next_select() {
    let mut world = world();
    finished(&mut world, "c", Outcome::Failed, 2);
    finished(&mut world, "d", Outcome::Failed, 2);
    let server = world.start();
    status(&server, 9_001);

    toggle(&server, READER_ROB, "klaud:retry-now:d");
    toggle(&server, MAINTAINER_ANN, "klaud:retry-now:c");
    // A status pass in between keeps both ticks and writes nothing: it acts on none.
    let before = writes(&server).len();
    let waiting = status(&server, 9_0015);
    assert_eq!(writes(&server).len(), before, "{}", waiting.summary());
    let pass = recover(&server, 9_002);
    let (reads, written) = requests(&pass);
    eprintln!("recover acting on two accounts' ticks: {reads} reads, {written} writes");

    let ledger = stored_ledger(&server);
    let audit: Vec<(Request, String)> = ledger
        .steering
        .audit
        .iter()
        .map(|entry| (entry.request.clone(), entry.by.clone()))
        .collect();
    assert_eq!(
        audit,
        [(Request::RetryNow("c".into()), "maintainer-ann".to_string())]
    );
    assert_eq!(ledger.steering.ignored[0].by, "reader-rob");
    let (_, body) = dashboard(&server);
    assert!(read_boxes(&body).values().all(|b| !b.changed()), "{body}");
    assert!(body.contains("`reader-rob`"), "{body}");
    assert!(
        !body.contains("klaud:retry-now:c"),
        "c's cooldown ended:\n{body}"
    );

    let (selection, selected) = select(&server, 9_003, &[("c", "c"), ("d", "d")]);
    assert_eq!(selected, ["c"], "{}", selection.summary());
}

/// A step of `mode` under `config` (`klaud.yml`), expecting exit 0.
fn configured_step(
    server: &FakeGitHubHandle,
    run: u64,
    config: &str,
    mode: &str,
    arguments: &[&str],
) -> Pass {
    let pass = Pass::new(run);
    std::fs::write(pass.path("klaud.yml"), config).unwrap();
    step(server, &pass, mode, arguments);
    pass
}

#[test]
fn a_job_that_ran_the_agent_without_session_counts_toward_the_budget_and_the_dashboard() {
    let server = world().start();
    let config = "budget:\n  daily-usd: 0.01\n";
    let candidates = |pass: &Pass, ids: &[(&str, &str)]| {
        let list: Vec<Value> = ids
            .iter()
            .map(|(id, family)| serde_json::json!({"id": id, "family": family}))
            .collect();
        let file = pass.path("candidates.json");
        std::fs::write(&file, Value::Array(list).to_string()).unwrap();
        file.to_str().unwrap().to_string()
    };
    let planner = Pass::new(9_001);
    std::fs::write(planner.path("klaud.yml"), config).unwrap();
    let file = candidates(&planner, &[("c1", "f1")]);
    step(&server, &planner, "select", &["--candidates", &file]);
    assert_eq!(planner.ids("candidates"), ["c1"]);

    // The candidate job of the minimal flow: the agent, then finish, with no session step;
    // finish runs twice in the same job (a re-run of the step).
    let record = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code/claude-code-action-execution-file-sample.json");
    let record = record.to_str().unwrap();
    let finish_arguments = [
        "--candidate",
        "c1",
        "--outcome",
        "failed",
        "--agent-outcome",
        "failure",
        "--execution-file",
        record,
        "--cancel-wait",
        "0",
    ];
    let job = configured_step(&server, 9_100, config, "finish", &finish_arguments);
    assert!(job.summary().contains("$0.0347"), "{}", job.summary());
    configured_step(&server, 9_100, config, "finish", &finish_arguments);
    let ledger = stored_ledger(&server);
    let session = &ledger.sessions[0];
    assert_eq!(session.outcome, Some(Outcome::Failed));
    assert!(
        session.attempts.is_empty(),
        "no session step adopted the job"
    );
    assert_eq!(session.unadopted_jobs.len(), 1, "counted once per job");
    assert_eq!(session.unadopted_jobs[0].run, 9_100);
    assert_eq!(session.unadopted_jobs[0].agent.cost_usd, Some(0.0347));

    let next = Pass::new(9_200);
    std::fs::write(next.path("klaud.yml"), config).unwrap();
    let file = candidates(&next, &[("c2", "f2"), ("c3", "f3")]);
    let log = step(&server, &next, "select", &["--candidates", &file]);
    let figures = "$0.03 recorded in the last 24 hours, budget $0.01";
    assert!(log.contains(figures), "{log}");
    assert!(next.ids("candidates").is_empty());
    let selection: Value =
        serde_json::from_str(&std::fs::read_to_string(next.path("out/selection.json")).unwrap())
            .unwrap();
    assert_eq!(selection["deferred-reason"], "budget-exhausted");
    for candidate in selection["candidates"].as_array().unwrap() {
        assert_eq!(candidate["decision"], "budget-exhausted", "{candidate}");
        let message = candidate["reason"]["message"].as_str().unwrap();
        assert!(message.ends_with(figures), "{message}");
    }

    configured_step(&server, 9_300, config, "status", &["--dashboard"]);
    let (_, body) = dashboard(&server);
    assert!(
        body.contains("$0.03 over 1 agent runs with a recorded cost; last 24 hours $0.03 of the daily budget of $0.01"),
        "{body}"
    );
}

#[test]
fn resume_now_puts_a_parked_session_first_in_line() {
    let mut world = world();
    // Room for one resume: four live sessions of a cap of five.
    for candidate in ["l1", "l2", "l3", "l4"] {
        let parent = world.running_planner(&[candidate]);
        world.session(candidate, SessionState::Live, parent, None);
        world.claim(candidate, parent);
        world.bot_draft(candidate);
    }
    parked(&mut world, "older", 6);
    parked(&mut world, "newer", 2);
    let server = world.start();
    status(&server, 9_001);

    toggle(&server, MAINTAINER_ANN, "klaud:resume-now:newer");
    let pass = recover(&server, 9_002);
    assert_eq!(pass.ids("resumed"), ["newer"], "{}", pass.summary());
    let dispatched = server.with_state(|state| state.dispatches.len());
    assert_eq!(dispatched, 1);
}

#[test]
fn a_tick_on_a_dashboard_with_a_long_history_acts_whichever_order_github_lists_it_in() {
    for oldest_first in [false, true] {
        let mut world = world();
        if oldest_first {
            world.state = world.state.with_edits_listed_oldest_first();
        }
        parked(&mut world, "p", 2);
        // The dashboard is five hours old, with 150 revisions since (a note added and taken
        // out again), then the tick.
        let created = world.ago(5 * 3600);
        world.state.now = Some(created);
        let server = world.start();
        status(&server, 9_001);
        let (number, body) = dashboard(&server);
        server.with_state(|state| {
            for minute in 1..=150 {
                state.now = Some(created.plus(minute * 60));
                let text = if minute % 2 == 1 {
                    format!("{body}\nnote")
                } else {
                    body.clone()
                };
                state.edit_body(number, MAINTAINER_ANN.login, Some(text));
            }
            state.now = None;
        });
        toggle(&server, MAINTAINER_ANN, "klaud:pause:off");

        let pass = recover(&server, 9_002);
        let ledger = stored_ledger(&server);
        assert!(
            ledger.steering.paused.is_some(),
            "listed oldest first: {oldest_first}\n{}",
            pass.summary()
        );
    }
}

#[test]
fn release_hold_makes_the_family_selectable() {
    let mut world = world();
    finished(&mut world, "m", Outcome::ClosedByMaintainer, 3);
    let server = world.start();
    status(&server, 9_001);
    let family = family("m");
    let (_, held) = select(&server, 9_002, &[("n", &family)]);
    assert!(held.is_empty());

    toggle(&server, MAINTAINER_ANN, "klaud:release-hold:");
    recover(&server, 9_003);
    let (_, selected) = select(&server, 9_004, &[("n", &family)]);
    assert_eq!(selected, ["n"]);
}

#[test]
fn pause_holds_select_and_the_resumes_until_it_is_unticked() {
    let mut world = world();
    parked(&mut world, "p", 3);
    let server = world.start();
    status(&server, 9_001);

    toggle(&server, MAINTAINER_ANN, "klaud:pause:off");
    let paused = recover(&server, 9_002);
    assert_eq!(paused.ids("resumed"), Vec::<String>::new());
    assert!(
        paused
            .record()
            .to_string()
            .contains("paused: nothing is resumed"),
        "{}",
        paused.record()
    );
    let (selection, selected) = select(&server, 9_003, &[("x", "fx")]);
    assert!(selected.is_empty());
    let record = std::fs::read_to_string(selection.path("out/selection.json")).unwrap();
    assert!(record.contains("\"paused\""), "{record}");
    let (_, body) = dashboard(&server);
    assert!(body.contains("- [x] pause"), "{body}");

    // A second pass over the same tick acts on nothing more.
    recover(&server, 9_004);
    assert_eq!(stored_ledger(&server).steering.audit.len(), 1);

    toggle(&server, MAINTAINER_ANN, "klaud:pause:on");
    let going_on = recover(&server, 9_005);
    assert_eq!(going_on.ids("resumed"), ["p"]);
    assert!(!stored_ledger(&server).steering.is_paused());
}

#[test]
fn a_tick_whose_rewrite_failed_acts_once_when_read_again() {
    let mut world = world();
    finished(&mut world, "c", Outcome::Failed, 2);
    let server = world.start();
    status(&server, 9_001);
    let (number, _) = dashboard(&server);
    toggle(&server, MAINTAINER_ANN, "klaud:retry-now:c");
    server.set_faults(FaultConfig::rules(vec![
        FaultRule::nth(
            "PATCH",
            &format!("/repos/acme/bench/issues/{number}"),
            1,
            500,
        )
        .times(10),
    ]));
    recover(&server, 9_002);
    server.set_faults(FaultConfig::default());
    let (_, body) = dashboard(&server);
    assert!(
        body.contains("- [x] retry"),
        "the tick is still there:\n{body}"
    );

    recover(&server, 9_003);
    let ledger = stored_ledger(&server);
    assert_eq!(
        ledger.steering.audit.len(),
        1,
        "{:?}",
        ledger.steering.audit
    );
    let (_, body) = dashboard(&server);
    assert!(read_boxes(&body).values().all(|b| !b.changed()), "{body}");
}

/// Validated ready pull requests of candidates `x` and `y`, each waiting for a maintainer after
/// using its two after-care sessions. Returns their numbers.
fn waiting_for_a_maintainer(world: &mut World) -> (u64, u64) {
    use klaud::core::aftercare::{AftercareState, NeedsMaintainerBecause};
    let mut numbers = Vec::new();
    for candidate in ["x", "y"] {
        finished(world, candidate, Outcome::Validated, 30);
        let commits = vec![world.bot_commit(candidate, 31)];
        let number = world.bot_pull(candidate, false, commits, &["klaud-needs-maintainer"]);
        let validated = time(world.ago(30 * 3600));
        world
            .ledger
            .record_validated(candidate, &family(candidate), number, None, validated);
        let since = time(world.ago(3600));
        let record = world.ledger.aftercare.last_mut().unwrap();
        record.sessions_used = 2;
        record.state = AftercareState::NeedsMaintainer {
            since,
            because: NeedsMaintainerBecause::SessionsUsedUp { used: 2 },
        };
        numbers.push(number);
    }
    (numbers[0], numbers[1])
}

#[test]
fn a_writers_retry_aftercare_grants_one_session_and_a_readers_is_ignored_and_named() {
    let mut world = world();
    let (x, y) = waiting_for_a_maintainer(&mut world);
    let server = world.start();
    status(&server, 9_001);
    let (number, body) = dashboard(&server);
    assert!(
        body.contains(&format!("klaud:retry-aftercare:{x}")),
        "{body}"
    );

    toggle(&server, READER_ROB, &format!("klaud:retry-aftercare:{y}"));
    toggle(
        &server,
        MAINTAINER_ANN,
        &format!("klaud:retry-aftercare:{x}"),
    );
    // The first rewrite fails: the next pass reads the same ticks again.
    server.set_faults(FaultConfig::rules(vec![
        FaultRule::nth(
            "PATCH",
            &format!("/repos/acme/bench/issues/{number}"),
            1,
            500,
        )
        .times(10),
    ]));
    recover(&server, 9_002);
    server.set_faults(FaultConfig::default());
    let (_, body) = dashboard(&server);
    assert!(body.contains("- [x] retry after-care"), "{body}");
    recover(&server, 9_003);

    let ledger = stored_ledger(&server);
    let granted = ledger.aftercare_of(x).unwrap();
    assert_eq!(granted.granted, 1, "one session, however often it is read");
    assert_eq!(
        granted.state,
        klaud::core::aftercare::AftercareState::Watched
    );
    let ignored = ledger.aftercare_of(y).unwrap();
    assert_eq!(ignored.granted, 0);
    assert!(matches!(
        ignored.state,
        klaud::core::aftercare::AftercareState::NeedsMaintainer { .. }
    ));
    let audit: Vec<(Request, String)> = ledger
        .steering
        .audit
        .iter()
        .map(|entry| (entry.request.clone(), entry.by.clone()))
        .collect();
    assert_eq!(
        audit,
        [(Request::RetryAftercare(x), "maintainer-ann".to_string())]
    );
    assert_eq!(ledger.steering.ignored[0].by, "reader-rob");
    let (_, body) = dashboard(&server);
    assert!(read_boxes(&body).values().all(|b| !b.changed()), "{body}");
    assert!(
        !body.contains(&format!("klaud:retry-aftercare:{x}")),
        "{body}"
    );
    assert!(
        body.contains(&format!("klaud:retry-aftercare:{y}")),
        "{body}"
    );
    assert!(body.contains("watched, 2/3 sessions"), "{body}");
    assert!(body.contains("`reader-rob`"), "{body}");
}

#[test]
fn an_issue_someone_else_wrote_with_the_label_is_never_edited() {
    let mut world = world();
    let foreign = world.state.add_issue(IssueSpec {
        title: "klaud dashboard".into(),
        body: Some("- [x] pause <!-- klaud:pause:off -->\n".into()),
        author: MAINTAINER_ANN.login.into(),
        labels: vec![LABEL.into()],
        created_at: None,
    });
    let server = world.start();
    let pass = recover(&server, 9_001);
    assert!(!stored_ledger(&server).steering.is_paused());
    status(&server, 9_002);
    let untouched = server.with_state(|state| state.issues[&foreign].body.clone());
    assert_eq!(
        untouched.as_deref(),
        Some("- [x] pause <!-- klaud:pause:off -->\n")
    );
    assert!(
        writes(&server)
            .iter()
            .all(|write| !write.ends_with(&format!("/issues/{foreign}"))),
        "{:?} {}",
        writes(&server),
        pass.summary()
    );
    let (_, body) = dashboard(&server);
    assert!(body.contains(&format!("Issue #{foreign}")), "{body}");
}

/// The body of the standard scenario's dashboard, as GitHub renders it: every box a task-list
/// item, every table row as wide as its header; and the snapshot committed beside the tests.
#[test]
fn the_standard_scenarios_dashboard_is_well_formed_markdown_and_matches_its_snapshot() {
    let now = Timestamp(1_764_590_400); // 2025-12-01T12:00:00Z
    let generated = fake_github::scenario::generate(7, now);
    let ledger = bench_support::ledger_of(&generated.sessions);
    let policy = Policy {
        bot: BOT.into(),
        ..klaud::shell::config::Config::default().policy(5, 1.0)
    };
    let pulls = Listed::complete(Vec::new());
    let report = status_report(
        StatusFacts {
            ledger: &ledger,
            ledger_found: true,
            pull_requests: &pulls,
            repository: "acme/bench",
            health: HealthFacts {
                pulls: &Listed::complete(Vec::new()),
                jobs: &std::collections::BTreeMap::new(),
                sweep_workflow: policy.sweep_workflow.as_deref(),
            },
        },
        &policy,
        time(now),
    );
    let body = render(&DashboardView {
        report: &report,
        ledger: &ledger,
        repository_url: "https://github.com/acme/bench",
        ticks: &[],
        others: &[],
    });
    assert!(check_markdown(&body) >= 2, "{body}");
    assert_matches_snapshot("standard-scenario.md", &body);
}

/// `rendering` equals the snapshot `tests/fixtures/dashboard/<name>` (`KLAUD_UPDATE_SNAPSHOTS=1`
/// writes it).
fn assert_matches_snapshot(name: &str, rendering: &str) {
    let snapshot = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/dashboard")
        .join(name);
    if std::env::var_os("KLAUD_UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(snapshot.parent().unwrap()).unwrap();
        std::fs::write(&snapshot, rendering).unwrap();
    }
    let expected = std::fs::read_to_string(&snapshot)
        .expect("the snapshot (KLAUD_UPDATE_SNAPSHOTS=1 writes it)");
    assert_eq!(
        rendering, expected,
        "the rendering changed: review it and update the snapshot"
    );
}

/// Parses `body` as GitHub-flavoured Markdown: every klaud box is a task-list item, and every
/// table row has as many cells as its header.
fn check_markdown(body: &str) -> usize {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    options.insert(Options::ENABLE_TASKLISTS);
    let mut task_items = 0;
    let mut header_cells = 0;
    let mut row_cells = 0;
    let mut in_head = false;
    let mut tables = 0;
    for event in Parser::new_ext(body, options) {
        match event {
            Event::TaskListMarker(_) => task_items += 1,
            Event::Start(Tag::Table(alignments)) => {
                tables += 1;
                header_cells = alignments.len();
            }
            Event::Start(Tag::TableHead) => in_head = true,
            Event::End(TagEnd::TableHead) => in_head = false,
            Event::Start(Tag::TableRow) => row_cells = 0,
            Event::Start(Tag::TableCell) if !in_head => row_cells += 1,
            Event::End(TagEnd::TableRow) => {
                assert_eq!(row_cells, header_cells, "a row as wide as its header")
            }
            _ => {}
        }
    }
    let boxes = read_boxes(body).len();
    assert_eq!(task_items, boxes, "every box is a task-list item:\n{body}");
    tables
}

/// Fifty open klaud pull requests of every health, as the *Pull requests* section shows them
/// (contract §12): one line each with its link, health, pending sweep jobs per pool and estimate;
/// almost ready first. The body is well-formed GitHub-flavoured Markdown within GitHub's limit,
/// every pull request a link, and the section matches its committed snapshot.
#[test]
fn fifty_pull_requests_fit_the_dashboard_one_line_each_and_match_their_snapshot() {
    use klaud::core::github_state::{
        CheckConclusion, CheckStatus, MergeStateStatus, Mergeable, RunStatus,
    };
    use klaud::core::health::{Check, CheckRun, CheckWorkflowRun, PullRequestChecks, SweepJob};

    let now = Timestamp(1_764_590_400); // 2025-12-01T12:00:00Z
    let ledger = klaud::core::ledger::Ledger::empty();
    let policy = klaud::shell::config::Config::default().policy(5, 1.0);
    let check = |run: u64, job: u64, status: &str, conclusion: Option<&str>| {
        Check::Run(CheckRun {
            name: format!("sweep / benchmark {job} (b200, fp8, 1k1k, conc 64)"),
            id: Some(job),
            status: CheckStatus::from(status),
            conclusion: conclusion.map(CheckConclusion::from),
            url: Some(format!(
                "https://github.com/acme/bench/actions/runs/{run}/job/{job}"
            )),
            workflow_run: Some(CheckWorkflowRun {
                id: run,
                path: ".github/workflows/run-sweep.yml".into(),
                status: CheckStatus::from(if status == "COMPLETED" {
                    "COMPLETED"
                } else {
                    "IN_PROGRESS"
                }),
                conclusion: conclusion
                    .filter(|_| status == "COMPLETED")
                    .map(CheckConclusion::from),
            }),
        })
    };
    let mut jobs = std::collections::BTreeMap::new();
    let pulls: Vec<PullRequestChecks> = (1..=50u64)
        .map(|number| {
            let run = 1_000 + number;
            let base = number * 100;
            let checks = match number % 5 {
                // Failing: seven failed jobs, folded after three.
                0 => (0..7)
                    .map(|job| check(run, base + job, "COMPLETED", Some("FAILURE")))
                    .collect(),
                1 => vec![
                    check(run, base, "COMPLETED", Some("SUCCESS")),
                    check(run, base + 1, "IN_PROGRESS", None),
                ],
                2 => vec![check(run, base, "COMPLETED", Some("SUCCESS"))],
                3 => vec![check(run, base, "COMPLETED", Some("SKIPPED"))],
                _ => Vec::new(),
            };
            if number % 5 == 1 {
                let pool = ["b200", "mi355x", "h100", "gpu-unnamed"][(number / 5 % 4) as usize];
                let pending = (number % 9) as usize + 1;
                let listed: Vec<SweepJob> = (0..pending as u64)
                    .map(|job| SweepJob {
                        id: base + 10 + job,
                        run_id: run,
                        name: format!("job {job}"),
                        status: RunStatus::Queued,
                        conclusion: None,
                        labels: vec!["self-hosted".into(), pool.into()],
                        started_at: None,
                        completed_at: None,
                    })
                    .collect();
                jobs.insert(run, Listed::complete(listed));
            }
            PullRequestChecks {
                number,
                candidate: format!("{number:016x}-ea7bf153004ad90b"),
                created_at: time(now) - chrono::Duration::hours(number as i64),
                draft: false,
                head_sha: format!("{number:040x}"),
                mergeable: match number % 7 {
                    0 => Mergeable::Conflicting,
                    3 => Mergeable::Unknown,
                    _ => Mergeable::Mergeable,
                },
                merge_state: match number % 11 {
                    4 => MergeStateStatus::Behind,
                    _ => MergeStateStatus::Clean,
                },
                checks: Listed::complete(checks),
            }
        })
        .collect();
    let pulls = Listed::complete(pulls);
    let report = status_report(
        StatusFacts {
            ledger: &ledger,
            ledger_found: true,
            pull_requests: &Listed::complete(Vec::new()),
            repository: "acme/bench",
            health: HealthFacts {
                pulls: &pulls,
                jobs: &jobs,
                sweep_workflow: policy.sweep_workflow.as_deref(),
            },
        },
        &policy,
        time(now),
    );
    let body = render(&DashboardView {
        report: &report,
        ledger: &ledger,
        repository_url: "https://github.com/acme/bench",
        ticks: &[],
        others: &[],
    });
    assert!(
        check_markdown(&body) >= 1,
        "the pull requests are a table:\n{body}"
    );
    assert!(body.chars().count() <= 65_536);
    let section: String = body
        .split("\n## ")
        .find(|section| section.starts_with("Pull requests"))
        .expect("the pull requests section")
        .to_string();
    let rows: Vec<&str> = section
        .lines()
        .filter(|line| line.starts_with("| [#"))
        .collect();
    assert_eq!(rows.len(), 50, "one line a pull request:\n{section}");
    // Every pull request is a link, as GitHub renders the body.
    let mut options = Options::empty();
    options.insert(Options::ENABLE_TABLES);
    let links: std::collections::BTreeSet<String> = Parser::new_ext(&body, options)
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. }) => Some(dest_url.to_string()),
            _ => None,
        })
        .filter(|url| url.contains("/pull/"))
        .collect();
    assert_eq!(links.len(), 50);
    // Almost ready first, the soonest first; failed jobs folded after three.
    assert!(rows[0].contains("running, almost ready"), "{}", rows[0]);
    assert!(section.contains("+4 more"));
    assert_matches_snapshot("fifty-pull-requests.md", &section);
}

/// The fifty pull requests, every third validated and in after-care in each state and with
/// each next step: one line each in the *After-care* section, those waiting for a maintainer
/// first with their *retry after-care* box; well-formed and matching its committed snapshot.
#[test]
fn fifty_pull_requests_in_aftercare_list_their_state_sessions_and_next_step() {
    use klaud::core::aftercare::{AftercareState, NeedsMaintainerBecause};
    use klaud::core::github_state::{CheckConclusion, CheckStatus, MergeStateStatus, Mergeable};
    use klaud::core::health::{Check, CheckRun, PullRequestChecks};

    let now = Timestamp(1_764_590_400); // 2025-12-01T12:00:00Z
    let at = time(now);
    let policy = klaud::shell::config::Config::default().policy(5, 1.0);
    let mut ledger = klaud::core::ledger::Ledger::empty();
    let candidate = |number: u64| format!("{number:016x}-ea7bf153004ad90b");
    for number in (3..=50u64).step_by(3) {
        let validated = at - chrono::Duration::hours(number as i64);
        ledger.record_validated(&candidate(number), "family", number, None, validated);
        let record = ledger.aftercare.last_mut().unwrap();
        record.sessions_used = (number / 3 % 3) as u32;
        record.last_started_at =
            (number % 4 == 0 || number % 13 == 0).then(|| at - chrono::Duration::hours(2));
        record.state = match (number % 12, number % 24) {
            (0, _) => AftercareState::NeedsMaintainer {
                since: at,
                because: NeedsMaintainerBecause::Ended(Outcome::Failed),
            },
            (_, 3) => AftercareState::Left {
                since: at,
                reason: format!("#{number} has a commit by maintainer-ann"),
            },
            (_, 6) => AftercareState::Superseded { since: at, by: 99 },
            _ => AftercareState::Watched,
        };
    }
    // #33's refresh session is running.
    ledger
        .claim_family(&candidate(33), "family", 7, at - chrono::Duration::hours(1))
        .unwrap();
    let check = |id: u64, status: &str, conclusion: Option<&str>| {
        Check::Run(CheckRun {
            name: format!("sweep {id}"),
            id: Some(id),
            status: CheckStatus::from(status),
            conclusion: conclusion.map(CheckConclusion::from),
            url: None,
            workflow_run: None,
        })
    };
    let pulls: Vec<PullRequestChecks> = (1..=50u64)
        .map(|number| PullRequestChecks {
            number,
            candidate: candidate(number),
            created_at: at - chrono::Duration::hours(number as i64),
            draft: false,
            head_sha: format!("{number:040x}"),
            mergeable: match number % 5 {
                0 => Mergeable::Conflicting,
                1 => Mergeable::Unknown,
                _ => Mergeable::Mergeable,
            },
            merge_state: MergeStateStatus::Clean,
            checks: Listed::complete(match number {
                42 => vec![
                    check(1, "COMPLETED", Some("FAILURE")),
                    check(2, "IN_PROGRESS", None),
                ],
                _ if number % 2 == 1 => vec![check(1, "COMPLETED", Some("FAILURE"))],
                _ => Vec::new(),
            }),
        })
        .collect();
    let report = status_report(
        StatusFacts {
            ledger: &ledger,
            ledger_found: true,
            pull_requests: &Listed::complete(Vec::new()),
            repository: "acme/bench",
            health: HealthFacts {
                pulls: &Listed::complete(pulls),
                jobs: &std::collections::BTreeMap::new(),
                sweep_workflow: policy.sweep_workflow.as_deref(),
            },
        },
        &policy,
        at,
    );
    let body = render(&DashboardView {
        report: &report,
        ledger: &ledger,
        repository_url: "https://github.com/acme/bench",
        ticks: &[],
        others: &[],
    });
    check_markdown(&body);
    assert!(body.chars().count() <= 65_536);
    let section: String = body
        .split("\n## ")
        .find(|section| section.starts_with("After-care"))
        .expect("the after-care section")
        .to_string();
    let lines: Vec<&str> = section
        .lines()
        .filter(|line| line.starts_with("- "))
        .collect();
    assert_eq!(lines.len(), 16, "one line a pull request:\n{section}");
    let boxes: Vec<&&str> = lines
        .iter()
        .filter(|line| line.starts_with("- [ ]"))
        .collect();
    assert_eq!(
        boxes.len(),
        4,
        "a box where a maintainer is awaited:\n{section}"
    );
    assert!(lines[0].contains("retry after-care of [#12]"), "{section}");
    assert_matches_snapshot("fifty-pull-requests-aftercare.md", &section);
}
