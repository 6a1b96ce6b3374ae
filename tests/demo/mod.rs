//! The demo wave: a realistic repository seeded into the fake GitHub, then the real `klaud`
//! binary run step by step the way the reference workflows run it — recover → select → one
//! simulated agent session per claimed candidate → finish → wake on an ended smoke run → the
//! recovery pass it dispatched → status — with a short account of what klaud decided (its result files
//! and outputs) and what it did (its writes in the fake's request log) after every step.
//!
//! `cargo run --example demo` prints the account; `tests/demo.rs` runs the same wave and checks
//! its key facts, so the demo cannot drift from what klaud does.

// The example prints the account; the test reads the facts.
#![allow(dead_code)]

use std::collections::BTreeMap;

use chrono::{SecondsFormat, TimeZone, Utc};
use klaud::core::ledger::{Ledger, SessionState};
use serde_json::{Value, json};

use super::fake_github::clock::HOUR;
use super::fake_github::{
    CommitSpec, FakeGitHubHandle, JobSpec, PullRequestSpec, PullState, RunSpec,
};
use super::github_mode_support::{self as steps, Step};
use super::recover_support::{
    self as world, BOT, BOT_TOKEN, LABEL_TOKEN, MAINTAINER, PLANNER, SMOKE, SWEEP, World, branch,
    family,
};

/// The repository's full name as the fake serves it.
const REPOSITORY: &str = "acme/bench";
/// The cap on concurrent sessions the wave runs with.
const MAX_CANDIDATES: u32 = 4;

// The candidates: the abandoned draft's (not in the candidates file), the maintainer-closed
// session's and another of its family, one cooling down, one handed off, four to be claimed and
// one over the cap.
pub const ABANDONED: &str = "llama70b-h200";
pub const CLOSED_BY_MAINTAINER: &str = "dsr1-h100";
pub const SAME_FAMILY: &str = "dsr1-h100-mtp";
pub const COOLING: &str = "qwen3-mi300";
pub const HANDED_OFF: &str = "gptoss-b200";
pub const VALIDATED: &str = "dsr1-b200";
pub const FAILED: &str = "llama70b-mi355";
pub const NO_CAPACITY: &str = "qwen3-h200";
pub const INTERRUPTED: &str = "gptoss-h100";
pub const OVER_CAP: &str = "llama8b-b200";
/// A maintainer's own pull request, outside klaud's branches.
pub const MAINTAINER_BRANCH: &str = "feature/faster-kernels";

/// What each claimed candidate's agent ends with: an outcome written to the outcome file, or
/// `None` when its runner dies before `finish` runs.
const AGENT_ENDINGS: [(&str, Option<&str>); 4] = [
    (VALIDATED, Some("validated")),
    (FAILED, Some("failed")),
    (NO_CAPACITY, Some("no-capacity")),
    (INTERRUPTED, None),
];

/// Pull request numbers of the seeded repository.
#[derive(Debug, Clone, Default)]
pub struct Seeded {
    pub abandoned: u64,
    pub closed_by_maintainer: u64,
    pub handed_off: u64,
    pub maintainers_own: u64,
    pub wave_run: u64,
}

/// What the wave left behind, for the account's last lines and for the test.
pub struct Wave {
    pub server: FakeGitHubHandle,
    pub seeded: Seeded,
    /// Each candidate's decision in `selection.json`.
    pub selection: BTreeMap<String, String>,
    /// The claimed candidates, in candidates-file order.
    pub selected: Vec<String>,
    /// The draft pull request each agent opened.
    pub agent_pulls: BTreeMap<String, u64>,
    /// `finish.json` of each finished session.
    pub finished: BTreeMap<String, Value>,
    /// `wake.json` and the `dispatched` output.
    pub wake: Value,
    pub wake_dispatched: bool,
    /// `recover.json` of the wave's first pass and of the dispatched pass.
    pub first_recover: Value,
    pub last_recover: Value,
    /// The account, line by line, as printed.
    pub lines: Vec<String>,
}

/// Collects the account, printing each line as it comes when `echo`.
struct Account {
    echo: bool,
    lines: Vec<String>,
}

impl Account {
    fn line(&mut self, text: impl Into<String>) {
        let text = text.into();
        if self.echo {
            println!("{text}");
        }
        self.lines.push(text);
    }

    fn heading(&mut self, text: &str) {
        self.line("");
        self.line(format!("── {text}"));
    }
}

/// The repository before the wave: earlier sessions in the ledger and their pull requests.
fn seed() -> (World, Seeded) {
    let mut world = World::new();
    world.state.add_token(steps::TOKEN, BOT);
    let planner = world.state.ensure_workflow(PLANNER);
    world.state.workflows.get_mut(&planner).unwrap().inputs = Some(vec!["wake".into()]);
    let yesterday = world.finished_planner(30, &[CLOSED_BY_MAINTAINER, COOLING]);

    // A session a maintainer ended by closing its draft; its parent run ended long ago.
    let closed = world.closed_bot_pull(CLOSED_BY_MAINTAINER, MAINTAINER, true);
    world.state.pulls.get_mut(&closed).unwrap().labels = vec!["klaud-in-progress".into()];
    world.session(
        CLOSED_BY_MAINTAINER,
        SessionState::Live,
        yesterday,
        Some(closed),
    );
    world.claim(CLOSED_BY_MAINTAINER, yesterday);
    // A session that failed six hours ago: its candidate cools down for a day.
    world.session(COOLING, SessionState::Finished, yesterday, None);
    // The bot's draft that no session owns any more, its smoke run still going.
    let abandoned = world.bot_draft(ABANDONED);
    world.smoke(ABANDONED, BOT, true);
    // A pull request of the bot that maintainers took over.
    let commits = vec![world.bot_commit(HANDED_OFF, 40)];
    let handed_off = world.bot_pull(HANDED_OFF, false, commits, &["klaud-handoff"]);
    // A maintainer's own work.
    let commits = vec![world.maintainer_commit("kernels", 5)];
    let created = world.ago(5 * HOUR);
    let maintainers_own = world.state.add_pull_request(PullRequestSpec {
        title: "Faster attention kernels".into(),
        author: MAINTAINER.into(),
        head_ref: MAINTAINER_BRANCH.into(),
        draft: false,
        commits,
        created_at: Some(created),
        ..PullRequestSpec::default()
    });
    // This wave's planner run, now at its first step.
    let wave_run = world.running_planner(&[]);
    let seeded = Seeded {
        abandoned,
        closed_by_maintainer: closed,
        handed_off,
        maintainers_own,
        wave_run,
    };
    (world, seeded)
}

/// The candidates file: each candidate its own family, except the multi-token-prediction
/// variant that shares the family of the session a maintainer closed.
fn candidates_file() -> String {
    let ids = [
        COOLING,
        SAME_FAMILY,
        HANDED_OFF,
        VALIDATED,
        FAILED,
        NO_CAPACITY,
        INTERRUPTED,
        OVER_CAP,
    ];
    let list: Vec<Value> = ids
        .iter()
        .map(|id| {
            let owner = if *id == SAME_FAMILY {
                CLOSED_BY_MAINTAINER
            } else {
                id
            };
            json!({"id": id, "family": family(owner)})
        })
        .collect();
    Value::Array(list).to_string()
}

/// A step of this wave: the bot's configuration, the label token and the cap.
fn step(run_id: u64) -> Step {
    let step = Step::new(run_id);
    step.write("klaud.yml", &format!("bot: {BOT}\n"));
    step
}

/// Runs `klaud <mode>` with `arguments`, expecting exit 0.
fn run(server: &FakeGitHubHandle, step: &Step, mode: &str, arguments: &[&str]) {
    let mut command = step.command(server, mode);
    command
        .env("KLAUD_LABEL_TOKEN", LABEL_TOKEN)
        .env("KLAUD_MAX_CANDIDATES", MAX_CANDIDATES.to_string())
        .args(arguments);
    step.run(command, 0);
}

/// Writes of the request log from position `from` on, as `METHOD path` without the
/// repository prefix, with GraphQL calls named by what klaud uses them for.
fn writes_since(server: &FakeGitHubHandle, from: usize) -> Vec<String> {
    let prefix = format!("/repos/{REPOSITORY}");
    server.request_log()[from..]
        .iter()
        .filter(|request| request.is_write())
        .map(|request| {
            let path = request.path.strip_prefix(&prefix).unwrap_or(&request.path);
            let path = path.split('?').next().unwrap_or(path);
            if let Some(operation) = request.graphql() {
                format!("POST graphql {}", operation.fields.join(", "))
            } else {
                format!("{} {path}", request.method)
            }
        })
        .collect()
}

/// One line (wrapped) of the writes since `from`: equal consecutive writes once with a count.
fn report_writes(account: &mut Account, server: &FakeGitHubHandle, from: usize) {
    let writes = writes_since(server, from);
    let mut grouped: Vec<(String, usize)> = Vec::new();
    for write in writes {
        match grouped.last_mut() {
            Some((last, count)) if *last == write => *count += 1,
            _ => grouped.push((write, 1)),
        }
    }
    let total: usize = grouped.iter().map(|(_, count)| count).sum();
    let items: Vec<String> = grouped
        .into_iter()
        .map(|(write, count)| match count {
            1 => write,
            _ => format!("{write} ×{count}"),
        })
        .collect();
    wrapped(account, &format!("writes ({total}): "), &items);
}

/// `items` joined by `, `, wrapped under `label` at 100 columns.
fn wrapped(account: &mut Account, label: &str, items: &[String]) {
    if items.is_empty() {
        account.line(format!("    {label}none"));
        return;
    }
    let indent = " ".repeat(4 + label.chars().count());
    let mut line = format!("    {label}");
    let mut first = true;
    for item in items {
        if !first && line.chars().count() + item.chars().count() + 2 > 100 {
            account.line(format!("{line},"));
            line = format!("{indent}{item}");
        } else {
            if !first {
                line.push_str(", ");
            }
            line.push_str(item);
        }
        first = false;
    }
    account.line(line);
}

/// `recover.json`: each candidate's verdict, what was applied, the ledger commits.
fn report_recover(account: &mut Account, record: &Value) {
    for candidate in record["plan"]["candidates"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let outcome = match &candidate["outcome"] {
            Value::Null => String::new(),
            outcome => format!(" → {}", text(outcome)),
        };
        account.line(format!(
            "  {:<15} #{:<3} {}{outcome}: {}",
            text(&candidate["candidate"]),
            text(&candidate["pull-request"]),
            text(&candidate["verdict"]),
            text(&candidate["reason"]),
        ));
    }
    for note in record["plan"]["refs"]["notes"]
        .as_array()
        .into_iter()
        .flatten()
    {
        account.line(format!("  kept: {}", text(note)));
    }
    for group in record["applied"]["groups"].as_array().into_iter().flatten() {
        for action in group["actions"].as_array().into_iter().flatten() {
            account.line(format!(
                "    did: {} → {}",
                text(&action["description"]),
                text(&action["result"]["detail"]),
            ));
        }
    }
    for commit in record["applied"]["ledger-writes"]
        .as_array()
        .into_iter()
        .flatten()
    {
        account.line(format!("    ledger commit: {}", text(commit)));
    }
}

/// `status.json`: room under the cap, claims, the lease, running cooldowns and open pull
/// requests without a session.
fn report_status(account: &mut Account, record: &Value) {
    let claims: Vec<String> = record["claims"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|claim| text(&claim["candidate"]))
        .collect();
    let lease = match &record["recovery-lease"] {
        Value::Null => "free".to_string(),
        lease => format!("held by run {}", text(&lease["owner-run"])),
    };
    account.line(format!(
        "  room {} of {} ({} live, {} parked); claims: {}; recovery lease: {lease}",
        text(&record["room"]),
        text(&record["max-candidates"]),
        text(&record["live-sessions"]),
        text(&record["parked-sessions"]),
        if claims.is_empty() {
            "none".to_string()
        } else {
            claims.join(", ")
        },
    ));
    for cooldown in record["cooldowns"].as_array().into_iter().flatten() {
        let until = text(&cooldown["until"]);
        account.line(format!(
            "  cooldown {:<15} {:<21} holds the {:<9} until {}",
            text(&cooldown["candidate"]),
            text(&cooldown["outcome"]),
            text(&cooldown["holds"]),
            until.get(..16).unwrap_or(&until).replace('T', " "),
        ));
    }
    let pulls: Vec<String> = record["pull-requests-without-session"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|pull| {
            format!(
                "#{} {} ({})",
                text(&pull["number"]),
                text(&pull["candidate"]),
                text(&pull["labels"][0]),
            )
        })
        .collect();
    wrapped(account, "open pull requests without a session: ", &pulls);
}

/// `finish.json`: the outcome, the reason and each applied step.
fn report_finish(account: &mut Account, record: &Value) {
    let plan = &record["plan"];
    account.line(format!(
        "    klaud finish: {} — {} (ledger {})",
        text(&plan["outcome"]),
        text(&plan["reason"]),
        text(&record["ledger"]),
    ));
    let groups = record["applied"]["groups"].as_array().into_iter().flatten();
    for action in groups.flat_map(|group| group["actions"].as_array().into_iter().flatten()) {
        account.line(format!(
            "    did: {} → {}",
            text(&action["description"]),
            text(&action["result"]["detail"]),
        ));
    }
}

fn log_position(server: &FakeGitHubHandle) -> usize {
    server.request_log().len()
}

/// The simulated agent of one session: pushes the bot's commit to the candidate branch, opens
/// the draft pull request through the REST API, runs the smoke (and, for a validated result,
/// the sweep) on it and writes its outcome file. Returns the pull request's number and the
/// smoke run, when one was started.
fn agent(
    server: &FakeGitHubHandle,
    step: &Step,
    candidate: &str,
    ending: Option<&str>,
) -> (u64, Option<u64>) {
    let head = branch(candidate);
    server.with_state(|state| {
        state.push_commits(
            &head,
            vec![
                CommitSpec::by(BOT)
                    .message(&format!("klaud: tune {candidate}"))
                    .file(&format!("configs/{candidate}.yaml"), "max-batch: 256\n"),
            ],
        )
    });
    let number = open_draft(server, candidate);
    let smoke_conclusion = match ending {
        Some("validated") => Some("success"),
        Some("no-capacity") => None,
        _ => Some("failure"),
    };
    let smoke = smoke_conclusion.map(|conclusion| {
        let smoke = add_run(server, SMOKE, &head, "workflow_dispatch", "smoke");
        // The interrupted session's smoke run outlives its runner and ends later.
        if ending.is_some() {
            server.with_state(|state| state.set_run_status(smoke, "completed", Some(conclusion)));
        }
        smoke
    });
    if ending == Some("validated") {
        let sweep = add_run(server, SWEEP, &head, "pull_request", "sweep shard 1");
        server.with_state(|state| state.set_run_status(sweep, "completed", Some("success")));
    }
    if let Some(outcome) = ending {
        step.write(
            "outcome.json",
            &json!({"outcome": outcome, "pull-request": number}).to_string(),
        );
    }
    (number, smoke)
}

/// An in-progress run of the bot on `head`.
fn add_run(server: &FakeGitHubHandle, workflow: &str, head: &str, event: &str, job: &str) -> u64 {
    server.with_state(|state| {
        state.add_run(RunSpec {
            workflow: workflow.into(),
            head_branch: Some(head.into()),
            event: event.into(),
            status: "in_progress".into(),
            conclusion: None,
            actor: Some(BOT.into()),
            jobs: vec![JobSpec::in_progress(job)],
            ..RunSpec::default()
        })
    })
}

/// `POST /repos/{owner}/{repo}/pulls` with the bot's token, as the agent's `gh pr create --draft`.
fn open_draft(server: &FakeGitHubHandle, candidate: &str) -> u64 {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime for the agent's request");
    let url = format!("{}/repos/{REPOSITORY}/pulls", server.base_url());
    let body = json!({
        "title": format!("klaud: tune {candidate}"),
        "head": branch(candidate),
        "base": "main",
        "draft": true,
        "body": format!("Candidate `{candidate}`."),
    });
    let answer: Value = runtime.block_on(async {
        let response = super::fake_github::http_client()
            .post(url)
            .bearer_auth(BOT_TOKEN)
            .header("user-agent", "agent")
            .json(&body)
            .send()
            .await
            .expect("the fake GitHub answers");
        assert_eq!(response.status().as_u16(), 201, "the draft is opened");
        response.json().await.expect("a pull request")
    });
    answer["number"].as_u64().expect("a pull request number")
}

fn ledger(server: &FakeGitHubHandle) -> Ledger {
    world::stored_ledger(server)
}

fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

fn pull_line(server: &FakeGitHubHandle, number: u64) -> String {
    server.with_state(|state| {
        let pull = &state.pulls[&number];
        let state_text = match (pull.state, pull.draft) {
            (PullState::Open, true) => "open draft",
            (PullState::Open, false) => "open ready",
            (PullState::Closed, _) if pull.merged_at.is_some() => "merged",
            (PullState::Closed, _) => "closed",
        };
        let closed_by = pull
            .closed_by
            .as_deref()
            .map(|login| format!(" by {login}"))
            .unwrap_or_default();
        let branch_text = if state.branch_sha(&pull.head_ref).is_some() {
            "branch kept"
        } else {
            "branch deleted"
        };
        let labels = if pull.labels.is_empty() {
            "no label".to_string()
        } else {
            pull.labels.join(", ")
        };
        format!(
            "#{number:<2} {:<26} {:<26} {:<18} {branch_text}",
            pull.head_ref,
            format!("{state_text}{closed_by}"),
            labels,
        )
    })
}

fn ledger_lines(account: &mut Account, server: &FakeGitHubHandle) {
    let ledger = ledger(server);
    for session in &ledger.sessions {
        let state = match session.state {
            SessionState::Live => "live".to_string(),
            SessionState::Parked => "parked".to_string(),
            SessionState::Finished => format!(
                "finished {}",
                session
                    .outcome
                    .map(|outcome| outcome.to_string())
                    .unwrap_or_default()
            ),
        };
        account.line(format!(
            "  session {:<15} {:<30} parent {}",
            session.candidate, state, session.parent_run
        ));
    }
    let claims: Vec<&str> = ledger
        .claims
        .iter()
        .map(|claim| claim.candidate.as_str())
        .collect();
    let lease = ledger
        .recovery_lease
        .as_ref()
        .map(|lease| format!("held by run {}", lease.owner_run))
        .unwrap_or_else(|| "free".into());
    account.line(format!(
        "  claims: {}; recovery lease: {lease}",
        if claims.is_empty() {
            "none".to_string()
        } else {
            claims.join(", ")
        }
    ));
}

/// Runs the whole wave against a fresh fake GitHub; prints the account when `echo`.
pub fn run_wave(echo: bool) -> Wave {
    let mut account = Account {
        echo,
        lines: Vec::new(),
    };
    let (world, seeded) = seed();
    let server = world.start();
    account.line(format!(
        "klaud demo: one wave on {REPOSITORY}, served by a fake GitHub at {}",
        server.base_url()
    ));
    account.heading("The repository before the wave");
    for (number, note) in [
        (
            seeded.closed_by_maintainer,
            "its session is live, parent run ended",
        ),
        (seeded.abandoned, "no session; its smoke run is running"),
        (seeded.handed_off, "handed off to maintainers"),
        (seeded.maintainers_own, "a maintainer's own work"),
    ] {
        account.line(format!("  {}  {note}", pull_line(&server, number)));
    }
    ledger_lines(&mut account, &server);
    account.line(format!(
        "  planner run {} (this wave) in progress; cap {MAX_CANDIDATES} sessions",
        seeded.wave_run
    ));

    // 1. The wave's first step.
    account.heading(&format!(
        "1. klaud recover: the wave's first step reconciles and sweeps (planner run {})",
        seeded.wave_run
    ));
    let from = log_position(&server);
    let first = step(seeded.wave_run);
    run(&server, &first, "recover", &[]);
    let first_recover = first.result_file("recover.json");
    report_recover(&mut account, &first_recover);
    report_writes(&mut account, &server, from);

    // 2. Selection.
    account.heading(&format!(
        "2. klaud select: claims families for new sessions, under the cap (planner run {})",
        seeded.wave_run
    ));
    let from = log_position(&server);
    let select = step(seeded.wave_run);
    select.write("candidates.json", &candidates_file());
    let candidates_path = select.path("candidates.json");
    run(
        &server,
        &select,
        "select",
        &["--candidates", candidates_path.to_str().unwrap()],
    );
    let selection_file = select.result_file("selection.json");
    let mut selection = BTreeMap::new();
    for record in selection_file["candidates"].as_array().unwrap() {
        let id = text(&record["id"]);
        let decision = text(&record["decision"]);
        let why = match &record["reason"] {
            Value::Null => String::new(),
            reason => format!(": {}", text(&reason["message"])),
        };
        account.line(format!("  {id:<15} {decision}{why}"));
        selection.insert(id, decision);
    }
    let selected: Vec<String> =
        serde_json::from_str(&select.output("candidates")).expect("a candidates output");
    account.line(format!(
        "  outputs: selected={} candidates={}",
        select.output("selected"),
        select.output("candidates")
    ));
    report_writes(&mut account, &server, from);

    // 3. Sessions.
    account.heading("3. The sessions: a simulated agent per claimed candidate, then klaud finish");
    server.with_state(|state| {
        for id in &selected {
            state.add_job(
                seeded.wave_run,
                JobSpec::in_progress(&format!("Run candidate {id}")),
            );
        }
    });
    let mut agent_pulls = BTreeMap::new();
    let mut finished = BTreeMap::new();
    let mut smoke_runs = BTreeMap::new();
    for (candidate, ending) in AGENT_ENDINGS {
        if !selected.iter().any(|id| id == candidate) {
            continue;
        }
        let session = step(seeded.wave_run);
        let (number, smoke) = agent(&server, &session, candidate, ending);
        smoke_runs.insert(candidate, smoke);
        agent_pulls.insert(candidate.to_string(), number);
        let Some(outcome) = ending else {
            account.line(format!(
                "  {candidate:<15} agent opened draft #{number}; its runner died before finish ran"
            ));
            continue;
        };
        account.line(format!(
            "  {candidate:<15} agent opened draft #{number}, wrote outcome {outcome}"
        ));
        let from = log_position(&server);
        let outcome_path = session.path("outcome.json");
        run(
            &server,
            &session,
            "finish",
            &[
                "--candidate",
                candidate,
                "--outcome-file",
                outcome_path.to_str().unwrap(),
                "--agent-outcome",
                "success",
                "--cancel-wait",
                "0",
            ],
        );
        let record = session.result_file("finish.json");
        report_finish(&mut account, &record);
        report_writes(&mut account, &server, from);
        finished.insert(candidate.to_string(), record);
    }
    server.with_state(|state| state.set_run_status(seeded.wave_run, "completed", Some("failure")));
    account.line(format!(
        "  planner run {} ended (the job of {INTERRUPTED} failed)",
        seeded.wave_run
    ));

    // 4. Wake: the interrupted session's smoke run ends.
    let Some(smoke) = smoke_runs.get(INTERRUPTED).copied().flatten() else {
        panic!(
            "{INTERRUPTED} was not selected, so no session's smoke run can end:\n{}",
            account.lines.join("\n")
        );
    };
    server.with_state(|state| state.set_run_status(smoke, "completed", Some("failure")));
    account.heading(&format!(
        "4. klaud wake: smoke run {smoke} on {} ended",
        branch(INTERRUPTED)
    ));
    let from = log_position(&server);
    let wake_step = step(9_000_001);
    wake_step.write("event.json", &ended_run_event(&server, smoke).to_string());
    run(&server, &wake_step, "wake", &[]);
    let wake = wake_step.result_file("wake.json");
    let wake_dispatched = wake_step.output("dispatched") == "true";
    account.line(format!(
        "  {}: {}",
        text(&wake["decision"]),
        text(&wake["message"])
    ));
    account.line(format!(
        "  outputs: dispatched={} planner-run={}",
        wake_step.output("dispatched"),
        wake_step.output("planner-run")
    ));
    report_writes(&mut account, &server, from);
    let dispatched_run: u64 = wake_step
        .output("planner-run")
        .parse()
        .expect("the dispatched planner run");

    // 5. The recovery pass the wake dispatched.
    account.heading(&format!(
        "5. klaud recover: the recovery-only pass wake dispatched (planner run {dispatched_run})"
    ));
    let from = log_position(&server);
    let last = step(dispatched_run);
    run(&server, &last, "recover", &[]);
    let last_recover = last.result_file("recover.json");
    report_recover(&mut account, &last_recover);
    report_writes(&mut account, &server, from);

    // 6. What a maintainer sees.
    account.heading("6. klaud status: what a maintainer sees now (read-only)");
    let from = log_position(&server);
    let status_step = step(9_000_002);
    run(&server, &status_step, "status", &[]);
    let status = status_step.result_file("status.json");
    report_status(&mut account, &status);
    report_writes(&mut account, &server, from);

    // Final state.
    account.heading("The repository after the wave");
    let mut numbers: Vec<u64> = server.with_state(|state| state.pulls.keys().copied().collect());
    numbers.sort_unstable();
    for number in numbers {
        account.line(format!("  {}", pull_line(&server, number)));
    }
    ledger_lines(&mut account, &server);

    Wave {
        server,
        seeded,
        selection,
        selected,
        agent_pulls,
        finished,
        wake,
        wake_dispatched,
        first_recover,
        last_recover,
        lines: account.lines,
    }
}

/// The `workflow_run` event GitHub sends when run `id` ended, built from the fake's record.
fn ended_run_event(server: &FakeGitHubHandle, id: u64) -> Value {
    server.with_state(|state| {
        let run = &state.runs[&id];
        let path = state.workflows[&run.workflow_id].path.clone();
        let ended = Utc
            .timestamp_opt(run.updated_at.0, 0)
            .single()
            .expect("a valid time")
            .to_rfc3339_opts(SecondsFormat::Secs, true);
        json!({
            "action": "completed",
            "workflow_run": {
                "id": run.id,
                "name": run.name,
                "path": path,
                "head_branch": run.head_branch,
                "head_sha": run.head_sha,
                "event": run.event,
                "status": run.status,
                "conclusion": run.conclusion,
                "actor": {"login": run.actor},
                "triggering_actor": {"login": run.triggering_actor},
                "updated_at": ended,
                "repository": {"full_name": REPOSITORY},
                "head_repository": {"full_name": REPOSITORY},
            },
            "workflow": {"path": path},
            "repository": {"full_name": REPOSITORY, "default_branch": "main"},
            "sender": {"login": run.actor},
        })
    })
}
