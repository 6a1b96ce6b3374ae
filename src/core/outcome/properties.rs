//! Properties of the outcome names on generated text: reading is total over the public and
//! legacy names and exact outside them, and idempotent (what a name reads as reads back as
//! itself through its public name, `FromStr` and serde alike).

use proptest::prelude::*;

use super::*;

/// Every name that reads as an outcome: the public ones and the legacy ones.
fn known_names() -> Vec<&'static str> {
    Outcome::ALL
        .iter()
        .flat_map(|outcome| {
            std::iter::once(outcome.name()).chain(outcome.legacy_names().iter().copied())
        })
        .collect()
}

/// Known names, known names slightly changed (case, spaces, affixes) and arbitrary text.
fn name() -> impl Strategy<Value = String> {
    let known = proptest::sample::select(known_names());
    prop_oneof![
        known.clone().prop_map(str::to_string),
        known.clone().prop_map(str::to_ascii_uppercase),
        (
            known.clone(),
            prop_oneof![Just(" "), Just("\n"), Just("-"), Just("s"), Just("\u{0}")]
        )
            .prop_map(|(name, affix)| format!("{name}{affix}")),
        (known, prop_oneof![Just(" "), Just("legacy-"), Just("_")])
            .prop_map(|(name, affix)| format!("{affix}{name}")),
        any::<String>(),
        "[a-z-]{0,24}",
    ]
}

proptest! {
    // The layout has no place for a regressions directory: a failure prints its shrunk case,
    // which becomes a unit test.
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn reading_an_outcome_name_is_total_exact_and_idempotent(text in name()) {
        let known = known_names();
        let read = Outcome::parse(&text);
        // Total over the known names, and nothing else reads as an outcome.
        prop_assert_eq!(read.is_some(), known.contains(&text.as_str()), "{:?}", text);
        if let Some(outcome) = read {
            // Idempotent: the public name reads back as the same outcome, and is one of the
            // outcome's names.
            prop_assert_eq!(Outcome::parse(outcome.name()), Some(outcome));
            prop_assert!(outcome.name() == text || outcome.legacy_names().contains(&text.as_str()));
            // Every question the table answers has an answer for it.
            let _ = (outcome.default_cooldown(), outcome.status_label(), outcome.branch_on_cleanup());
        }
        // `FromStr` and serde read exactly as `parse` does, and write the public name.
        prop_assert_eq!(text.parse::<Outcome>().ok(), read);
        let from_json = serde_json::from_value::<Outcome>(serde_json::Value::String(text.clone()));
        prop_assert_eq!(from_json.as_ref().ok().copied(), read);
        if let Ok(outcome) = from_json {
            let written = serde_json::to_value(outcome).expect("an outcome serializes");
            prop_assert_eq!(written, serde_json::Value::String(outcome.name().to_string()));
        } else {
            let error = text.parse::<Outcome>().expect_err("an unknown name is an error");
            prop_assert_eq!(error.name, text);
        }
    }
}
