//! `klaud prepare-review` against the fake GitHub: only klaud's own open pull requests are
//! evidence, with every changed file (renames with their previous name), `files-complete: false`
//! beyond GitHub's 3,000-file cap or after a failed read that stops nothing else, and the review
//! schema as a file and a compact output.

#![allow(clippy::disallowed_methods)] // tests read the environment and spawn the binary

use klaud_fake_github as fake_github;
#[path = "github_mode_support/mod.rs"]
mod github_mode_support;

use fake_github::{
    ClosedSpec, CommitSpec, FakeGitHub, FakeGitHubHandle, FaultConfig, FaultRule, PullRequestSpec,
    RepoState,
};
use github_mode_support::*;
use serde_json::{Value, json};

const CANDIDATES: &str = r#"[{"id": "a", "family": "fa"}, {"id": "n", "family": "fn"}]"#;

fn klaud_pull_request(candidate: &str, draft: bool, commits: Vec<CommitSpec>) -> PullRequestSpec {
    PullRequestSpec {
        title: format!("klaud: {candidate}"),
        author: BOT.into(),
        head_ref: format!("klaud/auto-{candidate}"),
        draft,
        commits,
        ..PullRequestSpec::default()
    }
}

/// klaud's draft for a and ready pull request for b, a maintainer's pull request, a fork's
/// pull request on a klaud-looking branch, and klaud's closed pull request for c.
fn busy_repository() -> (RepoState, [u64; 5]) {
    let mut state = repository();
    let draft = state.add_pull_request(klaud_pull_request(
        "a",
        true,
        vec![CommitSpec::by(BOT).file("configs/nvidia-master.yaml", "a: 2\n")],
    ));
    let ready = state.add_pull_request(klaud_pull_request("b", false, Vec::new()));
    let maintainers = state.add_pull_request(PullRequestSpec {
        title: "faster kernels".into(),
        author: "alice".into(),
        head_ref: "feature/kernels".into(),
        ..PullRequestSpec::default()
    });
    let fork = state.add_pull_request(PullRequestSpec {
        title: "not klaud".into(),
        author: "mallory".into(),
        head_ref: "klaud/auto-a".into(),
        head_repo: Some("mallory/bench".into()),
        ..PullRequestSpec::default()
    });
    let closed = state.add_pull_request(PullRequestSpec {
        closed: Some(ClosedSpec {
            by: BOT.into(),
            ..ClosedSpec::default()
        }),
        ..klaud_pull_request("c", true, Vec::new())
    });
    (state, [draft, ready, maintainers, fork, closed])
}

fn prepare_review(server: &FakeGitHubHandle, candidates: &str, code: i32) -> (Step, String) {
    let step = Step::default();
    let path = step.write("candidates.json", candidates);
    let mut command = step.command(server, "prepare-review");
    command.arg("--candidates").arg(path);
    let log = step.run(command, code);
    (step, log)
}

fn evidence_numbers(evidence: &Value) -> Vec<u64> {
    evidence["pull-requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pull| pull["number"].as_u64().unwrap())
        .collect()
}

fn files_of(evidence: &Value, index: usize) -> Vec<Value> {
    evidence["pull-requests"][index]["files"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn only_klauds_open_pull_requests_are_evidence_with_their_changed_files() {
    let (state, [draft, ready, ..]) = busy_repository();
    let server = FakeGitHub::start(state);

    let (step, _) = prepare_review(&server, CANDIDATES, 0);

    let evidence = step.result_file("open-prs.json");
    assert_eq!(evidence_numbers(&evidence), [draft, ready]);
    let first = &evidence["pull-requests"][0];
    assert_eq!(first["candidate"], "a");
    assert_eq!(first["family"], "fa");
    assert_eq!(first["branch"], "klaud/auto-a");
    assert_eq!(first["draft"], true);
    assert_eq!(first["files-complete"], true);
    assert_eq!(
        files_of(&evidence, 0),
        [json!({"path": "configs/nvidia-master.yaml", "status": "added"})]
    );
    assert_eq!(
        evidence["pull-requests"][1]["family"],
        Value::Null,
        "b is no candidate"
    );
    assert_eq!(evidence["candidates"], json!(["a", "n"]));
    assert_eq!(step.output("has-candidates"), "true");
    assert_eq!(write_requests(&server), Vec::<String>::new());
    let requests: Value = serde_json::from_str(&step.output("requests")).unwrap();
    assert_eq!(
        requests["reads"], 4,
        "the branches under the prefix, their open pull requests (one query), and one file \
         listing per klaud pull request"
    );
}

#[test]
fn the_review_schema_is_written_and_output_as_compact_json() {
    let (state, _) = busy_repository();
    let server = FakeGitHub::start(state);

    let (step, _) = prepare_review(&server, CANDIDATES, 0);

    let schema = step.result_file("review-schema.json");
    let output = step.output("review-schema");
    assert_eq!(
        output,
        schema.to_string(),
        "the output is the file, compact"
    );
    assert!(!output.contains('\n'));
    let decisions = &schema["properties"]["decisions"];
    assert_eq!(
        (
            decisions["minItems"].as_u64(),
            decisions["maxItems"].as_u64()
        ),
        (Some(2), Some(2))
    );
    let validator = jsonschema::validator_for(&schema).unwrap();
    let review = json!({"decisions": [
        {"candidate-id": "a", "decision": "duplicate", "family": "fa", "pull-requests": [1], "reason": "#1 changes it"},
        {"candidate-id": "n", "decision": "proceed", "family": "fn", "pull-requests": [], "reason": "new"},
    ]});
    assert!(validator.is_valid(&review));
    let one_missing = json!({"decisions": [review["decisions"][0].clone()]});
    assert!(!validator.is_valid(&one_missing));
}

#[test]
fn renamed_files_carry_their_previous_name() {
    let mut state = repository();
    state.push_commits(
        "main",
        vec![CommitSpec::by("alice").file("configs/old.yaml", "key: 1\n")],
    );
    let mut rename = CommitSpec::by(BOT).file("configs/new.yaml", "key: 1\n");
    rename.files.push(("configs/old.yaml".into(), None));
    state.add_pull_request(klaud_pull_request("a", true, vec![rename]));
    let server = FakeGitHub::start(state);

    let (step, _) = prepare_review(&server, CANDIDATES, 0);

    assert_eq!(
        files_of(&step.result_file("open-prs.json"), 0),
        [
            json!({"path": "configs/new.yaml", "status": "renamed", "previous-path": "configs/old.yaml"})
        ]
    );
}

#[test]
fn a_pull_request_beyond_githubs_3000_file_cap_is_marked_incomplete() {
    let mut state = repository();
    let mut huge = CommitSpec::by(BOT);
    for index in 0..3_001 {
        huge = huge.file(&format!("generated/{index:05}.yaml"), "x: 1\n");
    }
    state.add_pull_request(klaud_pull_request("a", true, vec![huge]));
    let server = FakeGitHub::start(state);

    let (step, log) = prepare_review(&server, CANDIDATES, 0);

    let evidence = step.result_file("open-prs.json");
    let pull = &evidence["pull-requests"][0];
    assert_eq!(pull["files-complete"], false);
    assert_eq!(pull["files"].as_array().unwrap().len(), 3_000);
    assert!(
        pull["files-incomplete-reason"]
            .as_str()
            .unwrap()
            .contains("at most 3000 files of a pull request; this one changes 3001"),
        "{pull}"
    );
    assert!(log.contains("files-complete is false"), "{log}");
}

#[test]
fn a_pull_request_whose_files_cannot_be_read_does_not_stop_the_others() {
    let (state, [draft, ready, ..]) = busy_repository();
    let server = FakeGitHub::start(state);
    server.set_faults(FaultConfig::rules(vec![FaultRule::nth(
        "GET",
        &format!("/repos/acme/bench/pulls/{draft}/files"),
        1,
        404,
    )]));

    let (step, _) = prepare_review(&server, CANDIDATES, 0);

    let evidence = step.result_file("open-prs.json");
    assert_eq!(evidence_numbers(&evidence), [draft, ready]);
    let failed = &evidence["pull-requests"][0];
    assert_eq!(failed["files-complete"], false);
    assert_eq!(
        failed["files-incomplete-reason"],
        "the changed files could not be read (HTTP 404)"
    );
    assert_eq!(evidence["pull-requests"][1]["files-complete"], true);
    assert!(
        !step.summary().contains("Not Found"),
        "no API body in the summary"
    );
}

#[test]
fn without_candidates_there_is_nothing_to_review() {
    let (state, _) = busy_repository();
    let server = FakeGitHub::start(state);

    let (step, _) = prepare_review(&server, "[]", 0);

    assert_eq!(step.output("has-candidates"), "false");
    let schema = step.result_file("review-schema.json");
    assert_eq!(schema["properties"]["decisions"]["maxItems"], 0);
}

#[test]
fn a_missing_or_malformed_candidates_file_is_bad_input_before_any_request() {
    let (state, _) = busy_repository();
    let server = FakeGitHub::start(state);
    let step = Step::default();

    let log = step.run(step.command(&server, "prepare-review"), 2);
    assert!(log.contains("::error::candidates"), "{log}");

    let (_, log) = prepare_review(&server, r#"[{"id": "a b", "family": "f"}]"#, 2);
    assert!(log.contains("::error::candidates[0].id"), "{log}");
    assert_eq!(requests(&server), Vec::<String>::new());
}

#[test]
fn open_pull_requests_that_cannot_all_be_listed_fail_the_step() {
    // The branches under the prefix, then the open pull requests on them: either read failing
    // leaves the evidence incomplete.
    for (method, path, reason) in [
        (
            "GET",
            "/repos/acme/bench/git/matching-refs/*",
            "the branches under klaud/auto- could not be listed",
        ),
        (
            "POST",
            "/graphql",
            "the open pull requests of 3 branch(es) could not be read",
        ),
    ] {
        let (state, _) = busy_repository();
        let server = FakeGitHub::start(state);
        server.set_faults(FaultConfig::rules(vec![FaultRule::nth(
            method, path, 1, 404,
        )]));

        let (step, log) = prepare_review(&server, CANDIDATES, 1);

        assert!(
            log.contains("klaud's open pull requests could not all be listed, so the review would lack its evidence"),
            "{log}"
        );
        assert!(log.contains(reason), "{log}");
        assert!(!step.path("out/open-prs.json").exists());
    }
}
