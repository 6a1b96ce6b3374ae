//! Unit tests of the matching rules on small hand-built rows and entries. The real InferenceX
//! rows and producer outputs are exercised in `tests/baseline_matching_fixtures.rs`.

use super::*;
use serde_json::json;

/// No spelling at all: the entries are compared as the generator wrote them.
fn unspelled() -> PublishedSpellings {
    PublishedSpellings::default()
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(fields) => fields,
        _ => panic!("an object"),
    }
}

fn with(mut base: Map<String, Value>, changes: Value) -> Map<String, Value> {
    for (key, value) in object(changes) {
        base.insert(key, value);
    }
    base
}

fn single_node_row() -> Map<String, Value> {
    object(json!({
        "hardware": "b200", "framework": "vllm", "model": "dsv4", "precision": "fp4",
        "spec_method": "none", "disagg": false, "is_multinode": false,
        "prefill_tp": 8, "prefill_ep": 8, "prefill_dp_attention": true, "prefill_num_workers": 0,
        "decode_tp": 8, "decode_ep": 8, "decode_dp_attention": true, "decode_num_workers": 0,
        "num_prefill_gpu": 64, "num_decode_gpu": 64,
        "isl": 8192, "osl": 1024, "conc": 64, "image": "vllm/vllm-openai:v0.25.0"
    }))
}

fn single_node_entry(conc: u64) -> Value {
    json!({
        "image": "vllm/vllm-openai:v0.25.0", "model": "deepseek-ai/DeepSeek-V4-Pro",
        "model-prefix": "dsv4", "precision": "fp4", "framework": "vllm",
        "runner": "cluster:b200-dgxc", "isl": 8192, "osl": 1024, "tp": 8, "conc": conc,
        "ep": 8, "dp-attn": true, "spec-decoding": "none", "disagg": false, "run-eval": false
    })
}

fn aggregate_entry(prefill_workers: u64, conc: u64) -> Value {
    json!({
        "image": "nvcr.io#nvidia/sglang:1", "model-prefix": "dsv4", "precision": "fp8",
        "framework": "dynamo-sglang", "runner": "cluster:h200-dgxc", "spec-decoding": "mtp",
        "prefill": {"num-worker": prefill_workers, "tp": 8, "ep": 1, "dp-attn": false},
        "decode": {"num-worker": 0, "tp": 8, "ep": 1, "dp-attn": false},
        "conc": [conc], "disagg": false
    })
}

fn aggregate_row(workers: u64) -> Map<String, Value> {
    object(json!({
        "hardware": "h200", "framework": "dynamo-sglang", "model": "dsv4", "precision": "fp8",
        "spec_method": "mtp", "disagg": false, "is_multinode": workers > 0,
        "prefill_tp": 8, "prefill_ep": 1, "prefill_dp_attention": false, "prefill_num_workers": workers,
        "decode_tp": 8, "decode_ep": 1, "decode_dp_attention": false, "decode_num_workers": workers,
        "isl": null, "osl": null, "conc": 1, "image": "nvcr.io/nvidia/sglang:1"
    }))
}

fn disaggregated_entry() -> Value {
    json!({
        "image": "nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post2", "model-prefix": "dsr1",
        "precision": "fp8", "framework": "dynamo-trt", "runner": "gb200", "isl": 1024, "osl": 1024,
        "spec-decoding": "mtp",
        "prefill": {"num-worker": 1, "tp": 8, "ep": 8, "dp-attn": true, "additional-settings": []},
        "decode": {"num-worker": 3, "tp": 8, "ep": 8, "dp-attn": false},
        "conc": [36, 72], "disagg": true, "run-eval": false
    })
}

fn disaggregated_row() -> Map<String, Value> {
    object(json!({
        "hardware": "gb200", "framework": "dynamo-trt", "model": "dsr1", "precision": "fp8",
        "spec_method": "mtp", "disagg": true, "is_multinode": true,
        "prefill_tp": 8, "prefill_ep": 8, "prefill_dp_attention": true, "prefill_num_workers": 1,
        "decode_tp": 8, "decode_ep": 8, "decode_dp_attention": false, "decode_num_workers": 3,
        "num_prefill_gpu": 8, "num_decode_gpu": 24, "isl": 1024, "osl": 1024, "conc": 72,
        "image": "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post2"
    }))
}

fn verdict(row: &Map<String, Value>, entries: &[Value]) -> PointVerdict {
    let index = EntryIndex::build(entries.iter().enumerate(), &unspelled()).unwrap();
    index.match_point(&project_published_point(row).unwrap())
}

#[test]
fn a_single_node_row_matches_the_entry_with_its_parallelism_and_concurrency() {
    let entries = [single_node_entry(32), single_node_entry(64)];
    assert_eq!(
        verdict(&single_node_row(), &entries),
        PointVerdict::Matched(1)
    );
    let other_tp = with(single_node_row(), json!({"prefill_tp": 4, "decode_tp": 4}));
    assert_eq!(verdict(&other_tp, &entries), PointVerdict::Unmatched);
}

#[test]
fn public_gpu_counts_are_never_compared() {
    let odd_counts = with(
        single_node_row(),
        json!({"num_prefill_gpu": 1, "num_decode_gpu": 999}),
    );
    assert_eq!(
        verdict(&odd_counts, &[single_node_entry(64)]),
        PointVerdict::Matched(0)
    );
}

#[test]
fn the_runner_label_is_read_as_its_hardware() {
    assert_eq!(hardware_of_runner("cluster:b200-dgxc"), "b200");
    assert_eq!(hardware_of_runner("b200-nscale"), "b200");
    assert_eq!(hardware_of_runner("gb200"), "gb200");
    assert_eq!(hardware_of_runner("mi355x"), "mi355x");
}

#[test]
fn registry_and_enroot_spellings_are_one_image() {
    assert_eq!(
        verdict(&disaggregated_row(), &[disaggregated_entry()]),
        PointVerdict::Matched(0)
    );
}

#[test]
fn a_disaggregated_row_needs_every_role_column_equal() {
    let fewer_decode_workers = with(disaggregated_row(), json!({"decode_num_workers": 2}));
    assert_eq!(
        verdict(&fewer_decode_workers, &[disaggregated_entry()]),
        PointVerdict::Unmatched
    );
    let concurrency_not_listed = with(disaggregated_row(), json!({"conc": 48}));
    assert_eq!(
        verdict(&concurrency_not_listed, &[disaggregated_entry()]),
        PointVerdict::Unmatched
    );
}

#[test]
fn an_aggregate_multi_node_entry_is_published_with_decode_mirrored_from_prefill() {
    assert_eq!(
        verdict(&aggregate_row(2), &[aggregate_entry(2, 1)]),
        PointVerdict::Matched(0)
    );
    let decode_as_the_producer_wrote_it = with(aggregate_row(2), json!({"decode_num_workers": 0}));
    assert_eq!(
        verdict(&decode_as_the_producer_wrote_it, &[aggregate_entry(2, 1)]),
        PointVerdict::Unmatched
    );
}

#[test]
fn an_entry_with_no_decode_workers_in_a_disaggregated_config_is_an_aggregate() {
    let mut entry = aggregate_entry(1, 1);
    entry["disagg"] = json!(true);
    assert_eq!(
        verdict(&aggregate_row(1), &[entry]),
        PointVerdict::Matched(0)
    );
}

#[test]
fn a_one_worker_aggregate_may_match_a_single_node_row() {
    assert_eq!(
        verdict(&aggregate_row(0), &[aggregate_entry(1, 1)]),
        PointVerdict::Matched(0)
    );
    assert_eq!(
        verdict(&aggregate_row(1), &[aggregate_entry(1, 1)]),
        PointVerdict::Matched(0)
    );
}

#[test]
fn only_a_one_worker_aggregate_may_match_a_single_node_row() {
    assert_eq!(
        verdict(&aggregate_row(0), &[aggregate_entry(2, 1)]),
        PointVerdict::Unmatched
    );
    let mut disaggregated = disaggregated_entry();
    disaggregated["decode"]["num-worker"] = json!(1);
    let single_node = with(
        disaggregated_row(),
        json!({"disagg": false, "prefill_num_workers": 0, "decode_num_workers": 0,
               "decode_tp": 8, "decode_dp_attention": true}),
    );
    assert_eq!(
        verdict(&single_node, &[disaggregated]),
        PointVerdict::Unmatched
    );
}

#[test]
fn a_row_matching_two_entries_is_ambiguous() {
    let entries = [single_node_entry(64), single_node_entry(64)];
    assert_eq!(
        verdict(&single_node_row(), &entries),
        PointVerdict::Ambiguous(vec![0, 1])
    );
}

#[test]
fn a_row_with_the_workload_of_an_entry_but_another_image_is_an_image_mismatch() {
    let nightly = with(
        single_node_row(),
        json!({"image": "vllm/vllm-openai:nightly-7c5dc571"}),
    );
    assert_eq!(
        verdict(&nightly, &[single_node_entry(64)]),
        PointVerdict::ImageMismatch(vec![0])
    );
}

#[test]
fn the_image_tells_apart_entries_of_one_workload() {
    let mut other_image = single_node_entry(64);
    other_image["image"] = json!("vllm/vllm-openai:v0.24.0");
    assert_eq!(
        verdict(&single_node_row(), &[other_image, single_node_entry(64)]),
        PointVerdict::Matched(1)
    );
}

#[test]
fn a_row_published_without_an_image_is_matched_on_its_workload() {
    let mut row = single_node_row();
    row.insert("image".into(), Value::Null);
    assert_eq!(
        verdict(&row, &[single_node_entry(64)]),
        PointVerdict::Matched(0)
    );
}

fn entries_of(values: &[Value]) -> impl Iterator<Item = (usize, &Value)> {
    values.iter().enumerate()
}

#[test]
fn a_baseline_whose_rows_all_match_once_is_verified_and_sibling_rows_are_ignored() {
    let sibling = with(single_node_row(), json!({"framework": "sglang"}));
    let entries = [single_node_entry(32), single_node_entry(64)];
    let verification = verify_baseline(
        &[sibling, single_node_row()],
        entries_of(&entries),
        &unspelled(),
    );
    assert_eq!(verification.deferral, None);
    assert_eq!(verification.matched, [MatchedPoint { row: 1, entry: 1 }]);
    assert_eq!(verification.verdicts[0], PointVerdict::Unmatched);
}

#[test]
fn a_baseline_without_a_matched_row_is_deferred_as_unmatched() {
    let entries = [single_node_entry(32)];
    let verification = verify_baseline(&[single_node_row()], entries_of(&entries), &unspelled());
    assert_eq!(
        verification.deferral,
        Some(Deferral::fixed(DeferralCode::UnmatchedBaseline))
    );
    let empty = verify_baseline(&[], entries_of(&entries), &unspelled());
    assert_eq!(
        empty.deferral.unwrap().code,
        DeferralCode::UnmatchedBaseline
    );
}

#[test]
fn one_ambiguous_row_defers_the_whole_baseline() {
    let entries = [
        single_node_entry(64),
        single_node_entry(64),
        single_node_entry(32),
    ];
    let thirty_two = with(single_node_row(), json!({"conc": 32}));
    let verification = verify_baseline(
        &[thirty_two, single_node_row()],
        entries_of(&entries),
        &unspelled(),
    );
    assert_eq!(
        verification.deferral.unwrap().code,
        DeferralCode::AmbiguousBaseline
    );
    assert_eq!(verification.matched, [MatchedPoint { row: 0, entry: 2 }]);
}

#[test]
fn one_row_with_another_image_defers_the_whole_baseline() {
    let entries = [single_node_entry(32), single_node_entry(64)];
    let nightly = with(
        single_node_row(),
        json!({"image": "vllm/vllm-openai:nightly", "conc": 32}),
    );
    let verification = verify_baseline(
        &[nightly, single_node_row()],
        entries_of(&entries),
        &unspelled(),
    );
    assert_eq!(
        verification.deferral.unwrap().code,
        DeferralCode::ImageMismatch
    );
}

#[test]
fn a_row_lacking_a_needed_field_is_an_invalid_point_named_by_row_and_field() {
    let mut row = single_node_row();
    row.remove("decode_ep");
    let entries = [single_node_entry(64)];
    let deferral = verify_baseline(
        &[single_node_row(), row],
        entries_of(&entries),
        &unspelled(),
    )
    .deferral
    .unwrap();
    assert_eq!(deferral.code, DeferralCode::InvalidBaselinePoint);
    assert_eq!(
        deferral.message,
        "published point 1 lacks a readable decode_ep"
    );
}

#[test]
fn an_entry_that_cannot_be_projected_makes_the_output_invalid() {
    let mut entry = disaggregated_entry();
    entry["prefill"]
        .as_object_mut()
        .unwrap()
        .remove("num-worker");
    let entries = [entry];
    let deferral = verify_baseline(&[disaggregated_row()], entries_of(&entries), &unspelled())
        .deferral
        .unwrap();
    assert_eq!(deferral.code, DeferralCode::ProducerOutputInvalid);
    assert_eq!(
        deferral.message,
        "producer entry 0 lacks a readable prefill.num-worker"
    );
}

#[test]
fn entry_numbers_are_the_callers_not_positions_in_the_iterator() {
    let entries = [single_node_entry(64)];
    let verification = verify_baseline(&[single_node_row()], [(7, &entries[0])], &unspelled());
    assert_eq!(verification.matched, [MatchedPoint { row: 0, entry: 7 }]);
}

/// The InferenceX app's spellings of the generator's values (`discovery.published-as`'s
/// defaults, the part these tests need).
fn published_spellings() -> PublishedSpellings {
    let map = |pairs: &[(&str, &str)]| -> std::collections::BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(from, to)| (from.to_string(), to.to_string()))
            .collect()
    };
    PublishedSpellings {
        fields: std::collections::BTreeMap::from([
            (
                "framework".to_string(),
                map(&[
                    ("sglang-disagg", "mori-sglang"),
                    ("atom-disagg", "mooncake-atom"),
                    ("dynamo-trtllm", "dynamo-trt"),
                ]),
            ),
            ("precision".to_string(), map(&[("nvfp4", "fp4")])),
            ("spec_method".to_string(), map(&[("", "none")])),
        ]),
        disagg_framework_prefixes: vec!["mori-".to_string()],
    }
}

/// The shape of the real `dsr1-fp8-mi355x-sglang-disagg` entry at InferenceX 626932a11
/// (`tests/fixtures/inferencex/producer/new-626932a11_mn-disagg_…`), its first search space.
fn sglang_disagg_entry() -> Value {
    json!({
        "image": "rocm/sgl-dev:sglang-0.5.9-rocm720-mi35x-mori-0227-2",
        "model": "deepseek-ai/DeepSeek-R1-0528", "model-prefix": "dsr1", "precision": "fp8",
        "framework": "sglang-disagg", "runner": "mi355x-disagg", "isl": 1024, "osl": 1024,
        "spec-decoding": "none",
        "prefill": {"num-worker": 1, "tp": 8, "ep": 1, "dp-attn": false},
        "decode": {"num-worker": 1, "tp": 8, "ep": 8, "dp-attn": true},
        "conc": [1024, 2048], "disagg": true, "run-eval": false
    })
}

/// How the publisher shows that entry at concurrency 2048 (hand-made from the entry).
fn mori_sglang_row() -> Map<String, Value> {
    object(json!({
        "hardware": "mi355x", "framework": "mori-sglang", "model": "dsr1", "precision": "fp8",
        "spec_method": "none", "disagg": true, "is_multinode": true,
        "prefill_tp": 8, "prefill_ep": 1, "prefill_dp_attention": false, "prefill_num_workers": 1,
        "decode_tp": 8, "decode_ep": 8, "decode_dp_attention": true, "decode_num_workers": 1,
        "isl": 1024, "osl": 1024, "conc": 2048,
        "image": "rocm/sgl-dev:sglang-0.5.9-rocm720-mi35x-mori-0227-2"
    }))
}

#[test]
fn an_sglang_disagg_entry_matches_its_row_published_as_mori_sglang() {
    let entries = [sglang_disagg_entry()];
    let verification = verify_baseline(
        &[mori_sglang_row()],
        entries_of(&entries),
        &published_spellings(),
    );
    assert_eq!(verification.deferral, None);
    assert_eq!(verification.matched, [MatchedPoint { row: 0, entry: 0 }]);
    // Unspelled, the generator's name is not the published one: the row is a sibling.
    let as_generated = verify_baseline(&[mori_sglang_row()], entries_of(&entries), &unspelled());
    assert_eq!(as_generated.verdicts, [PointVerdict::Unmatched]);
}

#[test]
fn an_atom_disagg_entry_matches_its_row_published_as_mooncake_atom() {
    let mut entry = sglang_disagg_entry();
    entry["framework"] = json!("atom-disagg");
    let row = with(mori_sglang_row(), json!({"framework": "mooncake-atom"}));
    let verification = verify_baseline(&[row], [(0, &entry)], &published_spellings());
    assert_eq!(verification.matched, [MatchedPoint { row: 0, entry: 0 }]);
}

#[test]
fn an_entry_without_its_own_disagg_is_disaggregated_when_published_under_a_disagg_prefix() {
    let mut entry = sglang_disagg_entry();
    entry.as_object_mut().unwrap().remove("disagg");
    let verification = verify_baseline(&[mori_sglang_row()], [(0, &entry)], &published_spellings());
    assert_eq!(verification.matched, [MatchedPoint { row: 0, entry: 0 }]);
    // Its own `disagg: false` wins: then it is an aggregate, published with decode mirrored.
    entry["disagg"] = json!(false);
    let verification = verify_baseline(&[mori_sglang_row()], [(0, &entry)], &published_spellings());
    assert_eq!(verification.verdicts, [PointVerdict::Unmatched]);
}

#[test]
fn precision_and_a_missing_spec_method_are_spelled_as_published() {
    let mut entry = single_node_entry(64);
    entry["precision"] = json!("nvfp4");
    entry.as_object_mut().unwrap().remove("spec-decoding");
    let spelled = verify_baseline(&[single_node_row()], [(0, &entry)], &published_spellings());
    assert_eq!(spelled.matched, [MatchedPoint { row: 0, entry: 0 }]);
    // Without spellings a missing spec method is still `none`, as it always was.
    entry["precision"] = json!("fp4");
    let as_generated = verify_baseline(&[single_node_row()], [(0, &entry)], &unspelled());
    assert_eq!(as_generated.matched, [MatchedPoint { row: 0, entry: 0 }]);
}
