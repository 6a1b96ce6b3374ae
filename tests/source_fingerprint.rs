//! The source fingerprint: build.rs embeds it in the binary (`klaud --version`, second line), and
//! action.yml's resolve step computes it for its checkout with `scripts/source-fingerprint.sh`
//! before it trusts a prebuilt `dist/` binary. These tests hold the two algorithms to the same
//! value (build.rs is included here and run next to the script on the same trees), check that
//! every change to the sources changes it and nothing else does, and run the resolve step itself
//! on a scratch copy of the action: the binary built from its sources is used, the same binary
//! after a source change is not, and a source build takes no compiler flags from the job.

// The tests run the script, the binary and the resolve step, and read PATH to find their tools.
#![allow(clippy::disallowed_methods)]

#[path = "../build.rs"]
#[allow(dead_code)] // its `main` is the build script's
mod build_script;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The fingerprint build.rs embedded when these tests (and the binary) were built.
const EMBEDDED: &str = env!("KLAUD_SOURCE_FINGERPRINT");

fn manifest_directory() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// What `scripts/source-fingerprint.sh <root>` prints, or its stderr as the error.
fn script_fingerprint(root: &Path) -> Result<String, String> {
    let output = Command::new("bash")
        .arg(manifest_directory().join("scripts/source-fingerprint.sh"))
        .arg(root)
        .output()
        .expect("run bash");
    if output.status.success() {
        Ok(String::from_utf8(output.stdout)
            .expect("UTF-8")
            .trim_end()
            .to_string())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// Both algorithms on `root`; they must agree, and the value is returned.
fn fingerprint(root: &Path) -> String {
    let from_build_script = build_script::source_fingerprint(root).expect("build.rs fingerprints");
    let from_script = script_fingerprint(root).expect("the script fingerprints");
    assert_eq!(
        from_script,
        from_build_script,
        "scripts/source-fingerprint.sh and build.rs disagree on {}",
        root.display()
    );
    assert_eq!(from_script.len(), 64, "a SHA-256 in hex: {from_script}");
    from_script
}

/// Copies the files the fingerprint covers (and nothing else) from `from` to `to`.
fn copy_sources(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("create the copy");
    for file in ["Cargo.toml", "Cargo.lock", "build.rs"] {
        fs::copy(from.join(file), to.join(file)).expect("copy a root file");
    }
    copy_tree(&from.join("src"), &to.join("src"));
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("create a directory");
    for entry in fs::read_dir(from).expect("list a directory") {
        let entry = entry.expect("a directory entry");
        let file_type = entry.file_type().expect("its type");
        if file_type.is_dir() {
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        } else if file_type.is_file() {
            fs::copy(entry.path(), to.join(entry.file_name())).expect("copy a file");
        }
    }
}

/// A copy of this crate's sources in a directory whose path has a space in it.
struct Copy {
    _directory: tempfile::TempDir,
    root: PathBuf,
}

impl Copy {
    fn new() -> Self {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let root = directory.path().join("a checkout").join("klaud");
        copy_sources(manifest_directory(), &root);
        Copy {
            _directory: directory,
            root,
        }
    }

    fn write(&self, relative: &str, contents: &[u8]) {
        let path = self.root.join(relative);
        fs::create_dir_all(path.parent().expect("a parent")).expect("create directories");
        fs::write(path, contents).expect("write a file");
    }
}

#[test]
fn the_binary_reports_the_fingerprint_of_the_sources_it_was_built_from() {
    let output = Command::new(env!("CARGO_BIN_EXE_klaud"))
        .arg("--version")
        .output()
        .expect("run klaud --version");
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    assert_eq!(
        stdout,
        format!(
            "klaud {}\nsource-fingerprint {EMBEDDED}\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    assert_eq!(
        fingerprint(manifest_directory()),
        EMBEDDED,
        "the sources changed since this test was built, or the algorithms differ"
    );

    // -V stays one line.
    let short = Command::new(env!("CARGO_BIN_EXE_klaud"))
        .arg("-V")
        .output()
        .expect("run klaud -V");
    assert_eq!(
        String::from_utf8_lossy(&short.stdout),
        format!("klaud {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn the_fingerprint_does_not_depend_on_where_the_sources_are_or_what_else_is_there() {
    let original = fingerprint(manifest_directory());
    let copy = Copy::new();
    assert_eq!(fingerprint(&copy.root), original, "a copy elsewhere");

    // What git ignores or the binary is not built from does not count, nor do symbolic links
    // (an editor's lock file in src/ is one).
    copy.write("target/release/klaud", b"a build");
    copy.write("dist/x86_64-unknown-linux-gnu/klaud", b"a prebuilt binary");
    copy.write("README.md", b"# other documentation\n");
    copy.write("tests/new_test.rs", b"#[test]\nfn t() {}\n");
    std::os::unix::fs::symlink("lib.rs", copy.root.join("src/.#lib.rs")).expect("symlink");
    std::os::unix::fs::symlink("shell", copy.root.join("src/linked")).expect("symlink");
    assert_eq!(fingerprint(&copy.root), original, "files outside the set");
}

#[test]
fn every_change_to_the_sources_changes_the_fingerprint() {
    let original = fingerprint(manifest_directory());
    let lib = fs::read(manifest_directory().join("src/lib.rs")).expect("read src/lib.rs");
    let main = fs::read(manifest_directory().join("src/main.rs")).expect("read src/main.rs");
    type Change<'a> = Box<dyn Fn(&Copy) + 'a>;
    let changes: Vec<(&str, Change)> = vec![
        (
            "a byte of src/lib.rs",
            Box::new(|copy| {
                let mut changed = lib.clone();
                changed.push(b'\n');
                copy.write("src/lib.rs", &changed);
            }),
        ),
        (
            "a new file deep under src/",
            Box::new(|copy| copy.write("src/core/new/module.rs", b"")),
        ),
        (
            "a file renamed",
            Box::new(|copy| {
                fs::rename(
                    copy.root.join("src/main.rs"),
                    copy.root.join("src/main2.rs"),
                )
                .expect("rename")
            }),
        ),
        (
            "a file removed",
            Box::new(|copy| fs::remove_file(copy.root.join("src/main.rs")).expect("remove")),
        ),
        (
            "two files' contents swapped",
            Box::new(|copy| {
                copy.write("src/lib.rs", &main);
                copy.write("src/main.rs", &lib);
            }),
        ),
        (
            "Cargo.lock",
            Box::new(|copy| {
                let mut lock = fs::read(copy.root.join("Cargo.lock")).expect("read");
                lock.extend_from_slice(b"\n");
                copy.write("Cargo.lock", &lock);
            }),
        ),
        (
            "Cargo.toml",
            Box::new(|copy| {
                let mut manifest = fs::read(copy.root.join("Cargo.toml")).expect("read");
                manifest.extend_from_slice(b"# a comment\n");
                copy.write("Cargo.toml", &manifest);
            }),
        ),
        (
            "build.rs",
            Box::new(|copy| {
                let mut script = fs::read(copy.root.join("build.rs")).expect("read");
                script.extend_from_slice(b"// a comment\n");
                copy.write("build.rs", &script);
            }),
        ),
    ];
    let mut seen = vec![original.clone()];
    for (name, change) in changes {
        let copy = Copy::new();
        change(&copy);
        let changed = fingerprint(&copy.root);
        assert!(
            !seen.contains(&changed),
            "{name}: the fingerprint {changed} is not new"
        );
        seen.push(changed);
    }
}

#[test]
fn both_algorithms_sort_and_name_files_alike() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let root = directory.path();
    for file in ["Cargo.toml", "Cargo.lock", "build.rs"] {
        fs::write(root.join(file), file).expect("write a root file");
    }
    // Byte order: ' ' < '-' < '.' < '/' < 'A' < '_' < 'a' < multi-byte UTF-8.
    for name in [
        "src/a.rs",
        "src/a/b.rs",
        "src/a-b.rs",
        "src/a b.rs",
        "src/A.rs",
        "src/_a.rs",
        "src/é.rs",
        "src/z/y/x/w.rs",
        "src/empty",
        "src/.hidden",
        "src/*.rs",
        "src/$(echo no).rs",
    ] {
        let path = root.join(name);
        fs::create_dir_all(path.parent().expect("a parent")).expect("create directories");
        fs::write(&path, name).expect("write a source file");
    }
    fs::write(root.join("src/empty"), b"").expect("empty a file");
    let first = fingerprint(root);

    // A path sha256sum would escape is refused by both.
    fs::write(root.join("src/back\\slash.rs"), b"").expect("write");
    assert!(build_script::source_fingerprint(root).is_err());
    let refused = script_fingerprint(root).expect_err("the script refuses it");
    assert!(refused.contains("backslash"), "{refused}");
    fs::remove_file(root.join("src/back\\slash.rs")).expect("remove");

    // A missing root file is an error, not a fingerprint of less.
    fs::remove_file(root.join("Cargo.lock")).expect("remove");
    assert!(build_script::source_fingerprint(root).is_err());
    assert!(script_fingerprint(root).is_err());
    fs::write(root.join("Cargo.lock"), "Cargo.lock").expect("restore");
    assert_eq!(fingerprint(root), first);
}

/// The target action.yml maps this machine to.
fn host_target() -> &'static str {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => "x86_64-unknown-linux-gnu",
        ("linux", "aarch64") => "aarch64-unknown-linux-gnu",
        ("macos", "aarch64") => "aarch64-apple-darwin",
        (os, arch) => panic!("action.yml has no prebuilt target for {os} {arch}"),
    }
}

/// The `run:` script of action.yml's resolve step.
fn resolve_script() -> String {
    step_script("resolve")
}

/// The `run:` script of action.yml's step `id`.
fn step_script(id: &str) -> String {
    let text =
        fs::read_to_string(manifest_directory().join("action.yml")).expect("read action.yml");
    let action: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).expect("action.yml is YAML");
    action["runs"]["steps"]
        .as_sequence()
        .expect("steps")
        .iter()
        .find(|step| step["id"].as_str() == Some(id))
        .and_then(|step| step["run"].as_str())
        .unwrap_or_else(|| panic!("a {id} step with a run script"))
        .to_string()
}

/// A directory holding only the tools the resolve step uses (no cargo, so a fallback to the
/// source build stops at "cargo is not installed" instead of building).
fn tools_without_cargo(into: &Path) -> PathBuf {
    let bin = into.join("bin");
    if bin.is_dir() {
        return bin;
    }
    fs::create_dir_all(&bin).expect("create bin/");
    let path = std::env::var_os("PATH").expect("PATH");
    for tool in [
        "bash",
        "sed",
        "head",
        "uname",
        "sha256sum",
        "awk",
        "cut",
        "find",
        "sort",
        "xargs",
        "cat",
        "mkdir",
        "cp",
        "chmod",
        "mv",
        "rm",
    ] {
        let found = std::env::split_paths(&path)
            .map(|directory| directory.join(tool))
            .find(|candidate| candidate.is_file())
            .unwrap_or_else(|| panic!("{tool} is not on PATH"));
        std::os::unix::fs::symlink(found, bin.join(tool)).expect("link a tool");
    }
    bin
}

/// A copy of the action in `scratch/action`: its sources and the two scripts its steps run.
fn scratch_action(scratch: &Path) -> PathBuf {
    let action = scratch.join("action");
    copy_sources(manifest_directory(), &action);
    fs::create_dir_all(action.join("scripts")).expect("create scripts/");
    for script in ["source-fingerprint.sh", "resolve-binary.sh"] {
        fs::copy(
            manifest_directory().join("scripts").join(script),
            action.join("scripts").join(script),
        )
        .expect("copy the script");
    }
    action
}

/// What one run of the resolve step did.
struct Resolved {
    success: bool,
    log: String,
    outputs: String,
}

/// Runs the resolve step with the action at `action_path`.
fn resolve(action_path: &Path, scratch: &Path) -> Resolved {
    run_step(&resolve_script(), action_path, scratch, &[])
}

/// Runs a step's `script` with the action at `action_path`, the tools of
/// [`tools_without_cargo`] and `variables`.
fn run_step(
    script: &str,
    action_path: &Path,
    scratch: &Path,
    variables: &[(&str, &str)],
) -> Resolved {
    let bin = tools_without_cargo(scratch);
    let outputs = scratch.join("github-output");
    fs::write(&outputs, "").expect("create GITHUB_OUTPUT");
    let output = Command::new(bin.join("bash"))
        .arg("-c")
        .arg(script)
        .env_clear()
        .env("PATH", &bin)
        .env("HOME", scratch.join("home"))
        .env("GITHUB_ACTION_PATH", format!("{}/", action_path.display()))
        .env("GITHUB_OUTPUT", &outputs)
        .env("RUNNER_TEMP", scratch.join("runner-temp"))
        .envs(variables.iter().copied())
        .output()
        .expect("run the step");
    Resolved {
        success: output.status.success(),
        log: format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
        outputs: fs::read_to_string(&outputs).expect("read GITHUB_OUTPUT"),
    }
}

#[test]
fn the_resolve_step_runs_the_prebuilt_binary_only_while_the_sources_are_the_ones_it_was_built_from()
{
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let action = scratch_action(scratch.path());
    let target = host_target();
    let binary = action.join("dist").join(target).join("klaud");
    fs::create_dir_all(binary.parent().expect("a parent")).expect("create dist/<target>/");
    fs::copy(env!("CARGO_BIN_EXE_klaud"), &binary).expect("seed the binary");
    let sum = {
        use sha2::{Digest, Sha256};
        let bytes = fs::read(&binary).expect("read the binary");
        Sha256::digest(&bytes)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect::<String>()
    };
    fs::write(
        action.join("dist/SHA256SUMS"),
        format!("{sum}  {target}/klaud\n"),
    )
    .expect("write SHA256SUMS");

    let current = resolve(&action, scratch.path());
    assert!(current.success, "{}", current.log);
    assert!(
        current.log.contains(&format!(
            "klaud: using the prebuilt dist/{target}/klaud (checksum verified, version {}, \
             source fingerprint {} matches)",
            env!("CARGO_PKG_VERSION"),
            &EMBEDDED[..12]
        )),
        "{}",
        current.log
    );
    assert!(current.outputs.contains("binary-source=prebuilt\n"));
    assert!(
        current
            .outputs
            .contains(&format!("binary={}\n", binary.display()))
    );

    // One source file changes after the binary was built: the binary is stale.
    let lib = action.join("src/lib.rs");
    let mut changed = fs::read(&lib).expect("read src/lib.rs");
    changed.extend_from_slice(b"// changed after the build\n");
    fs::write(&lib, changed).expect("change src/lib.rs");
    let now = fingerprint(&action);
    let stale = resolve(&action, scratch.path());
    assert!(!stale.success, "without cargo the fallback fails");
    assert!(
        stale.log.contains(&format!(
            "klaud: not using a prebuilt binary because dist/{target}/klaud was built from other \
             sources (source fingerprint {}, the action's sources {})",
            &EMBEDDED[..12],
            &now[..12]
        )),
        "{}",
        stale.log
    );
    assert!(
        stale.log.contains("cargo is not installed"),
        "{}",
        stale.log
    );
    assert!(!stale.outputs.contains("binary-source=prebuilt"));

    // An ARM64 Linux runner (runner.arch) is given the aarch64 binary, which this dist lacks.
    let arm = run_step(
        &resolve_script(),
        &action,
        scratch.path(),
        &[("RUNNER_OS", "Linux"), ("RUNNER_ARCH", "ARM64")],
    );
    assert!(
        arm.log.contains(
            "klaud: not using a prebuilt binary because dist/aarch64-unknown-linux-gnu/klaud is \
             absent"
        ),
        "{}",
        arm.log
    );
}

/// The build step after the cache restore: a restored binary of these sources is run without a
/// build; one of other sources, or a restore that left no binary, is discarded and rebuilt
/// (without cargo here, so the rebuild stops at cargo). The same rule as for dist/.
#[test]
fn the_build_step_runs_a_restored_binary_only_when_it_is_of_these_sources() {
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let action = scratch_action(scratch.path());
    let key = format!("klaud-{}-test-", env!("CARGO_PKG_VERSION"));
    let cache_path = "~/.cache/klaud/entry";
    let cached = scratch.path().join("home/.cache/klaud/entry/klaud");
    let restore = |binary: Option<&Path>| {
        let _ = fs::remove_dir_all(cached.parent().expect("a parent"));
        if let Some(binary) = binary {
            fs::create_dir_all(cached.parent().expect("a parent")).expect("create the entry");
            fs::copy(binary, &cached).expect("restore a binary");
        }
    };
    let build = |matched: &str| {
        run_step(
            &step_script("build"),
            &action,
            scratch.path(),
            &[
                ("KLAUD_DIST_REASON", "dist/x/klaud is absent"),
                ("KLAUD_CACHE_KEY", &key),
                ("KLAUD_CACHE_SAVE_KEY", &format!("{key}7-1")),
                ("KLAUD_CACHE_PATH", cache_path),
                ("KLAUD_CACHE_MATCHED_KEY", matched),
            ],
        )
    };

    // The test build of klaud is of these sources.
    restore(Some(Path::new(env!("CARGO_BIN_EXE_klaud"))));
    let hit = build(&format!("{key}6-1"));
    assert!(hit.success, "{}", hit.log);
    assert!(
        hit.log.contains(&format!(
            "klaud: using the cached build of these sources (cache entry {key}6-1, version {}, \
             source fingerprint {} matches)",
            env!("CARGO_PKG_VERSION"),
            &EMBEDDED[..12]
        )),
        "{}",
        hit.log
    );
    assert!(
        hit.outputs.contains("binary-source=cache\n"),
        "{}",
        hit.outputs
    );
    assert!(hit.outputs.contains("save=false\n"), "{}", hit.outputs);
    let copy = scratch.path().join("runner-temp/klaud-cache/klaud");
    assert!(
        hit.outputs
            .contains(&format!("binary={}\n", copy.display()))
    );

    // The same binary after the sources moved on: discarded, and the rebuild needs cargo.
    let lib = action.join("src/lib.rs");
    let mut changed = fs::read(&lib).expect("read src/lib.rs");
    changed.extend_from_slice(b"// changed after the build\n");
    fs::write(&lib, changed).expect("change src/lib.rs");
    restore(Some(Path::new(env!("CARGO_BIN_EXE_klaud"))));
    let stale = build(&format!("{key}6-1"));
    assert!(!stale.success, "without cargo the rebuild fails");
    assert!(
        stale.log.contains(&format!(
            "klaud: discarding the cache entry {key}6-1: the cached binary was built from other \
             sources (source fingerprint {}",
            &EMBEDDED[..12]
        )),
        "{}",
        stale.log
    );
    assert!(
        stale
            .log
            .contains("klaud: building from source because dist/x/klaud is absent, and "),
        "{}",
        stale.log
    );
    assert!(!cached.exists(), "the discarded binary is removed");
    assert!(!stale.outputs.contains("binary-source=cache"));

    // Nothing restored.
    restore(None);
    let miss = build("");
    assert!(!miss.success);
    assert!(
        miss.log.contains(&format!(
            "because dist/x/klaud is absent, and the cache holds no build of these sources ({key}*)"
        )),
        "{}",
        miss.log
    );
}

#[test]
fn the_source_build_takes_no_compiler_flags_from_the_job() {
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let action = scratch_action(scratch.path());
    // A stand-in cargo: records the flags it was given and "builds" the test build of klaud,
    // which is of these sources.
    let stand_in = scratch.path().join("stand-in");
    fs::create_dir_all(&stand_in).expect("create stand-in/");
    let seen = scratch.path().join("cargo-saw");
    let cargo = stand_in.join("cargo");
    fs::write(
        &cargo,
        format!(
            "#!/usr/bin/env bash\n\
             printf 'args=%s\\n' \"$*\" > '{seen}'\n\
             for name in RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_BUILD_RUSTFLAGS \
             CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS CARGO_BUILD_TARGET CARGO_PROFILE_FALLBACK_LTO; do\n\
               if [ -n \"${{!name+set}}\" ]; then printf '%s=%s\\n' \"$name\" \"${{!name}}\" >> '{seen}'; fi\n\
             done\n\
             mkdir -p \"$CARGO_TARGET_DIR/fallback\"\n\
             cp '{klaud}' \"$CARGO_TARGET_DIR/fallback/klaud\"\n",
            seen = seen.display(),
            klaud = env!("CARGO_BIN_EXE_klaud"),
        ),
    )
    .expect("write the stand-in cargo");
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&cargo, fs::Permissions::from_mode(0o755)).expect("make it executable");
    let bin = tools_without_cargo(scratch.path());
    let path = format!("{}:{}", stand_in.display(), bin.display());
    let key = format!("klaud-{}-test-", env!("CARGO_PKG_VERSION"));

    let built = run_step(
        &step_script("build"),
        &action,
        scratch.path(),
        &[
            ("PATH", &path),
            ("KLAUD_DIST_REASON", "dist/x/klaud is absent"),
            ("KLAUD_CACHE_KEY", &key),
            ("KLAUD_CACHE_SAVE_KEY", &format!("{key}7-1")),
            ("KLAUD_CACHE_PATH", "~/.cache/klaud/entry"),
            ("KLAUD_CACHE_MATCHED_KEY", ""),
            ("RUSTFLAGS", "-C target-cpu=native"),
            ("CARGO_ENCODED_RUSTFLAGS", "-Ctarget-cpu=native"),
            ("CARGO_BUILD_RUSTFLAGS", "-C target-cpu=native"),
            (
                "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS",
                "-C target-cpu=native",
            ),
            ("CARGO_BUILD_TARGET", "wasm32-unknown-unknown"),
            // Not a compiler flag: the job may tune the profile, as with any crate.
            ("CARGO_PROFILE_FALLBACK_LTO", "thin"),
        ],
    );
    assert!(built.success, "{}", built.log);
    let seen = fs::read_to_string(&seen).expect("the stand-in cargo ran");
    assert_eq!(
        seen, "args=build --profile fallback --locked --quiet\nCARGO_PROFILE_FALLBACK_LTO=thin\n",
        "{}",
        built.log
    );
    assert!(
        built.outputs.contains("binary-source=source\n"),
        "{}",
        built.outputs
    );
    assert!(built.outputs.contains("save=true\n"), "{}", built.outputs);
}
