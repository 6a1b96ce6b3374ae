//! Issues that are not pull requests (creation, reads, updates, the listing with its filters and
//! the pull requests it holds too), the revisions of an issue's body over GraphQL, and a
//! collaborator's permission.

use reqwest::Method;
use serde_json::{Value, json};

use crate::fake_github::{
    FakeGitHub, FakeGitHubHandle, IssueSpec, MAINTAINER_ANN, OUTSIDER_OLA, READER_ROB, Role,
    Timestamp,
};
use crate::{BOT, Client, NOW, TOKEN, human_pull, link_relations, repository};

const EDITS: &str = "query($number: Int!, $first: Int, $last: Int, $after: String, $before: String) { repository(owner: \"acme\", name: \"widgets\") { issue(number: $number) { number body author { login } userContentEdits(first: $first, last: $last, after: $after, before: $before) { totalCount pageInfo { startCursor endCursor hasNextPage hasPreviousPage } nodes { editedAt editor { login } diff } } } } }";

fn people() -> crate::fake_github::RepoState {
    repository()
        .with_person(MAINTAINER_ANN)
        .with_person(READER_ROB)
        .with_person(OUTSIDER_OLA)
}

fn issue(title: &str, author: &str, labels: &[&str]) -> IssueSpec {
    IssueSpec {
        title: title.to_string(),
        body: Some(format!("body of {title}")),
        author: author.to_string(),
        labels: labels.iter().map(|label| label.to_string()).collect(),
        created_at: None,
    }
}

async fn patch(client: &Client, number: u64, body: Value) -> crate::Answer {
    client
        .send(
            Method::PATCH,
            &format!("/repos/acme/widgets/issues/{number}"),
            Some(body),
        )
        .await
}

async fn edits(client: &Client, number: u64, window: Value) -> Value {
    let mut variables = window;
    variables["number"] = json!(number);
    let answer = client
        .post("/graphql", json!({"query": EDITS, "variables": variables}))
        .await;
    assert_eq!(answer.status, 200);
    answer.body
}

fn set_now(server: &FakeGitHubHandle, now: Timestamp) {
    server.with_state(|state| state.now = Some(now));
}

#[tokio::test]
async fn issues_share_the_number_sequence_with_pull_requests_and_carry_github_fields() {
    let mut state = people();
    let pull = state.add_pull_request(human_pull(0));
    let server = FakeGitHub::start(state);
    let bot = Client::new(&server, Some(TOKEN));

    let created = bot
        .post(
            "/repos/acme/widgets/issues",
            json!({"title": "klaud dashboard", "body": null, "labels": ["klaud-dashboard"]}),
        )
        .await;
    assert_eq!(created.status, 201);
    let number = created.body["number"].as_u64().unwrap();
    assert_eq!(number, pull + 1);
    assert_eq!(created.body["user"]["login"], BOT);
    assert_eq!(created.body["state"], "open");
    assert_eq!(created.body["state_reason"], Value::Null);
    assert_eq!(created.body["body"], Value::Null);
    assert_eq!(created.body["labels"][0]["name"], "klaud-dashboard");
    assert_eq!(created.body["created_at"], "2026-01-01T00:00:00Z");
    assert_eq!(
        created.body["html_url"],
        format!("https://github.com/acme/widgets/issues/{number}")
    );
    assert!(created.body.get("pull_request").is_none());
    let read = bot
        .get(&format!("/repos/acme/widgets/issues/{number}"))
        .await;
    assert_eq!(read.body, created.body);
    let as_pull = bot
        .get(&format!("/repos/acme/widgets/pulls/{number}"))
        .await;
    assert_eq!(as_pull.status, 404);
    let untitled = bot
        .post("/repos/acme/widgets/issues", json!({"body": "x"}))
        .await;
    assert_eq!(untitled.status, 422);

    // Labels and comments work on issues as on pull requests.
    let labelled = bot
        .post(
            &format!("/repos/acme/widgets/issues/{number}/labels"),
            json!({"labels": ["paused"]}),
        )
        .await;
    assert_eq!(labelled.status, 200);
    let comment = bot
        .post(
            &format!("/repos/acme/widgets/issues/{number}/comments"),
            json!({"body": "hello"}),
        )
        .await;
    assert_eq!(comment.status, 201);
    let issue = server.state().issues[&number].clone();
    assert_eq!(issue.labels, ["klaud-dashboard", "paused"]);
}

#[tokio::test]
async fn closing_and_reopening_record_who_and_why() {
    let mut state = people();
    let number = state.add_issue(issue("dashboard", BOT, &[]));
    let server = FakeGitHub::start(state);
    let ann = Client::new(&server, Some(MAINTAINER_ANN.token));

    let closed = patch(
        &ann,
        number,
        json!({"state": "closed", "state_reason": "not_planned"}),
    )
    .await;
    assert_eq!(
        (
            closed.body["state"].as_str(),
            closed.body["state_reason"].as_str(),
            closed.body["closed_by"]["login"].as_str()
        ),
        (
            Some("closed"),
            Some("not_planned"),
            Some(MAINTAINER_ANN.login)
        )
    );
    let reopened = patch(&ann, number, json!({"state": "open"})).await;
    assert_eq!(
        (
            reopened.body["state"].as_str(),
            reopened.body["state_reason"].as_str(),
            reopened.body["closed_by"].clone()
        ),
        (Some("open"), Some("reopened"), Value::Null)
    );
    let invalid = patch(&ann, number, json!({"state": "locked"})).await;
    assert_eq!(invalid.status, 422);
    let closed_plainly = patch(&ann, number, json!({"state": "closed"})).await;
    assert_eq!(closed_plainly.body["state_reason"], "completed");
    let cleared = patch(&ann, number, json!({"body": null})).await;
    assert_eq!(cleared.body["body"], Value::Null);
    assert_eq!(server.state().body_edits_of(number).len(), 2);
    let retitled = patch(
        &ann,
        number,
        json!({"title": "klaud dashboard", "labels": ["a"]}),
    )
    .await;
    assert_eq!(
        (
            retitled.body["title"].as_str(),
            retitled.body["labels"][0]["name"].as_str()
        ),
        (Some("klaud dashboard"), Some("a"))
    );
}

#[tokio::test]
async fn the_listing_holds_pull_requests_too_and_filters_by_state_labels_and_creator() {
    let mut state = people();
    let mut created = Vec::new();
    for index in 0..5_i64 {
        let mut spec = issue(&format!("issue {index}"), BOT, &["klaud-dashboard"]);
        spec.created_at = Some(NOW.minus(3_600 - index * 60));
        created.push(state.add_issue(spec));
    }
    let mut pull = human_pull(0);
    pull.labels = vec!["klaud-dashboard".into()];
    let pull = state.add_pull_request(pull);
    let mut other = issue(
        "by ann",
        MAINTAINER_ANN.login,
        &["klaud-dashboard", "extra"],
    );
    other.created_at = Some(NOW.minus(10));
    let by_ann = state.add_issue(other);
    state.add_issue(issue("unlabelled", BOT, &[]));
    let server = FakeGitHub::start(state);
    let bot = Client::new(&server, Some(TOKEN));
    patch(&bot, created[0], json!({"state": "closed"})).await;

    let numbers = |answer: &crate::Answer| -> Vec<u64> {
        answer
            .body
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["number"].as_u64().unwrap())
            .collect()
    };
    let open = bot
        .get("/repos/acme/widgets/issues?labels=klaud-dashboard")
        .await;
    // Newest first; the pull request is listed, with its `pull_request` key.
    assert_eq!(
        numbers(&open),
        [pull, by_ann, created[4], created[3], created[2], created[1]]
    );
    assert!(open.body[0]["pull_request"].is_object());
    assert!(open.body[1].get("pull_request").is_none());
    let all = bot
        .get("/repos/acme/widgets/issues?labels=klaud-dashboard&state=all&direction=asc")
        .await;
    assert_eq!(numbers(&all).first(), Some(&created[0]));
    assert_eq!(numbers(&all).len(), 7);
    let closed = bot
        .get("/repos/acme/widgets/issues?labels=klaud-dashboard&state=closed")
        .await;
    assert_eq!(numbers(&closed), [created[0]]);
    let both_labels = bot
        .get("/repos/acme/widgets/issues?labels=klaud-dashboard,extra&state=all")
        .await;
    assert_eq!(numbers(&both_labels), [by_ann]);
    let by_creator = bot
        .get(&format!(
            "/repos/acme/widgets/issues?state=all&creator={}",
            MAINTAINER_ANN.login
        ))
        .await;
    assert_eq!(numbers(&by_creator), [by_ann]);
    let bad_state = bot.get("/repos/acme/widgets/issues?state=pinned").await;
    assert_eq!(bad_state.status, 422);

    let first = bot
        .get("/repos/acme/widgets/issues?labels=klaud-dashboard&state=all&per_page=3")
        .await;
    assert_eq!(numbers(&first).len(), 3);
    let relations = link_relations(&first);
    let next = &relations
        .iter()
        .find(|(relation, _)| relation == "next")
        .expect("a next link")
        .1;
    assert!(next.contains("labels=klaud-dashboard") && next.contains("page=2"));
    let second = bot.get(next).await;
    let last = bot
        .get("/repos/acme/widgets/issues?labels=klaud-dashboard&state=all&per_page=3&page=3")
        .await;
    let mut paged = numbers(&first);
    paged.extend(numbers(&second));
    paged.extend(numbers(&last));
    assert_eq!(
        paged,
        numbers(
            &bot.get("/repos/acme/widgets/issues?labels=klaud-dashboard&state=all")
                .await
        )
    );
    assert!(
        link_relations(&last)
            .iter()
            .all(|(relation, _)| relation != "next")
    );
}

#[tokio::test]
async fn an_issue_never_edited_has_no_revisions_and_its_first_edit_records_the_original() {
    let mut state = people();
    let number = state.add_issue(issue("dashboard", BOT, &[]));
    let server = FakeGitHub::start(state);
    let bot = Client::new(&server, Some(TOKEN));
    let ann = Client::new(&server, Some(MAINTAINER_ANN.token));

    let never = edits(&bot, number, json!({"first": 10})).await;
    let connection = &never["data"]["repository"]["issue"]["userContentEdits"];
    assert_eq!(connection["totalCount"], 0);
    assert_eq!(connection["nodes"], json!([]));
    assert_eq!(
        connection["pageInfo"],
        json!({"startCursor": null, "endCursor": null, "hasNextPage": false, "hasPreviousPage": false})
    );

    // A title change and a body set to what it already is are not revisions of the body.
    patch(
        &ann,
        number,
        json!({"title": "renamed", "body": "body of dashboard"}),
    )
    .await;
    assert!(server.state().body_edits_of(number).is_empty());

    set_now(&server, NOW.plus(60));
    patch(&ann, number, json!({"body": "- [x] pause"})).await;
    set_now(&server, NOW.plus(120));
    patch(&bot, number, json!({"body": "- [ ] pause"})).await;

    let answer = edits(&bot, number, json!({"first": 10})).await;
    let issue = &answer["data"]["repository"]["issue"];
    assert_eq!(issue["body"], "- [ ] pause");
    assert_eq!(issue["author"]["login"], "klaud-bot");
    let connection = &issue["userContentEdits"];
    assert_eq!(connection["totalCount"], 3);
    // Newest first; the original, by the author at creation time, last.
    assert_eq!(
        connection["nodes"],
        json!([
            {"editedAt": "2026-01-01T00:02:00Z", "editor": {"login": "klaud-bot"}, "diff": "- [ ] pause"},
            {"editedAt": "2026-01-01T00:01:00Z", "editor": {"login": MAINTAINER_ANN.login}, "diff": "- [x] pause"},
            {"editedAt": "2026-01-01T00:00:00Z", "editor": {"login": "klaud-bot"}, "diff": "body of dashboard"},
        ])
    );
    // The state holds them oldest first, as the helper reads them back.
    let recorded: Vec<Option<String>> = server
        .state()
        .body_edits_of(number)
        .iter()
        .map(|edit| edit.editor.clone())
        .collect();
    assert_eq!(
        recorded,
        [
            Some(BOT.to_string()),
            Some(MAINTAINER_ANN.login.into()),
            Some(BOT.to_string())
        ]
    );
    // A deleted account is a null editor.
    server.with_state(|state| state.forget_editor(MAINTAINER_ANN.login));
    let forgotten = edits(&bot, number, json!({"first": 10})).await;
    assert_eq!(
        forgotten["data"]["repository"]["issue"]["userContentEdits"]["nodes"][1]["editor"],
        Value::Null
    );
}

#[tokio::test]
async fn revisions_page_with_first_last_and_cursors() {
    let mut state = people();
    let number = state.add_issue(issue("dashboard", BOT, &[]));
    for minute in 1..=4 {
        state.now = Some(NOW.plus(minute * 60));
        state.edit_body(
            number,
            MAINTAINER_ANN.login,
            Some(format!("revision {minute}")),
        );
    }
    let server = FakeGitHub::start(state);
    let bot = Client::new(&server, Some(TOKEN));
    let diffs = |answer: &Value| -> Vec<String> {
        answer["data"]["repository"]["issue"]["userContentEdits"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|node| node["diff"].as_str().unwrap().to_string())
            .collect()
    };
    let info = |answer: &Value| {
        answer["data"]["repository"]["issue"]["userContentEdits"]["pageInfo"].clone()
    };

    let newest = edits(&bot, number, json!({"first": 2})).await;
    assert_eq!(diffs(&newest), ["revision 4", "revision 3"]);
    assert_eq!(info(&newest)["hasNextPage"], true);
    assert_eq!(info(&newest)["hasPreviousPage"], false);
    assert_eq!(
        newest["data"]["repository"]["issue"]["userContentEdits"]["totalCount"],
        5
    );
    let after = info(&newest)["endCursor"].clone();
    let next = edits(&bot, number, json!({"first": 2, "after": after})).await;
    assert_eq!(diffs(&next), ["revision 2", "revision 1"]);
    assert_eq!(info(&next)["hasNextPage"], true);
    assert_eq!(info(&next)["hasPreviousPage"], true);
    let rest = edits(
        &bot,
        number,
        json!({"first": 2, "after": info(&next)["endCursor"]}),
    )
    .await;
    assert_eq!(diffs(&rest), ["body of dashboard"]);
    assert_eq!(info(&rest)["hasNextPage"], false);

    let oldest = edits(&bot, number, json!({"last": 2})).await;
    assert_eq!(diffs(&oldest), ["revision 1", "body of dashboard"]);
    assert_eq!(info(&oldest)["hasPreviousPage"], true);
    assert_eq!(info(&oldest)["hasNextPage"], false);
    let before = edits(
        &bot,
        number,
        json!({"last": 2, "before": info(&oldest)["startCursor"]}),
    )
    .await;
    assert_eq!(diffs(&before), ["revision 3", "revision 2"]);

    let bad_cursor = edits(&bot, number, json!({"first": 2, "after": "nonsense"})).await;
    assert_eq!(bad_cursor["errors"][0]["type"], "INVALID_CURSOR_ARGUMENTS");
    let unbounded = edits(&bot, number, json!({})).await;
    assert_eq!(
        unbounded["errors"][0]["type"],
        "MISSING_PAGINATION_BOUNDARIES"
    );
    let too_many = edits(&bot, number, json!({"first": 101})).await;
    assert_eq!(too_many["errors"][0]["type"], "EXCESSIVE_PAGINATION");
}

#[tokio::test]
async fn a_pull_requests_number_is_not_an_issue_over_graphql_but_its_body_edits_are_kept() {
    let mut state = people();
    let pull = state.add_pull_request(human_pull(0));
    let server = FakeGitHub::start(state);
    let ann = Client::new(&server, Some(MAINTAINER_ANN.token));
    let patched = patch(&ann, pull, json!({"body": "edited"})).await;
    assert_eq!(patched.status, 200);
    assert!(patched.body["pull_request"].is_object());
    assert_eq!(server.state().body_edits_of(pull).len(), 2);
    let answer = edits(&ann, pull, json!({"first": 1})).await;
    assert_eq!(answer["data"]["repository"]["issue"], Value::Null);
    assert_eq!(answer["errors"][0]["type"], "NOT_FOUND");
}

#[tokio::test]
async fn a_collaborators_permission_reports_the_role_and_the_legacy_permission() {
    let state = people()
        .with_role("maintainer-max", Role::Maintain)
        .with_role("triager-tia", Role::Triage)
        .with_role("admin-ada", Role::Admin);
    let server = FakeGitHub::start(state);
    let bot = Client::new(&server, Some(TOKEN));
    let mut seen = Vec::new();
    for login in [
        MAINTAINER_ANN.login,
        READER_ROB.login,
        OUTSIDER_OLA.login,
        "maintainer-max",
        "triager-tia",
        "admin-ada",
        "acme",
    ] {
        let answer = bot
            .get(&format!(
                "/repos/acme/widgets/collaborators/{login}/permission"
            ))
            .await;
        assert_eq!(answer.status, 200, "{login}");
        assert_eq!(answer.body["user"]["login"], login);
        seen.push((
            login,
            answer.body["permission"].as_str().unwrap().to_string(),
            answer.body["role_name"].as_str().unwrap().to_string(),
        ));
    }
    let expected: Vec<(&str, String, String)> = [
        (MAINTAINER_ANN.login, "write", "write"),
        (READER_ROB.login, "read", "read"),
        (OUTSIDER_OLA.login, "none", "none"),
        ("maintainer-max", "write", "maintain"),
        ("triager-tia", "read", "triage"),
        ("admin-ada", "admin", "admin"),
        ("acme", "admin", "admin"),
    ]
    .into_iter()
    .map(|(login, permission, role)| (login, permission.to_string(), role.to_string()))
    .collect();
    assert_eq!(seen, expected);

    let unknown = bot
        .get("/repos/acme/widgets/collaborators/nobody-at-all/permission")
        .await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.body["message"], "nobody-at-all is not a user");
    server.with_state(|state| state.remove_role(MAINTAINER_ANN.login));
    let revoked = bot
        .get(&format!(
            "/repos/acme/widgets/collaborators/{}/permission",
            MAINTAINER_ANN.login
        ))
        .await;
    assert_eq!(revoked.body["permission"], "none");
}
