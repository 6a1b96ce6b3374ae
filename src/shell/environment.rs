//! The standard GitHub Actions variables klaud reads, captured once at start-up.
//!
//! This is the only module that reads the process environment (besides clap reading `KLAUD_*`
//! flags); everything else receives an [`Environment`].

#![allow(clippy::disallowed_methods)] // the sanctioned reader of the process environment

use std::path::PathBuf;

/// The process environment as klaud uses it.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// `GITHUB_ACTIONS=true`: workflow commands and output files are in use.
    pub in_github_actions: bool,
    pub github_output: Option<PathBuf>,
    pub github_step_summary: Option<PathBuf>,
    pub runner_temp: Option<PathBuf>,
    /// `GITHUB_TOKEN`, the fallback when no `github-token` was given.
    pub github_token: Option<String>,
    pub github_repository: Option<String>,
    pub github_run_id: Option<String>,
}

impl Environment {
    pub fn capture() -> Self {
        Environment {
            in_github_actions: variable("GITHUB_ACTIONS").as_deref() == Some("true"),
            github_output: variable("GITHUB_OUTPUT").map(PathBuf::from),
            github_step_summary: variable("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            runner_temp: variable("RUNNER_TEMP").map(PathBuf::from),
            github_token: variable("GITHUB_TOKEN"),
            github_repository: variable("GITHUB_REPOSITORY"),
            github_run_id: variable("GITHUB_RUN_ID"),
        }
    }

    /// The default work directory: `$RUNNER_TEMP/klaud`, else `klaud` in the system temp dir.
    pub fn default_directory(&self) -> PathBuf {
        self.runner_temp
            .clone()
            .unwrap_or_else(std::env::temp_dir)
            .join("klaud")
    }
}

/// A variable's value; unset and empty are the same.
fn variable(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}
