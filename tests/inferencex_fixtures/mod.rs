//! Reads the real InferenceX fixtures in `tests/fixtures/inferencex/`: the producer runs and
//! their outputs (`producer/`), the matching table (`matching/`) and the public API rows it names
//! (`public/`), copied byte for byte from the public InferenceX repositories' data (see
//! `tests/fixtures/README.md`).

#![allow(dead_code)] // each test crate uses a part of this module

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The `inferencex` fixture folder.
pub fn inferencex_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/inferencex")
}

/// A YAML or JSON fixture file as JSON.
pub fn read_document(fixtures: &Path, relative: &str) -> Value {
    let path = fixtures.join(relative);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    if relative.ends_with(".json") {
        serde_json::from_str(&text).unwrap_or_else(|error| panic!("{relative}: {error}"))
    } else {
        serde_yaml_ng::from_str(&text).unwrap_or_else(|error| panic!("{relative}: {error}"))
    }
}

/// A producer output file (a JSON array of entries).
pub fn producer_entries(fixtures: &Path, relative: &str) -> Vec<Value> {
    match read_document(fixtures, relative) {
        Value::Array(entries) => entries,
        other => panic!("{relative} is not an array: {other}"),
    }
}

/// One recorded producer run of `producer/runs.yaml`.
#[derive(Debug, Clone)]
pub struct RecordedRun {
    pub id: String,
    pub commit: String,
    pub commit_date: String,
    /// The argv after `python3 <entrypoint>`.
    pub args: Vec<String>,
    pub exit: i64,
    pub stderr_lines: Vec<String>,
    pub stdout_file: Option<String>,
}

impl RecordedRun {
    pub fn with_no_evals(&self) -> bool {
        self.args.iter().any(|arg| arg == "--no-evals")
    }

    /// The arguments as a candidate's baseline states them: without `--no-evals`.
    pub fn baseline_args(&self) -> Vec<String> {
        self.args
            .iter()
            .filter(|arg| *arg != "--no-evals")
            .cloned()
            .collect()
    }

    /// Runs that asked for evaluation rows only or in addition, which no baseline uses.
    pub fn asks_for_evaluations(&self) -> bool {
        self.args
            .iter()
            .any(|arg| arg == "--evals-only" || arg == "--run-evals")
    }

    /// The values after `--config-keys`.
    pub fn config_keys(&self) -> Vec<String> {
        let start = self
            .args
            .iter()
            .position(|arg| arg == "--config-keys")
            .expect("a test-config run")
            + 1;
        self.args[start..]
            .iter()
            .take_while(|arg| !arg.starts_with('-'))
            .cloned()
            .collect()
    }
}

pub fn recorded_runs(fixtures: &Path) -> Vec<RecordedRun> {
    let document = read_document(fixtures, "producer/runs.yaml");
    let strings = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|item| item.as_str().expect("string").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    document["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|run| {
            let argv = strings(&run["argv"]);
            assert_eq!(argv[0], "python3", "{run}");
            RecordedRun {
                id: run["id"].as_str().expect("id").to_string(),
                commit: run["commit"].as_str().expect("commit").to_string(),
                commit_date: run["commit_date"].as_str().expect("date").to_string(),
                args: argv[2..].to_vec(),
                exit: run["exit_code"].as_i64().expect("exit_code"),
                stderr_lines: strings(&run["stderr_lines"]),
                stdout_file: run["stdout_file"].as_str().map(str::to_string),
            }
        })
        .collect()
}

/// The cases of `matching/matching-table.yaml`.
pub fn matching_cases(fixtures: &Path) -> Vec<Value> {
    read_document(fixtures, "matching/matching-table.yaml")["cases"]
        .as_array()
        .expect("cases")
        .clone()
}

/// A case's public row: a row of a real API sample, or the derived row written inline.
pub fn public_row(fixtures: &Path, case: &Value) -> Map<String, Value> {
    let row = &case["public_row"];
    let value = match row.get("inline") {
        Some(inline) => inline.clone(),
        None => {
            let file = row["file"].as_str().expect("file");
            let index = row["index"].as_u64().expect("index") as usize;
            read_document(fixtures, file)[index].clone()
        }
    };
    match value {
        Value::Object(fields) => fields,
        other => panic!("a public row is an object: {other}"),
    }
}

/// The entry indices a case expects: under the contract's one-worker rule where the table gives
/// that answer, else the strict matcher's.
pub fn expected_entries(case: &Value) -> Vec<usize> {
    let expected = case
        .get("expected_with_one_worker_rule")
        .unwrap_or(&case["matched_entry_indices"]);
    expected
        .as_array()
        .expect("indices")
        .iter()
        .map(|index| index.as_u64().expect("index") as usize)
        .collect()
}

/// The recorded run whose stdout a case's `producer_output` is.
pub fn run_of_output<'a>(runs: &'a [RecordedRun], producer_output: &str) -> &'a RecordedRun {
    runs.iter()
        .find(|run| run.stdout_file.as_deref() == Some(producer_output))
        .unwrap_or_else(|| panic!("no recorded run printed {producer_output}"))
}
