//! `klaud discover` with `discovery.source: issues` end to end (contract §13): the real binary
//! against the fake GitHub, whose issues keep their label timelines (who applied and removed
//! each label), whose REST listing by label holds pull requests too, and whose issues may be
//! locked. Every issue's fate is read from `discovery.json`, the candidates from
//! `candidates.json` and the requests from the fake's log.

#![allow(clippy::disallowed_methods)] // tests start processes and read files

use klaud_fake_github as fake_github;
#[path = "recover_support/mod.rs"]
mod recover_support;

use std::collections::BTreeMap;
use std::time::Duration;

use fake_github::builder::IssueSpec;
use fake_github::state::Role;
use klaud::core::ledger::SessionState;
use klaud::core::outcome::Outcome;
use recover_support::*;
use serde_json::Value;

const RUN: u64 = 80_000_001;
const WRITER: &str = "maintainer-ann";
const READER: &str = "reader-rob";
const OUTSIDER: &str = "drive-by-dan";
const CONFIG: &str =
    "bot: klaud-bot\ndiscovery:\n  source: issues\n  issues:\n    priority-labels: [urgent]\n";

/// An issue opened `hours` ago by `author`, carrying `labels` from the start (applied by the
/// author, as GitHub records labels given when an issue is opened).
fn open_issue(world: &mut World, title: &str, author: &str, hours: i64, labels: &[&str]) -> u64 {
    let created = world.ago(hours * 3600);
    world.state.add_issue(IssueSpec {
        title: title.into(),
        body: Some(format!("Please {title}.")),
        author: author.into(),
        labels: labels.iter().map(|label| label.to_string()).collect(),
        created_at: Some(created),
    })
}

/// `klaud discover` against `server`, expecting exit 0; returns the log.
fn discover(server: &fake_github::FakeGitHubHandle, pass: &Pass) -> String {
    std::fs::write(pass.path("klaud.yml"), CONFIG).unwrap();
    let mut command = assert_cmd::Command::from_std(pass.mode_command(server, "discover"));
    command.timeout(Duration::from_secs(120));
    let output = command.assert().get_output().clone();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(0), "{log}");
    log
}

fn read_json(pass: &Pass, name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(pass.path(&format!("out/{name}"))).unwrap())
        .unwrap()
}

/// Each issue's fate and reason in `discovery.json`.
fn fates(pass: &Pass) -> BTreeMap<u64, (String, String)> {
    read_json(pass, "discovery.json")["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|report| {
            (
                report["issue"].as_u64().unwrap(),
                (
                    report["fate"].as_str().unwrap().to_string(),
                    report["reason"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect()
}

fn fate(fates: &BTreeMap<u64, (String, String)>, issue: u64) -> &str {
    &fates
        .get(&issue)
        .unwrap_or_else(|| panic!("no report of #{issue}: {fates:?}"))
        .0
}

/// Requests whose path or body matches.
fn requests(server: &fake_github::FakeGitHubHandle, path: &str, body: &str) -> usize {
    server
        .request_log()
        .iter()
        .filter(|request| request.path.contains(path))
        .filter(|request| request.body.contains(body))
        .count()
}

#[test]
fn only_a_writers_latest_label_makes_a_candidate_and_every_issue_has_its_fate() {
    let mut world = World::new();
    world.state.set_role(WRITER, Role::Write);
    world.state.set_role(READER, Role::Read);
    // 1: a writer labels it.
    let by_writer = open_issue(&mut world, "speed up the parser", OUTSIDER, 40, &[]);
    world.state.label_issue(by_writer, "klaud", WRITER);
    // 2: a read-only collaborator labels it.
    let by_reader = open_issue(&mut world, "rewrite everything", OUTSIDER, 39, &[]);
    world.state.label_issue(by_reader, "klaud", READER);
    // 3: its author, no collaborator, opens it with the label.
    let by_author = open_issue(&mut world, "free work", OUTSIDER, 38, &["klaud"]);
    // 4: a writer labels it, removes the label, and a reader puts it back.
    let reapplied = open_issue(&mut world, "contested", OUTSIDER, 37, &[]);
    world.state.label_issue(reapplied, "klaud", WRITER);
    world.state.unlabel_issue(reapplied, "klaud", WRITER);
    world.state.label_issue(reapplied, "klaud", READER);
    // 5 and 6: one family; 5 is older. 7: urgent, the newest.
    let older_db = open_issue(
        &mut world,
        "index the table",
        WRITER,
        36,
        &["klaud", "area:db"],
    );
    let newer_db = open_issue(&mut world, "vacuum", WRITER, 35, &["klaud", "area:db"]);
    let urgent = open_issue(&mut world, "fix the crash", WRITER, 1, &["klaud", "urgent"]);
    // 8: its branch exists; 9: cooling down; 10 and 11: a family a maintainer's close holds.
    let occupied = open_issue(&mut world, "occupied", WRITER, 34, &["klaud"]);
    let cooling = open_issue(&mut world, "cooling", WRITER, 33, &["klaud"]);
    let held = open_issue(&mut world, "held", WRITER, 32, &["klaud", "area:ui"]);
    let held_too = open_issue(&mut world, "held too", WRITER, 31, &["klaud", "area:ui"]);
    // 12: locked.
    let locked = open_issue(&mut world, "locked", WRITER, 30, &["klaud"]);
    world.state.lock_issue(locked);
    // A pull request carrying the label, and an issue with another label only.
    let pull = world.bot_pull("x", true, Vec::new(), &["klaud"]);
    let unlabelled = open_issue(&mut world, "not for the agent", WRITER, 29, &["area:db"]);
    let head = world.state.branch_sha("main").unwrap().to_string();
    world
        .state
        .set_branch(&branch(&format!("issue-{occupied}")), &head);
    let parent = world.finished_planner(20, &[]);
    let session = world.session(
        &format!("issue-{cooling}"),
        SessionState::Finished,
        parent,
        None,
    );
    session.family = format!("issue-{cooling}");
    session.outcome = Some(Outcome::MissingAssets);
    let session = world.session(
        &format!("issue-{held}"),
        SessionState::Finished,
        parent,
        None,
    );
    session.family = "area:ui".into();
    session.outcome = Some(Outcome::ClosedByMaintainer);
    let server = world.start();
    let pass = Pass::new(RUN);

    let log = discover(&server, &pass);

    let fates = fates(&pass);
    let expected = [
        (by_writer, "candidate"),
        (by_reader, "unauthorized"),
        (by_author, "unauthorized"),
        (reapplied, "unauthorized"),
        (older_db, "candidate"),
        (newer_db, "queued"),
        (urgent, "candidate"),
        (occupied, "occupied"),
        (cooling, "cooling-down"),
        (held, "held"),
        (held_too, "held"),
        (locked, "locked"),
    ];
    for (issue, wanted) in expected {
        assert_eq!(fate(&fates, issue), wanted, "#{issue}: {fates:?}\n{log}");
    }
    assert_eq!(fates.len(), expected.len(), "only open labelled issues");
    assert!(!fates.contains_key(&pull) && !fates.contains_key(&unlabelled));
    assert!(
        fates[&by_reader]
            .1
            .contains("reader-rob, whose permission is read")
    );
    assert!(
        fates[&by_author]
            .1
            .contains("drive-by-dan, whose permission is none")
    );
    assert!(
        fates[&reapplied].1.contains(READER),
        "{:?}",
        fates[&reapplied]
    );
    assert!(fates[&newer_db].1.contains(&format!("issue #{older_db}")));

    // The candidates in the run's order: the urgent one first, then the oldest.
    let candidates = read_json(&pass, "candidates.json");
    let ids: Vec<&str> = candidates
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let id = |n: u64| format!("issue-{n}");
    assert_eq!(ids, [id(urgent), id(by_writer), id(older_db)]);
    let first = &candidates[0];
    assert_eq!(first["family"], id(urgent));
    assert_eq!(first["base"], head);
    assert_eq!(first["branch"], branch(&id(urgent)));
    assert_eq!(first["issue"]["number"], urgent);
    assert_eq!(first["issue"]["label-actor"], WRITER);
    assert_eq!(first["task"]["title"], "fix the crash");
    assert_eq!(first["task"]["body"], "Please fix the crash.");
    assert_eq!(candidates[2]["family"], "area:db");
    assert_eq!(
        pass.ids("discovered"),
        [id(urgent), id(by_writer), id(older_db)]
    );

    // The REST listing by label holds the pull request; discovery never proposes it.
    let listed = server.with_state(|state| {
        state
            .issues
            .values()
            .filter(|issue| issue.labels.iter().any(|l| l == "klaud"))
            .count()
    });
    assert_eq!(listed, 12);
    // One GraphQL page for the 12 issues, one permission read per distinct actor, no write.
    assert_eq!(requests(&server, "graphql", "issues(first: 100"), 1);
    assert_eq!(
        requests(&server, "/permission", ""),
        3,
        "{WRITER}, {READER}, {OUTSIDER}"
    );
    assert!(writes_beside_the_ledger(&server).is_empty());
    assert!(writes_to(&server, "ledger").is_empty());
}

#[test]
fn a_pull_request_carrying_the_label_is_listed_by_rest_but_never_a_candidate() {
    let mut world = World::new();
    world.state.set_role(WRITER, Role::Write);
    let pull = world.bot_pull("x", false, Vec::new(), &[]);
    world.state.label_issue(pull, "klaud", WRITER);
    let server = world.start();
    let listing = reqwest_get(&server, "/repos/acme/bench/issues?labels=klaud&state=open");
    assert_eq!(listing.as_array().unwrap().len(), 1);
    assert!(
        listing[0]["pull_request"].is_object(),
        "REST lists it: {listing}"
    );
    let pass = Pass::new(RUN);

    discover(&server, &pass);

    assert_eq!(read_json(&pass, "candidates.json"), serde_json::json!([]));
    assert_eq!(
        read_json(&pass, "discovery.json")["issues"],
        serde_json::json!([])
    );
}

#[test]
fn a_permission_revoked_between_two_passes_counts_at_the_second() {
    let mut world = World::new();
    world.state.set_role(WRITER, Role::Maintain);
    let issue = open_issue(&mut world, "add a flag", OUTSIDER, 5, &[]);
    world.state.label_issue(issue, "klaud", WRITER);
    let server = world.start();
    let first = Pass::new(RUN);
    discover(&server, &first);
    assert_eq!(fate(&fates(&first), issue), "candidate");

    server.with_state(|state| state.set_role(WRITER, Role::Triage));
    let second = Pass::new(RUN + 1);
    discover(&server, &second);

    let fates = fates(&second);
    assert_eq!(fate(&fates, issue), "unauthorized");
    assert!(fates[&issue].1.contains("whose permission is triage"));
    assert_eq!(
        requests(&server, "/permission", ""),
        2,
        "read again, not remembered"
    );
}

/// A REST read of the fake with the bot's token.
fn reqwest_get(server: &fake_github::FakeGitHubHandle, path: &str) -> Value {
    let url = format!("{}{path}", server.base_url());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        fake_github::http_client()
            .get(url)
            .bearer_auth(BOT_TOKEN)
            .header("user-agent", "klaud-tests")
            .send()
            .await
            .expect("the fake answers")
            .json()
            .await
            .expect("JSON")
    })
}

#[test]
fn an_issue_whose_newest_label_events_hide_the_application_is_read_on_its_own() {
    let mut world = World::new();
    world.state.set_role(WRITER, Role::Write);
    let busy = open_issue(&mut world, "busy", OUTSIDER, 5, &[]);
    world.state.label_issue(busy, "klaud", WRITER);
    for _ in 0..60 {
        world.state.label_issue(busy, "triaged", OUTSIDER);
        world.state.unlabel_issue(busy, "triaged", OUTSIDER);
    }
    let quiet = open_issue(&mut world, "quiet", OUTSIDER, 4, &[]);
    world.state.label_issue(quiet, "klaud", WRITER);
    let server = world.start();
    let pass = Pass::new(RUN);

    discover(&server, &pass);

    let fates = fates(&pass);
    assert_eq!(fate(&fates, busy), "candidate", "{fates:?}");
    assert_eq!(fate(&fates, quiet), "candidate");
    assert_eq!(requests(&server, "graphql", "issues(first: 100"), 1);
    assert_eq!(
        requests(&server, "graphql", "issue(number: $number)"),
        1,
        "only the busy issue's older events"
    );
    assert_eq!(requests(&server, "/permission", ""), 1);
}

/// A pull request in after-care with no session of its own leaves its family to another issue:
/// the older issue, whose pull request waits, is `occupied`; the newer issue of its family is a
/// candidate instead of `queued` (contract §12).
#[test]
fn a_pull_request_waiting_in_aftercare_leaves_its_family_to_a_newer_issue() {
    let mut world = World::new();
    world.state.set_role(WRITER, Role::Write);
    let older = open_issue(
        &mut world,
        "index the table",
        WRITER,
        36,
        &["klaud", "area:db"],
    );
    let newer = open_issue(&mut world, "vacuum", WRITER, 35, &["klaud", "area:db"]);
    let older_id = format!("issue-{older}");
    let commits = vec![world.bot_commit(&older_id, 20)];
    let pull = world.bot_pull(&older_id, false, commits, &["klaud-finished"]);
    let parent = world.finished_planner(20, &[]);
    let session = world.session(&older_id, SessionState::Finished, parent, Some(pull));
    session.family = "area:db".into();
    session.outcome = Some(Outcome::Validated);
    let validated = session.finished_at.unwrap();
    world
        .ledger
        .record_validated(&older_id, "area:db", pull, None, validated);
    let server = world.start();
    let pass = Pass::new(RUN);

    let log = discover(&server, &pass);

    let fates = fates(&pass);
    assert_eq!(fate(&fates, older), "occupied", "{fates:?}\n{log}");
    assert!(fates[&older].1.contains(&format!("#{pull}")), "{fates:?}");
    assert_eq!(fate(&fates, newer), "candidate", "{fates:?}\n{log}");
    assert_eq!(pass.ids("discovered"), [format!("issue-{newer}")]);
}
