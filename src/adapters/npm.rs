//! npm as `install-cli` uses it: the install command for a private prefix, and where the
//! installed package puts its executable.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::process::ChildCommand;

/// The `npm install` invocation for `package@version` into `prefix` (contract §3.1).
pub fn install_command(
    npm_program: &str,
    prefix: &Path,
    package: &str,
    version: &str,
    timeout: Duration,
) -> ChildCommand {
    ChildCommand::new(npm_program, timeout).args([
        OsString::from("install"),
        OsString::from("--prefix"),
        prefix.as_os_str().to_owned(),
        OsString::from("--no-audit"),
        OsString::from("--no-fund"),
        OsString::from(format!("{package}@{version}")),
    ])
}

/// The directory of an installed package inside `prefix`.
pub fn package_directory(prefix: &Path, package: &str) -> PathBuf {
    package
        .split('/')
        .fold(prefix.join("node_modules"), |path, part| path.join(part))
}

/// The executable npm linked for the package: `bin_name` when given, otherwise the single
/// entry of the package's `bin` field (a string `bin` is named after the unscoped package).
///
/// Returns an error message when the package declares several executables and none was chosen,
/// or declares none.
pub fn executable_path(
    prefix: &Path,
    package: &str,
    bin_name: Option<&str>,
) -> Result<PathBuf, String> {
    let bin_directory = prefix.join("node_modules").join(".bin");
    if let Some(name) = bin_name {
        return Ok(bin_directory.join(name));
    }
    let manifest_path = package_directory(prefix, package).join("package.json");
    let manifest = std::fs::read_to_string(&manifest_path)
        .map_err(|error| format!("cannot read {}: {error}", manifest_path.display()))?;
    let manifest: serde_json::Value = serde_json::from_str(&manifest)
        .map_err(|error| format!("{} is not JSON: {error}", manifest_path.display()))?;
    let name = match manifest.get("bin") {
        Some(serde_json::Value::String(_)) => unscoped_name(package).to_string(),
        Some(serde_json::Value::Object(entries)) if entries.len() == 1 => {
            entries.keys().next().expect("one entry").clone()
        }
        Some(serde_json::Value::Object(entries)) if entries.len() > 1 => {
            let names: Vec<&str> = entries.keys().map(String::as_str).collect();
            return Err(format!(
                "{package} has several executables ({}); choose one with cli-bin",
                names.join(", ")
            ));
        }
        _ => return Err(format!("{package} declares no executable in package.json")),
    };
    Ok(bin_directory.join(name))
}

fn unscoped_name(package: &str) -> &str {
    package.rsplit('/').next().unwrap_or(package)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_manifest(prefix: &Path, package: &str, manifest: &str) {
        let directory = package_directory(prefix, package);
        std::fs::create_dir_all(&directory).unwrap();
        std::fs::write(directory.join("package.json"), manifest).unwrap();
    }

    #[test]
    fn the_install_command_pins_the_version_and_the_prefix() {
        let command = install_command(
            "npm",
            Path::new("/tmp/p"),
            "@anthropic-ai/claude-code",
            "2.1.282",
            Duration::from_secs(1),
        );
        assert_eq!(
            command.display(),
            "npm install --prefix /tmp/p --no-audit --no-fund @anthropic-ai/claude-code@2.1.282"
        );
    }

    #[test]
    fn a_single_bin_entry_names_the_executable() {
        let prefix = tempfile::tempdir().unwrap();
        write_manifest(
            prefix.path(),
            "@anthropic-ai/claude-code",
            r#"{"bin": {"claude": "cli.js"}}"#,
        );
        let path = executable_path(prefix.path(), "@anthropic-ai/claude-code", None).unwrap();
        assert_eq!(path, prefix.path().join("node_modules/.bin/claude"));
    }

    #[test]
    fn a_string_bin_is_named_after_the_unscoped_package() {
        let prefix = tempfile::tempdir().unwrap();
        write_manifest(prefix.path(), "@scope/tool", r#"{"bin": "index.js"}"#);
        let path = executable_path(prefix.path(), "@scope/tool", None).unwrap();
        assert_eq!(path, prefix.path().join("node_modules/.bin/tool"));
    }

    #[test]
    fn several_executables_need_a_choice() {
        let prefix = tempfile::tempdir().unwrap();
        write_manifest(
            prefix.path(),
            "tool",
            r#"{"bin": {"a": "a.js", "b": "b.js"}}"#,
        );
        let error = executable_path(prefix.path(), "tool", None).unwrap_err();
        assert!(error.contains("a, b"), "{error}");
        let chosen = executable_path(prefix.path(), "tool", Some("b")).unwrap();
        assert!(chosen.ends_with("node_modules/.bin/b"));
    }

    #[test]
    fn a_missing_manifest_is_reported() {
        let prefix = tempfile::tempdir().unwrap();
        let error = executable_path(prefix.path(), "tool", None).unwrap_err();
        assert!(error.contains("cannot read"), "{error}");
    }
}
