//! The catalog (contract §11): the public `latest-images` feed's rows — the newest published
//! image per observation — read into typed rows. A row missing a field or with one of the wrong
//! type is reported with the field names and skipped; extra fields are kept as published.

use chrono::NaiveDate;
use serde_json::{Map, Value};

use super::identity::identity;
use super::observation::{ObservationKey, normalise_image};

/// One valid catalog row.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogRow {
    /// Its place in the feed.
    pub index: usize,
    pub key: ObservationKey,
    pub date: NaiveDate,
    /// `identity` of the row as published: the tie-break between rows of one date.
    pub hash: String,
    /// The row exactly as published.
    pub published: Map<String, Value>,
}

/// A row that could not be read, with the fields at fault.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidRow {
    pub index: usize,
    pub fields: Vec<String>,
    pub published: Value,
}

/// The catalog's rows: the valid ones in feed order, and the invalid ones.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Catalog {
    pub rows: Vec<CatalogRow>,
    pub invalid: Vec<InvalidRow>,
}

/// Why the feed is no catalog at all (a failed discovery, never an empty one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the images feed is not a JSON array of rows (it is {found})")]
pub struct NotACatalog {
    pub found: &'static str,
}

/// Reads the feed's document.
pub fn read_catalog(document: &Value) -> Result<Catalog, NotACatalog> {
    let Value::Array(rows) = document else {
        return Err(NotACatalog {
            found: kind(document),
        });
    };
    let mut catalog = Catalog::default();
    for (index, value) in rows.iter().enumerate() {
        match read_row(index, value) {
            Ok(row) => catalog.rows.push(row),
            Err(invalid) => catalog.invalid.push(invalid),
        }
    }
    Ok(catalog)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// One row, or the names of its fields that are missing or of the wrong type.
fn read_row(index: usize, value: &Value) -> Result<CatalogRow, InvalidRow> {
    let invalid = |fields: Vec<String>| InvalidRow {
        index,
        fields,
        published: value.clone(),
    };
    let Value::Object(fields) = value else {
        return Err(invalid(vec!["(the row is not an object)".to_string()]));
    };
    let mut bad: Vec<String> = Vec::new();
    let mut text = |name: &str| match fields.get(name) {
        Some(Value::String(value)) if !value.is_empty() => value.clone(),
        _ => {
            bad.push(name.to_string());
            String::new()
        }
    };
    let model = text("model");
    let hardware = text("hardware");
    let framework = text("framework");
    let precision = text("precision");
    let spec_method = text("spec_method");
    let benchmark_type = text("benchmark_type");
    let image = text("image");
    let date_text = text("date");
    let disagg = match fields.get("disagg") {
        Some(Value::Bool(value)) => *value,
        _ => {
            bad.push("disagg".to_string());
            false
        }
    };
    let mut length = |name: &str| match fields.get(name) {
        Some(Value::Null) => None,
        Some(Value::Number(number)) if number.as_u64().is_some() => number.as_u64(),
        _ => {
            bad.push(name.to_string());
            None
        }
    };
    let isl = length("isl");
    let osl = length("osl");
    let date = NaiveDate::parse_from_str(&date_text, "%Y-%m-%d").ok();
    if date.is_none() && !bad.iter().any(|name| name == "date") {
        bad.push("date".to_string());
    }
    if !bad.is_empty() {
        return Err(invalid(bad));
    }
    Ok(CatalogRow {
        index,
        key: ObservationKey {
            model,
            hardware,
            framework,
            precision,
            spec_method,
            disagg,
            benchmark_type,
            isl,
            osl,
            image: normalise_image(&image),
        },
        date: date.expect("checked above"),
        hash: identity(value),
        published: fields.clone(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn row() -> Value {
        json!({"model": "dsr1", "hardware": "gb200", "framework": "dynamo-trt",
               "precision": "fp4", "spec_method": "none", "disagg": true, "isl": 1024,
               "osl": 1024, "benchmark_type": "single_turn",
               "image": "nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:0.5.1",
               "date": "2026-08-20", "extra": [1]})
    }

    #[test]
    fn a_row_is_read_with_its_image_normalised_and_kept_as_published() {
        let catalog = read_catalog(&json!([row()])).unwrap();
        let read = &catalog.rows[0];
        assert_eq!(
            read.key.image,
            "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.5.1"
        );
        assert_eq!(read.date, NaiveDate::from_ymd_opt(2026, 8, 20).unwrap());
        assert_eq!(Value::Object(read.published.clone()), row());
        assert!(catalog.invalid.is_empty());
    }

    #[test]
    fn agentic_rows_have_null_lengths() {
        let mut agentic = row();
        agentic["isl"] = Value::Null;
        agentic["osl"] = Value::Null;
        agentic["benchmark_type"] = json!("agentic_traces");
        let catalog = read_catalog(&json!([agentic])).unwrap();
        assert_eq!(catalog.rows[0].key.isl, None);
    }

    #[test]
    fn an_invalid_row_names_its_fields_and_the_others_go_on() {
        let mut wrong = row();
        wrong["disagg"] = json!(0);
        wrong["isl"] = json!(-1);
        wrong.as_object_mut().unwrap().remove("model");
        let mut bad_date = row();
        bad_date["date"] = json!("20 August");
        let catalog = read_catalog(&json!([wrong, 7, row(), bad_date])).unwrap();
        assert_eq!(catalog.rows.len(), 1);
        assert_eq!(catalog.rows[0].index, 2);
        let fields: Vec<Vec<String>> = catalog.invalid.iter().map(|r| r.fields.clone()).collect();
        assert_eq!(
            fields,
            [
                vec!["model".to_string(), "disagg".into(), "isl".into()],
                vec!["(the row is not an object)".to_string()],
                vec!["date".to_string()],
            ]
        );
    }

    #[test]
    fn a_feed_that_is_not_an_array_is_no_catalog() {
        assert_eq!(
            read_catalog(&json!({"rows": []})).unwrap_err().found,
            "an object"
        );
    }
}
