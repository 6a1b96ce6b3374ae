//! The planner's review, read against a fixed candidates file: any text is a valid review with
//! one decision per candidate, or an invalid one with a bounded message.
#![no_main]

use std::sync::LazyLock;

use klaud::core::candidate::{Candidate, parse_candidates};
use klaud::core::select::review::{ReviewInput, read_review};
use libfuzzer_sys::fuzz_target;

static CANDIDATES: LazyLock<Vec<Candidate>> = LazyLock::new(|| {
    parse_candidates(
        r#"[{"id": "mi355x-fp8", "family": "mi355x"},
            {"id": "mi355x-fp4", "family": "mi355x"},
            {"id": "b200-tp8", "family": "b200"}]"#,
    )
    .expect("the fixed candidates parse")
});

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match read_review(text, &CANDIDATES) {
        ReviewInput::Decisions(review) => {
            for candidate in CANDIDATES.iter() {
                assert!(
                    review.decision(&candidate.id).is_some(),
                    "a valid review decides {}",
                    candidate.id
                );
            }
        }
        ReviewInput::Invalid { message } => {
            assert!(!message.is_empty());
            assert!(message.chars().count() <= 301, "the message is bounded");
        }
        ReviewInput::Absent => panic!("review text is never read as no review"),
    }
});
