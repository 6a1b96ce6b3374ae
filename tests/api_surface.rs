//! The GitHub requests klaud documents are the ones it makes. `docs/github-requests.md` has a
//! table naming each REST operation (method and path template) and GraphQL root field, and the
//! modes that send it; README lists the same requests. Four things hold them to the code:
//! - README's list and the table name the same requests;
//! - the table's REST operations are exactly those of `tests/openapi/github-subset.json`, whose
//!   answers the fake GitHub is held to by `tests/fake_github_openapi.rs`;
//! - every mode, run as the action runs it in a world where it has work (`mode_runs_support`),
//!   sends only requests the table lists for that mode;
//! - every row is sent by at least one of those runs or by the busier passes below, so the table
//!   keeps no request klaud stopped making.

#![allow(clippy::disallowed_methods)] // tests read the environment and start processes
#![allow(clippy::duplicate_mod)] // github_mode_support and recover_support each bring step_support

#[path = "aftercare_support/mod.rs"]
mod aftercare_support;
#[path = "dashboard_support/mod.rs"]
mod dashboard_support;
use klaud_fake_github as fake_github;
#[path = "github_mode_support/mod.rs"]
mod github_mode_support;
#[path = "mode_runs_support/mod.rs"]
mod mode_runs_support;
#[path = "recover_support/mod.rs"]
mod recover_support;
#[path = "verify_baselines_support/mod.rs"]
mod verify_baselines_support;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{TimeZone, Utc};
use fake_github::{FakeGitHubHandle, LoggedRequest, MAINTAINER_ANN};
use klaud::core::ledger::SessionState;
use klaud::core::outcome::Outcome;
use mode_runs_support::{Answer, all_modes, setup};
use recover_support::{BOT, Pass, World};
use regex::Regex;
use serde_json::Value;

const TABLE: &str = include_str!("../docs/github-requests.md");
const README: &str = include_str!("../README.md");
const SUBSET: &str = include_str!("openapi/github-subset.json");
/// README's section that lists the requests.
const README_HEADING: &str = "## GitHub requests";
/// The repository's path, which the table abbreviates and README's list puts first.
const REPOSITORY_PATH: &str = "/repos/{owner}/{repo}";
/// How the table abbreviates it.
const REPO_PREFIX: &str = "{repo}";

/// One request kind: a REST operation or a GraphQL root field.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Request {
    Rest { method: String, template: String },
    Graphql { field: String },
}

impl std::fmt::Display for Request {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Request::Rest { method, template } => write!(formatter, "{method} {template}"),
            Request::Graphql { field } => write!(formatter, "POST /graphql {field}"),
        }
    }
}

/// The table of `docs/github-requests.md`: each request and the modes that send it.
struct Table {
    rows: BTreeMap<Request, BTreeSet<String>>,
}

impl Table {
    fn read() -> Self {
        let code = Regex::new("`([^`]+)`").unwrap();
        let mut rows = BTreeMap::new();
        for line in TABLE.lines().filter(|line| line.starts_with("| `")) {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
            assert!(cells.len() >= 2, "a row names a request and modes: {line}");
            let spans: Vec<&str> = code
                .captures_iter(cells[0])
                .map(|capture| capture.get(1).unwrap().as_str())
                .collect();
            let (method, path) = spans[0]
                .split_once(' ')
                .unwrap_or_else(|| panic!("`METHOD path` first: {line}"));
            let request = if path == "/graphql" {
                assert_eq!(method, "POST", "{line}");
                let field = spans
                    .get(1)
                    .unwrap_or_else(|| panic!("a root field: {line}"));
                Request::Graphql {
                    field: field.to_string(),
                }
            } else {
                Request::Rest {
                    method: method.to_string(),
                    template: path.replacen(REPO_PREFIX, REPOSITORY_PATH, 1),
                }
            };
            let modes: BTreeSet<String> = code
                .captures_iter(cells[1])
                .map(|capture| capture[1].to_string())
                .collect();
            for mode in &modes {
                assert!(all_modes().contains(mode), "`{mode}` is a mode: {line}");
            }
            assert!(!modes.is_empty(), "a row names its modes: {line}");
            assert!(
                rows.insert(request.clone(), modes).is_none(),
                "{request} is listed once"
            );
        }
        assert!(!rows.is_empty(), "docs/github-requests.md has a table");
        Table { rows }
    }

    fn rest_operations(&self) -> BTreeSet<String> {
        self.rows
            .keys()
            .filter(|request| matches!(request, Request::Rest { .. }))
            .map(ToString::to_string)
            .collect()
    }

    /// The listed request a logged one is, if any: its method and path matched against each
    /// template (`{ref}` and `{path}` may hold slashes, other parameters not), or its GraphQL
    /// root field.
    fn classify(&self, logged: &LoggedRequest) -> Vec<Request> {
        if logged.is_graphql() {
            let operation = logged.graphql().expect("klaud sends readable GraphQL");
            return operation
                .fields
                .into_iter()
                .map(|field| Request::Graphql { field })
                .collect();
        }
        let path = logged.path.split('?').next().unwrap();
        let matching: Vec<Request> = self
            .rows
            .keys()
            .filter(|request| match request {
                Request::Rest { method, template } => {
                    method.eq_ignore_ascii_case(&logged.method)
                        && template_regex(template).is_match(path)
                }
                Request::Graphql { .. } => false,
            })
            .cloned()
            .collect();
        assert!(
            matching.len() <= 1,
            "{} {path} matches one template, not {matching:?}",
            logged.method
        );
        if matching.is_empty() {
            vec![Request::Rest {
                method: logged.method.clone(),
                template: path.to_string(),
            }]
        } else {
            matching
        }
    }
}

fn template_regex(template: &str) -> Regex {
    let parameter = Regex::new(r"\\\{([a-z_]+)\\\}").unwrap();
    let escaped = regex::escape(template);
    let pattern = parameter.replace_all(&escaped, |capture: &regex::Captures| match &capture[1] {
        "ref" | "path" => ".+".to_string(),
        _ => "[^/]+".to_string(),
    });
    Regex::new(&format!("^{pattern}$")).unwrap()
}

/// `klaud <mode>` for `pass` with `arguments`, expecting exit 0; what it sent.
fn step(
    server: &FakeGitHubHandle,
    pass: &Pass,
    mode: &str,
    arguments: &[&str],
) -> Vec<LoggedRequest> {
    server.clear_request_log();
    let mut command = assert_cmd::Command::from_std(pass.mode_command(server, mode));
    command
        .args(arguments)
        .timeout(std::time::Duration::from_secs(120));
    assert_succeeded(&command.output().unwrap(), mode);
    server.request_log()
}

fn assert_succeeded(output: &std::process::Output, mode: &str) {
    assert_eq!(
        output.status.code(),
        Some(0),
        "{mode}\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn time(timestamp: fake_github::Timestamp) -> chrono::DateTime<Utc> {
    Utc.timestamp_opt(timestamp.0, 0).single().unwrap()
}

/// The passes that send what a run with little to do has no occasion to: a recovery pass that
/// cancels a leftover run, closes a bot-only draft and deletes its branch, reconciles a validated
/// session (ready for review), looks at the jobs of a planner still running, resumes a parked
/// session a maintainer put first on the dashboard and prunes an old session with its record; a
/// `finish` of a validated session (ready for review);
/// a `finish` that redrafts a ready pull request where GitHub has no `updateRefs`; a `finish` of a
/// pull request already closed; a second `note`; a `session` starting a `repair` (the base
/// branch, a failed job's log, the validated pull request made a draft again and labelled).
fn busier_runs() -> Vec<(&'static str, Vec<LoggedRequest>)> {
    let mut runs = Vec::new();

    let mut world = World::new();
    world
        .state
        .add_token(MAINTAINER_ANN.token, MAINTAINER_ANN.login);
    if let Some(role) = MAINTAINER_ANN.role {
        world.state.set_role(MAINTAINER_ANN.login, role);
    }
    world.finished_planner(3, &["leftover"]);
    world.bot_draft("leftover");
    world.smoke("leftover", BOT, true);
    let ended = world.finished_planner(3, &["done"]);
    let done = world.bot_draft("done");
    world.session("done", SessionState::Live, ended, Some(done));
    world.claim("done", ended);
    world.sweep("done", BOT, "completed", Some("success"), 200);
    let running = world.running_planner(&["working"]);
    let working = world.bot_draft("working");
    world.session("working", SessionState::Live, running, Some(working));
    world.claim("working", running);
    let parent = world.finished_planner(5, &["parked"]);
    world.session("parked", SessionState::Parked, parent, None);
    world.claim("parked", parent);
    let commits = vec![world.bot_commit("parked", 5)];
    let parked = world.bot_pull("parked", true, commits, &["klaud-parked"]);
    world.ledger.sessions.last_mut().unwrap().pull_request = Some(parked);
    for (candidate, days) in [("old", 60), ("older", 90)] {
        let parent = world.finished_planner(days * 24, &[candidate]);
        let finished_at = time(world.ago(days * 24 * 3600));
        let session = world.session(candidate, SessionState::Finished, parent, None);
        session.family = "configs/old.yaml:old".into();
        session.finished_at = Some(finished_at);
    }
    world
        .state
        .put_file("klaud/state", "records/older.json", r#"{"id": "older"}"#);
    let server = world.start();
    runs.push((
        "status",
        step(&server, &Pass::new(71), "status", &["--dashboard"]),
    ));
    let (number, _) = dashboard_support::dashboard(&server, BOT, "klaud-dashboard");
    dashboard_support::toggle(&server, MAINTAINER_ANN, number, "klaud:resume-now:parked");
    runs.push((
        "recover",
        step(&server, &Pass::new(72), "recover", &["--dashboard"]),
    ));

    let mut world = World::new();
    let parent = world.running_planner(&[]);
    let draft = world.bot_draft("sweeped");
    world.session("sweeped", SessionState::Live, parent, Some(draft));
    world.claim("sweeped", parent);
    world.sweep("sweeped", BOT, "completed", Some("success"), 30);
    let server = world.start();
    runs.push((
        "finish",
        step(
            &server,
            &Pass::new(73),
            "finish",
            &["--candidate", "sweeped", "--outcome", "validated"],
        ),
    ));

    let mut world = World::new();
    world.state = world.state.without_update_refs();
    let parent = world.running_planner(&[]);
    let commits = vec![world.bot_commit("ready", 9)];
    let ready = world.bot_pull("ready", false, commits, &["klaud-finished"]);
    world
        .session("ready", SessionState::Live, parent, Some(ready))
        .outcome = Some(Outcome::Validated);
    world.smoke("ready", BOT, true);
    let server = world.start();
    runs.push((
        "finish",
        step(
            &server,
            &Pass::new(74),
            "finish",
            &[
                "--candidate",
                "ready",
                "--outcome",
                "failed",
                "--cancel-wait",
                "0",
            ],
        ),
    ));

    let mut world = World::new();
    let parent = world.running_planner(&[]);
    let closed = world.closed_bot_pull("closed", BOT, true);
    world.session("closed", SessionState::Live, parent, Some(closed));
    let server = world.start();
    runs.push((
        "finish",
        step(
            &server,
            &Pass::new(75),
            "finish",
            &[
                "--candidate",
                "closed",
                "--outcome",
                "failed",
                "--cancel-wait",
                "0",
            ],
        ),
    ));

    // discover with the issues source: the labelled issues, the default branch's head, the
    // label actor's permission.
    let mut world = World::new();
    world
        .state
        .set_role(MAINTAINER_ANN.login, fake_github::state::Role::Write);
    let issue = world.state.add_issue(fake_github::builder::IssueSpec {
        title: "speed it up".into(),
        author: "someone".into(),
        ..Default::default()
    });
    world
        .state
        .label_issue(issue, "klaud", MAINTAINER_ANN.login);
    let server = world.start();
    let pass = Pass::new(76);
    std::fs::write(
        pass.path("klaud.yml"),
        format!("bot: {BOT}\ndiscovery:\n  source: issues\n"),
    )
    .unwrap();
    runs.push(("discover", step(&server, &pass, "discover", &[])));

    let mut world = World::new();
    aftercare_support::aftercare_started(
        &mut world,
        "mended",
        klaud::core::aftercare::SessionKind::Repair,
        &[Some("error: shard 1 ran out of memory\n")],
    );
    let server = world.start();
    runs.push((
        "session",
        step(
            &server,
            &Pass::new(77),
            "session",
            &["--candidate", "mended"],
        ),
    ));

    let mut note = setup("note", Answer::Serves);
    note.command.assert().code(0);
    let mut again = mode_runs_support::command(&note.step, &note.server, "note");
    again.args(["--candidate", "a", "--text", "sweep started"]);
    note.server.clear_request_log();
    again.assert().code(0);
    runs.push(("note", note.server.request_log()));
    runs
}

/// A run's log as the table's requests, each with the request as it was sent.
fn as_listed(table: &Table, log: &[LoggedRequest]) -> Vec<(Request, String)> {
    log.iter()
        .flat_map(|logged| {
            let shown = format!("{} {}", logged.method, logged.path);
            table
                .classify(logged)
                .into_iter()
                .map(move |request| (request, shown.clone()))
        })
        .collect()
}

/// What each mode sent in its runs, as the table's requests.
fn observed() -> BTreeMap<String, Vec<(Request, String)>> {
    let table = Table::read();
    let mut observed: BTreeMap<String, Vec<(Request, String)>> = BTreeMap::new();
    for mode in all_modes() {
        let mut run = setup(&mode, Answer::Serves);
        assert_succeeded(&run.command.output().unwrap(), &mode);
        let sent = as_listed(&table, &run.server.request_log());
        observed.entry(mode).or_default().extend(sent);
    }
    for (mode, log) in busier_runs() {
        let sent = as_listed(&table, &log);
        observed.entry(mode.to_string()).or_default().extend(sent);
    }
    observed
}

/// README's list: its first code span is the repository's path, the other REST operations are
/// under it, and the GraphQL root fields are the spans that are bare names.
fn readme_list() -> BTreeSet<Request> {
    let start = README
        .find(&format!("\n{README_HEADING}\n"))
        .unwrap_or_else(|| panic!("README.md has a `{README_HEADING}` section"));
    let section = &README[start + README_HEADING.len() + 2..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let rest = Regex::new(r"^(GET|POST|PUT|PATCH|DELETE) (/\S*)$").unwrap();
    let field = Regex::new(r"^[a-z][A-Za-z]+$").unwrap();
    let mut listed = BTreeSet::new();
    for span in Regex::new("`([^`]+)`").unwrap().captures_iter(section) {
        let span = span[1].split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(operation) = rest.captures(&span) {
            let path = &operation[2];
            if path == "/graphql" {
                continue;
            }
            let template = if path.starts_with(REPOSITORY_PATH) {
                path.to_string()
            } else {
                format!("{REPOSITORY_PATH}{path}")
            };
            listed.insert(Request::Rest {
                method: operation[1].to_string(),
                template,
            });
        } else if field.is_match(&span) {
            listed.insert(Request::Graphql { field: span });
        }
    }
    listed
}

#[test]
fn the_readme_lists_the_requests_of_the_table() {
    let listed = readme_list();
    let table: BTreeSet<Request> = Table::read().rows.into_keys().collect();
    let only_readme: Vec<String> = listed.difference(&table).map(ToString::to_string).collect();
    let only_table: Vec<String> = table.difference(&listed).map(ToString::to_string).collect();
    assert!(
        only_readme.is_empty() && only_table.is_empty(),
        "README.md lists, docs/github-requests.md does not: {only_readme:?}\n\
         docs/github-requests.md lists, README.md does not: {only_table:?}"
    );
}

#[test]
fn the_table_lists_the_rest_operations_the_fake_is_held_to() {
    let subset: Value = serde_json::from_str(SUBSET).unwrap();
    let held: BTreeSet<String> = subset["operations"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let listed = Table::read().rest_operations();
    assert_eq!(
        listed.difference(&held).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "listed in docs/github-requests.md but not in tests/openapi/extract.mjs's OPERATIONS"
    );
    assert_eq!(
        held.difference(&listed).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "in tests/openapi/extract.mjs's OPERATIONS but not listed in docs/github-requests.md"
    );
}

#[test]
fn every_request_a_mode_sends_is_listed_for_that_mode_and_every_row_is_sent() {
    let table = Table::read();
    let mut unlisted = Vec::new();
    let mut seen: BTreeMap<Request, BTreeSet<String>> = BTreeMap::new();
    for (mode, sent) in observed() {
        for (request, shown) in sent {
            match table.rows.get(&request) {
                Some(modes) if modes.contains(&mode) => {}
                Some(_) => unlisted.push(format!(
                    "{mode}: {request} (sent as {shown}) is not listed for `{mode}`"
                )),
                None => unlisted.push(format!(
                    "{mode}: {request} (sent as {shown}) is not in the table"
                )),
            }
            seen.entry(request).or_default().insert(mode.clone());
        }
    }
    unlisted.sort();
    unlisted.dedup();
    assert!(
        unlisted.is_empty(),
        "docs/github-requests.md misses:\n{}",
        unlisted.join("\n")
    );
    let never: Vec<String> = table
        .rows
        .keys()
        .filter(|request| !seen.contains_key(request))
        .map(ToString::to_string)
        .collect();
    assert!(
        never.is_empty(),
        "listed but sent by no run:\n{}",
        never.join("\n")
    );
}
