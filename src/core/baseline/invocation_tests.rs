//! Unit tests of producer-work planning, the batch split, the fallback verdict and output
//! reading. The split on real recorded outputs is tested in `tests/baseline_matching_fixtures.rs`.

use super::*;
use serde_json::json;

const HEAD_A: &str = "626932a110a2348591e314eddb782f7a0dee104c";
const HEAD_B: &str = "843c6254ff69b567f772f6a5fd97675af3d04431";

fn call(head: &str, keys: &[&str]) -> ProducerCall {
    let mut args = vec!["test-config".to_string(), CONFIG_KEYS_OPTION.to_string()];
    args.extend(keys.iter().map(|key| key.to_string()));
    args.extend(["--config-files", "a.yaml", "b.yaml"].map(String::from));
    ProducerCall {
        head: head.to_string(),
        args,
    }
}

fn plan(calls: &[ProducerCall], batching: Batching) -> Vec<HeadWork> {
    let pairs: Vec<(usize, &ProducerCall)> = calls.iter().enumerate().collect();
    plan_producer_work(&pairs, batching)
}

fn entry(runner: &str, conc: u64) -> Value {
    json!({"image": "i", "model": "m", "model-prefix": "p", "precision": "fp4",
           "framework": "f", "runner": runner, "conc": conc})
}

#[test]
fn candidates_at_one_head_that_differ_only_in_keys_share_one_invocation() {
    let work = plan(
        &[
            call(HEAD_A, &["k1"]),
            call(HEAD_A, &["k2"]),
            call(HEAD_A, &["k1"]),
        ],
        Batching::ConfigKeys,
    );
    assert_eq!(work.len(), 1);
    let invocation = &work[0].invocations[0];
    assert_eq!(work[0].invocations.len(), 1);
    assert_eq!(
        invocation.args,
        [
            "test-config",
            "--config-keys",
            "k1",
            "k2",
            "--config-files",
            "a.yaml",
            "b.yaml"
        ]
    );
    assert_eq!(
        invocation.batched_keys.as_deref(),
        Some(&["k1".to_string(), "k2".to_string()][..])
    );
    assert_eq!(invocation.members.len(), 3);
}

#[test]
fn distinct_heads_and_distinct_templates_are_separate_invocations() {
    let mut other_files = call(HEAD_A, &["k3"]);
    other_files.args[4] = "c.yaml".to_string();
    let work = plan(
        &[
            call(HEAD_A, &["k1"]),
            call(HEAD_B, &["k2"]),
            other_files,
            call(HEAD_A, &["k4"]),
        ],
        Batching::ConfigKeys,
    );
    assert_eq!(work.len(), 2);
    assert_eq!(work[0].head, HEAD_A);
    assert_eq!(work[0].invocations.len(), 2);
    assert_eq!(
        work[0].invocations[0].batched_keys.as_ref().unwrap(),
        &["k1", "k4"]
    );
    assert_eq!(work[1].invocations.len(), 1);
}

#[test]
fn arguments_without_a_single_config_keys_option_are_never_batched() {
    let plain = ProducerCall {
        head: HEAD_A.into(),
        args: vec!["full-sweep".into(), "--single-node".into()],
    };
    let repeated = ProducerCall {
        head: HEAD_A.into(),
        args: ["test-config", "--config-keys", "a", "--config-keys", "b"]
            .map(String::from)
            .to_vec(),
    };
    let equals_form = ProducerCall {
        head: HEAD_A.into(),
        args: ["test-config", "--config-keys=a"]
            .map(String::from)
            .to_vec(),
    };
    let work = plan(
        &[plain.clone(), repeated, equals_form, plain],
        Batching::ConfigKeys,
    );
    let invocations = &work[0].invocations;
    assert_eq!(
        invocations.len(),
        3,
        "identical argument lists still share a run"
    );
    assert!(
        invocations
            .iter()
            .all(|invocation| invocation.batched_keys.is_none())
    );
    assert_eq!(invocations[0].members.len(), 2);
}

#[test]
fn without_batching_every_distinct_argument_list_is_its_own_invocation() {
    let work = plan(
        &[
            call(HEAD_A, &["k1"]),
            call(HEAD_A, &["k2"]),
            call(HEAD_A, &["k1"]),
        ],
        Batching::Off,
    );
    assert_eq!(work[0].invocations.len(), 2);
    assert!(!work[0].invocations[0].needs_split());
}

#[test]
fn a_batched_output_splits_at_signature_changes_in_key_order() {
    let work = plan(
        &[
            call(HEAD_A, &["k2"]),
            call(HEAD_A, &["k1"]),
            call(HEAD_A, &["k1", "k2"]),
        ],
        Batching::ConfigKeys,
    );
    let invocation = &work[0].invocations[0];
    assert_eq!(invocation.batched_keys.as_ref().unwrap(), &["k2", "k1"]);
    let entries = vec![entry("x", 1), entry("x", 2), entry("y", 1)];
    let split = entries_per_member(invocation, &entries).unwrap();
    assert_eq!(split, vec![vec![0, 1], vec![2], vec![2, 0, 1]]);
}

#[test]
fn a_batch_whose_keys_cannot_be_told_apart_is_refused() {
    let work = plan(
        &[call(HEAD_A, &["k1"]), call(HEAD_A, &["k2"])],
        Batching::ConfigKeys,
    );
    let invocation = &work[0].invocations[0];
    let same_signature = vec![entry("x", 1), entry("x", 2)];
    assert_eq!(
        entries_per_member(invocation, &same_signature),
        Err(SplitRefused {
            signature_runs: 1,
            keys: 2
        })
    );
    assert!(entries_per_member(invocation, &[]).is_err());
    let unbatched = invocation.unbatched();
    assert_eq!(unbatched.len(), 2);
    assert_eq!(unbatched[0].args, call(HEAD_A, &["k1"]).args);
    assert_eq!(unbatched[1].members[0].candidate, 1);
}

#[test]
fn an_unsplit_invocation_gives_every_member_the_whole_output() {
    let work = plan(
        &[call(HEAD_A, &["k1"]), call(HEAD_A, &["k1"])],
        Batching::ConfigKeys,
    );
    let split = entries_per_member(&work[0].invocations[0], &[entry("x", 1)]).unwrap();
    assert_eq!(split, vec![vec![0], vec![0]]);
}

fn facts(exit: Option<i32>, last: &str) -> ProducerRunFacts {
    ProducerRunFacts {
        exit,
        timed_out: false,
        last_stderr_line: Some(last.to_string()).filter(|line| !line.is_empty()),
    }
}

#[test]
fn the_recorded_argparse_rejection_means_rerun_without_the_flag() {
    let last = "generate_sweep_configs.py: error: unrecognized arguments: --no-evals";
    assert_eq!(
        judge_flag_run(&facts(Some(2), last), "--no-evals"),
        FlagRunVerdict::RerunWithoutFlag
    );
}

#[test]
fn only_the_configured_flag_itself_triggers_the_rerun() {
    let judge = |last: &str| judge_flag_run(&facts(Some(2), last), "--no-evals");
    assert!(matches!(
        judge("error: unrecognized arguments: --no-evals-x"),
        FlagRunVerdict::Failed(_)
    ));
    assert!(matches!(
        judge("error: unrecognized arguments: --other"),
        FlagRunVerdict::Failed(_)
    ));
    assert!(matches!(
        judge("Traceback: --no-evals"),
        FlagRunVerdict::Failed(_)
    ));
    assert_eq!(
        judge("error: unrecognized arguments: --x --no-evals"),
        FlagRunVerdict::RerunWithoutFlag
    );
    assert!(matches!(
        judge_flag_run(
            &facts(Some(2), "error: unrecognized arguments: --skip-evals"),
            "--skip-evals"
        ),
        FlagRunVerdict::RerunWithoutFlag
    ));
}

#[test]
fn other_failures_are_deferred_with_their_kind_and_never_rerun() {
    let FlagRunVerdict::Failed(deferral) =
        judge_flag_run(&facts(Some(1), "KeyError: 'dsr1'"), "--no-evals")
    else {
        panic!("expected a failure")
    };
    assert_eq!(deferral.code, DeferralCode::ProducerFailed);
    assert_eq!(deferral.message, "the producer exited with code 1");
    let killed = ProducerRunFacts {
        exit: None,
        timed_out: false,
        last_stderr_line: None,
    };
    assert!(matches!(
        judge_flag_run(&killed, "--no-evals"),
        FlagRunVerdict::Failed(_)
    ));
    let timed_out = ProducerRunFacts {
        exit: None,
        timed_out: true,
        last_stderr_line: None,
    };
    assert_eq!(
        judge_flag_run(&timed_out, "--no-evals"),
        FlagRunVerdict::Failed(Deferral::fixed(DeferralCode::ProducerTimeout))
    );
}

#[test]
fn a_failed_rerun_says_it_was_the_rerun() {
    let deferral = judge_rerun(&facts(Some(2), "x"), "--no-evals").unwrap_err();
    assert_eq!(deferral.code, DeferralCode::ProducerFailed);
    assert!(
        deferral
            .message
            .ends_with("after the rerun without --no-evals")
    );
    assert_eq!(judge_rerun(&facts(Some(0), ""), "--no-evals"), Ok(()));
}

#[test]
fn producer_output_must_be_a_json_array_of_objects() {
    assert_eq!(
        read_producer_output("[{\"a\":1}]", false, 10)
            .unwrap()
            .len(),
        1
    );
    for (stdout, truncated) in [("", false), ("{}", false), ("[1]", false), ("[]", true)] {
        let deferral = read_producer_output(stdout, truncated, 10).unwrap_err();
        assert_eq!(
            deferral.code,
            DeferralCode::ProducerOutputInvalid,
            "{stdout}"
        );
    }
}

#[test]
fn evaluation_rows_are_recognised_by_either_marker() {
    assert!(is_evaluation_entry(&json!({"run-eval": true})));
    assert!(is_evaluation_entry(
        &json!({"run-eval": false, "eval-only": true})
    ));
    assert!(!is_evaluation_entry(&json!({"run-eval": false})));
    assert!(!is_evaluation_entry(&json!({})));
}
