//! Credentials, seeded faults (random, Nth-request, after-write), the primary rate limit and the
//! admin surface.

use reqwest::Method;
use serde_json::json;

use crate::fake_github::{
    FakeGitHub, FaultConfig, FaultRule, FaultTiming, RateLimitConfig, Timestamp,
};
use crate::{BOT, Client, MAINTAINER, MAINTAINER_TOKEN, TOKEN, human_pull, repository};

#[tokio::test]
async fn a_missing_or_unknown_token_is_401() {
    let server = FakeGitHub::start(repository());
    let unknown = Client::new(&server, Some("not-a-token")).get("/user").await;
    assert_eq!(
        (unknown.status, unknown.body["message"].as_str()),
        (401, Some("Bad credentials"))
    );
    let missing = Client::new(&server, None).get("/repos/acme/widgets").await;
    assert_eq!(
        (missing.status, missing.body["message"].as_str()),
        (401, Some("Requires authentication"))
    );
    let known = Client::new(&server, Some(MAINTAINER_TOKEN))
        .get("/user")
        .await;
    assert_eq!(known.body["login"], MAINTAINER);
    let other_repository = Client::new(&server, Some(TOKEN))
        .get("/repos/acme/other/pulls")
        .await;
    assert_eq!(other_repository.status, 404);
}

/// The same 60 requests, some repeated, so replays depend on per-request occurrence counts.
fn faulty_requests() -> Vec<(&'static str, u64)> {
    (0..60)
        .map(|index| ("/repos/acme/widgets/pulls", index % 7))
        .collect()
}

async fn statuses_under(seed: u64) -> Vec<u16> {
    let server = FakeGitHub::start(repository());
    server.set_faults(FaultConfig {
        seed,
        server_error_rate: 0.2,
        secondary_rate_limit_rate: 0.1,
        ..FaultConfig::default()
    });
    let client = Client::new(&server, Some(TOKEN));
    let mut statuses = Vec::new();
    for (path, page) in faulty_requests() {
        statuses.push(client.get(&format!("{path}?page={page}")).await.status);
    }
    statuses
}

#[tokio::test]
async fn random_faults_replay_identically_for_the_same_seed() {
    let first = statuses_under(42).await;
    let second = statuses_under(42).await;
    let other = statuses_under(43).await;
    assert_eq!(first, second);
    assert_ne!(first, other);
    assert!(first.iter().any(|status| *status == 502 || *status == 503));
    assert!(first.contains(&403), "secondary rate limits answer 403");
    assert!(first.contains(&200));
}

#[tokio::test]
async fn the_nth_matching_request_fails_and_secondary_limits_carry_retry_after() {
    let server = FakeGitHub::start(repository());
    server.set_faults(FaultConfig {
        rules: vec![
            FaultRule {
                method: Some("GET".to_string()),
                path: "/repos/*/pulls".to_string(),
                nth: 2,
                times: 1,
                status: 503,
                timing: FaultTiming::BeforeHandling,
                retry_after_seconds: None,
            },
            FaultRule {
                method: None,
                path: "/user".to_string(),
                nth: 1,
                times: 2,
                status: 429,
                timing: FaultTiming::BeforeHandling,
                retry_after_seconds: Some(2),
            },
        ],
        ..FaultConfig::default()
    });
    let client = Client::new(&server, Some(TOKEN));
    let statuses = [
        client.get("/repos/acme/widgets/pulls").await.status,
        client.get("/repos/acme/widgets/pulls").await.status,
        client.get("/repos/acme/widgets/pulls").await.status,
    ];
    assert_eq!(statuses, [200, 503, 200]);
    let limited = client.get("/user").await;
    assert_eq!(limited.status, 429);
    assert_eq!(limited.header("retry-after"), Some("2"));
    assert!(
        limited.body["message"]
            .as_str()
            .unwrap()
            .starts_with("You have exceeded a secondary rate limit")
    );
    assert_eq!(client.get("/user").await.status, 429);
    assert_eq!(client.get("/user").await.status, 200);
    let log = server.request_log();
    assert_eq!(
        log.iter().filter(|request| request.fault.is_some()).count(),
        3
    );
    assert_eq!(log[1].path, "/repos/acme/widgets/pulls");
    assert_eq!(log[1].login.as_deref(), Some(BOT));
}

#[tokio::test]
async fn a_fault_after_a_write_keeps_the_write_but_answers_502() {
    let mut state = repository();
    let number = state.add_pull_request(human_pull(1));
    let server = FakeGitHub::start(state);
    server.set_faults(FaultConfig {
        rules: vec![FaultRule {
            method: Some("POST".to_string()),
            path: "/repos/*/issues/*/comments".to_string(),
            nth: 1,
            times: 1,
            status: 502,
            timing: FaultTiming::AfterHandling,
            retry_after_seconds: None,
        }],
        ..FaultConfig::default()
    });
    let client = Client::new(&server, Some(TOKEN));
    let posted = client
        .post(
            &format!("/repos/acme/widgets/issues/{number}/comments"),
            json!({"body": "once"}),
        )
        .await;
    assert_eq!(posted.status, 502);
    let comments = client
        .get(&format!("/repos/acme/widgets/issues/{number}/comments"))
        .await;
    assert_eq!(
        comments.body.as_array().unwrap().len(),
        1,
        "the write took effect although the client saw 502"
    );
    let logged = &server.request_log()[0];
    assert!(logged.fault.as_ref().unwrap().after_handling);
}

#[tokio::test]
async fn rate_limit_headers_count_down_and_exhaustion_is_403() {
    let server = FakeGitHub::start(repository());
    server.set_rate_limit(RateLimitConfig {
        limit: 5000,
        remaining: 3,
        reset_in_seconds: 600,
    });
    let client = Client::new(&server, Some(TOKEN));
    let first = client.get("/repos/acme/widgets").await;
    assert_eq!(first.body["default_branch"], "main");
    assert_eq!(first.body["full_name"], "acme/widgets");
    assert_eq!(first.body["fork"], false);
    assert_eq!(
        (
            first.header("x-ratelimit-limit"),
            first.header("x-ratelimit-remaining")
        ),
        (Some("5000"), Some("2"))
    );
    assert_eq!(
        (
            first.header("x-ratelimit-used"),
            first.header("x-ratelimit-resource")
        ),
        (Some("4998"), Some("core"))
    );
    let reset: i64 = first.header("x-ratelimit-reset").unwrap().parse().unwrap();
    assert!(reset > Timestamp::system_now().0);
    assert_eq!(
        client.get("/user").await.header("x-ratelimit-remaining"),
        Some("1")
    );
    assert_eq!(
        client.get("/user").await.header("x-ratelimit-remaining"),
        Some("0")
    );
    let exhausted = client.get("/user").await;
    assert_eq!(
        (exhausted.status, exhausted.header("x-ratelimit-remaining")),
        (403, Some("0"))
    );
    assert!(
        exhausted.body["message"]
            .as_str()
            .unwrap()
            .starts_with("API rate limit exceeded")
    );
}

#[tokio::test]
async fn admin_endpoints_dump_and_load_state_and_expose_the_request_log() {
    let server = FakeGitHub::start(repository());
    let client = Client::new(&server, Some(TOKEN));
    client.get("/user").await;
    let admin = Client::new(&server, None);
    let state = admin.get("/_fake/state").await.body;
    assert_eq!(state["owner"], "acme");
    let mut changed = state.clone();
    changed["default_branch"] = json!("trunk");
    changed["refs"]["refs/heads/trunk"] = state["refs"]["refs/heads/main"].clone();
    assert_eq!(
        admin
            .send(Method::PUT, "/_fake/state", Some(changed))
            .await
            .status,
        204
    );
    assert_eq!(
        client.get("/repos/acme/widgets").await.body["default_branch"],
        "trunk"
    );
    let log = admin.get("/_fake/requests").await.body;
    assert_eq!(
        log.as_array().unwrap().len(),
        2,
        "admin requests are not logged"
    );
    assert_eq!(log[0]["path"], "/user");
    let faults = json!({"seed": 7, "server_error_rate": 1.0});
    assert_eq!(
        admin
            .send(Method::PUT, "/_fake/faults", Some(faults))
            .await
            .status,
        204
    );
    assert!(client.get("/user").await.status >= 502);
    assert_eq!(admin.get("/_fake/requests/counts").await.body["faulted"], 1);
}
