//! `install-cli` (contract §3.1): install the pinned agent CLI into a private prefix, retrying
//! from a wiped prefix, and accept it only when its `--version` stdout names the pinned version.

use std::path::{Path, PathBuf};
use std::time::Duration;

use semver::Version;
use serde::Serialize;

use super::StepContext;
use crate::adapters::npm;
use crate::adapters::process::{ChildCommand, run_child};
use crate::core::install::{
    AttemptEvidence, AttemptVerdict, judge_attempt, parse_package_name, parse_pinned_version,
};
use crate::core::text::bounded;
use crate::shell::cli::InstallCliArgs;
use crate::shell::error::StepError;
use crate::shell::outputs::markdown_table;

/// Seconds the installed binary may take to answer `--version`.
const VERSION_TIMEOUT: Duration = Duration::from_secs(60);
/// Pause between attempts (none after the last).
const PAUSE_BETWEEN_ATTEMPTS: Duration = Duration::from_secs(1);

/// The step outputs of `install-cli`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct InstallCliOutputs {
    /// Absolute path of the installed executable (empty when the install failed).
    pub cli_path: String,
    /// The version the executable reported (empty when the install failed).
    pub cli_version: String,
    /// Attempts made.
    pub attempts: u32,
}

/// `install-cli.json` in the work directory.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
struct InstallCliRecord<'a> {
    package: &'a str,
    expected_version: String,
    installed: bool,
    cli_path: Option<String>,
    cli_version: Option<String>,
    attempts: Vec<AttemptRecord>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
struct AttemptRecord {
    attempt: u32,
    seconds: f64,
    error: Option<String>,
}

pub async fn run(context: &StepContext, arguments: &InstallCliArgs) -> Result<(), StepError> {
    let reporter = &context.reporter;
    let expected = parse_pinned_version(arguments.cli_version.as_deref().unwrap_or(""))
        .map_err(|error| StepError::bad_input("cli-version", error.to_string()))?;
    let package = parse_package_name(&arguments.cli_package)
        .map_err(|error| StepError::bad_input("cli-package", error.to_string()))?;
    let prefix = context.directory.join("cli");
    reporter.info(&format!(
        "installing {package}@{expected} into {} (up to {} attempts)",
        prefix.display(),
        arguments.cli_attempts
    ));

    let global_config = machine_global_config(context, &arguments.npm).await;
    let mut records = Vec::new();
    let mut installed: Option<(PathBuf, Version)> = None;
    for attempt in 1..=arguments.cli_attempts {
        reporter.begin_group(&format!(
            "install-cli attempt {attempt}/{}",
            arguments.cli_attempts
        ));
        let started = std::time::Instant::now();
        let result = attempt_install(
            context,
            arguments,
            package,
            &expected,
            &prefix,
            global_config.as_deref(),
        )
        .await;
        reporter.end_group();
        let seconds = started.elapsed().as_secs_f64();
        match result {
            Ok((path, version)) => {
                records.push(AttemptRecord {
                    attempt,
                    seconds,
                    error: None,
                });
                installed = Some((path, version));
                break;
            }
            Err(message) => {
                reporter.warning(&format!(
                    "install-cli attempt {attempt}/{} failed: {message}",
                    arguments.cli_attempts
                ));
                records.push(AttemptRecord {
                    attempt,
                    seconds,
                    error: Some(message),
                });
                if attempt < arguments.cli_attempts {
                    tokio::time::sleep(PAUSE_BETWEEN_ATTEMPTS).await;
                }
            }
        }
    }

    let attempts = u32::try_from(records.len()).expect("attempts fit in u32");
    let outputs = InstallCliOutputs {
        cli_path: installed
            .as_ref()
            .map(|(path, _)| path.display().to_string())
            .unwrap_or_default(),
        cli_version: installed
            .as_ref()
            .map(|(_, version)| version.to_string())
            .unwrap_or_default(),
        attempts,
    };
    let record = InstallCliRecord {
        package,
        expected_version: expected.to_string(),
        installed: installed.is_some(),
        cli_path: installed
            .as_ref()
            .map(|(path, _)| path.display().to_string()),
        cli_version: installed.as_ref().map(|(_, version)| version.to_string()),
        attempts: records,
    };
    write_record(&context.directory, &record)?;
    reporter
        .write_outputs(&outputs)
        .map_err(|error| StepError::failed(format!("cannot write step outputs: {error}")))?;
    reporter
        .write_summary(&summary(&record))
        .map_err(|error| StepError::failed(format!("cannot write the step summary: {error}")))?;

    match installed {
        Some((path, version)) => {
            reporter.info(&format!(
                "installed {package}@{version} at {} after {attempts} attempt(s)",
                path.display()
            ));
            Ok(())
        }
        None => {
            let last_error = record
                .attempts
                .iter()
                .rev()
                .find_map(|attempt| attempt.error.clone())
                .unwrap_or_default();
            Err(StepError::failed(format!(
                "could not install {package}@{expected} after {attempts} attempt(s); last error: {last_error}"
            )))
        }
    }
}

/// One attempt from a wiped prefix; the error is the attempt's real failure.
async fn attempt_install(
    context: &StepContext,
    arguments: &InstallCliArgs,
    package: &str,
    expected: &Version,
    prefix: &Path,
    global_config: Option<&Path>,
) -> Result<(PathBuf, Version), String> {
    wipe(prefix).map_err(|error| format!("cannot prepare {}: {error}", prefix.display()))?;
    let timeout = Duration::from_secs(arguments.cli_timeout);
    let command = npm::install_command(
        &arguments.npm,
        prefix,
        package,
        &expected.to_string(),
        global_config,
        timeout,
    );
    context.reporter.info(&format!("$ {}", command.display()));
    let install = run_child(&command)
        .await
        .map_err(|error| format!("cannot run {}: {error}", arguments.npm))?;
    context
        .reporter
        .untrusted_block("npm stderr", &install.stderr);
    let evidence = if install.timed_out {
        AttemptEvidence::InstallTimedOut {
            seconds: arguments.cli_timeout,
        }
    } else if !install.succeeded() {
        AttemptEvidence::InstallFailed {
            exit: install.exit,
            detail: npm::error_line(&install.stderr).map(|line| bounded(line, 300)),
        }
    } else {
        let path = npm::executable_path(prefix, package, arguments.cli_bin.as_deref())?;
        if !path.is_file() {
            AttemptEvidence::BinaryMissing {
                path: path.display().to_string(),
            }
        } else {
            let check =
                run_child(&ChildCommand::new(path.as_os_str(), VERSION_TIMEOUT).arg("--version"))
                    .await
                    .map_err(|error| format!("cannot run {}: {error}", path.display()))?;
            context
                .reporter
                .untrusted_block("--version stderr (logged, not compared)", &check.stderr);
            if check.timed_out {
                AttemptEvidence::VersionTimedOut {
                    seconds: VERSION_TIMEOUT.as_secs(),
                }
            } else {
                context.reporter.info(&format!(
                    "--version stdout: {}",
                    bounded(check.stdout.trim(), 200)
                ));
                AttemptEvidence::VersionAnswered {
                    exit: check.exit,
                    stdout: check.stdout,
                }
            }
        }
    };
    match judge_attempt(&evidence, expected) {
        AttemptVerdict::Installed(version) => {
            let path = npm::executable_path(prefix, package, arguments.cli_bin.as_deref())?;
            Ok((std::path::absolute(&path).unwrap_or(path), version))
        }
        AttemptVerdict::Failed(message) => Err(message),
    }
}

/// npm's machine-wide configuration file, asked before `--prefix` moves it, so that a
/// runner's registry mirror or CA settings still apply. Unknown when npm cannot say.
async fn machine_global_config(context: &StepContext, npm_program: &str) -> Option<PathBuf> {
    let command = npm::global_config_command(npm_program, Duration::from_secs(30));
    match run_child(&command).await {
        Ok(output) if output.succeeded() => npm::existing_global_config(&output.stdout),
        _ => {
            context.reporter.info(
                "npm did not name its global configuration file: machine-wide npm settings may not apply",
            );
            None
        }
    }
}

fn wipe(prefix: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(prefix) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    std::fs::create_dir_all(prefix)
}

fn write_record(directory: &Path, record: &InstallCliRecord<'_>) -> Result<(), StepError> {
    std::fs::create_dir_all(directory).map_err(|error| {
        StepError::failed(format!("cannot create {}: {error}", directory.display()))
    })?;
    let path = directory.join("install-cli.json");
    let text = serde_json::to_string_pretty(record).expect("record serializes");
    std::fs::write(&path, text + "\n")
        .map_err(|error| StepError::failed(format!("cannot write {}: {error}", path.display())))
}

fn summary(record: &InstallCliRecord<'_>) -> String {
    let heading = if record.installed {
        format!(
            "### klaud install-cli: {}@{} installed",
            record.package,
            record.cli_version.as_deref().unwrap_or_default()
        )
    } else {
        format!(
            "### klaud install-cli: {}@{} not installed",
            record.package, record.expected_version
        )
    };
    let rows: Vec<Vec<String>> = record
        .attempts
        .iter()
        .map(|attempt| {
            vec![
                attempt.attempt.to_string(),
                format!("{:.1}", attempt.seconds),
                attempt.error.clone().unwrap_or_else(|| "ok".to_string()),
            ]
        })
        .collect();
    format!(
        "{heading}\n\n{}",
        markdown_table(&["attempt", "seconds", "result"], &rows)
    )
}
