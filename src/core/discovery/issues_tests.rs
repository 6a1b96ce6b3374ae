//! `discover`'s decision for labelled issues on small worlds.

use super::*;
use crate::core::outcome::Outcome;
use crate::core::policy::tests::inferencex_policy;
use crate::core::select::OpenPullRequest;
use crate::core::snapshot::Listed;
use crate::core::test_support::at;

const WRITER: &str = "maintainer-ann";
const READER: &str = "reader-rob";

fn settings() -> IssueSettings {
    IssueSettings {
        label: "klaud".into(),
        family_labels: "area:*".into(),
        priority_labels: vec!["urgent".into(), "soon".into()],
    }
}

/// Issue `number`, opened on day `day` of August, labelled `klaud` by `actor` then.
fn issue(number: u64, day: u32, actor: &str, labels: &[&str]) -> LabelledIssue {
    let created = at(&format!("2026-08-{day:02}T00:00:00Z"));
    let mut labels: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
    labels.push("klaud".into());
    LabelledIssue {
        number,
        title: format!("issue {number}"),
        body: format!("please do {number}"),
        url: format!("https://github.com/acme/widgets/issues/{number}"),
        author: Some("outsider".into()),
        labels,
        created_at: created,
        locked: false,
        label_events: vec![LabelEvent {
            labeled: true,
            label: "klaud".into(),
            actor: Some(actor.into()),
            at: created,
        }],
    }
}

struct World {
    issues: Vec<LabelledIssue>,
    permissions: BTreeMap<String, Read<RepositoryPermission>>,
    ledger: Ledger,
    github: GitHubFacts,
    batch: usize,
}

impl World {
    fn new(issues: Vec<LabelledIssue>) -> Self {
        World {
            issues,
            permissions: BTreeMap::from([
                (WRITER.to_string(), Ok(RepositoryPermission::Write)),
                (READER.to_string(), Ok(RepositoryPermission::Read)),
                ("outsider".to_string(), Ok(RepositoryPermission::None)),
            ]),
            ledger: Ledger::empty(),
            github: GitHubFacts {
                repository: "acme/widgets".into(),
                open_pull_requests: Listed::complete(Vec::new()),
                candidate_branches: Listed::complete(Vec::new()),
            },
            batch: 64,
        }
    }

    fn decide(&self) -> IssueDiscovery {
        let policy = inferencex_policy();
        let base = "b".repeat(40);
        let run = DiscoveryRun {
            policy: &policy,
            legacy_branch_prefixes: &[],
            base: &base,
            run_id: 42,
            review_batch_size: self.batch,
            now: at("2026-09-01T00:00:00Z"),
        };
        discover_issues(
            IssueSnapshot {
                issues: &self.issues,
                permissions: &self.permissions,
                ledger: &self.ledger,
                github: &self.github,
            },
            &settings(),
            &run,
        )
    }
}

fn fates(discovery: &IssueDiscovery) -> Vec<(u64, IssueFate)> {
    discovery
        .issues
        .iter()
        .map(|report| (report.issue, report.fate))
        .collect()
}

#[test]
fn a_label_counts_only_when_a_writer_applied_it_last() {
    let mut relabelled = issue(4, 4, WRITER, &[]);
    relabelled.label_events.push(LabelEvent {
        labeled: false,
        label: "klaud".into(),
        actor: Some(WRITER.into()),
        at: at("2026-08-05T00:00:00Z"),
    });
    relabelled.label_events.push(LabelEvent {
        labeled: true,
        label: "KLAUD".into(),
        actor: Some(READER.into()),
        at: at("2026-08-06T00:00:00Z"),
    });
    let mut ghost = issue(5, 5, WRITER, &[]);
    ghost.label_events[0].actor = None;
    let world = World::new(vec![
        issue(1, 1, WRITER, &[]),
        issue(2, 2, READER, &[]),
        issue(3, 3, "outsider", &[]),
        relabelled,
        ghost,
        issue(6, 6, "unread", &[]),
    ]);
    let discovery = world.decide();
    assert_eq!(
        fates(&discovery),
        [
            (1, IssueFate::Candidate),
            (2, IssueFate::Unauthorized),
            (3, IssueFate::Unauthorized),
            (4, IssueFate::Unauthorized),
            (5, IssueFate::Unauthorized),
            (6, IssueFate::Unauthorized),
        ]
    );
    let reason = |n: usize| discovery.issues[n].reason.as_str();
    assert!(
        reason(1).contains("reader-rob, whose permission is read"),
        "{}",
        reason(1)
    );
    assert!(reason(2).contains("outsider, whose permission is none"));
    assert!(
        reason(3).contains("reader-rob"),
        "the re-application counts: {}",
        reason(3)
    );
    assert!(reason(4).contains("no longer names"));
    assert!(reason(5).contains("was not read"));
    assert_eq!(discovery.issues[3].label_actor.as_deref(), Some(READER));
    let candidate = &discovery.candidates[0];
    assert_eq!(candidate.id, "issue-1");
    assert_eq!(candidate.family, "issue-1");
    assert_eq!(candidate.branch, "klaud/auto-issue-1");
    let CandidateOrigin::Issue { issue, task } = &candidate.origin else {
        panic!("an issue's candidate");
    };
    assert_eq!(issue.label_actor, WRITER);
    assert_eq!(task.body, "please do 1");
}

#[test]
fn families_by_label_take_the_first_issue_in_priority_then_age_order() {
    let world = World::new(vec![
        issue(1, 1, WRITER, &["area:db", "area:api"]),
        issue(2, 2, WRITER, &["area:api", "soon"]),
        issue(3, 3, WRITER, &["area:api", "urgent"]),
        issue(4, 4, WRITER, &[]),
        issue(5, 1, WRITER, &["Urgent"]),
        issue(6, 6, WRITER, &["area:db"]),
    ]);
    let discovery = world.decide();
    assert_eq!(
        discovery.candidate_ids(),
        ["issue-5", "issue-3", "issue-4", "issue-6"],
        "urgent (oldest first), soon, then the rest oldest first"
    );
    assert_eq!(
        fates(&discovery),
        [
            (1, IssueFate::Queued),
            (2, IssueFate::Queued),
            (3, IssueFate::Candidate),
            (4, IssueFate::Candidate),
            (5, IssueFate::Candidate),
            (6, IssueFate::Candidate),
        ]
    );
    assert_eq!(
        discovery.issues[0].family, "area:api",
        "the first matching label"
    );
    assert!(discovery.issues[0].reason.contains("issue #3"));
    assert_eq!(discovery.issue_counts[&IssueFate::Queued], 2);
}

#[test]
fn locked_occupied_claimed_cooling_and_held_issues_are_left_out() {
    let mut locked = issue(1, 1, WRITER, &[]);
    locked.locked = true;
    let mut world = World::new(vec![
        locked,
        issue(2, 2, WRITER, &["area:x"]),
        issue(3, 3, WRITER, &["area:x"]),
        issue(4, 4, WRITER, &[]),
        issue(5, 5, WRITER, &[]),
        issue(6, 6, WRITER, &["area:held"]),
        issue(7, 7, WRITER, &["area:held"]),
        issue(8, 8, WRITER, &[]),
        issue(9, 9, WRITER, &[]),
    ]);
    let finished = at("2026-08-31T00:00:00Z");
    // area:x: issue 3's branch exists, so the whole family is occupied (issue 2 too).
    world.github.candidate_branches = Listed::complete(vec!["klaud/auto-issue-3".into()]);
    // 4: claimed; 5: its pull request is open.
    world
        .ledger
        .claim_family("issue-4", "issue-4", 7, finished)
        .unwrap();
    world.ledger.sessions.retain(|s| s.candidate != "issue-4");
    world.github.open_pull_requests = Listed::complete(vec![OpenPullRequest {
        number: 50,
        head_branch: "klaud/auto-issue-5".into(),
        head_repository: Some("acme/widgets".into()),
    }]);
    // area:held: a maintainer closed issue 6's pull request.
    world
        .ledger
        .claim_family("issue-6", "area:held", 8, finished)
        .unwrap();
    world
        .ledger
        .finish_session("issue-6", Outcome::ClosedByMaintainer, true, finished);
    // 8: cooling down: its assets were missing.
    world
        .ledger
        .claim_family("issue-8", "issue-8", 9, finished)
        .unwrap();
    world
        .ledger
        .finish_session("issue-8", Outcome::MissingAssets, true, finished);
    let discovery = world.decide();
    assert_eq!(
        fates(&discovery),
        [
            (1, IssueFate::Locked),
            (2, IssueFate::Occupied),
            (3, IssueFate::Occupied),
            (4, IssueFate::Claimed),
            (5, IssueFate::Occupied),
            (6, IssueFate::Held),
            (7, IssueFate::Held),
            (8, IssueFate::CoolingDown),
            (9, IssueFate::Candidate),
        ]
    );
    assert!(discovery.issues[1].reason.contains("klaud/auto-issue-3"));
    assert!(discovery.issues[4].reason.contains("#50"));
}

#[test]
fn the_review_batch_cuts_in_the_run_order_and_a_long_body_is_cut_with_a_note() {
    let mut long = issue(1, 1, WRITER, &[]);
    long.body = "é".repeat(TASK_BODY_LIMIT + 10);
    let mut world = World::new(vec![
        long,
        issue(2, 2, WRITER, &[]),
        issue(3, 3, WRITER, &[]),
    ]);
    world.batch = 2;
    let discovery = world.decide();
    assert_eq!(discovery.candidate_ids(), ["issue-1", "issue-2"]);
    assert_eq!(discovery.issues[2].fate, IssueFate::Cut);
    assert!(discovery.issues[2].reason.contains("position 3"));
    let CandidateOrigin::Issue { task, .. } = &discovery.candidates[0].origin else {
        panic!("an issue's candidate");
    };
    assert!(task.body.starts_with(&"é".repeat(TASK_BODY_LIMIT)));
    assert!(task.body.ends_with(&format!(
        "it has {} characters, a task carries the first {TASK_BODY_LIMIT}]",
        TASK_BODY_LIMIT + 10
    )));
    let json = serde_json::to_value(&discovery.candidates[1]).unwrap();
    assert_eq!(json["issue"]["label-actor"], WRITER);
    assert_eq!(json["task"]["title"], "issue 2");
    assert!(json.get("source").is_none());
}

#[test]
fn only_label_actors_need_a_permission_read() {
    let mut twice = issue(2, 2, READER, &[]);
    twice.label_events.push(LabelEvent {
        labeled: true,
        label: "other".into(),
        actor: Some("someone".into()),
        at: at("2026-08-09T00:00:00Z"),
    });
    let issues = vec![issue(1, 1, WRITER, &[]), twice, issue(3, 3, WRITER, &[])];
    let actors: Vec<String> = label_actors(&issues, "klaud").into_iter().collect();
    assert_eq!(actors, [WRITER, READER]);
}
