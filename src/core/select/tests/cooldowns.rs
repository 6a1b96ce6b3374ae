//! Cooldowns from the ledger's outcome history, legacy outcome names included.

use super::*;

#[test]
fn a_failed_session_cools_its_candidate_for_the_default_days() {
    let world = World::with_candidates(&[("a", "f"), ("b", "f2")])
        .finished("a", "f", "failed", 12)
        .finished("b", "f2", "failed", 25);
    let plan = world.decide();
    let a = decision_of(&plan, "a");
    assert_eq!(a.decision, Decision::CoolingDown);
    assert_eq!(a.until, Some(now() + Duration::hours(12)));
    assert!(
        message_of(&plan, "a").contains("`failed`"),
        "{}",
        message_of(&plan, "a")
    );
    assert_eq!(decision_of(&plan, "b").decision, Decision::Selected);
}

#[test]
fn missing_assets_and_weights_missing_cool_for_seven_days() {
    let plan = World::with_candidates(&[("a", "f"), ("b", "g"), ("c", "h")])
        .finished("a", "f", "missing-assets", 24 * 6)
        .finished("b", "g", "weights-missing", 24 * 6)
        .finished("c", "h", "missing-assets", 24 * 8)
        .decide();
    assert_eq!(decision_of(&plan, "a").decision, Decision::CoolingDown);
    assert_eq!(
        decision_of(&plan, "a").until,
        Some(now() + Duration::days(1))
    );
    assert_eq!(decision_of(&plan, "b").decision, Decision::CoolingDown);
    assert_eq!(decision_of(&plan, "c").decision, Decision::Selected);
}

#[test]
fn closed_by_maintainer_holds_the_whole_family_for_seven_days() {
    let plan = World::with_candidates(&[("a", "f"), ("b", "f"), ("c", "g")])
        .finished("old", "f", "closed-by-maintainer", 24 * 3)
        .decide();
    assert_eq!(decision_of(&plan, "a").decision, Decision::CoolingDown);
    assert_eq!(
        decision_of(&plan, "a").until,
        Some(now() + Duration::days(4))
    );
    assert!(message_of(&plan, "a").contains("whole family"));
    assert_eq!(decision_of(&plan, "b").decision, Decision::CoolingDown);
    assert_eq!(decision_of(&plan, "c").decision, Decision::Selected);
}

#[test]
fn no_capacity_earns_no_cooldown() {
    let plan = World::with_candidates(&[("a", "f")])
        .finished("a", "f", "no-capacity", 1)
        .decide();
    assert_eq!(decision_of(&plan, "a").decision, Decision::Selected);
}

#[test]
fn a_session_whose_agent_never_ran_earns_no_cooldown() {
    let plan = World::with_candidates(&[("a", "f")])
        .finished("a", "f", "failed", 1)
        .agent_never_ran()
        .decide();
    assert_eq!(decision_of(&plan, "a").decision, Decision::Selected);
}

#[test]
fn legacy_outcome_names_earn_the_cooldowns_of_their_new_names() {
    let plan = World::with_candidates(&[
        ("capacity", "f1"),
        ("readiness", "f2"),
        ("uncertain", "f3"),
        ("unexpected", "f4"),
        ("aborted-sibling", "f5"),
    ])
    .finished("capacity", "f1", "capacity-deferred", 1)
    .finished("readiness", "f2", "readiness-blocked", 24 * 5)
    .finished("uncertain", "f3", "uncertain", 12)
    .finished("unexpected", "f4", "unexpected-error", 12)
    .finished("aborted-one", "f5", "aborted", 24 * 5)
    .decide();
    assert_eq!(
        decisions(&plan),
        [
            ("capacity", Decision::Selected),
            ("readiness", Decision::CoolingDown),
            ("uncertain", Decision::CoolingDown),
            ("unexpected", Decision::CoolingDown),
            ("aborted-sibling", Decision::CoolingDown),
        ]
    );
    assert_eq!(
        decision_of(&plan, "readiness").until,
        Some(now() + Duration::days(2))
    );
    assert!(message_of(&plan, "readiness").contains("`missing-assets`"));
    assert!(message_of(&plan, "aborted-sibling").contains("`closed-by-maintainer`"));
}

#[test]
fn legacy_names_in_a_stored_ledger_are_read_back_for_cooldowns() {
    let mut world = World::with_candidates(&[("a", "f"), ("b", "g")]);
    world.ledger = Ledger::from_json(
        r#"{"version": 1, "sessions": [
            {"candidate": "a", "family": "f", "parent-run": 1, "state": "finished",
             "started-at": "2026-11-30T08:00:00Z", "finished-at": "2026-11-30T10:00:00Z",
             "outcome": "capacity-deferred"},
            {"candidate": "b", "family": "g", "parent-run": 1, "state": "finished",
             "started-at": "2026-11-28T08:00:00Z", "finished-at": "2026-11-28T10:00:00Z",
             "outcome": "readiness-blocked"}]}"#,
    )
    .unwrap();
    let plan = world.decide();
    assert_eq!(decision_of(&plan, "a").decision, Decision::Selected);
    assert_eq!(decision_of(&plan, "b").decision, Decision::CoolingDown);
}

#[test]
fn configured_cooldowns_override_the_contract_defaults() {
    let mut world = World::with_candidates(&[("a", "f"), ("b", "g")])
        .finished("a", "f", "failed", 30)
        .finished("b", "g", "missing-assets", 30);
    world.policy.cooldown_overrides.insert(Outcome::Failed, 2.0);
    world
        .policy
        .cooldown_overrides
        .insert(Outcome::MissingAssets, 0.5);
    let plan = world.decide();
    assert_eq!(decision_of(&plan, "a").decision, Decision::CoolingDown);
    assert_eq!(decision_of(&plan, "b").decision, Decision::Selected);
}

#[test]
fn the_longest_running_cooldown_wins() {
    let plan = World::with_candidates(&[("a", "f")])
        .finished("a", "f", "missing-assets", 24 * 2)
        .finished("a", "f", "failed", 1)
        .decide();
    assert_eq!(
        decision_of(&plan, "a").until,
        Some(now() + Duration::days(5))
    );
}
