//! Requests and wall time to load the standard scenario (`BENCH-SCENARIO.md`) through klaud's
//! GitHub client, at 0 ms and 100 ms of server latency: the reads a recovery pass needs (the
//! ledger, open pull requests, candidate and lock refs, active runs, jobs of live parents), and
//! for comparison the 30 days of planner history that a design keeping cooldowns in run
//! artifacts would have to list.
//!
//! Run with `cargo bench --bench github_seam`.

use klaud_fake_github as fake_github;
mod support;

use support::{standard_scenario, time};

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use fake_github::scenario;
use fake_github::{FakeGitHubHandle, Timestamp};
use futures::future::join_all;
use klaud::adapters::github::actions::RunFilter;
use klaud::adapters::github::budget::RequestCounts;
use klaud::adapters::github::{GitHubClient, GitHubSettings};
use klaud::adapters::ledger_store::LedgerStore;

const SEED: u64 = 42;
const NOW: Timestamp = Timestamp(1_796_040_000); // 2026-11-30T12:00:00Z

fn start(latency_ms: u64) -> FakeGitHubHandle {
    standard_scenario(SEED, NOW, latency_ms).0
}

fn client_for(server: &FakeGitHubHandle) -> GitHubClient {
    let settings = GitHubSettings::new(
        &server.base_url(),
        &server.graphql_url(),
        scenario::BOT_TOKEN,
        "acme/bench",
    );
    GitHubClient::new(&settings).expect("valid settings")
}

fn active(workflow: &str, status: &str) -> RunFilter {
    RunFilter {
        status: Some(status.into()),
        ..RunFilter::workflow(workflow)
    }
}

/// What a recovery pass reads, independent reads in parallel.
async fn load_recovery_facts(client: &GitHubClient) -> (usize, usize, usize, usize) {
    let store = LedgerStore::new(client, "klaud/state");
    let runs = [
        active("klaud-plan.yml", "in_progress"),
        active("klaud-plan.yml", "queued"),
        active("e2e-tests.yml", "in_progress"),
        active("e2e-tests.yml", "queued"),
        active("run-sweep.yml", "in_progress"),
        active("run-sweep.yml", "queued"),
    ];
    let (ledger, (_, pulls), refs, listings) = tokio::join!(
        store.load(),
        client.open_pull_requests_under(&["klaud/auto-"]),
        client.branches_starting_with("klaud/"),
        join_all(runs.iter().map(|filter| client.workflow_runs(filter))),
    );
    let ledger = ledger.expect("ledger").ledger;
    let active_runs: Vec<_> = listings
        .into_iter()
        .flat_map(|listing| listing.expect("listing").into_whole().expect("complete"))
        .collect();
    let live_parents: BTreeSet<u64> = ledger.live_sessions().map(|s| s.parent_run).collect();
    let parents_running: Vec<u64> = active_runs
        .iter()
        .filter(|run| live_parents.contains(&run.id))
        .map(|run| run.id)
        .collect();
    let jobs = join_all(parents_running.iter().map(|id| client.run_jobs(*id))).await;
    let job_count = jobs.into_iter().map(|jobs| jobs.expect("jobs").len()).sum();
    (
        pulls.into_whole().expect("pulls").len(),
        refs.expect("refs").len(),
        active_runs.len(),
        job_count,
    )
}

async fn planner_history(client: &GitHubClient) -> usize {
    let filter = RunFilter {
        status: Some("completed".into()),
        created: Some((time(NOW.minus(30 * 86_400)), time(NOW))),
        ..RunFilter::workflow("klaud-plan.yml")
    };
    client
        .workflow_runs(&filter)
        .await
        .expect("listing")
        .into_whole()
        .expect("complete")
        .len()
}

fn row(name: &str, latency_ms: u64, counts: RequestCounts, wall: Duration, detail: &str) {
    println!(
        "| {name} | {latency_ms} ms | {} | {} | {:.2} s | {detail} |",
        counts.reads,
        counts.writes,
        wall.as_secs_f64()
    );
}

#[tokio::main]
async fn main() {
    println!("standard scenario, seed {SEED}; fake GitHub on 127.0.0.1");
    println!("| load | latency | reads | writes | wall | what came back |");
    println!("|---|---|---|---|---|---|");
    for latency_ms in [0, 100] {
        let server = start(latency_ms);
        let client = client_for(&server);
        let started = Instant::now();
        let (pulls, refs, runs, jobs) = load_recovery_facts(&client).await;
        row(
            "recovery facts",
            latency_ms,
            client.request_counts(),
            started.elapsed(),
            &format!("{pulls} open PRs, {refs} klaud/ refs, {runs} active runs, {jobs} jobs"),
        );

        let client = client_for(&server);
        let started = Instant::now();
        let history = planner_history(&client).await;
        row(
            "30 days of planner history",
            latency_ms,
            client.request_counts(),
            started.elapsed(),
            &format!("{history} runs, complete"),
        );
    }
}
