//! The imperative shell: command line, configuration, environment, outputs and one module per
//! mode. It turns arguments into a finished step and an exit code.

pub mod cli;
pub mod config;
pub mod dashboard;
pub mod environment;
pub mod error;
pub mod execute;
pub mod gather;
pub mod github;
pub mod health;
pub mod modes;
pub mod outputs;

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Parser;
use clap::error::{ContextKind, ContextValue, ErrorKind};

use cli::{Cli, Mode};
use config::{ConfigSource, load_config};
use environment::Environment;
use error::{EXIT_BAD_INPUT, EXIT_DONE, StepError};
use modes::StepContext;
use outputs::Reporter;

/// The default configuration path, relative to the working directory.
pub const DEFAULT_CONFIG_PATH: &str = ".github/klaud.yml";

/// Runs one step from command-line arguments and returns the process exit code.
pub async fn run(arguments: Vec<OsString>, environment: Environment) -> u8 {
    let reporter = Reporter::new(&environment);
    let cli = match Cli::try_parse_from(arguments) {
        Ok(cli) => cli,
        Err(error) => return report_parse_error(&error, &reporter),
    };
    if let Mode::CheckStop(arguments) = &cli.mode {
        // The hook needs no configuration, and its stdout is its answer alone.
        let token = cli.common.github_token.clone();
        return modes::check_stop::run(arguments, token, &environment).await;
    }
    let token = cli
        .common
        .github_token
        .clone()
        .filter(|token| !token.is_empty())
        .or_else(|| environment.github_token.clone())
        // `note` runs in the agent's environment, which may carry the bot's token as GH_TOKEN.
        .or_else(|| match cli.mode {
            Mode::Note(_) => environment.agent_token(),
            _ => None,
        });
    if let Some(token) = &token {
        reporter.mask(token);
    }

    let context = match build_context(&cli, environment, reporter.clone(), token) {
        Ok(context) => context,
        Err(error) => return fail(&reporter, &error),
    };
    let result = match &cli.mode {
        Mode::InstallCli(arguments) => modes::install_cli::run(&context, arguments).await,
        Mode::VerifyBaselines(arguments) => modes::verify_baselines::run(&context, arguments).await,
        Mode::Select(arguments) => modes::select::run(&context, arguments).await,
        Mode::Discover(arguments) => modes::discover::run(&context, arguments).await,
        Mode::Recover(arguments) => modes::recover::run(&context, arguments).await,
        Mode::Finish(arguments) => modes::finish::run(&context, arguments).await,
        Mode::Wake(arguments) => modes::wake::run(&context, arguments).await,
        Mode::PrepareReview(arguments) => modes::prepare_review::run(&context, arguments).await,
        Mode::Status(arguments) => modes::status::run(&context, arguments).await,
        Mode::Session(arguments) => modes::session::run(&context, arguments).await,
        Mode::Note(arguments) => modes::note::run(&context, arguments).await,
        Mode::CheckStop(_) => unreachable!("check-stop answers before the step context is built"),
    };
    match result {
        Ok(()) => EXIT_DONE,
        Err(error) => fail(&reporter, &error),
    }
}

fn build_context(
    cli: &Cli,
    environment: Environment,
    reporter: Reporter,
    github_token: Option<String>,
) -> Result<StepContext, StepError> {
    let config_path = cli
        .common
        .config
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG_PATH));
    let (config, source) = load_config(&config_path).map_err(|error| {
        // A problem of the whole file is named `config`, one of a key `config <key>`.
        let field = match error.key.as_str() {
            "config" => "config".to_string(),
            key => format!("config {key}"),
        };
        StepError::bad_input(field, error.message)
    })?;
    if source == ConfigSource::MissingFileDefaults {
        reporter.info(&format!(
            "no configuration file at {}: using the defaults",
            config_path.display()
        ));
    }
    let directory = cli
        .common
        .directory
        .clone()
        .unwrap_or_else(|| environment.default_directory());
    let cooldown_days = cli.common.cooldown_days.unwrap_or(1.0);
    let max_candidates = cli.common.max_candidates.unwrap_or(5);
    Ok(StepContext {
        reporter,
        policy: config.policy(max_candidates, cooldown_days),
        config,
        directory,
        dry_run: cli.common.dry_run.unwrap_or(false),
        cooldown_days,
        max_candidates,
        github_token,
        environment,
        retry: crate::adapters::github::transport::RetryPolicy::default(),
    })
}

fn fail(reporter: &Reporter, error: &StepError) -> u8 {
    match error {
        StepError::BadInput { field, message } => reporter.error(Some(field), message),
        StepError::Failed(message) => reporter.error(None, message),
    }
    error.exit_code()
}

fn report_parse_error(error: &clap::Error, reporter: &Reporter) -> u8 {
    let modes = Mode::names().join(", ");
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = error.print();
            EXIT_DONE
        }
        ErrorKind::InvalidSubcommand => {
            let name = match error.get(ContextKind::InvalidSubcommand) {
                Some(ContextValue::String(name)) => name.clone(),
                _ => String::new(),
            };
            // An action step passes an empty `mode` input as an empty argument.
            let message = if name.trim().is_empty() {
                format!("a mode is required; modes: {modes}")
            } else {
                format!("unknown mode '{name}'; modes: {modes}")
            };
            reporter.error(Some("mode"), &message);
            EXIT_BAD_INPUT
        }
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            reporter.error(Some("mode"), &format!("a mode is required; modes: {modes}"));
            EXIT_BAD_INPUT
        }
        _ => {
            let field = match error.get(ContextKind::InvalidArg) {
                Some(ContextValue::String(argument)) => argument
                    .split_whitespace()
                    .next()
                    .unwrap_or("argument")
                    .trim_start_matches('-')
                    .to_string(),
                _ => "argument".to_string(),
            };
            let rendered = error.render().to_string();
            let first_line = rendered
                .lines()
                .next()
                .unwrap_or("invalid arguments")
                .trim_start_matches("error: ")
                .to_string();
            reporter.error(Some(&field), &first_line);
            EXIT_BAD_INPUT
        }
    }
}
