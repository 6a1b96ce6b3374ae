//! Writing a mode's JSON result file into the work directory (`directory`), created when
//! missing. A file that cannot be written fails the step (exit 1): its readers depend on it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::shell::error::StepError;

/// Writes `value` as pretty JSON with a trailing newline to `<directory>/<name>`.
pub fn write_json_file(
    directory: &Path,
    name: &str,
    value: &impl Serialize,
) -> Result<PathBuf, StepError> {
    std::fs::create_dir_all(directory).map_err(|error| {
        StepError::failed(format!("cannot create {}: {error}", directory.display()))
    })?;
    let path = directory.join(name);
    let text = serde_json::to_string_pretty(value)
        .map_err(|error| StepError::failed(format!("cannot serialize {name}: {error}")))?;
    std::fs::write(&path, text + "\n")
        .map_err(|error| StepError::failed(format!("cannot write {}: {error}", path.display())))?;
    Ok(path)
}
