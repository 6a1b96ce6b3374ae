//! The published JSON Schema of `.github/klaud.yml` stays current with the code.
//! Regenerate it with `KLAUD_UPDATE_SCHEMAS=1 cargo test --test config_schema`.

#![allow(clippy::disallowed_methods)] // reads KLAUD_UPDATE_SCHEMAS

use klaud::shell::config::{config_schema, parse_config};

const SCHEMA_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/dist/schema/klaud-config.schema.json"
);

#[test]
fn the_published_config_schema_is_current() {
    let generated = serde_json::to_string_pretty(&config_schema()).unwrap() + "\n";
    if std::env::var_os("KLAUD_UPDATE_SCHEMAS").is_some() {
        std::fs::write(SCHEMA_PATH, &generated).unwrap();
    }
    let published = std::fs::read_to_string(SCHEMA_PATH).unwrap_or_default();
    assert!(
        published == generated,
        "{SCHEMA_PATH} is stale: run KLAUD_UPDATE_SCHEMAS=1 cargo test --test config_schema"
    );
}

#[test]
fn the_defaults_written_out_read_back_as_the_defaults() {
    let defaults = klaud::shell::config::Config::default();
    let text = serde_yaml_ng::to_string(&defaults).unwrap();
    assert_eq!(parse_config(&text).unwrap(), defaults);
}
