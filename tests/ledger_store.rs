//! The ledger on its orphan branch, against the fake GitHub: created on first write, written
//! with compare-and-swap, re-decided on conflict, never a lost write.

use klaud_fake_github as fake_github;

use std::time::Duration;

use chrono::{DateTime, Utc};
use fake_github::{FakeGitHub, FakeGitHubHandle, FaultConfig, FaultRule, RepoState};
use klaud::adapters::github::transport::RetryPolicy;
use klaud::adapters::github::{GitHubClient, GitHubSettings};
use klaud::adapters::ledger_store::{LEDGER_FILE, LedgerDecision, LedgerError, LedgerStore};
use klaud::core::ledger::{ClaimRefusal, Ledger};

const TOKEN: &str = "bot-token";
const STATE_BRANCH: &str = "klaud/state";

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
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

/// A decision that claims `family` for `candidate` by `run`, or keeps the ledger and reports
/// the refusal.
fn claim(
    candidate: &'static str,
    family: &'static str,
    run: u64,
) -> impl FnMut(&Ledger) -> LedgerDecision<Result<(), ClaimRefusal>> {
    move |ledger: &Ledger| {
        let mut next = ledger.clone();
        match next.claim_family(candidate, family, run, now()) {
            Ok(()) if next == *ledger => LedgerDecision::Keep(Ok(())),
            Ok(()) => LedgerDecision::Write {
                ledger: next,
                message: format!(
                    "select run {run}: claimed family {family} for candidate {candidate}"
                ),
                result: Ok(()),
            },
            Err(refusal) => LedgerDecision::Keep(Err(refusal)),
        }
    }
}

fn stored_ledger(server: &FakeGitHubHandle) -> Ledger {
    let text = server
        .with_state(|state| state.read_file(STATE_BRANCH, LEDGER_FILE))
        .expect("ledger.json is on the state branch");
    Ledger::from_json(&text).unwrap()
}

/// The commit messages of `branch`, newest first (its audit log).
fn commit_messages_of(state: &RepoState, branch: &str) -> Vec<String> {
    let mut messages = Vec::new();
    let mut next = state.refs.get(&format!("refs/heads/{branch}")).cloned();
    while let Some(sha) = next {
        let commit = &state.commits[&sha];
        messages.push(commit.message.clone());
        next = commit.parents.first().cloned();
    }
    messages
}

fn slow_server(state: RepoState) -> FakeGitHubHandle {
    let server = FakeGitHub::start(state);
    server.set_faults(FaultConfig {
        latency_ms: 40,
        ..FaultConfig::default()
    });
    server
}

#[tokio::test]
async fn a_missing_branch_reads_as_an_empty_ledger_and_is_created_on_first_write() {
    let server = FakeGitHub::start(RepoState::new("acme", "bench").with_token(TOKEN, "klaud-bot"));
    let client = client_for(&server);
    let store = LedgerStore::new(&client, STATE_BRANCH);

    assert_eq!(store.load().await.unwrap().ledger, Ledger::empty());
    let update = store.update(claim("a", "f", 7)).await.unwrap();

    assert!(update.wrote);
    assert_eq!(stored_ledger(&server).claims.len(), 1);
    let branch = client.branch(STATE_BRANCH).await.unwrap().unwrap();
    let head = server.state().commits[&branch.object.sha].clone();
    assert!(head.parents.is_empty(), "the state branch is an orphan");
}

#[tokio::test]
async fn two_writers_racing_on_different_families_both_survive() {
    let server = slow_server(RepoState::new("acme", "bench").with_token(TOKEN, "klaud-bot"));
    let seed_client = client_for(&server);
    LedgerStore::new(&seed_client, STATE_BRANCH)
        .update(claim("seed", "s", 1))
        .await
        .unwrap();
    let (first, second) = (client_for(&server), client_for(&server));
    let (store_a, store_b) = (
        LedgerStore::new(&first, STATE_BRANCH),
        LedgerStore::new(&second, STATE_BRANCH),
    );

    let (a, b) = tokio::join!(
        store_a.update(claim("a", "f", 7)),
        store_b.update(claim("b", "g", 8))
    );

    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(
        a.conflicts + b.conflicts,
        1,
        "the loser re-read and re-decided"
    );
    let ledger = stored_ledger(&server);
    let families: Vec<&str> = ledger.claims.iter().map(|c| c.family.as_str()).collect();
    assert_eq!(families.len(), 3);
    assert!(families.contains(&"f") && families.contains(&"g") && families.contains(&"s"));
}

#[tokio::test]
async fn two_writers_racing_on_one_family_claim_it_once() {
    let server = slow_server(RepoState::new("acme", "bench").with_token(TOKEN, "klaud-bot"));
    let (first, second) = (client_for(&server), client_for(&server));
    let (store_a, store_b) = (
        LedgerStore::new(&first, STATE_BRANCH),
        LedgerStore::new(&second, STATE_BRANCH),
    );

    // Both find no branch: both try to create it, one of them loses and re-decides.
    let (a, b) = tokio::join!(
        store_a.update(claim("a", "f", 7)),
        store_b.update(claim("b", "f", 8))
    );

    let results = [a.unwrap().result, b.unwrap().result];
    assert_eq!(results.iter().filter(|result| result.is_ok()).count(), 1);
    assert_eq!(results.iter().filter(|result| result.is_err()).count(), 1);
    assert_eq!(stored_ledger(&server).claims.len(), 1);
    assert_eq!(stored_ledger(&server).live_sessions().count(), 1);
}

#[tokio::test]
async fn every_write_leaves_a_commit_message_naming_the_run_and_the_change() {
    let server = FakeGitHub::start(RepoState::new("acme", "bench").with_token(TOKEN, "klaud-bot"));
    let client = client_for(&server);
    let store = LedgerStore::new(&client, STATE_BRANCH);

    store.update(claim("a", "f", 7)).await.unwrap();
    store.update(claim("b", "g", 7)).await.unwrap();

    let messages = server.with_state(|state| commit_messages_of(state, STATE_BRANCH));
    assert_eq!(
        messages,
        [
            "select run 7: claimed family g for candidate b",
            "select run 7: claimed family f for candidate a",
        ]
    );
}

#[tokio::test]
async fn a_conflict_that_never_clears_fails_after_the_bounded_attempts() {
    let mut state = RepoState::new("acme", "bench").with_token(TOKEN, "klaud-bot");
    state.put_file(STATE_BRANCH, LEDGER_FILE, &Ledger::empty().to_json());
    let server = FakeGitHub::start(state);
    server.set_faults(FaultConfig::rules(vec![
        FaultRule::nth("PUT", "/repos/acme/bench/contents/*", 1, 409).times(100),
    ]));
    let client = client_for(&server);

    let error = LedgerStore::new(&client, STATE_BRANCH)
        .with_max_attempts(3)
        .update(claim("a", "f", 7))
        .await
        .unwrap_err();

    assert_eq!(error, LedgerError::ConflictPersisted { attempts: 3 });
    assert_eq!(stored_ledger(&server), Ledger::empty());
}

#[tokio::test]
async fn an_unreadable_ledger_is_an_error_and_nothing_is_written() {
    let mut state = RepoState::new("acme", "bench").with_token(TOKEN, "klaud-bot");
    state.put_file(
        STATE_BRANCH,
        LEDGER_FILE,
        "{\"version\": 1, \"sessions\": [",
    );
    let server = FakeGitHub::start(state);
    let client = client_for(&server);

    let error = LedgerStore::new(&client, STATE_BRANCH)
        .update(claim("a", "f", 7))
        .await
        .unwrap_err();

    assert!(matches!(error, LedgerError::Unreadable(_)), "{error:?}");
    assert_eq!(client.request_counts().writes, 0);
}
