//! The fake GitHub's answers checked against GitHub's official OpenAPI description: every
//! operation klaud calls is sent to a running fake over plain HTTP, and each JSON body is
//! validated against the schema GitHub documents for that operation and status.
//!
//! The schemas come from `tests/openapi/github-subset.json`, extracted from the npm package
//! `@octokit/openapi` by `tests/openapi/extract.mjs` (see `tests/openapi/README.md`).

use klaud_fake_github as fake_github;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use base64::Engine;
use fake_github::{
    ClosedSpec, CommitSpec, FakeGitHub, FakeGitHubHandle, IssueSpec, JobSpec, PullRequestSpec,
    RepoState, Role, RunSpec, Timestamp,
};
use jsonschema::Validator;
use reqwest::Method;
use serde_json::{Value, json};

const SUBSET: &str = include_str!("openapi/github-subset.json");

const TOKEN: &str = "bot-token";
const BOT: &str = "klaud-bot";
const MAINTAINER_TOKEN: &str = "maintainer-token";
const MAINTAINER: &str = "maintainer-ada";
const NOW: Timestamp = Timestamp(1_767_225_600); // 2026-01-01T00:00:00Z
const REPO: &str = "/repos/acme/widgets";
const STATE_BRANCH: &str = "klaud/state";

/// The extracted schemas, with one compiled validator per operation and status.
struct Schemas {
    subset: Value,
    validators: HashMap<(String, u16), Option<Validator>>,
}

impl Schemas {
    fn load() -> Self {
        Schemas {
            subset: serde_json::from_str(SUBSET).expect("the subset is JSON"),
            validators: HashMap::new(),
        }
    }

    fn operation_names(&self) -> BTreeSet<String> {
        self.subset["operations"]
            .as_object()
            .expect("operations")
            .keys()
            .cloned()
            .collect()
    }

    /// A validator for `schema`, resolving `#/components/schemas/…` inside the subset.
    fn compile(&self, schema: &Value) -> Validator {
        let mut root = schema.clone();
        let object = root.as_object_mut().expect("a schema object");
        object.insert("components".into(), self.subset["components"].clone());
        jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&root)
            .unwrap_or_else(|error| panic!("the schema compiles: {error}"))
    }

    /// The validator for an operation's documented response (`None`: documented without a body).
    fn validator(&mut self, operation: &str, status: u16) -> Result<&Option<Validator>, String> {
        let key = (operation.to_string(), status);
        if !self.validators.contains_key(&key) {
            let Some(declared) = self.subset["operations"].get(operation) else {
                panic!("{operation} is not in the subset: add it to tests/openapi/extract.mjs");
            };
            let Some(schema) = declared["responses"].get(status.to_string()) else {
                return Err(format!(
                    "{operation}: GitHub documents no {status} response"
                ));
            };
            let validator = (!schema.is_null()).then(|| self.compile(schema));
            self.validators.insert(key.clone(), validator);
        }
        Ok(&self.validators[&key])
    }

    /// Problems of `body` as the answer `status` to `operation`; empty when it conforms.
    fn problems(&mut self, operation: &str, status: u16, body: &Value) -> Vec<String> {
        match self.validator(operation, status) {
            Err(problem) => vec![problem],
            Ok(None) if body.is_null() => Vec::new(),
            Ok(None) => vec![format!(
                "{operation} {status}: GitHub documents no body, the fake sent {body}"
            )],
            Ok(Some(validator)) => validator
                .iter_errors(body)
                .map(|error| {
                    format!(
                        "{operation} {status}: at {:?} (schema {}): {error}",
                        error.instance_path().to_string(),
                        error.schema_path()
                    )
                })
                .collect(),
        }
    }

    /// Problems of `body` as an instance of the component schema `name`.
    fn component_problems(&self, name: &str, body: &Value) -> Vec<String> {
        let validator = self.compile(&json!({ "$ref": format!("#/components/schemas/{name}") }));
        validator
            .iter_errors(body)
            .map(|error| {
                format!(
                    "{name}: at {:?}: {error}",
                    error.instance_path().to_string()
                )
            })
            .collect()
    }
}

/// Sends requests to the fake and checks each answer against the subset, collecting every
/// divergence so that one run reports all of them.
struct Checker {
    http: reqwest::Client,
    base: String,
    schemas: Schemas,
    problems: Vec<String>,
    /// Operation → statuses seen.
    covered: BTreeMap<String, BTreeSet<u16>>,
}

struct Answer {
    status: u16,
    body: Value,
}

impl Checker {
    fn new(server: &FakeGitHubHandle) -> Self {
        Checker {
            http: fake_github::http_client(),
            base: server.base_url(),
            schemas: Schemas::load(),
            problems: Vec::new(),
            covered: BTreeMap::new(),
        }
    }

    async fn send(&self, method: &Method, path: &str, token: &str, body: Option<&Value>) -> Answer {
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .header("authorization", format!("Bearer {token}"))
            .header("accept", "application/vnd.github+json");
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.expect("the fake answers");
        let status = response.status().as_u16();
        let text = response.text().await.expect("a body");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path}: not JSON: {text}"))
        };
        Answer { status, body }
    }

    /// Sends `method path` as the bot, expects `expected`, and validates the body against the
    /// schema of `operation` (`"METHOD /path/template"`) for that status.
    async fn call(
        &mut self,
        operation: &str,
        path: &str,
        body: Option<Value>,
        expected: u16,
    ) -> Value {
        self.call_as(TOKEN, operation, path, body, expected).await
    }

    async fn call_as(
        &mut self,
        token: &str,
        operation: &str,
        path: &str,
        body: Option<Value>,
        expected: u16,
    ) -> Value {
        let method: Method = operation
            .split_once(' ')
            .and_then(|(method, _)| method.parse().ok())
            .expect("METHOD /template");
        let answer = self.send(&method, path, token, body.as_ref()).await;
        assert_eq!(
            answer.status, expected,
            "{method} {path} answered {}: {}",
            answer.status, answer.body
        );
        let problems = self
            .schemas
            .problems(operation, answer.status, &answer.body);
        self.problems.extend(problems);
        self.covered
            .entry(operation.to_string())
            .or_default()
            .insert(answer.status);
        answer.body
    }

    /// Sends `GET path` as the bot without following a redirect, expects `302`, checks it against
    /// `operation` (GitHub documents it without a body) and returns its `Location`.
    async fn call_redirect(&mut self, operation: &str, path: &str) -> String {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("a client");
        let response = client
            .get(format!("{}{path}", self.base))
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("accept", "application/vnd.github+json")
            .send()
            .await
            .expect("the fake answers");
        let status = response.status().as_u16();
        assert_eq!(status, 302, "GET {path} answered {status}");
        let location = response
            .headers()
            .get("location")
            .and_then(|value| value.to_str().ok())
            .expect("a Location")
            .to_string();
        let text = response.text().await.expect("a body");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        let problems = self.schemas.problems(operation, status, &body);
        self.problems.extend(problems);
        self.covered
            .entry(operation.to_string())
            .or_default()
            .insert(status);
        location
    }

    /// Validates an answer against a component schema directly (for responses the description
    /// declares without a body schema).
    fn check_component(&mut self, name: &str, body: &Value) {
        let problems = self.schemas.component_problems(name, body);
        self.problems.extend(problems);
    }

    fn assert_conforms(&self) {
        assert!(
            self.problems.is_empty(),
            "the fake diverges from GitHub's OpenAPI description in {} place(s):\n{}",
            self.problems.len(),
            self.problems.join("\n")
        );
    }
}

/// A repository with open, draft, merged, closed and fork pull requests (labels, comments,
/// commits with and without GitHub accounts), a state branch holding a file, and workflow runs
/// in every phase with jobs.
fn seeded() -> RepoState {
    let mut state = RepoState::new("acme", "widgets")
        .with_now(NOW)
        .with_token(TOKEN, BOT)
        .with_token(MAINTAINER_TOKEN, MAINTAINER);
    state.push_commits(
        "main",
        vec![
            CommitSpec::by(MAINTAINER)
                .message("Add the library")
                .file("src/lib.rs", "pub fn answer() -> u32 { 42 }\n")
                .file("docs/guide.md", "# Guide\n")
                .at(NOW.minus(86_400)),
        ],
    );
    let open = state.add_pull_request(PullRequestSpec {
        title: "Speed up the parser".to_string(),
        body: Some("Makes parsing 2x faster.".to_string()),
        author: BOT.to_string(),
        head_ref: "klaud/parser-speed".to_string(),
        labels: vec!["klaud".to_string(), "performance".to_string()],
        commits: vec![
            CommitSpec::by(BOT)
                .message("Speed up the parser")
                .file("src/lib.rs", "pub fn answer() -> u32 { 41 + 1 }\n"),
            CommitSpec {
                message: "Tweak from a laptop".to_string(),
                author_login: None,
                committer_login: None,
                files: vec![("src/fast.rs".to_string(), Some("// fast\n".to_string()))],
                at: None,
            },
        ],
        created_at: Some(NOW.minus(7_200)),
        ..PullRequestSpec::default()
    });
    state.add_comment(open, MAINTAINER, "Looks good, one question.");
    state.add_comment(open, BOT, "Answered.");
    state.add_comment(open, "github-actions[bot]", "Checks passed.");
    state.add_pull_request(PullRequestSpec {
        title: "WIP: new cache".to_string(),
        author: "alice".to_string(),
        head_ref: "cache".to_string(),
        draft: true,
        created_at: Some(NOW.minus(3_600)),
        ..PullRequestSpec::default()
    });
    state.add_pull_request(PullRequestSpec {
        title: "Fix the docs".to_string(),
        author: MAINTAINER.to_string(),
        head_ref: "docs-fix".to_string(),
        created_at: Some(NOW.minus(50_000)),
        closed: Some(ClosedSpec {
            by: MAINTAINER.to_string(),
            merged: true,
            delete_branch: true,
            ..ClosedSpec::default()
        }),
        ..PullRequestSpec::default()
    });
    state.add_pull_request(PullRequestSpec {
        title: "Rejected idea".to_string(),
        author: BOT.to_string(),
        head_ref: "klaud/rejected".to_string(),
        labels: vec!["klaud".to_string()],
        created_at: Some(NOW.minus(40_000)),
        closed: Some(ClosedSpec {
            by: MAINTAINER.to_string(),
            ..ClosedSpec::default()
        }),
        ..PullRequestSpec::default()
    });
    state.add_pull_request(PullRequestSpec {
        title: "From a fork".to_string(),
        author: "mallory".to_string(),
        head_ref: "patch-1".to_string(),
        head_repo: Some("mallory/widgets".to_string()),
        created_at: Some(NOW.minus(20_000)),
        ..PullRequestSpec::default()
    });
    state.add_issue(IssueSpec {
        title: "klaud dashboard".to_string(),
        body: Some("- [ ] pause".to_string()),
        author: BOT.to_string(),
        labels: vec!["klaud-dashboard".to_string()],
        created_at: Some(NOW.minus(5_000)),
    });
    state.add_issue(IssueSpec {
        title: "A question".to_string(),
        body: None,
        author: MAINTAINER.to_string(),
        labels: Vec::new(),
        created_at: Some(NOW.minus(4_000)),
    });
    state.set_role(MAINTAINER, Role::Maintain);
    state.set_role("triager-tia", Role::Triage);
    // GitHub's description types a pull request's label descriptions as non-null strings.
    for label in state.labels.values_mut() {
        label.description = Some(format!("Marks {} pull requests", label.name));
    }
    state.put_file(STATE_BRANCH, "ledger.json", "{\"version\": 1}\n");
    let plan_sha = state.branch_sha("klaud/parser-speed").map(str::to_string);
    state.add_run(RunSpec {
        workflow: "klaud-plan.yml".to_string(),
        head_branch: Some("main".to_string()),
        event: "schedule".to_string(),
        created_at: Some(NOW.minus(10_000)),
        jobs: vec![
            JobSpec::completed("plan", "success"),
            JobSpec::completed("report", "skipped"),
        ],
        ..RunSpec::default()
    });
    state.add_run(RunSpec {
        workflow: "klaud-run.yml".to_string(),
        head_branch: Some("klaud/parser-speed".to_string()),
        head_sha: plan_sha,
        event: "workflow_dispatch".to_string(),
        status: "in_progress".to_string(),
        conclusion: None,
        actor: Some(BOT.to_string()),
        triggering_actor: Some("github-actions[bot]".to_string()),
        created_at: Some(NOW.minus(600)),
        jobs: vec![JobSpec::in_progress("agent")],
        ..RunSpec::default()
    });
    state.add_run(RunSpec {
        workflow: "ci.yml".to_string(),
        head_branch: Some("patch-1".to_string()),
        event: "pull_request".to_string(),
        conclusion: Some("failure".to_string()),
        actor: Some("mallory".to_string()),
        head_repository: Some("mallory/widgets".to_string()),
        created_at: Some(NOW.minus(19_000)),
        jobs: vec![JobSpec::completed("test", "failure")],
        ..RunSpec::default()
    });
    state.add_run(RunSpec {
        workflow: "ci.yml".to_string(),
        head_branch: Some("cache".to_string()),
        event: "push".to_string(),
        status: "queued".to_string(),
        conclusion: None,
        created_at: Some(NOW.minus(60)),
        ..RunSpec::default()
    });
    let failed_job = state
        .jobs
        .values()
        .flatten()
        .find(|job| job.conclusion.as_deref() == Some("failure"))
        .map(|job| job.id)
        .expect("a failed job");
    state.set_job_log(failed_job, FAILED_JOB_LOG);
    state
}

/// The log of the seeded failed job.
const FAILED_JOB_LOG: &str =
    "2026-01-01T00:00:00.0000000Z ##[group]Run cargo test\nerror: 1 test failed\n";

fn pull_numbers(state: &RepoState) -> Vec<u64> {
    state.pulls.keys().copied().collect()
}

#[tokio::test]
async fn every_operation_klaud_uses_answers_in_githubs_documented_shape() {
    let server = FakeGitHub::start(seeded());
    let mut checker = Checker::new(&server);
    let state = server.state();

    // The repository.
    checker
        .call("GET /repos/{owner}/{repo}", REPO, None, 200)
        .await;

    // Pull requests: every kind, listed and one by one, with their commits and files.
    for query in ["", "?state=all", "?state=closed&per_page=2"] {
        checker
            .call(
                "GET /repos/{owner}/{repo}/pulls",
                &format!("{REPO}/pulls{query}"),
                None,
                200,
            )
            .await;
    }
    for number in pull_numbers(&state) {
        for (operation, suffix) in [
            ("GET /repos/{owner}/{repo}/pulls/{pull_number}", ""),
            (
                "GET /repos/{owner}/{repo}/pulls/{pull_number}/commits",
                "/commits",
            ),
            (
                "GET /repos/{owner}/{repo}/pulls/{pull_number}/files",
                "/files",
            ),
            ("GET /repos/{owner}/{repo}/issues/{issue_number}", ""),
            (
                "GET /repos/{owner}/{repo}/issues/{issue_number}/comments",
                "/comments",
            ),
        ] {
            let kind = if operation.contains("/pulls/") {
                "pulls"
            } else {
                "issues"
            };
            checker
                .call(
                    operation,
                    &format!("{REPO}/{kind}/{number}{suffix}"),
                    None,
                    200,
                )
                .await;
        }
    }
    let update = "PATCH /repos/{owner}/{repo}/pulls/{pull_number}";
    checker
        .call(
            update,
            &format!("{REPO}/pulls/2"),
            Some(json!({"title": "WIP: a new cache"})),
            200,
        )
        .await;
    checker
        .call(
            update,
            &format!("{REPO}/pulls/2"),
            Some(json!({"state": "closed"})),
            200,
        )
        .await;
    checker
        .call(
            update,
            &format!("{REPO}/pulls/2"),
            Some(json!({"state": "open"})),
            200,
        )
        .await;

    // Labels and comments.
    let labels = "/repos/{owner}/{repo}/issues/{issue_number}/labels";
    checker
        .call(
            &format!("POST {labels}"),
            &format!("{REPO}/issues/2/labels"),
            Some(json!({"labels": ["klaud", "needs-review"]})),
            200,
        )
        .await;
    checker
        .call(
            "DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
            &format!("{REPO}/issues/2/labels/needs-review"),
            None,
            200,
        )
        .await;
    let comment = checker
        .call(
            "POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
            &format!("{REPO}/issues/1/comments"),
            Some(json!({"body": "klaud: run 123 selected this pull request."})),
            201,
        )
        .await;
    let comment_id = comment["id"].as_u64().expect("a comment id");
    checker
        .call(
            "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}",
            &format!("{REPO}/issues/comments/{comment_id}"),
            Some(json!({"body": "klaud: run 124 selected this pull request."})),
            200,
        )
        .await;

    // Refs and commits.
    let main_sha = state.branch_sha("main").expect("main").to_string();
    let feature_sha = state
        .branch_sha("klaud/parser-speed")
        .expect("feature")
        .to_string();
    checker
        .call(
            "GET /repos/{owner}/{repo}/git/ref/{ref}",
            &format!("{REPO}/git/ref/heads/main"),
            None,
            200,
        )
        .await;
    for prefix in ["heads/klaud/", "heads/", "tags/"] {
        checker
            .call(
                "GET /repos/{owner}/{repo}/git/matching-refs/{ref}",
                &format!("{REPO}/git/matching-refs/{prefix}"),
                None,
                200,
            )
            .await;
    }
    checker
        .call(
            "POST /repos/{owner}/{repo}/git/refs",
            &format!("{REPO}/git/refs"),
            Some(json!({"ref": "refs/heads/klaud/scratch", "sha": main_sha})),
            201,
        )
        .await;
    checker
        .call(
            "PATCH /repos/{owner}/{repo}/git/refs/{ref}",
            &format!("{REPO}/git/refs/heads/klaud/scratch"),
            Some(json!({"sha": feature_sha})),
            200,
        )
        .await;
    checker
        .call(
            "DELETE /repos/{owner}/{repo}/git/refs/{ref}",
            &format!("{REPO}/git/refs/heads/klaud/scratch"),
            None,
            204,
        )
        .await;
    let tree = checker
        .call(
            "POST /repos/{owner}/{repo}/git/trees",
            &format!("{REPO}/git/trees"),
            Some(
                json!({"tree": [{"path": "ledger.json", "mode": "100644", "type": "blob",
                                  "content": "{\"version\": 1}\n"}]}),
            ),
            201,
        )
        .await;
    let tree_sha = tree["sha"].as_str().expect("a tree sha").to_string();
    checker
        .call(
            "POST /repos/{owner}/{repo}/git/commits",
            &format!("{REPO}/git/commits"),
            Some(json!({"message": "Start the state branch", "tree": tree_sha, "parents": []})),
            201,
        )
        .await;
    let nested = checker
        .call(
            "POST /repos/{owner}/{repo}/git/trees",
            &format!("{REPO}/git/trees"),
            Some(json!({"base_tree": tree_sha, "tree": [
                {"path": "records/a.json", "mode": "100644", "type": "blob", "content": "{}"},
                {"path": "records/b.json", "mode": "100644", "type": "blob", "content": "[]"},
            ]})),
            201,
        )
        .await;
    let nested_sha = nested["sha"].as_str().expect("a tree sha").to_string();
    let shrunk = checker
        .call(
            "POST /repos/{owner}/{repo}/git/trees",
            &format!("{REPO}/git/trees"),
            Some(json!({"base_tree": nested_sha, "tree": [
                {"path": "records/b.json", "mode": "100644", "type": "blob", "sha": null},
            ]})),
            201,
        )
        .await;
    let records = shrunk["tree"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|entry| entry["path"] == "records")
        .expect("the records directory is listed as a tree");
    assert_eq!(records["type"], "tree");
    let get_tree = "GET /repos/{owner}/{repo}/git/trees/{tree_sha}";
    for query in ["", "?recursive=1"] {
        checker
            .call(
                get_tree,
                &format!("{REPO}/git/trees/{nested_sha}{query}"),
                None,
                200,
            )
            .await;
    }
    let records_sha = records["sha"].as_str().expect("a tree sha");
    checker
        .call(
            get_tree,
            &format!("{REPO}/git/trees/{records_sha}"),
            None,
            200,
        )
        .await;
    for named in [main_sha.as_str(), "main"] {
        checker
            .call(
                get_tree,
                &format!("{REPO}/git/trees/{named}?recursive=1"),
                None,
                200,
            )
            .await;
    }
    checker
        .call(
            "POST /repos/{owner}/{repo}/git/commits",
            &format!("{REPO}/git/commits"),
            Some(
                json!({"message": "On top", "tree": tree_sha, "parents": [main_sha],
                        "author": {"name": "Ada", "email": "ada@example.com",
                                   "date": "2025-12-31T23:00:00Z"}}),
            ),
            201,
        )
        .await;

    // Contents on a branch: a file, a directory, a create and an update.
    let contents = "/repos/{owner}/{repo}/contents/{path}";
    let file = checker
        .call(
            &format!("GET {contents}"),
            &format!("{REPO}/contents/ledger.json?ref={STATE_BRANCH}"),
            None,
            200,
        )
        .await;
    checker
        .call(
            &format!("GET {contents}"),
            &format!("{REPO}/contents/src"),
            None,
            200,
        )
        .await;
    checker
        .call(
            &format!("GET {contents}"),
            &format!("{REPO}/contents/"),
            None,
            200,
        )
        .await;
    let encoded = base64::engine::general_purpose::STANDARD.encode("{\"version\": 2}\n");
    checker
        .call(
            &format!("PUT {contents}"),
            &format!("{REPO}/contents/ledger.json"),
            Some(
                json!({"message": "select run 123", "content": encoded, "branch": STATE_BRANCH,
                        "sha": file["sha"]}),
            ),
            200,
        )
        .await;
    checker
        .call(
            &format!("PUT {contents}"),
            &format!("{REPO}/contents/notes/new.md"),
            Some(json!({"message": "add notes", "content": encoded, "branch": STATE_BRANCH})),
            201,
        )
        .await;

    // Actions: run listings, one run, its jobs, cancelling and dispatching.
    for query in ["", "?status=completed", "?branch=main&per_page=1"] {
        checker
            .call(
                "GET /repos/{owner}/{repo}/actions/runs",
                &format!("{REPO}/actions/runs{query}"),
                None,
                200,
            )
            .await;
    }
    for workflow in ["klaud-run.yml", "ci.yml"] {
        checker
            .call(
                "GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs",
                &format!("{REPO}/actions/workflows/{workflow}/runs?event=pull_request"),
                None,
                200,
            )
            .await;
    }
    let mut in_progress = None;
    for run in state.runs.values() {
        checker
            .call(
                "GET /repos/{owner}/{repo}/actions/runs/{run_id}",
                &format!("{REPO}/actions/runs/{}", run.id),
                None,
                200,
            )
            .await;
        checker
            .call(
                "GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs",
                &format!("{REPO}/actions/runs/{}/jobs", run.id),
                None,
                200,
            )
            .await;
        if run.status == "in_progress" {
            in_progress = Some(run.id);
        }
    }
    let in_progress = in_progress.expect("a running run");
    // A job's log: GitHub's redirect without a body, to a URL on another origin that serves the
    // log to whoever holds it (no token sent there).
    let failed_job = state
        .job_logs
        .keys()
        .next()
        .copied()
        .expect("a job with a log");
    let location = checker
        .call_redirect(
            "GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs",
            &format!("{REPO}/actions/jobs/{failed_job}/logs"),
        )
        .await;
    assert!(
        !location.starts_with(&server.base_url()),
        "the log lives on another origin: {location}"
    );
    let blob = fake_github::http_client()
        .get(&location)
        .send()
        .await
        .expect("the blob server answers");
    assert_eq!(blob.status().as_u16(), 200);
    assert_eq!(blob.text().await.unwrap(), FAILED_JOB_LOG);
    checker
        .call(
            "POST /repos/{owner}/{repo}/actions/runs/{run_id}/cancel",
            &format!("{REPO}/actions/runs/{in_progress}/cancel"),
            None,
            202,
        )
        .await;
    checker
        .call(
            "POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches",
            &format!("{REPO}/actions/workflows/klaud-run.yml/dispatches"),
            Some(json!({"ref": "main", "inputs": {"candidate": "parser-speed"}})),
            204,
        )
        .await;

    // Issues: the listing (pull requests included), one created, read, edited, closed and
    // reopened, and collaborators' permissions.
    for query in [
        "",
        "?state=all&labels=klaud-dashboard",
        "?state=all&per_page=2&page=2",
    ] {
        checker
            .call(
                "GET /repos/{owner}/{repo}/issues",
                &format!("{REPO}/issues{query}"),
                None,
                200,
            )
            .await;
    }
    let created = checker
        .call(
            "POST /repos/{owner}/{repo}/issues",
            &format!("{REPO}/issues"),
            Some(json!({"title": "klaud dashboard", "body": "rendered", "labels": ["klaud-dashboard"]})),
            201,
        )
        .await;
    let number = created["number"].as_u64().expect("a number");
    for change in [
        json!({"body": "- [x] pause"}),
        json!({"state": "closed", "state_reason": "not_planned"}),
        json!({"body": "rendered again", "state": "open"}),
    ] {
        checker
            .call_as(
                MAINTAINER_TOKEN,
                "PATCH /repos/{owner}/{repo}/issues/{issue_number}",
                &format!("{REPO}/issues/{number}"),
                Some(change),
                200,
            )
            .await;
    }
    checker
        .call(
            "GET /repos/{owner}/{repo}/issues/{issue_number}",
            &format!("{REPO}/issues/{number}"),
            None,
            200,
        )
        .await;
    for login in [BOT, MAINTAINER, "triager-tia", "mallory", "acme"] {
        checker
            .call(
                "GET /repos/{owner}/{repo}/collaborators/{username}/permission",
                &format!("{REPO}/collaborators/{login}/permission"),
                None,
                200,
            )
            .await;
    }

    checker.assert_conforms();
    let missing: Vec<String> = checker
        .schemas
        .operation_names()
        .into_iter()
        .filter(|operation| {
            !checker
                .covered
                .get(operation)
                .is_some_and(|statuses| statuses.iter().any(|status| (200..400).contains(status)))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "operations in the subset never exercised with a success (or the redirect GitHub answers): {missing:?}"
    );
}

#[tokio::test]
async fn error_answers_match_githubs_error_schemas() {
    let server = FakeGitHub::start(seeded());
    let mut checker = Checker::new(&server);
    let state = server.state();
    let main_sha = state.branch_sha("main").expect("main").to_string();
    let root_sha = state
        .commits
        .values()
        .find(|commit| commit.parents.is_empty())
        .expect("a root")
        .sha
        .clone();

    // 401 and 404: basic-error. GitHub documents a 401 for none of klaud's operations, but
    // sends one to every operation for a token it does not know.
    let answer = checker.send(&Method::GET, REPO, "not-a-token", None).await;
    assert_eq!(answer.status, 401);
    checker.check_component("basic-error", &answer.body);
    checker
        .call(
            "GET /repos/{owner}/{repo}",
            "/repos/acme/gadgets",
            None,
            404,
        )
        .await;
    checker
        .call(
            "GET /repos/{owner}/{repo}/pulls/{pull_number}",
            &format!("{REPO}/pulls/999"),
            None,
            404,
        )
        .await;
    checker
        .call(
            "GET /repos/{owner}/{repo}/issues/{issue_number}",
            &format!("{REPO}/issues/999"),
            None,
            404,
        )
        .await;
    checker
        .call(
            "GET /repos/{owner}/{repo}/git/ref/{ref}",
            &format!("{REPO}/git/ref/heads/missing"),
            None,
            404,
        )
        .await;
    checker
        .call(
            "PATCH /repos/{owner}/{repo}/issues/{issue_number}",
            &format!("{REPO}/issues/999"),
            Some(json!({"body": "x"})),
            404,
        )
        .await;
    checker
        .call(
            "GET /repos/{owner}/{repo}/collaborators/{username}/permission",
            &format!("{REPO}/collaborators/nobody-at-all/permission"),
            None,
            404,
        )
        .await;
    checker
        .call(
            "POST /repos/{owner}/{repo}/issues",
            &format!("{REPO}/issues"),
            Some(json!({"title": ""})),
            422,
        )
        .await;
    checker
        .call(
            "GET /repos/{owner}/{repo}/issues",
            &format!("{REPO}/issues?state=pinned"),
            None,
            422,
        )
        .await;
    checker
        .call(
            "GET /repos/{owner}/{repo}/contents/{path}",
            &format!("{REPO}/contents/missing.json?ref={STATE_BRANCH}"),
            None,
            404,
        )
        .await;
    checker
        .call(
            "DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
            &format!("{REPO}/issues/1/labels/not-there"),
            None,
            404,
        )
        .await;
    checker
        .call(
            "PUT /repos/{owner}/{repo}/contents/{path}",
            &format!("{REPO}/contents/ledger.json"),
            Some(json!({"message": "m", "content": "e30=", "branch": "no-such-branch"})),
            404,
        )
        .await;

    // 422: validation-error.
    checker
        .call(
            "POST /repos/{owner}/{repo}/git/refs",
            &format!("{REPO}/git/refs"),
            Some(json!({"ref": "refs/heads/main", "sha": main_sha})),
            422,
        )
        .await;
    checker
        .call(
            "PATCH /repos/{owner}/{repo}/git/refs/{ref}",
            &format!("{REPO}/git/refs/heads/main"),
            Some(json!({"sha": root_sha})),
            422,
        )
        .await;
    checker
        .call(
            "PATCH /repos/{owner}/{repo}/pulls/{pull_number}",
            &format!("{REPO}/pulls/3"),
            Some(json!({"state": "open"})),
            422,
        )
        .await;
    checker
        .call(
            "GET /repos/{owner}/{repo}/pulls",
            &format!("{REPO}/pulls?state=bogus"),
            None,
            422,
        )
        .await;
    checker
        .call(
            "POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
            &format!("{REPO}/issues/1/comments"),
            Some(json!({})),
            422,
        )
        .await;
    checker
        .call(
            "PUT /repos/{owner}/{repo}/contents/{path}",
            &format!("{REPO}/contents/ledger.json"),
            Some(json!({"message": "m", "content": "e30=", "branch": STATE_BRANCH})),
            422,
        )
        .await;

    checker
        .call(
            "POST /repos/{owner}/{repo}/git/trees",
            &format!("{REPO}/git/trees"),
            Some(json!({"tree": [
                {"path": "records/never.json", "mode": "100644", "type": "blob", "sha": null},
            ]})),
            422,
        )
        .await;
    checker
        .call(
            "GET /repos/{owner}/{repo}/git/trees/{tree_sha}",
            &format!("{REPO}/git/trees/{}", "0".repeat(40)),
            None,
            404,
        )
        .await;

    // 409: a stale contents sha, cancelling a completed run.
    checker
        .call(
            "PUT /repos/{owner}/{repo}/contents/{path}",
            &format!("{REPO}/contents/ledger.json"),
            Some(
                json!({"message": "m", "content": "e30=", "branch": STATE_BRANCH,
                        "sha": "0000000000000000000000000000000000000000"}),
            ),
            409,
        )
        .await;
    let completed = state
        .runs
        .values()
        .find(|run| run.status == "completed")
        .expect("a completed run")
        .id;
    checker
        .call(
            "POST /repos/{owner}/{repo}/actions/runs/{run_id}/cancel",
            &format!("{REPO}/actions/runs/{completed}/cancel"),
            None,
            409,
        )
        .await;

    // GitHub declares the 422 of deleting a missing ref without a body schema; the body it sends
    // is a basic error.
    let answer = checker
        .send(
            &Method::DELETE,
            &format!("{REPO}/git/refs/heads/never-existed"),
            TOKEN,
            None,
        )
        .await;
    assert_eq!(answer.status, 422);
    checker.check_component("basic-error", &answer.body);

    checker.assert_conforms();
}

#[test]
fn the_subset_names_its_source_and_rejects_a_wrong_field_type() {
    let mut schemas = Schemas::load();
    let source = &schemas.subset["source"];
    assert_eq!(source["package"], "@octokit/openapi");
    assert!(
        source["version"]
            .as_str()
            .is_some_and(|version| !version.is_empty())
    );
    assert_eq!(schemas.operation_names().len(), 33);

    // A label as GitHub documents it passes; the same label with a string id does not.
    let mut label = json!({
        "id": 208045946, "node_id": "MDU6TGFiZWwyMDgwNDU5NDY=",
        "url": "https://api.github.com/repos/octocat/Hello-World/labels/bug",
        "name": "bug", "description": null, "color": "f29513", "default": true,
    });
    let operation = "POST /repos/{owner}/{repo}/issues/{issue_number}/labels";
    assert_eq!(
        schemas.problems(operation, 200, &json!([label.clone()])),
        Vec::<String>::new()
    );
    label["id"] = json!("208045946");
    assert!(!schemas.problems(operation, 200, &json!([label])).is_empty());
    // A required field missing, and a null where GitHub never sends one, fail too.
    let problems = schemas.problems(
        "POST /repos/{owner}/{repo}/git/refs",
        201,
        &json!({"ref": "refs/heads/x", "node_id": "n", "url": "https://api.github.com/x",
                "object": {"sha": null, "type": "commit", "url": "https://api.github.com/y"}}),
    );
    assert!(!problems.is_empty());
    assert!(!schemas.problems(operation, 200, &json!({})).is_empty());
}
