//! One module per mode. Each reads as: gather facts → decide in `core` → report → act.

pub mod check_stop;
pub mod discover;
pub mod finish;
pub mod install_cli;
pub mod note;
pub mod prepare_review;
pub mod recover;
pub mod review_input;
pub mod select;
pub mod session;
pub mod status;
pub mod verify_baselines;
pub mod wake;
pub mod work_files;

use std::path::PathBuf;

use super::config::Config;
use super::environment::Environment;
use super::outputs::Reporter;
use crate::adapters::github::transport::RetryPolicy;
use crate::core::policy::Policy;

/// What every mode receives: validated common inputs, the configuration and the reporter.
#[derive(Debug)]
pub struct StepContext {
    pub environment: Environment,
    pub reporter: Reporter,
    pub config: Config,
    /// The configuration and inputs, typed for decisions.
    pub policy: Policy,
    /// Work directory for JSON result files.
    pub directory: PathBuf,
    /// Compute and print the plan, write nothing to GitHub.
    pub dry_run: bool,
    /// Default cooldown in days.
    pub cooldown_days: f64,
    /// Cap on concurrent sessions.
    pub max_candidates: u32,
    /// The bot's token (already masked), if any.
    pub github_token: Option<String>,
    /// How the step's GitHub clients retry and wait (the default outside tests).
    pub retry: RetryPolicy,
}
