//! The outcome file (contract §3a, §9): the JSON object an agent writes to report how its session
//! ended, its parser, and its published JSON Schema. The two are one definition: the schema is
//! built from the same names and limits the parser checks, and a test holds them to accepting the
//! same documents.
//!
//! An agent may report every outcome of contract §4 but `closed-by-maintainer` and `handoff`,
//! which klaud decides from GitHub; legacy names are read as their new names.

use serde_json::{Value, json};

use super::candidate::is_candidate_id;
use super::outcome::Outcome;

/// The largest number the file may carry for a pull request or run id (JSON's exact integers).
const LARGEST_NUMBER: u64 = (1 << 53) - 1;

/// The pattern of `phase` and `reason-code` ([`is_candidate_id`]): id characters only, since
/// they reach comments.
pub const CODE_PATTERN: &str = "^[A-Za-z0-9._-]{1,80}$";

/// A valid outcome file.
#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeFile {
    pub outcome: Outcome,
    pub phase: Option<String>,
    pub reason_code: Option<String>,
    pub pull_request: Option<u64>,
    pub run_ids: Vec<u64>,
}

/// Why an outcome file is not valid: `field` is the dotted name of the offending field
/// (`outcome-file` for the document as a whole).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct OutcomeFileError {
    pub field: String,
    pub message: String,
}

fn problem(field: &str, message: impl Into<String>) -> OutcomeFileError {
    OutcomeFileError {
        field: field.to_string(),
        message: message.into(),
    }
}

/// Whether an agent may report `outcome` (all but those klaud decides from GitHub).
pub fn agent_may_report(outcome: Outcome) -> bool {
    !matches!(outcome, Outcome::ClosedByMaintainer | Outcome::Handoff)
}

/// The outcomes an agent may report, in the contract's order.
pub fn reportable_outcomes() -> impl Iterator<Item = Outcome> {
    Outcome::ALL.into_iter().filter(|o| agent_may_report(*o))
}

/// Reads an outcome file's text.
pub fn parse_outcome_file(text: &str) -> Result<OutcomeFile, OutcomeFileError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|error| problem("outcome-file", format!("not JSON: {error}")))?;
    let Value::Object(object) = value else {
        return Err(problem("outcome-file", "must be a JSON object"));
    };
    let name = object
        .get("outcome")
        .and_then(Value::as_str)
        .ok_or_else(|| problem("outcome-file.outcome", "a string is required"))?;
    let outcome = Outcome::parse(name)
        .filter(|outcome| agent_may_report(*outcome))
        .ok_or_else(|| {
            let names: Vec<&str> = reportable_outcomes().map(Outcome::name).collect();
            problem(
                "outcome-file.outcome",
                format!(
                    "'{}' is not an outcome an agent may report (one of {})",
                    super::text::bounded(name, 80),
                    names.join(", ")
                ),
            )
        })?;
    let phase = optional_code(object.get("phase"), "outcome-file.phase")?;
    let reason_code = optional_code(object.get("reason-code"), "outcome-file.reason-code")?;
    let pull_request = match object.get("pull-request") {
        None | Some(Value::Null) => None,
        Some(value) => Some(whole_number(value).filter(|n| *n > 0).ok_or_else(|| {
            problem("outcome-file.pull-request", "must be a pull request number")
        })?),
    };
    let run_ids = match object.get("run-ids") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(ids)) => ids
            .iter()
            .map(|id| {
                whole_number(id)
                    .ok_or_else(|| problem("outcome-file.run-ids", "must be run ids (numbers)"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(problem(
                "outcome-file.run-ids",
                "must be an array of run ids",
            ));
        }
    };
    Ok(OutcomeFile {
        outcome,
        phase,
        reason_code,
        pull_request,
        run_ids,
    })
}

/// A JSON number that is a whole number from 0 to [`LARGEST_NUMBER`] (`5` and `5.0` alike, as
/// JSON Schema's `integer`).
fn whole_number(value: &Value) -> Option<u64> {
    let number = value.as_number()?;
    if let Some(whole) = number.as_u64() {
        return (whole <= LARGEST_NUMBER).then_some(whole);
    }
    let float = number.as_f64()?;
    (float.fract() == 0.0 && (0.0..=LARGEST_NUMBER as f64).contains(&float)).then_some(float as u64)
}

fn optional_code(value: Option<&Value>, field: &str) -> Result<Option<String>, OutcomeFileError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if is_candidate_id(text) => Ok(Some(text.clone())),
        Some(_) => Err(problem(field, format!("must match {CODE_PATTERN}"))),
    }
}

/// The outcome schema as the agent CLI's `--json-schema` takes it (`session`'s `outcome-schema`
/// output, in compact form): [`outcome_schema`] without `$schema`. The CLI (2.1.282) compiles
/// the schema with a validator that has no 2020-12 meta-schema and refuses to run with one
/// naming it ("--json-schema is not a valid JSON Schema: no schema with key or ref …"); the
/// keywords the schema uses mean the same in the draft it assumes.
pub fn structured_output_schema() -> Value {
    let mut schema = outcome_schema();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
    }
    schema
}

/// The published JSON Schema of the outcome file (`dist/schema/klaud-outcome.schema.json`).
pub fn outcome_schema() -> Value {
    let names: Vec<&str> = reportable_outcomes()
        .flat_map(|o| std::iter::once(o.name()).chain(o.legacy_names().iter().copied()))
        .collect();
    let meanings: Vec<String> = reportable_outcomes()
        .map(|o| format!("{}: {}", o.name(), o.meaning()))
        .collect();
    let code = json!({"type": ["string", "null"], "pattern": CODE_PATTERN});
    let number = json!({"type": "integer", "minimum": 0, "maximum": LARGEST_NUMBER});
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "klaud outcome file",
        "description": "How an agent's session ended. Written by the agent at the path session's outcome-file names; read by finish and by the Stop hook.",
        "type": "object",
        "required": ["outcome"],
        "properties": {
            "outcome": {
                "description": format!("How the session ended (legacy names are read as their new names). {}", meanings.join("; ")),
                "enum": names,
            },
            "phase": merged(&code, "The phase the session reached, e.g. smoke or sweep."),
            "reason-code": merged(&code, "A short code saying why, shown in the receipt."),
            "pull-request": {
                "description": "The session's pull request number.",
                "type": ["integer", "null"],
                "minimum": 1,
                "maximum": LARGEST_NUMBER,
            },
            "run-ids": {
                "description": "The smoke and sweep runs the session started.",
                "type": ["array", "null"],
                "items": number,
            },
        },
    })
}

fn merged(base: &Value, description: &str) -> Value {
    let mut value = base.clone();
    value["description"] = json!(description);
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reportable_outcome_reads_and_those_klaud_decides_do_not() {
        for outcome in Outcome::ALL {
            let text = format!(r#"{{"outcome": "{}"}}"#, outcome.name());
            assert_eq!(
                parse_outcome_file(&text).map(|file| file.outcome).ok(),
                agent_may_report(outcome).then_some(outcome),
                "{outcome}"
            );
        }
        let error = parse_outcome_file(r#"{"outcome": "handoff"}"#).unwrap_err();
        assert_eq!(error.field, "outcome-file.outcome");
    }

    #[test]
    fn fields_are_named_when_they_are_wrong() {
        for (text, field) in [
            ("[]", "outcome-file"),
            ("{", "outcome-file"),
            (r#"{"outcome": 1}"#, "outcome-file.outcome"),
            (
                r#"{"outcome": "failed", "phase": "a b"}"#,
                "outcome-file.phase",
            ),
            (
                r#"{"outcome": "failed", "reason-code": ""}"#,
                "outcome-file.reason-code",
            ),
            (
                r#"{"outcome": "failed", "pull-request": 0}"#,
                "outcome-file.pull-request",
            ),
            (
                r#"{"outcome": "failed", "pull-request": 1.5}"#,
                "outcome-file.pull-request",
            ),
            (
                r#"{"outcome": "failed", "run-ids": [-1]}"#,
                "outcome-file.run-ids",
            ),
            (
                r#"{"outcome": "failed", "run-ids": 3}"#,
                "outcome-file.run-ids",
            ),
        ] {
            assert_eq!(parse_outcome_file(text).unwrap_err().field, field, "{text}");
        }
    }

    #[test]
    fn whole_numbers_are_read_as_json_schema_reads_integers() {
        let file = parse_outcome_file(
            r#"{"outcome": "validated", "pull-request": 7.0, "run-ids": [1, 2.0]}"#,
        )
        .unwrap();
        assert_eq!(file.pull_request, Some(7));
        assert_eq!(file.run_ids, [1, 2]);
        assert!(parse_outcome_file(r#"{"outcome": "validated", "pull-request": 1e300}"#).is_err());
    }
}
