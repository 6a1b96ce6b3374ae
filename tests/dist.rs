//! `dist/` holds what action.yml runs: `<target>/klaud` binaries, `SHA256SUMS` and `VERSION` (the
//! crate version the binaries are of). These tests keep it honest:
//!
//! - `SHA256SUMS` lists exactly the binaries present, no more and no fewer;
//! - when `VERSION` is the crate's version (the binaries claim to be current), every binary must
//!   match its checksum, and a binary this machine can run must report `klaud <crate version>`;
//! - a binary of the crate's version built from other sources (its `source-fingerprint`, see
//!   build.rs, is not the one of these sources) is only reported: action.yml builds from source;
//! - when `VERSION` names an older version, dist is only reported stale: action.yml then builds
//!   from source, which is correct, just slower;
//! - a dist without binaries (between releases) passes, saying so.
//!
//! `scripts/build-dist.sh` rebuilds dist/.

// The check runs the binaries it finds (`--version`).
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

const CRATE_VERSION: &str = env!("CARGO_PKG_VERSION");
/// The fingerprint of the sources these tests were built from (build.rs).
const SOURCE_FINGERPRINT: &str = env!("KLAUD_SOURCE_FINGERPRINT");

/// What a consistent dist/ is.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// No binaries: action.yml builds from source.
    NoBinaries,
    /// The binaries are of the crate's version and match their checksums. `unchecked_versions`
    /// lists the targets this machine cannot run, whose `--version` was not asked.
    Current {
        targets: Vec<String>,
        unchecked_versions: Vec<String>,
    },
    /// The binaries are of an older version: action.yml builds from source until dist is rebuilt.
    Stale { dist_version: String },
    /// The binaries are of the crate's version and match their checksums, but `targets` do not
    /// carry these sources' fingerprint: action.yml builds from source until dist is rebuilt.
    OtherSources { targets: Vec<String> },
}

impl fmt::Display for Verdict {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::NoBinaries => write!(
                formatter,
                "dist/ holds no binaries: the action builds klaud from source"
            ),
            Verdict::Current {
                targets,
                unchecked_versions,
            } => {
                write!(
                    formatter,
                    "dist/ is current ({CRATE_VERSION}): {}",
                    targets.join(", ")
                )?;
                if !unchecked_versions.is_empty() {
                    write!(
                        formatter,
                        "; not runnable here, so only checksummed: {}",
                        unchecked_versions.join(", ")
                    )?;
                }
                Ok(())
            }
            Verdict::Stale { dist_version } => write!(
                formatter,
                "dist/ is stale: its binaries are of {dist_version}, the crate is {CRATE_VERSION}; \
                 the action builds from source until scripts/build-dist.sh is run"
            ),
            Verdict::OtherSources { targets } => write!(
                formatter,
                "dist/ is stale: {} built from other sources than these (source fingerprint \
                 {SOURCE_FINGERPRINT}); the action builds from source until \
                 scripts/build-dist.sh is run",
                targets.join(", ")
            ),
        }
    }
}

/// Checks `dist` against the crate version and the source fingerprint; `Err` lists every
/// inconsistency found.
fn inspect(dist: &Path, crate_version: &str, fingerprint: &str) -> Result<Verdict, Vec<String>> {
    let mut problems = Vec::new();
    let present = binaries_in(dist);
    let listed = match read_checksums(dist, &mut problems) {
        Some(listed) => listed,
        None if present.is_empty() => return Ok(Verdict::NoBinaries),
        None => {
            problems.push("dist/SHA256SUMS is missing, but dist/ holds binaries".to_string());
            BTreeMap::new()
        }
    };
    for path in listed.keys().filter(|path| !present.contains_key(*path)) {
        problems.push(format!(
            "dist/SHA256SUMS lists {path}, which is not in dist/"
        ));
    }
    for path in present.keys().filter(|path| !listed.contains_key(*path)) {
        problems.push(format!("dist/{path} is not listed in dist/SHA256SUMS"));
    }
    if present.is_empty() {
        return if problems.is_empty() {
            Ok(Verdict::NoBinaries)
        } else {
            Err(problems)
        };
    }

    let crate_version = semver::Version::parse(crate_version).expect("the crate version is semver");
    let dist_version = match fs::read_to_string(dist.join("VERSION")) {
        Err(_) => {
            problems.push("dist/VERSION is missing, but dist/ holds binaries".to_string());
            return Err(problems);
        }
        Ok(text) => match semver::Version::parse(text.trim()) {
            Ok(version) => version,
            Err(error) => {
                problems.push(format!("dist/VERSION is not a version ({error})"));
                return Err(problems);
            }
        },
    };
    if dist_version < crate_version {
        return if problems.is_empty() {
            Ok(Verdict::Stale {
                dist_version: dist_version.to_string(),
            })
        } else {
            Err(problems)
        };
    }
    if dist_version > crate_version {
        problems.push(format!(
            "dist/VERSION is {dist_version}, newer than the crate's {crate_version}"
        ));
        return Err(problems);
    }

    // dist/VERSION claims the binaries current: hold each of them to it.
    let expected_version = format!("klaud {crate_version}");
    let mut unchecked_versions = Vec::new();
    let mut other_sources = Vec::new();
    for (path, binary) in &present {
        let target = path.trim_end_matches("/klaud");
        if !carries_fingerprint(binary, fingerprint) {
            other_sources.push(target.to_string());
        }
        if let Some(expected_sum) = listed.get(path) {
            let actual_sum = sha256_of(binary);
            if &actual_sum != expected_sum {
                problems.push(format!(
                    "dist/{path} has sha256 {actual_sum}, dist/SHA256SUMS says {expected_sum}"
                ));
            }
        }
        if Some(target) != host_target() {
            unchecked_versions.push(target.to_string());
            continue;
        }
        match version_of(binary) {
            Ok(reported) if reported == expected_version => {}
            Ok(reported) => problems.push(format!(
                "dist/{path} reports {reported:?}, but dist/VERSION claims {expected_version:?}"
            )),
            Err(error) => problems.push(format!("dist/{path} --version failed: {error}")),
        }
    }
    if problems.is_empty() && !other_sources.is_empty() {
        Ok(Verdict::OtherSources {
            targets: other_sources,
        })
    } else if problems.is_empty() {
        Ok(Verdict::Current {
            targets: present
                .keys()
                .map(|path| path.trim_end_matches("/klaud").to_string())
                .collect(),
            unchecked_versions,
        })
    } else {
        Err(problems)
    }
}

/// `<target>/klaud` → its path, for every binary in `dist`.
fn binaries_in(dist: &Path) -> BTreeMap<String, PathBuf> {
    let Ok(entries) = fs::read_dir(dist) else {
        return BTreeMap::new();
    };
    entries
        .map(|entry| entry.expect("read dist/").path())
        .filter(|directory| directory.join("klaud").is_file())
        .map(|directory| {
            let target = directory
                .file_name()
                .expect("a directory name")
                .to_string_lossy()
                .into_owned();
            (format!("{target}/klaud"), directory.join("klaud"))
        })
        .collect()
}

/// `dist/SHA256SUMS` as path → checksum, `None` when the file is absent. Lines are
/// `<sha256>  <target>/klaud`, as sha256sum writes them.
fn read_checksums(dist: &Path, problems: &mut Vec<String>) -> Option<BTreeMap<String, String>> {
    let text = fs::read_to_string(dist.join("SHA256SUMS")).ok()?;
    let mut listed = BTreeMap::new();
    for (index, line) in text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.is_empty())
    {
        let parsed = line.split_once("  ").or_else(|| line.split_once(" *"));
        match parsed {
            Some((sum, path)) if sum.len() == 64 && sum.bytes().all(|b| b.is_ascii_hexdigit()) => {
                if listed
                    .insert(path.to_string(), sum.to_ascii_lowercase())
                    .is_some()
                {
                    problems.push(format!("dist/SHA256SUMS lists {path} twice"));
                }
            }
            _ => problems.push(format!(
                "dist/SHA256SUMS line {} is not `<sha256>  <target>/klaud`: {line:?}",
                index + 1
            )),
        }
    }
    Some(listed)
}

/// Whether `binary` holds `source-fingerprint <fingerprint>` (what its `--version` prints; the
/// bytes are searched, so binaries of other platforms are checked too, as build-dist.sh does).
fn carries_fingerprint(binary: &Path, fingerprint: &str) -> bool {
    let bytes =
        fs::read(binary).unwrap_or_else(|error| panic!("read {}: {error}", binary.display()));
    let needle = format!("source-fingerprint {fingerprint}");
    bytes
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

fn sha256_of(path: &Path) -> String {
    let bytes = fs::read(path).unwrap_or_else(|error| panic!("read {}: {error}", path.display()));
    Sha256::digest(&bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The first stdout line of `binary --version`.
fn version_of(binary: &Path) -> Result<String, String> {
    // A script written a moment ago by another test thread can still be "text file busy" while a
    // concurrently forked child holds it open; that passes within milliseconds.
    let mut attempts = 0;
    let output = loop {
        match Command::new(binary).arg("--version").output() {
            Err(error) if error.raw_os_error() == Some(libc::ETXTBSY) && attempts < 50 => {
                attempts += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            result => break result.map_err(|error| error.to_string())?,
        }
    };
    if !output.status.success() {
        return Err(format!("it exited with {}", output.status));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string())
}

/// The target triple action.yml picks for this machine, if it has one.
fn host_target() -> Option<&'static str> {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => Some("x86_64-unknown-linux-gnu"),
        ("linux", "aarch64") => Some("aarch64-unknown-linux-gnu"),
        ("macos", "aarch64") => Some("aarch64-apple-darwin"),
        _ => None,
    }
}

#[test]
fn the_dist_directory_is_consistent_with_the_crate() {
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("dist");
    match inspect(&dist, CRATE_VERSION, SOURCE_FINGERPRINT) {
        Ok(verdict) => eprintln!("{verdict}"),
        Err(problems) => panic!(
            "dist/ is inconsistent (rebuild it with scripts/build-dist.sh):\n- {}",
            problems.join("\n- ")
        ),
    }
}

/// The source fingerprint the fake binaries are checked against.
const FAKE_FINGERPRINT: &str = "5f0e5f0e5f0e5f0e5f0e5f0e5f0e5f0e5f0e5f0e5f0e5f0e5f0e5f0e5f0e5f0e";

/// A scratch dist/ with fake binaries: shell scripts that print a version.
struct FakeDist(tempfile::TempDir);

impl FakeDist {
    fn new() -> Self {
        FakeDist(tempfile::tempdir().expect("create a scratch dist"))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }

    /// A binary for `target` that reports `klaud <version>`, built from the sources checked.
    fn with_binary(self, target: &str, version: &str) -> Self {
        self.with_binary_from(target, version, Some(FAKE_FINGERPRINT))
    }

    /// A binary for `target` that reports `klaud <version>` and, if given, the source fingerprint.
    fn with_binary_from(self, target: &str, version: &str, fingerprint: Option<&str>) -> Self {
        use std::os::unix::fs::PermissionsExt;
        let binary = self.path().join(target).join("klaud");
        fs::create_dir_all(binary.parent().expect("a parent")).expect("create <target>/");
        let mut script = format!("#!/bin/sh\necho 'klaud {version}'\n");
        if let Some(fingerprint) = fingerprint {
            script.push_str(&format!("echo 'source-fingerprint {fingerprint}'\n"));
        }
        fs::write(&binary, script).expect("write");
        fs::set_permissions(&binary, fs::Permissions::from_mode(0o755)).expect("chmod");
        self
    }

    /// SHA256SUMS with the true checksum of every binary present.
    fn with_true_checksums(self) -> Self {
        let text: String = binaries_in(self.path())
            .iter()
            .map(|(path, binary)| format!("{}  {path}\n", sha256_of(binary)))
            .collect();
        self.with_checksums(&text)
    }

    fn with_checksums(self, text: &str) -> Self {
        fs::write(self.path().join("SHA256SUMS"), text).expect("write SHA256SUMS");
        self
    }

    fn with_version_file(self, version: &str) -> Self {
        fs::write(self.path().join("VERSION"), format!("{version}\n")).expect("write VERSION");
        self
    }

    fn inspect(&self) -> Result<Verdict, Vec<String>> {
        inspect(self.path(), "0.4.0", FAKE_FINGERPRINT)
    }
}

fn host() -> &'static str {
    host_target().expect("these tests run on a machine action.yml has a target for")
}

fn assert_problem(result: Result<Verdict, Vec<String>>, expected: &str) {
    let problems = result.expect_err("dist/ should be inconsistent");
    assert!(
        problems.iter().any(|problem| problem.contains(expected)),
        "no problem mentions {expected:?}: {problems:?}"
    );
}

#[test]
fn a_current_dist_whose_binaries_match_passes() {
    let dist = FakeDist::new()
        .with_binary(host(), "0.4.0")
        .with_true_checksums()
        .with_version_file("0.4.0");
    assert_eq!(
        dist.inspect(),
        Ok(Verdict::Current {
            targets: vec![host().to_string()],
            unchecked_versions: vec![],
        })
    );
}

#[test]
fn a_current_dist_whose_binary_reports_another_version_fails() {
    let dist = FakeDist::new()
        .with_binary(host(), "0.3.9")
        .with_true_checksums()
        .with_version_file("0.4.0");
    assert_problem(dist.inspect(), "reports \"klaud 0.3.9\"");
}

#[test]
fn a_current_dist_whose_binary_does_not_match_its_checksum_fails() {
    let dist = FakeDist::new()
        .with_binary(host(), "0.4.0")
        .with_checksums(&format!("{}  {}/klaud\n", "0".repeat(64), host()))
        .with_version_file("0.4.0");
    assert_problem(dist.inspect(), "dist/SHA256SUMS says 0000");
}

#[test]
fn a_binary_of_another_platform_is_checksummed_but_not_run() {
    let other = if host() == "aarch64-apple-darwin" {
        "x86_64-unknown-linux-gnu"
    } else {
        "aarch64-apple-darwin"
    };
    let dist = FakeDist::new()
        .with_binary(other, "0.0.1")
        .with_true_checksums()
        .with_version_file("0.4.0");
    assert_eq!(
        dist.inspect(),
        Ok(Verdict::Current {
            targets: vec![other.to_string()],
            unchecked_versions: vec![other.to_string()],
        })
    );
}

#[test]
fn a_checksum_list_naming_a_missing_binary_fails() {
    let dist = FakeDist::new()
        .with_binary(host(), "0.4.0")
        .with_true_checksums()
        .with_version_file("0.4.0");
    let mut sums = fs::read_to_string(dist.path().join("SHA256SUMS")).expect("read");
    sums.push_str(&format!("{}  aarch64-apple-darwin/klaud\n", "a".repeat(64)));
    let dist = dist.with_checksums(&sums);
    assert_problem(
        dist.inspect(),
        "lists aarch64-apple-darwin/klaud, which is not in dist/",
    );
}

#[test]
fn a_binary_missing_from_the_checksum_list_fails() {
    let dist = FakeDist::new()
        .with_binary(host(), "0.4.0")
        .with_true_checksums()
        .with_binary("aarch64-apple-darwin", "0.4.0")
        .with_version_file("0.4.0");
    assert_problem(
        dist.inspect(),
        "dist/aarch64-apple-darwin/klaud is not listed in dist/SHA256SUMS",
    );
}

#[test]
fn binaries_without_a_checksum_list_fail() {
    let dist = FakeDist::new()
        .with_binary(host(), "0.4.0")
        .with_version_file("0.4.0");
    assert_problem(dist.inspect(), "dist/SHA256SUMS is missing");
}

#[test]
fn binaries_without_a_version_file_fail() {
    let dist = FakeDist::new()
        .with_binary(host(), "0.4.0")
        .with_true_checksums();
    assert_problem(dist.inspect(), "dist/VERSION is missing");
}

#[test]
fn a_version_file_newer_than_the_crate_fails() {
    let dist = FakeDist::new()
        .with_binary(host(), "0.5.0")
        .with_true_checksums()
        .with_version_file("0.5.0");
    assert_problem(dist.inspect(), "newer than the crate's 0.4.0");
}

#[test]
fn an_older_dist_is_reported_stale_and_passes_whatever_its_binaries_say() {
    let dist = FakeDist::new()
        .with_binary(host(), "0.3.0")
        .with_checksums(&format!("{}  {}/klaud\n", "0".repeat(64), host()))
        .with_version_file("0.3.0");
    let verdict = dist.inspect().expect("a stale dist passes");
    assert_eq!(
        verdict,
        Verdict::Stale {
            dist_version: "0.3.0".to_string()
        }
    );
    assert!(verdict.to_string().contains("builds from source"));
}

#[test]
fn a_dist_without_binaries_passes_saying_so() {
    let dist = FakeDist::new();
    fs::create_dir_all(dist.path().join("schema")).expect("create schema/");
    let verdict = dist.inspect().expect("an empty dist passes");
    assert_eq!(verdict, Verdict::NoBinaries);
    assert!(verdict.to_string().contains("no binaries"));
}

#[test]
fn a_current_binary_built_from_other_sources_is_reported_and_passes() {
    let other = "0".repeat(64);
    let dist = FakeDist::new()
        .with_binary_from(host(), "0.4.0", Some(&other))
        .with_true_checksums()
        .with_version_file("0.4.0");
    let verdict = dist
        .inspect()
        .expect("a dist built from other sources passes");
    assert_eq!(
        verdict,
        Verdict::OtherSources {
            targets: vec![host().to_string()]
        }
    );
    assert!(verdict.to_string().contains("builds from source"));
}

#[test]
fn a_binary_without_a_source_fingerprint_counts_as_built_from_other_sources() {
    let other = if host() == "aarch64-apple-darwin" {
        "x86_64-unknown-linux-gnu"
    } else {
        "aarch64-apple-darwin"
    };
    let dist = FakeDist::new()
        .with_binary(host(), "0.4.0")
        .with_binary_from(other, "0.4.0", None)
        .with_true_checksums()
        .with_version_file("0.4.0");
    assert_eq!(
        dist.inspect(),
        Ok(Verdict::OtherSources {
            targets: vec![other.to_string()]
        })
    );
}
