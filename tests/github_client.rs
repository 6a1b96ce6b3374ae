//! klaud's GitHub client against the fake GitHub: pagination, complete run listings behind the
//! 1000-result cap, retries and rate limits, re-checked POSTs, the request budget, GraphQL
//! errors, guarded ref deletion, and that the token never shows.

use klaud_fake_github as fake_github;

use std::time::{Duration, Instant};

use fake_github::{
    ClosedSpec, CommitSpec, FakeGitHub, FakeGitHubHandle, FaultConfig, FaultRule, PullRequestSpec,
    RateLimitConfig, RepoState, RunSpec, Timestamp,
};
use klaud::adapters::github::actions::{RunCancel, RunFilter};
use klaud::adapters::github::error::GitHubError;
use klaud::adapters::github::git::BranchDeletion;
use klaud::adapters::github::pulls::CommentPosted;
use klaud::adapters::github::transport::RetryPolicy;
use klaud::adapters::github::{GitHubClient, GitHubSettings};

const TOKEN: &str = "ghs_klaudTestToken0123456789abcdef";
const BOT: &str = "klaud-bot";
const NOW: Timestamp = Timestamp(1_767_225_600); // 2026-01-01T00:00:00Z

fn repository() -> RepoState {
    RepoState::new("acme", "bench")
        .with_now(NOW)
        .with_token(TOKEN, BOT)
}

fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        attempts: 3,
        base_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(50),
        secondary_wait_cap: Duration::from_secs(10),
        secondary_default_wait: Duration::from_millis(100),
        request_timeout: Duration::from_secs(10),
    }
}

fn client_for(server: &FakeGitHubHandle) -> GitHubClient {
    let mut settings = GitHubSettings::new(
        &server.base_url(),
        &server.graphql_url(),
        TOKEN,
        "acme/bench",
    );
    settings.retry = quick_retries();
    GitHubClient::new(&settings).expect("valid settings")
}

fn bot_draft(branch: &str) -> PullRequestSpec {
    PullRequestSpec {
        title: format!("klaud: {branch}"),
        author: BOT.to_string(),
        head_ref: branch.to_string(),
        draft: true,
        commits: vec![CommitSpec::by(BOT).file("configs/x.yaml", "a: 1\n")],
        ..PullRequestSpec::default()
    }
}

fn planner_run(minutes_ago: i64, status: &str) -> RunSpec {
    RunSpec {
        workflow: "klaud-plan.yml".to_string(),
        actor: Some(BOT.to_string()),
        event: "schedule".to_string(),
        status: status.to_string(),
        conclusion: (status == "completed").then(|| "success".to_string()),
        created_at: Some(NOW.minus(minutes_ago * 60)),
        ..RunSpec::default()
    }
}

fn sent(server: &FakeGitHubHandle, method: &str, path_fragment: &str) -> usize {
    server
        .request_log()
        .iter()
        .filter(|request| request.method == method && request.path.contains(path_fragment))
        .count()
}

#[tokio::test]
async fn listings_follow_link_headers_to_the_last_page() {
    let mut state = repository();
    for _ in 0..250 {
        state.add_pull_request(PullRequestSpec {
            author: "alice".to_string(),
            head_ref: "feature/long-lived".to_string(),
            ..PullRequestSpec::default()
        });
    }
    let server = FakeGitHub::start(state);
    let client = client_for(&server);

    let pulls = client
        .pull_requests_for_branch("feature/long-lived")
        .await
        .unwrap();

    assert_eq!(pulls.len(), 250);
    assert_eq!(client.request_counts().reads, 3, "100 per page");
}

#[tokio::test]
async fn a_listing_of_2500_runs_behind_the_cap_is_returned_complete() {
    let mut state = repository();
    for index in 0..2_500 {
        state.add_run(planner_run(index * 10, "completed"));
    }
    let server = FakeGitHub::start(state);
    let client = client_for(&server);
    let filter = RunFilter {
        actor: Some(BOT.to_string()),
        ..RunFilter::workflow("klaud-plan.yml")
    };

    let listing = client.workflow_runs(&filter).await.unwrap();

    let runs = listing.into_whole().expect("window splitting completes it");
    assert_eq!(runs.len(), 2_500);
    let mut ids: Vec<u64> = runs.iter().map(|run| run.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 2_500, "no run twice");
}

#[tokio::test]
async fn a_listing_that_cannot_be_completed_says_so_instead_of_coming_back_short() {
    let mut state = repository();
    for _ in 0..1_200 {
        // All created in the same second: no window split can bring them under the cap.
        state.add_run(planner_run(5, "completed"));
    }
    let server = FakeGitHub::start(state);
    let client = client_for(&server);
    let filter = RunFilter {
        status: Some("completed".into()),
        ..RunFilter::workflow("klaud-plan.yml")
    };

    match client.workflow_runs(&filter).await.unwrap().into_whole() {
        Err(reason) => {
            assert!(reason.reason.contains("same second"), "{reason}")
        }
        Ok(runs) => {
            panic!("a listing of {} runs claimed to be complete", runs.len())
        }
    }
}

#[tokio::test]
async fn a_503_is_retried_and_the_retry_is_counted() {
    let server = FakeGitHub::start(repository());
    server.set_faults(FaultConfig::rules(vec![FaultRule::nth(
        "GET",
        "/repos/acme/bench",
        1,
        503,
    )]));
    let client = client_for(&server);

    let repository = client.repository_info().await.unwrap();

    assert_eq!(repository.default_branch, "main");
    let counts = client.request_counts();
    assert_eq!((counts.reads, counts.retries), (2, 1));
}

#[tokio::test]
async fn a_read_failing_every_time_reports_the_last_error_after_the_last_attempt() {
    let server = FakeGitHub::start(repository());
    server.set_faults(FaultConfig {
        server_error_rate: 1.0,
        ..FaultConfig::default()
    });
    let client = client_for(&server);

    let error = client.repository_info().await.unwrap_err();

    assert!(
        matches!(error, GitHubError::Unavailable { attempts: 3, .. }),
        "{error:?}"
    );
    assert_eq!(sent(&server, "GET", "/repos/acme/bench"), 3);
}

#[tokio::test]
async fn a_secondary_limit_with_retry_after_2_waits_about_two_seconds() {
    let server = FakeGitHub::start(repository());
    server.set_faults(FaultConfig::rules(vec![
        FaultRule::nth("GET", "/repos/acme/bench", 1, 403).retry_after(2),
    ]));
    let client = client_for(&server);

    let started = Instant::now();
    client.repository_info().await.unwrap();
    let waited = started.elapsed();

    assert!(
        waited >= Duration::from_millis(1_950) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    assert_eq!(client.request_counts().waited_ms, 2_000);
}

#[tokio::test]
async fn an_exhausted_primary_limit_stops_the_pass_without_sleeping() {
    let server = FakeGitHub::start(repository());
    server.set_rate_limit(RateLimitConfig {
        limit: 5_000,
        remaining: 0,
        reset_in_seconds: 3_600,
    });
    let client = client_for(&server);

    let started = Instant::now();
    let error = client.repository_info().await.unwrap_err();

    assert!(
        matches!(error, GitHubError::RateLimitExhausted { .. }),
        "{error:?}"
    );
    assert!(error.stops_the_pass());
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(sent(&server, "GET", "/repos/acme/bench"), 1);
}

#[tokio::test]
async fn a_comment_post_that_took_effect_but_answered_502_is_not_sent_twice() {
    let mut state = repository();
    let number = state.add_pull_request(bot_draft("klaud/auto-a"));
    let server = FakeGitHub::start(state);
    server.set_faults(FaultConfig::rules(vec![
        FaultRule::nth("POST", "/repos/acme/bench/issues/*/comments", 1, 502).after_handling(),
    ]));
    let client = client_for(&server);
    let body = "<!-- klaud-receipt session=a-1 -->\nvalidated";

    let posted = client
        .post_comment_once(number, body, "klaud-receipt session=a-1")
        .await
        .unwrap();

    assert!(matches!(posted, CommentPosted::FoundAfterUncertainPost(_)));
    assert_eq!(
        sent(&server, "POST", "/comments"),
        1,
        "never re-sent blindly"
    );
    assert_eq!(client.comments(number).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_comment_post_that_never_arrived_is_sent_again_after_the_check() {
    let mut state = repository();
    let number = state.add_pull_request(bot_draft("klaud/auto-a"));
    let server = FakeGitHub::start(state);
    server.set_faults(FaultConfig::rules(vec![FaultRule::nth(
        "POST",
        "/repos/acme/bench/issues/*/comments",
        1,
        502,
    )]));
    let client = client_for(&server);

    let posted = client
        .post_comment_once(number, "<!-- m -->\nbody", "<!-- m -->")
        .await
        .unwrap();

    assert!(matches!(posted, CommentPosted::Created(_)));
    assert_eq!(sent(&server, "POST", "/comments"), 2);
    assert_eq!(client.comments(number).await.unwrap().len(), 1);
}

#[tokio::test]
async fn writes_beyond_the_budget_are_refused_before_they_are_sent() {
    let mut state = repository();
    let number = state.add_pull_request(bot_draft("klaud/auto-a"));
    let server = FakeGitHub::start(state);
    let mut settings = GitHubSettings::new(
        &server.base_url(),
        &server.graphql_url(),
        TOKEN,
        "acme/bench",
    );
    settings.max_writes = 1;
    let client = GitHubClient::new(&settings).unwrap();

    client
        .add_labels(number, &["klaud-error".into()])
        .await
        .unwrap();
    let error = client
        .add_labels(number, &["klaud-infra".into()])
        .await
        .unwrap_err();

    assert!(matches!(
        error,
        GitHubError::BudgetExhausted { kind: "write", .. }
    ));
    assert_eq!(sent(&server, "POST", "/labels"), 1);
    assert_eq!(client.request_counts().writes, 1);
}

#[tokio::test]
async fn redrafting_a_closed_pull_request_is_an_error_and_marking_ready_works() {
    let mut state = repository();
    let open = state.add_pull_request(bot_draft("klaud/auto-a"));
    let closed = state.add_pull_request(PullRequestSpec {
        closed: Some(ClosedSpec {
            by: "maintainer-ada".to_string(),
            ..ClosedSpec::default()
        }),
        draft: false,
        ..bot_draft("klaud/auto-b")
    });
    let server = FakeGitHub::start(state);
    let client = client_for(&server);
    let open_pull = client.pull_request(open).await.unwrap();
    let closed_pull = client.pull_request(closed).await.unwrap();

    client
        .mark_ready_for_review(&open_pull.node_id)
        .await
        .unwrap();
    let error = client
        .convert_to_draft(&closed_pull.node_id)
        .await
        .unwrap_err();

    assert!(!client.pull_request(open).await.unwrap().draft);
    assert!(matches!(error, GitHubError::GraphQl { .. }), "{error:?}");
    assert_eq!(
        client.issue(closed).await.unwrap().closed_by.unwrap().login,
        "maintainer-ada"
    );
}

#[tokio::test]
async fn a_branch_is_deleted_only_where_it_was_checked() {
    let mut state = repository();
    let first = state.push_commits("klaud/auto-a", vec![CommitSpec::by(BOT)]);
    let moved_to = state.push_commits("klaud/auto-a", vec![CommitSpec::by("maintainer-ada")]);
    let kept_sha = state.push_commits("klaud/auto-b", vec![CommitSpec::by(BOT)]);
    let server = FakeGitHub::start(state);
    let client = client_for(&server);

    let moved = client
        .delete_branch_if_at("klaud/auto-a", &first)
        .await
        .unwrap();
    let deleted = client
        .delete_branch_if_at("klaud/auto-b", &kept_sha)
        .await
        .unwrap();
    let missing = client
        .delete_branch_if_at("klaud/auto-b", &kept_sha)
        .await
        .unwrap();

    assert_eq!(moved, BranchDeletion::Moved { now_at: moved_to });
    assert_eq!(deleted, BranchDeletion::Deleted);
    assert_eq!(missing, BranchDeletion::Missing);
    assert!(client.branch("klaud/auto-a").await.unwrap().is_some());
    assert_eq!(sent(&server, "DELETE", "/git/refs/"), 1);
}

#[tokio::test]
async fn cancelling_a_completed_run_is_reported_not_failed() {
    let mut state = repository();
    let finished = state.add_run(planner_run(30, "completed"));
    let running = state.add_run(planner_run(1, "in_progress"));
    let server = FakeGitHub::start(state);
    let client = client_for(&server);

    assert_eq!(
        client.cancel_run(finished).await.unwrap(),
        RunCancel::AlreadyCompleted
    );
    assert_eq!(
        client.cancel_run(running).await.unwrap(),
        RunCancel::Requested
    );
}

#[tokio::test]
async fn the_token_never_appears_in_errors_or_debug_output() {
    let server = FakeGitHub::start(repository().with_token("other-token", "someone"));
    let mut settings = GitHubSettings::new(
        &server.base_url(),
        &server.graphql_url(),
        "ghs_unknownTokenThatIsNotValid000",
        "acme/bench",
    );
    settings.retry = quick_retries();
    let client = GitHubClient::new(&settings).unwrap();

    let error = client.repository_info().await.unwrap_err();
    let good_client = client_for(&server);
    let missing = good_client.pull_request(999).await.unwrap_err();

    for text in [
        error.to_string(),
        format!("{error:?}"),
        missing.to_string(),
        format!("{missing:?}"),
        format!("{client:?}"),
        format!("{good_client:?}"),
    ] {
        assert!(
            !text.contains("ghs_unknownTokenThatIsNotValid000"),
            "{text}"
        );
        assert!(!text.contains(TOKEN), "{text}");
    }
    assert_eq!(error.status(), Some(401));
}
