//! verify-baselines benchmark: 22 candidates over 6 producer heads (2 of them predating
//! `--no-evals`), each candidate with its own config key and 3 published points, against the
//! stand-in producer of `tests/verify_baselines_support` (one JSON line per run, after a fixed
//! delay standing in for the real generator's YAML loading and validation).
//!
//! Prints producer invocations and wall time for: klaud as shipped (keys batched per head, heads
//! concurrently), the same with heads one after another, one invocation per candidate (heads
//! concurrently, then sequentially), and a rerun answered from the cache.
//!
//! `cargo bench --bench verify_baselines` (set `STAND_IN_DELAY_SECONDS` to change the delay).

#![allow(clippy::disallowed_methods)] // reads PATH/HOME, spawns through the test support

#[path = "../tests/verify_baselines_support/mod.rs"]
mod verify_baselines_support;

use std::ffi::OsString;
use std::time::{Duration, Instant};

use klaud::adapters::producer::ProducerSetup;
use klaud::core::baseline::invocation::Batching;
use klaud::core::candidate::parse_candidates;
use klaud::shell::config::DiscoverySettings;
use klaud::shell::modes::verify_baselines::{
    BaselineStatus, PRODUCER_STDOUT_LIMIT, PlannedCandidates, ProducerWorkOptions,
    plan_verification, verify_candidates,
};
use serde_json::{Value, json};

use verify_baselines_support::{
    StandInData, StandInRepository, VerifyBaselinesRunner, candidate, test_config_args,
};

const CANDIDATES_PER_HEAD: [usize; 6] = [5, 4, 4, 3, 3, 3];
const OLD_HEADS: usize = 2;
const ENTRIES_PER_KEY: u64 = 20;

fn entry(key: &str, conc: u64) -> Value {
    json!({
        "image": format!("example/{key}:1"), "model": "org/model", "model-prefix": "m1",
        "precision": "fp8", "framework": "engine", "runner": "h100", "isl": 1024, "osl": 1024,
        "tp": 8, "conc": conc, "ep": 1, "dp-attn": false, "spec-decoding": "none",
        "exp-name": "m1_1k1k", "disagg": false, "run-eval": false
    })
}

fn row(key: &str, conc: u64) -> Value {
    json!({
        "hardware": "h100", "framework": "engine", "model": "m1", "precision": "fp8",
        "spec_method": "none", "disagg": false, "is_multinode": false,
        "prefill_tp": 8, "prefill_ep": 1, "prefill_dp_attention": false, "prefill_num_workers": 0,
        "decode_tp": 8, "decode_ep": 1, "decode_dp_attention": false, "decode_num_workers": 0,
        "num_prefill_gpu": 8, "num_decode_gpu": 8, "isl": 1024, "osl": 1024, "conc": conc,
        "image": format!("example/{key}:1")
    })
}

fn scenario(repository: &StandInRepository, delay: f64) -> Vec<Value> {
    let mut candidates = Vec::new();
    for (head_number, count) in CANDIDATES_PER_HEAD.iter().enumerate() {
        let mut data = StandInData::new(head_number >= OLD_HEADS);
        data.delay_seconds = delay;
        data.rejection_stderr = vec![
            "usage: generate_sweep_configs.py [-h]".into(),
            "                                 {full-sweep,runner-model-sweep,test-config}".into(),
            "                                 ...".into(),
            "generate_sweep_configs.py: error: unrecognized arguments: --no-evals".into(),
        ];
        let keys: Vec<String> = (0..*count)
            .map(|n| format!("key-{head_number}-{n}"))
            .collect();
        for key in &keys {
            let entries: Vec<Value> = (0..ENTRIES_PER_KEY).map(|n| entry(key, 1 << n)).collect();
            data = data.with_key(key, entries.clone(), entries);
        }
        let head = repository.commit_producer(&data);
        for key in &keys {
            let points = vec![row(key, 4), row(key, 64), row(key, 1024)];
            candidates.push(candidate(key, &head, &test_config_args(key), points));
        }
    }
    candidates
}

struct Figures {
    label: &'static str,
    invocations: usize,
    seconds: f64,
    verified: usize,
}

fn library_pass(
    repository: &StandInRepository,
    candidates: &Value,
    batching: Batching,
    parallel_heads: usize,
    label: &'static str,
    runtime: &tokio::runtime::Runtime,
) -> Figures {
    let work = tempfile::tempdir().unwrap();
    let environment: Vec<(OsString, OsString)> = ["PATH", "HOME", "LANG", "TMPDIR"]
        .iter()
        .filter_map(|name| std::env::var_os(name).map(|value| (OsString::from(name), value)))
        .collect();
    let options = ProducerWorkOptions {
        setup: ProducerSetup {
            repository: repository.path.clone(),
            checkouts_directory: work.path().join("checkouts"),
            git: "git".into(),
            interpreter: "python3".into(),
            entrypoints: vec![verify_baselines_support::ENTRYPOINT.into()],
            timeout: Duration::from_secs(300),
            stdout_limit: PRODUCER_STDOUT_LIMIT,
            environment,
        },
        cache: None,
        no_evals_flag: "--no-evals".into(),
        parallel_heads,
    };
    let parsed = parse_candidates(&candidates.to_string()).unwrap();
    let started = Instant::now();
    let report = runtime.block_on(verify_candidates(
        &PlannedCandidates::as_given(&parsed),
        &DiscoverySettings::default().spellings(),
        plan_verification(&parsed, batching),
        &options,
        |_| {},
    ));
    Figures {
        label,
        invocations: report.document.producer_runs.len(),
        seconds: started.elapsed().as_secs_f64(),
        verified: report
            .document
            .candidates
            .iter()
            .filter(|candidate| candidate.status == BaselineStatus::Verified)
            .count(),
    }
}

fn binary_pass(runner: &VerifyBaselinesRunner, candidates: &Value, label: &'static str) -> Figures {
    let started = Instant::now();
    let run = runner.run(candidates);
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(run.exit, 0, "{}\n{}", run.stdout, run.stderr);
    Figures {
        label,
        invocations: run.producer_runs(),
        seconds,
        verified: run.output_json("verified").as_array().unwrap().len(),
    }
}

fn main() {
    if !std::env::args().any(|argument| argument == "--bench") {
        // `cargo test --all-targets` runs benchmarks without `--bench`: nothing to test here.
        println!("verify-baselines benchmark: run it with `cargo bench --bench verify_baselines`");
        return;
    }
    let delay: f64 = std::env::var("STAND_IN_DELAY_SECONDS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(0.3);
    let repository = StandInRepository::new();
    let candidates = json!(scenario(&repository, delay));
    let total: usize = CANDIDATES_PER_HEAD.iter().sum();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let runtime = tokio::runtime::Runtime::new().unwrap();

    let mut runner = VerifyBaselinesRunner::new(&repository.path);
    let invocation_log = runner.work.path().join("invocations.jsonl");
    runner.config = "producer:\n  pass-env: [STAND_IN_INVOCATIONS]\n".into();
    runner.environment = vec![(
        "STAND_IN_INVOCATIONS".into(),
        invocation_log.display().to_string(),
    )];

    let mut figures = vec![binary_pass(
        &runner,
        &candidates,
        "klaud: keys batched per head, heads concurrent",
    )];
    let counted = std::fs::read_to_string(&invocation_log)
        .unwrap()
        .lines()
        .count();
    assert_eq!(
        counted, figures[0].invocations,
        "the stand-in counted every run"
    );
    figures.push(binary_pass(
        &runner,
        &candidates,
        "klaud rerun: answered from the cache",
    ));
    figures.push(library_pass(
        &repository,
        &candidates,
        Batching::ConfigKeys,
        1,
        "keys batched per head, heads one by one",
        &runtime,
    ));
    figures.push(library_pass(
        &repository,
        &candidates,
        Batching::Off,
        cores,
        "one invocation per candidate, heads concurrent",
        &runtime,
    ));
    figures.push(library_pass(
        &repository,
        &candidates,
        Batching::Off,
        1,
        "one invocation per candidate, one by one",
        &runtime,
    ));

    println!(
        "verify-baselines: {total} candidates over {} heads ({OLD_HEADS} predate --no-evals), \
         {ENTRIES_PER_KEY} entries per key, stand-in delay {delay} s, {cores} core(s)",
        CANDIDATES_PER_HEAD.len()
    );
    println!(
        "goal: one invocation per head plus one per fallback = {}",
        CANDIDATES_PER_HEAD.len() + OLD_HEADS
    );
    println!(
        "{:<50} {:>11} {:>9} {:>9}",
        "pass", "invocations", "seconds", "verified"
    );
    for figure in &figures {
        println!(
            "{:<50} {:>11} {:>9.2} {:>9}",
            figure.label, figure.invocations, figure.seconds, figure.verified
        );
        assert_eq!(figure.verified, total, "{}", figure.label);
    }
    assert_eq!(
        figures[0].invocations,
        CANDIDATES_PER_HEAD.len() + OLD_HEADS
    );
    assert_eq!(figures[1].invocations, 0);
}
