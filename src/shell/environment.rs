//! The standard GitHub Actions variables klaud reads, captured once at start-up.
//!
//! This is the only module that reads the process environment (besides clap reading `KLAUD_*`
//! flags); everything else receives an [`Environment`].

#![allow(clippy::disallowed_methods)] // the sanctioned reader of the process environment

use std::ffi::OsString;
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
    /// `GH_TOKEN`: the token `gh` and the agent use (the Stop hook reads with it).
    pub gh_token: Option<String>,
    pub github_repository: Option<String>,
    pub github_run_id: Option<String>,
    pub github_run_attempt: Option<String>,
    /// REST base (`GITHUB_API_URL`); GitHub Enterprise Server sets its own.
    pub github_api_url: Option<String>,
    /// `GITHUB_SERVER_URL`: where pull requests are shown (`https://github.com`).
    pub github_server_url: Option<String>,
    pub github_graphql_url: Option<String>,
    /// The event payload (`GITHUB_EVENT_PATH`), read by modes that react to an event.
    pub github_event_path: Option<PathBuf>,
    /// `GITHUB_WORKSPACE`, the default `repo-path` of verify-baselines.
    pub github_workspace: Option<PathBuf>,
    /// `PATH`, `HOME`, `LANG` and `TMPDIR` (those set): all a scrubbed child inherits.
    pub scrubbed_child_base: Vec<(OsString, OsString)>,
}

impl Environment {
    pub fn capture() -> Self {
        Environment {
            in_github_actions: variable("GITHUB_ACTIONS").as_deref() == Some("true"),
            github_output: variable("GITHUB_OUTPUT").map(PathBuf::from),
            github_step_summary: variable("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            runner_temp: variable("RUNNER_TEMP").map(PathBuf::from),
            github_token: variable("GITHUB_TOKEN"),
            gh_token: variable("GH_TOKEN"),
            github_repository: variable("GITHUB_REPOSITORY"),
            github_run_id: variable("GITHUB_RUN_ID"),
            github_run_attempt: variable("GITHUB_RUN_ATTEMPT"),
            github_api_url: variable("GITHUB_API_URL"),
            github_server_url: variable("GITHUB_SERVER_URL"),
            github_graphql_url: variable("GITHUB_GRAPHQL_URL"),
            github_event_path: variable("GITHUB_EVENT_PATH").map(PathBuf::from),
            github_workspace: variable("GITHUB_WORKSPACE").map(PathBuf::from),
            scrubbed_child_base: present(&SCRUBBED_CHILD_BASE),
        }
    }

    /// The token in an agent's environment: `GH_TOKEN`, else `GITHUB_TOKEN`.
    pub fn agent_token(&self) -> Option<String> {
        self.gh_token
            .clone()
            .filter(|token| !token.is_empty())
            .or_else(|| self.github_token.clone().filter(|token| !token.is_empty()))
    }

    /// The whole environment of a child that must not see klaud's secrets (the producer, and git
    /// acting for it): [`Environment::scrubbed_child_base`] plus the named variables that are set.
    pub fn scrubbed_child_environment(&self, pass_env: &[String]) -> Vec<(OsString, OsString)> {
        let mut variables = self.scrubbed_child_base.clone();
        let extra: Vec<&str> = pass_env
            .iter()
            .map(String::as_str)
            .filter(|name| {
                !variables
                    .iter()
                    .any(|(known, _)| known.as_os_str() == std::ffi::OsStr::new(name))
            })
            .collect();
        variables.extend(present(&extra));
        variables
    }

    /// The default work directory: `$RUNNER_TEMP/klaud`, else `klaud` in the system temp dir.
    pub fn default_directory(&self) -> PathBuf {
        self.runner_temp
            .clone()
            .unwrap_or_else(std::env::temp_dir)
            .join("klaud")
    }
}

/// What a scrubbed child keeps of klaud's environment.
pub const SCRUBBED_CHILD_BASE: [&str; 4] = ["PATH", "HOME", "LANG", "TMPDIR"];

/// The named variables that are set, with their values.
fn present(names: &[&str]) -> Vec<(OsString, OsString)> {
    names
        .iter()
        .filter(|name| !name.is_empty() && !name.contains('='))
        .filter_map(|name| std::env::var_os(name).map(|value| (OsString::from(name), value)))
        .collect()
}

/// A variable's value; unset and empty are the same.
fn variable(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}
