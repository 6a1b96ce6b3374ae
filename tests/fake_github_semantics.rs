//! GitHub's semantics as the fake GitHub serves them, checked over plain HTTP: pagination, the
//! 1000-result cap, ref and contents conflicts, run cancellation, GraphQL errors, credentials,
//! rate limits, seeded faults, issues with their body revisions and collaborators' permissions,
//! labels, locks and commit statuses, and the benchmark scenario's figures.

use klaud_fake_github as fake_github;
#[path = "fake_github_semantics/faults_and_limits.rs"]
mod faults_and_limits;
#[path = "fake_github_semantics/issues_and_permissions.rs"]
mod issues_and_permissions;
#[path = "fake_github_semantics/labels_locks_statuses.rs"]
mod labels_locks_statuses;
#[path = "fake_github_semantics/pulls_and_runs.rs"]
mod pulls_and_runs;
#[path = "fake_github_semantics/scenario_figures.rs"]
mod scenario_figures;

use base64::Engine;
use fake_github::{
    CommitSpec, FakeGitHub, FakeGitHubHandle, PullRequestSpec, RepoState, RunSpec, Timestamp,
};
use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

const TOKEN: &str = "bot-token";
const BOT: &str = "klaud-bot";
const MAINTAINER_TOKEN: &str = "maintainer-token";
const MAINTAINER: &str = "maintainer-ada";
const NOW: Timestamp = Timestamp(1_767_225_600); // 2026-01-01T00:00:00Z

fn repository() -> RepoState {
    RepoState::new("acme", "widgets")
        .with_now(NOW)
        .with_token(TOKEN, BOT)
        .with_token(MAINTAINER_TOKEN, MAINTAINER)
}

/// A plain HTTP client speaking to the fake as one token.
struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

struct Answer {
    status: u16,
    headers: HeaderMap,
    body: Value,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
}

impl Client {
    fn new(server: &FakeGitHubHandle, token: Option<&str>) -> Self {
        Client {
            http: fake_github::http_client(),
            base: server.base_url(),
            token: token.map(str::to_string),
        }
    }

    async fn send(&self, method: Method, path: &str, body: Option<Value>) -> Answer {
        let url = if path.starts_with("http") {
            path.to_string()
        } else {
            format!("{}{path}", self.base)
        };
        let mut request = self.http.request(method, url);
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("the fake answers");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.expect("a body");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).expect("JSON body")
        };
        Answer {
            status,
            headers,
            body,
        }
    }

    async fn get(&self, path: &str) -> Answer {
        self.send(Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> Answer {
        self.send(Method::POST, path, Some(body)).await
    }
}

fn link_relations(answer: &Answer) -> Vec<(String, String)> {
    answer
        .header("link")
        .unwrap_or("")
        .split(", ")
        .filter(|part| !part.is_empty())
        .map(|part| {
            let (url, relation) = part.split_once("; ").expect("url; rel");
            let url = url
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_string();
            let relation = relation
                .trim_start_matches("rel=\"")
                .trim_end_matches('"')
                .to_string();
            (relation, url)
        })
        .collect()
}

fn human_pull(index: usize) -> PullRequestSpec {
    PullRequestSpec {
        title: format!("change {index}"),
        author: "alice".to_string(),
        head_ref: format!("feature/{index}"),
        created_at: Some(NOW.minus(index as i64 * 60)),
        ..PullRequestSpec::default()
    }
}

#[tokio::test]
async fn listings_paginate_with_github_link_headers_that_keep_the_query() {
    let mut state = repository();
    for index in 0..105 {
        state.add_pull_request(human_pull(index));
    }
    let repository_id = state.repository_id;
    let server = FakeGitHub::start(state);
    let client = Client::new(&server, Some(TOKEN));

    let first = client.get("/repos/acme/widgets/pulls?state=open").await;
    assert_eq!(
        first.body.as_array().unwrap().len(),
        30,
        "per_page defaults to 30"
    );
    let relations = link_relations(&first);
    let names: Vec<&str> = relations.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["next", "last"]);
    assert_eq!(
        relations[0].1,
        format!(
            "{}/repositories/{repository_id}/pulls?state=open&page=2",
            server.base_url()
        ),
        "GitHub's links name the repository by its id"
    );
    assert!(relations[1].1.ends_with("page=4"));
    let by_id = client.get(&format!("/repositories/{repository_id}")).await;
    assert_eq!(by_id.body["full_name"], "acme/widgets");
    let other_repository = client
        .get(&format!("/repositories/{}/pulls", repository_id + 1))
        .await;
    assert_eq!(other_repository.status, 404);

    let middle = client.get(&relations[0].1).await;
    let names: Vec<String> = link_relations(&middle)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(names, ["prev", "next", "last", "first"]);

    let mut seen = Vec::new();
    let mut next = Some("/repos/acme/widgets/pulls?state=all&per_page=20".to_string());
    while let Some(url) = next {
        let page = client.get(&url).await;
        seen.extend(
            page.body
                .as_array()
                .unwrap()
                .iter()
                .map(|pull| pull["number"].as_u64().unwrap()),
        );
        next = link_relations(&page)
            .into_iter()
            .find(|(name, _)| name == "next")
            .map(|(_, url)| url);
    }
    assert_eq!(
        seen.len(),
        105,
        "following next visits every pull request once"
    );
    assert_eq!(
        seen.first(),
        Some(&1),
        "newest first: pull 1 was created last"
    );

    let clamped = client.get("/repos/acme/widgets/pulls?per_page=500").await;
    assert_eq!(
        clamped.body.as_array().unwrap().len(),
        100,
        "per_page is at most 100"
    );
    let last = link_relations(&clamped)
        .into_iter()
        .find(|(name, _)| name == "last")
        .unwrap();
    assert!(last.1.ends_with("per_page=500&page=2"));
    let single = client
        .get("/repos/acme/widgets/pulls?head=acme:feature/7")
        .await;
    assert_eq!(single.body.as_array().unwrap().len(), 1);
    assert!(
        single.header("link").is_none(),
        "one page needs no Link header"
    );
}

#[tokio::test]
async fn filtered_run_listings_stop_at_1000_results_while_total_count_stays_true() {
    let mut state = repository();
    for index in 0..2500 {
        state.add_run(RunSpec {
            workflow: "klaud-plan.yml".to_string(),
            actor: Some(BOT.to_string()),
            created_at: Some(NOW.minus(index * 600)),
            ..RunSpec::default()
        });
    }
    let server = FakeGitHub::start(state);
    let client = Client::new(&server, Some(TOKEN));

    let tenth = client
        .get("/repos/acme/widgets/actions/workflows/klaud-plan.yml/runs?actor=klaud-bot&per_page=100&page=10")
        .await;
    assert_eq!(tenth.body["total_count"], 2500);
    assert_eq!(tenth.body["workflow_runs"].as_array().unwrap().len(), 100);
    assert!(
        link_relations(&tenth)
            .iter()
            .all(|(name, _)| name != "next"),
        "page 10 is the last reachable one"
    );
    let beyond = client
        .get("/repos/acme/widgets/actions/workflows/klaud-plan.yml/runs?actor=klaud-bot&per_page=100&page=11")
        .await;
    assert_eq!(beyond.body["total_count"], 2500);
    assert_eq!(beyond.body["workflow_runs"], json!([]));

    let unfiltered = client
        .get("/repos/acme/widgets/actions/runs?per_page=100&page=25")
        .await;
    assert_eq!(
        unfiltered.body["workflow_runs"].as_array().unwrap().len(),
        100,
        "unfiltered listings are not capped"
    );

    let window = format!("{}..{}", NOW.minus(10 * 600 - 1), NOW);
    let narrowed = client
        .get(&format!(
            "/repos/acme/widgets/actions/runs?created={window}&status=success"
        ))
        .await;
    assert_eq!(
        narrowed.body["total_count"], 10,
        "created accepts full-timestamp ranges"
    );
    let newest = &narrowed.body["workflow_runs"][0];
    assert_eq!(newest["created_at"], NOW.to_string());
    for field in ["id", "run_attempt", "workflow_id"] {
        assert!(newest[field].is_u64(), "{field} is an integer");
    }
    assert_eq!(newest["actor"]["login"], BOT);
    assert_eq!(newest["repository"]["full_name"], "acme/widgets");
    assert_eq!(newest["path"], ".github/workflows/klaud-plan.yml");
}

#[tokio::test]
async fn refs_answer_422_for_existing_missing_and_non_fast_forward_updates() {
    let mut state = repository();
    let main = state.branch_sha("main").unwrap().to_string();
    let ahead = state.push_commits("topic", vec![CommitSpec::by(BOT).file("a.txt", "a")]);
    let unrelated = state.add_commit(None, CommitSpec::by(BOT).file("b.txt", "b"));
    let server = FakeGitHub::start(state);
    let client = Client::new(&server, Some(TOKEN));

    let created = client
        .post(
            "/repos/acme/widgets/git/refs",
            json!({"ref": "refs/heads/klaud/claim-x", "sha": main}),
        )
        .await;
    assert_eq!(created.status, 201);
    assert_eq!(created.body["ref"], "refs/heads/klaud/claim-x");
    let again = client
        .post(
            "/repos/acme/widgets/git/refs",
            json!({"ref": "refs/heads/klaud/claim-x", "sha": main}),
        )
        .await;
    assert_eq!(
        (again.status, again.body["message"].as_str()),
        (422, Some("Reference already exists"))
    );

    let read = client
        .get("/repos/acme/widgets/git/ref/heads/klaud/claim-x")
        .await;
    assert_eq!(read.body["object"]["sha"], main.as_str());
    let matching = client
        .get("/repos/acme/widgets/git/matching-refs/heads/klaud/")
        .await;
    assert_eq!(matching.body.as_array().unwrap().len(), 1);

    let forward = client
        .send(
            Method::PATCH,
            "/repos/acme/widgets/git/refs/heads/klaud/claim-x",
            Some(json!({"sha": ahead})),
        )
        .await;
    assert_eq!(forward.status, 200, "a descendant is a fast-forward");
    let sideways = client
        .send(
            Method::PATCH,
            "/repos/acme/widgets/git/refs/heads/klaud/claim-x",
            Some(json!({"sha": unrelated})),
        )
        .await;
    assert_eq!(
        (sideways.status, sideways.body["message"].as_str()),
        (422, Some("Update is not a fast forward"))
    );
    let forced = client
        .send(
            Method::PATCH,
            "/repos/acme/widgets/git/refs/heads/klaud/claim-x",
            Some(json!({"sha": unrelated, "force": true})),
        )
        .await;
    assert_eq!(forced.status, 200);

    let deleted = client
        .send(
            Method::DELETE,
            "/repos/acme/widgets/git/refs/heads/klaud/claim-x",
            None,
        )
        .await;
    assert_eq!(deleted.status, 204);
    let deleted_again = client
        .send(
            Method::DELETE,
            "/repos/acme/widgets/git/refs/heads/klaud/claim-x",
            None,
        )
        .await;
    assert_eq!(
        (deleted_again.status, deleted_again.body["message"].as_str()),
        (422, Some("Reference does not exist"))
    );
    assert_eq!(
        client
            .get("/repos/acme/widgets/git/ref/heads/klaud/claim-x")
            .await
            .status,
        404
    );
}

fn encoded(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[tokio::test]
async fn an_orphan_state_branch_holds_a_file_written_with_compare_and_swap() {
    let server = FakeGitHub::start(repository());
    let client = Client::new(&server, Some(TOKEN));
    let path = "/repos/acme/widgets/contents/ledger.json";

    let missing_branch = client
        .send(
            Method::PUT,
            path,
            Some(json!({"message": "m", "content": encoded("{}"), "branch": "klaud/state"})),
        )
        .await;
    assert_eq!(
        (
            missing_branch.status,
            missing_branch.body["message"].as_str()
        ),
        (404, Some("Branch klaud/state not found"))
    );
    assert_eq!(
        client.get(&format!("{path}?ref=klaud/state")).await.status,
        404
    );

    let tree = client.post("/repos/acme/widgets/git/trees", json!({"tree": [{"path": "README.md", "mode": "100644", "type": "blob", "content": "state\n"}]})).await;
    assert_eq!(tree.status, 201);
    let commit = client
        .post(
            "/repos/acme/widgets/git/commits",
            json!({"message": "start state", "tree": tree.body["sha"], "parents": []}),
        )
        .await;
    assert_eq!(commit.status, 201);
    assert_eq!(commit.body["parents"], json!([]));
    let branch = client
        .post(
            "/repos/acme/widgets/git/refs",
            json!({"ref": "refs/heads/klaud/state", "sha": commit.body["sha"]}),
        )
        .await;
    assert_eq!(branch.status, 201);

    let created = client
        .send(Method::PUT, path, Some(json!({"message": "select run 1: claim", "content": encoded("{\"version\":1}"), "branch": "klaud/state"})))
        .await;
    assert_eq!(created.status, 201);
    let first_sha = created.body["content"]["sha"].as_str().unwrap().to_string();

    let without_sha = client
        .send(
            Method::PUT,
            path,
            Some(json!({"message": "m", "content": encoded("{}"), "branch": "klaud/state"})),
        )
        .await;
    assert_eq!(without_sha.status, 422);
    assert_eq!(
        without_sha.body["message"],
        "Invalid request.\n\n\"sha\" wasn't supplied."
    );

    let updated = client
        .send(Method::PUT, path, Some(json!({"message": "recover run 2: release", "content": encoded("{\"version\":1,\"n\":2}"), "branch": "klaud/state", "sha": first_sha})))
        .await;
    assert_eq!(updated.status, 200);
    let stale = client
        .send(Method::PUT, path, Some(json!({"message": "m", "content": encoded("{}"), "branch": "klaud/state", "sha": first_sha})))
        .await;
    assert_eq!(stale.status, 409);
    assert_eq!(
        stale.body["message"],
        format!("ledger.json does not match {first_sha}")
    );
    assert_eq!(stale.body["status"], "409");

    let read = client.get(&format!("{path}?ref=klaud/state")).await;
    let content: String = read.body["content"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .collect();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(content)
        .unwrap();
    assert_eq!(decoded, b"{\"version\":1,\"n\":2}");
    assert_eq!(read.body["sha"], updated.body["content"]["sha"]);

    let history = client
        .get("/repos/acme/widgets/commits?sha=klaud/state&path=ledger.json")
        .await;
    let messages: Vec<&str> = history
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["commit"]["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages,
        ["recover run 2: release", "select run 1: claim"],
        "the branch history is the audit log"
    );
    assert_eq!(history.body[0]["committer"]["login"], BOT);
}

/// The paths of a tree answer's entries, each with its type.
fn tree_paths(answer: &Answer) -> Vec<(String, String)> {
    answer.body["tree"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            (
                entry["path"].as_str().unwrap().to_string(),
                entry["type"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_tree_lists_its_own_entries_or_with_recursive_every_entry_in_git_order() {
    let server = FakeGitHub::start(repository());
    let client = Client::new(&server, Some(TOKEN));
    let blob =
        |path: &str| json!({"path": path, "mode": "100644", "type": "blob", "content": path});
    let tree = client
        .post(
            "/repos/acme/widgets/git/trees",
            json!({"tree": [blob("ledger.json"), blob("records/b.json"), blob("records/a.json"),
                            blob("records-old.json")]}),
        )
        .await;
    assert_eq!(tree.status, 201);
    let own = [
        ("ledger.json".to_string(), "blob".to_string()),
        ("records-old.json".to_string(), "blob".to_string()),
        ("records".to_string(), "tree".to_string()),
    ];
    assert_eq!(tree_paths(&tree), own, "the new tree's own entries");
    let sha = tree.body["sha"].as_str().unwrap();

    let listed = client
        .get(&format!("/repos/acme/widgets/git/trees/{sha}"))
        .await;
    assert_eq!(tree_paths(&listed), own);
    let recursive = client
        .get(&format!("/repos/acme/widgets/git/trees/{sha}?recursive=1"))
        .await;
    let every: Vec<String> = tree_paths(&recursive)
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    assert_eq!(
        every,
        [
            "ledger.json",
            "records-old.json",
            "records",
            "records/a.json",
            "records/b.json"
        ]
    );
    let records = &tree.body["tree"][2]["sha"];
    let directory = client
        .get(&format!(
            "/repos/acme/widgets/git/trees/{}",
            records.as_str().unwrap()
        ))
        .await;
    assert_eq!(
        tree_paths(&directory),
        [
            ("a.json".to_string(), "blob".to_string()),
            ("b.json".to_string(), "blob".to_string())
        ],
        "a directory's sha is a tree of its own"
    );

    let commit = client
        .post(
            "/repos/acme/widgets/git/commits",
            json!({"message": "state", "tree": sha, "parents": []}),
        )
        .await;
    let by_commit = client
        .get(&format!(
            "/repos/acme/widgets/git/trees/{}?recursive=1",
            commit.body["sha"].as_str().unwrap()
        ))
        .await;
    assert_eq!(
        (by_commit.status, &by_commit.body["sha"]),
        (200, &tree.body["sha"]),
        "a commit names its tree"
    );
}

#[tokio::test]
async fn a_tree_built_on_a_base_deletes_with_a_null_sha_and_refuses_deleting_nothing() {
    let server = FakeGitHub::start(repository());
    let client = Client::new(&server, Some(TOKEN));
    let base = client
        .post(
            "/repos/acme/widgets/git/trees",
            json!({"tree": [
                {"path": "ledger.json", "mode": "100644", "type": "blob", "content": "{}"},
                {"path": "records/a.json", "mode": "100644", "type": "blob", "content": "{}"},
            ]}),
        )
        .await;
    let deletion =
        |path: &str| json!({"path": path, "mode": "100644", "type": "blob", "sha": null});

    let pruned = client
        .post(
            "/repos/acme/widgets/git/trees",
            json!({"base_tree": base.body["sha"], "tree": [deletion("records/a.json")]}),
        )
        .await;
    assert_eq!(pruned.status, 201);
    assert_eq!(
        tree_paths(&pruned),
        [("ledger.json".to_string(), "blob".to_string())],
        "the last record gone, its directory goes too"
    );

    let missing = client
        .post(
            "/repos/acme/widgets/git/trees",
            json!({"base_tree": base.body["sha"], "tree": [deletion("records/b.json")]}),
        )
        .await;
    assert_eq!(
        (missing.status, missing.body["message"].as_str()),
        (422, Some("GitRPC::BadObjectState"))
    );
}
