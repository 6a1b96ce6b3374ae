//! What every run of the real `klaud` binary in these tests shares: a command whose environment
//! holds nothing inherited from the machine's own `GITHUB_*`, `KLAUD_*` or `RUNNER_*`
//! variables, and the reading of the `$GITHUB_OUTPUT` file it writes.

#![allow(clippy::disallowed_methods)] // tests spawn the binary and read the environment
#![allow(dead_code)] // each including file uses part of it

use std::collections::BTreeMap;
use std::path::Path;

/// `klaud` with a hermetic environment: nothing the outer CI or shell set leaks in.
pub fn hermetic_klaud() -> std::process::Command {
    let mut command = std::process::Command::new(assert_cmd::cargo::cargo_bin("klaud"));
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if ["GITHUB_", "KLAUD_", "RUNNER_"]
            .iter()
            .any(|prefix| text.starts_with(prefix))
        {
            command.env_remove(&name);
        }
    }
    command
}

/// Parses `name=value` lines and `name<<DELIMITER` heredocs.
pub fn read_output_file(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut outputs = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delimiter)) = line.split_once("<<") {
            let value: Vec<&str> = lines.by_ref().take_while(|l| *l != delimiter).collect();
            outputs.insert(name.to_string(), value.join("\n"));
        } else if let Some((name, value)) = line.split_once('=') {
            outputs.insert(name.to_string(), value.to_string());
        }
    }
    outputs
}
