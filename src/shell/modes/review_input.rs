//! The `review` input of `select` and `verify-baselines` (`--review`, `KLAUD_REVIEW`): either a
//! file path or the review JSON itself — a value whose first non-blank character is `{` or `[`
//! is JSON, anything else a path. The review is an upstream step's output, so a file that cannot
//! be read is an invalid review (it defers), not bad input; what a valid review is, is
//! `core::review`'s.

use crate::core::candidate::Candidate;
use crate::core::review::{ReviewInput, read_review};

/// The review from `--review`: absent, inline JSON, or a file.
pub fn review_input(value: Option<&str>, candidates: &[Candidate]) -> ReviewInput {
    let Some(value) = value.map(str::trim).filter(|value| !value.is_empty()) else {
        return ReviewInput::Absent;
    };
    if value.starts_with('{') || value.starts_with('[') {
        return read_review(value, candidates);
    }
    match std::fs::read_to_string(value) {
        Ok(text) => read_review(&text, candidates),
        Err(error) => ReviewInput::Invalid {
            message: format!("the review file cannot be read ({})", error.kind()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::candidate::parse_candidates;

    fn candidates() -> Vec<Candidate> {
        parse_candidates(r#"[{"id": "a", "family": "f"}]"#).unwrap()
    }

    const REVIEW: &str = r#"{"decisions": [{"candidate-id": "a", "decision": "proceed",
        "family": "f", "pull-requests": [], "reason": ""}]}"#;

    #[test]
    fn a_value_starting_with_a_brace_is_the_review_itself() {
        assert!(matches!(
            review_input(Some(&format!("  {REVIEW}")), &candidates()),
            ReviewInput::Decisions(_)
        ));
    }

    #[test]
    fn any_other_value_is_a_file_and_an_unreadable_file_is_an_invalid_review() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("review.json");
        std::fs::write(&path, REVIEW).unwrap();
        assert!(matches!(
            review_input(path.to_str(), &candidates()),
            ReviewInput::Decisions(_)
        ));
        let missing = directory.path().join("missing.json");
        assert!(review_input(missing.to_str(), &candidates()).is_invalid());
    }

    #[test]
    fn no_value_or_a_blank_one_is_no_review() {
        assert_eq!(review_input(None, &candidates()), ReviewInput::Absent);
        assert_eq!(review_input(Some("  "), &candidates()), ReviewInput::Absent);
    }
}
