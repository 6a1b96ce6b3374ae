//! Pull requests, issues, labels, comments, GraphQL draft toggles, run cancellation and
//! dispatches.

use reqwest::Method;
use serde_json::{Value, json};

use crate::fake_github::{ClosedSpec, CommitSpec, FakeGitHub, JobSpec, PullRequestSpec, RunSpec};
use crate::{BOT, Client, MAINTAINER, MAINTAINER_TOKEN, NOW, TOKEN, human_pull, repository};

#[tokio::test]
async fn cancelling_a_completed_run_is_409_and_a_running_one_is_202() {
    let mut state = repository();
    let finished = state.add_run(RunSpec::default());
    let running = state.add_run(RunSpec {
        status: "in_progress".to_string(),
        conclusion: None,
        jobs: vec![JobSpec::in_progress("smoke")],
        ..RunSpec::default()
    });
    let server = FakeGitHub::start(state);
    let client = Client::new(&server, Some(TOKEN));

    let refused = client
        .post(
            &format!("/repos/acme/widgets/actions/runs/{finished}/cancel"),
            json!({}),
        )
        .await;
    assert_eq!(
        (refused.status, refused.body["message"].as_str()),
        (409, Some("Cannot cancel a workflow run that is completed."))
    );
    let accepted = client
        .post(
            &format!("/repos/acme/widgets/actions/runs/{running}/cancel"),
            json!({}),
        )
        .await;
    assert_eq!(accepted.status, 202);
    let run = client
        .get(&format!("/repos/acme/widgets/actions/runs/{running}"))
        .await;
    assert_eq!(
        (run.body["status"].as_str(), run.body["conclusion"].as_str()),
        (Some("completed"), Some("cancelled"))
    );
    let jobs = client
        .get(&format!("/repos/acme/widgets/actions/runs/{running}/jobs"))
        .await;
    assert_eq!(jobs.body["jobs"][0]["conclusion"], "cancelled");
}

#[tokio::test]
async fn dispatch_creates_a_queued_run_by_the_caller_with_its_inputs() {
    let server = FakeGitHub::start(repository());
    let client = Client::new(&server, Some(TOKEN));
    server.with_state(|state| state.ensure_workflow("klaud-plan.yml"));

    let dispatched = client
        .post(
            "/repos/acme/widgets/actions/workflows/klaud-plan.yml/dispatches",
            json!({"ref": "main", "inputs": {"wake": "true"}}),
        )
        .await;
    assert_eq!(dispatched.status, 204);
    let runs = client
        .get("/repos/acme/widgets/actions/runs?event=workflow_dispatch&status=queued")
        .await;
    assert_eq!(runs.body["total_count"], 1);
    assert_eq!(runs.body["workflow_runs"][0]["actor"]["login"], BOT);
    let dispatch = &server.state().dispatches[0];
    assert_eq!(
        (dispatch.git_ref.as_str(), &dispatch.inputs),
        ("main", &json!({"wake": "true"}))
    );
    let unknown_ref = client
        .post(
            "/repos/acme/widgets/actions/workflows/klaud-plan.yml/dispatches",
            json!({"ref": "nope"}),
        )
        .await;
    assert_eq!(
        (unknown_ref.status, unknown_ref.body["message"].as_str()),
        (422, Some("No ref found for: nope"))
    );
}

#[tokio::test]
async fn redrafting_a_closed_pull_request_is_a_graphql_error_with_status_200() {
    let mut state = repository();
    let open = state.add_pull_request(PullRequestSpec {
        draft: true,
        ..human_pull(1)
    });
    let closed = state.add_pull_request(PullRequestSpec {
        closed: Some(ClosedSpec {
            by: MAINTAINER.to_string(),
            ..ClosedSpec::default()
        }),
        ..human_pull(2)
    });
    let server = FakeGitHub::start(state);
    let client = Client::new(&server, Some(TOKEN));
    let open_node = client
        .get(&format!("/repos/acme/widgets/pulls/{open}"))
        .await
        .body["node_id"]
        .clone();
    let closed_node = client
        .get(&format!("/repos/acme/widgets/pulls/{closed}"))
        .await
        .body["node_id"]
        .clone();

    let ready = client
        .post("/graphql", json!({
            "query": "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { number isDraft } } }",
            "variables": {"id": open_node},
        }))
        .await;
    assert_eq!(
        ready.body["data"]["markPullRequestReadyForReview"]["pullRequest"],
        json!({"number": open, "isDraft": false}),
        "only the selected fields"
    );
    assert_eq!(
        client
            .get(&format!("/repos/acme/widgets/pulls/{open}"))
            .await
            .body["draft"],
        false
    );

    let redraft = client
        .post("/graphql", json!({
            "query": "mutation($input: ConvertPullRequestToDraftInput!) { convertPullRequestToDraft(input: $input) { pullRequest { number isDraft } } }",
            "variables": {"input": {"pullRequestId": closed_node}},
        }))
        .await;
    assert_eq!(redraft.status, 200);
    assert_eq!(redraft.body["errors"][0]["type"], "UNPROCESSABLE");
    assert_eq!(
        client
            .get(&format!("/repos/acme/widgets/pulls/{closed}"))
            .await
            .body["draft"],
        false
    );
}

#[tokio::test]
async fn issues_pulls_and_commits_carry_github_fields() {
    let mut state = repository();
    let number = state.add_pull_request(PullRequestSpec {
        author: BOT.to_string(),
        head_ref: "klaud/auto-c1".to_string(),
        labels: vec!["klaud-in-progress".to_string()],
        commits: vec![
            CommitSpec::by(BOT).file("configs/a.yaml", "a: 1\n"),
            CommitSpec {
                author_login: None,
                ..CommitSpec::by(MAINTAINER).file("configs/b.yaml", "b: 1\n")
            },
        ],
        ..human_pull(1)
    });
    let server = FakeGitHub::start(state);
    let bot = Client::new(&server, Some(TOKEN));
    let maintainer = Client::new(&server, Some(MAINTAINER_TOKEN));

    let pull = bot
        .get(&format!("/repos/acme/widgets/pulls/{number}"))
        .await;
    assert_eq!(pull.body["head"]["ref"], "klaud/auto-c1");
    assert_eq!(pull.body["head"]["repo"]["full_name"], "acme/widgets");
    assert_eq!(pull.body["user"]["login"], BOT);
    assert_eq!(pull.body["labels"][0]["name"], "klaud-in-progress");
    assert!(pull.body["node_id"].as_str().unwrap().starts_with("PR_"));
    assert_eq!(pull.body["merged_at"], Value::Null);

    let listed = bot
        .get("/repos/acme/widgets/pulls?head=acme:klaud/auto-c1")
        .await;
    assert_eq!(listed.body.as_array().unwrap().len(), 1);
    let commits = bot
        .get(&format!("/repos/acme/widgets/pulls/{number}/commits"))
        .await;
    assert_eq!(commits.body[0]["author"]["login"], BOT);
    assert_eq!(
        commits.body[1]["author"],
        Value::Null,
        "an author without an account is null"
    );
    assert_eq!(commits.body[1]["committer"]["login"], MAINTAINER);
    let files = bot
        .get(&format!("/repos/acme/widgets/pulls/{number}/files"))
        .await;
    let names: Vec<&str> = files
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["filename"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["configs/a.yaml", "configs/b.yaml"]);

    let absent = bot
        .send(
            Method::DELETE,
            &format!("/repos/acme/widgets/issues/{number}/labels/klaud-parked"),
            None,
        )
        .await;
    assert_eq!(
        (absent.status, absent.body["message"].as_str()),
        (404, Some("Label does not exist"))
    );
    let removed = bot
        .send(
            Method::DELETE,
            &format!("/repos/acme/widgets/issues/{number}/labels/klaud-in-progress"),
            None,
        )
        .await;
    assert_eq!((removed.status, removed.body.clone()), (200, json!([])));
    let added = bot
        .post(
            &format!("/repos/acme/widgets/issues/{number}/labels"),
            json!({"labels": ["klaud-error"]}),
        )
        .await;
    assert_eq!(added.body[0]["name"], "klaud-error");

    let comment = bot
        .post(
            &format!("/repos/acme/widgets/issues/{number}/comments"),
            json!({"body": "receipt"}),
        )
        .await;
    assert_eq!(
        (comment.status, comment.body["user"]["login"].as_str()),
        (201, Some(BOT))
    );
    let edited = bot
        .send(
            Method::PATCH,
            &format!("/repos/acme/widgets/issues/comments/{}", comment.body["id"]),
            Some(json!({"body": "receipt v2"})),
        )
        .await;
    assert_eq!(edited.body["body"], "receipt v2");

    let closed = maintainer
        .send(
            Method::PATCH,
            &format!("/repos/acme/widgets/pulls/{number}"),
            Some(json!({"state": "closed"})),
        )
        .await;
    assert_eq!(closed.body["state"], "closed");
    let issue = bot
        .get(&format!("/repos/acme/widgets/issues/{number}"))
        .await;
    assert_eq!(issue.body["closed_by"]["login"], MAINTAINER);
    assert!(issue.body["pull_request"].is_object());
    assert_eq!(issue.body["closed_at"], NOW.to_string());
}
