//! The candidates' records beside the ledger on the state branch, against the fake GitHub:
//! written in the same commit as the claim, deleted in the same commit as the ledger write that
//! drops the candidate's last session, a writer in between met as a conflict and re-decided,
//! the contents API's compare-and-swap still holding after a multi-file commit, a dry run that
//! sends nothing, and a first write that creates the branch with both files.

use klaud_fake_github as fake_github;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use fake_github::{FakeGitHub, FakeGitHubHandle, FaultConfig, FaultRule, RepoState};
use klaud::adapters::github::transport::RetryPolicy;
use klaud::adapters::github::writes::WriteRecorder;
use klaud::adapters::github::{GitHubClient, GitHubSettings};
use klaud::adapters::ledger_store::{
    CandidateRecord, LEDGER_FILE, LedgerDecision, LedgerError, LedgerStore, LedgerUpdate,
    LoadedLedger, record_path,
};
use klaud::core::ledger::Ledger;
use serde_json::{Value, json};

const TOKEN: &str = "bot-token";
const STATE_BRANCH: &str = "klaud/state";
const REF_PATH: &str = "/repos/acme/bench/git/refs/heads/klaud/state";

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn repository() -> RepoState {
    RepoState::new("acme", "bench").with_token(TOKEN, "klaud-bot")
}

fn client_for(server: &FakeGitHubHandle) -> GitHubClient {
    let mut settings = GitHubSettings::new(
        &server.base_url(),
        &server.graphql_url(),
        TOKEN,
        "acme/bench",
    );
    settings.retry = RetryPolicy {
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(20),
        ..RetryPolicy::default()
    };
    GitHubClient::new(&settings).unwrap()
}

/// The record `select` would store for `candidate`.
fn record_text(candidate: &str) -> String {
    json!({"id": candidate, "family": format!("family-{candidate}"), "prompt": "speed it up"})
        .to_string()
}

/// `ledger` with `candidate`'s family claimed by `run`.
fn claimed(ledger: &Ledger, candidate: &str, run: u64) -> Ledger {
    let mut next = ledger.clone();
    next.claim_family(candidate, &format!("family-{candidate}"), run, now())
        .unwrap();
    next
}

/// A decision that claims `candidate`'s family by `run` and stores its record in the same
/// commit (nothing, when the claim is already there).
fn claim_with_record(
    candidate: &'static str,
    run: u64,
) -> impl FnMut(&Ledger) -> LedgerDecision<()> {
    move |ledger: &Ledger| {
        if ledger
            .claim_of_family(&format!("family-{candidate}"))
            .is_some()
        {
            return LedgerDecision::Keep(());
        }
        LedgerDecision::WriteWithRecords {
            ledger: claimed(ledger, candidate, run),
            records: vec![CandidateRecord {
                candidate: candidate.to_string(),
                json: record_text(candidate),
            }],
            message: format!("select run {run}: claimed family-{candidate} for {candidate}"),
            result: (),
        }
    }
}

/// A decision that drops every session and claim of `candidate`, as pruning its last session
/// does.
fn drop_candidate(candidate: &'static str, run: u64) -> impl FnMut(&Ledger) -> LedgerDecision<()> {
    move |ledger: &Ledger| {
        let mut next = ledger.clone();
        next.sessions
            .retain(|session| session.candidate != candidate);
        next.claims.retain(|claim| claim.candidate != candidate);
        LedgerDecision::Write {
            ledger: next,
            message: format!("recover run {run}: pruned {candidate}"),
            result: (),
        }
    }
}

/// One commit of the state branch: its message, parents and files (path → content).
#[derive(Debug)]
struct StateCommit {
    message: String,
    parents: usize,
    files: BTreeMap<String, String>,
}

/// The state branch's commits, newest first.
fn history(server: &FakeGitHubHandle) -> Vec<StateCommit> {
    server.with_state(|state| {
        let mut commits = Vec::new();
        let mut next = state.branch_sha(STATE_BRANCH).map(str::to_string);
        while let Some(sha) = next {
            let commit = &state.commits[&sha];
            let files = state
                .commit_files(&sha)
                .into_iter()
                .map(|(path, blob)| (path, state.blobs[&blob].clone()))
                .collect();
            commits.push(StateCommit {
                message: commit.message.clone(),
                parents: commit.parents.len(),
                files,
            });
            next = commit.parents.first().cloned();
        }
        commits
    })
}

fn stored_ledger(commit: &StateCommit) -> Ledger {
    Ledger::from_json(&commit.files[LEDGER_FILE]).unwrap()
}

fn candidates_of(ledger: &Ledger) -> Vec<&str> {
    ledger
        .sessions
        .iter()
        .map(|session| session.candidate.as_str())
        .collect()
}

/// The blob sha of `ledger.json` at the state branch's head.
fn ledger_blob_at_head(server: &FakeGitHubHandle) -> String {
    server.with_state(|state| {
        let head = state.branch_sha(STATE_BRANCH).unwrap().to_string();
        state.file_at(&head, LEDGER_FILE).unwrap().0
    })
}

fn writes_sent(server: &FakeGitHubHandle) -> Vec<String> {
    server
        .request_log()
        .into_iter()
        .filter(|request| request.is_write())
        .map(|request| format!("{} {}", request.method, request.path))
        .collect()
}

/// A state branch holding a ledger with `candidates` claimed, none with a record.
fn server_with_ledger(candidates: &[&str]) -> FakeGitHubHandle {
    let mut state = repository();
    let mut ledger = Ledger::empty();
    for (run, candidate) in candidates.iter().enumerate() {
        ledger = claimed(&ledger, candidate, run as u64 + 1);
    }
    state.put_file(STATE_BRANCH, LEDGER_FILE, &ledger.to_json());
    FakeGitHub::start(state)
}

fn loaded_from<T>(update: &LedgerUpdate<T>) -> LoadedLedger {
    LoadedLedger {
        ledger: update.ledger.clone(),
        blob_sha: update.blob_sha.clone(),
    }
}

#[tokio::test]
async fn a_claim_and_its_record_are_written_in_one_commit() {
    let server = server_with_ledger(&["seed"]);
    let client = client_for(&server);
    let store = LedgerStore::new(&client, STATE_BRANCH);

    let update = store.update(claim_with_record("cand-1", 7)).await.unwrap();

    assert!(update.wrote);
    assert_eq!(update.conflicts, 0);
    let commits = history(&server);
    assert_eq!(commits.len(), 2, "one commit on top of the seeded ledger");
    let head = &commits[0];
    assert_eq!(
        head.message,
        "select run 7: claimed family-cand-1 for cand-1"
    );
    assert_eq!(candidates_of(&stored_ledger(head)), ["seed", "cand-1"]);
    assert_eq!(head.files["records/cand-1.json"], record_text("cand-1"));
    assert!(
        !commits[1].files.contains_key("records/cand-1.json"),
        "the record came with the claim, not before it"
    );
    assert_eq!(update.blob_sha, Some(ledger_blob_at_head(&server)));
    let requests = client.request_counts();
    assert_eq!(
        (requests.reads, requests.writes),
        (3, 3),
        "the ledger, the ref and its tree; a tree, a commit and the ref moved"
    );
    assert_eq!(
        store.read_record("cand-1").await.unwrap(),
        Some(record_text("cand-1"))
    );
}

#[tokio::test]
async fn a_writer_just_before_the_ref_moves_is_a_conflict_and_the_claim_is_re_decided() {
    let server = server_with_ledger(&["seed"]);
    let before = Ledger::from_json(
        &server.with_state(|state| state.read_file(STATE_BRANCH, LEDGER_FILE).unwrap()),
    )
    .unwrap();
    let theirs = claimed(&before, "other", 8).to_json();
    server.before_request("PATCH", REF_PATH, move |state| {
        state.put_file(STATE_BRANCH, LEDGER_FILE, &theirs);
    });
    let client = client_for(&server);

    let update = LedgerStore::new(&client, STATE_BRANCH)
        .update(claim_with_record("cand-1", 7))
        .await
        .unwrap();

    assert_eq!(
        update.conflicts, 1,
        "the ref had moved: re-read and re-decided"
    );
    let commits = history(&server);
    let messages: Vec<&str> = commits
        .iter()
        .map(|commit| commit.message.as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "select run 7: claimed family-cand-1 for cand-1",
            "Update ledger.json",
            "Update ledger.json"
        ],
        "the other writer's commit kept, ours on top of it"
    );
    assert_eq!(
        candidates_of(&stored_ledger(&commits[0])),
        ["seed", "other", "cand-1"],
        "nothing lost"
    );
    assert_eq!(
        commits[0].files["records/cand-1.json"],
        record_text("cand-1")
    );
    assert!(!commits[1].files.contains_key("records/cand-1.json"));
    assert_eq!(update.blob_sha, Some(ledger_blob_at_head(&server)));
}

#[tokio::test]
async fn writes_whose_answers_were_lost_are_repeated_and_land_once() {
    let server = server_with_ledger(&["seed"]);
    server.set_faults(FaultConfig::rules(
        [
            ("POST", "/repos/acme/bench/git/trees"),
            ("POST", "/repos/acme/bench/git/commits"),
            ("PATCH", REF_PATH),
        ]
        .into_iter()
        .map(|(method, path)| FaultRule::nth(method, path, 1, 502).after_handling())
        .collect(),
    ));
    let client = client_for(&server);

    let update = LedgerStore::new(&client, STATE_BRANCH)
        .update(claim_with_record("cand-1", 7))
        .await
        .unwrap();

    assert_eq!(
        update.conflicts, 0,
        "a repeated fast-forward is no conflict"
    );
    assert_eq!(client.request_counts().retries, 3);
    let commits = history(&server);
    assert_eq!(commits.len(), 2, "one commit on top of the seeded ledger");
    assert_eq!(
        candidates_of(&stored_ledger(&commits[0])),
        ["seed", "cand-1"]
    );
    assert_eq!(update.blob_sha, Some(ledger_blob_at_head(&server)));
}

#[tokio::test]
async fn a_ledger_changed_before_the_tree_is_read_is_a_conflict_before_any_write() {
    let server = server_with_ledger(&["seed"]);
    let before = Ledger::from_json(
        &server.with_state(|state| state.read_file(STATE_BRANCH, LEDGER_FILE).unwrap()),
    )
    .unwrap();
    let theirs = claimed(&before, "other", 8).to_json();
    server.before_request(
        "GET",
        "/repos/acme/bench/git/ref/heads/klaud/state",
        move |state| {
            state.put_file(STATE_BRANCH, LEDGER_FILE, &theirs);
        },
    );
    let client = client_for(&server);

    let update = LedgerStore::new(&client, STATE_BRANCH)
        .update(claim_with_record("cand-1", 7))
        .await
        .unwrap();

    assert_eq!(update.conflicts, 1);
    let sent = writes_sent(&server);
    assert_eq!(
        sent,
        [
            "POST /repos/acme/bench/git/trees",
            "POST /repos/acme/bench/git/commits",
            &format!("PATCH {REF_PATH}"),
        ],
        "the stale reading wrote nothing; the fresh one wrote once"
    );
    assert_eq!(
        candidates_of(&stored_ledger(&history(&server)[0])),
        ["seed", "other", "cand-1"]
    );
}

#[tokio::test]
async fn dropping_a_candidates_last_session_deletes_its_record_in_the_same_commit() {
    let server = server_with_ledger(&[]);
    let client = client_for(&server);
    let store = LedgerStore::new(&client, STATE_BRANCH);
    store.update(claim_with_record("cand-1", 7)).await.unwrap();
    store.update(claim_with_record("cand-2", 7)).await.unwrap();
    let (reads, writes) = {
        let counts = client.request_counts();
        (counts.reads, counts.writes)
    };

    let update = store.update(drop_candidate("cand-1", 9)).await.unwrap();

    let commits = history(&server);
    let head = &commits[0];
    assert_eq!(head.message, "recover run 9: pruned cand-1");
    assert_eq!(candidates_of(&stored_ledger(head)), ["cand-2"]);
    assert!(!head.files.contains_key("records/cand-1.json"));
    assert_eq!(head.files["records/cand-2.json"], record_text("cand-2"));
    assert!(
        commits[1].files.contains_key("records/cand-1.json"),
        "the record went with the ledger write that dropped its session"
    );
    assert_eq!(update.blob_sha, Some(ledger_blob_at_head(&server)));
    let counts = client.request_counts();
    assert_eq!((counts.reads - reads, counts.writes - writes), (3, 3));
    assert_eq!(store.read_record("cand-1").await.unwrap(), None);
}

#[tokio::test]
async fn dropping_a_candidate_without_a_record_writes_the_ledger_alone() {
    let server = server_with_ledger(&["cand-1", "cand-2"]);
    let client = client_for(&server);

    LedgerStore::new(&client, STATE_BRANCH)
        .update(drop_candidate("cand-1", 9))
        .await
        .unwrap();

    assert_eq!(
        writes_sent(&server),
        ["PUT /repos/acme/bench/contents/ledger.json"],
        "no record to delete: one contents-API write"
    );
    let counts = client.request_counts();
    assert_eq!(
        (counts.reads, counts.writes),
        (3, 1),
        "the ledger, then the ref and its tree to look for the record"
    );
    assert_eq!(
        candidates_of(&stored_ledger(&history(&server)[0])),
        ["cand-2"]
    );
}

#[tokio::test]
async fn a_write_that_changes_no_record_costs_what_it_always_did() {
    let server = server_with_ledger(&["cand-1"]);
    let client = client_for(&server);

    LedgerStore::new(&client, STATE_BRANCH)
        .update(|ledger: &Ledger| LedgerDecision::Write {
            ledger: claimed(ledger, "cand-2", 7),
            message: "select run 7: claimed family-cand-2".into(),
            result: (),
        })
        .await
        .unwrap();

    let counts = client.request_counts();
    assert_eq!((counts.reads, counts.writes), (1, 1));
    assert_eq!(
        writes_sent(&server),
        ["PUT /repos/acme/bench/contents/ledger.json"]
    );
}

#[tokio::test]
async fn a_contents_api_write_after_a_multi_file_commit_swaps_on_the_new_blob() {
    let server = server_with_ledger(&["seed"]);
    let client = client_for(&server);
    let store = LedgerStore::new(&client, STATE_BRANCH);
    let first = store.update(claim_with_record("cand-1", 7)).await.unwrap();
    let before = client.request_counts();

    let second = store
        .update_starting_from(Some(loaded_from(&first)), |ledger: &Ledger| {
            LedgerDecision::Write {
                ledger: claimed(ledger, "cand-2", 7),
                message: "select run 7: claimed family-cand-2".into(),
                result: (),
            }
        })
        .await
        .unwrap();

    assert_eq!(
        second.conflicts, 0,
        "the blob sha the commit returned is current"
    );
    let after = client.request_counts();
    assert_eq!(
        (after.reads - before.reads, after.writes - before.writes),
        (0, 1)
    );
    assert_eq!(second.blob_sha, Some(ledger_blob_at_head(&server)));
    let head = &history(&server)[0];
    assert_eq!(
        candidates_of(&stored_ledger(head)),
        ["seed", "cand-1", "cand-2"]
    );
    assert_eq!(head.files["records/cand-1.json"], record_text("cand-1"));

    // The blob of the ledger before the commit is stale: the swap refuses it.
    server.clear_request_log();
    let stale = LoadedLedger {
        ledger: first.ledger.clone(),
        blob_sha: Some(server.with_state(|state| {
            let seeded = history_shas(state)[2].clone();
            state.file_at(&seeded, LEDGER_FILE).unwrap().0
        })),
    };
    let third = store
        .update_starting_from(Some(stale), |ledger: &Ledger| LedgerDecision::Write {
            ledger: claimed(ledger, "cand-3", 7),
            message: "select run 7: claimed family-cand-3".into(),
            result: (),
        })
        .await
        .unwrap();
    assert_eq!(third.conflicts, 1);
    assert_eq!(
        candidates_of(&stored_ledger(&history(&server)[0])),
        ["seed", "cand-1", "cand-2", "cand-3"]
    );
}

/// The state branch's commit shas, newest first.
fn history_shas(state: &RepoState) -> Vec<String> {
    let mut shas = Vec::new();
    let mut next = state.branch_sha(STATE_BRANCH).map(str::to_string);
    while let Some(sha) = next {
        next = state.commits[&sha].parents.first().cloned();
        shas.push(sha);
    }
    shas
}

#[tokio::test]
async fn a_dry_run_sends_no_write_and_records_the_commit_it_would_make() {
    let server = server_with_ledger(&["seed"]);
    let recorder = Arc::new(WriteRecorder::default());
    let client = client_for(&server).recording_writes(Arc::clone(&recorder));
    let store = LedgerStore::new(&client, STATE_BRANCH);
    let head_before =
        server.with_state(|state| state.branch_sha(STATE_BRANCH).unwrap().to_string());

    let claim = store.update(claim_with_record("cand-1", 7)).await.unwrap();
    let prune = store
        .update_starting_from(Some(loaded_from(&claim)), drop_candidate("seed", 7))
        .await
        .unwrap();

    assert!(writes_sent(&server).is_empty(), "a dry run sends no write");
    assert_eq!(
        server.with_state(|state| state.branch_sha(STATE_BRANCH).unwrap().to_string()),
        head_before
    );
    assert!(claim.wrote && prune.wrote);
    assert_eq!((claim.conflicts, prune.conflicts), (0, 0));
    let writes = recorder.writes();
    let requests: Vec<String> = writes
        .iter()
        .map(|write| format!("{} {}", write.method, write.path))
        .collect();
    assert_eq!(
        requests,
        [
            "POST /repos/acme/bench/git/trees",
            "POST /repos/acme/bench/git/commits",
            &format!("PATCH {REF_PATH}"),
            "PUT /repos/acme/bench/contents/ledger.json",
        ],
        "the claim as one commit, then the prune (no record of seed) through the contents API"
    );
    let tree = writes[0].body.as_ref().unwrap();
    let base_tree = server.with_state(|state| state.commits[&head_before].tree.clone());
    assert_eq!(tree["base_tree"], json!(base_tree));
    let paths: Vec<&str> = tree["tree"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, [LEDGER_FILE, "records/cand-1.json"]);
    assert_eq!(tree["tree"][1]["content"], json!(record_text("cand-1")));
    assert_eq!(
        writes[1].body.as_ref().unwrap()["parents"],
        json!([head_before])
    );
    assert_eq!(writes[2].body.as_ref().unwrap()["force"], json!(false));
}

#[tokio::test]
async fn the_first_write_on_a_missing_branch_creates_it_with_the_ledger_and_the_record() {
    let server = FakeGitHub::start(repository());
    let client = client_for(&server);
    let store = LedgerStore::new(&client, STATE_BRANCH);

    let update = store.update(claim_with_record("cand-1", 7)).await.unwrap();

    let commits = history(&server);
    assert_eq!(commits.len(), 1);
    assert_eq!(commits[0].parents, 0, "the state branch is an orphan");
    assert_eq!(
        commits[0].files.keys().collect::<Vec<_>>(),
        [LEDGER_FILE, "records/cand-1.json"]
    );
    assert_eq!(candidates_of(&stored_ledger(&commits[0])), ["cand-1"]);
    assert_eq!(update.blob_sha, Some(ledger_blob_at_head(&server)));
    let counts = client.request_counts();
    assert_eq!(
        (counts.reads, counts.writes),
        (2, 3),
        "the missing ledger and branch; a tree, a commit and the ref created"
    );
}

#[tokio::test]
async fn a_record_is_read_in_one_request_and_only_a_candidate_id_names_one() {
    let server = server_with_ledger(&[]);
    let client = client_for(&server);
    let store = LedgerStore::new(&client, STATE_BRANCH);

    assert_eq!(store.read_record("cand-1").await.unwrap(), None);
    assert_eq!(client.request_counts().reads, 1);
    let error = store.read_record("../ledger").await.unwrap_err();
    assert_eq!(
        error,
        LedgerError::NotACandidateId {
            candidate: "../ledger".into()
        }
    );
    assert_eq!(client.request_counts().reads, 1, "no request for a bad id");
    assert_eq!(
        record_path("cand-1").as_deref(),
        Some("records/cand-1.json")
    );
}

#[tokio::test]
async fn a_record_of_a_candidate_without_a_session_is_refused_before_any_write() {
    let server = server_with_ledger(&["seed"]);
    let client = client_for(&server);

    let error = LedgerStore::new(&client, STATE_BRANCH)
        .update(|ledger: &Ledger| LedgerDecision::WriteWithRecords {
            ledger: ledger.clone(),
            records: vec![CandidateRecord {
                candidate: "cand-1".into(),
                json: Value::Null.to_string(),
            }],
            message: "m".into(),
            result: (),
        })
        .await
        .unwrap_err();

    assert_eq!(
        error,
        LedgerError::RecordWithoutSession {
            candidate: "cand-1".into()
        }
    );
    assert_eq!(client.request_counts().writes, 0);
}
