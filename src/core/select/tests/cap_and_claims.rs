//! The concurrent cap, whole-selection deferrals, the claims a plan writes and claim-lost.

use super::*;

#[test]
fn the_cap_is_max_candidates_minus_live_sessions_and_parked_ones_do_not_count() {
    let plan = World::with_candidates(&[("a", "f"), ("b", "g"), ("c", "h")])
        .max_candidates(3)
        .live("x", "x", 7)
        .parked("y", "y")
        .decide();
    assert_eq!(
        decisions(&plan),
        [
            ("a", Decision::Selected),
            ("b", Decision::Selected),
            ("c", Decision::OverCap)
        ]
    );
    assert_eq!(
        plan.cap,
        CapAccount {
            max_candidates: 3,
            live_sessions: 1,
            room: 2
        }
    );
    assert!(message_of(&plan, "c").contains("cap of 3"));
}

#[test]
fn more_live_sessions_than_the_cap_leave_no_room() {
    let plan = World::with_candidates(&[("a", "f")])
        .max_candidates(1)
        .live("x", "x", 7)
        .live("y", "y", 7)
        .decide();
    assert_eq!(decisions(&plan), [("a", Decision::OverCap)]);
    assert_eq!(plan.cap.room, 0);
}

#[test]
fn an_incomplete_listing_defers_the_selection_instead_of_reading_as_no_pull_request() {
    let mut world = World::with_candidates(&[("a", "f"), ("b", "g")]);
    world.github.open_pull_requests = Listed::failed("open pull requests: GET /pulls: HTTP 502");
    let plan = world.decide();
    assert_eq!(
        plan.deferred_reason,
        Some(SelectionDeferral::ListingIncomplete)
    );
    assert_eq!(
        decisions(&plan),
        [
            ("a", Decision::ListingIncomplete),
            ("b", Decision::ListingIncomplete)
        ]
    );
    assert!(message_of(&plan, "a").contains("HTTP 502"));
    assert!(world.claims(&[]).ledger.is_none());

    let mut world = World::with_candidates(&[("a", "f")]);
    world.github.candidate_branches = Listed::failed("branches: budget used up");
    assert_eq!(
        world.decide().deferred_reason,
        Some(SelectionDeferral::ListingIncomplete)
    );
}

/// The last session's one job, ended `hours_ago`, with its agent's cost.
fn costing(mut world: World, hours_ago: i64, cost_usd: f64) -> World {
    let ended = now() - Duration::hours(hours_ago);
    world
        .ledger
        .sessions
        .last_mut()
        .unwrap()
        .attempts
        .push(crate::core::ledger::Attempt {
            number: 1,
            run: 5,
            adopted_at: ended - Duration::hours(1),
            deadline: ended + Duration::hours(4),
            ended_at: Some(ended),
            end: None,
            runs: Vec::new(),
            notes: Vec::new(),
            notes_folded: 0,
            agent: Some(crate::core::execution::AgentRecord {
                cost_usd: Some(cost_usd),
                ..Default::default()
            }),
        });
    world
}

#[test]
fn a_used_up_daily_budget_defers_the_selection_with_the_figures() {
    // $7.40 by a parked session and $5 by a finished one in the last day; $50 two days ago.
    let world = World::with_candidates(&[("a", "f"), ("b", "g")]).parked("p", "fp");
    let world = costing(world, 3, 7.4).finished("o", "fo", "failed", 20);
    let world = costing(world, 20, 5.0).finished("old", "fold", "failed", 48);
    let mut world = costing(world, 48, 50.0);
    world.policy.daily_budget_usd = Some(10.0);
    let plan = world.decide();
    assert_eq!(
        plan.deferred_reason,
        Some(SelectionDeferral::BudgetExhausted)
    );
    assert_eq!(
        decisions(&plan),
        [
            ("a", Decision::BudgetExhausted),
            ("b", Decision::BudgetExhausted)
        ]
    );
    assert_eq!(
        message_of(&plan, "a"),
        "the daily budget is used up, so nothing is selected: $12.40 recorded in the last 24 hours, budget $10.00"
    );
    assert!(world.claims(&[]).ledger.is_none(), "nothing is claimed");

    world.policy.daily_budget_usd = Some(12.5);
    let plan = world.decide();
    assert_eq!(plan.deferred_reason, None);
    assert_eq!(decision_of(&plan, "a").decision, Decision::Selected);
    world.policy.daily_budget_usd = None;
    assert_eq!(world.decide().deferred_reason, None, "no budget, no limit");
}

#[test]
fn claims_and_live_sessions_are_written_with_the_run_and_attempt() {
    let world = World::with_candidates(&[("a", "f"), ("b", "f"), ("c", "g")]);
    let decision = world.claims(&[]);
    let ledger = decision.ledger.expect("the ledger changes");
    let claimed: Vec<(&str, &str, u64)> = ledger
        .claims
        .iter()
        .map(|claim| {
            (
                claim.candidate.as_str(),
                claim.family.as_str(),
                claim.parent_run,
            )
        })
        .collect();
    assert_eq!(claimed, [("a", "f", 900), ("c", "g", 900)]);
    assert_eq!(ledger.live_sessions().count(), 2);
    assert!(ledger.sessions.iter().all(|session| {
        session.parent_run == 900
            && session.parent_attempt == Some(1)
            && session.started_at == now()
    }));
    assert_eq!(
        decision.plan.ledger_message(),
        "select run 900 attempt 1: claimed f for a, g for c"
    );
    // The claim records the selection for the dashboard: what it started and held back.
    let last = ledger.last_selection.expect("the last selection");
    assert_eq!((last.run, last.at), (900, now()));
    assert_eq!(last.selected, ["a", "c"]);
    assert_eq!(last.deferred.len(), 1);
    assert_eq!(
        (
            last.deferred[0].candidate.as_str(),
            last.deferred[0].code.as_str()
        ),
        ("b", "occupied")
    );
}

#[test]
fn nothing_to_claim_leaves_the_ledger_as_it_is() {
    let world = World::with_candidates(&[("a", "f")]).live("x", "f", 7);
    assert!(world.claims(&[]).ledger.is_none());
}

#[test]
fn what_an_earlier_reading_chose_and_a_concurrent_pass_took_is_claim_lost() {
    // An earlier reading selected a and b; meanwhile run 8 claimed f and filled the cap.
    let world = World::with_candidates(&[("a", "f"), ("b", "g"), ("c", "h")])
        .max_candidates(2)
        .live("other", "f", 8)
        .live("other2", "z", 8);
    let decision = world.claims(&["a", "b"]);
    assert_eq!(
        decisions(&decision.plan),
        [
            ("a", Decision::ClaimLost),
            ("b", Decision::ClaimLost),
            ("c", Decision::OverCap)
        ]
    );
    assert!(message_of(&decision.plan, "a").contains("concurrent pass"));
    assert!(message_of(&decision.plan, "a").contains("run 8"));
    assert!(decision.ledger.is_none());
}

#[test]
fn a_later_attempt_of_the_same_run_reselects_its_own_claim_without_taking_new_room() {
    let mut world = World::with_candidates(&[("a", "f"), ("b", "g")])
        .max_candidates(1)
        .live("a", "f", RUN.run_id);
    world.ledger.sessions[0].parent_attempt = Some(1);
    let rerun = SelectingRun { attempt: 2, ..RUN };
    let decision = plan_claims(
        world.snapshot(),
        world.inputs(),
        &world.policy,
        rerun,
        now(),
        &BTreeSet::new(),
    );
    assert_eq!(
        decisions(&decision.plan),
        [("a", Decision::Selected), ("b", Decision::OverCap)]
    );
    let ledger = decision.ledger.expect("the attempt is recorded");
    assert_eq!(ledger.sessions.len(), 1);
    assert_eq!(ledger.sessions[0].parent_attempt, Some(2));
}

#[test]
fn counts_cover_every_candidate_exactly_once() {
    let plan = World::with_candidates(&[("a", "f"), ("b", "f"), ("c", "g")])
        .max_candidates(1)
        .decide();
    let counts = plan.counts();
    assert_eq!(counts.values().sum::<usize>(), 3);
    assert_eq!(counts[&Decision::Selected], 1);
    assert_eq!(counts[&Decision::Occupied], 1);
    assert_eq!(counts[&Decision::OverCap], 1);
    let codes: BTreeSet<&str> = Decision::ALL.iter().map(|d| d.code()).collect();
    assert_eq!(codes.len(), Decision::ALL.len());
}

#[test]
fn every_decision_code_is_the_one_the_select_page_documents() {
    let page = include_str!("../../../../docs/modes/select.md");
    for decision in Decision::ALL {
        assert!(
            page.contains(&format!("`{decision}`")),
            "docs/modes/select.md does not name `{decision}`"
        );
        assert_eq!(
            serde_json::to_value(decision).unwrap(),
            serde_json::json!(decision.code())
        );
    }
}
