//! A recorded session of api.github.com as `octokit/fixtures` normalizes it
//! (`tests/fixtures/octokit/<scenario>/normalized-fixture.json`): the exchanges in the order they
//! were made, each a request (method, path, body, request headers) and GitHub's answer (status,
//! headers, body). Only reading; what the recorder normalized is described in `forms.rs`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

/// The folder of the copied recordings.
pub fn fixtures_folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/octokit")
}

/// Why a recording could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a recording: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// One request and GitHub's answer to it.
#[derive(Clone, Debug, Deserialize)]
pub struct Exchange {
    /// `get`, `post`, … as recorded (lower case).
    pub method: String,
    /// Path and query on api.github.com.
    pub path: String,
    /// The JSON request body; `""` for none.
    pub body: Value,
    pub status: u16,
    /// The answer's body: JSON, or its text (`""` for none).
    pub response: Value,
    /// The request's headers (values are strings or numbers).
    pub reqheaders: BTreeMap<String, Value>,
    /// The answer's headers, names in lower case.
    pub headers: BTreeMap<String, Value>,
}

impl Exchange {
    /// A request header as text.
    pub fn request_header(&self, name: &str) -> Option<String> {
        self.reqheaders.get(name).map(header_text)
    }

    /// An answer header as text.
    pub fn answer_header(&self, name: &str) -> Option<String> {
        self.headers.get(name).map(header_text)
    }

    /// The request body, or `None` when the request had none.
    pub fn request_body(&self) -> Option<&Value> {
        match &self.body {
            Value::String(text) if text.is_empty() => None,
            body => Some(body),
        }
    }

    /// `GET /repos/o/r/issues` as a reader names it.
    pub fn title(&self) -> String {
        format!("{} {}", self.method.to_ascii_uppercase(), self.path)
    }
}

fn header_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A scenario's exchanges, in order.
pub fn load(scenario: &str) -> Result<Vec<Exchange>, RecordingError> {
    let path = fixtures_folder()
        .join(scenario)
        .join("normalized-fixture.json");
    let text = std::fs::read_to_string(&path).map_err(|source| RecordingError::Read {
        path: path.clone(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| RecordingError::Parse { path, source })
}

/// The scenarios copied into the fixtures folder, by folder name.
pub fn copied_scenarios() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_folder())
        .expect("tests/fixtures/octokit is readable")
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("normalized-fixture.json").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
