//! The dashboard's steps together on small worlds: a ledger, a body klaud rendered, a person's
//! edit, and the rewrite.

use crate::core::health::HealthFacts;
use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};

use super::attribution::{Edit, EditHistory, attribute};
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
