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
//! - a dist without binaries (between releases) passes, saying so;
//! - every Linux binary is an ELF file for its target's machine (x86-64, AArch64) whose highest
//!   `GLIBC_` symbol version is at most 2.17;
//! - the aarch64 binary reports `klaud <crate version>` under `qemu-aarch64` where qemu-user and
//!   the aarch64 C library (Debian's `libc6-arm64-cross`) are installed, as `.ci/run` does.
//!
//! `scripts/build-dist.sh` rebuilds dist/. `KLAUD_DIST_DIR` points these tests at another
//! directory of the same layout, such as a scratch build
//! (`KLAUD_DIST_DIR=DIR scripts/build-dist.sh`).

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
        let reported = if Some(target) == host_target() {
            version_of(binary)
        } else if let Some(mut qemu) =
            qemu_aarch64().filter(|_| target == "aarch64-unknown-linux-gnu")
        {
            qemu.arg(binary);
            version_through(qemu)
        } else {
            unchecked_versions.push(target.to_string());
            continue;
        };
        match reported {
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
    version_through(Command::new(binary))
}

/// The first stdout line of `command --version`.
fn version_through(mut command: Command) -> Result<String, String> {
    // A script written a moment ago by another test thread can still be "text file busy" while a
    // concurrently forked child holds it open; that passes within milliseconds.
    let mut attempts = 0;
    let output = loop {
        match command.arg("--version").output() {
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

/// The directory checked: `KLAUD_DIST_DIR` when set, else the repository's `dist/`.
fn dist_directory() -> PathBuf {
    std::env::var_os("KLAUD_DIST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("dist"))
}

/// The highest glibc 2.x symbol version a Linux binary may need: CentOS 7's.
const GLIBC_FLOOR: (u32, u32) = (2, 17);

/// ELF `e_machine` of each Linux target.
fn elf_machine_of(target: &str) -> Option<u16> {
    match target {
        "x86_64-unknown-linux-gnu" => Some(62),   // EM_X86_64
        "aarch64-unknown-linux-gnu" => Some(183), // EM_AARCH64
        _ => None,
    }
}

/// A 64-bit little-endian ELF file: its machine and the symbol versions it needs from its shared
/// libraries (`.gnu.version_r`, e.g. `GLIBC_2.17`).
#[derive(Debug)]
struct Elf {
    machine: u16,
    needed_versions: Vec<String>,
}

fn read_elf(bytes: &[u8]) -> Result<Elf, String> {
    let u16_at = |at: usize| -> Result<u16, String> {
        bytes
            .get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .ok_or_else(|| format!("truncated at byte {at}"))
    };
    let u32_at = |at: usize| -> Result<u32, String> {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
            .ok_or_else(|| format!("truncated at byte {at}"))
    };
    let u64_at = |at: usize| -> Result<usize, String> {
        bytes
            .get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize)
            .ok_or_else(|| format!("truncated at byte {at}"))
    };
    if bytes.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err("not an ELF file".to_string());
    }
    if bytes.get(4) != Some(&2) || bytes.get(5) != Some(&1) {
        return Err("not a 64-bit little-endian ELF file".to_string());
    }
    let machine = u16_at(18)?;
    let section_headers = u64_at(0x28)?;
    let header_size = usize::from(u16_at(0x3a)?);
    let sections = usize::from(u16_at(0x3c)?);
    let section = |index: usize| section_headers + index * header_size;
    let mut needed_versions = Vec::new();
    for index in 0..sections {
        // SHT_GNU_verneed: Verneed entries, each with its Vernaux names in the linked strings.
        if u32_at(section(index) + 4)? != 0x6fff_fffe {
            continue;
        }
        let offset = u64_at(section(index) + 24)?;
        let strings = u64_at(section(u32_at(section(index) + 40)? as usize) + 24)?;
        let entries = u32_at(section(index) + 44)?;
        let mut need = offset;
        for _ in 0..entries {
            let count = u16_at(need + 2)?;
            let mut aux = need + u32_at(need + 8)? as usize;
            for _ in 0..count {
                let name = strings + u32_at(aux + 8)? as usize;
                let end = bytes[name..]
                    .iter()
                    .position(|&byte| byte == 0)
                    .ok_or("an unterminated version name")?;
                needed_versions
                    .push(String::from_utf8_lossy(&bytes[name..name + end]).into_owned());
                aux += u32_at(aux + 12)? as usize;
            }
            need += u32_at(need + 12)? as usize;
        }
    }
    Ok(Elf {
        machine,
        needed_versions,
    })
}

/// The highest `GLIBC_2.x[.y]` among `versions`, as (2, x).
fn highest_glibc(versions: &[String]) -> Option<(u32, u32)> {
    versions
        .iter()
        .filter_map(|version| version.strip_prefix("GLIBC_"))
        .filter_map(|number| {
            let mut parts = number.split('.').map(str::parse::<u32>);
            match (parts.next(), parts.next()) {
                (Some(Ok(major)), Some(Ok(minor))) => Some((major, minor)),
                _ => None,
            }
        })
        .max()
}

/// Why `binary` is not a Linux binary of `target` for glibc 2.17, if it is not.
fn linux_binary_problem(binary: &Path, target: &str) -> Option<String> {
    let expected = elf_machine_of(target)?;
    let bytes =
        fs::read(binary).unwrap_or_else(|error| panic!("read {}: {error}", binary.display()));
    let elf = match read_elf(&bytes) {
        Ok(elf) => elf,
        Err(error) => return Some(format!("{}: {error}", binary.display())),
    };
    if elf.machine != expected {
        return Some(format!(
            "{} is an ELF file for machine {}, not {expected} ({target})",
            binary.display(),
            elf.machine
        ));
    }
    match highest_glibc(&elf.needed_versions) {
        None => Some(format!(
            "{} needs no GLIBC_ symbol version: not a glibc binary",
            binary.display()
        )),
        Some(highest) if highest > GLIBC_FLOOR => Some(format!(
            "{} needs GLIBC_{}.{}, newer than {}.{}",
            binary.display(),
            highest.0,
            highest.1,
            GLIBC_FLOOR.0,
            GLIBC_FLOOR.1
        )),
        Some(_) => None,
    }
}

#[test]
fn linux_binaries_are_elf_files_of_their_target_for_glibc_2_17() {
    let dist = dist_directory();
    let mut checked = Vec::new();
    for (path, binary) in binaries_in(&dist) {
        let target = path.trim_end_matches("/klaud");
        if elf_machine_of(target).is_none() {
            continue;
        }
        if let Some(problem) = linux_binary_problem(&binary, target) {
            panic!("{problem}");
        }
        let elf = read_elf(&fs::read(&binary).expect("read")).expect("an ELF file");
        let (major, minor) = highest_glibc(&elf.needed_versions).expect("a glibc version");
        checked.push(format!("{target} (highest GLIBC_{major}.{minor})"));
    }
    eprintln!(
        "{}: {}",
        dist.display(),
        if checked.is_empty() {
            "no Linux binaries".to_string()
        } else {
            checked.join(", ")
        }
    );
}

#[test]
fn the_checker_refuses_a_binary_of_another_machine_or_a_newer_glibc() {
    // The test build of klaud: an x86-64 binary linked against this machine's glibc (2.36 on
    // Debian 12), which needs symbol versions newer than 2.17.
    let host_build = Path::new(env!("CARGO_BIN_EXE_klaud"));
    let elf = read_elf(&fs::read(host_build).expect("read")).expect("an ELF file");
    let highest = highest_glibc(&elf.needed_versions).expect("a glibc binary");
    if std::env::consts::ARCH == "x86_64" {
        let problem = linux_binary_problem(host_build, "aarch64-unknown-linux-gnu")
            .expect("an x86-64 binary is not an aarch64 one");
        assert!(problem.contains("for machine 62, not 183"), "{problem}");
    }
    let target = host_target().expect("a Linux or macOS host");
    if highest > GLIBC_FLOOR && elf_machine_of(target).is_some() {
        let problem = linux_binary_problem(host_build, target).expect("too new a glibc");
        assert!(problem.contains("newer than 2.17"), "{problem}");
    } else {
        eprintln!(
            "this machine's glibc needs only GLIBC_{}.{}",
            highest.0, highest.1
        );
    }
    assert!(read_elf(b"#!/bin/sh\n").is_err());
    assert_eq!(
        highest_glibc(&[
            "GLIBC_2.2.5".into(),
            "GLIBC_2.17".into(),
            "GLIBC_PRIVATE".into()
        ]),
        Some((2, 17))
    );
}

/// `qemu-aarch64` with the aarch64 C library's root, when this machine has both.
fn qemu_aarch64() -> Option<Command> {
    let root = Path::new("/usr/aarch64-linux-gnu");
    let path = std::env::var_os("PATH")?;
    let qemu = std::env::split_paths(&path)
        .map(|directory| directory.join("qemu-aarch64"))
        .find(|candidate| candidate.is_file())?;
    if !root.join("lib/ld-linux-aarch64.so.1").exists() {
        return None;
    }
    let mut command = Command::new(qemu);
    command.arg("-L").arg(root);
    Some(command)
}

#[test]
fn the_aarch64_binary_reports_the_crate_version_under_qemu() {
    let binary = dist_directory().join("aarch64-unknown-linux-gnu/klaud");
    let required = std::env::var_os("KLAUD_REQUIRE_DIST").is_some();
    if !binary.is_file() {
        assert!(
            !required,
            "{} is absent and KLAUD_REQUIRE_DIST is set",
            binary.display()
        );
        eprintln!(
            "skipped: {} is absent (scripts/build-dist.sh builds it)",
            binary.display()
        );
        return;
    }
    let Some(mut qemu) = qemu_aarch64() else {
        assert!(
            !required,
            "qemu-aarch64 or /usr/aarch64-linux-gnu is missing and KLAUD_REQUIRE_DIST is set"
        );
        eprintln!(
            "skipped: qemu-aarch64 or /usr/aarch64-linux-gnu is missing (apt-get install qemu-user libc6-arm64-cross)"
        );
        return;
    };
    qemu.arg(&binary);
    let output = qemu.arg("--version").output().expect("run qemu-aarch64");
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprintln!("qemu-aarch64 {} --version:\n{stdout}", binary.display());
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let version = fs::read_to_string(dist_directory().join("VERSION")).unwrap_or_default();
    if version.trim() == CRATE_VERSION {
        assert_eq!(
            stdout.lines().next(),
            Some(format!("klaud {CRATE_VERSION}").as_str())
        );
    } else {
        assert!(stdout.starts_with("klaud "), "{stdout}");
    }
    assert!(
        stdout
            .lines()
            .any(|line| line.starts_with("source-fingerprint ")),
        "{stdout}"
    );
}

#[test]
fn the_dist_directory_is_consistent_with_the_crate() {
    let dist = dist_directory();
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
