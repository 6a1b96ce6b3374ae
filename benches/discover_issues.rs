//! The requests, wall time and peak RSS of `discover` with `discovery.source: issues` on a
//! repository of 10,000 open issues, 1,000 of them labelled `klaud` by 25 accounts (20 with write
//! permission, 5 read-only), and 50 open pull requests carrying the label too: the real binary as
//! a child process against the fake GitHub (which stays in this process), twice — nothing is
//! remembered between passes. The goal: ceil(1,000 / 100) GraphQL pages plus one permission read
//! per distinct label actor plus at most 2 (the default branch and its head), beside the reads
//! `select` makes too (the ledger, klaud's branches and open pull requests); peak RSS ≤ 50 MB.
//!
//! Run with `cargo bench --bench discover_issues`.

#![allow(clippy::disallowed_methods)] // a benchmark spawns the binary and passes PATH on

use klaud_fake_github as fake_github;
mod support;

use std::path::Path;

use fake_github::builder::IssueSpec;
use fake_github::state::Role;
use fake_github::{CommitSpec, FakeGitHub, FakeGitHubHandle, PullRequestSpec, RepoState};
use support::child::{self, ChildCost};

const BOT: &str = "klaud-bot";
const BOT_TOKEN: &str = "ghs_benchIssuesBotToken0123456789";
const OPEN_ISSUES: u64 = 10_000;
const LABELLED: u64 = 1_000;
const WRITERS: u64 = 20;
const READERS: u64 = 5;
const LABELLED_PULLS: u64 = 50;

/// The repository: `main` with one commit, the issues (every tenth labelled `klaud`, by one of
/// the 25 accounts in turn, most with a family label), and labelled pull requests.
fn repository() -> RepoState {
    let mut state = RepoState::new("acme", "bench").with_token(BOT_TOKEN, BOT);
    state.push_commits(
        "main",
        vec![CommitSpec::by("maintainer").file("README.md", "hello\n")],
    );
    for writer in 0..WRITERS {
        state.set_role(&format!("writer-{writer}"), Role::Write);
    }
    for reader in 0..READERS {
        state.set_role(&format!("reader-{reader}"), Role::Read);
    }
    for n in 0..OPEN_ISSUES {
        let labelled = n % (OPEN_ISSUES / LABELLED) == 0;
        let mut labels = vec![format!("area:{}", n % 40)];
        if n % 7 == 0 {
            labels.push("bug".into());
        }
        let number = state.add_issue(IssueSpec {
            title: format!("Issue {n}"),
            body: Some(format!("What issue {n} asks for, in a few sentences. ").repeat(8)),
            author: format!("user-{}", n % 300),
            labels,
            created_at: None,
        });
        if labelled {
            let order = n / (OPEN_ISSUES / LABELLED);
            let actor = match order % (WRITERS + READERS) {
                k if k < WRITERS => format!("writer-{k}"),
                k => format!("reader-{}", k - WRITERS),
            };
            state.label_issue(number, "klaud", &actor);
        }
    }
    for n in 0..LABELLED_PULLS {
        state.add_pull_request(PullRequestSpec {
            title: format!("Pull request {n}"),
            author: "contributor".into(),
            head_ref: format!("feature/{n}"),
            labels: vec!["klaud".into()],
            commits: vec![CommitSpec::by("contributor").file(&format!("f{n}.txt"), "x\n")],
            ..PullRequestSpec::default()
        });
    }
    state
}

/// One `discover` pass: its cost, and the requests it sent by kind.
fn pass(server: &FakeGitHubHandle, run: u64) -> (ChildCost, Counts) {
    server.clear_request_log();
    let work = tempfile::tempdir().expect("a temporary directory");
    let config = work.path().join("klaud.yml");
    std::fs::write(
        &config,
        format!("bot: {BOT}\nworkflows: {{smoke: null, sweep: null}}\ndiscovery:\n  source: issues\n  review-batch-size: 256\n"),
    )
    .expect("config written");
    let mut command = child::intermediary(Path::new(env!("CARGO_BIN_EXE_klaud")));
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GITHUB_API_URL", server.base_url())
        .env("GITHUB_GRAPHQL_URL", server.graphql_url())
        .env("GITHUB_REPOSITORY", "acme/bench")
        .env("GITHUB_RUN_ID", run.to_string())
        .env("GITHUB_RUN_ATTEMPT", "1")
        .env("GITHUB_TOKEN", BOT_TOKEN)
        .env("GITHUB_OUTPUT", work.path().join("github-output"))
        .env("GITHUB_STEP_SUMMARY", work.path().join("step-summary"))
        .arg("discover")
        .arg("--directory")
        .arg(work.path().join("out"))
        .arg("--config")
        .arg(&config);
    let cost = child::measure(&mut command);
    assert_eq!(cost.exit_code, 0, "klaud discover failed");
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(work.path().join("out/discovery.json")).expect("discovery.json"),
    )
    .expect("JSON");
    let log = server.request_log();
    let counts = Counts {
        issue_pages: log
            .iter()
            .filter(|r| r.body.contains("issues(first: 100"))
            .count(),
        older_events: log
            .iter()
            .filter(|r| r.body.contains("issue(number: $number)"))
            .count(),
        permissions: log
            .iter()
            .filter(|r| r.path.contains("/permission"))
            .count(),
        default_branch: log
            .iter()
            .filter(|r| {
                r.path.ends_with("/repos/acme/bench") || r.path.contains("/git/ref/heads/main")
            })
            .count(),
        total: log.len(),
        writes: log.iter().filter(|r| r.is_write()).count(),
        candidates: record["candidates"].as_array().map_or(0, Vec::len),
        unauthorized: record["issue-counts"]["unauthorized"].as_u64().unwrap_or(0),
        issues: record["issues"].as_array().map_or(0, Vec::len),
    };
    (cost, counts)
}

struct Counts {
    issue_pages: usize,
    older_events: usize,
    permissions: usize,
    default_branch: usize,
    total: usize,
    writes: usize,
    candidates: usize,
    unauthorized: u64,
    issues: usize,
}

fn main() {
    if child::serve_as_intermediary() {
        return;
    }
    let server = FakeGitHub::start(repository());
    println!(
        "discover, discovery.source: issues: {OPEN_ISSUES} open issues, {LABELLED} labelled klaud by {} accounts ({WRITERS} writers, {READERS} readers), {LABELLED_PULLS} labelled pull requests; the real binary against the fake GitHub, 0 ms latency",
        WRITERS + READERS
    );
    println!(
        "| pass | issues read | GraphQL issue pages | older-event reads | permission reads | default branch and head | all requests | writes | candidates | unauthorized | wall | peak RSS |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (index, run) in [(1, 70_000_001), (2, 70_000_002)] {
        let (cost, counts) = pass(&server, run);
        println!(
            "| {index} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} s | {:.1} MB |",
            counts.issues,
            counts.issue_pages,
            counts.older_events,
            counts.permissions,
            counts.default_branch,
            counts.total,
            counts.writes,
            counts.candidates,
            counts.unauthorized,
            cost.wall.as_secs_f64(),
            cost.peak_rss_kib as f64 / 1024.0
        );
        let goal = LABELLED.div_ceil(100) as usize + (WRITERS + READERS) as usize + 2;
        let issue_reads =
            counts.issue_pages + counts.older_events + counts.permissions + counts.default_branch;
        println!(
            "  goal: issue pages + permission reads + at most 2 = {issue_reads} (goal {goal}) {}; peak RSS {:.1} MB (goal 50) {}",
            if issue_reads <= goal {
                "met"
            } else {
                "NOT met"
            },
            cost.peak_rss_kib as f64 / 1024.0,
            if cost.peak_rss_kib <= 50 * 1024 {
                "met"
            } else {
                "NOT met"
            }
        );
    }
}
