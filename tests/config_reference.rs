//! `docs/configuration.md` against the published configuration schema
//! (`dist/schema/klaud-config.schema.json`, which `tests/published_schemas.rs` holds to the code):
//! every key of the schema has a row in the reference table with the schema's type and default,
//! and every row names a key of the schema. The failure names the key and the row to write.

use std::collections::BTreeMap;
use std::path::Path;

use klaud::shell::config::{Config, parse_config};
use serde_json::Value;

const PAGE: &str = "docs/configuration.md";
const SCHEMA: &str = "dist/schema/klaud-config.schema.json";
const HEADER: &str = "| key | type | default | meaning |";

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// One documented key: its type and default cells as written.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    kind: String,
    default: String,
}

/// The reference table of the page, by key (a key twice fails).
fn documented_rows(page: &str) -> BTreeMap<String, Row> {
    let table = page
        .split(HEADER)
        .nth(1)
        .unwrap_or_else(|| panic!("{PAGE} has a table headed `{HEADER}`"));
    let mut rows = BTreeMap::new();
    for line in table
        .lines()
        .skip(2) // the rest of the header line and the separator
        .take_while(|line| line.starts_with('|'))
    {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split(" | ")
            .map(str::trim)
            .collect();
        assert!(cells.len() >= 4, "{PAGE}: four cells: {line}");
        let key = cells[0]
            .strip_prefix('`')
            .and_then(|key| key.strip_suffix('`'))
            .unwrap_or_else(|| panic!("{PAGE}: the key is one code span: {line}"));
        let row = Row {
            kind: cells[1].to_string(),
            default: cells[2].to_string(),
        };
        assert!(
            rows.insert(key.to_string(), row).is_none(),
            "{PAGE} documents `{key}` twice"
        );
    }
    assert!(!rows.is_empty(), "{PAGE}: the table has rows");
    rows
}

/// A schema object with its `$ref` (into `$defs`) resolved.
fn resolved<'a>(schema: &'a Value, node: &'a Value) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let name = reference
                .strip_prefix("#/$defs/")
                .unwrap_or_else(|| panic!("a local $ref: {reference}"));
            &schema["$defs"][name]
        }
        None => node,
    }
}

/// How the page writes a schema type.
fn kind(node: &Value) -> String {
    let types: Vec<&str> = match &node["type"] {
        Value::String(one) => vec![one.as_str()],
        Value::Array(several) => several.iter().filter_map(Value::as_str).collect(),
        other => panic!("a property without a type: {other}"),
    };
    let name = |single: &str| match single {
        "array" => format!("list of {}", plural(&kind(&node["items"]))),
        "object" => format!("map of {}", plural(&kind(&node["additionalProperties"]))),
        other => other.to_string(),
    };
    types
        .iter()
        .map(|single| name(single))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// A type named as several: its first word in the plural (`strings`, `maps of strings`).
fn plural(kind: &str) -> String {
    match kind.split_once(' ') {
        Some((first, rest)) => format!("{first}s {rest}"),
        None => format!("{kind}s"),
    }
}

/// How the page writes a default: a string as itself, anything else as compact JSON, each in one
/// code span; `none` when the schema gives no default.
fn shown(default: Option<&Value>) -> String {
    match default {
        None => "none".to_string(),
        Some(Value::String(text)) => format!("`{text}`"),
        Some(other) => format!("`{other}`"),
    }
}

/// Every key of the schema that holds a value (not a section of keys), dotted, with the row the
/// page should have for it. A key's default is its own, else the one its section's default gives.
fn schema_rows(schema: &Value) -> BTreeMap<String, Row> {
    fn walk(
        schema: &Value,
        node: &Value,
        prefix: &str,
        inherited: Option<&Value>,
        rows: &mut BTreeMap<String, Row>,
    ) {
        let node = resolved(schema, node);
        let properties = node["properties"]
            .as_object()
            .expect("a section has properties");
        for (name, property) in properties {
            let key = format!("{prefix}{name}");
            let default = property
                .get("default")
                .or_else(|| inherited.and_then(|section| section.get(name)));
            let target = resolved(schema, property);
            if target.get("properties").is_some() {
                walk(schema, property, &format!("{key}."), default, rows);
            } else {
                rows.insert(
                    key,
                    Row {
                        kind: kind(target),
                        default: shown(default),
                    },
                );
            }
        }
    }
    let mut rows = BTreeMap::new();
    walk(schema, schema, "", None, &mut rows);
    rows
}

#[test]
fn every_schema_key_is_documented_with_its_type_and_default_and_nothing_else_is() {
    let schema: Value = serde_json::from_str(&read(SCHEMA)).expect("the schema is JSON");
    let expected = schema_rows(&schema);
    let documented = documented_rows(&read(PAGE));
    assert!(
        expected.len() >= 30,
        "the schema is read whole: {expected:?}"
    );
    let mut problems = Vec::new();
    for (key, row) in &expected {
        match documented.get(key) {
            None => problems.push(format!(
                "{PAGE} does not document `{key}` (in {SCHEMA}): add the row \
                 | `{key}` | {} | {} | <meaning> |",
                row.kind, row.default
            )),
            Some(written) if written != row => problems.push(format!(
                "{PAGE} documents `{key}` as | {} | {} |; {SCHEMA} says | {} | {} |",
                written.kind, written.default, row.kind, row.default
            )),
            Some(_) => {}
        }
    }
    for key in documented.keys() {
        if !expected.contains_key(key) {
            problems.push(format!(
                "{PAGE} documents `{key}`, which is not a key of {SCHEMA}: remove or rename its row"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_defaults_written_out_on_the_page_are_the_defaults() {
    let page = read(PAGE);
    let block = page
        .split("## The defaults written out")
        .nth(1)
        .and_then(|section| section.split("```yaml\n").nth(1))
        .and_then(|block| block.split("```").next())
        .unwrap_or_else(|| panic!("{PAGE} has a yaml block under \"The defaults written out\""));
    let parsed = parse_config(block).unwrap_or_else(|error| panic!("{PAGE}'s defaults: {error:?}"));
    assert_eq!(
        parsed,
        Config::default(),
        "{PAGE}'s defaults are not the defaults"
    );
}
