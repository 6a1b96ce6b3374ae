//! The dashboard's steps together on small worlds: a ledger, a body klaud rendered, a person's
//! edit, and the rewrite.

use crate::core::health::HealthFacts;
use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};

use super::attribution::{Attribution, Edit, EditHistory, attribute};
use super::checkbox::{BoxKey, changed_boxes, read_boxes};
use super::issue::DashboardTarget;
use super::render::{BODY_LIMIT, DashboardView, render};
use super::ticks::{JudgedTick, accounts_to_check, all_waiting, judge_ticks};
use super::*;
use crate::core::github_state::RepositoryPermission;
use crate::core::ledger::{Deferral, LastSelection, SessionState};
use crate::core::outcome::Outcome;
use crate::core::policy::tests::inferencex_policy;
use crate::core::snapshot::Listed;
use crate::core::status::{KlaudPullRequest, StatusFacts, StatusReport, status_report};
use crate::core::steering::Request;
use crate::core::test_support::at;

const BOT: &str = "Klaud-Cold";

fn now() -> DateTime<Utc> {
    at("2026-12-01T12:00:00Z")
}

/// Live a, parked p, failed c (cooling down), closed-by-maintainer m (holding family fm).
fn ledger() -> Ledger {
    let mut ledger = Ledger::empty();
    let hours_ago = |hours| now() - Duration::hours(hours);
    ledger.claim_family("a", "fa", 10, hours_ago(2)).unwrap();
    ledger.claim_family("p", "fp", 11, hours_ago(3)).unwrap();
    ledger.sessions[1].state = SessionState::Parked;
    for (candidate, family, outcome) in [
        ("c", "fc", Outcome::Failed),
        ("m", "fm", Outcome::ClosedByMaintainer),
    ] {
        ledger
            .claim_family(candidate, family, 9, hours_ago(5))
            .unwrap();
        ledger.finish_session(candidate, outcome, true, hours_ago(4));
    }
    ledger.last_selection = Some(LastSelection {
        run: 10,
        at: hours_ago(2),
        selected: vec!["a".into()],
        deferred: vec![Deferral {
            candidate: "c".into(),
            code: "cooling-down".into(),
            message: "`failed` of run 9 | cooling down".into(),
        }],
    });
    ledger
}

fn report(ledger: &Ledger) -> StatusReport {
    let pulls = Listed::complete(vec![KlaudPullRequest {
        number: 4,
        candidate: "a".into(),
        draft: true,
        labels: vec![],
    }]);
    status_report(
        StatusFacts {
            ledger,
            ledger_found: true,
            pull_requests: &pulls,
            repository: "octo/bench",
            health: HealthFacts {
                pulls: &Listed::complete(Vec::new()),
                jobs: &std::collections::BTreeMap::new(),
                sweep_workflow: Some("run-sweep.yml"),
            },
        },
        &inferencex_policy(),
        now(),
    )
}

fn body(ledger: &Ledger, ticks: &[JudgedTick]) -> String {
    render(&DashboardView {
        report: &report(ledger),
        ledger,
        repository_url: "https://github.com/octo/bench",
        ticks,
        others: &[],
    })
}

fn tick(body: &str, marker: &str) -> String {
    body.lines()
        .map(|line| {
            if line.contains(marker) {
                line.replacen("- [ ]", "- [x]", 1)
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn edit(editor: &str, minutes: i64, body: &str) -> Edit {
    Edit {
        editor: Some(editor.into()),
        edited_at: now() + Duration::minutes(minutes),
        body: Some(body.into()),
    }
}

#[test]
fn a_fresh_rendering_has_every_box_unticked_and_reads_back_unchanged() {
    let ledger = ledger();
    let body = body(&ledger, &[]);
    let boxes = read_boxes(&body);
    let keys: Vec<&BoxKey> = boxes.keys().collect();
    assert_eq!(
        keys,
        [
            &BoxKey::RetryNow("c".into()),
            &BoxKey::ResumeNow("p".into()),
            &BoxKey::ReleaseHold("fm".into()),
            &BoxKey::Pause
        ]
    );
    assert!(changed_boxes(&body).is_empty());
    assert!(body.contains("#4"), "{body}");
    assert!(
        body.contains("| \\`failed\\` of run 9 \\| cooling down |"),
        "{body}"
    );
    // Nothing new: the same rendering, so no write.
    let target = DashboardTarget::Rewrite {
        number: 1,
        body: body.clone(),
        reopen: false,
    };
    assert_eq!(
        dashboard_write(&target, body.clone(), &inferencex_policy().dashboard),
        None
    );
}

#[test]
fn a_maintainers_tick_is_acted_on_once_and_a_readers_is_cleared_and_named() {
    let mut ledger = ledger();
    let klaud = body(&ledger, &[]);
    let by_rob = tick(&klaud, "klaud:pause:off");
    let by_both = tick(&by_rob, "klaud:retry-now:c");
    let history = EditHistory {
        edits: vec![
            edit(BOT, -60, &klaud),
            edit("reader-rob", 1, &by_rob),
            edit("maintainer-ann", 2, &by_both),
        ],
        total: 3,
    };
    let changed = changed_boxes(&by_both);
    let attributions = attribute(&changed, &history, BOT);
    assert_eq!(
        accounts_to_check(&attributions),
        ["maintainer-ann", "reader-rob"]
    );
    let permissions = BTreeMap::from([
        (
            "maintainer-ann".to_string(),
            Ok(RepositoryPermission::Write),
        ),
        ("reader-rob".to_string(), Ok(RepositoryPermission::Read)),
    ]);
    let judged = judge_ticks(&changed, &attributions, &permissions, &ledger.steering);
    let changes = SteeringChanges::from_ticks(&judged);
    assert_eq!(changes.accepted.len(), 1);
    assert_eq!(changes.accepted[0].request, Request::RetryNow("c".into()));
    assert_eq!(changes.ignored[0].by, "reader-rob");
    assert_eq!(changes.apply(&mut ledger, 20, now()).len(), 2);
    assert!(!ledger.steering.is_paused());
    // The rewrite clears both ticks, names rob, and shows c's cooldown ended.
    let rewritten = body(&ledger, &judged);
    assert!(changed_boxes(&rewritten).is_empty(), "{rewritten}");
    assert!(!rewritten.contains("klaud:retry-now:c"), "{rewritten}");
    assert!(rewritten.contains("`reader-rob`"), "{rewritten}");
    assert!(rewritten.contains("`maintainer-ann`"), "{rewritten}");
    // The same tick read again (the rewrite failed) acts on nothing more.
    let again = judge_ticks(&changed, &attributions, &permissions, &ledger.steering);
    let mut twice = ledger.clone();
    assert!(
        SteeringChanges::from_ticks(&again)
            .apply(&mut twice, 21, now())
            .is_empty()
    );
    assert_eq!(twice, ledger);
}

#[test]
fn a_status_pass_keeps_every_tick_for_recovery() {
    let ledger = ledger();
    let klaud = body(&ledger, &[]);
    let ticked = tick(&tick(&klaud, "klaud:resume-now:p"), "klaud:pause:off");
    let waiting = all_waiting(&changed_boxes(&ticked), "the next recovery pass acts on it");
    let rewritten = body(&ledger, &waiting);
    assert_eq!(changed_boxes(&rewritten).len(), 2, "{rewritten}");
    // A second status pass over its own rewrite writes nothing.
    let target = DashboardTarget::Rewrite {
        number: 1,
        body: rewritten.clone(),
        reopen: false,
    };
    let again = all_waiting(
        &changed_boxes(&rewritten),
        "the next recovery pass acts on it",
    );
    assert_eq!(
        dashboard_write(
            &target,
            body(&ledger, &again),
            &inferencex_policy().dashboard
        ),
        None
    );
}

#[test]
fn a_waiting_tick_whose_box_is_gone_is_kept_in_the_requests() {
    let mut ledger = ledger();
    let klaud = body(&ledger, &[]);
    let ticked = tick(&klaud, "klaud:resume-now:p");
    // p is resumed meanwhile: its box is no longer drawn among the parked sessions.
    ledger.sessions[1].state = SessionState::Live;
    let waiting = all_waiting(&changed_boxes(&ticked), "waiting");
    let rewritten = body(&ledger, &waiting);
    let boxes = read_boxes(&rewritten);
    assert!(
        boxes[&BoxKey::ResumeNow("p".into())].changed(),
        "{rewritten}"
    );
}

#[test]
fn a_paused_ledger_draws_the_pause_box_ticked_and_unticking_it_asks_to_go_on() {
    let mut ledger = ledger();
    ledger.steering.apply(
        &crate::core::steering::AcceptedRequest {
            request: Request::Pause,
            by: "maintainer-ann".into(),
            edited_at: now(),
        },
        20,
        now(),
    );
    let klaud = body(&ledger, &[]);
    assert!(klaud.contains("- [x] pause"), "{klaud}");
    assert!(changed_boxes(&klaud).is_empty());
    let unticked = klaud.replace("- [x] pause", "- [ ] pause");
    let changed = changed_boxes(&unticked);
    assert_eq!(changed[0].key.request(changed[0].ticked), Request::Unpause);
}

#[test]
fn a_long_ledger_is_cut_to_the_body_limit_with_a_count() {
    let mut ledger = ledger();
    for index in 0..3_000 {
        let candidate = format!("candidate-with-a-long-name-{index:05}");
        ledger
            .claim_family(&candidate, &format!("family-{index}"), 30, now())
            .unwrap();
        ledger.finish_session(
            &candidate,
            Outcome::Failed,
            true,
            now() - Duration::hours(1),
        );
    }
    let body = body(&ledger, &[]);
    assert!(body.chars().count() <= BODY_LIMIT, "{}", body.len());
    assert!(body.contains("more not shown"));
}

#[test]
fn creating_writes_the_title_and_label_and_a_closed_issue_left_alone_writes_nothing() {
    let settings = inferencex_policy().dashboard;
    let created = dashboard_write(&DashboardTarget::Create, "b".into(), &settings).unwrap();
    assert!(matches!(
        created,
        Action::WriteDashboard { issue: None, ref title, ref label, .. }
            if title == "klaud dashboard" && label == "klaud-dashboard"
    ));
    let reopen = DashboardTarget::Rewrite {
        number: 5,
        body: "b".into(),
        reopen: true,
    };
    assert!(dashboard_write(&reopen, "b".into(), &settings).is_some());
    let left = DashboardTarget::Leave {
        why: "closed".into(),
    };
    assert_eq!(dashboard_write(&left, "b".into(), &settings), None);
}

/// Validated #12 of candidate w waits for a maintainer, its two sessions used; validated #13
/// of candidate v is watched and conflicts with its base.
fn ledger_with_aftercare() -> Ledger {
    use crate::core::aftercare::{AftercareState, NeedsMaintainerBecause};
    let mut ledger = ledger();
    let validated = now() - Duration::days(2);
    ledger.record_validated("w", "fw", 12, None, validated);
    ledger.record_validated("v", "fv", 13, None, validated);
    ledger.aftercare[0].sessions_used = 2;
    ledger.aftercare[0].state = AftercareState::NeedsMaintainer {
        since: now() - Duration::hours(1),
        because: NeedsMaintainerBecause::SessionsUsedUp { used: 2 },
    };
    ledger
}

fn aftercare_body(ledger: &Ledger, ticks: &[JudgedTick]) -> String {
    use crate::core::github_state::{MergeStateStatus, Mergeable};
    use crate::core::health::PullRequestChecks;
    let pull = |number: u64, candidate: &str, mergeable: Mergeable| PullRequestChecks {
        number,
        candidate: candidate.into(),
        created_at: now() - Duration::days(3),
        draft: number == 12,
        head_sha: "abc".into(),
        mergeable,
        merge_state: MergeStateStatus::Clean,
        checks: Listed::complete(Vec::new()),
    };
    let pulls = Listed::complete(vec![
        pull(12, "w", Mergeable::Mergeable),
        pull(13, "v", Mergeable::Conflicting),
    ]);
    let report = status_report(
        StatusFacts {
            ledger,
            ledger_found: true,
            pull_requests: &Listed::complete(Vec::new()),
            repository: "octo/bench",
            health: HealthFacts {
                pulls: &pulls,
                jobs: &std::collections::BTreeMap::new(),
                sweep_workflow: Some("run-sweep.yml"),
            },
        },
        &inferencex_policy(),
        now(),
    );
    render(&DashboardView {
        report: &report,
        ledger,
        repository_url: "https://github.com/octo/bench",
        ticks,
        others: &[],
    })
}

#[test]
fn after_care_lists_each_pull_request_and_a_retry_box_only_where_a_maintainer_is_awaited() {
    let ledger = ledger_with_aftercare();
    let body = aftercare_body(&ledger, &[]);
    assert!(body.contains("## After-care: 2 pull requests"), "{body}");
    let lines: Vec<&str> = body
        .lines()
        .filter(|line| line.contains("/pull/12)") || line.contains("/pull/13)"))
        .filter(|line| line.starts_with("- "))
        .collect();
    assert_eq!(
        lines,
        [
            "- [ ] retry after-care of [#12](https://github.com/octo/bench/pull/12) — `w` — \
             no-sweep — needs-maintainer, 2/2 sessions (it has used its 2 after-care sessions): \
             waits for a maintainer <!-- klaud:retry-aftercare:12 -->",
            "- [#13](https://github.com/octo/bench/pull/13) `v` — no-sweep, conflicting — \
             watched, 0/2 sessions: starts a refresh session",
        ]
    );
    let boxes = read_boxes(&body);
    assert!(!boxes[&BoxKey::RetryAftercare(12)].changed());
    assert!(!boxes.contains_key(&BoxKey::RetryAftercare(13)));
    assert!(changed_boxes(&body).is_empty());
}

#[test]
fn a_writers_retry_aftercare_grants_one_session_once_and_a_readers_tick_is_ignored() {
    let mut ledger = ledger_with_aftercare();
    let klaud = aftercare_body(&ledger, &[]);
    let ticked = tick(&klaud, "klaud:retry-aftercare:12");
    let changed = changed_boxes(&ticked);
    assert_eq!(changed[0].key.request(true), Request::RetryAftercare(12));

    // A reader's tick is ignored and named; nothing is granted.
    let reader = [Attribution::By {
        account: Some("reader-rob".into()),
        edited_at: now() + Duration::minutes(1),
    }];
    let permissions = BTreeMap::from([
        ("reader-rob".to_string(), Ok(RepositoryPermission::Read)),
        (
            "maintainer-ann".to_string(),
            Ok(RepositoryPermission::Maintain),
        ),
    ]);
    let judged = judge_ticks(&changed, &reader, &permissions, &ledger.steering);
    let mut after_reader = ledger.clone();
    SteeringChanges::from_ticks(&judged).apply(&mut after_reader, 20, now());
    assert_eq!(after_reader.aftercare, ledger.aftercare, "nothing granted");
    assert_eq!(after_reader.steering.ignored[0].by, "reader-rob");
    let rewritten = aftercare_body(&after_reader, &judged);
    assert!(changed_boxes(&rewritten).is_empty(), "the tick is cleared");

    // A writer's tick grants one session and watches it again, however often it is read.
    let writer = [Attribution::By {
        account: Some("maintainer-ann".into()),
        edited_at: now() + Duration::minutes(2),
    }];
    let judged = judge_ticks(&changed, &writer, &permissions, &ledger.steering);
    let changes = SteeringChanges::from_ticks(&judged);
    let said = changes.apply(&mut ledger, 21, now());
    assert_eq!(said, ["retry after-care of #12 (asked by maintainer-ann)"]);
    let record = ledger.aftercare_of(12).unwrap();
    assert_eq!(
        (record.granted, &record.state),
        (1, &crate::core::aftercare::AftercareState::Watched)
    );
    // A second pass that saw the same tick (before the rewrite) acts on nothing, and so does
    // one that applies the same changes again after losing a race.
    let again = judge_ticks(&changed, &writer, &permissions, &ledger.steering);
    assert!(SteeringChanges::from_ticks(&again).accepted.is_empty());
    let mut raced = ledger.clone();
    assert!(changes.apply(&mut raced, 22, now()).is_empty());
    assert_eq!(raced, ledger);
    let rewritten = aftercare_body(&ledger, &judged);
    assert!(
        !rewritten.contains("klaud:retry-aftercare:12"),
        "{rewritten}"
    );
    assert!(rewritten.contains("watched, 2/3 sessions"), "{rewritten}");
}

#[test]
fn a_retry_aftercare_marker_names_a_pull_request_by_its_number_only() {
    let body = "- [x] a <!-- klaud:retry-aftercare:12 -->\n\
                - [x] b <!-- klaud:retry-aftercare:1%32 -->\n\
                - [x] c <!-- klaud:retry-aftercare:-3 -->\n\
                - [x] d <!-- klaud:retry-aftercare:99999999999999999999999 -->\n";
    let keys: Vec<BoxKey> = read_boxes(body).into_keys().collect();
    assert_eq!(keys, [BoxKey::RetryAftercare(12)]);
}
