//! The candidates file (contract §3a): a JSON array of candidates, or `{"candidates": [...]}`.
//!
//! Parsed into plain data before anything else happens, so that every mode that reads it
//! (`verify-baselines`, `select`) rejects the same bad input the same way: exit 2 with the
//! offending field named as `candidates[<index>].<field>`. Unknown candidate fields are kept, in
//! order, and written back out unchanged by [`Candidate`]'s `Serialize`.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;
use serde_json::{Map, Value};

/// The glossary's candidate id pattern (contract §1).
pub const CANDIDATE_ID_PATTERN: &str = "[A-Za-z0-9._-]{1,80}";

static CANDIDATE_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^{CANDIDATE_ID_PATTERN}$")).expect("valid pattern"));

/// True when `text` matches [`CANDIDATE_ID_PATTERN`] (so it is also safe as a file name); also
/// the rule of the short codes that reach comments.
pub fn is_candidate_id(text: &str) -> bool {
    CANDIDATE_ID.is_match(text)
}

static COMMIT_SHA: LazyLock<Regex> =
    LazyLock::new(|| Regex::new("^[0-9a-fA-F]{40}$").expect("valid pattern"));

/// One proposed unit of agent work.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    pub id: String,
    /// What the candidate changes; at most one live session per family.
    pub family: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
    /// What the candidate needs to run (read by the capacity gate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub targets: Option<Vec<String>>,
    /// Fields klaud does not know, passed through unchanged.
    #[serde(flatten)]
    pub passthrough: Map<String, Value>,
}

/// A published baseline and the program that produced it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Baseline {
    pub producer: ProducerCall,
    /// Published result rows, as the publisher's API returns them.
    pub points: Vec<Map<String, Value>>,
}

/// How the producer was called: at which commit, with which arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ProducerCall {
    /// The producer's commit, 40 hexadecimal digits, lowercased.
    pub head: String,
    /// The argv after the producer entrypoint, without the no-evals flag.
    pub args: Vec<String>,
}

/// Why a candidates file is bad input; `field` is e.g. `candidates[2].baseline.producer.head`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct CandidatesError {
    pub field: String,
    pub message: String,
}

fn bad(field: impl Into<String>, message: impl Into<String>) -> CandidatesError {
    CandidatesError {
        field: field.into(),
        message: message.into(),
    }
}

/// Parses and validates the text of a candidates file.
pub fn parse_candidates(text: &str) -> Result<Vec<Candidate>, CandidatesError> {
    let document: Value = serde_json::from_str(text)
        .map_err(|error| bad("candidates", format!("not valid JSON: {error}")))?;
    let list = match document {
        Value::Array(list) => list,
        Value::Object(mut wrapper) => match wrapper.shift_remove("candidates") {
            Some(Value::Array(list)) => list,
            Some(_) => return Err(bad("candidates", "\"candidates\" must be an array")),
            None => {
                return Err(bad(
                    "candidates",
                    "expected a JSON array or an object with a \"candidates\" array",
                ));
            }
        },
        _ => {
            return Err(bad(
                "candidates",
                "expected a JSON array or an object with a \"candidates\" array",
            ));
        }
    };
    let mut first_index_of_id: BTreeMap<String, usize> = BTreeMap::new();
    let mut candidates = Vec::with_capacity(list.len());
    for (index, value) in list.into_iter().enumerate() {
        let candidate = parse_candidate(index, value)?;
        if let Some(first) = first_index_of_id.insert(candidate.id.clone(), index) {
            return Err(bad(
                format!("candidates[{index}].id"),
                format!(
                    "'{}' is also the id of candidates[{first}]; ids must be unique",
                    candidate.id
                ),
            ));
        }
        candidates.push(candidate);
    }
    Ok(candidates)
}

/// The most bytes a candidate's record may have: `select` keeps it beside the ledger on the
/// state branch for its session, and `session` gives it to the agent.
pub const RECORD_LIMIT_BYTES: usize = 65_536;

/// A record larger than [`RECORD_LIMIT_BYTES`] is bad input naming its largest field.
fn check_record_size(index: usize, value: &Value) -> Result<(), CandidatesError> {
    let size = value.to_string().len();
    if size <= RECORD_LIMIT_BYTES {
        return Ok(());
    }
    let largest = value.as_object().and_then(|fields| {
        fields
            .iter()
            .map(|(key, field)| (key, field.to_string().len()))
            .max_by_key(|(_, length)| *length)
    });
    let (field, detail) = match largest {
        Some((key, length)) => (
            format!("candidates[{index}].{key}"),
            format!(", {length} of them in this field"),
        ),
        None => (format!("candidates[{index}]"), String::new()),
    };
    Err(bad(
        field,
        format!(
            "the candidate's record is {size} bytes as JSON{detail}: a claimed candidate's record is kept for its session, at most {RECORD_LIMIT_BYTES} bytes"
        ),
    ))
}

fn parse_candidate(index: usize, value: Value) -> Result<Candidate, CandidatesError> {
    check_record_size(index, &value)?;
    let here = |field: &str| format!("candidates[{index}].{field}");
    let Value::Object(mut fields) = value else {
        return Err(bad(format!("candidates[{index}]"), "must be an object"));
    };
    let id = required_string(&mut fields, "id", &here("id"))?;
    if !is_candidate_id(&id) {
        return Err(bad(
            here("id"),
            format!("'{}' does not match {CANDIDATE_ID_PATTERN}", shorten(&id)),
        ));
    }
    let family = required_string(&mut fields, "family", &here("family"))?;
    if family.trim().is_empty() {
        return Err(bad(here("family"), "must not be empty"));
    }
    let base = optional_string(&mut fields, "base", &here("base"))?;
    let baseline = match fields.shift_remove("baseline") {
        None | Some(Value::Null) => None,
        Some(value) => Some(parse_baseline(value, &here("baseline"))?),
    };
    let targets = match fields.shift_remove("targets") {
        None | Some(Value::Null) => None,
        Some(value) => Some(string_list(value, &here("targets"))?),
    };
    Ok(Candidate {
        id,
        family,
        base,
        baseline,
        targets,
        passthrough: fields,
    })
}

fn parse_baseline(value: Value, path: &str) -> Result<Baseline, CandidatesError> {
    let Value::Object(mut fields) = value else {
        return Err(bad(path, "must be an object with producer and points"));
    };
    let producer_path = format!("{path}.producer");
    let Some(Value::Object(mut producer)) = fields.shift_remove("producer") else {
        return Err(bad(producer_path, "required: an object with head and args"));
    };
    let head = required_string(&mut producer, "head", &format!("{producer_path}.head"))?;
    if !COMMIT_SHA.is_match(&head) {
        return Err(bad(
            format!("{producer_path}.head"),
            format!("'{}' is not a 40-digit commit sha", shorten(&head)),
        ));
    }
    let args_path = format!("{producer_path}.args");
    let args = string_list(
        producer
            .shift_remove("args")
            .ok_or_else(|| bad(&args_path, "required: the argv after the entrypoint"))?,
        &args_path,
    )?;
    reject_unknown(&producer, &producer_path)?;
    let points_path = format!("{path}.points");
    let Some(Value::Array(rows)) = fields.shift_remove("points") else {
        return Err(bad(points_path, "required: an array of published rows"));
    };
    let points = rows
        .into_iter()
        .enumerate()
        .map(|(row, value)| match value {
            Value::Object(point) => Ok(point),
            _ => Err(bad(format!("{points_path}[{row}]"), "must be an object")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    reject_unknown(&fields, path)?;
    Ok(Baseline {
        producer: ProducerCall {
            head: head.to_ascii_lowercase(),
            args,
        },
        points,
    })
}

/// Inside `baseline` every field is klaud's: a stray key is most likely a misspelling.
fn reject_unknown(fields: &Map<String, Value>, path: &str) -> Result<(), CandidatesError> {
    match fields.keys().next() {
        Some(key) => Err(bad(format!("{path}.{key}"), "unknown field")),
        None => Ok(()),
    }
}

fn required_string(
    fields: &mut Map<String, Value>,
    name: &str,
    path: &str,
) -> Result<String, CandidatesError> {
    match fields.shift_remove(name) {
        Some(Value::String(text)) => Ok(text),
        None | Some(Value::Null) => Err(bad(path, "required")),
        Some(_) => Err(bad(path, "must be a string")),
    }
}

fn optional_string(
    fields: &mut Map<String, Value>,
    name: &str,
    path: &str,
) -> Result<Option<String>, CandidatesError> {
    match fields.shift_remove(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(bad(path, "must be a string")),
    }
}

fn string_list(value: Value, path: &str) -> Result<Vec<String>, CandidatesError> {
    let Value::Array(items) = value else {
        return Err(bad(path, "must be an array of strings"));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(position, item)| match item {
            Value::String(text) => Ok(text),
            _ => Err(bad(format!("{path}[{position}]"), "must be a string")),
        })
        .collect()
}

/// Echoes at most 100 characters of a rejected value.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(100) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const HEAD: &str = "843c6254ff69b567f772f6a5fd97675af3d04431";

    fn parse(value: Value) -> Result<Vec<Candidate>, CandidatesError> {
        parse_candidates(&value.to_string())
    }

    fn field_of_error(value: Value) -> String {
        parse(value).unwrap_err().field
    }

    #[test]
    fn a_bare_array_and_a_wrapped_array_are_the_same_candidates() {
        let list = json!([{"id": "a", "family": "f"}]);
        let wrapped = json!({"candidates": [{"id": "a", "family": "f"}]});
        assert_eq!(parse(list).unwrap(), parse(wrapped).unwrap());
    }

    #[test]
    fn a_full_candidate_is_read_into_typed_fields() {
        let candidates = parse(json!([{
            "id": "dsv4-fp4-b200-vllm.tune_1",
            "family": "configs/nvidia-master.yaml:dsv4-fp4-b200-vllm",
            "base": "main",
            "targets": ["b200"],
            "baseline": {
                "producer": {"head": HEAD.to_uppercase(), "args": ["test-config", "--config-keys", "k"]},
                "points": [{"hardware": "b200", "conc": 4}]
            }
        }]))
        .unwrap();
        let candidate = &candidates[0];
        assert_eq!(candidate.base.as_deref(), Some("main"));
        assert_eq!(
            candidate.targets.as_deref(),
            Some(&["b200".to_string()][..])
        );
        let baseline = candidate.baseline.as_ref().unwrap();
        assert_eq!(baseline.producer.head, HEAD, "heads are lowercased");
        assert_eq!(
            baseline.producer.args,
            ["test-config", "--config-keys", "k"]
        );
        assert_eq!(baseline.points[0]["conc"], json!(4));
    }

    #[test]
    fn unknown_fields_are_kept_in_order_and_written_back_unchanged() {
        let input = json!({"id": "a", "family": "f", "zeta": 1, "alpha": {"nested": true}});
        let candidate = parse(json!([input.clone()])).unwrap().remove(0);
        let keys: Vec<&String> = candidate.passthrough.keys().collect();
        assert_eq!(keys, ["zeta", "alpha"]);
        assert_eq!(serde_json::to_value(&candidate).unwrap(), input);
    }

    #[test]
    fn a_missing_id_or_family_names_the_field_and_the_index() {
        assert_eq!(
            field_of_error(json!([{"id": "a", "family": "f"}, {"family": "f"}])),
            "candidates[1].id"
        );
        assert_eq!(field_of_error(json!([{"id": "a"}])), "candidates[0].family");
        assert_eq!(
            field_of_error(json!([{"id": "a", "family": " "}])),
            "candidates[0].family"
        );
    }

    #[test]
    fn an_id_outside_the_glossary_pattern_is_bad_input() {
        for id in ["", "has space", "slash/id", &"x".repeat(81), "ü"] {
            let error = parse(json!([{"id": id, "family": "f"}])).unwrap_err();
            assert_eq!(error.field, "candidates[0].id", "{id:?}");
            assert!(
                error.message.contains(CANDIDATE_ID_PATTERN),
                "{}",
                error.message
            );
        }
        assert!(parse(json!([{"id": "A-z_0.9", "family": "f"}])).is_ok());
        assert!(parse(json!([{"id": "x".repeat(80), "family": "f"}])).is_ok());
    }

    #[test]
    fn a_repeated_id_is_bad_input_naming_both_places() {
        let error =
            parse(json!([{"id": "a", "family": "f"}, {"id": "a", "family": "g"}])).unwrap_err();
        assert_eq!(error.field, "candidates[1].id");
        assert!(error.message.contains("candidates[0]"), "{}", error.message);
    }

    #[test]
    fn a_baseline_needs_a_commit_head_string_args_and_object_points() {
        let with_baseline =
            |baseline: Value| json!([{"id": "a", "family": "f", "baseline": baseline}]);
        assert_eq!(
            field_of_error(with_baseline(json!({"points": []}))),
            "candidates[0].baseline.producer"
        );
        assert_eq!(
            field_of_error(with_baseline(
                json!({"producer": {"head": "abc", "args": []}, "points": []})
            )),
            "candidates[0].baseline.producer.head"
        );
        assert_eq!(
            field_of_error(with_baseline(
                json!({"producer": {"head": HEAD}, "points": []})
            )),
            "candidates[0].baseline.producer.args"
        );
        assert_eq!(
            field_of_error(with_baseline(
                json!({"producer": {"head": HEAD, "args": ["x", 1]}, "points": []})
            )),
            "candidates[0].baseline.producer.args[1]"
        );
        assert_eq!(
            field_of_error(with_baseline(
                json!({"producer": {"head": HEAD, "args": []}})
            )),
            "candidates[0].baseline.points"
        );
        assert_eq!(
            field_of_error(with_baseline(
                json!({"producer": {"head": HEAD, "args": []}, "points": [1]})
            )),
            "candidates[0].baseline.points[0]"
        );
        assert_eq!(
            field_of_error(with_baseline(
                json!({"producer": {"head": HEAD, "args": [], "argv": []}, "points": []})
            )),
            "candidates[0].baseline.producer.argv"
        );
    }

    #[test]
    fn null_optional_fields_count_as_absent() {
        let candidate = parse(
            json!([{"id": "a", "family": "f", "base": null, "baseline": null, "targets": null}]),
        )
        .unwrap()
        .remove(0);
        assert_eq!(candidate.base, None);
        assert_eq!(candidate.baseline, None);
        assert_eq!(candidate.targets, None);
        assert!(candidate.passthrough.is_empty());
    }

    #[test]
    fn targets_must_be_strings() {
        assert_eq!(
            field_of_error(json!([{"id": "a", "family": "f", "targets": ["b200", 2]}])),
            "candidates[0].targets[1]"
        );
    }

    #[test]
    fn documents_that_are_not_candidate_lists_are_bad_input() {
        for text in [
            "",
            "{",
            "3",
            "{\"items\": []}",
            "{\"candidates\": {}}",
            "[1]",
        ] {
            let error = parse_candidates(text).unwrap_err();
            assert!(error.field.starts_with("candidates"), "{text}: {error}");
        }
    }

    #[test]
    fn an_empty_list_is_valid() {
        assert_eq!(parse_candidates("[]").unwrap(), Vec::new());
    }
}
