//! Recovery passes under injected faults (contract §5, §7): 10% of requests answered 502/503,
//! secondary rate limits, writes that take effect but answer 502, and one listing cut off per
//! pass (its requests keep failing). Whatever happens, nothing a maintainer touched is changed,
//! nothing protected is deleted, and the ledger stays consistent after every pass: the invariant
//! checker (`invariants/`) compares the states before and after each pass, and this world's own
//! protected objects (live sessions, the reference bug's candidate, active sweeps) keep their
//! fields, runs and claims.
//!
//! The passes run in process (the same `run_pass` the binary runs) with short retry delays, so a
//! hundred of them stay fast; the normal suite runs 20 seeds, the ignored test all 100.

#![allow(clippy::disallowed_methods)]

use klaud_fake_github as fake_github;
#[path = "in_process_support/mod.rs"]
mod in_process_support;
#[path = "invariants/mod.rs"]
mod invariants;
#[path = "recover_support/mod.rs"]
mod recover_support;

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::Utc;
use fake_github::{
    FakeGitHubHandle, FaultConfig, FaultRule, PullRequestSpec, PullState, RepoState,
};
use klaud::adapters::github::transport::RetryPolicy;
use klaud::core::ledger::{Ledger, SessionState};
use klaud::shell::config::Config;
use klaud::shell::github::GitHubConnection;
use klaud::shell::modes::recover::{INSPECTIONS_PER_PASS, PassSettings, run_pass};
use recover_support::*;

const OWN_RUN: u64 = 55_000_000_001;
const CAP: u32 = 5;

/// What must not change, whatever the faults.
struct Protected {
    /// Pull requests a maintainer touched, handed off, ready, needing inspection, or live.
    pulls: Vec<u64>,
    /// Branches that must stay where they are.
    branches: Vec<String>,
    /// Runs that must not be cancelled.
    runs: Vec<u64>,
    /// Candidates whose claim must stay.
    claimed: Vec<String>,
    /// The abandoned drafts' numbers.
    abandoned: Vec<u64>,
}

fn world() -> (World, Protected) {
    let mut world = World::new();
    let running = world.running_planner(&["l0", "l1"]);
    let ended = world.finished_planner(3, &["r0", "i0"]);
    let old = world.finished_planner(30, &["c0", "b0", "p0"]);
    let mut protected = Protected {
        pulls: Vec::new(),
        branches: Vec::new(),
        runs: Vec::new(),
        claimed: Vec::new(),
        abandoned: Vec::new(),
    };
    // Live sessions.
    for live in ["l0", "l1"] {
        let number = world.bot_draft(live);
        world.session(live, SessionState::Live, running, Some(number));
        world.claim(live, running);
        protected.pulls.push(number);
        protected.branches.push(branch(live));
        protected.runs.push(world.smoke(live, BOT, true));
        protected.claimed.push(live.into());
    }
    // A parked session to resume, a session to reconcile, abandoned drafts to sweep.
    let commits = vec![world.bot_commit("p0", 29)];
    let parked = world.bot_pull("p0", true, commits, &["klaud-parked"]);
    world.session("p0", SessionState::Parked, old, Some(parked));
    let reconciled = world.bot_draft("r0");
    world.session("r0", SessionState::Live, ended, Some(reconciled));
    world.claim("r0", ended);
    let mut abandoned_numbers = Vec::new();
    for abandoned in ["g0", "g1"] {
        abandoned_numbers.push(world.bot_draft(abandoned));
        world.smoke(abandoned, BOT, true);
    }
    protected.abandoned = abandoned_numbers;
    let closed_by_bot = world.closed_bot_pull("b0", BOT, true);
    world.session("b0", SessionState::Finished, old, Some(closed_by_bot));
    // Protected: a maintainer's head, a maintainer's commit below, handed off, ready, a
    // maintainer's sweep after the parent ended (the reference bug), an active sweep, a
    // pull request a maintainer closed.
    let commits = vec![world.bot_commit("m0", 9), world.maintainer_commit("m0", 8)];
    protected
        .pulls
        .push(world.bot_pull("m0", true, commits, &["klaud-in-progress"]));
    let commits = vec![world.maintainer_commit("m1", 9), world.bot_commit("m1", 8)];
    protected
        .pulls
        .push(world.bot_pull("m1", true, commits, &["klaud-in-progress"]));
    let commits = vec![world.bot_commit("h0", 9)];
    protected.pulls.push(world.bot_pull(
        "h0",
        true,
        commits,
        &["klaud-in-progress", "klaud-handoff"],
    ));
    let commits = vec![world.bot_commit("v0", 9)];
    protected
        .pulls
        .push(world.bot_pull("v0", false, commits, &["klaud-in-progress"]));
    let inspected = world.bot_draft("i0");
    world.session("i0", SessionState::Live, ended, Some(inspected));
    world.claim("i0", ended);
    world.sweep("i0", MAINTAINER, "completed", Some("failure"), 60);
    protected.pulls.push(inspected);
    protected.claimed.push("i0".into());
    let swept_by_sweep = world.bot_draft("s0");
    world.sweep("s0", BOT, "in_progress", None, 10);
    protected.pulls.push(swept_by_sweep);
    let closed_by_maintainer = world.closed_bot_pull("c0", MAINTAINER, true);
    world.session(
        "c0",
        SessionState::Finished,
        old,
        Some(closed_by_maintainer),
    );
    for candidate in ["m0", "m1", "h0", "v0", "i0", "s0", "c0"] {
        protected.branches.push(branch(candidate));
    }
    for candidate in ["m0", "m1", "h0", "i0"] {
        protected.runs.push(world.smoke(candidate, BOT, true));
    }
    // Legacy lock refs of a running and of finished parents.
    for index in 0..3 {
        let name = format!("klaud/recovery-{running}-l{index}");
        world.lock_ref(&name);
        protected.branches.push(name);
        world.lock_ref(&format!("klaud/recovery-{old}-x{index}"));
    }
    // Enough people's pull requests for the open pull requests to take two pages.
    for index in 0..105 {
        world.state.add_pull_request(PullRequestSpec {
            title: format!("change {index}"),
            author: "alice-dev".into(),
            head_ref: format!("feature/{index}"),
            ..PullRequestSpec::default()
        });
    }
    (world, protected)
}

/// The listing cut off in this pass: its requests fail on every retry. `abandoned` is the
/// number of an abandoned draft, whose commits are the listing cut off in one of the cases.
fn cut_off_listing(seed: u64, abandoned: u64) -> (FaultRule, String) {
    let rule = |path: &str, nth, times| FaultRule::nth("GET", path, nth, 502).times(times);
    let (rule, what) = match seed % 6 {
        0 => (
            rule("/repos/acme/bench/pulls", 2, 50),
            "the second page of open pull requests",
        ),
        1 => (
            rule("/repos/acme/bench/actions/runs", 2, 50),
            "the in-progress runs",
        ),
        2 => (
            rule("/repos/acme/bench/git/matching-refs/*", 1, 50),
            "the branch listing",
        ),
        3 => (
            rule("/repos/acme/bench/actions/runs/*/jobs", 1, 50),
            "the planner's jobs",
        ),
        4 => (
            rule("/repos/acme/bench/actions/workflows/*/runs", 1, 4),
            "the first sweep listing",
        ),
        _ => (
            rule(
                &format!("/repos/acme/bench/pulls/{abandoned}/commits"),
                1,
                50,
            ),
            "an abandoned draft's commits",
        ),
    };
    (rule, what.to_string())
}

fn connection(server: &FakeGitHubHandle) -> GitHubConnection {
    in_process_support::connection_retrying(
        server,
        RetryPolicy {
            request_timeout: Duration::from_secs(10),
            ..in_process_support::fast_retries()
        },
    )
}

/// A protected object as it was: pull request fields, branch shas, run statuses.
#[derive(Debug, PartialEq)]
struct Fingerprint {
    pulls: BTreeMap<u64, (PullState, bool, Vec<String>, String)>,
    branches: BTreeMap<String, Option<String>>,
    runs: BTreeMap<u64, String>,
}

fn fingerprint(state: &RepoState, protected: &Protected) -> Fingerprint {
    Fingerprint {
        pulls: protected
            .pulls
            .iter()
            .map(|number| {
                let pull = &state.pulls[number];
                (
                    *number,
                    (
                        pull.state,
                        pull.draft,
                        pull.labels.clone(),
                        pull.head_sha.clone(),
                    ),
                )
            })
            .collect(),
        branches: protected
            .branches
            .iter()
            .map(|name| (name.clone(), state.branch_sha(name).map(str::to_string)))
            .collect(),
        runs: protected
            .runs
            .iter()
            .map(|id| (*id, state.runs[id].status.clone()))
            .collect(),
    }
}

/// What this world promises beyond the invariants: the claims of live and inspected candidates
/// stay, and the candidate needing inspection stays live.
fn check_ledger(ledger: &Ledger, protected: &Protected, seed: u64) {
    for candidate in &protected.claimed {
        assert!(
            ledger
                .claims
                .iter()
                .any(|claim| &claim.candidate == candidate),
            "seed {seed}: the claim of {candidate} was released"
        );
    }
    let inspected = ledger
        .sessions
        .iter()
        .find(|s| s.candidate == "i0")
        .unwrap();
    assert_eq!(
        inspected.state,
        SessionState::Live,
        "seed {seed}: i0 needs inspection"
    );
}

async fn one_pass(seed: u64) -> String {
    let (world, protected) = world();
    let server = world.start();
    let (cut_off, what) = cut_off_listing(seed, protected.abandoned[1]);
    server.set_faults(FaultConfig {
        seed,
        server_error_rate: 0.10,
        secondary_rate_limit_rate: 0.02,
        secondary_rate_limit_status: if seed.is_multiple_of(2) { 403 } else { 429 },
        retry_after_seconds: 0,
        server_error_after_write_rate: 0.05,
        rules: vec![cut_off],
        ..FaultConfig::default()
    });
    let before = server.with_state(|state| fingerprint(state, &protected));
    let before_state = server.state();
    let connection = connection(&server);
    let policy = Config {
        bot: BOT.into(),
        ..Config::default()
    }
    .policy(CAP, 1.0);
    let settings = PassSettings {
        own_run: OWN_RUN,
        now: Utc::now(),
        inspections: INSPECTIONS_PER_PASS,
        dashboard_url: None,
    };
    let result = run_pass(&connection, &policy, &settings).await;

    let after = server.with_state(|state| fingerprint(state, &protected));
    invariants::assert_none(
        &format!("seed {seed} ({what} cut off)"),
        &invariants::check(
            &invariants::Rules::new(BOT, CAP as usize),
            &before_state,
            &server.state(),
        ),
    );
    assert_eq!(
        before, after,
        "seed {seed} ({what} cut off): a protected object changed"
    );
    for number in &protected.pulls {
        for fragment in [format!("/pulls/{number}"), format!("/issues/{number}/")] {
            assert!(
                writes_to(&server, &fragment).is_empty(),
                "seed {seed}: a write to {fragment}: {:?}",
                writes_to(&server, &fragment)
            );
        }
    }
    for id in &protected.runs {
        assert!(
            writes_to(&server, &format!("/runs/{id}/cancel")).is_empty(),
            "seed {seed}"
        );
    }
    let ledger = stored_ledger(&server);
    check_ledger(&ledger, &protected, seed);
    match &result {
        Ok(report) if report.applied.final_write_error.is_none() => {
            assert_eq!(
                ledger.recovery_lease, None,
                "seed {seed}: the lease is released"
            );
        }
        Ok(_) => {
            let lease = ledger.recovery_lease.as_ref().map(|lease| lease.owner_run);
            assert!(lease.is_none() || lease == Some(OWN_RUN), "seed {seed}");
        }
        Err(_) => assert!(
            ledger.recovery_lease.is_none(),
            "seed {seed}: a pass whose first write failed took nothing"
        ),
    }
    let outcome = match result {
        Ok(report) => format!(
            "ok: swept {:?}, reconciled {:?}, resumed {:?}, skipped {}",
            report.candidates_with(klaud::core::recover::Verdict::Swept),
            report.candidates_with(klaud::core::recover::Verdict::Reconciled),
            report.applied.resumed,
            report.plan.skipped.len()
        ),
        Err(error) => format!("failed: {error}"),
    };
    format!("seed {seed} ({what} cut off): {outcome}")
}

async fn passes(seeds: std::ops::Range<u64>) {
    let mut summaries = Vec::new();
    for seed in seeds {
        summaries.push(one_pass(seed).await);
    }
    for line in &summaries {
        println!("{line}");
    }
    assert!(
        summaries.iter().any(|line| line.contains("\"g0\"")),
        "some passes do their work despite the faults"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_seeded_passes_under_faults_touch_nothing_protected() {
    passes(0..20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "100 seeded passes; run with --ignored"]
async fn a_hundred_seeded_passes_under_faults_touch_nothing_protected() {
    passes(0..100).await;
}
