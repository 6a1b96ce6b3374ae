//! A fake GitHub for integration tests, end-to-end runs and benchmarks: one stateful repository
//! served over HTTP on 127.0.0.1 with GitHub's REST v3 and GraphQL semantics (pagination, the
//! 1000-result cap of filtered run listings, 409/422 conflicts, rate-limit headers), seeded fault
//! injection and a request log. Its answers are held to GitHub's OpenAPI description and GraphQL
//! schema, and to real sessions of api.github.com replayed against it
//! (`tests/fake_github_replay.rs`).
//!
//! It is the crate `klaud-fake-github` (a dev-dependency of klaud, compiled once for every test
//! binary): a test file names it with `use klaud_fake_github as fake_github;`, seeds a
//! [`RepoState`] with its builder methods, and starts it with [`FakeGitHub::start`]. The same
//! server runs standalone as `cargo run --example fake-github -- --port 0 --state scenario.json`.

pub mod blobs;
pub mod builder;
pub mod clock;
pub mod errors;
pub mod faults;
pub mod git;
pub mod graphql;
pub mod pagination;
pub mod prng;
pub mod render;
pub mod routes_actions;
pub mod routes_admin;
pub mod routes_contents;
pub mod routes_git;
pub mod routes_graphql;
pub mod routes_issues;
pub mod routes_labels;
pub mod routes_pulls;
pub mod routes_repository;
pub mod routes_statuses;
pub mod scenario;
pub mod scenario_big;
pub mod scenario_counts;
pub mod scenario_ledger;
pub mod server;
pub mod state;

pub use builder::{
    ClosedSpec, CommitSpec, IssueSpec, JobSpec, MAINTAINER_ANN, OUTSIDER_OLA, Person,
    PullRequestSpec, READER_ROB, RunSpec,
};
pub use clock::Timestamp;
pub use faults::{FaultConfig, FaultRule, FaultTiming, RateLimitConfig};
pub use server::{FakeGitHub, FakeGitHubHandle, InjectedFault, LoggedRequest, RequestCounts};
pub use state::{
    BodyEdit, Commit, CommitStatus, DeletedRef, Dispatch, GitIdentity, Issue, IssueComment, Job,
    Label, Lock, Mergeability, Organization, PullRequest, PullState, RepoState, Role, Workflow,
    WorkflowRun,
};

/// An HTTP client for a test to talk to the fake directly. klaud builds reqwest without a default
/// crypto provider (its feed reader brings its own, `src/adapters/feeds.rs`), and a client
/// panics without one even for plain http: the ring provider klaud uses is installed first.
pub fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// `POST /repos/{owner}/{repo}/pulls` of `body` with `token`, as a client such as `gh pr create`
/// sends it; the pull request's number. Panics unless the fake answers 201.
pub async fn create_pull_request_through_rest(
    server: &FakeGitHubHandle,
    repository: &str,
    token: &str,
    body: &serde_json::Value,
) -> u64 {
    let response = http_client()
        .post(format!("{}/repos/{repository}/pulls", server.base_url()))
        .bearer_auth(token)
        .header("user-agent", "agent")
        .json(body)
        .send()
        .await
        .expect("the fake GitHub answers");
    assert_eq!(
        response.status().as_u16(),
        201,
        "the pull request is opened"
    );
    let answer: serde_json::Value = response.json().await.expect("a pull request");
    answer["number"].as_u64().expect("a pull request number")
}
