use super::*;
use crate::core::ledger::{Ledger, Session};
use crate::core::test_support::at;

fn validated(ledger: &mut Ledger, candidate: &str, family: &str, number: u64, when: &str) {
    ledger.record_validated(candidate, family, number, Some("abc"), at(when));
}

#[test]
fn a_validated_pull_request_is_watched_and_keeps_its_sessions_when_validated_again() {
    let mut ledger = Ledger::empty();
    validated(&mut ledger, "a", "f", 7, "2026-01-01T00:00:00Z");
    assert_eq!(
        ledger.aftercare_of(7).unwrap().state,
        AftercareState::Watched
    );
    ledger.aftercare[0].sessions_used = 1;
    ledger.aftercare[0].state = AftercareState::NeedsMaintainer {
        since: at("2026-01-02T00:00:00Z"),
        because: NeedsMaintainerBecause::Ended(Outcome::Failed),
    };
    assert!(ledger.record_validated("a", "f", 7, Some("def"), at("2026-01-03T00:00:00Z")));
    let record = ledger.aftercare_of(7).unwrap();
    assert_eq!(record.state, AftercareState::Watched);
    assert_eq!(record.sessions_used, 1);
    assert_eq!(record.validated_head.as_deref(), Some("def"));
    assert!(!ledger.record_validated("a", "f", 7, Some("def"), at("2026-01-03T00:00:00Z")));
}

#[test]
fn a_pull_request_left_for_good_stays_left_when_validated_again() {
    let mut ledger = Ledger::empty();
    validated(&mut ledger, "a", "f", 7, "2026-01-01T00:00:00Z");
    ledger.aftercare[0].state = AftercareState::Left {
        since: at("2026-01-02T00:00:00Z"),
        reason: "a commit by a maintainer".into(),
    };
    ledger.record_validated("a", "f", 7, Some("def"), at("2026-01-03T00:00:00Z"));
    assert!(matches!(
        ledger.aftercare_of(7).unwrap().state,
        AftercareState::Left { .. }
    ));
}

#[test]
fn an_aftercare_session_that_ends_unvalidated_leaves_its_pull_request_to_a_maintainer() {
    let mut ledger = Ledger::empty();
    let ended = at("2026-01-02T00:00:00Z");
    assert!(
        !ledger.record_aftercare_ended(7, Outcome::Failed, ended),
        "no record, nothing changes"
    );
    validated(&mut ledger, "a", "f", 7, "2026-01-01T00:00:00Z");
    assert!(ledger.record_aftercare_ended(7, Outcome::Failed, ended));
    let waiting = AftercareState::NeedsMaintainer {
        since: ended,
        because: NeedsMaintainerBecause::Ended(Outcome::Failed),
    };
    assert_eq!(ledger.aftercare_of(7).unwrap().state, waiting);
    assert!(
        !ledger.record_aftercare_ended(7, Outcome::Failed, at("2026-01-03T00:00:00Z")),
        "said once: its time stays"
    );
    assert!(ledger.record_aftercare_ended(7, Outcome::NoOutcome, ended));
    for kept in [
        AftercareState::Left {
            since: ended,
            reason: "a commit by a maintainer".into(),
        },
        AftercareState::Superseded {
            since: ended,
            by: 9,
        },
    ] {
        ledger.aftercare[0].state = kept.clone();
        assert!(!ledger.record_aftercare_ended(7, Outcome::Failed, ended));
        assert_eq!(ledger.aftercare_of(7).unwrap().state, kept);
    }
}

#[test]
fn a_newer_validated_candidate_supersedes_the_others_of_its_family_only() {
    let mut ledger = Ledger::empty();
    validated(&mut ledger, "old", "f", 3, "2026-01-01T00:00:00Z");
    validated(&mut ledger, "other", "g", 4, "2026-01-01T00:00:00Z");
    validated(&mut ledger, "new", "f", 9, "2026-01-05T00:00:00Z");
    let now = at("2026-01-05T00:00:00Z");
    assert_eq!(
        ledger.mark_superseded("f", 9, false, now),
        Vec::<u64>::new()
    );
    assert_eq!(ledger.mark_superseded("f", 9, true, now), vec![3]);
    assert_eq!(
        ledger.aftercare_of(3).unwrap().state,
        AftercareState::Superseded { since: now, by: 9 }
    );
    assert_eq!(
        ledger.aftercare_of(4).unwrap().state,
        AftercareState::Watched
    );
    assert_eq!(
        ledger.aftercare_of(9).unwrap().state,
        AftercareState::Watched
    );
    // Marking again changes nothing.
    assert!(ledger.mark_superseded("f", 9, true, now).is_empty());
}

#[test]
fn an_ended_after_care_session_makes_its_pull_request_wait_for_a_maintainer_once() {
    let mut ledger = Ledger::empty();
    validated(&mut ledger, "a", "f", 7, "2026-01-01T00:00:00Z");
    let now = at("2026-01-02T00:00:00Z");
    assert!(ledger.record_aftercare_ended(7, Outcome::Failed, now));
    assert_eq!(
        ledger.aftercare_of(7).unwrap().state,
        AftercareState::NeedsMaintainer {
            since: now,
            because: NeedsMaintainerBecause::Ended(Outcome::Failed),
        }
    );
    let later = at("2026-01-03T00:00:00Z");
    assert!(!ledger.record_aftercare_ended(7, Outcome::Failed, later));
    assert!(!ledger.record_aftercare_ended(8, Outcome::Failed, later));
    ledger.aftercare[0].state = AftercareState::Left {
        since: later,
        reason: "a commit by a maintainer".into(),
    };
    assert!(!ledger.record_aftercare_ended(7, Outcome::NoOutcome, later));
    assert!(matches!(
        ledger.aftercare_of(7).unwrap().state,
        AftercareState::Left { .. }
    ));
}

fn open_session(candidate: &str) -> Session {
    Session {
        candidate: candidate.into(),
        family: "f".into(),
        kind: SessionKind::Refresh,
        aftercare: None,
        parent_run: 1,
        parent_attempt: None,
        state: SessionState::Live,
        started_at: at("2026-01-02T00:00:00Z"),
        finished_at: None,
        outcome: None,
        agent_ran: true,
        pull_request: Some(3),
        pending_outcome: None,
        attempts: Vec::new(),
        resuming: None,
        unadopted_jobs: Vec::new(),
    }
}

#[test]
fn a_waiting_pull_request_frees_its_family_unless_a_session_runs_or_supersede_is_off() {
    let settings = AftercareSettings::default();
    let mut ledger = Ledger::empty();
    assert!(!waits_in_aftercare(&ledger, "a", &settings));
    validated(&mut ledger, "a", "f", 3, "2026-01-01T00:00:00Z");
    assert!(waits_in_aftercare(&ledger, "a", &settings));
    let off = AftercareSettings {
        supersede: false,
        ..settings
    };
    assert!(!waits_in_aftercare(&ledger, "a", &off));
    ledger.sessions.push(open_session("a"));
    assert!(!waits_in_aftercare(&ledger, "a", &settings));
    ledger.sessions.clear();
    ledger.aftercare[0].state = AftercareState::Left {
        since: at("2026-01-02T00:00:00Z"),
        reason: "handed off".into(),
    };
    assert!(!waits_in_aftercare(&ledger, "a", &settings));
}

#[test]
fn a_record_allows_the_configured_sessions_and_the_granted_ones() {
    let mut ledger = Ledger::empty();
    validated(&mut ledger, "a", "f", 3, "2026-01-01T00:00:00Z");
    ledger.aftercare[0].granted = 1;
    assert_eq!(
        ledger.aftercare[0].sessions_allowed(&AftercareSettings::default()),
        3
    );
}

#[test]
fn the_kinds_are_spelled_as_in_session_json() {
    for kind in [
        SessionKind::Propose,
        SessionKind::Refresh,
        SessionKind::Repair,
    ] {
        assert_eq!(
            serde_json::to_value(kind).unwrap(),
            serde_json::json!(kind.name())
        );
    }
    assert!(SessionKind::Repair.is_aftercare() && !SessionKind::Propose.is_aftercare());
}

mod next {
    use super::*;
    use crate::core::github_state::{MergeStateStatus, Mergeable};
    use crate::core::health::{Health, PullRequestHealth};
    use crate::core::policy::{RefreshWhen, RepairWhen};

    fn health(
        health: Health,
        mergeable: Mergeable,
        merge_state: MergeStateStatus,
    ) -> PullRequestHealth {
        PullRequestHealth {
            number: 3,
            candidate: "a".into(),
            created_at: at("2026-01-01T00:00:00Z"),
            draft: false,
            head_sha: "abc".into(),
            health,
            unknown_because: None,
            conflicting: mergeable == Mergeable::Conflicting,
            behind: merge_state == MergeStateStatus::Behind,
            mergeable,
            merge_state,
            checks: Default::default(),
            pending: Default::default(),
            eta_minutes: None,
            eta_partial: false,
            failed: Vec::new(),
            aftercare: None,
        }
    }

    fn record() -> AftercareRecord {
        let mut ledger = Ledger::empty();
        validated(&mut ledger, "a", "f", 3, "2026-01-01T00:00:00Z");
        ledger.aftercare.remove(0)
    }

    const NOW: &str = "2026-01-02T00:00:00Z";

    fn next(
        record: &AftercareRecord,
        health: &PullRequestHealth,
        settings: &AftercareSettings,
    ) -> AftercareNext {
        next_for(record, health, false, settings, at(NOW))
    }

    #[test]
    fn a_conflict_calls_for_a_refresh_before_failed_checks_call_for_a_repair() {
        let settings = AftercareSettings::default();
        let conflicting = health(
            Health::Failing,
            Mergeable::Conflicting,
            MergeStateStatus::Dirty,
        );
        assert_eq!(
            next(&record(), &conflicting, &settings),
            AftercareNext::Start {
                kind: SessionKind::Refresh
            }
        );
        let failing = health(
            Health::Failing,
            Mergeable::Mergeable,
            MergeStateStatus::Blocked,
        );
        assert_eq!(
            next(&record(), &failing, &settings),
            AftercareNext::Start {
                kind: SessionKind::Repair
            }
        );
        let passing = health(
            Health::Passing,
            Mergeable::Mergeable,
            MergeStateStatus::Clean,
        );
        assert_eq!(next(&record(), &passing, &settings), AftercareNext::Watch);
    }

    #[test]
    fn behind_calls_for_a_refresh_only_when_configured() {
        let behind = health(
            Health::Passing,
            Mergeable::Mergeable,
            MergeStateStatus::Behind,
        );
        assert_eq!(
            next(&record(), &behind, &AftercareSettings::default()),
            AftercareNext::Watch
        );
        let settings = AftercareSettings {
            refresh: RefreshWhen::Behind,
            ..Default::default()
        };
        assert_eq!(
            next(&record(), &behind, &settings),
            AftercareNext::Start {
                kind: SessionKind::Refresh
            }
        );
    }

    #[test]
    fn unknown_mergeability_running_checks_and_unread_checks_wait() {
        let settings = AftercareSettings::default();
        let unknown = health(
            Health::Failing,
            Mergeable::Unknown,
            MergeStateStatus::Unknown,
        );
        assert_eq!(
            next(&record(), &unknown, &settings),
            AftercareNext::Wait {
                kind: None,
                wait: AftercareWait::MergeabilityUnknown
            }
        );
        let running = health(
            Health::FailingRunning,
            Mergeable::Mergeable,
            MergeStateStatus::Unstable,
        );
        assert_eq!(
            next(&record(), &running, &settings),
            AftercareNext::Wait {
                kind: Some(SessionKind::Repair),
                wait: AftercareWait::ChecksRunning
            }
        );
        let unread = health(
            Health::Unknown,
            Mergeable::Mergeable,
            MergeStateStatus::Clean,
        );
        assert_eq!(
            next(&record(), &unread, &settings),
            AftercareNext::Wait {
                kind: None,
                wait: AftercareWait::ChecksUnknown
            }
        );
        // With refresh off, unknown mergeability does not hold a repair back.
        let repair_only = AftercareSettings {
            refresh: RefreshWhen::Never,
            ..Default::default()
        };
        assert_eq!(
            next(&record(), &unknown, &repair_only),
            AftercareNext::Start {
                kind: SessionKind::Repair
            }
        );
        let nothing = AftercareSettings {
            repair: RepairWhen::Never,
            ..repair_only
        };
        assert_eq!(next(&record(), &unknown, &nothing), AftercareNext::Watch);
    }

    #[test]
    fn the_cooldown_and_the_sessions_allowed_bound_what_starts() {
        let settings = AftercareSettings::default();
        let failing = health(
            Health::Failing,
            Mergeable::Mergeable,
            MergeStateStatus::Blocked,
        );
        let mut record = record();
        record.sessions_used = 1;
        record.last_started_at = Some(at("2026-01-01T20:00:00Z"));
        assert_eq!(
            next(&record, &failing, &settings),
            AftercareNext::Wait {
                kind: Some(SessionKind::Repair),
                wait: AftercareWait::Cooldown {
                    until: at("2026-01-02T02:00:00Z")
                }
            }
        );
        record.last_started_at = Some(at("2026-01-01T18:00:00Z"));
        assert_eq!(
            next(&record, &failing, &settings),
            AftercareNext::Start {
                kind: SessionKind::Repair
            }
        );
        record.sessions_used = 2;
        assert_eq!(
            next(&record, &failing, &settings),
            AftercareNext::SessionsUsedUp {
                kind: SessionKind::Repair,
                used: 2
            }
        );
        record.granted = 1;
        assert_eq!(
            next(&record, &failing, &settings),
            AftercareNext::Start {
                kind: SessionKind::Repair
            }
        );
    }

    #[test]
    fn its_state_and_an_open_session_decide_first() {
        let settings = AftercareSettings::default();
        let failing = health(
            Health::Failing,
            Mergeable::Conflicting,
            MergeStateStatus::Dirty,
        );
        let mut record = record();
        assert_eq!(
            next_for(&record, &failing, true, &settings, at(NOW)),
            AftercareNext::SessionOpen
        );
        record.state = AftercareState::Superseded {
            since: at(NOW),
            by: 9,
        };
        assert_eq!(
            next(&record, &failing, &settings),
            AftercareNext::Close { by: 9 }
        );
        record.state = AftercareState::NeedsMaintainer {
            since: at(NOW),
            because: NeedsMaintainerBecause::SessionsUsedUp { used: 2 },
        };
        assert_eq!(
            next(&record, &failing, &settings),
            AftercareNext::WaitsForMaintainer
        );
        record.state = AftercareState::Left {
            since: at(NOW),
            reason: "handed off".into(),
        };
        assert_eq!(next(&record, &failing, &settings), AftercareNext::Left);
    }
}

mod supersede {
    use super::*;
    use crate::core::plan::{Action, LedgerExpectation};
    use crate::core::policy::tests::inferencex_policy;
    use crate::core::snapshot::PullRequestFact;

    fn pull(labels: &[&str]) -> PullRequestFact {
        PullRequestFact {
            number: 3,
            node_id: "PR_3".into(),
            head_branch: "klaud/auto-old".into(),
            head_sha: "aaaaaaaaaa".into(),
            from_this_repository: true,
            author: Some("Klaud-Cold".into()),
            open: true,
            draft: false,
            merged: false,
            labels: labels.iter().map(|label| label.to_string()).collect(),
            created_at: at("2026-01-01T00:00:00Z"),
        }
    }

    #[test]
    fn a_superseded_pull_request_is_noted_unlabelled_closed_and_its_unmoved_branch_deleted() {
        let policy = inferencex_policy();
        let pull = pull(&["klaud-finished", "full-sweep-enabled"]);
        let (group, kept) = supersede_group(
            &policy,
            &pull,
            Some("aaaaaaaaaa"),
            9,
            LedgerExpectation::Nothing,
        );
        assert_eq!(kept, None);
        let lines: Vec<String> = group.actions.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "post or refresh the superseded note on #3",
                "remove the status labels of #3",
                "remove label full-sweep-enabled from #3",
                "close #3",
                "delete branch klaud/auto-old (if still at aaaaaaa)",
            ]
        );
        let Action::PostMarkedComment { body, .. } = &group.actions[0] else {
            panic!("the note comes first");
        };
        assert!(body.contains("Superseded by #9"));
        assert_eq!(group.candidate.as_deref(), Some("old"));
        let check = group.pull_request_check.unwrap();
        assert_eq!(
            (check.head_sha.as_deref(), check.draft, check.open),
            (Some("aaaaaaaaaa"), Some(false), true)
        );
        assert!(group.destructive);
    }

    #[test]
    fn a_branch_that_moved_is_kept_and_said_so() {
        let policy = inferencex_policy();
        let (group, kept) = supersede_group(
            &policy,
            &pull(&[]),
            Some("bbbbbbbbbb"),
            9,
            LedgerExpectation::Nothing,
        );
        assert!(!group.actions.iter().any(Action::is_ref_deletion));
        assert!(kept.unwrap().contains("moved to bbbbbbb"));
    }
}
