//! `cargo run --example demo`: one wave of klaud against an in-process fake GitHub, told step by
//! step (the wave itself is `tests/demo/mod.rs`). `cargo run --example demo -- --issues` runs
//! the wave of a repository whose maintainers hand work to the agent by labelling issues instead
//! (`tests/issues_wave/mod.rs`).
//!
//! The demo runs the real `klaud` binary, as a workflow step would. Cargo does not build a
//! package's binaries for its examples, so the demo first runs `cargo build --bin klaud` with
//! the same cargo, manifest, target directory and profile it was built with (a no-op when the
//! binary is current), then points the step runner at `<target>/<profile>/klaud`.

// The demo starts cargo and klaud as child processes, like the integration tests do.
#![allow(clippy::disallowed_methods)]

use klaud_fake_github as fake_github;
// It includes `step_support/` as `recover_support/` does: two copies of a few helpers.
#[allow(clippy::duplicate_mod)]
#[path = "../github_mode_support/mod.rs"]
mod github_mode_support;
#[path = "../issues_wave/mod.rs"]
mod issues_wave;
#[path = "../recover_support/mod.rs"]
mod recover_support;
#[path = "mod.rs"]
mod wave;

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Instant;

/// Builds `klaud` next to this example (`<target>/<profile>/examples/demo` →
/// `<target>/<profile>/klaud`) and returns its path.
fn build_klaud() -> Result<PathBuf, String> {
    let example = std::env::current_exe().map_err(|error| error.to_string())?;
    let profile_dir = example
        .parent()
        .and_then(|examples| examples.parent())
        .ok_or("the demo does not run from a cargo target directory")?;
    let target_dir = profile_dir
        .parent()
        .ok_or("the demo does not run from a cargo target directory")?;
    let profile = profile_dir
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or("the demo does not run from a cargo target directory")?;
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args(["build", "--bin", "klaud", "--manifest-path"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir);
    match profile {
        "debug" => {}
        "release" => {
            cargo.arg("--release");
        }
        other => {
            cargo.args(["--profile", other]);
        }
    }
    eprintln!("demo: cargo build --bin klaud (a no-op when it is current)");
    let status = cargo
        .status()
        .map_err(|error| format!("cannot run cargo: {error}"))?;
    if !status.success() {
        return Err(format!("cargo build --bin klaud failed ({status})"));
    }
    let binary = profile_dir.join(format!("klaud{}", std::env::consts::EXE_SUFFIX));
    if binary.is_file() {
        Ok(binary)
    } else {
        Err(format!("no klaud binary at {}", binary.display()))
    }
}

fn main() -> ExitCode {
    let binary = match build_klaud() {
        Ok(binary) => binary,
        Err(message) => {
            eprintln!("demo: {message}");
            return ExitCode::FAILURE;
        }
    };
    // SAFETY: set before any other thread exists; the step runner finds the binary through
    // `CARGO_BIN_EXE_klaud`, as it does under `cargo test`.
    unsafe { std::env::set_var("CARGO_BIN_EXE_klaud", &binary) };
    let started = Instant::now();
    if std::env::args()
        .skip(1)
        .any(|argument| argument == "--issues")
    {
        issues_wave::run_issue_wave(true);
    } else {
        wave::run_wave(true);
    }
    println!();
    println!(
        "(the wave took {:.1} s: every step above is the klaud binary against the fake)",
        started.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}
