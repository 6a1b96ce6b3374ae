//! npm as `install-cli` uses it: the install command for a private prefix, and where the
//! installed package puts its executable.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::process::ChildCommand;

/// The `npm install` invocation for `package@version` into `prefix` (contract §3.1).
///
/// `--prefix` also moves npm's global configuration file to `<prefix>/etc/npmrc`, which would
/// silently drop a machine's registry mirror or CA settings; `global_config` (npm's own answer
/// before the prefix changed it) keeps them.
pub fn install_command(
    npm_program: &str,
    prefix: &Path,
    package: &str,
    version: &str,
    global_config: Option<&Path>,
    timeout: Duration,
) -> ChildCommand {
    let mut command = ChildCommand::new(npm_program, timeout).args([
        OsString::from("install"),
        OsString::from("--prefix"),
        prefix.as_os_str().to_owned(),
        OsString::from("--no-audit"),
        OsString::from("--no-fund"),
    ]);
    if let Some(path) = global_config {
        command = command
            .arg("--globalconfig")
            .arg(path.as_os_str().to_owned());
    }
    command.arg(format!("{package}@{version}"))
}

/// `npm config get globalconfig`: where npm reads machine-wide settings.
pub fn global_config_command(npm_program: &str, timeout: Duration) -> ChildCommand {
    ChildCommand::new(npm_program, timeout).args(["config", "get", "globalconfig"])
}

/// The global configuration file named by [`global_config_command`]'s stdout, when it exists.
pub fn existing_global_config(stdout: &str) -> Option<PathBuf> {
    let path = PathBuf::from(stdout.trim());
    (path.is_absolute() && path.is_file()).then_some(path)
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

/// The line of npm's stderr that says what went wrong, for the attempt's error message.
///
/// npm reports a failure as `npm error` lines (`npm ERR!` before npm 10): key lines such as
/// `code E404` or `syscall connect`, then the message, help text, and last a pointer to its debug
/// log, so the last line is never the error. This returns the first report line that is neither a
/// key nor boilerplate, else the first report line, else (npm crashed before reporting) the last
/// non-empty line.
pub fn error_line(stderr: &str) -> Option<&str> {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    let report: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|line| {
            let body = ["npm error", "npm ERR!"]
                .iter()
                .find_map(|marker| line.strip_prefix(marker))
                .map(str::trim);
            body.is_some_and(|body| {
                !body.is_empty()
                    && !body.starts_with("A complete log of this run")
                    && !body.starts_with("Log files were not written")
            })
        })
        .collect();
    let is_key = |line: &&str| {
        let key = line.split_whitespace().nth(2).unwrap_or_default();
        matches!(key, "code" | "syscall" | "errno" | "path" | "dest")
    };
    report
        .iter()
        .find(|line| !is_key(line))
        .or_else(|| report.first())
        .or_else(|| lines.last())
        .copied()
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
            None,
            Duration::from_secs(1),
        );
        assert_eq!(
            command.display(),
            "npm install --prefix /tmp/p --no-audit --no-fund @anthropic-ai/claude-code@2.1.282"
        );
    }

    #[test]
    fn the_machine_global_config_is_kept_when_known() {
        let command = install_command(
            "npm",
            Path::new("/tmp/p"),
            "tool",
            "1.0.0",
            Some(Path::new("/usr/etc/npmrc")),
            Duration::from_secs(1),
        );
        assert_eq!(
            command.display(),
            "npm install --prefix /tmp/p --no-audit --no-fund --globalconfig /usr/etc/npmrc tool@1.0.0"
        );
    }

    #[test]
    fn only_an_existing_absolute_global_config_is_used() {
        let directory = tempfile::tempdir().unwrap();
        let file = directory.path().join("npmrc");
        std::fs::write(&file, "").unwrap();
        assert_eq!(
            existing_global_config(&format!("{}\n", file.display())),
            Some(file)
        );
        assert_eq!(existing_global_config("etc/npmrc"), None);
        assert_eq!(existing_global_config("/nonexistent/npmrc"), None);
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
    fn the_error_line_skips_npms_keys_and_closing_log_pointer() {
        let not_found = "npm error code E404
npm error 404 Not Found - GET https://registry.npmjs.org/@scope%2ftool - Not found
npm error 404
npm error 404 Note that you can also install from a
npm error A complete log of this run can be found in: /root/.npm/_logs/x-debug-0.log
";
        assert_eq!(
            error_line(not_found),
            Some(
                "npm error 404 Not Found - GET https://registry.npmjs.org/@scope%2ftool - Not found"
            )
        );
        let refused = "npm warn config something
npm error code ECONNREFUSED
npm error syscall connect
npm error errno ECONNREFUSED
npm error FetchError: request to http://127.0.0.1:1/tool failed, reason: connect ECONNREFUSED
npm error     at ClientRequest.<anonymous> (index.js:130:14)
npm error A complete log of this run can be found in: /root/.npm/_logs/x-debug-0.log
";
        assert_eq!(
            error_line(refused),
            Some(
                "npm error FetchError: request to http://127.0.0.1:1/tool failed, reason: connect ECONNREFUSED"
            )
        );
        let legacy =
            "npm ERR! code ETARGET\nnpm ERR! notarget No matching version found for tool@9.\n";
        assert_eq!(
            error_line(legacy),
            Some("npm ERR! notarget No matching version found for tool@9.")
        );
    }

    #[test]
    fn without_a_message_the_error_line_falls_back() {
        assert_eq!(
            error_line(
                "npm error code E404\nnpm error A complete log of this run can be found in: x\n"
            ),
            Some("npm error code E404")
        );
        assert_eq!(
            error_line("node: out of memory\n  Aborted  \n\n"),
            Some("Aborted")
        );
        assert_eq!(error_line(""), None);
    }

    #[test]
    fn a_missing_manifest_is_reported() {
        let prefix = tempfile::tempdir().unwrap();
        let error = executable_path(prefix.path(), "tool", None).unwrap_err();
        assert!(error.contains("cannot read"), "{error}");
    }
}
