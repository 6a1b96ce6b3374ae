//! The published JSON Schemas (`.github/klaud.yml`, `ledger.json`) stay current with the code.
//! Regenerate them with `KLAUD_UPDATE_SCHEMAS=1 cargo test --test published_schemas`.

#![allow(clippy::disallowed_methods)] // reads KLAUD_UPDATE_SCHEMAS

use klaud::core::ledger::{Ledger, ledger_schema};
use klaud::shell::config::{Config, config_schema, parse_config};

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
        2,
        "the document version this release writes"
    );
}
