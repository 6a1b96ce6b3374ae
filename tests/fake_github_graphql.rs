//! klaud's GraphQL held to GitHub's schema, and the fake GitHub's GraphQL held to it too.
//!
//! - Every query and mutation text klaud sends validates against the schema subset in
//!   `tests/graphql/github-subset.graphql` (extracted from `@octokit/graphql-schema`, see
//!   `tests/graphql/README.md`), and the validator refuses queries that GitHub would refuse.
//! - The fake's answers to those exact queries, sent over HTTP to a running fake with realistic
//!   state, conform to the schema (`tests/graphql/conformance.rs`), and read back through
//!   klaud's client as the REST reads would.
//! - The query klaud-candidate.yml reads the bot's identity with (`viewer { login databaseId }`)
//!   is valid too, and the fake answers it with the token's account as REST names it.
//! - `updateRefs` behaves as GitHub documents it: several refs at once, all or nothing, a
//!   `beforeOid` that must still hold, fast-forwards unless forced, an unknown repository, a
//!   GitHub without the mutation, and a maintainer moving a branch right before it.
//! - The request log counts GraphQL queries as reads and mutations as writes.

use klaud_fake_github as fake_github;

#[path = "graphql/conformance.rs"]
mod conformance;

use std::collections::BTreeSet;
use std::time::Duration;

use fake_github::graphql::execute::coerce_variables;
use fake_github::graphql::schema::Schema;
use fake_github::graphql::validate::validate;
use fake_github::graphql::{Document, GraphqlError, OperationSummary, parse};
use fake_github::{
    ClosedSpec, CommitSpec, DeletedRef, FakeGitHub, FakeGitHubHandle, IssueSpec, JobSpec,
    PullRequestSpec, RepoState, RunSpec, Timestamp,
};
use graphql_parser::query::{Definition, OperationDefinition};
use klaud::adapters::github::batch::{DetailBatch, detail_queries};
use klaud::adapters::github::graphql::{
    CONVERT_TO_DRAFT, ConditionalDeletion, ISSUE_EDIT_HISTORY, ISSUE_LABEL_EVENTS, LABELLED_ISSUES,
    MARK_READY, RefUpdates, UPDATE_REFS, ZERO_OID,
};
use klaud::adapters::github::open_pulls::open_pull_requests_query;
use klaud::adapters::github::pull_checks::checks_page_query;
use klaud::adapters::github::transport::RetryPolicy;
use klaud::adapters::github::{GitHubClient, GitHubSettings};
use klaud::core::snapshot::Listed;
use serde_json::{Value, json};

const TOKEN: &str = "bot-token";
/// A GitHub App's account: REST calls it `klaud[bot]`, GraphQL a `Bot` with login `klaud`.
const BOT: &str = "klaud[bot]";
const MAINTAINER: &str = "maintainer-ada";
const MAINTAINER_TOKEN: &str = "maintainer-token";
const NOW: Timestamp = Timestamp(1_767_225_600); // 2026-01-01T00:00:00Z
const REPOSITORY: &str = "acme/widgets";
const MISSING_OID: &str = "ffffffffffffffffffffffffffffffffffffffff";
const LEDGER_MESSAGE: &str = "Update ledger.json\n\nsession a: finished";

// ---------------------------------------------------------------------------------------------
// Seeding and HTTP

/// A repository with the pull requests klaud reads in one recovery pass.
struct Seeded {
    state: RepoState,
    bot_closed: u64,
    maintainer_closed: u64,
    merged: u64,
    open: u64,
    fork_deleted: u64,
    bot_commit: String,
    maintainer_commit: String,
    ledger_commit: String,
}

fn bot_pull(branch: &str) -> PullRequestSpec {
    PullRequestSpec {
        title: format!("klaud: {branch}"),
        author: BOT.to_string(),
        head_ref: branch.to_string(),
        draft: true,
        labels: vec!["klaud-in-progress".into()],
        commits: vec![CommitSpec::by(BOT).file(&format!("configs/{branch}.yaml"), "a: 1\n")],
        ..PullRequestSpec::default()
    }
}

fn closed_by(login: &str, merged: bool) -> Option<ClosedSpec> {
    Some(ClosedSpec {
        by: login.to_string(),
        merged,
        ..ClosedSpec::default()
    })
}

fn seeded() -> Seeded {
    let mut state = RepoState::new("acme", "widgets")
        .with_now(NOW)
        .with_token(TOKEN, BOT)
        .with_token(MAINTAINER_TOKEN, MAINTAINER);
    let bot_closed = state.add_pull_request(PullRequestSpec {
        closed: closed_by(BOT, false),
        ..bot_pull("klaud/auto-a")
    });
    let maintainer_closed = state.add_pull_request(PullRequestSpec {
        closed: closed_by(MAINTAINER, false),
        labels: vec!["klaud-error".into(), "bug".into()],
        ..bot_pull("klaud/auto-b")
    });
    let merged = state.add_pull_request(PullRequestSpec {
        draft: false,
        closed: closed_by(MAINTAINER, true),
        ..bot_pull("klaud/auto-c")
    });
    let open = state.add_pull_request(PullRequestSpec {
        commits: vec![
            CommitSpec::by(BOT).file("configs/d.yaml", "a: 1\n"),
            CommitSpec::by(MAINTAINER)
                .message("Fix the config")
                .file("configs/d.yaml", "a: 2\n"),
        ],
        ..bot_pull("klaud/auto-d")
    });
    let fork_deleted = state.add_pull_request(PullRequestSpec {
        title: "A contribution".into(),
        author: "contributor".into(),
        head_ref: "patch-1".into(),
        head_repo: Some("contributor/widgets".into()),
        commits: vec![CommitSpec::by("contributor").file("README.md", "# widgets!\n")],
        ..PullRequestSpec::default()
    });
    state.pulls.get_mut(&fork_deleted).unwrap().head_repo = None;
    let head = |state: &RepoState, number: u64| state.pulls[&number].head_sha.clone();
    let maintainer_commit = head(&state, open);
    let bot_commit = state.commits[&maintainer_commit].parents[0].clone();
    let ledger_commit = state.commit_files_on_branch(
        "klaud/state",
        &[("ledger.json".into(), Some("{}\n".into()))],
        LEDGER_MESSAGE,
        BOT,
        NOW,
    );
    Seeded {
        state,
        bot_closed,
        maintainer_closed,
        merged,
        open,
        fork_deleted,
        bot_commit,
        maintainer_commit,
        ledger_commit,
    }
}

/// A batch with all three kinds of objects, a missing pull request and a missing commit.
fn batch(seeded: &Seeded) -> DetailBatch {
    DetailBatch {
        branch_pull_requests: [
            "klaud/auto-a",
            "klaud/auto-b",
            "klaud/auto-c",
            "klaud/auto-d",
            "klaud/auto-none",
        ]
        .into_iter()
        .map(String::from)
        .collect(),
        pull_requests: [
            seeded.bot_closed,
            seeded.maintainer_closed,
            seeded.merged,
            seeded.open,
            seeded.fork_deleted,
            999,
        ]
        .into_iter()
        .collect(),
        commit_messages: [seeded.ledger_commit.clone(), MISSING_OID.to_string()]
            .into_iter()
            .collect(),
    }
}

/// The one detail query of `batch`, with its variables.
fn detail_query(batch: &DetailBatch) -> (String, Value) {
    let mut queries = detail_queries(REPOSITORY, batch);
    assert_eq!(queries.len(), 1, "the batch fits one query");
    queries.remove(0)
}

/// The alias under which `variables` asks for `value`.
fn alias_of(variables: &Value, value: &Value) -> String {
    variables
        .as_object()
        .unwrap()
        .iter()
        .find(|(name, asked)| {
            name.strip_prefix('o')
                .is_some_and(|index| index.parse::<usize>().is_ok())
                && *asked == value
        })
        .map(|(name, _)| name.clone())
        .unwrap_or_else(|| panic!("{value} is not asked in {variables}"))
}

async fn send(
    server: &FakeGitHubHandle,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let client = fake_github::http_client();
    let mut request = client
        .request(method, format!("{}{path}", server.base_url()))
        .bearer_auth(token)
        .header("user-agent", "klaud-tests");
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request.send().await.expect("the fake answers");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
    };
    (status, body)
}

/// Sends a GraphQL request as the bot; GitHub answers GraphQL with 200 whatever happened.
async fn graphql(server: &FakeGitHubHandle, query: &str, variables: Value) -> Value {
    let body = json!({"query": query, "variables": variables});
    let (status, answer) = send(
        server,
        reqwest::Method::POST,
        "/graphql",
        TOKEN,
        Some(&body),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    answer
}

async fn rest(server: &FakeGitHubHandle, path: &str) -> Value {
    let (status, body) = send(server, reqwest::Method::GET, path, TOKEN, None).await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn repository_node_id(server: &FakeGitHubHandle) -> String {
    rest(server, "/repos/acme/widgets").await["node_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Sends a GraphQL request and checks that the answer conforms to the schema.
async fn ask(server: &FakeGitHubHandle, query: &str, variables: Value) -> Value {
    let answer = graphql(server, query, variables.clone()).await;
    conforming(query, &variables, answer)
}

/// The answer, checked to conform to the schema for `query` run with `variables`.
fn conforming(query: &str, variables: &Value, answer: Value) -> Value {
    let document = parse(query).expect("the query parses");
    let problems = conformance::problems(Schema::github(), &document, variables, &answer);
    assert!(problems.is_empty(), "{problems:#?}\n{answer:#}");
    answer
}

fn client_for(server: &FakeGitHubHandle) -> GitHubClient {
    let mut settings =
        GitHubSettings::new(&server.base_url(), &server.graphql_url(), TOKEN, REPOSITORY);
    settings.retry = RetryPolicy {
        attempts: 2,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(20),
        secondary_wait_cap: Duration::from_secs(1),
        secondary_default_wait: Duration::from_millis(10),
        request_timeout: Duration::from_secs(10),
    };
    GitHubClient::new(&settings).expect("valid settings")
}

// ---------------------------------------------------------------------------------------------
// (a) klaud's queries against the schema

fn problems_of(query: &str) -> Vec<GraphqlError> {
    let document = parse(query).unwrap_or_else(|error| panic!("{error}: {query}"));
    validate(Schema::github(), &document)
}

fn operation_variables(
    document: &Document,
) -> &[graphql_parser::query::VariableDefinition<'static, String>] {
    document
        .definitions
        .iter()
        .find_map(|definition| match definition {
            Definition::Operation(OperationDefinition::Query(query)) => {
                Some(&query.variable_definitions[..])
            }
            Definition::Operation(OperationDefinition::Mutation(mutation)) => {
                Some(&mutation.variable_definitions[..])
            }
            _ => None,
        })
        .expect("an operation with variables")
}

/// The query is valid and `variables` fit the types it declares.
fn assert_valid(query: &str, variables: &Value) {
    let problems = problems_of(query);
    assert!(problems.is_empty(), "{problems:#?}\n{query}");
    let document = parse(query).unwrap();
    let given = variables.as_object().cloned().unwrap_or_default();
    if let Err(errors) = coerce_variables(Schema::github(), operation_variables(&document), &given)
    {
        panic!("{errors:#?}\n{variables}");
    }
}

#[test]
fn every_query_and_mutation_klaud_sends_is_valid_against_githubs_schema() {
    let node = json!({"id": "PR_kwDO1800000000"});
    assert_valid(MARK_READY, &node);
    assert_valid(CONVERT_TO_DRAFT, &node);
    assert_valid(
        UPDATE_REFS,
        &json!({"input": {
            "repositoryId": "R_kgDO50000000",
            "refUpdates": [
                {"name": "refs/heads/klaud/auto-a", "beforeOid": "a".repeat(40), "afterOid": ZERO_OID, "force": false},
                {"name": "refs/heads/klaud/auto-b", "beforeOid": "b".repeat(40), "afterOid": ZERO_OID, "force": false},
            ],
        }}),
    );

    assert_valid(
        ISSUE_EDIT_HISTORY,
        &json!({"owner": "acme", "name": "widgets", "number": 7}),
    );
    assert_valid(
        LABELLED_ISSUES,
        &json!({"owner": "acme", "name": "widgets", "labels": ["klaud"], "after": null, "before": null}),
    );
    assert_valid(
        ISSUE_LABEL_EVENTS,
        &json!({"owner": "acme", "name": "widgets", "number": 7, "before": "Y3Vyc29yOnYyOpK00000001"}),
    );

    let seeded = seeded();
    let (query, variables) = detail_query(&batch(&seeded));
    for field in ["pullRequests(", "pullRequest(", "object("] {
        assert!(query.contains(field), "the batch asks {field}: {query}");
    }
    assert_valid(&query, &variables);

    // A batch larger than one query: every chunk is valid.
    let large = DetailBatch {
        branch_pull_requests: (0..40).map(|index| format!("klaud/auto-{index}")).collect(),
        pull_requests: (1..=20).collect(),
        commit_messages: (0..10).map(|index| format!("{index:040x}")).collect(),
    };
    let chunks = detail_queries(REPOSITORY, &large);
    assert!(chunks.len() > 1);
    for (query, variables) in &chunks {
        assert_valid(query, variables);
    }
}

/// Problems the validator reports for `query`, by `extensions.code`.
fn codes(query: &str) -> Vec<String> {
    problems_of(query)
        .iter()
        .map(|error| error.code().unwrap_or("none").to_string())
        .collect()
}

#[test]
fn the_validator_refuses_what_github_refuses() {
    let repository = |inner: &str| {
        format!("query {{ repository(owner: \"acme\", name: \"widgets\") {{ {inner} }} }}")
    };
    let cases: Vec<(String, &str)> = vec![
        (repository("nope"), "undefinedField"),
        (repository("pullRequests(first: \"20\") { totalCount }"), "argumentLiteralsIncompatible"),
        (repository("pullRequests(first: 20, states: [OPENED]) { totalCount }"), "argumentLiteralsIncompatible"),
        (repository("pullRequests(head: \"x\", first: 1) { totalCount }"), "argumentNotAccepted"),
        (repository("pullRequest { number }"), "missingRequiredArguments"),
        (repository("id { value }"), "selectionMismatch"),
        (repository("pullRequest(number: 1) { author }"), "selectionMismatch"),
        (repository("pullRequest(number: 1) { timelineItems(last: 1) { nodes { createdAt } } }"), "selectionMismatch"),
        (repository("object(oid: \"a\") { ... on PullRequest { number } }"), "cantSpreadFragment"),
        (repository("object(oid: \"a\") { ... on Blob { oid } }"), "undefinedType"),
        (repository("pullRequest(number: 1) { ...missing }"), "useAndDefineFragment"),
        (repository("id @defer"), "undefinedDirective"),
        (
            "query($n: String!) { repository(owner: \"acme\", name: \"widgets\") { pullRequest(number: $n) { number } } }".into(),
            "variableMismatch",
        ),
        (
            "query($n: Int) { repository(owner: \"acme\", name: \"widgets\") { pullRequest(number: $n) { number } } }".into(),
            "variableMismatch",
        ),
        (
            "query($n: [Int!]!) { repository(owner: \"acme\", name: \"widgets\") { pullRequest(number: $n) { number } } }".into(),
            "variableMismatch",
        ),
        (
            "query($n: Int!, $unused: String) { repository(owner: \"acme\", name: \"widgets\") { pullRequest(number: $n) { number } } }".into(),
            "variableNotUsed",
        ),
        (repository("pullRequest(number: $n) { number }"), "variableNotDefined"),
        (
            "query($n: Nope!) { repository(owner: \"acme\", name: \"widgets\") { pullRequest(number: $n) { number } } }".into(),
            "variableRequiresValidType",
        ),
        (
            "query($n: Int! = \"one\") { repository(owner: \"acme\", name: \"widgets\") { pullRequest(number: $n) { number } } }".into(),
            "defaultValueInvalidType",
        ),
        (
            "mutation { markPullRequestReadyForReview(input: {}) { clientMutationId } }".into(),
            "missingRequiredInputObjectAttribute",
        ),
        (
            "mutation { markPullRequestReadyForReview(input: {pullRequestId: \"x\", draft: true}) { clientMutationId } }".into(),
            "argumentNotAccepted",
        ),
        (
            "mutation($input: UpdateRefsInput!) { updateRefs(input: $input) { ref { name } } }".into(),
            "undefinedField",
        ),
        (
            format!("{} fragment unused on PullRequest {{ number }}", repository("id")),
            "useAndDefineFragment",
        ),
    ];
    for (query, code) in &cases {
        let found = codes(query);
        assert!(
            found.iter().any(|found| found == code),
            "{query}\nexpected {code}, got {found:?}"
        );
    }

    // klaud's own fragment with one field misspelt: refused, naming the field and its type.
    let seeded = seeded();
    let (query, _) = detail_query(&batch(&seeded));
    let misspelt = query.replace("headRefOid", "headRefSha");
    let problems = problems_of(&misspelt);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!(
        problems[0].message,
        "Field 'headRefSha' doesn't exist on type 'PullRequest'"
    );
    assert_eq!(
        problems[0].extensions,
        Some(
            json!({"code": "undefinedField", "typeName": "PullRequest", "fieldName": "headRefSha"})
        )
    );
    assert_eq!(
        problems[0].path.as_ref().unwrap()[0],
        json!("fragment pull")
    );

    // A wrong argument type inside klaud's query.
    let wrong = query.replace("first: 100", "first: \"100\"");
    assert!(
        codes(&wrong)
            .iter()
            .all(|code| code == "argumentLiteralsIncompatible")
    );
    assert!(!codes(&wrong).is_empty());
}

#[test]
fn variables_that_do_not_fit_their_types_are_refused_with_githubs_problems() {
    let document = parse(UPDATE_REFS).unwrap();
    let definitions = operation_variables(&document);
    let schema = Schema::github();
    let refuse = |variables: Value| {
        coerce_variables(schema, definitions, variables.as_object().unwrap())
            .expect_err("refused")
            .remove(0)
    };

    let missing = refuse(json!({}));
    assert_eq!(
        missing.message,
        "Variable $input of type UpdateRefsInput! was provided invalid value"
    );
    assert_eq!(
        missing.extensions.unwrap()["problems"],
        json!([{"path": [], "explanation": "Expected value to not be null"}])
    );
    let no_after =
        refuse(json!({"input": {"repositoryId": "R", "refUpdates": [{"name": "refs/heads/a"}]}}));
    assert_eq!(
        no_after.extensions.unwrap()["problems"],
        json!([{"path": ["refUpdates", 0, "afterOid"], "explanation": "Expected value to not be null"}])
    );
    let unknown = refuse(json!({"input": {"repositoryId": "R", "refUpdates": [], "force": true}}));
    assert_eq!(
        unknown.extensions.unwrap()["problems"],
        json!([{"path": ["force"], "explanation": "Field is not defined on UpdateRefsInput"}])
    );
    let wrong = refuse(
        json!({"input": {"repositoryId": "R", "refUpdates": [{"name": "refs/heads/a", "afterOid": ZERO_OID, "force": "yes"}]}}),
    );
    assert_eq!(
        wrong.extensions.unwrap()["problems"][0]["path"],
        json!(["refUpdates", 0, "force"])
    );

    // `force` defaults to false, as the schema says.
    let coerced = coerce_variables(
        schema,
        definitions,
        json!({"input": {"repositoryId": "R", "refUpdates": [{"name": "refs/heads/a", "afterOid": ZERO_OID}]}})
            .as_object()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(coerced["input"]["refUpdates"][0]["force"], json!(false));
}

// ---------------------------------------------------------------------------------------------
// (b) the fake's answers against the schema

#[tokio::test]
async fn the_fakes_answers_to_klauds_detail_query_conform_to_the_schema() {
    let seeded = seeded();
    let batch = batch(&seeded);
    let server = FakeGitHub::start(seeded.state.clone());
    let (query, variables) = detail_query(&batch);

    let answer = ask(&server, &query, variables.clone()).await;

    let repository = &answer["data"]["repository"];
    assert_eq!(repository["id"], json!(repository_node_id(&server).await));
    let pull = |number: u64| &repository[alias_of(&variables, &json!(number))];
    let branch = |name: &str| &repository[alias_of(&variables, &json!(name))];
    let closer = |node: &Value| node["timelineItems"]["nodes"][0]["actor"].clone();

    // Who closed each: the bot (a GitHub App, so a `Bot` without `[bot]`), or a maintainer.
    assert_eq!(
        closer(pull(seeded.bot_closed)),
        json!({"__typename": "Bot", "login": "klaud"})
    );
    assert_eq!(
        pull(seeded.bot_closed)["author"],
        json!({"__typename": "Bot", "login": "klaud"})
    );
    assert_eq!(pull(seeded.bot_closed)["state"], "CLOSED");
    assert_eq!(
        closer(pull(seeded.maintainer_closed)),
        json!({"__typename": "User", "login": MAINTAINER})
    );
    assert_eq!(
        pull(seeded.maintainer_closed)["labels"]["nodes"],
        json!([{"name": "klaud-error"}, {"name": "bug"}])
    );
    let merged = pull(seeded.merged);
    assert_eq!(
        (merged["state"].as_str(), merged["merged"].as_bool()),
        (Some("MERGED"), Some(true))
    );
    assert!(merged["mergedAt"].is_string());
    assert_eq!(
        closer(merged),
        json!({"__typename": "User", "login": MAINTAINER})
    );

    // The open one: no closing event; its commits, the maintainer's with its user. The bot's
    // own commit has none: `GitActor.user` is a `User`, and a GitHub App's account is a `Bot`.
    let open = pull(seeded.open);
    assert_eq!(open["state"], "OPEN");
    assert_eq!(open["closedAt"], Value::Null);
    assert_eq!(open["timelineItems"]["nodes"], json!([]));
    assert_eq!(open["commits"]["totalCount"], 2);
    assert_eq!(
        open["commits"]["nodes"],
        json!([
            {"commit": {"oid": seeded.bot_commit, "author": {"user": null}, "committer": {"user": null}}},
            {"commit": {"oid": seeded.maintainer_commit, "author": {"user": {"login": MAINTAINER}}, "committer": {"user": {"login": MAINTAINER}}}},
        ])
    );
    assert_eq!(open["headRefOid"], json!(seeded.maintainer_commit));
    assert_eq!(open["headRepository"], json!({"nameWithOwner": REPOSITORY}));
    assert_eq!(open["isCrossRepository"], false);
    let fork = pull(seeded.fork_deleted);
    assert_eq!(
        (
            fork["headRepository"].clone(),
            fork["isCrossRepository"].clone()
        ),
        (Value::Null, json!(true))
    );

    // The pull requests of each branch, newest first.
    assert_eq!(
        branch("klaud/auto-a")["nodes"][0]["number"],
        json!(seeded.bot_closed)
    );
    assert_eq!(branch("klaud/auto-none")["nodes"], json!([]));

    // The commit message, a missing commit (null, no error) and a missing pull request (null
    // and GitHub's NOT_FOUND naming its alias).
    let message_alias = alias_of(&variables, &json!(seeded.ledger_commit));
    assert_eq!(
        repository[&message_alias],
        json!({"oid": seeded.ledger_commit, "message": LEDGER_MESSAGE})
    );
    let missing_commit = alias_of(&variables, &json!(MISSING_OID));
    assert_eq!(repository[&missing_commit], Value::Null);
    let missing_pull = alias_of(&variables, &json!(999));
    assert_eq!(repository[&missing_pull], Value::Null);
    let errors = answer["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0]["type"], "NOT_FOUND");
    assert_eq!(errors[0]["path"], json!(["repository", missing_pull]));
    assert_eq!(
        errors[0]["message"],
        "Could not resolve to a PullRequest with the number of 999."
    );
    assert!(errors[0]["locations"][0]["column"].as_u64().unwrap() > 1);
}

#[tokio::test]
async fn the_fakes_answers_to_klauds_edit_history_query_conform_to_the_schema() {
    let mut state = seeded().state;
    let edited = state.add_issue(IssueSpec {
        title: "klaud dashboard".to_string(),
        body: None,
        author: BOT.to_string(),
        ..IssueSpec::default()
    });
    let untouched = state.add_issue(IssueSpec {
        title: "a question".to_string(),
        body: Some("why?".to_string()),
        author: MAINTAINER.to_string(),
        ..IssueSpec::default()
    });
    state.now = Some(NOW.plus(60));
    state.edit_body(edited, MAINTAINER, Some("- [x] pause".to_string()));
    state.now = Some(NOW.plus(120));
    state.edit_body(edited, BOT, None);
    state.forget_editor(MAINTAINER);
    let server = FakeGitHub::start(state);
    let variables = |number: u64| json!({"owner": "acme", "name": "widgets", "number": number});

    let answer = ask(&server, ISSUE_EDIT_HISTORY, variables(edited)).await;
    // Both ends of the connection (`head`: first 50, `tail`: last 50) hold all three revisions.
    for end in ["head", "tail"] {
        let edits = &answer["data"]["repository"]["issue"][end];
        assert_eq!(edits["totalCount"], 3, "{end}");
        // A bot's login without `[bot]`, a deleted account null, an empty body null.
        assert_eq!(
            edits["nodes"],
            json!([
                {"editedAt": "2026-01-01T00:02:00Z", "editor": {"login": "klaud"}, "diff": null},
                {"editedAt": "2026-01-01T00:01:00Z", "editor": null, "diff": "- [x] pause"},
                {"editedAt": "2026-01-01T00:00:00Z", "editor": {"login": "klaud"}, "diff": null},
            ]),
            "{end}"
        );
    }
    let never = ask(&server, ISSUE_EDIT_HISTORY, variables(untouched)).await;
    for end in ["head", "tail"] {
        assert_eq!(
            never["data"]["repository"]["issue"][end],
            json!({"totalCount": 0, "nodes": []})
        );
    }
    let pull = ask(&server, ISSUE_EDIT_HISTORY, variables(seeded().open)).await;
    assert_eq!(pull["data"]["repository"]["issue"], Value::Null);
    assert_eq!(pull["errors"][0]["type"], "NOT_FOUND");
}

#[tokio::test]
async fn the_fakes_answers_to_klauds_labelled_issues_queries_conform_to_the_schema() {
    let mut seeded = seeded();
    let state = &mut seeded.state;
    let numbers: Vec<u64> = (0..3)
        .map(|n| {
            state.add_issue(IssueSpec {
                title: format!("task {n}"),
                body: None,
                author: MAINTAINER.to_string(),
                labels: vec!["klaud".to_string(), "area:x".to_string()],
                created_at: Some(NOW.plus(n)),
            })
        })
        .collect();
    // 105 label events on the first issue: its newest 100 hide the first application.
    for n in 0..51 {
        state.now = Some(NOW.plus(100 + n));
        state.label_issue(numbers[0], "noise", BOT);
        state.unlabel_issue(numbers[0], "noise", BOT);
    }
    state.lock_issue(numbers[1]);
    // A labelled pull request is never in GraphQL's issues.
    state.label_issue(seeded.open, "klaud", MAINTAINER);
    let server = FakeGitHub::start(seeded.state.clone());
    let page = |after: Value| json!({"owner": "acme", "name": "widgets", "labels": ["KLAUD"], "after": after, "before": null});
    let answer = ask(&server, LABELLED_ISSUES, page(Value::Null)).await;
    let issues = &answer["data"]["repository"]["issues"];
    assert_eq!(issues["totalCount"], 3, "{answer:#}");
    let listed: Vec<u64> = issues["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|node| node["number"].as_u64().unwrap())
        .collect();
    assert_eq!(listed, numbers, "oldest first, no pull request");
    let first = &issues["nodes"][0];
    assert_eq!(first["title"], "task 0");
    assert_eq!(first["body"], "");
    assert_eq!(first["locked"], false);
    assert_eq!(issues["nodes"][1]["locked"], true);
    assert_eq!(
        first["url"],
        format!("https://github.com/acme/widgets/issues/{}", numbers[0])
    );
    let timeline = &first["timelineItems"];
    assert_eq!(timeline["totalCount"], 104);
    assert_eq!(timeline["nodes"].as_array().unwrap().len(), 100);
    assert_eq!(timeline["nodes"][99]["__typename"], "UnlabeledEvent");
    assert_eq!(timeline["nodes"][99]["actor"]["login"], "klaud");
    assert_eq!(timeline["pageInfo"]["hasPreviousPage"], true);
    assert_eq!(issues["pageInfo"]["hasNextPage"], false);
    // The older events, before the page's start cursor, hold the first applications.
    let cursor = timeline["pageInfo"]["startCursor"].clone();
    let older = ask(
        &server,
        ISSUE_LABEL_EVENTS,
        json!({"owner": "acme", "name": "widgets", "number": numbers[0], "before": cursor}),
    )
    .await;
    let older = &older["data"]["repository"]["issue"]["timelineItems"];
    assert_eq!(older["pageInfo"]["hasPreviousPage"], false);
    let events: Vec<(&str, &str)> = older["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|node| {
            (
                node["__typename"].as_str().unwrap(),
                node["label"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            ("LabeledEvent", "klaud"),
            ("LabeledEvent", "area:x"),
            ("LabeledEvent", "noise"),
            ("UnlabeledEvent", "noise")
        ]
    );
    // A cursor of the issues connection pages on.
    let one = ask(
        &server,
        &LABELLED_ISSUES.replace("first: 100", "first: 1"),
        page(Value::Null),
    )
    .await;
    let end = one["data"]["repository"]["issues"]["pageInfo"]["endCursor"].clone();
    let next = ask(
        &server,
        &LABELLED_ISSUES.replace("first: 100", "first: 1"),
        page(end),
    )
    .await;
    assert_eq!(
        next["data"]["repository"]["issues"]["nodes"][0]["number"],
        numbers[1]
    );
}

#[tokio::test]
async fn the_fakes_answers_to_klauds_mutations_conform_to_the_schema() {
    let seeded = seeded();
    let server = FakeGitHub::start(seeded.state.clone());
    let open_id = rest(
        &server,
        &format!("/repos/acme/widgets/pulls/{}", seeded.open),
    )
    .await["node_id"]
        .clone();
    let closed_id = rest(
        &server,
        &format!("/repos/acme/widgets/pulls/{}", seeded.bot_closed),
    )
    .await["node_id"]
        .clone();

    let ready = ask(&server, MARK_READY, json!({"id": open_id})).await;
    assert_eq!(
        ready,
        json!({"data": {"markPullRequestReadyForReview": {"pullRequest": {"number": seeded.open, "isDraft": false}}}})
    );
    let draft = ask(&server, CONVERT_TO_DRAFT, json!({"id": open_id})).await;
    assert_eq!(
        draft["data"]["convertPullRequestToDraft"]["pullRequest"]["isDraft"],
        true
    );
    assert!(server.state().pulls[&seeded.open].draft);

    let closed = ask(&server, CONVERT_TO_DRAFT, json!({"id": closed_id})).await;
    assert_eq!(closed["data"], json!({"convertPullRequestToDraft": null}));
    assert_eq!(closed["errors"][0]["type"], "UNPROCESSABLE");
    assert_eq!(
        closed["errors"][0]["path"],
        json!(["convertPullRequestToDraft"])
    );
    assert_eq!(
        closed["errors"][0]["message"],
        "Pull request is closed and cannot be converted to draft"
    );
    let unknown = ask(&server, MARK_READY, json!({"id": "PR_nope"})).await;
    assert_eq!(unknown["errors"][0]["type"], "NOT_FOUND");
    assert_eq!(
        unknown["errors"][0]["message"],
        "Could not resolve to a node with the global id of 'PR_nope'"
    );

    let node = repository_node_id(&server).await;
    let deleted = ask(&server, UPDATE_REFS, json!({"input": {"repositoryId": node, "refUpdates": [
            {"name": "refs/heads/klaud/auto-a", "beforeOid": seeded.state.branch_sha("klaud/auto-a"), "afterOid": ZERO_OID, "force": false},
        ]}})).await;
    assert_eq!(
        deleted,
        json!({"data": {"updateRefs": {"clientMutationId": null}}})
    );
}

/// The query of the session workflow's step "Read the bot's identity"
/// (`gh api graphql -f query='…'`), read from reusable-session.yml.
fn candidate_workflow_identity_query() -> String {
    let workflow = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(".github/workflows/reusable-session.yml"),
    )
    .expect("read reusable-session.yml");
    let start = workflow
        .find("gh api graphql -f query='")
        .expect("the identity step asks GraphQL")
        + "gh api graphql -f query='".len();
    let length = workflow[start..].find('\'').expect("the query is quoted");
    workflow[start..start + length].to_string()
}

#[tokio::test]
async fn the_candidate_workflows_identity_query_is_valid_and_answered_with_the_tokens_account() {
    let query = candidate_workflow_identity_query();
    assert!(query.contains("viewer"), "{query}");
    assert_valid(&query, &json!({}));

    let seeded = seeded();
    let server = FakeGitHub::start(seeded.state.clone());
    let (status, answer) = send(
        &server,
        reqwest::Method::POST,
        "/graphql",
        MAINTAINER_TOKEN,
        Some(&json!({"query": query})),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let answer = conforming(&query, &json!({}), answer);
    // The account REST names the maintainer's commit's author by: the same login and id.
    let author = &rest(
        &server,
        &format!("/repos/acme/widgets/commits/{}", seeded.maintainer_commit),
    )
    .await["author"];
    assert_eq!(author["login"], MAINTAINER);
    assert_eq!(
        answer,
        json!({"data": {"viewer": {"login": MAINTAINER, "databaseId": author["id"]}}})
    );
}

#[tokio::test]
async fn queries_are_executed_as_graphql_says_and_errors_answered_as_github_does() {
    let seeded = seeded();
    let server = FakeGitHub::start(seeded.state.clone());

    // Default values, aliases, inline fragments, @skip/@include, __typename.
    let query = "query($first: Int = 2, $withLabels: Boolean = false) { __typename repository(owner: \"ACME\", name: \"widgets\") { __typename open: pullRequests(first: $first, states: [OPEN], orderBy: {field: CREATED_AT, direction: DESC}) { totalCount nodes { number ... on PullRequest { draft: isDraft } labels(first: 5) @include(if: $withLabels) { totalCount } } } merged: pullRequests(last: 1, states: MERGED) { nodes { number title @skip(if: true) } } head: object(expression: \"klaud/auto-d\") { __typename ... on Commit { oid } } } }";
    let answer = ask(&server, query, json!({})).await;
    assert_eq!(
        answer,
        json!({"data": {"__typename": "Query", "repository": {
            "__typename": "Repository",
            "open": {"totalCount": 2, "nodes": [
                {"number": seeded.fork_deleted, "draft": false},
                {"number": seeded.open, "draft": true},
            ]},
            "merged": {"nodes": [{"number": seeded.merged}]},
            "head": {"__typename": "Commit", "oid": seeded.maintainer_commit},
        }}})
    );

    // A field that does not exist: no data, GitHub's undefinedField error.
    let unknown =
        "query { repository(owner: \"acme\", name: \"widgets\") { id mergeQueue { id } } }";
    let answer = ask(&server, unknown, json!({})).await;
    assert_eq!(
        answer,
        json!({"errors": [{
            "path": ["query", "repository", "mergeQueue"],
            "extensions": {"code": "undefinedField", "typeName": "Repository", "fieldName": "mergeQueue"},
            "locations": [{"line": 1, "column": 57}],
            "message": "Field 'mergeQueue' doesn't exist on type 'Repository'",
        }]})
    );

    // A required variable left out: no data.
    let seeded_batch = batch(&seeded);
    let (detail, mut variables) = detail_query(&seeded_batch);
    let dropped = alias_of(&variables, &json!(999));
    variables.as_object_mut().unwrap().remove(&dropped);
    let answer = ask(&server, &detail, variables).await;
    assert!(answer.get("data").is_none(), "{answer}");
    assert_eq!(
        answer["errors"][0]["message"],
        format!("Variable ${dropped} of type Int! was provided invalid value")
    );
    assert_eq!(
        answer["errors"][0]["extensions"]["problems"][0]["explanation"],
        "Expected value to not be null"
    );

    // A connection without `first`/`last`: the non-null connection's null reaches the
    // repository.
    let unbounded =
        "query { repository(owner: \"acme\", name: \"widgets\") { pullRequests { totalCount } } }";
    let answer = ask(&server, unbounded, json!({})).await;
    assert_eq!(answer["data"], json!({"repository": null}));
    assert_eq!(answer["errors"][0]["type"], "MISSING_PAGINATION_BOUNDARIES");
    assert_eq!(
        answer["errors"][0]["path"],
        json!(["repository", "pullRequests"])
    );

    // Another repository: NOT_FOUND; a document that does not parse; no query at all.
    let other = "query { repository(owner: \"acme\", name: \"gadgets\") { id } }";
    let answer = ask(&server, other, json!({})).await;
    assert_eq!(answer["data"], json!({"repository": null}));
    assert_eq!(
        answer["errors"][0]["message"],
        "Could not resolve to a Repository with the name 'acme/gadgets'."
    );
    let broken = graphql(&server, "query { repository(", json!({})).await;
    assert!(
        broken.get("data").is_none() && broken["errors"][0]["message"].is_string(),
        "{broken}"
    );
    let (_, none) = send(
        &server,
        reqwest::Method::POST,
        "/graphql",
        TOKEN,
        Some(&json!({})),
    )
    .await;
    assert_eq!(
        none,
        json!({"errors": [{"message": "A query attribute must be specified and must be a string."}]})
    );
}

#[tokio::test]
async fn klauds_client_reads_the_batch_from_the_fake_as_rest_would_give_it() {
    let seeded = seeded();
    let server = FakeGitHub::start(seeded.state.clone());
    let client = client_for(&server);

    let answers = client.read_detail_batch(&batch(&seeded)).await;

    let detail = |number: u64| answers.pull_requests[&number].as_ref().unwrap();
    let closed_by = |number: u64| {
        detail(number)
            .issue
            .closed_by
            .as_ref()
            .map(|account| account.login.clone())
    };
    assert_eq!(closed_by(seeded.bot_closed).as_deref(), Some(BOT));
    assert_eq!(
        closed_by(seeded.maintainer_closed).as_deref(),
        Some(MAINTAINER)
    );
    assert_eq!(closed_by(seeded.merged).as_deref(), Some(MAINTAINER));
    assert_eq!(closed_by(seeded.open), None);
    assert_eq!(
        detail(seeded.bot_closed).pull.user.as_ref().unwrap().login,
        BOT
    );
    assert!(detail(seeded.merged).pull.merged_at.is_some());
    let commits = &detail(seeded.open).commits;
    assert!(commits.complete());
    let authors: Vec<Option<String>> = commits
        .commits
        .iter()
        .map(|commit| commit.author.as_ref().map(|account| account.login.clone()))
        .collect();
    assert_eq!(authors, [None, Some(MAINTAINER.to_string())]);
    let missing = answers.pull_requests[&999]
        .as_ref()
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("Could not resolve to a PullRequest with the number of 999."),
        "{missing}"
    );
    assert_eq!(
        answers.commit_messages[&seeded.ledger_commit]
            .as_ref()
            .unwrap(),
        LEDGER_MESSAGE
    );
    assert!(answers.commit_messages[MISSING_OID].is_err());
    assert_eq!(
        answers.branch_pull_requests["klaud/auto-b"]
            .as_ref()
            .unwrap()
            .len(),
        1
    );
    assert!(
        answers.branch_pull_requests["klaud/auto-none"]
            .as_ref()
            .unwrap()
            .is_empty()
    );

    // The query named the repository's node id: no REST read needed for it.
    assert_eq!(server.request_counts().total, 1);
    assert_eq!(
        client.repository_node_id().await.unwrap(),
        repository_node_id(&server).await
    );
    assert_eq!(server.request_counts().total, 2);
}

// ---------------------------------------------------------------------------------------------
// (c) updateRefs

/// Sends `UPDATE_REFS` with `updates` for this repository.
async fn update_refs(server: &FakeGitHubHandle, updates: Value) -> Value {
    let node = repository_node_id(server).await;
    ask(
        server,
        UPDATE_REFS,
        json!({"input": {"repositoryId": node, "refUpdates": updates}}),
    )
    .await
}

fn deletion(branch: &str, before: &str) -> Value {
    json!({"name": format!("refs/heads/{branch}"), "beforeOid": before, "afterOid": ZERO_OID, "force": false})
}

fn refusal(answer: &Value) -> String {
    assert_eq!(answer["data"], json!({"updateRefs": null}), "{answer}");
    let error = &answer["errors"][0];
    assert_eq!(error["type"], "UNPROCESSABLE");
    assert_eq!(error["path"], json!(["updateRefs"]));
    error["message"].as_str().unwrap().to_string()
}

/// Three bot branches, `klaud/auto-a` … `klaud/auto-c`, each one bot commit on `main`.
fn three_branches() -> (RepoState, Vec<String>) {
    let mut state = RepoState::new("acme", "widgets")
        .with_now(NOW)
        .with_token(TOKEN, BOT)
        .with_token(MAINTAINER_TOKEN, MAINTAINER);
    let shas = ["a", "b", "c"]
        .iter()
        .map(|name| {
            state.push_commits(
                &format!("klaud/auto-{name}"),
                vec![CommitSpec::by(BOT).file(&format!("{name}.txt"), name)],
            )
        })
        .collect();
    (state, shas)
}

#[tokio::test]
async fn update_refs_deletes_several_refs_in_one_request_and_records_them() {
    let (state, shas) = three_branches();
    let server = FakeGitHub::start(state);

    let answer = update_refs(
        &server,
        json!([
            deletion("klaud/auto-a", &shas[0]),
            deletion("klaud/auto-b", &shas[1])
        ]),
    )
    .await;

    assert_eq!(
        answer,
        json!({"data": {"updateRefs": {"clientMutationId": null}}})
    );
    let state = server.state();
    assert_eq!(state.branch_sha("klaud/auto-a"), None);
    assert_eq!(state.branch_sha("klaud/auto-b"), None);
    assert_eq!(state.branch_sha("klaud/auto-c"), Some(shas[2].as_str()));
    assert_eq!(
        state.deleted_refs,
        [
            DeletedRef {
                name: "refs/heads/klaud/auto-a".into(),
                sha: shas[0].clone(),
                by: BOT.into()
            },
            DeletedRef {
                name: "refs/heads/klaud/auto-b".into(),
                sha: shas[1].clone(),
                by: BOT.into()
            },
        ]
    );
    // Deleted refs are gone for REST too.
    let (status, _) = send(
        &server,
        reqwest::Method::GET,
        "/repos/acme/widgets/git/ref/heads/klaud/auto-a",
        TOKEN,
        None,
    )
    .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn update_refs_is_all_or_nothing() {
    let (state, shas) = three_branches();
    let server = FakeGitHub::start(state);

    // The second expects auto-b where auto-c is: nothing is deleted, the error names it.
    let answer = update_refs(
        &server,
        json!([
            deletion("klaud/auto-a", &shas[0]),
            deletion("klaud/auto-b", &shas[2]),
            deletion("klaud/auto-c", &shas[2]),
        ]),
    )
    .await;

    let message = refusal(&answer);
    assert!(message.contains("refs/heads/klaud/auto-b"), "{message}");
    assert!(
        !message.contains("auto-a") && !message.contains("auto-c"),
        "{message}"
    );
    let state = server.state();
    for (name, sha) in ["a", "b", "c"].iter().zip(&shas) {
        assert_eq!(
            state.branch_sha(&format!("klaud/auto-{name}")),
            Some(sha.as_str())
        );
    }
    assert!(state.deleted_refs.is_empty());

    // A ref that is already gone, or a commit that does not exist, refuses the batch too.
    let gone = update_refs(
        &server,
        json!([
            deletion("klaud/auto-a", &shas[0]),
            deletion("klaud/gone", &shas[0])
        ]),
    )
    .await;
    assert!(refusal(&gone).contains("refs/heads/klaud/gone"));
    let nowhere = update_refs(
        &server,
        json!([{"name": "refs/heads/klaud/auto-a", "beforeOid": shas[0], "afterOid": MISSING_OID}]),
    )
    .await;
    assert!(refusal(&nowhere).contains("refs/heads/klaud/auto-a"));
    let unqualified = update_refs(
        &server,
        json!([{"name": "klaud/auto-a", "beforeOid": shas[0], "afterOid": ZERO_OID}]),
    )
    .await;
    assert!(refusal(&unqualified).contains("klaud/auto-a"));
    assert!(server.state().deleted_refs.is_empty());
    assert_eq!(
        server.state().branch_sha("klaud/auto-a"),
        Some(shas[0].as_str())
    );
}

#[tokio::test]
async fn an_all_zero_before_oid_asserts_the_ref_does_not_exist() {
    let (state, shas) = three_branches();
    let server = FakeGitHub::start(state);
    let create =
        json!([{"name": "refs/heads/klaud/new", "beforeOid": ZERO_OID, "afterOid": shas[0]}]);

    let created = update_refs(&server, create.clone()).await;
    assert_eq!(
        created["data"]["updateRefs"],
        json!({"clientMutationId": null})
    );
    assert_eq!(
        server.state().branch_sha("klaud/new"),
        Some(shas[0].as_str())
    );

    let again = update_refs(&server, json!([{"name": "refs/heads/klaud/new", "beforeOid": ZERO_OID, "afterOid": shas[1], "force": true}])).await;
    assert!(refusal(&again).contains("refs/heads/klaud/new"));
    assert_eq!(
        server.state().branch_sha("klaud/new"),
        Some(shas[0].as_str())
    );
}

#[tokio::test]
async fn a_move_that_is_not_a_fast_forward_needs_force() {
    let (mut state, shas) = three_branches();
    let ahead = state.add_commit(Some(&shas[0]), CommitSpec::by(BOT).file("a.txt", "a2"));
    let server = FakeGitHub::start(state);
    let moving = |after: &str, force: bool| json!([{"name": "refs/heads/klaud/auto-a", "afterOid": after, "force": force}]);

    // A fast-forward needs no force (and no beforeOid).
    let forward = update_refs(&server, moving(&ahead, false)).await;
    assert!(forward.get("errors").is_none(), "{forward}");
    assert_eq!(
        server.state().branch_sha("klaud/auto-a"),
        Some(ahead.as_str())
    );

    // To auto-b's commit, which does not contain auto-a's: refused, then forced.
    let sideways = update_refs(&server, moving(&shas[1], false)).await;
    assert!(refusal(&sideways).contains("refs/heads/klaud/auto-a"));
    assert_eq!(
        server.state().branch_sha("klaud/auto-a"),
        Some(ahead.as_str())
    );
    let forced = update_refs(&server, moving(&shas[1], true)).await;
    assert!(forced.get("errors").is_none(), "{forced}");
    assert_eq!(
        server.state().branch_sha("klaud/auto-a"),
        Some(shas[1].as_str())
    );
}

#[tokio::test]
async fn an_unknown_repository_id_is_not_found() {
    let (state, shas) = three_branches();
    let server = FakeGitHub::start(state);

    let answer = ask(
        &server,
        UPDATE_REFS,
        json!({"input": {"repositoryId": "R_kgDOnope", "refUpdates": [deletion("klaud/auto-a", &shas[0])]}}),
    )
    .await;

    assert_eq!(answer["data"], json!({"updateRefs": null}));
    assert_eq!(answer["errors"][0]["type"], "NOT_FOUND");
    assert_eq!(answer["errors"][0]["path"], json!(["updateRefs"]));
    assert_eq!(
        server.state().branch_sha("klaud/auto-a"),
        Some(shas[0].as_str())
    );
}

#[tokio::test]
async fn without_update_refs_the_mutation_is_an_unknown_field() {
    let (state, shas) = three_branches();
    let server = FakeGitHub::start(state);
    server.set_update_refs_available(false);

    let answer = update_refs(&server, json!([deletion("klaud/auto-a", &shas[0])])).await;

    assert!(answer.get("data").is_none(), "{answer}");
    let errors = answer["errors"].as_array().unwrap();
    let codes: Vec<&str> = errors
        .iter()
        .filter_map(|error| error["extensions"]["code"].as_str())
        .collect();
    // The input type is as unknown as the field.
    assert_eq!(codes, ["variableRequiresValidType", "undefinedField"]);
    let unknown_field = errors
        .iter()
        .find(|error| error["extensions"]["code"] == "undefinedField")
        .unwrap_or_else(|| panic!("{errors:#?}"));
    assert_eq!(
        unknown_field["extensions"],
        json!({"code": "undefinedField", "typeName": "Mutation", "fieldName": "updateRefs"})
    );
    assert_eq!(
        unknown_field["message"],
        "Field 'updateRefs' doesn't exist on type 'Mutation'"
    );
    assert_eq!(unknown_field["path"], json!(["mutation", "updateRefs"]));
    assert_eq!(
        server.state().branch_sha("klaud/auto-a"),
        Some(shas[0].as_str())
    );

    // klaud reads that as "not offered here", and the other mutations still work.
    let client = client_for(&server);
    let node = client.repository_node_id().await.unwrap();
    let outcome = client
        .delete_branches_if_at(
            &node,
            &[ConditionalDeletion {
                branch: "klaud/auto-a".into(),
                before: shas[0].clone(),
            }],
        )
        .await
        .unwrap();
    assert!(
        matches!(outcome, RefUpdates::Unavailable { .. }),
        "{outcome:?}"
    );

    server.set_update_refs_available(true);
    let answer = update_refs(&server, json!([deletion("klaud/auto-a", &shas[0])])).await;
    assert!(answer.get("errors").is_none(), "{answer}");

    // A state document from before the switch existed loads with the mutation offered.
    let mut document =
        serde_json::to_value(RepoState::new("acme", "widgets").without_update_refs()).unwrap();
    assert_eq!(document["update_refs_available"], false);
    document
        .as_object_mut()
        .unwrap()
        .remove("update_refs_available");
    let loaded: RepoState = serde_json::from_value(document).unwrap();
    assert!(loaded.update_refs_available);
}

#[tokio::test]
async fn a_branch_moved_right_before_the_mutation_survives_it() {
    let (mut state, shas) = three_branches();
    let maintainer_commit = state.add_commit(
        Some(&shas[0]),
        CommitSpec::by(MAINTAINER).file("a.txt", "fixed"),
    );
    let server = FakeGitHub::start(state);
    let moved_to = maintainer_commit.clone();
    server.before_graphql("updateRefs", move |state| {
        state.set_branch("klaud/auto-a", &moved_to);
    });
    let client = client_for(&server);

    // A query first: the hook waits for the mutation.
    let seen = client
        .read_detail_batch(&DetailBatch {
            branch_pull_requests: BTreeSet::from(["klaud/auto-a".to_string()]),
            ..DetailBatch::default()
        })
        .await;
    assert!(seen.branch_pull_requests["klaud/auto-a"].is_ok());
    assert_eq!(
        server.state().branch_sha("klaud/auto-a"),
        Some(shas[0].as_str())
    );

    let node = client.repository_node_id().await.unwrap();
    let outcome = client
        .delete_branches_if_at(
            &node,
            &[
                ConditionalDeletion {
                    branch: "klaud/auto-a".into(),
                    before: shas[0].clone(),
                },
                ConditionalDeletion {
                    branch: "klaud/auto-b".into(),
                    before: shas[1].clone(),
                },
            ],
        )
        .await
        .unwrap();

    let RefUpdates::Rejected { message } = outcome else {
        panic!("{outcome:?}");
    };
    assert!(message.contains("refs/heads/klaud/auto-a"), "{message}");
    let state = server.state();
    assert_eq!(
        state.branch_sha("klaud/auto-a"),
        Some(maintainer_commit.as_str())
    );
    assert_eq!(state.branch_sha("klaud/auto-b"), Some(shas[1].as_str()));
    assert!(state.deleted_refs.is_empty());

    // With nobody acting, the same call deletes both.
    let outcome = client
        .delete_branches_if_at(
            &node,
            &[
                ConditionalDeletion {
                    branch: "klaud/auto-a".into(),
                    before: maintainer_commit.clone(),
                },
                ConditionalDeletion {
                    branch: "klaud/auto-b".into(),
                    before: shas[1].clone(),
                },
            ],
        )
        .await
        .unwrap();
    assert_eq!(outcome, RefUpdates::Applied);
    let deleted: Vec<(String, String)> = server
        .state()
        .deleted_refs
        .iter()
        .map(|record| (record.name.clone(), record.sha.clone()))
        .collect();
    assert_eq!(
        deleted,
        [
            ("refs/heads/klaud/auto-a".to_string(), maintainer_commit),
            ("refs/heads/klaud/auto-b".to_string(), shas[1].clone()),
        ]
    );

    // Every GraphQL body klaud sent is valid, and its variables fit.
    for request in server
        .request_log()
        .iter()
        .filter(|request| request.is_graphql())
    {
        let body: Value = serde_json::from_str(&request.body).unwrap();
        assert_valid(body["query"].as_str().unwrap(), &body["variables"]);
    }
}

#[tokio::test]
async fn a_hook_on_post_graphql_runs_before_the_first_graphql_request() {
    let (state, shas) = three_branches();
    let server = FakeGitHub::start(state);
    server.before_request("POST", "/graphql", |state| {
        state.delete_branch("klaud/auto-c");
    });
    let seeded_query = "query { repository(owner: \"acme\", name: \"widgets\") { id } }";

    graphql(&server, seeded_query, json!({})).await;

    assert_eq!(server.state().branch_sha("klaud/auto-c"), None);
    assert_eq!(
        server.state().branch_sha("klaud/auto-a"),
        Some(shas[0].as_str())
    );
}

// ---------------------------------------------------------------------------------------------
// (d) the request log

#[tokio::test]
async fn graphql_queries_count_as_reads_and_mutations_as_writes() {
    let seeded = seeded();
    let server = FakeGitHub::start(seeded.state.clone());
    let node = repository_node_id(&server).await;
    let (query, variables) = detail_query(&batch(&seeded));
    let open_id = rest(
        &server,
        &format!("/repos/acme/widgets/pulls/{}", seeded.open),
    )
    .await["node_id"]
        .clone();
    server.clear_request_log();

    graphql(&server, &query, variables).await;
    graphql(&server, MARK_READY, json!({"id": open_id})).await;
    graphql(
        &server,
        UPDATE_REFS,
        json!({"input": {"repositoryId": node, "refUpdates": []}}),
    )
    .await;
    rest(&server, "/repos/acme/widgets").await;
    // An unreadable body changes nothing: a read.
    send(
        &server,
        reqwest::Method::POST,
        "/graphql",
        TOKEN,
        Some(&json!({"query": "{"})),
    )
    .await;
    let named = json!({
        "query": "query read { repository(owner: \"acme\", name: \"widgets\") { id } } mutation write { updateRefs(input: {repositoryId: \"x\", refUpdates: []}) { clientMutationId } }",
        "operationName": "write",
    });
    send(
        &server,
        reqwest::Method::POST,
        "/graphql",
        TOKEN,
        Some(&named),
    )
    .await;

    let log = server.request_log();
    let writes: Vec<bool> = log.iter().map(|request| request.is_write()).collect();
    assert_eq!(writes, [false, true, true, false, false, true]);
    assert_eq!(
        log[0].graphql(),
        Some(OperationSummary {
            mutation: false,
            fields: vec!["repository".into()]
        })
    );
    assert_eq!(
        log[2].graphql(),
        Some(OperationSummary {
            mutation: true,
            fields: vec!["updateRefs".into()]
        })
    );
    assert_eq!(log[5].graphql().unwrap().fields, ["updateRefs"]);
    let counts = server.request_counts();
    assert_eq!((counts.total, counts.reads, counts.writes), (6, 3, 3));
}

// ---------------------------------------------------------------------------------------------
// The health query: mergeability and the checks on a pull request's head (contract §12)

/// A bot pull request whose head has 120 sweep jobs (one run) and a commit status, and a
/// conflicting one whose head has no check at all.
fn seeded_for_health() -> (RepoState, u64, u64) {
    let mut state = seeded().state;
    let busy = state.add_pull_request(PullRequestSpec {
        draft: false,
        ..bot_pull("klaud/auto-health-busy")
    });
    let quiet = state.add_pull_request(bot_pull("klaud/auto-health-quiet"));
    state.set_mergeability(quiet, fake_github::Mergeability::Conflicting, false);
    let head = state.pulls[&busy].head_sha.clone();
    let jobs = (0..120)
        .map(|index| match index {
            0 => JobSpec::completed("sweep 0", "failure").on(&["self-hosted", "b200"]),
            index if index < 100 => JobSpec::completed(&format!("sweep {index}"), "success")
                .on(&["self-hosted", "b200"]),
            index => JobSpec::queued(&format!("sweep {index}")).on(&["mi355x"]),
        })
        .collect();
    state.add_run(RunSpec {
        workflow: "run-sweep.yml".into(),
        head_branch: Some("klaud/auto-health-busy".into()),
        head_sha: Some(head.clone()),
        status: "in_progress".into(),
        conclusion: None,
        jobs,
        ..RunSpec::default()
    });
    state.add_status(&head, "ci/external", "pending", None, MAINTAINER);
    state.add_status(
        &head,
        "ci/external",
        "error",
        Some("https://ci.example/1"),
        MAINTAINER,
    );
    (state, busy, quiet)
}

#[tokio::test]
async fn the_fakes_answers_to_klauds_health_query_conform_to_the_schema_and_page_past_100() {
    let (state, busy, quiet) = seeded_for_health();
    let server = FakeGitHub::start(state);
    let branches = vec![
        "klaud/auto-health-busy".to_string(),
        "klaud/auto-health-quiet".to_string(),
    ];
    let (query, variables) = open_pull_requests_query(REPOSITORY, &branches, true);
    assert_valid(&query, &variables);
    let answer = ask(&server, &query, variables).await;
    let busy_node = &answer["data"]["repository"]["b0"]["nodes"][0];
    assert_eq!(busy_node["mergeable"], "MERGEABLE");
    assert_eq!(busy_node["mergeStateStatus"], "CLEAN");
    let contexts = &busy_node["statusCheckRollup"]["contexts"];
    assert_eq!(
        contexts["totalCount"], 121,
        "120 jobs and the latest status of one context"
    );
    assert_eq!(contexts["nodes"].as_array().unwrap().len(), 100);
    assert_eq!(contexts["pageInfo"]["hasNextPage"], true);
    assert_eq!(contexts["nodes"][0]["conclusion"], "FAILURE");
    assert_eq!(
        contexts["nodes"][0]["checkSuite"]["workflowRun"]["file"]["path"],
        ".github/workflows/run-sweep.yml"
    );
    let quiet_node = &answer["data"]["repository"]["b1"]["nodes"][0];
    assert_eq!(quiet_node["mergeable"], "CONFLICTING");
    assert_eq!(
        quiet_node["mergeStateStatus"], "DRAFT",
        "a draft is DRAFT first"
    );
    assert_eq!(quiet_node["statusCheckRollup"], Value::Null);

    let cursor = contexts["pageInfo"]["endCursor"].as_str().unwrap();
    let (next, variables) = checks_page_query(REPOSITORY, busy, cursor);
    assert_valid(&next, &variables);
    let page = ask(&server, &next, variables).await;
    let rest = &page["data"]["repository"]["pullRequest"]["statusCheckRollup"]["contexts"];
    assert_eq!(rest["nodes"].as_array().unwrap().len(), 21);
    assert_eq!(rest["pageInfo"]["hasNextPage"], false);
    assert_eq!(
        rest["nodes"][20],
        json!({"__typename": "StatusContext", "context": "ci/external", "state": "ERROR", "targetUrl": "https://ci.example/1"})
    );

    // klaud's client reads both pages: every check, in two requests for the busy head.
    let client = client_for(&server);
    let before = server.request_log().len();
    let open = client
        .open_pull_requests_with_checks_on(&Listed::complete(branches))
        .await;
    let requests = server.request_log().len() - before;
    assert!(open.pulls.is_complete());
    let busy_checks = &open.checks[&busy].checks;
    assert!(busy_checks.is_complete(), "{:?}", busy_checks.gap);
    assert_eq!(busy_checks.items.len(), 121);
    assert!(open.checks[&quiet].checks.items.is_empty());
    assert_eq!(
        requests, 2,
        "the listing with the first pages, then page 2 of one head"
    );

    // The jobs of the sweep run, one page of 100 of its 120, with their runner labels.
    let run = open.checks[&busy]
        .checks
        .items
        .iter()
        .find_map(|check| match check {
            klaud::core::health::Check::Run(run) => run.workflow_run.as_ref().map(|run| run.id),
            _ => None,
        })
        .unwrap();
    let jobs = client.sweep_run_jobs(run).await.unwrap();
    assert_eq!(jobs.items.len(), 100);
    assert_eq!(
        jobs.gap.as_deref(),
        Some(format!("run {run} has 120 jobs and one page of 100 was read").as_str())
    );
    assert_eq!(jobs.items[0].labels, vec!["self-hosted", "b200"]);
}
