//! `klaud install-cli` end to end (contract §3.1): the real binary against a fake `npm` that
//! understands `npm install --prefix P --no-audit --no-fund PKG@VER`, logs every call and, per
//! `FAKE_NPM_SCENARIO`, installs a CLI, leaves a partial prefix, fails like npm or hangs.

#![allow(clippy::disallowed_methods)] // tests read PATH/KLAUD_* and probe pids with `kill -0`

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use tempfile::TempDir;

const PACKAGE: &str = "@anthropic-ai/claude-code";
const VERSION: &str = "2.1.282";

/// The fake npm; `@STATE@` is replaced by the directory holding its log and pid files.
const FAKE_NPM: &str = r#"#!/usr/bin/env bash
set -u
state='@STATE@'
argv="$*"
[ "${1-}" = install ] || { echo "fake npm: expected install, got: $argv" >&2; exit 97; }
shift
prefix='' spec=''
while [ $# -gt 0 ]; do
  case $1 in
    --prefix) prefix=$2; shift 2 ;;
    --no-audit | --no-fund) shift ;;
    -*) echo "fake npm: unexpected flag $1" >&2; exit 97 ;;
    *) spec=$1; shift ;;
  esac
done
package=${spec%@*} version=${spec##*@}
attempt=1
[ -f "$state/npm.log" ] && attempt=$(( $(wc -l < "$state/npm.log") + 1 ))
echo "attempt=$attempt entries=$(( $(ls -A "$prefix" | wc -l) )) argv=$argv" >> "$state/npm.log"

install_cli() { # $1: the body of the installed CLI
  local dir="$prefix/node_modules/$package"
  mkdir -p "$dir" "$prefix/node_modules/.bin"
  printf '{"name": "%s", "version": "%s", "bin": {"claude": "cli.js"}}\n' "$package" "$version" > "$dir/package.json"
  printf '#!/bin/sh\n%s\n' "$1" > "$dir/cli.js"
  chmod +x "$dir/cli.js"
  ln -s "../$package/cli.js" "$prefix/node_modules/.bin/claude"
}

case ${FAKE_NPM_SCENARIO-ok} in
  ok) install_cli "echo '$version (Claude Code)'" ;;
  partial-then-ok)
    if [ "$attempt" = 1 ]; then
      mkdir -p "$prefix/node_modules/$package"
      echo '{"bin": {"claude": "cli.js"}}' > "$prefix/node_modules/$package/package.json"
      touch "$prefix/left-by-attempt-1"
      echo 'npm warn tar TAR_ENTRY_ERROR ENOSPC: no space left on device, write' >&2
    else
      install_cli "echo '$version (Claude Code)'"
    fi ;;
  stderr-warning)
    install_cli "echo 'Warning: 9.9.9 is available, run claude update' >&2; echo '$version (Claude Code)'" ;;
  wrong-version) install_cli "echo '2.0.0 (Claude Code)'" ;;
  hang)
    echo $$ >> "$state/pids"
    ( sleep 1000 & echo $! >> "$state/pids" )
    exec sleep 1000 ;;
  not-found)
    cat >&2 <<EOF
npm error code E404
npm error 404 Not Found - GET https://registry.npmjs.org/@anthropic-ai%2fclaude-code - Not found
npm error 404
npm error 404  '$spec' is not in this registry.
npm error 404
npm error 404 Note that you can also install from a
npm error 404 tarball, folder, http url, or git remote protocol.
npm error A complete log of this run can be found in: /home/runner/.npm/_logs/2025-01-01T00_00_00_000Z-debug-0.log
EOF
    exit 1 ;;
  inject)
    echo '::error::injected by npm' >&2
    install_cli "echo '::warning::injected by the cli' >&2; echo '$version (Claude Code)'" ;;
  *) echo "fake npm: unknown scenario" >&2; exit 98 ;;
esac
"#;

/// A temporary world: `bin/npm` (the fake), `state/` (its log and pids) and `work/` (the
/// `--directory`, so the prefix is `work/cli`).
struct Fixture {
    root: TempDir,
    scenario: &'static str,
}

impl Fixture {
    fn new(scenario: &'static str) -> Self {
        let root = tempfile::tempdir().unwrap();
        for directory in ["bin", "state", "work"] {
            std::fs::create_dir(root.path().join(directory)).unwrap();
        }
        let fixture = Fixture { root, scenario };
        let state = fixture.path("state");
        let script = FAKE_NPM.replace("@STATE@", state.to_str().unwrap());
        std::fs::write(fixture.npm(), script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(fixture.npm(), std::fs::Permissions::from_mode(0o755)).unwrap();
        fixture
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.path().join(relative)
    }

    fn npm(&self) -> PathBuf {
        self.path("bin/npm")
    }

    fn prefix(&self) -> PathBuf {
        self.path("work/cli")
    }

    /// `klaud install-cli` with a hermetic environment, the work directory and a missing config;
    /// neither the npm program nor the version is chosen yet.
    fn bare(&self) -> Command {
        let mut command = Command::cargo_bin("klaud").unwrap();
        // GITHUB_ACTIONS/OUTPUT/STEP_SUMMARY/TOKEN and every KLAUD_* flag, when run inside CI.
        for (name, _) in std::env::vars_os() {
            let text = name.to_string_lossy();
            if ["GITHUB_", "KLAUD_", "RUNNER_"]
                .iter()
                .any(|p| text.starts_with(p))
            {
                command.env_remove(&name);
            }
        }
        command
            .env("FAKE_NPM_SCENARIO", self.scenario)
            .arg("install-cli")
            .arg("--directory")
            .arg(self.path("work"))
            .arg("--config")
            .arg(self.path("no-such-klaud.yml"))
            .timeout(Duration::from_secs(60));
        command
    }

    /// `bare()` with `--npm <fake> --cli-version 2.1.282`.
    fn install(&self) -> Command {
        let mut command = self.bare();
        command
            .arg("--npm")
            .arg(self.npm())
            .args(["--cli-version", VERSION]);
        command
    }

    /// Sets the variables of a GitHub Actions step; returns the output and summary files.
    fn in_actions(&self, command: &mut Command) -> (PathBuf, PathBuf) {
        let (output, summary) = (self.path("github-output"), self.path("step-summary"));
        command
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_OUTPUT", &output)
            .env("GITHUB_STEP_SUMMARY", &summary);
        (output, summary)
    }

    /// One line per npm call: `attempt=N entries=<files in the prefix at start> argv=…`.
    fn npm_calls(&self) -> Vec<String> {
        read(&self.path("state/npm.log"))
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn record(&self) -> serde_json::Value {
        serde_json::from_str(&read(&self.path("work/install-cli.json"))).unwrap()
    }
}

/// A file's text, empty when it does not exist.
fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Runs the command, checks the exit code, and returns (stdout, stderr).
fn run(mut command: Command, code: i32) -> (String, String) {
    let assert = command.assert().code(code);
    let output = assert.get_output();
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The `outputs:` report a local run prints on stdout.
fn local_outputs(stdout: &str) -> BTreeMap<String, String> {
    stdout
        .lines()
        .skip_while(|line| *line != "outputs:")
        .skip(1)
        .map_while(|line| line.strip_prefix("  ")?.split_once(':'))
        .map(|(name, value)| (name.to_string(), value.trim().to_string()))
        .collect()
}

/// Lines of stdout outside `::stop-commands::TOKEN` … `::TOKEN::` fences, and the tokens seen.
fn unfenced_lines(stdout: &str) -> (Vec<&str>, Vec<String>) {
    let (mut open, mut tokens, mut outside) = (None::<String>, Vec::new(), Vec::new());
    for line in stdout.lines() {
        match &open {
            Some(token) if line == format!("::{token}::") => open = None,
            Some(_) => {}
            None => match line.strip_prefix("::stop-commands::") {
                Some(token) => {
                    tokens.push(token.to_string());
                    open = Some(token.to_string());
                }
                None => outside.push(line),
            },
        }
    }
    assert_eq!(open, None, "an unterminated fence in:\n{stdout}");
    (outside, tokens)
}

/// True while `pid` is a live (not zombie) process.
fn is_running(pid: &str) -> bool {
    let exists = std::process::Command::new("kill")
        .args(["-0", pid])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    let zombie = read(Path::new(&format!("/proc/{pid}/stat")))
        .rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X']));
    exists && !zombie
}

#[test]
fn a_partial_first_install_is_wiped_and_the_second_attempt_succeeds() {
    let fixture = Fixture::new("partial-then-ok");
    let (stdout, stderr) = run(fixture.install(), 0);

    let calls = fixture.npm_calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    let prefix = fixture.prefix();
    let argv = format!(
        "argv=install --prefix {} --no-audit --no-fund {PACKAGE}@{VERSION}",
        prefix.display()
    );
    assert!(calls.iter().all(|call| call.ends_with(&argv)), "{calls:?}");
    assert!(calls[1].contains("entries=0"), "not wiped: {calls:?}");
    assert!(!prefix.join("left-by-attempt-1").exists());
    assert!(stderr.contains("attempt 1/2 failed: npm install succeeded but the binary"));
    assert!(stderr.contains("does not exist"), "{stderr}");

    let outputs = local_outputs(&stdout);
    let cli_path = prefix.join("node_modules/.bin/claude");
    assert_eq!(outputs["cli-path"], cli_path.display().to_string());
    assert!(cli_path.is_file());
    assert_eq!(outputs["cli-version"], VERSION);
    assert_eq!(outputs["attempts"], "2");
}

#[test]
fn a_warning_on_stderr_is_logged_and_the_stdout_version_is_accepted() {
    let fixture = Fixture::new("stderr-warning");
    // The default program `npm`, found on PATH.
    let mut paths = vec![fixture.path("bin")];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let mut command = fixture.bare();
    command
        .env("PATH", std::env::join_paths(paths).unwrap())
        .args(["--cli-version", VERSION]);
    let (stdout, stderr) = run(command, 0);

    assert!(stderr.contains("Warning: 9.9.9 is available"), "{stderr}");
    assert!(stderr.contains(&format!("--version stdout: {VERSION} (Claude Code)")));
    let outputs = local_outputs(&stdout);
    assert_eq!(outputs["cli-version"], VERSION);
    assert_eq!(outputs["attempts"], "1");
    assert_eq!(fixture.npm_calls().len(), 1);
}

#[test]
fn a_wrong_version_fails_after_every_attempt_naming_both_versions() {
    let fixture = Fixture::new("wrong-version");
    let mut command = fixture.install();
    command.args(["--cli-attempts", "3"]);
    let (stdout, stderr) = run(command, 1);

    assert_eq!(fixture.npm_calls().len(), 3);
    assert!(
        stderr.contains(&format!(
            "error: could not install {PACKAGE}@{VERSION} after 3 attempt(s); last error: \
             version mismatch: expected {VERSION}, the binary reports 2.0.0"
        )),
        "{stderr}"
    );
    let outputs = local_outputs(&stdout);
    assert_eq!(outputs["cli-path"], "");
    assert_eq!(outputs["cli-version"], "");
    assert_eq!(outputs["attempts"], "3");
    assert_eq!(fixture.record()["installed"], false);
}

#[test]
fn a_hanging_npm_is_killed_with_its_whole_process_group_at_the_timeout() {
    let fixture = Fixture::new("hang");
    let mut command = fixture.install();
    command.args(["--cli-timeout", "1"]);
    let started = Instant::now();
    let (_, stderr) = run(command, 1);
    let elapsed = started.elapsed();

    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");
    assert_eq!(fixture.npm_calls().len(), 2);
    assert!(
        stderr.contains("last error: npm install timed out after 1s and was killed"),
        "{stderr}"
    );
    let pids = read(&fixture.path("state/pids"));
    let pids: Vec<&str> = pids.split_whitespace().collect();
    assert_eq!(
        pids.len(),
        4,
        "npm and its orphaned grandchild, twice: {pids:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|pid| is_running(pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let survivors: Vec<&&str> = pids.iter().filter(|pid| is_running(pid)).collect();
    assert!(survivors.is_empty(), "still running: {survivors:?}");
}

#[test]
fn invalid_attempts_are_bad_input_and_npm_is_never_called() {
    let fixture = Fixture::new("ok");
    for value in ["0", "abc", "-1"] {
        let mut by_flag = fixture.install();
        by_flag.args(["--cli-attempts", value]);
        let mut by_variable = fixture.install();
        by_variable.env("KLAUD_CLI_ATTEMPTS", value);
        for command in [by_flag, by_variable] {
            let (_, stderr) = run(command, 2);
            assert!(
                stderr.contains("error: cli-attempts: "),
                "{value}: {stderr}"
            );
            assert!(stderr.contains(&format!("'{value}'")), "{value}: {stderr}");
        }
    }
    assert_eq!(fixture.npm_calls(), Vec::<String>::new());
    assert!(!fixture.path("work/install-cli.json").exists());
}

#[test]
fn a_missing_or_inexact_version_is_bad_input_and_npm_is_never_called() {
    let fixture = Fixture::new("ok");
    let npm = fixture.npm();
    let mut missing = fixture.bare();
    missing.arg("--npm").arg(&npm);
    let mut latest = fixture.bare();
    latest
        .arg("--npm")
        .arg(&npm)
        .args(["--cli-version", "latest"]);
    let mut range = fixture.bare();
    range
        .arg("--npm")
        .arg(&npm)
        .env("KLAUD_CLI_VERSION", "^2.1.0");

    let (_, stderr) = run(missing, 2);
    assert!(stderr.contains("error: cli-version: a version is required"));
    for (command, shown) in [(latest, "'latest'"), (range, "'^2.1.0'")] {
        let (_, stderr) = run(command, 2);
        let expected = format!("error: cli-version: {shown} is not an exact version");
        assert!(stderr.contains(&expected), "{stderr}");
    }
    assert_eq!(fixture.npm_calls(), Vec::<String>::new());
    assert!(!fixture.prefix().exists());
    assert!(!fixture.path("work/install-cli.json").exists());
}

#[test]
fn an_npm_error_on_every_attempt_fails_with_npms_real_error_line() {
    let fixture = Fixture::new("not-found");
    let mut command = fixture.bare();
    command
        .env("KLAUD_NPM", fixture.npm())
        .env("KLAUD_CLI_VERSION", VERSION);
    let (_, stderr) = run(command, 1);

    assert_eq!(fixture.npm_calls().len(), 2);
    let error = stderr
        .lines()
        .find(|line| line.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line in:\n{stderr}"));
    assert!(
        error.contains(
            "last error: npm install exited with status 1: npm error 404 Not Found - GET \
             https://registry.npmjs.org/@anthropic-ai%2fclaude-code - Not found"
        ),
        "{error}"
    );
    // npm's closing pointer to its debug log is boilerplate, not the error.
    assert!(!error.contains("A complete log"), "{error}");
}

#[test]
fn in_actions_outputs_go_to_github_output_and_the_summary_gets_a_table() {
    let fixture = Fixture::new("ok");
    let mut command = fixture.install();
    let (output, summary) = fixture.in_actions(&mut command);
    let (stdout, _) = run(command, 0);

    let cli_path = fixture.prefix().join("node_modules/.bin/claude");
    let output = read(&output);
    assert!(
        output.contains(&format!("cli-path={}\n", cli_path.display())),
        "{output}"
    );
    assert!(
        output.contains(&format!("cli-version={VERSION}\n")),
        "{output}"
    );
    assert!(output.contains("attempts=1\n"), "{output}");
    let summary = read(&summary);
    assert!(
        summary.contains(&format!("{PACKAGE}@{VERSION} installed")),
        "{summary}"
    );
    assert!(summary.contains("| attempt | seconds | result |\n|---|---|---|\n| 1 | "));
    assert!(summary.contains(" | ok |"), "{summary}");
    assert!(
        stdout.contains("::group::install-cli attempt 1/2"),
        "{stdout}"
    );
    assert!(!stdout.contains("outputs:"), "{stdout}");

    let record = fixture.record();
    assert_eq!(record["package"], PACKAGE);
    assert_eq!(record["installed"], true);
    assert_eq!(record["cli-path"], cli_path.display().to_string());
    assert_eq!(record["attempts"][0]["error"], serde_json::Value::Null);
}

#[test]
fn in_actions_a_failure_is_an_error_annotation_on_stdout_with_outputs_still_written() {
    let fixture = Fixture::new("wrong-version");
    let mut command = fixture.install();
    command.env("KLAUD_CLI_ATTEMPTS", "1");
    let (output, summary) = fixture.in_actions(&mut command);
    let (stdout, stderr) = run(command, 1);

    assert!(
        stdout.contains(&format!(
            "::error::could not install {PACKAGE}@{VERSION} after 1 attempt(s)"
        )),
        "{stdout}"
    );
    assert!(stdout.contains("::warning::install-cli attempt 1/1 failed: version mismatch"));
    assert!(!stderr.contains("error:"), "{stderr}");
    assert_eq!(read(&output), "cli-path=\ncli-version=\nattempts=1\n");
    assert!(read(&summary).contains("not installed"));
}

#[test]
fn locally_stdout_shows_a_readable_outputs_report_and_the_record_is_written() {
    let fixture = Fixture::new("ok");
    let (stdout, stderr) = run(fixture.install(), 0);

    assert!(stdout.contains("outputs:\n  cli-path: "), "{stdout}");
    assert!(stdout.contains(&format!("\n  cli-version: {VERSION}\n  attempts: 1\n")));
    assert!(
        stdout.contains("| attempt | seconds | result |"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("::"),
        "no workflow commands locally: {stdout}"
    );
    assert!(stderr.contains("== install-cli attempt 1/2"), "{stderr}");
    let record = fixture.record();
    assert_eq!(record["expected-version"], VERSION);
    assert_eq!(record["cli-version"], VERSION);
}

#[test]
fn workflow_commands_in_child_stderr_are_fenced_by_stop_commands() {
    let fixture = Fixture::new("inject");
    let mut command = fixture.install();
    fixture.in_actions(&mut command);
    let (stdout, _) = run(command, 0);

    let (outside, tokens) = unfenced_lines(&stdout);
    assert_eq!(tokens.len(), 2, "npm's and the CLI's stderr: {stdout}");
    for token in &tokens {
        assert!(token.len() == 32 && token.chars().all(|c| c.is_ascii_hexdigit()));
    }
    assert_ne!(tokens[0], tokens[1]);
    assert!(stdout.contains("::error::injected by npm"), "{stdout}");
    assert!(
        stdout.contains("::warning::injected by the cli"),
        "{stdout}"
    );
    let leaked: Vec<&&str> = outside.iter().filter(|l| l.contains("injected")).collect();
    assert!(leaked.is_empty(), "unfenced: {leaked:?}");
}
