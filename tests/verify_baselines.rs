//! `klaud verify-baselines` end to end: the real binary, real git worktrees, and stand-in
//! producers (see `verify_baselines_support`) that answer like the recorded InferenceX producers
//! (`tests/fixtures/inferencex/`, read through `inferencex_fixtures`).

#![allow(clippy::disallowed_methods)] // spawns git and klaud

mod inferencex_fixtures;
mod verify_baselines_support;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use inferencex_fixtures::{
    RecordedRun, expected_entries, inferencex_fixtures, matching_cases, producer_entries,
    public_row, recorded_runs, run_of_output,
};
use verify_baselines_support::{
    StandInData, StandInRepository, VerifyBaselinesRunner, candidate, single_node_entry,
    single_node_row, test_config_args,
};

/// A stand-in answering like the producer recorded at `commit`: each key's recorded output with
/// and without `--no-evals`, and the recorded argparse rejection when that producer predates the
/// flag. Where no run with the flag was recorded at a commit, the README's rule decides: producers
/// before the first commit accepting it reject it, with the same recorded argparse text.
fn stand_in_from_recordings(fixtures: &Path, runs: &[RecordedRun], commit: &str) -> StandInData {
    let at_commit: Vec<&RecordedRun> = runs
        .iter()
        .filter(|run| run.commit == commit && !run.asks_for_evaluations())
        .collect();
    let first_accepting = runs
        .iter()
        .filter(|run| run.with_no_evals() && run.exit == 0)
        .map(|run| run.commit_date.as_str())
        .min()
        .expect("a recorded run accepts --no-evals");
    let recorded_answer = at_commit
        .iter()
        .find(|run| run.with_no_evals())
        .map(|run| run.exit == 0);
    let accepts = recorded_answer.unwrap_or(at_commit[0].commit_date.as_str() >= first_accepting);
    let mut data = StandInData::new(accepts);
    let rejection = at_commit
        .iter()
        .copied()
        .chain(runs.iter())
        .find(|run| run.with_no_evals() && run.exit == 2)
        .expect("a recorded rejection");
    data.rejection_stderr = rejection.stderr_lines.clone();
    for run in at_commit.iter().filter(|run| run.exit == 0) {
        let entries = producer_entries(fixtures, run.stdout_file.as_deref().unwrap());
        for key in run.config_keys() {
            let slot = data.outputs.entry(key).or_default();
            if run.with_no_evals() {
                slot.0 = entries.clone();
            } else {
                slot.1 = entries.clone();
            }
        }
    }
    data
}

/// The matching table as candidates: one per case, its producer head replaced by the stand-in
/// commit answering like the recorded producer at that head.
struct TableScenario {
    repository: StandInRepository,
    candidates: Vec<Value>,
    /// Case id → (expected entries, real commit).
    cases: BTreeMap<String, (Vec<usize>, String)>,
    accepts_no_evals: BTreeMap<String, bool>,
}

fn table_scenario(fixtures: &Path, parser: &'static str) -> TableScenario {
    let runs = recorded_runs(fixtures);
    let repository = StandInRepository::new();
    let mut stand_in_heads: BTreeMap<String, String> = BTreeMap::new();
    let mut accepts_no_evals = BTreeMap::new();
    let mut candidates = Vec::new();
    let mut cases = BTreeMap::new();
    for case in matching_cases(fixtures) {
        let id = case["id"].as_str().unwrap().to_string();
        let run = run_of_output(&runs, case["producer_output"].as_str().unwrap());
        let head = stand_in_heads.entry(run.commit.clone()).or_insert_with(|| {
            let mut data = stand_in_from_recordings(fixtures, &runs, &run.commit);
            data.parser = parser;
            accepts_no_evals.insert(run.commit.clone(), data.accepts_no_evals);
            repository.commit_producer(&data)
        });
        let row = Value::Object(public_row(fixtures, &case));
        candidates.push(candidate(&id, head, &run.baseline_args(), vec![row]));
        cases.insert(id, (expected_entries(&case), run.commit.clone()));
    }
    TableScenario {
        repository,
        candidates,
        cases,
        accepts_no_evals,
    }
}

const IMAGE_MISMATCH_CASE: &str = "sn-newest-b200-vllm-dep8-c64";

#[test]
fn every_matching_table_case_gets_its_verdict_through_the_binary_with_one_run_per_head() {
    let fixtures = inferencex_fixtures();
    let scenario = table_scenario(&fixtures, "replay");
    let runner = VerifyBaselinesRunner::new(&scenario.repository.path);
    let run = runner.run(&json!(scenario.candidates));
    assert_eq!(run.exit, 0, "{}\n{}", run.stdout, run.stderr);

    for (id, (expected, commit)) in &scenario.cases {
        let record = run.candidate(id);
        let fallback = !scenario.accepts_no_evals[commit];
        assert_eq!(record["producer"]["fallback"], json!(fallback), "{id}");
        assert_eq!(
            record["producer"]["entrypoint"],
            json!(verify_baselines_support::ENTRYPOINT)
        );
        match expected.as_slice() {
            [] => {
                assert_eq!(record["status"], "deferred", "{id}");
                assert_eq!(record["reason"]["code"], "unmatched-baseline", "{id}");
            }
            [_] if id == IMAGE_MISMATCH_CASE => {
                assert_eq!(record["status"], "deferred", "{id}");
                assert_eq!(record["reason"]["code"], "image-mismatch", "{id}");
            }
            [entry] => {
                assert_eq!(record["status"], "verified", "{id}: {record}");
                assert_eq!(record["reason"], Value::Null);
                assert_eq!(
                    record["points"],
                    json!([{"row": 0, "entry": entry}]),
                    "{id}"
                );
            }
            _ => unreachable!(),
        }
    }

    // One run per head, plus one per head that predates --no-evals.
    let heads = scenario.accepts_no_evals.len();
    let fallbacks = scenario
        .accepts_no_evals
        .values()
        .filter(|accepts| !**accepts)
        .count();
    assert_eq!(run.producer_runs(), heads + fallbacks, "{}", run.stdout);
    let runs = run.baselines.as_ref().unwrap()["producer-runs"]
        .as_array()
        .unwrap()
        .clone();
    for record in runs.iter().filter(|record| record["fallback"] == true) {
        assert_eq!(record["exit"], 0);
        assert!(
            !record["args"]
                .as_array()
                .unwrap()
                .contains(&json!("--no-evals"))
        );
    }
    for record in runs.iter().filter(|record| record["exit"] == 2) {
        assert_eq!(record["fallback"], false);
        assert_eq!(
            record["args"].as_array().unwrap().last().unwrap(),
            "--no-evals"
        );
    }

    assert_eq!(run.output_json("verified").as_array().unwrap().len(), 10);
    let expected_deferred: Vec<Value> = scenario
        .candidates
        .iter()
        .map(|candidate| candidate["id"].clone())
        .filter(|id| id == IMAGE_MISMATCH_CASE || scenario.cases[id.as_str().unwrap()].0.is_empty())
        .collect();
    assert_eq!(expected_deferred.len(), 2);
    assert_eq!(run.output_json("deferred"), json!(expected_deferred));
    assert_eq!(
        run.output_json("deferred-reasons"),
        json!({"unmatched-baseline": 1, "image-mismatch": 1})
    );
    assert!(
        run.summary.contains("| `image-mismatch` | 1 |"),
        "{}",
        run.summary
    );
    assert!(
        run.summary.contains("10 verified, 2 deferred"),
        "{}",
        run.summary
    );

    // Every checkout is gone again.
    assert_eq!(scenario.repository.worktrees().len(), 1);
    let checkouts = runner.directory().join("producer-checkouts");
    assert_eq!(std::fs::read_dir(checkouts).unwrap().count(), 0);

    // A second pass finds every output in the cache and runs nothing.
    let again = runner.run(&json!(scenario.candidates));
    assert_eq!(again.exit, 0);
    assert_eq!(again.producer_runs(), 0, "{}", again.stdout);
    assert_eq!(
        again.baselines.as_ref().unwrap()["candidates"],
        run.baselines.as_ref().unwrap()["candidates"]
    );
}

#[test]
fn the_fallback_works_against_a_real_argparse_producer_that_predates_the_flag() {
    let fixtures = inferencex_fixtures();
    let scenario = table_scenario(&fixtures, "argparse");
    let old: Vec<Value> = scenario
        .candidates
        .iter()
        .filter(|candidate| {
            candidate["id"] == "sn-old-mi355x-c4" || candidate["id"] == "sn-old-mi355x-c8"
        })
        .cloned()
        .collect();
    let run = VerifyBaselinesRunner::new(&scenario.repository.path).run(&json!(old));
    assert_eq!(run.exit, 0, "{}", run.stderr);
    for (id, entry) in [("sn-old-mi355x-c4", 0), ("sn-old-mi355x-c8", 1)] {
        let record = run.candidate(id);
        assert_eq!(record["status"], "verified", "{record}");
        assert_eq!(record["producer"]["fallback"], true);
        assert_eq!(record["points"], json!([{"row": 0, "entry": entry}]));
    }
    let runs = &run.baselines.as_ref().unwrap()["producer-runs"];
    assert_eq!(
        runs.as_array().unwrap().len(),
        2,
        "one run with the flag, one without"
    );
    assert_eq!(runs[0]["exit"], 2);
    assert_eq!(runs[1]["fallback"], true);
    // argparse's own verdict reached the log, fenced; never the results.
    assert!(
        run.stdout
            .contains("error: unrecognized arguments: --no-evals")
    );
    assert!(
        !run.baselines
            .as_ref()
            .unwrap()
            .to_string()
            .contains("unrecognized")
    );
}

#[test]
fn candidates_batched_at_one_head_get_the_records_they_get_when_run_alone() {
    let fixtures = inferencex_fixtures();
    let scenario = table_scenario(&fixtures, "replay");
    let newest_head = scenario
        .candidates
        .iter()
        .find(|candidate| candidate["id"] == IMAGE_MISMATCH_CASE)
        .map(|candidate| candidate["baseline"]["producer"]["head"].clone())
        .unwrap();
    let mut batch: Vec<Value> = scenario
        .candidates
        .iter()
        .filter(|candidate| candidate["baseline"]["producer"]["head"] == newest_head)
        .cloned()
        .collect();
    // One more key at the same head, so the batch holds three distinct keys.
    let runs = recorded_runs(&fixtures);
    let kimi = runs
        .iter()
        .find(|run| run.id.contains("kimik3") && run.with_no_evals())
        .unwrap();
    let kimi_row = json!({
        "hardware": "h200", "framework": "vllm", "model": "kimik3", "precision": "fp4",
        "spec_method": "mtp", "disagg": false, "is_multinode": true,
        "prefill_tp": 16, "prefill_ep": 32, "prefill_dp_attention": true, "prefill_num_workers": 2,
        "decode_tp": 16, "decode_ep": 32, "decode_dp_attention": true, "decode_num_workers": 2,
        "isl": null, "osl": null, "conc": 4
    });
    batch.push(candidate(
        "kimik3-agentic-c4",
        newest_head.as_str().unwrap(),
        &kimi.baseline_args(),
        vec![kimi_row],
    ));
    let distinct_keys: std::collections::BTreeSet<String> = batch
        .iter()
        .map(|candidate| {
            candidate["baseline"]["producer"]["args"][2]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(distinct_keys.len(), 3, "{distinct_keys:?}");

    let together = VerifyBaselinesRunner::new(&scenario.repository.path).run(&json!(batch));
    assert_eq!(together.exit, 0, "{}", together.stderr);
    assert_eq!(
        together.producer_runs(),
        1,
        "one invocation for {} candidates",
        batch.len()
    );
    assert_eq!(
        together.candidate("kimik3-agentic-c4")["status"],
        "verified"
    );
    for candidate in &batch {
        let alone = VerifyBaselinesRunner::new(&scenario.repository.path).run(&json!([candidate]));
        assert_eq!(alone.producer_runs(), 1);
        let id = candidate["id"].as_str().unwrap();
        assert_eq!(together.candidate(id), alone.candidate(id), "{id}");
    }
}

/// One head whose stand-in answers hand-made entries for key `k1` (and `k2`).
fn synthetic_repository(data: StandInData) -> (StandInRepository, String) {
    let repository = StandInRepository::new();
    let head = repository.commit_producer(&data);
    (repository, head)
}

fn synthetic_data() -> StandInData {
    let entries = vec![single_node_entry("h100", 4), single_node_entry("h100", 8)];
    StandInData::new(true).with_key("k1", entries.clone(), entries)
}

#[test]
fn a_producer_failing_for_another_reason_is_not_rerun_and_its_stderr_stays_in_the_fenced_log() {
    let mut data = synthetic_data();
    data.failure = Some((
        1,
        "Traceback (most recent call last):\nKeyError: 'k1'\n::warning::injected by the producer\n"
            .into(),
    ));
    let (repository, head) = synthetic_repository(data);
    let run = VerifyBaselinesRunner::new(&repository.path).run(&json!([candidate(
        "fails",
        &head,
        &test_config_args("k1"),
        vec![single_node_row("h100", 4)]
    )]));
    assert_eq!(
        run.exit, 0,
        "a deferral is not a failed step: {}",
        run.stderr
    );
    let record = run.candidate("fails");
    assert_eq!(record["status"], "deferred");
    assert_eq!(
        record["reason"],
        json!({"code": "producer-failed", "message": "the producer exited with code 1"})
    );
    assert_eq!(record["producer"]["fallback"], false);
    assert_eq!(run.producer_runs(), 1, "no rerun");

    let fence = run.stdout.find("::stop-commands::").expect("a fence");
    let injected = run
        .stdout
        .find("::warning::injected")
        .expect("stderr in the log");
    assert!(fence < injected, "{}", run.stdout);
    let token = run.stdout[fence + "::stop-commands::".len()..]
        .lines()
        .next()
        .unwrap();
    assert!(run.stdout[injected..].contains(&format!("::{token}::")));
    for written in [
        run.baselines.as_ref().unwrap().to_string(),
        format!("{:?}", run.outputs),
        run.summary.clone(),
    ] {
        assert!(!written.contains("KeyError"), "{written}");
    }
}

#[test]
fn a_token_in_klauds_environment_is_not_visible_to_the_producer() {
    let (repository, head) = synthetic_repository(synthetic_data());
    // What actions/checkout persists unless told otherwise: readable by every checkout.
    repository.set_config(
        "http.https://github.com/.extraheader",
        "AUTHORIZATION: basic ghs_persisted0123456789",
    );
    let mut runner = VerifyBaselinesRunner::new(&repository.path);
    let dump = runner.work.path().join("producer-environment.json");
    // The interpreter itself, not a wrapper script (pyenv's shim adds variables of its own).
    let python = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    let python = String::from_utf8(python.stdout).unwrap();
    runner.config = format!(
        "producer:\n  interpreter: '{}'\n  pass-env: [STAND_IN_ENVIRONMENT_DUMP]\n",
        python.trim()
    );
    runner.environment = vec![
        ("GITHUB_TOKEN".into(), "ghs_secret0123456789abcdef".into()),
        (
            "KLAUD_GITHUB_TOKEN".into(),
            "ghs_other0123456789abcdef".into(),
        ),
        ("ACTIONS_RUNTIME_TOKEN".into(), "runtime-secret".into()),
        (
            "STAND_IN_ENVIRONMENT_DUMP".into(),
            dump.display().to_string(),
        ),
    ];
    let run = runner.run(&json!([candidate(
        "token",
        &head,
        &test_config_args("k1"),
        vec![single_node_row("h100", 8)]
    )]));
    assert_eq!(run.exit, 0, "{}", run.stderr);
    assert_eq!(run.candidate("token")["status"], "verified");

    let seen: BTreeMap<String, String> =
        serde_json::from_str(&std::fs::read_to_string(&dump).expect("the producer ran")).unwrap();
    let names: Vec<&str> = seen.keys().map(String::as_str).collect();
    for name in &names {
        assert!(
            [
                "PATH",
                "HOME",
                "LANG",
                "TMPDIR",
                "STAND_IN_ENVIRONMENT_DUMP",
                "LC_CTYPE"
            ]
            .contains(name),
            "the producer saw {name}: {names:?}"
        );
    }
    assert!(names.contains(&"PATH") && names.contains(&"STAND_IN_ENVIRONMENT_DUMP"));
    let everything = format!("{seen:?}");
    assert!(!everything.contains("secret"), "{everything}");
    for log in [&run.stdout, &run.stderr] {
        assert!(
            !log.contains("ghs_secret") && !log.contains("ghs_persisted"),
            "{log}"
        );
    }
    assert!(
        run.stdout
            .contains("::warning::repo-path keeps a git credential"),
        "a persisted credential is called out: {}",
        run.stdout
    );
}

#[test]
fn a_producer_that_outlives_its_timeout_is_killed_and_deferred() {
    let mut data = synthetic_data();
    data.delay_seconds = 30.0;
    let (repository, head) = synthetic_repository(data);
    let mut runner = VerifyBaselinesRunner::new(&repository.path);
    runner.config = "producer:\n  timeout-seconds: 1\n".into();
    let started = std::time::Instant::now();
    let run = runner.run(&json!([candidate(
        "slow",
        &head,
        &test_config_args("k1"),
        vec![single_node_row("h100", 8)]
    )]));
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    assert_eq!(run.candidate("slow")["reason"]["code"], "producer-timeout");
    assert_eq!(
        run.baselines.as_ref().unwrap()["producer-runs"][0]["exit"],
        Value::Null
    );
    assert_eq!(
        repository.worktrees().len(),
        1,
        "the checkout is removed after a timeout"
    );
}

#[test]
fn one_candidates_failure_never_stops_the_others() {
    let repository = StandInRepository::new();
    let without_entrypoint =
        repository.commit_files(&[("README.md", "no producer at this commit\n".to_string())]);
    let not_json = repository.commit_files(&[(
        verify_baselines_support::ENTRYPOINT,
        "print('matrix: 3 entries')\n".to_string(),
    )]);
    let second_entrypoint = repository.commit_producer_at(
        "utils/matrix-logic/generate_sweep_configs.py",
        &synthetic_data(),
    );
    let missing_head = "0123456789abcdef0123456789abcdef01234567";
    let row = || vec![single_node_row("h100", 8)];
    let args = test_config_args("k1");
    let candidates = json!([
        candidate("no-entrypoint", &without_entrypoint, &args, row()),
        candidate("missing-head", missing_head, &args, row()),
        candidate("not-json", &not_json, &args, row()),
        {"id": "no-baseline", "family": "f", "note": "kept"},
        candidate("fine", &second_entrypoint, &args, row()),
        candidate("no-such-key", &second_entrypoint, &test_config_args("k9"), row()),
        candidate("sibling-only", &second_entrypoint, &args, vec![single_node_row("b200", 8)]),
    ]);
    let run = VerifyBaselinesRunner::new(&repository.path).run(&candidates);
    assert_eq!(run.exit, 0, "{}", run.stderr);
    let code = |id: &str| run.candidate(id)["reason"]["code"].clone();
    assert_eq!(code("no-entrypoint"), "no-entrypoint");
    assert_eq!(code("missing-head"), "producer-head-missing");
    assert_eq!(code("not-json"), "producer-output-invalid");
    assert_eq!(code("no-baseline"), "no-baseline");
    assert_eq!(run.candidate("no-baseline")["producer"], Value::Null);
    assert_eq!(code("no-such-key"), "producer-failed");
    assert_eq!(code("sibling-only"), "unmatched-baseline");
    let fine = run.candidate("fine");
    assert_eq!(fine["status"], "verified");
    assert_eq!(
        fine["producer"]["entrypoint"],
        "utils/matrix-logic/generate_sweep_configs.py"
    );
    assert_eq!(fine["points"], json!([{"row": 0, "entry": 1}]));
    assert_eq!(run.output_json("verified"), json!(["fine"]));
    assert_eq!(run.output_json("deferred").as_array().unwrap().len(), 6);
    assert_eq!(repository.worktrees().len(), 1);
}

#[test]
fn bad_input_is_exit_2_naming_the_field_before_anything_is_run_or_written() {
    let (repository, head) = synthetic_repository(synthetic_data());
    let runner = VerifyBaselinesRunner::new(&repository.path);
    let mut with_flag = test_config_args("k1");
    with_flag.push("--no-evals".into());
    let cases = [
        (
            json!([{"id": "ok", "family": "f"}, {"id": "bad id", "family": "f"}]),
            "candidates[1].id",
        ),
        (json!([{"id": "a"}]), "candidates[0].family"),
        (json!({"items": []}), "candidates"),
        (
            json!([candidate("flag", &head, &with_flag, vec![])]),
            "candidates[0].baseline.producer.args",
        ),
        (
            json!([candidate("short", "abc", &with_flag, vec![])]),
            "candidates[0].baseline.producer.head",
        ),
    ];
    for (candidates, field) in cases {
        let run = runner.run(&candidates);
        assert_eq!(run.exit, 2, "{field}: {}", run.stdout);
        assert!(
            run.stdout.contains(&format!("::error::{field}: ")),
            "{field}: {}",
            run.stdout
        );
        assert!(run.baselines.is_none(), "{field}: nothing is written");
        assert!(run.outputs.is_empty());
    }
}

/// The issues source's candidates carry a task, not a baseline: `verify-baselines` records them
/// `not-needed` (no repository, producer or feed read) so that `select` may claim them, while a
/// candidate of the InferenceX profile without a baseline is still deferred.
#[test]
fn issue_candidates_need_no_baseline_and_select_may_claim_them() {
    let candidates = json!([
        {"id": "issue-7", "family": "issue-7",
         "issue": {"number": 7, "title": "Cache the parser tables"},
         "task": {"title": "Cache the parser tables", "body": "The parser rebuilds its tables."}},
    ]);
    let missing = tempfile::tempdir().unwrap();
    let mut runner = VerifyBaselinesRunner::new(&missing.path().join("no-checkout"));
    runner.config = "discovery:\n  source: issues\n".into();
    let run = runner.run(&candidates);
    assert_eq!(run.exit, 0, "{}", run.stderr);
    let record = run.candidate("issue-7");
    assert_eq!(record["status"], "not-needed");
    assert_eq!(record["reason"], Value::Null);
    assert_eq!(run.output_json("verified"), json!([]));
    assert_eq!(run.output_json("deferred"), json!([]));
    assert!(
        run.summary
            .contains("0 verified, 0 deferred, 1 need no baseline"),
        "{}",
        run.summary
    );
    let verdicts = klaud::core::select::baselines::parse_baselines(
        &serde_json::to_string(run.baselines.as_ref().unwrap()).unwrap(),
    )
    .unwrap();
    assert_eq!(
        verdicts.verdict("issue-7"),
        Some(&klaud::core::select::baselines::BaselineVerdict::NotNeeded)
    );

    // The InferenceX profile defers the same candidate: it has no baseline to verify.
    let inferencex =
        VerifyBaselinesRunner::new(&missing.path().join("no-checkout")).run(&candidates);
    assert_eq!(inferencex.exit, 0, "{}", inferencex.stderr);
    assert_eq!(
        inferencex.candidate("issue-7")["reason"]["code"],
        "no-baseline"
    );
}
