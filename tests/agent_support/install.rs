//! The real agent CLI, installed once into `<target>/agent-cli/<version>/` by `klaud
//! install-cli` — the binary's own mode, given its inputs as the action gives them
//! (`KLAUD_DIRECTORY`, `KLAUD_CLI_VERSION`, `KLAUD_CLI_ATTEMPTS`) — from the npm registry.
//! An earlier install is reused when the executable its `install-cli.json` names still prints
//! the pinned version. A file lock keeps test processes from installing at once; a `OnceLock`
//! makes the tests of one process share the answer.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use super::run::run_bounded;
use super::step_support::hermetic_klaud;

/// The version the reference workflows pin.
pub const AGENT_CLI_VERSION: &str = "2.1.282";
/// Longest the whole install may take (both attempts of `install-cli`).
const INSTALL_LIMIT: Duration = Duration::from_secs(900);
const VERSION_LIMIT: Duration = Duration::from_secs(60);

/// The installed CLI's executable; installs it on first use. Panics, saying why, when it
/// cannot be installed (npm missing, the registry unreachable, a wrong version).
pub fn agent_cli() -> PathBuf {
    static INSTALLED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    INSTALLED
        .get_or_init(install_once)
        .clone()
        .unwrap_or_else(|message| panic!("{message}"))
}

/// `<target>/agent-cli/<version>`: the target directory is the parent of cargo's
/// `CARGO_TARGET_TMPDIR` (`<target>/tmp`), so `CARGO_TARGET_DIR` is honoured.
pub fn install_directory() -> PathBuf {
    let temporary = Path::new(env!("CARGO_TARGET_TMPDIR"));
    temporary
        .parent()
        .unwrap_or(temporary)
        .join("agent-cli")
        .join(AGENT_CLI_VERSION)
}

fn install_once() -> Result<PathBuf, String> {
    let directory = install_directory();
    std::fs::create_dir_all(&directory)
        .map_err(|error| format!("cannot create {}: {error}", directory.display()))?;
    let lock_path = directory.join("install.lock");
    let lock = std::fs::File::create(&lock_path)
        .map_err(|error| format!("cannot create {}: {error}", lock_path.display()))?;
    lock.lock()
        .map_err(|error| format!("cannot lock {}: {error}", lock_path.display()))?;
    if let Ok(path) = installed(&directory) {
        return Ok(path);
    }
    require_npm()?;
    let capture = tempfile::tempdir().map_err(|error| error.to_string())?;
    let mut command = hermetic_klaud();
    command
        .arg("install-cli")
        .current_dir(&directory) // no .github/klaud.yml here: every default applies
        .env("KLAUD_DIRECTORY", &directory)
        .env("KLAUD_CLI_VERSION", AGENT_CLI_VERSION)
        .env("KLAUD_CLI_ATTEMPTS", "2");
    let install = run_bounded(&mut command, INSTALL_LIMIT, capture.path(), None);
    if install.exit_code != Some(0) {
        return Err(format!(
            "klaud install-cli could not install the agent CLI {AGENT_CLI_VERSION} into {} \
             (exit {:?}, timed out {}); the agent CLI tests need the npm registry\n--- stdout\n{}\n--- stderr\n{}",
            directory.display(),
            install.exit_code,
            install.timed_out,
            install.stdout,
            install.stderr
        ));
    }
    installed(&directory)
}

/// The executable `install-cli.json` names, when it prints the pinned version.
fn installed(directory: &Path) -> Result<PathBuf, String> {
    let record_path = directory.join("install-cli.json");
    let record: serde_json::Value = std::fs::read_to_string(&record_path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .ok_or_else(|| format!("{} is missing or not JSON", record_path.display()))?;
    let path = record["cli-path"]
        .as_str()
        .filter(|_| record["installed"] == true)
        .map(PathBuf::from)
        .ok_or_else(|| format!("{} records no installed CLI", record_path.display()))?;
    let capture = tempfile::tempdir().map_err(|error| error.to_string())?;
    #[allow(clippy::disallowed_methods)] // the installed CLI's --version
    let mut command = std::process::Command::new(&path);
    command.arg("--version");
    let check = run_bounded(&mut command, VERSION_LIMIT, capture.path(), None);
    match check.stdout.split_whitespace().next() {
        Some(version) if version == AGENT_CLI_VERSION && check.exit_code == Some(0) => Ok(path),
        _ => Err(format!(
            "{} --version printed {:?} (exit {:?}), not {AGENT_CLI_VERSION}",
            path.display(),
            check.stdout.trim(),
            check.exit_code
        )),
    }
}

/// Fails clearly when npm cannot be run (CI installs Node.js; these tests are not skipped).
fn require_npm() -> Result<(), String> {
    #[allow(clippy::disallowed_methods)] // npm --version
    let answer = std::process::Command::new("npm")
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output();
    match answer {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(format!(
            "npm --version failed ({}): the agent CLI tests install the CLI with npm; install Node.js and npm",
            output.status
        )),
        Err(error) => Err(format!(
            "npm cannot be run ({error}): the agent CLI tests install the CLI with npm; install Node.js and npm"
        )),
    }
}
