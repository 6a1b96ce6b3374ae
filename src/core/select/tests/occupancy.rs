//! Occupancy: ledger claims and sessions, klaud's own open pull requests, retained branches.

use super::*;

#[test]
fn with_nothing_in_the_way_every_candidate_is_selected_in_order() {
    let plan = World::with_candidates(&[("a", "f"), ("b", "g")]).decide();
    assert_eq!(
        decisions(&plan),
        [("a", Decision::Selected), ("b", Decision::Selected)]
    );
    assert_eq!(plan.deferred_reason, None);
    assert_eq!(decision_of(&plan, "a").reason, None);
}

#[test]
fn a_live_session_claim_or_parked_session_of_the_family_occupies_it() {
    let plan = World::with_candidates(&[("a", "f"), ("b", "g"), ("c", "h")])
        .live("other", "f", 7)
        .parked("parked-one", "g")
        .decide();
    assert_eq!(decision_of(&plan, "a").decision, Decision::Occupied);
    assert!(message_of(&plan, "a").contains("claimed for candidate other by run 7"));
    assert_eq!(decision_of(&plan, "b").decision, Decision::Occupied);
    assert!(message_of(&plan, "b").contains("parked session of candidate parked-one"));
    assert_eq!(decision_of(&plan, "c").decision, Decision::Selected);
}

#[test]
fn an_open_klaud_pull_request_of_any_candidate_of_the_family_occupies_it() {
    let plan = World::with_candidates(&[("a", "f"), ("b", "f"), ("c", "g")])
        .open_pull_request(12, "klaud/auto-b", "acme/bench")
        .decide();
    assert_eq!(decision_of(&plan, "a").decision, Decision::Occupied);
    assert!(message_of(&plan, "a").contains("#12 of candidate b"));
    assert_eq!(decision_of(&plan, "b").decision, Decision::Occupied);
    assert_eq!(decision_of(&plan, "c").decision, Decision::Selected);
}

#[test]
fn a_pull_request_of_a_candidate_known_only_from_the_ledger_occupies_its_family() {
    let plan = World::with_candidates(&[("a", "f")])
        .finished("old", "f", "validated", 24 * 30)
        .open_pull_request(3, "klaud/auto-old", "acme/bench")
        .decide();
    assert_eq!(decision_of(&plan, "a").decision, Decision::Occupied);
}

#[test]
fn other_peoples_pull_requests_never_block_a_family() {
    let plan = World::with_candidates(&[("a", "f")])
        .open_pull_request(1, "feature/a", "acme/bench")
        .open_pull_request(2, "klaud/auto-a", "someone/fork")
        .decide();
    assert_eq!(decision_of(&plan, "a").decision, Decision::Selected);
}

#[test]
fn a_retained_branch_occupies_only_its_own_candidate() {
    let plan = World::with_candidates(&[("a", "f"), ("b", "f")])
        .branch("klaud/auto-a")
        .decide();
    assert_eq!(decision_of(&plan, "a").decision, Decision::Occupied);
    assert!(message_of(&plan, "a").contains("branch klaud/auto-a still exists"));
    assert_eq!(decision_of(&plan, "b").decision, Decision::Selected);
}

#[test]
fn two_candidates_of_one_family_are_never_selected_together() {
    let plan = World::with_candidates(&[("a", "f"), ("b", "f")]).decide();
    assert_eq!(
        decisions(&plan),
        [("a", Decision::Selected), ("b", Decision::Occupied)]
    );
    assert!(message_of(&plan, "b").contains("candidate a of the same family"));
}

#[test]
fn a_handoff_holds_its_candidate_while_the_pull_request_is_open_and_not_after() {
    let handed_off = World::with_candidates(&[("a", "f")])
        .finished("a", "f", "handoff", 24 * 30)
        .open_pull_request(8, "klaud/auto-a", "acme/bench")
        .decide();
    assert_eq!(decision_of(&handed_off, "a").decision, Decision::Occupied);
    let closed_since = World::with_candidates(&[("a", "f")])
        .finished("a", "f", "handoff", 1)
        .decide();
    assert_eq!(decision_of(&closed_since, "a").decision, Decision::Selected);
}

#[test]
fn a_pull_request_waiting_in_aftercare_leaves_its_family_to_another_candidate() {
    let plan = World::with_candidates(&[("old", "f"), ("new", "f")])
        .finished("old", "f", "validated", 2)
        .validated_in_aftercare("old", "f", 12)
        .open_pull_request(12, "klaud/auto-old", "acme/bench")
        .decide();
    assert_eq!(decision_of(&plan, "new").decision, Decision::Selected);
    assert_eq!(decision_of(&plan, "old").decision, Decision::Occupied);
    assert!(message_of(&plan, "old").contains("#12 of candidate old is open"));
}

#[test]
fn a_pull_request_in_aftercare_with_a_session_of_its_own_still_occupies_its_family() {
    let plan = World::with_candidates(&[("new", "f")])
        .finished("old", "f", "validated", 2)
        .validated_in_aftercare("old", "f", 12)
        .parked("old", "f")
        .open_pull_request(12, "klaud/auto-old", "acme/bench")
        .decide();
    assert_eq!(decision_of(&plan, "new").decision, Decision::Occupied);
    assert!(message_of(&plan, "new").contains("parked session of candidate old"));
}

#[test]
fn without_supersede_a_pull_request_waiting_in_aftercare_keeps_its_family() {
    let mut world = World::with_candidates(&[("new", "f")])
        .finished("old", "f", "validated", 2)
        .validated_in_aftercare("old", "f", 12)
        .open_pull_request(12, "klaud/auto-old", "acme/bench");
    world.policy.aftercare.supersede = false;
    let plan = world.decide();
    assert_eq!(decision_of(&plan, "new").decision, Decision::Occupied);
    assert!(message_of(&plan, "new").contains("#12 of candidate old is open"));
}

#[test]
fn a_pull_request_left_by_aftercare_keeps_its_family() {
    let mut world = World::with_candidates(&[("new", "f")])
        .finished("old", "f", "validated", 2)
        .validated_in_aftercare("old", "f", 12)
        .open_pull_request(12, "klaud/auto-old", "acme/bench");
    world.ledger.aftercare[0].state = crate::core::aftercare::AftercareState::Left {
        since: now(),
        reason: "#12 has a commit by maintainer".into(),
    };
    let plan = world.decide();
    assert_eq!(decision_of(&plan, "new").decision, Decision::Occupied);
}
