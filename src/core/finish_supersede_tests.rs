//! `core::finish_supersede` on small worlds: what a validated finish marks superseded, and each
//! guard on the pull request it is to close.

use chrono::{Duration, TimeZone};

use super::*;
use crate::core::finish::AftercareEnding;
use crate::core::ledger::{AttemptEnd, JobRef};
use crate::core::policy::tests::inferencex_policy;
use crate::core::snapshot::{CommitFact, ReadFailure};

const BOT: &str = "Klaud-Cold";
const OLD_HEAD: &str = "0123456789abcdef0123456789abcdef01234567";

fn at(hour: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, hour, 0, 0).unwrap()
}

/// Candidate `old` of family f validated #3 at 2:00 and is watched; `other` of family g
/// validated #4; `new` of family f runs its first session, which opened #9.
fn ledger() -> Ledger {
    let mut ledger = Ledger::empty();
    for (candidate, family, number) in [("old", "f", 3), ("other", "g", 4)] {
        ledger.claim_family(candidate, family, 5, at(1)).unwrap();
        ledger.finish_session(candidate, Outcome::Validated, true, at(2));
        ledger.record_validated(candidate, family, number, Some(OLD_HEAD), at(2));
    }
    ledger.claim_family("new", "f", 8, at(5)).unwrap();
    ledger
}

fn validated_plan() -> FinishPlan {
    FinishPlan {
        candidate: "new".into(),
        outcome: Outcome::Validated,
        cleanup: Cleanup::Done,
        reason: "the final sweep succeeded".into(),
        pull_request: Some(9),
        issue: None,
        receipt: true,
        check: None,
        cancel: Vec::new(),
        actions: Vec::new(),
        aftercare: AftercareEnding::Watched {
            head: "89abcdef0123456789abcdef0123456789abcdef".into(),
        },
    }
}

fn request(outcome: Outcome) -> FinishRequest {
    FinishRequest {
        candidate: "new".into(),
        outcome,
        agent_ran: true,
        park: false,
        job: JobRef {
            run: 70,
            run_attempt: 1,
        },
        attempt_end: AttemptEnd::Finished,
        runs_seen: Vec::new(),
        agent: None,
    }
}

fn numbers(records: &[&AftercareRecord]) -> Vec<u64> {
    records.iter().map(|record| record.pull_request).collect()
}

#[test]
fn a_validated_first_session_marks_the_others_of_its_family_in_the_same_write() {
    let policy = inferencex_policy();
    let before = ledger();
    let plan = validated_plan();
    let after = record_superseding(&before, &plan, &request(Outcome::Validated), &policy, at(6))
        .expect("the ledger changes");
    assert_eq!(
        after.session_of("new").unwrap().outcome,
        Some(Outcome::Validated),
        "the outcome is recorded in the same write"
    );
    assert_eq!(
        after.aftercare_of(3).unwrap().state,
        AftercareState::Superseded {
            since: at(6),
            by: 9
        }
    );
    assert_eq!(
        after.aftercare_of(4).unwrap().state,
        AftercareState::Watched
    );
    assert_eq!(numbers(&to_close(&after, &plan)), [3]);
    // Recording again changes nothing; the pull request is still to be closed.
    assert_eq!(
        record_superseding(&after, &plan, &request(Outcome::Validated), &policy, at(7)),
        None
    );
}

#[test]
fn nothing_is_superseded_without_supersede_by_an_aftercare_session_or_another_outcome() {
    let mut off = inferencex_policy();
    off.aftercare.supersede = false;
    let plan = validated_plan();
    let after =
        record_superseding(&ledger(), &plan, &request(Outcome::Validated), &off, at(6)).unwrap();
    assert_eq!(
        after.aftercare_of(3).unwrap().state,
        AftercareState::Watched
    );
    assert!(to_close(&after, &plan).is_empty());

    let policy = inferencex_policy();
    let mut refreshing = ledger();
    refreshing.sessions.last_mut().unwrap().kind = SessionKind::Refresh;
    let after = record_superseding(
        &refreshing,
        &plan,
        &request(Outcome::Validated),
        &policy,
        at(6),
    )
    .unwrap();
    assert_eq!(
        after.aftercare_of(3).unwrap().state,
        AftercareState::Watched
    );

    for cleanup in [Cleanup::LeftAlone, Cleanup::Untouched] {
        let plan = FinishPlan {
            cleanup,
            ..validated_plan()
        };
        let after = record_superseding(
            &ledger(),
            &plan,
            &request(Outcome::Validated),
            &policy,
            at(6),
        )
        .unwrap_or_else(ledger);
        assert_eq!(
            after.aftercare_of(3).unwrap().state,
            AftercareState::Watched
        );
    }
    let failed = FinishPlan {
        outcome: Outcome::Failed,
        ..validated_plan()
    };
    let after = record_superseding(
        &ledger(),
        &failed,
        &request(Outcome::Failed),
        &policy,
        at(6),
    )
    .unwrap();
    assert_eq!(
        after.aftercare_of(3).unwrap().state,
        AftercareState::Watched
    );
    assert!(to_close(&after, &failed).is_empty());
}

/// The ledger after the validated finish, and old's record in it.
fn superseded() -> (Ledger, AftercareRecord) {
    let after = record_superseding(
        &ledger(),
        &validated_plan(),
        &request(Outcome::Validated),
        &inferencex_policy(),
        at(6),
    )
    .unwrap();
    let record = after.aftercare_of(3).unwrap().clone();
    (after, record)
}

/// #3 as read: open, ready, the bot's, one bot commit, no sweep since it was validated.
fn facts() -> SupersededFacts {
    SupersededFacts {
        pull: Ok(PullRequestFact {
            number: 3,
            node_id: "PR_3".into(),
            head_branch: "klaud/auto-old".into(),
            head_sha: OLD_HEAD.into(),
            from_this_repository: true,
            author: Some(BOT.into()),
            open: true,
            draft: false,
            merged: false,
            labels: vec!["klaud-finished".into()],
            created_at: at(1),
        }),
        commits: Ok(CommitsFact {
            commits: vec![CommitFact {
                sha: OLD_HEAD.into(),
                author: Some(BOT.into()),
                committer: Some(BOT.into()),
            }],
            complete: true,
        }),
        sweeps: Ok(Listed::complete(Vec::new())),
    }
}

fn sweep_by(actor: &str, created_at: DateTime<Utc>) -> RunFact {
    RunFact {
        id: 77,
        workflow: "run-sweep.yml".into(),
        head_branch: Some("klaud/auto-old".into()),
        head_sha: OLD_HEAD.into(),
        title: None,
        actor: Some(actor.into()),
        triggering_actor: Some(actor.into()),
        active: false,
        conclusion: Some("success".into()),
        created_at,
        updated_at: created_at + Duration::minutes(30),
    }
}

fn decided(facts: &SupersededFacts) -> Supersede {
    let (ledger, record) = superseded();
    decide_superseded(&record, facts, &ledger, &inferencex_policy(), 9)
}

#[test]
fn a_superseded_pull_request_whose_guards_hold_is_closed_with_the_note_and_its_branch_deleted() {
    let mut facts = facts();
    // The bot's own sweeps, and anyone's before it was validated, are no maintainer acting.
    facts.sweeps = Ok(Listed::complete(vec![
        sweep_by(BOT, at(4)),
        sweep_by("maintainer-ada", at(1)),
    ]));
    let supersede = decided(&facts);
    assert_eq!(supersede.verdict, SupersedeVerdict::Close);
    assert_eq!((supersede.pull_request, supersede.by), (3, 9));
    let group = supersede.group.expect("a group closes it");
    let lines: Vec<String> = group.actions.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "post or refresh the superseded note on #3",
            "remove the status labels of #3",
            "close #3",
            "delete branch klaud/auto-old (if still at 0123456)",
        ]
    );
    assert_eq!(group.ledger_expectation, LedgerExpectation::NoOpenSession);
    let check = group.pull_request_check.unwrap();
    assert_eq!(
        (
            check.head_sha.as_deref(),
            check.draft,
            check.author.as_str()
        ),
        (Some(OLD_HEAD), Some(false), BOT)
    );
}

#[test]
fn a_guard_that_fails_leaves_the_pull_request_for_good_with_nothing_written() {
    let mut handed_off = facts();
    if let Ok(pull) = &mut handed_off.pull {
        pull.labels.push("klaud-handoff".into());
    }
    let mut someone_elses = facts();
    if let Ok(pull) = &mut someone_elses.pull {
        pull.author = Some("maintainer-ada".into());
    }
    let mut foreign_commit = facts();
    if let Ok(commits) = &mut foreign_commit.commits {
        commits.commits.insert(
            0,
            CommitFact {
                sha: "f".repeat(40),
                author: Some("maintainer-ada".into()),
                committer: Some("maintainer-ada".into()),
            },
        );
    }
    let mut maintainers_head = facts();
    if let Ok(commits) = &mut maintainers_head.commits {
        commits.commits[0].author = Some("maintainer-ada".into());
    }
    let mut maintainers_sweep = facts();
    maintainers_sweep.sweeps = Ok(Listed::complete(vec![sweep_by("maintainer-ada", at(3))]));
    for (case, facts, says) in [
        ("handed off", handed_off, "carries klaud-handoff"),
        (
            "someone else's",
            someone_elses,
            "not the bot's pull request",
        ),
        (
            "a maintainer's commit",
            foreign_commit,
            "has a commit by maintainer-ada",
        ),
        (
            "a maintainer's head",
            maintainers_head,
            "moved to a commit by maintainer-ada",
        ),
        ("a maintainer's sweep", maintainers_sweep, "sweep run 77"),
    ] {
        let supersede = decided(&facts);
        let SupersedeVerdict::Left { reason } = &supersede.verdict else {
            panic!("{case}: {:?}", supersede.verdict);
        };
        assert!(reason.contains(says), "{case}: {reason}");
        assert_eq!(supersede.group, None, "{case}: nothing is written");
    }
}

#[test]
fn a_failed_read_or_its_own_open_session_closes_nothing_this_time() {
    let mut unread_pull = facts();
    unread_pull.pull = Err(ReadFailure::new("502 bad gateway"));
    let mut unread_commits = facts();
    unread_commits.commits = Err(ReadFailure::new("502 bad gateway"));
    let mut unread_sweeps = facts();
    unread_sweeps.sweeps = Err(ReadFailure::new("502 bad gateway"));
    let mut cut_sweeps = facts();
    cut_sweeps.sweeps = Ok(Listed {
        items: Vec::new(),
        gap: Some("the listing stopped at page 3".into()),
    });
    for (case, facts, says) in [
        ("the pull request", unread_pull, "#3 could not be read"),
        (
            "its commits",
            unread_commits,
            "commits of #3 could not be read",
        ),
        ("its sweeps", unread_sweeps, "could not be read"),
        ("a cut listing", cut_sweeps, "could not all be listed"),
    ] {
        let supersede = decided(&facts);
        let SupersedeVerdict::Later { reason } = &supersede.verdict else {
            panic!("{case}: {:?}", supersede.verdict);
        };
        assert!(reason.contains(says), "{case}: {reason}");
        assert_eq!(supersede.group, None, "{case}");
    }

    let (mut ledger, record) = superseded();
    ledger.sessions.push(crate::core::ledger::Session {
        kind: SessionKind::Refresh,
        state: SessionState::Live,
        ..ledger.session_of("old").unwrap().clone()
    });
    let supersede = decide_superseded(&record, &facts(), &ledger, &inferencex_policy(), 9);
    assert_eq!(
        supersede.verdict,
        SupersedeVerdict::Later {
            reason: "a refresh session of candidate old is open".into()
        }
    );
}

#[test]
fn a_pull_request_closed_or_merged_already_needs_nothing() {
    let mut closed = facts();
    if let Ok(pull) = &mut closed.pull {
        pull.open = false;
    }
    assert_eq!(
        decided(&closed).verdict,
        SupersedeVerdict::Gone {
            reason: "#3 is closed already".into()
        }
    );
}

#[test]
fn only_the_pull_requests_left_by_a_guard_are_recorded_left() {
    let (ledger, _) = superseded();
    let mut handed_off = facts();
    if let Ok(pull) = &mut handed_off.pull {
        pull.labels.push("klaud-handoff".into());
    }
    let left = decided(&handed_off);
    let after = record_left(&ledger, std::slice::from_ref(&left), 9, at(7)).unwrap();
    assert_eq!(
        after.aftercare_of(3).unwrap().state,
        AftercareState::Left {
            since: at(7),
            reason: "#3 carries klaud-handoff".into()
        }
    );
    let mut unread = facts();
    unread.pull = Err(ReadFailure::new("502 bad gateway"));
    assert_eq!(record_left(&ledger, &[decided(&unread)], 9, at(7)), None);
    // A record another pull request superseded since is not this finish's to leave.
    assert_eq!(record_left(&ledger, &[left], 10, at(7)), None);
}
