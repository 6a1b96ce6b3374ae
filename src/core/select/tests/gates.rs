//! The review, baselines.json and the capacity gate.

use super::*;
use crate::core::baseline::DeferralCode;
use crate::core::select::baselines::BaselineCode;

#[test]
fn review_duplicates_and_uncertain_decisions_hold_back_their_whole_family() {
    let plan = World::with_candidates(&[("a", "f"), ("b", "f"), ("c", "g"), ("d", "g"), ("e", "h")])
        .review(serde_json::json!({"decisions": [
            {"candidate-id": "a", "decision": "proceed", "family": "f", "pull-requests": [], "reason": ""},
            {"candidate-id": "b", "decision": "duplicate", "family": "f", "pull-requests": [41], "reason": "same change as #41"},
            {"candidate-id": "c", "decision": "uncertain", "family": "g", "pull-requests": [], "reason": "unclear"},
            {"candidate-id": "d", "decision": "proceed", "family": "g", "pull-requests": [], "reason": ""},
            {"candidate-id": "e", "decision": "proceed", "family": "h", "pull-requests": [], "reason": ""}
        ]}))
        .decide();
    assert_eq!(
        decisions(&plan),
        [
            ("a", Decision::ReviewDuplicate),
            ("b", Decision::ReviewDuplicate),
            ("c", Decision::ReviewUncertain),
            ("d", Decision::ReviewUncertain),
            ("e", Decision::Selected),
        ]
    );
    assert!(message_of(&plan, "b").contains("#41"));
    assert!(message_of(&plan, "b").contains("same change as #41"));
    assert!(message_of(&plan, "a").contains("candidate b of the same family"));
}

#[test]
fn an_invalid_review_defers_the_whole_selection() {
    let proceed = |id: &str, family: &str| serde_json::json!({"candidate-id": id, "decision": "proceed", "family": family, "pull-requests": [], "reason": ""});
    let world = || World::with_candidates(&[("a", "f"), ("b", "g")]);
    let not_json = {
        let mut world = world();
        world.review = read_review("the model said: proceed", &world.candidates);
        world
    };
    let cases = [
        ("not JSON", not_json),
        (
            "repeated id",
            world().review(serde_json::json!({"decisions": [proceed("a", "f"), proceed("a", "f"), proceed("b", "g")]})),
        ),
        (
            "unknown id",
            world().review(serde_json::json!({"decisions": [proceed("a", "f"), proceed("b", "g"), proceed("z", "g")]})),
        ),
        (
            "missing candidate",
            world().review(serde_json::json!({"decisions": [proceed("a", "f")]})),
        ),
        (
            "proceed that changed its family",
            world().review(serde_json::json!({"decisions": [proceed("a", "f"), proceed("b", "other")]})),
        ),
        (
            "unknown decision",
            world().review(serde_json::json!({"decisions": [proceed("a", "f"),
                {"candidate-id": "b", "decision": "maybe", "family": "g"}]})),
        ),
        ("no decisions array", world().review(serde_json::json!([]))),
    ];
    for (case, world) in cases {
        assert!(world.review.is_invalid(), "{case}");
        let plan = world.decide();
        assert_eq!(
            plan.deferred_reason,
            Some(SelectionDeferral::InvalidReviewOutput),
            "{case}"
        );
        assert_eq!(
            decisions(&plan),
            [
                ("a", Decision::InvalidReviewOutput),
                ("b", Decision::InvalidReviewOutput)
            ],
            "{case}"
        );
        assert_eq!(
            decision_of(&plan, "a").reason.as_ref().unwrap().code,
            ReasonCode::Decision(Decision::InvalidReviewOutput)
        );
        assert!(
            world.claims(&[]).ledger.is_none(),
            "{case}: nothing is claimed"
        );
    }
}

#[test]
fn a_duplicate_may_name_another_family_without_invalidating_the_review() {
    let plan = World::with_candidates(&[("a", "f")])
        .review(serde_json::json!({"decisions": [
            {"candidate-id": "a", "decision": "duplicate", "family": "elsewhere", "pull-requests": [7], "reason": "x"}
        ]}))
        .decide();
    assert_eq!(decision_of(&plan, "a").decision, Decision::ReviewDuplicate);
}

#[test]
fn a_deferred_or_unrecorded_baseline_defers_the_candidate_with_its_reason() {
    let mut world = World::with_candidates(&[("a", "f"), ("b", "g"), ("c", "h")]);
    world.baselines = Some(
        parse_baselines(
            r#"{"candidates": [
                {"id": "a", "status": "verified", "reason": null},
                {"id": "b", "status": "deferred",
                 "reason": {"code": "image-mismatch", "message": "row 0 was published with another image"}}]}"#,
        )
        .unwrap(),
    );
    let plan = world.decide();
    assert_eq!(decision_of(&plan, "a").decision, Decision::Selected);
    let b = decision_of(&plan, "b");
    assert_eq!(b.decision, Decision::BaselineDeferred);
    assert_eq!(
        b.reason,
        Some(Reason::new(
            BaselineCode::Deferred(DeferralCode::ImageMismatch),
            "row 0 was published with another image"
        ))
    );
    let c = decision_of(&plan, "c");
    assert_eq!(c.decision, Decision::BaselineDeferred);
    assert_eq!(
        c.reason.as_ref().unwrap().code,
        ReasonCode::Baseline(BaselineCode::NotVerified)
    );
}

/// `verify-baselines --review` verifies only what the review lets proceed; the others are
/// `not-proceeding` in `baselines.json`. Given the same review, select defers them for the
/// review's own reason (the review is asked first); given only `baselines.json`, for the
/// baseline's.
#[test]
fn a_candidate_the_review_held_back_from_verification_is_deferred_by_the_review_first() {
    let baselines = parse_baselines(
        r#"{"candidates": [
            {"id": "a", "status": "verified", "reason": null},
            {"id": "b", "status": "deferred",
             "reason": {"code": "not-proceeding", "message": "the review judged it a duplicate"}}]}"#,
    )
    .unwrap();
    let mut reviewed = World::with_candidates(&[("a", "f"), ("b", "g")]).review(serde_json::json!(
        {"decisions": [
            {"candidate-id": "a", "decision": "proceed", "family": "f", "pull-requests": [], "reason": ""},
            {"candidate-id": "b", "decision": "duplicate", "family": "g", "pull-requests": [7], "reason": ""}
        ]}
    ));
    reviewed.baselines = Some(baselines.clone());
    let plan = reviewed.decide();
    assert_eq!(
        decisions(&plan),
        [("a", Decision::Selected), ("b", Decision::ReviewDuplicate)]
    );
    let mut unreviewed = World::with_candidates(&[("a", "f"), ("b", "g")]);
    unreviewed.baselines = Some(baselines);
    let plan = unreviewed.decide();
    let b = decision_of(&plan, "b");
    assert_eq!(b.decision, Decision::BaselineDeferred);
    assert_eq!(
        b.reason.as_ref().unwrap().code,
        ReasonCode::Baseline(BaselineCode::Deferred(DeferralCode::NotProceeding))
    );
}

#[test]
fn the_baseline_code_of_an_invalid_review_is_spelled_as_selects_own() {
    assert_eq!(
        DeferralCode::InvalidReviewOutput.as_str(),
        Decision::InvalidReviewOutput.code()
    );
}

fn with_targets() -> World {
    let mut world = World::with_candidates(&[]);
    world.candidates = parse_candidates(
        r#"[{"id": "a", "family": "f", "targets": ["b200"]},
            {"id": "b", "family": "g", "targets": ["b200", "h100"]},
            {"id": "c", "family": "h"}]"#,
    )
    .unwrap();
    world
}

#[test]
fn a_candidate_with_an_ineligible_target_gets_no_capacity() {
    let mut world = with_targets();
    world.capacity = CapacityGate::Eligible(["b200".to_string()].into());
    let plan = world.decide();
    assert_eq!(
        decisions(&plan),
        [
            ("a", Decision::Selected),
            ("b", Decision::NoCapacity),
            ("c", Decision::Selected)
        ]
    );
    assert!(message_of(&plan, "b").contains("h100"));
    assert_eq!(plan.deferred_reason, None);
}

#[test]
fn a_failed_capacity_gate_admits_nothing_it_would_judge() {
    let mut world = with_targets().live("x", "h", 7);
    world.capacity = CapacityGate::Unavailable {
        message: "the capacity command exited with code 3".into(),
    };
    let plan = world.decide();
    assert_eq!(
        decisions(&plan),
        [
            ("a", Decision::CapacityUnavailable),
            ("b", Decision::CapacityUnavailable),
            ("c", Decision::Occupied)
        ]
    );
    assert_eq!(
        plan.deferred_reason,
        Some(SelectionDeferral::CapacityUnavailable)
    );
    assert!(plan.selected_ids().is_empty());
}
