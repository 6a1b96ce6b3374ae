//! Embeds the *source fingerprint* in klaud: a SHA-256 over the sources the binary is built from,
//! which `klaud --version` prints on its second line (`source-fingerprint <hex>`). action.yml runs
//! a prebuilt `dist/` binary only when that line equals the fingerprint of the action's own
//! checkout, computed by `scripts/source-fingerprint.sh` with the same algorithm:
//!
//! 1. the files: every regular file under `src/` (symbolic links are neither followed nor
//!    counted), plus `Cargo.toml`, `Cargo.lock` and `build.rs`, named by their path relative to
//!    the crate root with `/` between components;
//! 2. sorted by those paths as bytes (`LC_ALL=C sort`);
//! 3. a manifest of one line per file, `<sha256 of its bytes>  <path>\n` (what `sha256sum` prints,
//!    lowercase hex, two spaces);
//! 4. the fingerprint is the SHA-256 of the manifest, in lowercase hex.
//!
//! No absolute path, timestamp or file mode enters it, so builds stay reproducible wherever the
//! repository lives. A path holding a backslash, carriage return or line feed is refused: sha256sum
//! would escape it and the two algorithms would part.
//!
//! `tests/source_fingerprint.rs` includes this file to check both algorithms against each other.

// A build script learns where the crate is only from its environment.
#![allow(clippy::disallowed_methods)]

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use sha2::{Digest, Sha256};

/// The files besides `src/` that the fingerprint covers.
const ROOT_FILES: [&str; 3] = ["Cargo.toml", "Cargo.lock", "build.rs"];

fn main() {
    let root = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&root);
    let fingerprint = source_fingerprint(root).unwrap_or_else(|error| panic!("{error}"));
    // A directory makes cargo watch every file below it, new and removed ones included.
    println!("cargo:rerun-if-changed=src");
    for file in ROOT_FILES {
        println!("cargo:rerun-if-changed={file}");
    }
    println!("cargo:rustc-env=KLAUD_SOURCE_FINGERPRINT={fingerprint}");
}

/// The source fingerprint of the crate at `root` (see the module documentation).
pub fn source_fingerprint(root: &Path) -> Result<String, String> {
    let mut paths: Vec<String> = ROOT_FILES.iter().map(|file| file.to_string()).collect();
    collect_files(root, "src", &mut paths)?;
    paths.sort_unstable_by(|left, right| left.as_bytes().cmp(right.as_bytes()));
    let mut manifest = String::new();
    for path in &paths {
        if path.contains(['\\', '\r', '\n']) {
            return Err(format!(
                "source fingerprint: {path:?} holds a backslash or a line break; rename it"
            ));
        }
        let bytes = fs::read(root.join(path))
            .map_err(|error| format!("source fingerprint: read {path}: {error}"))?;
        writeln!(manifest, "{}  {path}", hex(&Sha256::digest(&bytes))).expect("write to a String");
    }
    Ok(hex(&Sha256::digest(manifest.as_bytes())))
}

/// Adds the regular files below `root/relative` to `paths`, as `relative/…` paths.
fn collect_files(root: &Path, relative: &str, paths: &mut Vec<String>) -> Result<(), String> {
    let directory = root.join(relative);
    let entries = fs::read_dir(&directory)
        .map_err(|error| format!("source fingerprint: list {relative}: {error}"))?;
    for entry in entries {
        let entry =
            entry.map_err(|error| format!("source fingerprint: list {relative}: {error}"))?;
        let name = entry.file_name();
        let name = name
            .to_str()
            .ok_or_else(|| format!("source fingerprint: a file name in {relative} is not UTF-8"))?;
        let path = format!("{relative}/{name}");
        // The entry's own type: a symbolic link is neither a file nor a directory here.
        let file_type = entry
            .file_type()
            .map_err(|error| format!("source fingerprint: stat {path}: {error}"))?;
        if file_type.is_dir() {
            collect_files(root, &path, paths)?;
        } else if file_type.is_file() {
            paths.push(path);
        }
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut text, byte| {
        write!(text, "{byte:02x}").expect("write to a String");
        text
    })
}
