//! klaud's GitHub client on issues against the fake GitHub: a label's issues over several pages
//! with pull requests dropped and a failed page reported as a gap, an issue's edit history in one
//! query sorted oldest first, a collaborator's permission (role first, 404 as none), and issue
//! writes sent, or recorded by a dry-run client, with the requests each call costs.

use klaud_fake_github as fake_github;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use fake_github::{
    FakeGitHub, FakeGitHubHandle, FaultConfig, FaultRule, IssueSpec, MAINTAINER_ANN, OUTSIDER_OLA,
    PullRequestSpec, READER_ROB, RepoState, Role, Timestamp,
};
use klaud::adapters::github::error::GitHubError;
use klaud::adapters::github::issues::{IssueEdit, IssueWritten};
use klaud::adapters::github::transport::RetryPolicy;
use klaud::adapters::github::writes::WriteRecorder;
use klaud::adapters::github::{GitHubClient, GitHubSettings};
use klaud::core::github_state::{IssueState, RepositoryPermission};
use serde_json::json;

const TOKEN: &str = "ghs_klaudTestToken0123456789abcdef";
const BOT: &str = "klaud-bot";
const NOW: Timestamp = Timestamp(1_767_225_600); // 2026-01-01T00:00:00Z
const LABEL: &str = "klaud-dashboard";

fn repository() -> RepoState {
    RepoState::new("acme", "bench")
        .with_now(NOW)
        .with_token(TOKEN, BOT)
        .with_person(MAINTAINER_ANN)
        .with_person(READER_ROB)
        .with_person(OUTSIDER_OLA)
}

fn client_with(server: &FakeGitHubHandle, token: &str) -> GitHubClient {
    let mut settings = GitHubSettings::new(
        &server.base_url(),
        &server.graphql_url(),
        token,
        "acme/bench",
    );
    settings.retry = RetryPolicy {
        attempts: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(20),
        secondary_wait_cap: Duration::from_secs(5),
        secondary_default_wait: Duration::from_millis(10),
        request_timeout: Duration::from_secs(10),
    };
    GitHubClient::new(&settings).expect("valid settings")
}

fn client_for(server: &FakeGitHubHandle) -> GitHubClient {
    client_with(server, TOKEN)
}

fn dashboard(title: &str, author: &str, minutes_ago: i64) -> IssueSpec {
    IssueSpec {
        title: title.to_string(),
        body: Some(format!("{title}\n- [ ] pause")),
        author: author.to_string(),
        labels: vec![LABEL.to_string()],
        created_at: Some(NOW.minus(minutes_ago * 60)),
    }
}

fn at(timestamp: Timestamp) -> DateTime<Utc> {
    DateTime::from_timestamp(timestamp.0, 0).expect("a time")
}

#[tokio::test]
async fn a_labels_issues_are_listed_over_every_page_without_pull_requests() {
    let mut state = repository();
    let mut expected = Vec::new();
    for index in 0..230 {
        expected.push(state.add_issue(dashboard(&format!("issue {index}"), BOT, 300 - index)));
    }
    for index in 0..3 {
        state.add_pull_request(PullRequestSpec {
            title: format!("labelled pull request {index}"),
            author: BOT.to_string(),
            head_ref: format!("klaud/auto-{index}"),
            labels: vec![LABEL.to_string()],
            ..PullRequestSpec::default()
        });
    }
    let closed = expected[0];
    state.add_issue(IssueSpec {
        labels: vec!["other".into()],
        ..dashboard("unlabelled", BOT, 1)
    });
    let server = FakeGitHub::start(state);
    let client = client_for(&server);
    client
        .update_issue(closed, "closed one", false)
        .await
        .unwrap();
    server.with_state(|state| {
        let issue = state.issues.get_mut(&closed).unwrap();
        issue.state = fake_github::PullState::Closed;
    });
    server.clear_request_log();
    let before = client.request_counts();

    let listed = client.issues_with_label(LABEL).await.unwrap();

    let issues = listed.whole().expect("the listing is complete");
    let mut numbers: Vec<u64> = issues.iter().map(|issue| issue.number).collect();
    numbers.sort_unstable();
    assert_eq!(
        numbers, expected,
        "every issue, closed included, no pull request"
    );
    let first = issues.iter().find(|issue| issue.number == closed).unwrap();
    assert_eq!(first.state, IssueState::Closed);
    assert_eq!(first.body, "closed one");
    assert_eq!(first.author, BOT);
    assert_eq!(first.labels, [LABEL]);
    assert_eq!(
        first.html_url,
        format!("https://github.com/acme/bench/issues/{closed}")
    );
    let counts = client.request_counts();
    assert_eq!(
        (counts.reads - before.reads, counts.writes - before.writes),
        (3, 0)
    );
    let log = server.request_log();
    assert_eq!(log.len(), 3, "233 items at 100 a page");
    assert!(log[0].path.contains("labels=klaud-dashboard"));
    assert!(log[0].path.contains("state=all") && log[0].path.contains("per_page=100"));
}

#[tokio::test]
async fn a_page_that_cannot_be_read_leaves_a_gap_and_a_first_page_an_error() {
    let mut state = repository();
    for index in 0..150 {
        state.add_issue(dashboard(&format!("issue {index}"), BOT, 200 - index));
    }
    let server = FakeGitHub::start(state);
    let client = client_for(&server);
    server.set_faults(FaultConfig::rules(vec![
        FaultRule::nth("GET", "/repos/acme/bench/issues", 2, 502).times(3),
    ]));

    let listed = client.issues_with_label(LABEL).await.unwrap();
    assert_eq!(listed.items.len(), 100);
    let gap = listed.incomplete_reason().expect("a gap");
    assert!(gap.contains("page 2") && gap.contains(LABEL), "{gap}");

    server.set_faults(FaultConfig::rules(vec![FaultRule::nth(
        "GET",
        "/repos/acme/bench/issues",
        1,
        404,
    )]));
    let failed = client.issues_with_label(LABEL).await;
    assert!(
        matches!(failed, Err(GitHubError::Status { status: 404, .. })),
        "{failed:?}"
    );
}

#[tokio::test]
async fn the_edit_history_is_one_query_sorted_oldest_first() {
    let mut state = repository();
    let number = state.add_issue(dashboard("dashboard", BOT, 60));
    let untouched = state.add_issue(dashboard("another", BOT, 50));
    for (minute, editor, body) in [
        (1, MAINTAINER_ANN.login, "- [x] pause"),
        (2, READER_ROB.login, "- [x] pause\n- [x] retry now: a"),
        (3, BOT, "- [ ] pause"),
    ] {
        state.now = Some(NOW.plus(minute * 60));
        state.edit_body(number, editor, Some(body.to_string()));
    }
    state.forget_editor(READER_ROB.login);
    let server = FakeGitHub::start(state);
    let client = client_for(&server);

    let history = client.issue_edit_history(number).await.unwrap();

    assert_eq!(history.total, 4);
    assert_eq!(
        history.edits,
        [
            IssueEdit {
                editor: Some(BOT.into()),
                edited_at: at(NOW.minus(3_600)),
                body: Some("dashboard\n- [ ] pause".into()),
            },
            IssueEdit {
                editor: Some(MAINTAINER_ANN.login.into()),
                edited_at: at(NOW.plus(60)),
                body: Some("- [x] pause".into()),
            },
            IssueEdit {
                editor: None,
                edited_at: at(NOW.plus(120)),
                body: Some("- [x] pause\n- [x] retry now: a".into()),
            },
            IssueEdit {
                editor: Some(BOT.into()),
                edited_at: at(NOW.plus(180)),
                body: Some("- [ ] pause".into()),
            },
        ]
    );
    let counts = client.request_counts();
    assert_eq!((counts.reads, counts.writes), (1, 0), "one GraphQL query");
    let log = server.request_log();
    assert_eq!(log.len(), 1);
    assert!(log[0].is_graphql() && !log[0].is_write());

    let never = client.issue_edit_history(untouched).await.unwrap();
    assert_eq!((never.edits.len(), never.total), (0, 0));
    let missing = client.issue_edit_history(9_999).await;
    assert!(
        matches!(missing, Err(GitHubError::GraphQl { .. })),
        "{missing:?}"
    );
}

#[tokio::test]
async fn the_newest_revisions_are_read_whichever_order_github_lists_them_in() {
    // 100 revisions (the original and 99 edits) are read whole; beyond that, the newest 50.
    for oldest_first in [false, true] {
        for (edits, read, first) in [(99, 100, "dashboard"), (120, 50, "revision 71")] {
            let mut state = repository();
            if oldest_first {
                state = state.with_edits_listed_oldest_first();
            }
            let number = state.add_issue(dashboard("dashboard", BOT, 600));
            for minute in 1..=edits {
                state.now = Some(NOW.plus(minute * 60));
                state.edit_body(
                    number,
                    MAINTAINER_ANN.login,
                    Some(format!("revision {minute}")),
                );
            }
            let server = FakeGitHub::start(state);
            let client = client_for(&server);
            let history = client.issue_edit_history(number).await.unwrap();
            let what = format!("{edits} edits, listed oldest first: {oldest_first}");
            assert_eq!(history.total, edits as u64 + 1, "{what}");
            assert_eq!(history.edits.len(), read, "{what}");
            assert!(
                history.edits[0]
                    .body
                    .as_deref()
                    .is_some_and(|body| body.starts_with(first)),
                "{what}: {:?}",
                history.edits[0]
            );
            assert_eq!(
                history.edits[read - 1].body.as_deref(),
                Some(format!("revision {edits}").as_str()),
                "{what}"
            );
            assert!(
                history
                    .edits
                    .windows(2)
                    .all(|pair| pair[0].edited_at < pair[1].edited_at),
                "{what}: oldest first, each once"
            );
            assert_eq!(client.request_counts().reads, 1, "{what}: one query");
        }
    }
}

#[tokio::test]
async fn a_collaborators_permission_reads_the_role_first_and_an_unknown_account_as_none() {
    let state = repository()
        .with_role("maintainer-max", Role::Maintain)
        .with_role("triager-tia", Role::Triage)
        .with_role("admin-ada", Role::Admin);
    let server = FakeGitHub::start(state);
    let client = client_for(&server);
    let mut seen = Vec::new();
    for login in [
        "admin-ada",
        "maintainer-max",
        MAINTAINER_ANN.login,
        "triager-tia",
        READER_ROB.login,
        OUTSIDER_OLA.login,
        "nobody-at-all",
    ] {
        let permission = client.collaborator_permission(login).await.unwrap();
        seen.push((permission.clone(), permission.can_steer()));
    }
    assert_eq!(
        seen,
        [
            (RepositoryPermission::Admin, true),
            (RepositoryPermission::Maintain, true),
            (RepositoryPermission::Write, true),
            (RepositoryPermission::Triage, false),
            (RepositoryPermission::Read, false),
            (RepositoryPermission::None, false),
            (RepositoryPermission::None, false),
        ]
    );
    let counts = client.request_counts();
    assert_eq!((counts.reads, counts.writes), (7, 0));
    assert_eq!(server.request_log().last().unwrap().status, 404);
}

#[tokio::test]
async fn issues_are_created_and_updated_through_the_write_path() {
    let server = FakeGitHub::start(repository());
    let client = client_for(&server);

    let created = client
        .create_issue("klaud dashboard", "- [ ] pause", &[LABEL.to_string()])
        .await
        .unwrap();
    let IssueWritten::Sent(issue) = created else {
        panic!("a real client sends");
    };
    assert_eq!(
        (
            issue.title.as_str(),
            issue.body.as_str(),
            issue.author.as_str()
        ),
        ("klaud dashboard", "- [ ] pause", BOT)
    );
    assert_eq!(
        (issue.state.clone(), issue.labels.clone()),
        (IssueState::Open, vec![LABEL.to_string()])
    );
    let counts = client.request_counts();
    assert_eq!((counts.reads, counts.writes), (0, 1));

    // A maintainer ticks a box; the bot rewrites the body, then reopens the issue someone
    // closed in the same kind of write.
    let ann = client_with(&server, MAINTAINER_ANN.token);
    server.with_state(|state| state.now = Some(NOW.plus(60)));
    ann.update_issue(issue.number, "- [x] pause", false)
        .await
        .unwrap();
    server.with_state(|state| state.now = Some(NOW.plus(120)));
    let rewritten = client
        .update_issue(issue.number, "- [ ] pause", false)
        .await
        .unwrap();
    assert_eq!(rewritten.issue().unwrap().body, "- [ ] pause");
    server.with_state(|state| {
        let stored = state.issues.get_mut(&issue.number).unwrap();
        stored.state = fake_github::PullState::Closed;
    });
    let reopened = client
        .update_issue(issue.number, "- [ ] pause", true)
        .await
        .unwrap();
    assert_eq!(reopened.issue().unwrap().state, IssueState::Open);
    let counts = client.request_counts();
    assert_eq!((counts.reads, counts.writes), (0, 3));

    let state = server.state();
    let editors: Vec<Option<String>> = state
        .body_edits_of(issue.number)
        .iter()
        .map(|edit| edit.editor.clone())
        .collect();
    assert_eq!(
        editors,
        [
            Some(BOT.into()),
            Some(MAINTAINER_ANN.login.into()),
            Some(BOT.into())
        ],
        "the original, the maintainer's tick, the rewrite; a body set to itself is no revision"
    );
    let history = client.issue_edit_history(issue.number).await.unwrap();
    assert_eq!(
        history.edits.last().unwrap().body.as_deref(),
        Some("- [ ] pause")
    );
}

#[tokio::test]
async fn a_create_whose_outcome_is_unknown_is_not_sent_again() {
    let server = FakeGitHub::start(repository());
    server.set_faults(FaultConfig::rules(vec![
        FaultRule::nth("POST", "/repos/acme/bench/issues", 1, 502).after_handling(),
    ]));
    let client = client_for(&server);
    let created = client
        .create_issue("klaud dashboard", "body", &[LABEL.to_string()])
        .await;
    assert!(
        matches!(created, Err(GitHubError::OutcomeUnknown { .. })),
        "{created:?}"
    );
    let posts = server
        .request_log()
        .iter()
        .filter(|request| request.method == "POST")
        .count();
    assert_eq!(posts, 1, "never re-sent blindly");
    let listed = client.issues_with_label(LABEL).await.unwrap();
    assert_eq!(listed.items.len(), 1, "the one POST took effect");
}

#[tokio::test]
async fn a_dry_run_records_issue_writes_and_sends_only_reads() {
    let mut state = repository();
    let number = state.add_issue(dashboard("dashboard", BOT, 60));
    let server = FakeGitHub::start(state);
    let recorder = Arc::new(WriteRecorder::default());
    let client = client_for(&server).recording_writes(recorder.clone());

    let created = client
        .create_issue("klaud dashboard", "body", &[LABEL.to_string()])
        .await
        .unwrap();
    let updated = client.update_issue(number, "new body", true).await.unwrap();
    assert_eq!(
        (created, updated),
        (IssueWritten::Recorded, IssueWritten::Recorded)
    );
    client.issues_with_label(LABEL).await.unwrap();
    client.issue_edit_history(number).await.unwrap();
    client
        .collaborator_permission(MAINTAINER_ANN.login)
        .await
        .unwrap();

    let writes = recorder.writes();
    assert_eq!(writes.len(), 2);
    assert_eq!(
        (writes[0].method.as_str(), writes[0].path.as_str()),
        ("POST", "/repos/acme/bench/issues")
    );
    assert_eq!(
        writes[0].body,
        Some(json!({"title": "klaud dashboard", "body": "body", "labels": [LABEL]}))
    );
    assert_eq!(
        (writes[1].method.as_str(), writes[1].path.as_str()),
        (
            "PATCH",
            format!("/repos/acme/bench/issues/{number}").as_str()
        )
    );
    assert_eq!(
        writes[1].body,
        Some(json!({"body": "new body", "state": "open"}))
    );
    let counts = client.request_counts();
    assert_eq!(
        (counts.reads, counts.writes),
        (3, 2),
        "recorded writes are charged"
    );
    let log = server.request_log();
    assert_eq!(log.len(), 3);
    assert!(
        log.iter().all(|request| !request.is_write()),
        "nothing written"
    );
    let state = server.state();
    assert_eq!(state.issues.len(), 1);
    assert!(state.body_edits_of(number).is_empty());
}
