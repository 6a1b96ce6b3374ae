//! Decisions of `install-cli` (contract §3.1): what counts as a valid pinned version, how a CLI's
//! `--version` stdout is read, and whether one attempt succeeded.
//!
//! Stderr never reaches this module: it is logged by the shell and never compared.

use std::sync::LazyLock;

use regex::Regex;
use semver::Version;

use super::text::bounded;

/// The first semantic version in a line of text, e.g. `2.1.282` in `2.1.282 (Claude Code)`.
static VERSION_IN_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:^|[^0-9A-Za-z.])v?(\d+\.\d+\.\d+(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?)",
    )
    .expect("version pattern compiles")
});

/// Why `cli-version` is not a pinned version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("a version is required (an exact version such as 2.1.282)")]
    Missing,
    #[error("'{0}' is not an exact version (expected e.g. 2.1.282)")]
    NotExact(String),
}

/// Reads a pinned version: an exact semantic version, never a range or a dist-tag.
pub fn parse_pinned_version(text: &str) -> Result<Version, VersionError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(VersionError::Missing);
    }
    Version::parse(trimmed).map_err(|_| VersionError::NotExact(trimmed.to_string()))
}

/// The version a CLI printed on stdout for `--version`, if it printed one.
///
/// Lines are read in order and the first version found wins, so a banner line without a version
/// does not hide the answer.
pub fn version_in_stdout(stdout: &str) -> Option<Version> {
    stdout.lines().find_map(|line| {
        VERSION_IN_TEXT
            .captures(line)
            .and_then(|captures| Version::parse(&captures[1]).ok())
    })
}

/// What one installation attempt showed once npm had finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptEvidence {
    /// npm did not finish in time and was killed.
    InstallTimedOut { seconds: u64 },
    /// npm exited unsuccessfully; `detail` is the last line it printed on stderr, bounded.
    InstallFailed {
        exit: Option<i32>,
        detail: Option<String>,
    },
    /// npm succeeded but the binary is not where the package puts it.
    BinaryMissing { path: String },
    /// The binary did not answer `--version` in time.
    VersionTimedOut { seconds: u64 },
    /// The binary answered `--version` with this exit code and stdout.
    VersionAnswered { exit: Option<i32>, stdout: String },
}

/// The verdict on one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptVerdict {
    Installed(Version),
    Failed(String),
}

/// Judges one attempt against the pinned version.
pub fn judge_attempt(evidence: &AttemptEvidence, expected: &Version) -> AttemptVerdict {
    match evidence {
        AttemptEvidence::InstallTimedOut { seconds } => AttemptVerdict::Failed(format!(
            "npm install timed out after {seconds}s and was killed"
        )),
        AttemptEvidence::InstallFailed { exit, detail } => {
            let status = describe_exit(*exit);
            match detail {
                Some(line) => AttemptVerdict::Failed(format!("npm install {status}: {line}")),
                None => AttemptVerdict::Failed(format!("npm install {status}")),
            }
        }
        AttemptEvidence::BinaryMissing { path } => AttemptVerdict::Failed(format!(
            "npm install succeeded but the binary {path} does not exist"
        )),
        AttemptEvidence::VersionTimedOut { seconds } => AttemptVerdict::Failed(format!(
            "the binary did not answer --version within {seconds}s"
        )),
        AttemptEvidence::VersionAnswered { exit, stdout } => {
            if *exit != Some(0) {
                return AttemptVerdict::Failed(format!(
                    "the binary's --version {}",
                    describe_exit(*exit)
                ));
            }
            match version_in_stdout(stdout) {
                Some(actual) if actual == *expected => AttemptVerdict::Installed(actual),
                Some(actual) => AttemptVerdict::Failed(format!(
                    "version mismatch: expected {expected}, the binary reports {actual}"
                )),
                None => AttemptVerdict::Failed(format!(
                    "version mismatch: expected {expected}, the binary's --version stdout has no version: {:?}",
                    bounded(stdout.trim(), 120)
                )),
            }
        }
    }
}

fn describe_exit(exit: Option<i32>) -> String {
    match exit {
        Some(code) => format!("exited with status {code}"),
        None => "was killed by a signal".to_string(),
    }
}

/// An npm package name, optionally scoped: what npm accepts as a name, and nothing npm would
/// read as an option (`--registry=…`) or that would leave `node_modules` as a path (`../x`).
static PACKAGE_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:@[A-Za-z0-9~-][A-Za-z0-9._~-]*/)?[A-Za-z0-9~-][A-Za-z0-9._~-]*$")
        .expect("package name pattern compiles")
});

/// Why `cli-package` is not an npm package name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackageNameError {
    #[error("must not be empty")]
    Empty,
    #[error(
        "'{}' is not an npm package name (expected e.g. @anthropic-ai/claude-code)",
        bounded(.0, 100)
    )]
    NotAName(String),
}

/// Reads `cli-package`: an npm package name such as `@anthropic-ai/claude-code`.
pub fn parse_package_name(text: &str) -> Result<&str, PackageNameError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(PackageNameError::Empty);
    }
    if trimmed.len() > 214 || trimmed.starts_with('-') || !PACKAGE_NAME.is_match(trimmed) {
        return Err(PackageNameError::NotAName(trimmed.to_string()));
    }
    Ok(trimmed)
}

/// `cli-attempts` is not a whole number of at least 1; holds the text as given, trimmed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a valid number of attempts (a whole number of at least 1)")]
pub struct AttemptsError(pub String);

/// Reads `cli-attempts`: a whole number of at least 1.
pub fn parse_attempts(text: &str) -> Result<u32, AttemptsError> {
    match text.trim().parse::<u32>() {
        Ok(attempts) if attempts >= 1 => Ok(attempts),
        _ => Err(AttemptsError(text.trim().to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    #[test]
    fn package_names_are_npm_names_and_nothing_else() {
        for name in [
            "@anthropic-ai/claude-code",
            "left-pad",
            "JSONStream",
            " lodash.get ",
        ] {
            assert_eq!(parse_package_name(name), Ok(name.trim()), "{name}");
        }
        for name in [
            "",
            "a b",
            "--registry=http://127.0.0.1/x",
            "-x",
            "../x",
            ".hidden",
            "@scope/../x",
            "@scope",
            "a/b",
            "x@1.0.0",
        ] {
            assert!(parse_package_name(name).is_err(), "{name}");
        }
    }

    #[test]
    fn reads_the_version_claude_code_prints() {
        assert_eq!(
            version_in_stdout("2.1.282 (Claude Code)\n"),
            Some(version("2.1.282"))
        );
    }

    #[test]
    fn reads_prefixed_and_prerelease_versions() {
        assert_eq!(version_in_stdout("tool v1.2.3"), Some(version("1.2.3")));
        assert_eq!(
            version_in_stdout("1.0.0-beta.2+build.5"),
            Some(version("1.0.0-beta.2+build.5"))
        );
    }

    #[test]
    fn a_banner_line_before_the_version_does_not_hide_it() {
        assert_eq!(
            version_in_stdout("Welcome!\n2.1.282 (Claude Code)"),
            Some(version("2.1.282"))
        );
    }

    #[test]
    fn an_ip_like_or_partial_number_is_not_a_version() {
        assert_eq!(version_in_stdout("2.1"), None);
        assert_eq!(version_in_stdout("no version here"), None);
        assert_eq!(version_in_stdout(""), None);
    }

    #[test]
    fn pinned_versions_must_be_exact() {
        assert_eq!(parse_pinned_version(" 2.1.282 "), Ok(version("2.1.282")));
        assert!(parse_pinned_version("latest").is_err());
        assert!(parse_pinned_version("^2.1.0").is_err());
        assert!(parse_pinned_version("2.1").is_err());
        assert!(
            parse_pinned_version("")
                .unwrap_err()
                .to_string()
                .contains("required")
        );
    }

    #[test]
    fn attempts_are_whole_numbers_of_at_least_one() {
        assert_eq!(parse_attempts("2"), Ok(2));
        assert_eq!(parse_attempts("1"), Ok(1));
        for bad in ["0", "abc", "-1", "1.5", ""] {
            assert!(parse_attempts(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_right_version_on_stdout_is_installed() {
        let evidence = AttemptEvidence::VersionAnswered {
            exit: Some(0),
            stdout: "2.1.282 (Claude Code)".into(),
        };
        assert_eq!(
            judge_attempt(&evidence, &version("2.1.282")),
            AttemptVerdict::Installed(version("2.1.282"))
        );
    }

    #[test]
    fn a_wrong_version_names_expected_and_actual() {
        let evidence = AttemptEvidence::VersionAnswered {
            exit: Some(0),
            stdout: "2.0.0 (Claude Code)".into(),
        };
        let AttemptVerdict::Failed(message) = judge_attempt(&evidence, &version("2.1.282")) else {
            panic!("a wrong version must fail");
        };
        assert!(message.contains("expected 2.1.282"), "{message}");
        assert!(message.contains("reports 2.0.0"), "{message}");
    }

    #[test]
    fn a_failing_version_command_fails_even_with_the_right_text() {
        let evidence = AttemptEvidence::VersionAnswered {
            exit: Some(1),
            stdout: "2.1.282".into(),
        };
        assert!(matches!(
            judge_attempt(&evidence, &version("2.1.282")),
            AttemptVerdict::Failed(_)
        ));
    }

    #[test]
    fn install_failures_carry_the_last_stderr_line() {
        let evidence = AttemptEvidence::InstallFailed {
            exit: Some(1),
            detail: Some("npm error 404 Not Found".into()),
        };
        assert_eq!(
            judge_attempt(&evidence, &version("1.0.0")),
            AttemptVerdict::Failed(
                "npm install exited with status 1: npm error 404 Not Found".into()
            )
        );
    }
}
