//! The published JSON Schemas (`.github/klaud.yml`, `ledger.json`, the outcome file, `status.json`) stay
//! current with the code, and the outcome file's schema accepts exactly what its parser accepts.
//! Regenerate them with `KLAUD_UPDATE_SCHEMAS=1 cargo test --test published_schemas`.

#![allow(clippy::disallowed_methods)] // reads KLAUD_UPDATE_SCHEMAS

use klaud::core::ledger::{Ledger, ledger_schema};
use klaud::core::outcome::Outcome;
use klaud::core::outcome_file::{outcome_schema, parse_outcome_file};
use klaud::core::status::status_schema;
use klaud::shell::config::{Config, config_schema, parse_config};
use proptest::prelude::*;
use serde_json::{Value, json};

fn assert_published(file: &str, schema: serde_json::Value) {
    let path = format!("{}/dist/schema/{file}", env!("CARGO_MANIFEST_DIR"));
    let generated = serde_json::to_string_pretty(&schema).unwrap() + "\n";
    if std::env::var_os("KLAUD_UPDATE_SCHEMAS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let published = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        published == generated,
        "{path} is stale: run KLAUD_UPDATE_SCHEMAS=1 cargo test --test published_schemas"
    );
}

#[test]
fn the_published_config_schema_is_current() {
    assert_published("klaud-config.schema.json", config_schema());
}

#[test]
fn the_published_status_schema_is_current() {
    assert_published("klaud-status.schema.json", status_schema());
}

#[test]
fn the_published_ledger_schema_is_current() {
    assert_published("klaud-ledger.schema.json", ledger_schema());
}

#[test]
fn the_config_defaults_written_out_read_back_as_the_defaults() {
    let defaults = Config::default();
    let text = serde_yaml_ng::to_string(&defaults).unwrap();
    assert_eq!(parse_config(&text).unwrap(), defaults);
}

#[test]
fn the_ledger_schema_forbids_unknown_keys_and_names_the_version() {
    let schema = ledger_schema();
    assert_eq!(schema["additionalProperties"], serde_json::json!(false));
    assert!(
        schema["required"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("version"))
    );
    assert_eq!(
        Ledger::empty().version,
        5,
        "the document version this release writes"
    );
}

#[test]
fn the_published_outcome_schema_is_current() {
    assert_published("klaud-outcome.schema.json", outcome_schema());
}

/// Values a field of an outcome file may be given: valid ones, near misses and other types.
fn field_value() -> impl Strategy<Value = Value> {
    let outcome_names: Vec<Value> = Outcome::ALL
        .into_iter()
        .flat_map(|o| std::iter::once(o.name()).chain(o.legacy_names().iter().copied()))
        .map(|name| json!(name))
        .collect();
    prop_oneof![
        proptest::sample::select(outcome_names),
        Just(json!(" validated")),
        Just(json!("VALIDATED")),
        Just(Value::Null),
        Just(json!(true)),
        Just(json!(0)),
        Just(json!(1)),
        Just(json!(7.0)),
        Just(json!(1.5)),
        Just(json!(-3)),
        Just(json!(9_007_199_254_740_991_u64)),
        Just(json!(9_007_199_254_740_992_u64)),
        Just(json!(1e300)),
        Just(json!("")),
        Just(json!("smoke")),
        Just(json!("a b")),
        Just(json!("x".repeat(80))),
        Just(json!("x".repeat(81))),
        Just(json!("é")),
        Just(json!([])),
        Just(json!([1, 2])),
        Just(json!([1, -2])),
        Just(json!([1.0, "2"])),
        Just(json!({})),
    ]
}

fn outcome_document() -> impl Strategy<Value = Value> {
    let keys = [
        "outcome",
        "phase",
        "reason-code",
        "pull-request",
        "run-ids",
        "other",
    ];
    proptest::collection::vec(
        (proptest::sample::select(keys.to_vec()), field_value()),
        0..6,
    )
    .prop_map(|fields| {
        let mut object = serde_json::Map::new();
        for (key, value) in fields {
            object.insert(key.to_string(), value);
        }
        Value::Object(object)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn the_outcome_schema_accepts_exactly_what_the_parser_accepts(document in outcome_document()) {
        let validator = jsonschema::validator_for(&outcome_schema()).unwrap();
        let by_schema = validator.is_valid(&document);
        let by_parser = parse_outcome_file(&document.to_string());
        prop_assert_eq!(by_schema, by_parser.is_ok(), "{} → parser {:?}", document, by_parser);
    }
}

#[test]
fn the_outcome_schema_refuses_what_is_not_an_object() {
    let validator = jsonschema::validator_for(&outcome_schema()).unwrap();
    for text in ["[]", "1", "\"validated\"", "null"] {
        let value: Value = serde_json::from_str(text).unwrap();
        assert!(!validator.is_valid(&value), "{text}");
        assert!(parse_outcome_file(text).is_err(), "{text}");
    }
}
