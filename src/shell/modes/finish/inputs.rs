//! `finish`'s inputs, checked before any request: the candidate id, the outcome (flag or
//! outcome file, legacy names accepted), the agent step's outcome and the optional details of
//! the outcome file. Text that reaches the receipt comment is limited to id characters. The
//! outcome file is the agent's: when it is missing or malformed the session records `no-outcome`.

use std::path::Path;

use crate::core::candidate::{CANDIDATE_ID_PATTERN, is_candidate_id as is_id};
use crate::core::outcome::Outcome;
use crate::core::outcome_file::parse_outcome_file;
use crate::shell::cli::FinishArgs;
use crate::shell::error::StepError;

/// The agent step outcomes GitHub reports (`steps.<id>.outcome`).
pub const AGENT_OUTCOMES: [&str; 4] = ["success", "failure", "cancelled", "skipped"];

/// `finish`'s inputs as plain data.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishInputs {
    pub candidate: String,
    pub outcome: Outcome,
    pub agent_outcome: String,
    pub park: bool,
    pub phase: Option<String>,
    pub pull_request: Option<u64>,
    pub run_ids: Vec<u64>,
    pub reason_code: Option<String>,
    /// Why the outcome file could not be used: it comes from the agent, so a missing or
    /// malformed one records `no-outcome` rather than failing the step.
    pub outcome_file_problem: Option<String>,
}

/// Reads and checks the inputs; anything wrong is bad input naming the field.
pub fn read_inputs(arguments: &FinishArgs) -> Result<FinishInputs, StepError> {
    let candidate = arguments
        .candidate
        .clone()
        .filter(|id| !id.is_empty())
        .ok_or_else(|| StepError::bad_input("candidate", "finish needs the candidate id"))?;
    if !is_id(&candidate) {
        return Err(StepError::bad_input(
            "candidate",
            format!("'{candidate}' does not match {CANDIDATE_ID_PATTERN}"),
        ));
    }
    let agent_outcome = arguments.agent_outcome.trim().to_ascii_lowercase();
    if !AGENT_OUTCOMES.contains(&agent_outcome.as_str()) {
        return Err(StepError::bad_input(
            "agent-outcome",
            format!(
                "'{agent_outcome}' is not one of {}",
                AGENT_OUTCOMES.join(", ")
            ),
        ));
    }
    let mut inputs = FinishInputs {
        candidate,
        outcome: Outcome::NoOutcome,
        agent_outcome,
        park: arguments.park,
        phase: None,
        pull_request: None,
        run_ids: Vec::new(),
        reason_code: None,
        outcome_file_problem: None,
    };
    let flag = arguments.outcome.as_deref().filter(|name| !name.is_empty());
    match (flag, &arguments.outcome_file) {
        (Some(_), Some(_)) => {
            return Err(StepError::bad_input(
                "outcome",
                "give --outcome or --outcome-file, not both",
            ));
        }
        (Some(name), None) => inputs.outcome = parse_outcome("outcome", name)?,
        (None, Some(path)) => {
            if let Err(problem) = read_outcome_file(path, &mut inputs) {
                inputs.outcome = Outcome::NoOutcome;
                inputs.phase = None;
                inputs.pull_request = None;
                inputs.run_ids.clear();
                inputs.reason_code = None;
                inputs.outcome_file_problem = Some(problem.to_string());
            }
        }
        (None, None) => {
            return Err(StepError::bad_input(
                "outcome",
                "finish needs --outcome or --outcome-file",
            ));
        }
    }
    Ok(inputs)
}

fn read_outcome_file(path: &Path, inputs: &mut FinishInputs) -> Result<(), StepError> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        StepError::bad_input(
            "outcome-file",
            format!("cannot read {}: {error}", path.display()),
        )
    })?;
    let file = parse_outcome_file(&text)
        .map_err(|error| StepError::bad_input(error.field, error.message))?;
    inputs.outcome = file.outcome;
    inputs.phase = file.phase;
    inputs.reason_code = file.reason_code;
    inputs.pull_request = file.pull_request;
    inputs.run_ids = file.run_ids;
    Ok(())
}

fn parse_outcome(field: &str, name: &str) -> Result<Outcome, StepError> {
    name.trim()
        .parse::<Outcome>()
        .map_err(|error| StepError::bad_input(field, error.to_string()))
}
