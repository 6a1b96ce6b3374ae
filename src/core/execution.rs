//! The agent's execution file (claude-code-action's `execution_file`): a JSON array of every
//! message of the agent loop, its `result` message last. `finish` keeps what the result says
//! about how the agent ended and what it cost; every field may be missing (the action's own
//! samples carry only some), and a `success` subtype with `is_error` is not a success.

use serde::Serialize;
use serde_json::Value;

/// What the execution file's result message says.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct AgentResult {
    /// `success`, `error_max_turns`, `error_during_execution`, …
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subtype: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `completed`, `max_turns`, `api_error`, …
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminal_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_turns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_cost_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// What the agent returned through `--json-schema`'s structured output (the outcome JSON the
    /// workflow asks for), when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<Value>,
}

impl AgentResult {
    /// The agent loop ended well: a `success` result that is not an error.
    pub fn succeeded(&self) -> bool {
        self.subtype.as_deref() == Some("success") && self.is_error != Some(true)
    }
}

/// Why an execution file says nothing usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecutionFileError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("not a JSON array of messages")]
    NotAnArray,
    #[error("no result message (the agent loop did not end)")]
    NoResult,
}

/// Reads the execution file's text.
pub fn read_execution_file(text: &str) -> Result<AgentResult, ExecutionFileError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|error| ExecutionFileError::NotJson(error.to_string()))?;
    let messages = value.as_array().ok_or(ExecutionFileError::NotAnArray)?;
    let result = messages
        .iter()
        .rev()
        .find(|message| message.get("type").and_then(Value::as_str) == Some("result"))
        .ok_or(ExecutionFileError::NoResult)?;
    let text = |key: &str| {
        result
            .get(key)
            .and_then(Value::as_str)
            .map(|text| super::text::bounded(text, 80))
    };
    Ok(AgentResult {
        subtype: text("subtype"),
        is_error: result.get("is_error").and_then(Value::as_bool),
        terminal_reason: text("terminal_reason"),
        num_turns: result.get("num_turns").and_then(Value::as_u64),
        total_cost_usd: result
            .get("total_cost_usd")
            .and_then(Value::as_f64)
            .filter(|cost| cost.is_finite() && *cost >= 0.0),
        duration_ms: result.get("duration_ms").and_then(Value::as_u64),
        structured_output: result
            .get("structured_output")
            .filter(|output| output.is_object())
            .cloned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_result_message_is_read_and_missing_fields_stay_missing() {
        let result = read_execution_file(
            r#"[{"type": "system"}, {"type": "result", "total_cost_usd": 0.0347, "duration_ms": 18750}]"#,
        )
        .unwrap();
        assert_eq!(result.total_cost_usd, Some(0.0347));
        assert_eq!(result.subtype, None);
        assert!(!result.succeeded());
        let failed = read_execution_file(
            r#"[{"type": "result", "subtype": "success", "is_error": true, "terminal_reason": "api_error"}]"#,
        )
        .unwrap();
        assert!(
            !failed.succeeded(),
            "a success subtype with is_error is not a success"
        );
        assert_eq!(read_execution_file("[]"), Err(ExecutionFileError::NoResult));
        assert_eq!(
            read_execution_file("{}"),
            Err(ExecutionFileError::NotAnArray)
        );
        assert!(matches!(
            read_execution_file("x"),
            Err(ExecutionFileError::NotJson(_))
        ));
    }
}
