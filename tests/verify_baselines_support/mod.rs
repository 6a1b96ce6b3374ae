//! Stand-in producers in a throw-away git repository, and a runner of `klaud verify-baselines`
//! against them. Shared by `tests/verify_baselines.rs` and `benches/verify_baselines.rs`.
//!
//! The stand-in is a Python program committed at a producer entrypoint together with a JSON data
//! file. It answers `test-config --config-keys K… --config-files F… [--no-evals]` the way the
//! real generator does: each key's entries in the order the keys were given, printed as one JSON
//! line. An "old" stand-in rejects `--no-evals` either by replaying recorded stderr verbatim
//! (exit 2, nothing on stdout) or through Python's own argparse.

#![allow(dead_code)] // each test crate uses a part of this module
#![allow(clippy::disallowed_methods)] // spawns git and klaud, reads PATH

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use tempfile::TempDir;

/// The default (first) entrypoint of the InferenceX profile.
pub const ENTRYPOINT: &str = "utils/matrix_logic/generate_sweep_configs.py";

/// The stand-in producer. Its data file sits next to it: see [`StandInData`].
pub const STAND_IN_PRODUCER: &str = r#"import json, os, sys, time
HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "stand-in-producer.json")) as handle:
    DATA = json.load(handle)
args = sys.argv[1:]
record = os.environ.get("STAND_IN_INVOCATIONS")
if record:
    with open(record, "a") as handle:
        handle.write(json.dumps(args) + "\n")
dump = os.environ.get("STAND_IN_ENVIRONMENT_DUMP")
if dump:
    with open(dump, "w") as handle:
        json.dump(dict(os.environ), handle)
time.sleep(DATA.get("delay-seconds", 0))
flag = "--no-evals" in args
if DATA.get("parser") == "argparse":
    import argparse
    parser = argparse.ArgumentParser(prog="generate_sweep_configs.py")
    commands = parser.add_subparsers(dest="command", required=True)
    test_config = commands.add_parser("test-config")
    test_config.add_argument("--config-keys", nargs="+", required=True)
    test_config.add_argument("--config-files", nargs="+", required=True)
    if DATA["accepts-no-evals"]:
        test_config.add_argument("--no-evals", action="store_true")
    parser.parse_args(args)
elif flag and not DATA["accepts-no-evals"]:
    sys.stderr.write("".join(line + "\n" for line in DATA["rejection-stderr"]))
    sys.exit(2)
failure = DATA.get("failure")
if failure:
    sys.stderr.write(failure["stderr"])
    sys.exit(failure["exit"])
keys = []
if "--config-keys" in args:
    at = args.index("--config-keys") + 1
    while at < len(args) and not args[at].startswith("-"):
        keys.append(args[at])
        at += 1
entries = []
for key in keys:
    if key not in DATA["outputs"]:
        sys.stderr.write("ValueError: Config key(s) not found: %s\n" % key)
        sys.exit(1)
    entries.extend(DATA["outputs"][key]["with-flag" if flag else "without-flag"])
print(json.dumps(entries))
"#;

/// What one stand-in commit does (the stand-in's data file).
#[derive(Debug, Clone)]
pub struct StandInData {
    /// `replay` (recorded stderr verbatim) or `argparse`.
    pub parser: &'static str,
    pub accepts_no_evals: bool,
    pub rejection_stderr: Vec<String>,
    /// Per config key: the entries printed with and without `--no-evals`.
    pub outputs: BTreeMap<String, (Vec<Value>, Vec<Value>)>,
    /// `(exit, stderr)` of a producer that always fails.
    pub failure: Option<(i32, String)>,
    pub delay_seconds: f64,
}

impl StandInData {
    pub fn new(accepts_no_evals: bool) -> Self {
        StandInData {
            parser: "replay",
            accepts_no_evals,
            rejection_stderr: Vec::new(),
            outputs: BTreeMap::new(),
            failure: None,
            delay_seconds: 0.0,
        }
    }

    pub fn with_key(mut self, key: &str, with_flag: Vec<Value>, without_flag: Vec<Value>) -> Self {
        self.outputs
            .insert(key.to_string(), (with_flag, without_flag));
        self
    }

    pub fn to_json(&self) -> Value {
        let outputs: serde_json::Map<String, Value> = self
            .outputs
            .iter()
            .map(|(key, (with_flag, without_flag))| {
                (
                    key.clone(),
                    json!({"with-flag": with_flag, "without-flag": without_flag}),
                )
            })
            .collect();
        json!({
            "parser": self.parser,
            "accepts-no-evals": self.accepts_no_evals,
            "rejection-stderr": self.rejection_stderr,
            "outputs": outputs,
            "failure": self.failure.as_ref().map(|(exit, stderr)| json!({"exit": exit, "stderr": stderr})),
            "delay-seconds": self.delay_seconds,
        })
    }
}

/// A git repository whose commits are stand-in producers.
pub struct StandInRepository {
    _directory: TempDir,
    pub path: PathBuf,
}

fn git(repository: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(repository)
        .args([
            "-c",
            "user.name=klaud tests",
            "-c",
            "user.email=tests@klaud.invalid",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

impl StandInRepository {
    pub fn new() -> Self {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let path = directory.path().join("producer-repository");
        std::fs::create_dir_all(&path).unwrap();
        git(&path, &["init", "--quiet"]);
        StandInRepository {
            _directory: directory,
            path,
        }
    }

    /// Commits exactly these files (everything earlier is removed) and returns the commit sha.
    pub fn commit_files(&self, files: &[(&str, String)]) -> String {
        git(&self.path, &["rm", "-r", "-q", "--ignore-unmatch", "."]);
        for (relative, text) in files {
            let path = self.path.join(relative);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        git(&self.path, &["add", "-A"]);
        git(
            &self.path,
            &["commit", "-q", "--allow-empty", "-m", "stand-in producer"],
        );
        git(&self.path, &["rev-parse", "HEAD"])
    }

    /// Commits a stand-in producer at `entrypoint`.
    pub fn commit_producer_at(&self, entrypoint: &str, data: &StandInData) -> String {
        let data_path = Path::new(entrypoint)
            .with_file_name("stand-in-producer.json")
            .to_string_lossy()
            .into_owned();
        self.commit_files(&[
            (entrypoint, STAND_IN_PRODUCER.to_string()),
            (&data_path, data.to_json().to_string()),
        ])
    }

    pub fn commit_producer(&self, data: &StandInData) -> String {
        self.commit_producer_at(ENTRYPOINT, data)
    }

    /// Commits a stand-in producer at the default entrypoint together with `files` (for
    /// example the master configs and runners file a head holds).
    pub fn commit_producer_with(&self, data: &StandInData, files: &[(&str, String)]) -> String {
        let mut all = vec![
            (ENTRYPOINT, STAND_IN_PRODUCER.to_string()),
            (
                "utils/matrix_logic/stand-in-producer.json",
                data.to_json().to_string(),
            ),
        ];
        all.extend(files.iter().cloned());
        self.commit_files(&all)
    }

    /// Sets a key of the repository's own git configuration.
    pub fn set_config(&self, key: &str, value: &str) {
        git(&self.path, &["config", key, value]);
    }

    /// `git worktree list --porcelain` lines naming a worktree.
    pub fn worktrees(&self) -> Vec<String> {
        git(&self.path, &["worktree", "list", "--porcelain"])
            .lines()
            .filter(|line| line.starts_with("worktree "))
            .map(str::to_string)
            .collect()
    }
}

impl Default for StandInRepository {
    fn default() -> Self {
        Self::new()
    }
}

/// One finished `klaud verify-baselines`.
#[derive(Debug)]
pub struct KlaudRun {
    pub exit: i32,
    pub stdout: String,
    pub stderr: String,
    pub outputs: BTreeMap<String, String>,
    pub summary: String,
    pub baselines: Option<Value>,
}

impl KlaudRun {
    /// The `baselines.json` record of one candidate.
    pub fn candidate(&self, id: &str) -> &Value {
        self.baselines.as_ref().expect("baselines.json was written")["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|candidate| candidate["id"] == id)
            .unwrap_or_else(|| panic!("no record of {id}"))
    }

    pub fn output_json(&self, name: &str) -> Value {
        serde_json::from_str(&self.outputs[name]).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    pub fn producer_runs(&self) -> usize {
        self.outputs["producer-runs"].parse().unwrap()
    }
}

/// Everything a run of klaud reads, in one work area.
pub struct VerifyBaselinesRunner {
    pub work: TempDir,
    pub repository: PathBuf,
    pub config: String,
    pub environment: Vec<(String, String)>,
}

impl VerifyBaselinesRunner {
    pub fn new(repository: &Path) -> Self {
        VerifyBaselinesRunner {
            work: tempfile::tempdir().unwrap(),
            repository: repository.to_path_buf(),
            config: String::new(),
            environment: Vec::new(),
        }
    }

    pub fn directory(&self) -> PathBuf {
        self.work.path().join("klaud")
    }

    /// Runs `klaud verify-baselines` as GitHub Actions would, with a clean environment plus
    /// `self.environment`.
    pub fn run(&self, candidates: &Value) -> KlaudRun {
        let root = self.work.path();
        let candidates_path = root.join("candidates.json");
        std::fs::write(&candidates_path, candidates.to_string()).unwrap();
        let config_path = root.join("klaud.yml");
        std::fs::write(&config_path, &self.config).unwrap();
        let output_path = root.join("github-output");
        let summary_path = root.join("step-summary");
        for path in [&output_path, &summary_path] {
            std::fs::write(path, "").unwrap();
        }
        let home = root.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_klaud"))
            .arg("verify-baselines")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("LANG", "C.UTF-8")
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_OUTPUT", &output_path)
            .env("GITHUB_STEP_SUMMARY", &summary_path)
            .env("KLAUD_DIRECTORY", self.directory())
            .env("KLAUD_CONFIG", &config_path)
            .env("KLAUD_CANDIDATES", &candidates_path)
            .env("KLAUD_REPO_PATH", &self.repository)
            .envs(self.environment.iter().map(|(name, value)| (name, value)))
            .output()
            .expect("klaud runs");
        let baselines = std::fs::read_to_string(self.directory().join("baselines.json"))
            .ok()
            .map(|text| serde_json::from_str(&text).expect("baselines.json is JSON"));
        KlaudRun {
            exit: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            outputs: parse_output_file(&std::fs::read_to_string(&output_path).unwrap()),
            summary: std::fs::read_to_string(&summary_path).unwrap(),
            baselines,
        }
    }
}

/// Reads `$GITHUB_OUTPUT`: `name=value` lines and `name<<DELIMITER` blocks.
pub fn parse_output_file(text: &str) -> BTreeMap<String, String> {
    let mut outputs = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delimiter)) = line.split_once("<<") {
            let value: Vec<&str> = lines
                .by_ref()
                .take_while(|line| *line != delimiter)
                .collect();
            outputs.insert(name.to_string(), value.join("\n"));
        } else if let Some((name, value)) = line.split_once('=') {
            outputs.insert(name.to_string(), value.to_string());
        }
    }
    outputs
}

/// A candidate with a baseline.
pub fn candidate(id: &str, head: &str, args: &[String], points: Vec<Value>) -> Value {
    json!({
        "id": id,
        "family": format!("configs/nvidia-master.yaml:{id}"),
        "baseline": {"producer": {"head": head, "args": args}, "points": points},
    })
}

/// `test-config --config-keys <key> --config-files a.yaml b.yaml`.
pub fn test_config_args(key: &str) -> Vec<String> {
    [
        "test-config",
        "--config-keys",
        key,
        "--config-files",
        "amd-master.yaml",
        "nvidia-master.yaml",
    ]
    .map(String::from)
    .to_vec()
}

/// A small single-node entry and the public row that matches it (hand-made, not fixture data).
pub fn single_node_entry(runner: &str, conc: u64) -> Value {
    json!({
        "image": "example/engine:1", "model": "org/model", "model-prefix": "m1",
        "precision": "fp8", "framework": "engine", "runner": runner, "isl": 1024, "osl": 1024,
        "tp": 8, "conc": conc, "ep": 1, "dp-attn": false, "spec-decoding": "none",
        "exp-name": "m1_1k1k", "disagg": false, "run-eval": false
    })
}

pub fn single_node_row(hardware: &str, conc: u64) -> Value {
    json!({
        "hardware": hardware, "framework": "engine", "model": "m1", "precision": "fp8",
        "spec_method": "none", "disagg": false, "is_multinode": false,
        "prefill_tp": 8, "prefill_ep": 1, "prefill_dp_attention": false, "prefill_num_workers": 0,
        "decode_tp": 8, "decode_ep": 1, "decode_dp_attention": false, "decode_num_workers": 0,
        "num_prefill_gpu": 8, "num_decode_gpu": 8, "isl": 1024, "osl": 1024, "conc": conc,
        "image": "example/engine:1"
    })
}
