//! The boundary error of a step and its documented exit code (contract §2).

/// Why a step did not finish with exit 0.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// Bad input, found before any write: exit 2. `field` names the input, flag or config key.
    #[error("{field}: {message}")]
    BadInput { field: String, message: String },
    /// The step could not do its job: exit 1.
    #[error("{0}")]
    Failed(String),
}

impl StepError {
    pub fn bad_input(field: impl Into<String>, message: impl Into<String>) -> Self {
        StepError::BadInput {
            field: field.into(),
            message: message.into(),
        }
    }

    pub fn failed(message: impl Into<String>) -> Self {
        StepError::Failed(message.into())
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            StepError::BadInput { .. } => EXIT_BAD_INPUT,
            StepError::Failed(_) => EXIT_FAILED,
        }
    }
}

/// The step did its job (including "nothing to do" and reported deferrals).
pub const EXIT_DONE: u8 = 0;
/// The step could not do its job.
pub const EXIT_FAILED: u8 = 1;
/// Bad input: nothing was written.
pub const EXIT_BAD_INPUT: u8 = 2;
