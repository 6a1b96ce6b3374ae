//! The agent's execution record (contract §10): claude-code-action's `execution_file` (a JSON
//! array of every message of the agent loop, its `result` message last) or the agent CLI's
//! `--output-format json` result (that one `result` object). `finish` keeps what the result
//! says about how the agent ended and what it cost, in `finish.json` and in the ledger's
//! attempt; every field may be missing (the action's own samples carry only some). A result
//! with `is_error: true` is a failed run whatever its `subtype` says, and permission denials
//! are kept as a count per tool, never their inputs.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::text::bounded;

/// The longest subtype, terminal reason or tool name kept, in characters.
pub const RECORD_TEXT_LIMIT: usize = 80;
/// At most this many tools are named in `denials`; the denials of any further tools are counted
/// under [`OTHER_TOOLS`].
pub const DENIED_TOOLS_LIMIT: usize = 32;
/// The `denials` key of the tools past [`DENIED_TOOLS_LIMIT`].
pub const OTHER_TOOLS: &str = "(other tools)";

/// What the agent's result message says about one job: how the agent loop ended and what it
/// cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AgentRecord {
    /// What the agent run cost in US dollars (`total_cost_usd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Model turns of the agent loop (`num_turns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<u64>,
    /// Wall time of the agent loop in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// `success`, `error_max_turns`, `error_during_execution`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtype: Option<String>,
    /// True makes the run a failure whatever `subtype` says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `completed`, `max_turns`, `api_error`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal_reason: Option<String>,
    /// Permission denials counted per tool name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub denials: BTreeMap<String, u32>,
}

/// What a record says of the agent run as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentVerdict {
    /// A `success` result that is not an error.
    Succeeded,
    /// An error result, or a subtype other than `success`.
    Failed,
    /// The result says neither (no subtype, no error flag).
    Unknown,
}

impl AgentVerdict {
    pub fn name(self) -> &'static str {
        match self {
            AgentVerdict::Succeeded => "succeeded",
            AgentVerdict::Failed => "failed",
            AgentVerdict::Unknown => "ended without a subtype",
        }
    }
}

/// The result subtype of an agent run the CLI stopped on its `--max-budget-usd` cap.
pub const MAX_BUDGET_SUBTYPE: &str = "error_max_budget_usd";

impl AgentRecord {
    /// The agent CLI stopped the run on its own cap (`--max-budget-usd`).
    pub fn stopped_on_budget(&self) -> bool {
        self.subtype.as_deref() == Some(MAX_BUDGET_SUBTYPE)
    }

    /// The agent loop ended well: a `success` result that is not an error.
    pub fn succeeded(&self) -> bool {
        self.verdict() == AgentVerdict::Succeeded
    }

    pub fn verdict(&self) -> AgentVerdict {
        match (self.is_error, self.subtype.as_deref()) {
            (Some(true), _) => AgentVerdict::Failed,
            (_, Some("success")) => AgentVerdict::Succeeded,
            (_, Some(_)) => AgentVerdict::Failed,
            (_, None) => AgentVerdict::Unknown,
        }
    }

    /// Every permission denial, whatever the tool.
    pub fn denials_total(&self) -> u64 {
        self.denials.values().map(|count| u64::from(*count)).sum()
    }

    /// One line for logs and summaries: the verdict, subtype and terminal reason, turns, cost,
    /// duration and denials per tool.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "{} ({}, {}{})",
            self.verdict().name(),
            self.subtype.as_deref().unwrap_or("no subtype"),
            self.terminal_reason
                .as_deref()
                .unwrap_or("no terminal reason"),
            if self.is_error == Some(true) {
                ", is_error"
            } else {
                ""
            }
        );
        text.push_str(&match self.turns {
            Some(turns) => format!(", {turns} turns"),
            None => ", turns not reported".to_string(),
        });
        text.push_str(&match self.cost_usd {
            Some(cost) => format!(", ${cost:.4}"),
            None => ", cost not reported".to_string(),
        });
        if let Some(duration) = self.duration_ms {
            text.push_str(&format!(", {:.1} s", duration as f64 / 1000.0));
        }
        if !self.denials.is_empty() {
            let tools: Vec<String> = self
                .denials
                .iter()
                .map(|(tool, count)| format!("{tool} {count}"))
                .collect();
            text.push_str(&format!(
                ", {} permission denials ({})",
                self.denials_total(),
                tools.join(", ")
            ));
        }
        text
    }
}

/// Why an execution record says nothing usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecutionFileError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("neither a JSON array of messages nor a result object")]
    NotARecord,
    #[error("no result message (the agent loop did not end)")]
    NoResult,
}

/// The result message of an execution record: the last `result` of an array of messages, or
/// the one `result` object.
fn result_message(value: &Value) -> Result<&Value, ExecutionFileError> {
    let is_result = |message: &Value| message.get("type").and_then(Value::as_str) == Some("result");
    match value {
        Value::Array(messages) => messages
            .iter()
            .rev()
            .find(|message| is_result(message))
            .ok_or(ExecutionFileError::NoResult),
        Value::Object(_) if is_result(value) => Ok(value),
        Value::Object(_) => Err(ExecutionFileError::NoResult),
        _ => Err(ExecutionFileError::NotARecord),
    }
}

/// What the agent returned through `--json-schema`'s structured output (the outcome JSON the
/// candidate workflow asks for), when the record's result has one. A `StructuredOutput` call
/// ends the agent CLI's run whatever the Stop hook answers, so `finish` falls back on it when
/// the outcome file was not written. Never kept in the ledger.
pub fn read_structured_output(text: &str) -> Option<Value> {
    let value: Value = serde_json::from_str(text).ok()?;
    result_message(&value)
        .ok()?
        .get("structured_output")
        .filter(|output| output.is_object())
        .cloned()
}

/// Reads an execution record's text: an array of messages (the last `result` one counts) or
/// one `result` object.
pub fn read_execution_file(text: &str) -> Result<AgentRecord, ExecutionFileError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|error| ExecutionFileError::NotJson(bounded(&error.to_string(), 200)))?;
    let result = result_message(&value)?;
    let text = |key: &str| {
        result
            .get(key)
            .and_then(Value::as_str)
            .map(|text| bounded(text, RECORD_TEXT_LIMIT))
    };
    Ok(AgentRecord {
        cost_usd: result
            .get("total_cost_usd")
            .and_then(Value::as_f64)
            .filter(|cost| cost.is_finite() && *cost >= 0.0),
        turns: result.get("num_turns").and_then(Value::as_u64),
        duration_ms: result.get("duration_ms").and_then(Value::as_u64),
        subtype: text("subtype"),
        is_error: result.get("is_error").and_then(Value::as_bool),
        terminal_reason: text("terminal_reason"),
        denials: denials_per_tool(result.get("permission_denials")),
    })
}

/// `permission_denials` (`[{tool_name, tool_use_id, tool_input}]`) counted per tool name; the
/// inputs are never looked at. A denial without a tool name counts as `unnamed`.
fn denials_per_tool(denials: Option<&Value>) -> BTreeMap<String, u32> {
    let mut counts = BTreeMap::new();
    for denial in denials.and_then(Value::as_array).into_iter().flatten() {
        let tool = denial
            .get("tool_name")
            .and_then(Value::as_str)
            .map(|name| bounded(name, RECORD_TEXT_LIMIT))
            .unwrap_or_else(|| "unnamed".to_string());
        let key = if counts.contains_key(&tool) || counts.len() < DENIED_TOOLS_LIMIT {
            tool
        } else {
            OTHER_TOOLS.to_string()
        };
        let count: &mut u32 = counts.entry(key).or_default();
        *count = count.saturating_add(1);
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of the real agent CLI's data, in `tests/fixtures/claude-code/`.
    fn fixture(name: &str) -> String {
        let path = format!(
            "{}/tests/fixtures/claude-code/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
    }

    #[test]
    fn the_clis_json_result_is_one_object_and_is_read() {
        let record = read_execution_file(&fixture("result-success-tool-use.json")).unwrap();
        assert_eq!(record.subtype.as_deref(), Some("success"));
        assert_eq!(record.is_error, Some(false));
        assert_eq!(record.terminal_reason.as_deref(), Some("completed"));
        assert_eq!(record.turns, Some(2));
        assert_eq!(record.duration_ms, Some(677));
        assert_eq!(record.cost_usd, Some(0.00028000000000000003));
        assert!(record.denials.is_empty());
        assert!(record.succeeded());
        let blocked =
            read_execution_file(&fixture("result-success-after-stop-block.json")).unwrap();
        assert_eq!(blocked.turns, Some(2));
        assert_eq!(blocked.verdict(), AgentVerdict::Succeeded);
    }

    #[test]
    fn a_success_subtype_with_is_error_is_a_failed_run() {
        let record = read_execution_file(&fixture("stream-api-unreachable.json")).unwrap();
        assert_eq!(record.subtype.as_deref(), Some("success"));
        assert_eq!(record.is_error, Some(true));
        assert_eq!(record.terminal_reason.as_deref(), Some("api_error"));
        assert_eq!(record.cost_usd, Some(0.0));
        assert_eq!(record.verdict(), AgentVerdict::Failed);
        assert!(!record.succeeded());
        assert!(
            record
                .describe()
                .starts_with("failed (success, api_error, is_error")
        );
    }

    #[test]
    fn the_actions_execution_file_keeps_what_its_result_has() {
        let record =
            read_execution_file(&fixture("claude-code-action-execution-file-sample.json")).unwrap();
        assert_eq!(
            record,
            AgentRecord {
                cost_usd: Some(0.0347),
                duration_ms: Some(18750),
                ..AgentRecord::default()
            }
        );
        assert_eq!(record.verdict(), AgentVerdict::Unknown);
        assert_eq!(
            record.describe(),
            "ended without a subtype (no subtype, no terminal reason), turns not reported, $0.0347, 18.8 s"
        );
    }

    #[test]
    fn an_error_subtype_is_a_failed_run_without_is_error() {
        let record =
            read_execution_file(r#"{"type": "result", "subtype": "error_max_turns"}"#).unwrap();
        assert_eq!(record.verdict(), AgentVerdict::Failed);
    }

    #[test]
    fn permission_denials_are_counted_per_tool_and_their_inputs_dropped() {
        let record = read_execution_file(
            r#"{"type": "result", "subtype": "success", "permission_denials": [
                {"tool_name": "Bash", "tool_use_id": "t1", "tool_input": {"command": "rm -rf /secret-path"}},
                {"tool_name": "Write", "tool_use_id": "t2", "tool_input": {"file_path": "/etc/x"}},
                {"tool_name": "Bash", "tool_use_id": "t3", "tool_input": {"command": "curl x"}},
                {"tool_use_id": "t4"}
            ]}"#,
        )
        .unwrap();
        let expected: BTreeMap<String, u32> = [
            ("Bash".into(), 2),
            ("Write".into(), 1),
            ("unnamed".into(), 1),
        ]
        .into();
        assert_eq!(record.denials, expected);
        assert_eq!(record.denials_total(), 4);
        let json = serde_json::to_string(&record).unwrap();
        assert!(
            !json.contains("secret-path") && !json.contains("t1"),
            "{json}"
        );
        assert!(
            record
                .describe()
                .ends_with("4 permission denials (Bash 2, Write 1, unnamed 1)")
        );
    }

    #[test]
    fn denials_of_many_tools_fold_past_the_limit() {
        let denials: Vec<String> = (0..DENIED_TOOLS_LIMIT + 5)
            .map(|n| format!(r#"{{"tool_name": "tool-{n}"}}"#))
            .collect();
        let record = read_execution_file(&format!(
            r#"{{"type": "result", "permission_denials": [{}]}}"#,
            denials.join(",")
        ))
        .unwrap();
        assert_eq!(record.denials.len(), DENIED_TOOLS_LIMIT + 1);
        assert_eq!(record.denials[OTHER_TOOLS], 5);
        assert_eq!(record.denials_total(), DENIED_TOOLS_LIMIT as u64 + 5);
    }

    #[test]
    fn a_record_without_a_result_or_not_a_record_is_an_error() {
        assert_eq!(read_execution_file("[]"), Err(ExecutionFileError::NoResult));
        assert_eq!(
            read_execution_file(r#"{"type": "system"}"#),
            Err(ExecutionFileError::NoResult)
        );
        assert_eq!(
            read_execution_file("42"),
            Err(ExecutionFileError::NotARecord)
        );
        assert!(matches!(
            read_execution_file("x"),
            Err(ExecutionFileError::NotJson(_))
        ));
        let negative = read_execution_file(r#"{"type": "result", "total_cost_usd": -1}"#).unwrap();
        assert_eq!(negative.cost_usd, None);
    }
}
