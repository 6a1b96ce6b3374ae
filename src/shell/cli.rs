//! The command line: `klaud <mode> [flags]`. Every flag is also read from
//! `KLAUD_<FLAG_IN_UPPER_SNAKE>`; a flag on the command line wins over its variable.
//!
//! Values are parsed into typed data here; what they mean is decided by the modes.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::core::install::parse_attempts;
use crate::shell::github::GitHubArgs;

/// Documented exit codes, shown by `--help`.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  step done (including \"nothing to do\" and reported deferrals)
  1  the step could not do its job (e.g. GitHub unavailable, install failed after every attempt)
  2  bad input (unknown mode, malformed config or flag value), found before any write";

/// What `--version` prints after `klaud `: the crate version, then the fingerprint of the sources
/// this binary was built from (build.rs), which action.yml compares with its checkout's before it
/// runs a prebuilt binary. `-V` prints the first line only.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\nsource-fingerprint ",
    env!("KLAUD_SOURCE_FINGERPRINT")
);

/// klaud: the control plane for autonomous agent sweeps. Each invocation runs one bounded step.
#[derive(Debug, Parser)]
#[command(
    name = "klaud",
    version,
    long_version = LONG_VERSION,
    after_help = EXIT_CODES_HELP,
    propagate_version = true,
    disable_help_subcommand = true,
    subcommand_help_heading = "Modes",
    subcommand_value_name = "MODE"
)]
pub struct Cli {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(subcommand)]
    pub mode: Mode,
}

/// Flags every mode accepts.
#[derive(Debug, Args)]
#[command(next_help_heading = "Common options")]
pub struct CommonArgs {
    /// Configuration file [default: .github/klaud.yml; a missing file means all defaults]
    #[arg(long, global = true, env = "KLAUD_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Work directory for JSON result files [default: $RUNNER_TEMP/klaud]
    #[arg(long, global = true, env = "KLAUD_DIRECTORY", value_name = "DIR")]
    pub directory: Option<PathBuf>,

    /// Compute and print the plan, write nothing to GitHub (true or false)
    #[arg(
        long,
        global = true,
        env = "KLAUD_DRY_RUN",
        value_name = "BOOL",
        num_args = 0..=1,
        default_missing_value = "true",
        value_parser = parse_bool
    )]
    pub dry_run: Option<bool>,

    /// Default cooldown in days for outcomes without their own (fractions allowed) [default: 1]
    #[arg(long, global = true, env = "KLAUD_COOLDOWN_DAYS", value_name = "DAYS", value_parser = parse_days, allow_negative_numbers = true)]
    pub cooldown_days: Option<f64>,

    /// Cap on concurrent sessions across all passes [default: 5]
    #[arg(long, global = true, env = "KLAUD_MAX_CANDIDATES", value_name = "N", value_parser = parse_positive, allow_negative_numbers = true)]
    pub max_candidates: Option<u32>,

    /// Token for the bot's identity [default: $GITHUB_TOKEN]; masked at start-up
    #[arg(
        long,
        global = true,
        env = "KLAUD_GITHUB_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub github_token: Option<String>,
}

/// One bounded step.
#[derive(Debug, Subcommand)]
pub enum Mode {
    /// Install the pinned agent CLI from npm into a private prefix and check its version
    InstallCli(InstallCliArgs),
    /// Re-run each candidate's baseline producer once per head and match every published point
    VerifyBaselines(VerifyBaselinesArgs),
    /// Choose the candidates to start under cooldowns, occupancy and the concurrent cap, and
    /// claim their families in the ledger
    Select(SelectArgs),
    /// Find candidates: render every master-config family with the repository's own generator,
    /// match its observations against the public image catalog, and write candidates.json and
    /// discovery.json (reads only)
    Discover(DiscoverArgs),
    /// Reconcile interrupted sessions, sweep abandoned work without touching a maintainer's, set
    /// status labels, release claims, delete legacy lock refs and resume parked sessions
    Recover(RecoverArgs),
    /// Record one session's outcome, post or refresh its completion receipt, set its status
    /// label and clean up per the outcome (never redrafting a closed pull request)
    Finish(FinishArgs),
    /// On a workflow_run event: when a klaud smoke or sweep run ended, dispatch one recovery
    /// pass of the planner workflow unless a pass that will see the ending is already pending
    Wake(WakeArgs),
    /// Write the evidence for the planner's overlap review: klaud's open pull requests with
    /// their changed files, and the review's JSON Schema
    PrepareReview(PrepareReviewArgs),
    /// Show the ledger and the live sessions (read-only)
    Status(StatusArgs),
    /// In the candidate job: adopt the candidate's live session for this job (or refuse, writing
    /// nothing) and write session.json, the agent CLI's settings and the outcome schema
    Session(SessionArgs),
    /// The agent CLI's hook: reads the hook's JSON on stdin and keeps the agent working until
    /// its outcome is valid; after tool calls, warns when the deadline is near (always exit 0)
    CheckStop(CheckStopArgs),
    /// Add an entry to the session's log: one comment on its pull request, updated in place,
    /// and the ledger's record of this job
    Note(NoteArgs),
}

impl Mode {
    /// The names of every mode, for error messages.
    pub fn names() -> Vec<String> {
        use clap::CommandFactory;
        Cli::command()
            .get_subcommands()
            .map(|command| command.get_name().to_string())
            .collect()
    }
}

#[derive(Debug, Args)]
pub struct InstallCliArgs {
    /// npm package of the CLI
    #[arg(
        long,
        env = "KLAUD_CLI_PACKAGE",
        value_name = "PACKAGE",
        default_value = "@anthropic-ai/claude-code"
    )]
    pub cli_package: String,

    /// Exact version to install, e.g. 2.1.282 (required: there is no silent "latest")
    #[arg(long, env = "KLAUD_CLI_VERSION", value_name = "VERSION")]
    pub cli_version: Option<String>,

    /// Attempts, each from a wiped prefix (a whole number of at least 1)
    #[arg(long, env = "KLAUD_CLI_ATTEMPTS", value_name = "N", default_value = "2", value_parser = parse_attempts, allow_negative_numbers = true)]
    pub cli_attempts: u32,

    /// Seconds one attempt's `npm install` may take before it is killed
    #[arg(long, env = "KLAUD_CLI_TIMEOUT", value_name = "SECONDS", default_value = "300", value_parser = parse_positive_u64)]
    pub cli_timeout: u64,

    /// Executable to check when the package declares several [default: the package's only one]
    #[arg(long, env = "KLAUD_CLI_BIN", value_name = "NAME")]
    pub cli_bin: Option<String>,

    /// The npm program
    #[arg(long, env = "KLAUD_NPM", value_name = "PROGRAM", default_value = "npm")]
    pub npm: String,
}

#[derive(Debug, Args)]
pub struct VerifyBaselinesArgs {
    /// Candidates file: a JSON array (or {"candidates": [...]}) of candidates (required)
    #[arg(long, env = "KLAUD_CANDIDATES", value_name = "FILE")]
    pub candidates: Option<PathBuf>,

    /// Repository whose history holds the producer heads [default: $GITHUB_WORKSPACE]
    #[arg(long, env = "KLAUD_REPO_PATH", value_name = "DIR")]
    pub repo_path: Option<PathBuf>,

    /// The overlap review, as select reads it: only candidates it lets proceed are verified, and
    /// discovered ones have their baseline looked up in the public feeds [default: every
    /// candidate counts as proceed]
    #[arg(long, env = "KLAUD_REVIEW", value_name = "FILE|JSON")]
    pub review: Option<String>,
}

#[derive(Debug, Args)]
pub struct DiscoverArgs {
    /// The repository checkout whose master configs and generator are read, at its HEAD
    /// [default: $GITHUB_WORKSPACE]
    #[arg(long, env = "KLAUD_REPO_PATH", value_name = "DIR")]
    pub repo_path: Option<PathBuf>,

    /// Directory of kept family renderings, reused while a family's master file, the runners
    /// file and the generator's sources are unchanged [default: <directory>/discovery-renderings]
    #[arg(long, env = "KLAUD_RENDER_CACHE", value_name = "DIR")]
    pub render_cache: Option<PathBuf>,

    #[command(flatten)]
    pub github: GitHubArgs,
}

#[derive(Debug, Args)]
pub struct SelectArgs {
    /// Candidates file: a JSON array (or {"candidates": [...]}) of candidates (required)
    #[arg(long, env = "KLAUD_CANDIDATES", value_name = "FILE")]
    pub candidates: Option<PathBuf>,

    /// The overlap review: a file, or the review JSON itself (a value starting with `{` or `[`)
    /// [default: every candidate counts as proceed]
    #[arg(long, env = "KLAUD_REVIEW", value_name = "FILE|JSON")]
    pub review: Option<String>,

    /// baselines.json written by verify-baselines: candidates not verified there are deferred
    #[arg(long, env = "KLAUD_BASELINES", value_name = "FILE")]
    pub baselines: Option<PathBuf>,

    #[command(flatten)]
    pub github: GitHubArgs,
}

#[derive(Debug, Args)]
pub struct RecoverArgs {
    #[command(flatten)]
    pub github: GitHubArgs,

    /// Keep the dashboard issue (`dashboard` in the configuration): read its ticks at the start of the pass, act on those of accounts
    /// with write, maintain or admin permission, and rewrite it when anything changed
    #[arg(long, env = "KLAUD_DASHBOARD", value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", default_value = "false", value_parser = parse_bool)]
    pub dashboard: bool,
}

#[derive(Debug, Args)]
pub struct FinishArgs {
    /// The candidate whose session ends (required)
    #[arg(long, env = "KLAUD_CANDIDATE", value_name = "ID")]
    pub candidate: Option<String>,

    /// The session's outcome (legacy names accepted); required without --outcome-file
    #[arg(long, env = "KLAUD_OUTCOME", value_name = "NAME")]
    pub outcome: Option<String>,

    /// JSON file {"outcome", "phase"?, "pull-request"?, "run-ids"?, "reason-code"?} written by
    /// the agent
    #[arg(long, env = "KLAUD_OUTCOME_FILE", value_name = "FILE")]
    pub outcome_file: Option<PathBuf>,

    /// The agent step's outcome: success, failure, cancelled or skipped (skipped: no cooldown)
    #[arg(
        long,
        env = "KLAUD_AGENT_OUTCOME",
        value_name = "OUTCOME",
        default_value = "success"
    )]
    pub agent_outcome: String,

    /// Leave the session parked (draft pull request, parked label) for recovery to resume
    #[arg(long, env = "KLAUD_PARK", value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", default_value = "false", value_parser = parse_bool)]
    pub park: bool,

    /// The agent's execution record (the agent action's execution file, a JSON array of messages
    /// with the result last, or the CLI's `--output-format json` result), when there is one: how
    /// the agent ended and what it cost go into finish.json and the ledger
    #[arg(long, env = "KLAUD_EXECUTION_FILE", value_name = "FILE")]
    pub execution_file: Option<PathBuf>,

    /// Seconds to wait for cancelled runs to end before reporting them pending
    #[arg(long, env = "KLAUD_CANCEL_WAIT", value_name = "SECONDS", default_value = "60", value_parser = parse_seconds)]
    pub cancel_wait: u64,

    #[command(flatten)]
    pub github: GitHubArgs,
}

#[derive(Debug, Args)]
pub struct SessionArgs {
    /// The candidate whose session this job runs (required)
    #[arg(long, env = "KLAUD_CANDIDATE", value_name = "ID")]
    pub candidate: Option<String>,

    #[command(flatten)]
    pub github: GitHubArgs,
}

#[derive(Debug, Args)]
pub struct CheckStopArgs {
    /// The session.json that `session` wrote (without it, every stop is blocked with why)
    #[arg(long, env = "KLAUD_CONTEXT_FILE", value_name = "FILE")]
    pub context_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct NoteArgs {
    /// The candidate whose session the note is about (required)
    #[arg(long, env = "KLAUD_CANDIDATE", value_name = "ID")]
    pub candidate: Option<String>,

    /// File holding the note's text (at most 4,000 characters are kept)
    #[arg(long, env = "KLAUD_TEXT_FILE", value_name = "FILE")]
    pub text_file: Option<PathBuf>,

    /// The note's text, instead of --text-file
    #[arg(long, env = "KLAUD_TEXT", value_name = "TEXT")]
    pub text: Option<String>,

    #[command(flatten)]
    pub github: GitHubArgs,
}

#[derive(Debug, Args)]
pub struct WakeArgs {
    /// Seconds to wait after a dispatch until GitHub lists the planner run it started, so that a
    /// wake right after this one sees it (0: look once)
    #[arg(long, env = "KLAUD_CONFIRM_TIMEOUT", value_name = "SECONDS", default_value = "30", value_parser = parse_seconds)]
    pub confirm_timeout: u64,

    #[command(flatten)]
    pub github: GitHubArgs,
}

#[derive(Debug, Args)]
pub struct PrepareReviewArgs {
    /// Candidates file: a JSON array (or {"candidates": [...]}) of candidates (required)
    #[arg(long, env = "KLAUD_CANDIDATES", value_name = "FILE")]
    pub candidates: Option<PathBuf>,

    #[command(flatten)]
    pub github: GitHubArgs,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub github: GitHubArgs,

    /// Keep the dashboard issue (`dashboard` in the configuration): create it or rewrite it from the ledger when the rendering
    /// changed (its ticks are kept for the next recovery pass, which acts on them)
    #[arg(long, env = "KLAUD_DASHBOARD", value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", default_value = "false", value_parser = parse_bool)]
    pub dashboard: bool,
}

fn parse_bool(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        other => Err(format!("'{other}' is not true or false")),
    }
}

fn parse_days(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(days) if days.is_finite() && days >= 0.0 => Ok(days),
        _ => Err(format!(
            "'{}' is not a number of days of at least 0",
            text.trim()
        )),
    }
}

fn parse_positive(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(value) if value >= 1 => Ok(value),
        _ => Err(format!(
            "'{}' is not a whole number of at least 1",
            text.trim()
        )),
    }
}

fn parse_seconds(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<u64>()
        .map_err(|_| format!("'{}' is not a whole number of seconds", text.trim()))
}

/// A whole number of at least 1 (a timeout, a request budget).
pub(crate) fn parse_positive_u64(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(value) if value >= 1 => Ok(value),
        _ => Err(format!(
            "'{}' is not a whole number of at least 1",
            text.trim()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn environment_name(flag: &str) -> String {
        format!("KLAUD_{}", flag.replace('-', "_").to_ascii_uppercase())
    }

    #[test]
    fn the_command_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_flag_of_every_mode_is_also_an_environment_variable() {
        let command = Cli::command();
        let mut commands = vec![&command];
        commands.extend(command.get_subcommands());
        for command in commands {
            for argument in command.get_arguments() {
                let Some(flag) = argument.get_long() else {
                    continue;
                };
                if matches!(flag, "help" | "version") {
                    continue;
                }
                let variable = argument
                    .get_env()
                    .map(|name| name.to_string_lossy().into_owned());
                assert_eq!(
                    variable,
                    Some(environment_name(flag)),
                    "--{flag} of {}",
                    command.get_name()
                );
            }
        }
    }

    #[test]
    fn numbers_are_validated_at_parse_time() {
        assert!(parse_days("0.5").is_ok());
        assert!(parse_days("-1").is_err());
        assert!(parse_days("NaN").is_err());
        assert!(parse_positive("0").is_err());
        assert!(parse_positive("5").is_ok());
        assert!(parse_bool("maybe").is_err());
        assert_eq!(parse_bool("TRUE"), Ok(true));
    }

    #[test]
    fn the_modes_are_listed_by_name() {
        assert_eq!(
            Mode::names(),
            [
                "install-cli",
                "verify-baselines",
                "select",
                "discover",
                "recover",
                "finish",
                "wake",
                "prepare-review",
                "status",
                "session",
                "check-stop",
                "note"
            ]
        );
    }
}
