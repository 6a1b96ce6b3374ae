//! `select`'s inputs as validated data, read before anything is asked of GitHub: the candidates
//! file, `baselines.json` and the run identity are bad input (exit 2) when wrong; the review is
//! an upstream step's output, so a bad one only defers the selection (read as
//! `verify-baselines` reads it: `shell::modes::review_input`).

use std::path::Path;

use crate::core::candidate::{Candidate, parse_candidates};
use crate::core::select::SelectingRun;
use crate::core::select::baselines::{BaselineVerdicts, parse_baselines};
use crate::core::select::review::ReviewInput;
use crate::shell::cli::SelectArgs;
use crate::shell::environment::Environment;
use crate::shell::error::StepError;
use crate::shell::modes::review_input::review_input;

/// Everything `select` was asked to decide on.
#[derive(Debug)]
pub struct SelectionRequest {
    pub candidates: Vec<Candidate>,
    pub review: ReviewInput,
    pub baselines: Option<BaselineVerdicts>,
    pub run: SelectingRun,
}

/// Reads and validates the inputs; bad input is a [`StepError::BadInput`] naming the field.
pub fn read_inputs(
    arguments: &SelectArgs,
    environment: &Environment,
    dry_run: bool,
) -> Result<SelectionRequest, StepError> {
    let candidates_path = arguments
        .candidates
        .as_ref()
        .ok_or_else(|| StepError::bad_input("candidates", "required by select"))?;
    let candidates = parse_candidates(&read_text(candidates_path, "candidates")?)
        .map_err(|error| StepError::bad_input(error.field, error.message))?;
    let baselines = match &arguments.baselines {
        None => None,
        Some(path) => Some(
            parse_baselines(&read_text(path, "baselines")?)
                .map_err(|error| StepError::bad_input(error.field, error.message))?,
        ),
    };
    let run = selecting_run(environment, dry_run)?;
    let review = review_input(arguments.review.as_deref(), &candidates);
    Ok(SelectionRequest {
        candidates,
        review,
        baselines,
        run,
    })
}

fn read_text(path: &Path, field: &str) -> Result<String, StepError> {
    std::fs::read_to_string(path).map_err(|error| {
        StepError::bad_input(field, format!("cannot read {}: {error}", path.display()))
    })
}

/// The planner run from `GITHUB_RUN_ID` and `GITHUB_RUN_ATTEMPT`. A dry run claims nothing,
/// so it may run without a run id (shown as run 0).
fn selecting_run(environment: &Environment, dry_run: bool) -> Result<SelectingRun, StepError> {
    let run_id = match environment.github_run_id.as_deref().map(str::trim) {
        Some(text) => text.parse::<u64>().map_err(|_| {
            StepError::bad_input("GITHUB_RUN_ID", format!("'{text}' is not a run id"))
        })?,
        None if dry_run => 0,
        None => {
            return Err(StepError::bad_input(
                "GITHUB_RUN_ID",
                "required: claims and sessions record the run that started them",
            ));
        }
    };
    let attempt = match environment.github_run_attempt.as_deref().map(str::trim) {
        None => 1,
        Some(text) => text
            .parse::<u32>()
            .ok()
            .filter(|attempt| *attempt >= 1)
            .ok_or_else(|| {
                StepError::bad_input(
                    "GITHUB_RUN_ATTEMPT",
                    format!("'{text}' is not a run attempt"),
                )
            })?,
    };
    Ok(SelectingRun { run_id, attempt })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_id_is_required_unless_nothing_is_claimed() {
        let mut environment = Environment::default();
        assert!(selecting_run(&environment, false).is_err());
        assert_eq!(
            selecting_run(&environment, true).unwrap(),
            SelectingRun {
                run_id: 0,
                attempt: 1
            }
        );
        environment.github_run_id = Some("123".into());
        environment.github_run_attempt = Some("2".into());
        assert_eq!(
            selecting_run(&environment, false).unwrap(),
            SelectingRun {
                run_id: 123,
                attempt: 2
            }
        );
        environment.github_run_attempt = Some("0".into());
        assert!(selecting_run(&environment, false).is_err());
        environment.github_run_id = Some("x".into());
        assert!(selecting_run(&environment, false).is_err());
    }
}
