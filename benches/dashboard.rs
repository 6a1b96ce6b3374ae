//! The requests and wall time of the dashboard (the real binary against the fake GitHub):
//! `status --dashboard` creating the issue, finding nothing new, and rewriting it after the
//! ledger changed; `recover --dashboard` acting on ticks made by two accounts (one that may
//! steer, one that may not), with the share of its requests that the dashboard adds.
//!
//! Run with `cargo bench --bench dashboard`.

#![allow(clippy::disallowed_methods)] // a benchmark spawns the binary and reads no configuration
#![allow(dead_code)] // the test support is shared with the tests

#[path = "../tests/dashboard_support/mod.rs"]
mod dashboard_support;
use klaud_fake_github as fake_github;
#[path = "../tests/recover_support/mod.rs"]
mod recover_support;

use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use fake_github::{FakeGitHubHandle, LoggedRequest, MAINTAINER_ANN, READER_ROB};
use klaud::core::ledger::SessionState;
use klaud::core::outcome::Outcome;
use recover_support::{BOT, Pass, World};

const LABEL: &str = "klaud-dashboard";

/// One run of `klaud <mode> --dashboard`: (reads, writes, dashboard reads, dashboard writes,
/// wall time).
struct Figures {
    reads: usize,
    writes: usize,
    dashboard_reads: usize,
    dashboard_writes: usize,
    wall: Duration,
}

fn is_dashboards(request: &LoggedRequest) -> bool {
    request.path.contains("/issues?")
        || request.path.ends_with("/issues")
        || request.path.contains("/collaborators/")
        || (request.path.contains("/issues/")
            && !request.path.contains("/comments")
            && !request.path.contains("/labels"))
        || (request.path == "/graphql" && request.body.contains("userContentEdits"))
}

fn run(server: &FakeGitHubHandle, run_id: u64, mode: &str) -> Figures {
    let before = server.request_log().len();
    let pass = Pass::new(run_id);
    let mut command = pass.mode_command(server, mode);
    command.arg("--dashboard");
    let started = Instant::now();
    let output = command.output().expect("klaud runs");
    let wall = started.elapsed();
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let log = server.request_log();
    let new = &log[before..];
    let writes = new.iter().filter(|request| request.is_write()).count();
    let dashboard: Vec<&LoggedRequest> = new.iter().filter(|r| is_dashboards(r)).collect();
    let dashboard_writes = dashboard
        .iter()
        .filter(|request| request.is_write())
        .count();
    Figures {
        reads: new.len() - writes,
        writes,
        dashboard_reads: dashboard.len() - dashboard_writes,
        dashboard_writes,
        wall,
    }
}

fn print(what: &str, figures: &Figures) {
    println!(
        "{what:<58} {:>3} reads {:>3} writes (dashboard: {} reads, {} writes) {:>6.1} ms",
        figures.reads,
        figures.writes,
        figures.dashboard_reads,
        figures.dashboard_writes,
        figures.wall.as_secs_f64() * 1000.0
    );
}

fn main() {
    let mut world = World::new();
    for person in [MAINTAINER_ANN, READER_ROB] {
        world.state.add_token(person.token, person.login);
        world
            .state
            .set_role(person.login, person.role.expect("a role"));
    }
    for (candidate, hours) in [("c", 2), ("d", 3)] {
        let parent = world.finished_planner(hours + 1, &[candidate]);
        world.session(candidate, SessionState::Finished, parent, None);
        let finished_at = Utc
            .timestamp_opt(world.ago(hours * 3600).0, 0)
            .single()
            .unwrap();
        let session = world.ledger.sessions.last_mut().unwrap();
        session.outcome = Some(Outcome::Failed);
        session.finished_at = Some(finished_at);
    }
    let server = world.start();

    println!("klaud dashboard requests (fake GitHub on 127.0.0.1, the real binary)");
    print(
        "status --dashboard, first pass (creates the issue)",
        &run(&server, 74_000_000_001, "status"),
    );
    print(
        "status --dashboard, nothing new",
        &run(&server, 74_000_000_002, "status"),
    );
    let (number, _) = dashboard_support::dashboard(&server, BOT, LABEL);
    dashboard_support::toggle(&server, MAINTAINER_ANN, number, "klaud:retry-now:c");
    dashboard_support::toggle(&server, READER_ROB, number, "klaud:retry-now:d");
    print(
        "status --dashboard, two ticks waiting (kept, nothing new)",
        &run(&server, 74_000_000_003, "status"),
    );
    print(
        "recover --dashboard, ticks by two accounts",
        &run(&server, 74_000_000_004, "recover"),
    );
    print(
        "recover --dashboard, nothing new",
        &run(&server, 74_000_000_005, "recover"),
    );
    print(
        "status --dashboard, nothing new after the rewrite",
        &run(&server, 74_000_000_006, "status"),
    );
    // The ledger changes behind the dashboard (a session finishes elsewhere): status rewrites.
    server.with_state(|state| {
        let text = state
            .read_file(recover_support::STATE_BRANCH, recover_support::LEDGER_FILE)
            .unwrap();
        let mut ledger = klaud::core::ledger::Ledger::from_json(&text).unwrap();
        ledger.sessions.retain(|session| session.candidate != "d");
        state.put_file(
            recover_support::STATE_BRANCH,
            recover_support::LEDGER_FILE,
            &ledger.to_json(),
        );
    });
    print(
        "status --dashboard, the ledger changed",
        &run(&server, 74_000_000_007, "status"),
    );
}
