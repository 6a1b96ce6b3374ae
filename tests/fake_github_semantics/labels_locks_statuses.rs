//! What the recorded sessions of `tests/fake_github_replay.rs` do not show: labels found in any
//! case, renamed and deleted on every issue, refused colors and names; locks with and without a
//! reason; the combined status of several contexts; refs below a prefix; an empty repository and
//! raw file reads; the caller's permissions, the owning organization and author associations.

use reqwest::Method;
use serde_json::{Value, json};

use crate::fake_github::{FakeGitHub, IssueSpec, MAINTAINER_ANN, READER_ROB, RepoState};
use crate::{Client, TOKEN, repository};

fn issue_by(author: &str, labels: &[&str]) -> IssueSpec {
    IssueSpec {
        title: "an issue".to_string(),
        author: author.to_string(),
        labels: labels.iter().map(|label| label.to_string()).collect(),
        ..IssueSpec::default()
    }
}

fn label_names(issue: &Value) -> Vec<&str> {
    issue["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|label| label["name"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn labels_are_found_in_any_case_renamed_on_issues_and_deleted_from_them() {
    let mut state = repository();
    let number = state.add_issue(issue_by("alice", &["bug"]));
    let server = FakeGitHub::start(state);
    let client = Client::new(&server, Some(TOKEN));
    let labels = "/repos/acme/widgets/labels";

    let taken = client.post(labels, json!({"name": "Bug"})).await;
    assert_eq!(taken.status, 422);
    assert_eq!(taken.body["errors"][0]["code"], "already_exists");
    let bad_color = client
        .post(labels, json!({"name": "x", "color": "red"}))
        .await;
    assert_eq!(bad_color.status, 422);
    assert_eq!(bad_color.body["errors"][0]["field"], "color");
    let created = client
        .post(labels, json!({"name": "needs triage", "color": "#BADA55"}))
        .await;
    assert_eq!(created.status, 201);
    assert_eq!(
        created.body["color"], "BADA55",
        "the case is kept, the # dropped"
    );
    assert_eq!(
        created.header("location"),
        Some(format!("{}{labels}/needs%20triage", server.base_url()).as_str())
    );

    assert_eq!(
        client.get(&format!("{labels}/BUG")).await.body["name"],
        "bug"
    );
    let renamed = client
        .send(
            Method::PATCH,
            &format!("{labels}/bug"),
            Some(json!({"new_name": "defect"})),
        )
        .await;
    assert_eq!(renamed.status, 200);
    let issue = format!("/repos/acme/widgets/issues/{number}");
    assert_eq!(label_names(&client.get(&issue).await.body), ["defect"]);
    let deleted = client
        .send(Method::DELETE, &format!("{labels}/defect"), None)
        .await;
    assert_eq!(deleted.status, 204);
    assert!(label_names(&client.get(&issue).await.body).is_empty());
    assert_eq!(client.get(&format!("{labels}/defect")).await.status, 404);
    let not_taken = client.post(&format!("{labels}/bug"), json!({})).await;
    assert_eq!(
        (not_taken.status, not_taken.body["message"].as_str()),
        (404, Some("Not Found")),
        "a method a path does not take is GitHub's 404"
    );
}

#[tokio::test]
async fn a_locked_conversation_shows_its_reason_until_unlocked() {
    let mut state = repository();
    let number = state.add_issue(issue_by("alice", &[]));
    let server = FakeGitHub::start(state);
    let client = Client::new(&server, Some(TOKEN));
    let lock = format!("/repos/acme/widgets/issues/{number}/lock");
    let issue = format!("/repos/acme/widgets/issues/{number}");

    let refused = client
        .send(Method::PUT, &lock, Some(json!({"lock_reason": "bored"})))
        .await;
    assert_eq!(refused.status, 422);
    let locked = client
        .send(
            Method::PUT,
            &lock,
            Some(json!({"lock_reason": "too heated"})),
        )
        .await;
    assert_eq!(locked.status, 204);
    let read = client.get(&issue).await.body;
    assert_eq!(
        (&read["locked"], &read["active_lock_reason"]),
        (&json!(true), &json!("too heated"))
    );
    assert_eq!(client.send(Method::DELETE, &lock, None).await.status, 204);
    let read = client.get(&issue).await.body;
    assert_eq!(
        (&read["locked"], &read["active_lock_reason"]),
        (&json!(false), &Value::Null)
    );
    let missing = client
        .send(Method::PUT, "/repos/acme/widgets/issues/999/lock", None)
        .await;
    assert_eq!(missing.status, 404);
}

#[tokio::test]
async fn a_combined_status_is_the_verdict_of_each_contexts_latest_status() {
    let state = repository();
    let head = state.branch_sha("main").unwrap().to_string();
    let server = FakeGitHub::start(state);
    let client = Client::new(&server, Some(TOKEN));
    let set = |context: &'static str, status: &'static str| {
        let client = &client;
        let path = format!("/repos/acme/widgets/statuses/{head}");
        async move {
            let answer = client
                .post(&path, json!({"state": status, "context": context}))
                .await;
            assert_eq!(answer.status, 201, "{context} {status}");
        }
    };
    let combined = "/repos/acme/widgets/commits/main/status";
    assert_eq!(client.get(combined).await.body["state"], "pending");
    set("ci", "pending").await;
    set("ci", "success").await;
    set("lint", "failure").await;
    let answer = client.get(combined).await.body;
    assert_eq!(
        (&answer["state"], &answer["total_count"]),
        (&json!("failure"), &json!(2))
    );
    let contexts: Vec<(&str, &str)> = answer["statuses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|status| {
            (
                status["context"].as_str().unwrap(),
                status["state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(contexts, [("ci", "success"), ("lint", "failure")]);
    set("lint", "success").await;
    assert_eq!(client.get(combined).await.body["state"], "success");
    let listed = client
        .get(&format!("/repos/acme/widgets/commits/{head}/statuses"))
        .await
        .body;
    assert_eq!(listed.as_array().unwrap().len(), 4);
    assert_eq!(listed[0]["context"], "lint", "newest first");
    let bad_state = client
        .post(
            &format!("/repos/acme/widgets/statuses/{head}"),
            json!({"state": "green"}),
        )
        .await;
    assert_eq!(bad_state.status, 422);
    let unknown = client
        .post(
            &format!("/repos/acme/widgets/statuses/{}", "0".repeat(40)),
            json!({"state": "success"}),
        )
        .await;
    assert_eq!(unknown.status, 422);
}

#[tokio::test]
async fn refs_read_below_a_prefix_and_an_empty_repository_gets_its_branch_from_the_first_file() {
    let server = FakeGitHub::start(RepoState::empty("acme", "widgets").with_token(TOKEN, "bot"));
    let client = Client::new(&server, Some(TOKEN));
    let contents = "/repos/acme/widgets/contents/notes.md";
    let empty = client.get(contents).await;
    assert_eq!(
        (empty.status, empty.body["message"].as_str()),
        (404, Some("This repository is empty."))
    );
    let elsewhere = client
        .send(
            Method::PUT,
            contents,
            Some(json!({"message": "m", "content": "aGk=", "branch": "other"})),
        )
        .await;
    assert_eq!(elsewhere.status, 404, "only the default branch is made");
    let first = client
        .send(
            Method::PUT,
            contents,
            Some(json!({"message": "m", "content": "aGk="})),
        )
        .await;
    assert_eq!(first.status, 201);
    assert_eq!(first.body["commit"]["parents"], json!([]));

    let heads = client.get("/repos/acme/widgets/git/refs/heads").await;
    assert_eq!(heads.body.as_array().map(Vec::len), Some(1));
    let main = client.get("/repos/acme/widgets/git/refs/heads/main").await;
    assert_eq!(main.body["ref"], "refs/heads/main", "one ref named exactly");
    assert_eq!(
        client.get("/repos/acme/widgets/git/refs/tags").await.status,
        404
    );

    let raw = fake_github_raw_read(&server.base_url(), contents).await;
    assert_eq!(
        raw,
        (
            "application/vnd.github.raw; charset=utf-8".to_string(),
            "hi".to_string()
        )
    );
}

/// A file read with the `raw` media type: the answer's content type and text.
async fn fake_github_raw_read(base: &str, path: &str) -> (String, String) {
    let answer = crate::fake_github::http_client()
        .get(format!("{base}{path}"))
        .bearer_auth(TOKEN)
        .header("accept", "application/vnd.github.raw+json")
        .send()
        .await
        .expect("the fake answers");
    let content_type = answer.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    (content_type, answer.text().await.unwrap())
}

#[tokio::test]
async fn the_repository_answers_the_callers_permissions_its_organization_and_associations() {
    let mut state = repository()
        .owned_by_organization(&[MAINTAINER_ANN.login])
        .with_person(MAINTAINER_ANN)
        .with_person(READER_ROB);
    let by_member = state.add_issue(issue_by(MAINTAINER_ANN.login, &[]));
    let by_collaborator = state.add_issue(issue_by(READER_ROB.login, &[]));
    let by_stranger = state.add_issue(issue_by("stranger", &[]));
    let server = FakeGitHub::start(state);

    let as_ann = Client::new(&server, Some(MAINTAINER_ANN.token));
    let repository = as_ann.get("/repos/acme/widgets").await.body;
    assert_eq!(
        repository["permissions"],
        json!({"admin": false, "maintain": false, "push": true, "triage": true, "pull": true})
    );
    assert_eq!(repository["owner"]["type"], "Organization");
    assert_eq!(repository["organization"]["login"], "acme");
    let as_rob = Client::new(&server, Some(READER_ROB.token));
    let permissions = &as_rob.get("/repos/acme/widgets").await.body["permissions"];
    assert_eq!(
        (&permissions["pull"], &permissions["push"]),
        (&json!(true), &json!(false))
    );

    for (number, association) in [
        (by_member, "MEMBER"),
        (by_collaborator, "COLLABORATOR"),
        (by_stranger, "NONE"),
    ] {
        let issue = as_ann
            .get(&format!("/repos/acme/widgets/issues/{number}"))
            .await
            .body;
        assert_eq!(issue["author_association"], association);
    }
}
