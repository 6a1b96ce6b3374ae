//! The fake GitHub answers as the real GitHub did: real sessions of api.github.com, recorded and
//! normalized by `octokit/fixtures` (`tests/fixtures/octokit/`), replayed against it. Each
//! scenario's world is seeded into the fake, its requests are sent in order, and every answer is
//! compared with GitHub's (`fake_github_replay/compare.rs`); a difference fails the scenario unless
//! `fake_github_replay/allowed.rs` allows it with its reason, and an allowance no difference uses
//! fails too.

#[path = "fake_github_replay/allowed.rs"]
mod allowed;
#[path = "fake_github_replay/compare.rs"]
mod compare;
#[path = "fake_github_replay/forms.rs"]
mod forms;
#[path = "fake_github_replay/recording.rs"]
mod recording;
#[path = "fake_github_replay/send.rs"]
mod send;
#[path = "fake_github_replay/worlds.rs"]
mod worlds;

use klaud_fake_github::{FakeGitHub, http_client};

use allowed::ALLOWED;
use compare::Comparer;

/// The scenarios replayed; `tests/fixtures/octokit/README.md` says why the others are not copied.
const SCENARIOS: [&str; 10] = [
    "add-labels-to-issue",
    "create-file",
    "create-status",
    "errors",
    "get-content",
    "get-repository",
    "git-refs",
    "labels",
    "lock-issue",
    "paginate-issues",
];

/// A difference found, where it was found.
struct Found {
    exchange: usize,
    request: String,
    difference: compare::Difference,
}

/// Replays `scenario` and returns every difference between the fake's answers and GitHub's.
async fn replay(scenario: &str) -> (usize, Vec<Found>) {
    let recording = recording::load(scenario).expect("the recording reads");
    let world = worlds::world(scenario, &recording).expect("the world is derived");
    let server = FakeGitHub::start(world.state);
    let client = http_client();
    let mut comparer = Comparer::new(&server.base_url(), world.shas);
    let mut found = Vec::new();
    for (index, exchange) in recording.iter().enumerate() {
        let answer = send::send(&client, &server.base_url(), exchange, &comparer.shas)
            .await
            .expect("the fake answers");
        for difference in comparer.compare(exchange, &answer) {
            found.push(Found {
                exchange: index,
                request: exchange.title(),
                difference,
            });
        }
    }
    (recording.len(), found)
}

/// Replays `scenario`: every difference must be allowed, and every allowance used.
async fn assert_answers_as_recorded(scenario: &str) {
    let (requests, found) = replay(scenario).await;
    let allowances: Vec<_> = ALLOWED
        .iter()
        .filter(|allowed| allowed.scenario == scenario)
        .collect();
    let is_allowed = |found: &Found| {
        allowances
            .iter()
            .any(|allowed| allowed.exchange == found.exchange && allowed.at == found.difference.at)
    };
    let unexplained: Vec<String> = found
        .iter()
        .filter(|found| !is_allowed(found))
        .map(|found| {
            format!(
                "  #{} {}: {}",
                found.exchange, found.request, found.difference
            )
        })
        .collect();
    let unused: Vec<String> = allowances
        .iter()
        .filter(|allowed| {
            !found.iter().any(|found| {
                found.exchange == allowed.exchange && found.difference.at == allowed.at
            })
        })
        .map(|allowed| format!("  #{} {}", allowed.exchange, allowed.at))
        .collect();
    assert!(
        unexplained.is_empty() && unused.is_empty(),
        "{scenario}: {requests} requests replayed\ndifferences not allowed:\n{}\nallowances no difference uses:\n{}",
        unexplained.join("\n"),
        unused.join("\n"),
    );
    println!("{scenario}: {requests} requests replayed as recorded");
    for allowed in allowances {
        println!(
            "  allowed #{} {}: {}",
            allowed.exchange, allowed.at, allowed.reason
        );
    }
}

#[test]
fn every_copied_recording_is_replayed() {
    assert_eq!(recording::copied_scenarios(), SCENARIOS);
}

#[tokio::test]
async fn adding_labels_to_an_issue_answers_as_recorded() {
    assert_answers_as_recorded("add-labels-to-issue").await;
}

#[tokio::test]
async fn creating_a_file_answers_as_recorded() {
    assert_answers_as_recorded("create-file").await;
}

#[tokio::test]
async fn creating_statuses_answers_as_recorded() {
    assert_answers_as_recorded("create-status").await;
}

#[tokio::test]
async fn a_validation_failure_answers_as_recorded() {
    assert_answers_as_recorded("errors").await;
}

#[tokio::test]
async fn reading_contents_answers_as_recorded() {
    assert_answers_as_recorded("get-content").await;
}

#[tokio::test]
async fn reading_the_repository_answers_as_recorded() {
    assert_answers_as_recorded("get-repository").await;
}

#[tokio::test]
async fn git_refs_answer_as_recorded() {
    assert_answers_as_recorded("git-refs").await;
}

#[tokio::test]
async fn labels_answer_as_recorded() {
    assert_answers_as_recorded("labels").await;
}

#[tokio::test]
async fn locking_an_issue_answers_as_recorded() {
    assert_answers_as_recorded("lock-issue").await;
}

#[tokio::test]
async fn paginating_issues_answers_as_recorded() {
    assert_answers_as_recorded("paginate-issues").await;
}
