//! The matching rules and the batch split against real InferenceX data
//! (`tests/fixtures/inferencex/`, read through `inferencex_fixtures`): every case of
//! `matching/matching-table.yaml`, and every group of recorded producer runs that one batched
//! invocation could replace.

mod inferencex_fixtures;

use std::collections::BTreeMap;

use klaud::core::baseline::invocation::{Batching, entries_per_member, plan_producer_work};
use klaud::core::baseline::matching::{
    EntryIndex, PointVerdict, normalize_image, project_published_point, verify_baseline,
};
use klaud::core::candidate::ProducerCall;
use klaud::core::discovery::observation::PublishedSpellings;
use klaud::shell::config::DiscoverySettings;
use serde_json::Value;

use inferencex_fixtures::{
    expected_entries, inferencex_fixtures, matching_cases, producer_entries, public_row,
    recorded_runs,
};

/// The publisher's spellings klaud applies by default (`discovery.published-as`).
fn spellings() -> PublishedSpellings {
    DiscoverySettings::default().spellings()
}

/// The one case whose public row was published with another image than the producer's entry
/// (the row post-dates the newest producer available; the table notes an image check fails).
const IMAGE_MISMATCH_CASE: &str = "sn-newest-b200-vllm-dep8-c64";

#[test]
fn every_case_of_the_matching_table_finds_its_expected_entries() {
    let fixtures = inferencex_fixtures();
    let cases = matching_cases(&fixtures);
    assert!(cases.len() >= 12, "the table has {} cases", cases.len());
    for case in &cases {
        let id = case["id"].as_str().unwrap();
        let output = case["producer_output"].as_str().unwrap();
        let entries = producer_entries(&fixtures, output);
        let index = EntryIndex::build(entries.iter().enumerate(), &spellings())
            .unwrap_or_else(|error| panic!("{id}: {error:?}"));
        let point = project_published_point(&public_row(&fixtures, case))
            .unwrap_or_else(|error| panic!("{id}: {error:?}"));
        let expected = expected_entries(case);
        assert_eq!(index.workload_matches(&point), expected, "case {id}");
        for (position, entry) in expected.iter().enumerate() {
            if let Some(recorded) = case["matched_entries"].get(position) {
                assert_eq!(
                    &entries[*entry], recorded,
                    "{id}: the table quotes the entry"
                );
            }
        }
    }
}

#[test]
fn every_case_of_the_matching_table_gets_the_contract_verdict() {
    let fixtures = inferencex_fixtures();
    for case in matching_cases(&fixtures) {
        let id = case["id"].as_str().unwrap();
        let entries = producer_entries(&fixtures, case["producer_output"].as_str().unwrap());
        let row = public_row(&fixtures, &case);
        let index = EntryIndex::build(entries.iter().enumerate(), &spellings()).unwrap();
        let point = project_published_point(&row).unwrap();
        let expected = expected_entries(&case);
        let verdict = index.match_point(&point);
        match expected.as_slice() {
            [] => assert_eq!(verdict, PointVerdict::Unmatched, "{id}"),
            [entry] if id == IMAGE_MISMATCH_CASE => {
                let published = normalize_image(row["image"].as_str().unwrap());
                let produced = normalize_image(entries[*entry]["image"].as_str().unwrap());
                assert_ne!(published, produced);
                assert_eq!(verdict, PointVerdict::ImageMismatch(vec![*entry]), "{id}");
            }
            [entry] => assert_eq!(verdict, PointVerdict::Matched(*entry), "{id}"),
            _ => panic!("{id}: a table case expects at most one entry"),
        }
        let verification = verify_baseline(&[row], entries.iter().enumerate(), &spellings());
        assert_eq!(
            verification.deferral.is_none(),
            matches!(verdict, PointVerdict::Matched(_)),
            "{id}: a single-row baseline is verified exactly when its row matched"
        );
    }
}

#[test]
fn the_one_worker_aggregate_single_node_row_matches_only_under_the_one_worker_rule() {
    let fixtures = inferencex_fixtures();
    let case = matching_cases(&fixtures)
        .into_iter()
        .find(|case| case.get("expected_with_one_worker_rule").is_some())
        .expect("the table has a one-worker case");
    assert_eq!(case["matched_entry_indices"], serde_json::json!([]));
    let entries = producer_entries(&fixtures, case["producer_output"].as_str().unwrap());
    let mut row = public_row(&fixtures, &case);
    let index = EntryIndex::build(entries.iter().enumerate(), &spellings()).unwrap();
    assert_eq!(
        index.match_point(&project_published_point(&row).unwrap()),
        PointVerdict::Matched(0)
    );
    // The same single-node encoding of a two-worker aggregate matches nothing.
    let mut two_workers = entries[0].clone();
    two_workers["prefill"]["num-worker"] = serde_json::json!(2);
    let index = EntryIndex::build([(0, &two_workers)], &spellings()).unwrap();
    row.insert("conc".into(), serde_json::json!(1));
    assert_eq!(
        index.match_point(&project_published_point(&row).unwrap()),
        PointVerdict::Unmatched
    );
}

/// Recorded runs at one commit that differ only in their config key: what a batched invocation
/// replaces. Keyed by commit and the arguments with the key blanked out.
fn batchable_groups(
    runs: &[inferencex_fixtures::RecordedRun],
) -> BTreeMap<(String, Vec<String>), Vec<&inferencex_fixtures::RecordedRun>> {
    let mut groups: BTreeMap<(String, Vec<String>), Vec<_>> = BTreeMap::new();
    for run in runs
        .iter()
        .filter(|run| run.exit == 0 && run.stdout_file.is_some())
    {
        let keys = run.config_keys();
        let template: Vec<String> = run
            .args
            .iter()
            .map(|arg| {
                if keys.contains(arg) {
                    "<key>".to_string()
                } else {
                    arg.clone()
                }
            })
            .collect();
        groups
            .entry((run.commit.clone(), template))
            .or_default()
            .push(run);
    }
    groups.retain(|_, members| members.len() > 1);
    groups
}

#[test]
fn a_batched_output_splits_back_into_exactly_the_recorded_per_key_outputs() {
    let fixtures = inferencex_fixtures();
    let runs = recorded_runs(&fixtures);
    let groups = batchable_groups(&runs);
    assert!(groups.len() >= 4, "{} batchable groups", groups.len());
    let mut largest = 0;
    for ((commit, _), members) in &groups {
        for order in [false, true] {
            let mut members = members.clone();
            if order {
                members.reverse();
            }
            let calls: Vec<ProducerCall> = members
                .iter()
                .map(|run| ProducerCall {
                    head: commit.clone(),
                    args: run.baseline_args(),
                })
                .collect();
            let indexed: Vec<(usize, &ProducerCall)> = calls.iter().enumerate().collect();
            let work = plan_producer_work(&indexed, Batching::ConfigKeys);
            assert_eq!(work.len(), 1);
            assert_eq!(work[0].invocations.len(), 1, "{commit}: one invocation");
            let invocation = &work[0].invocations[0];
            // `test-config` prints each key's entries in the order the keys were given.
            let per_key: Vec<Vec<Value>> = members
                .iter()
                .map(|run| producer_entries(&fixtures, run.stdout_file.as_deref().unwrap()))
                .collect();
            let batched: Vec<Value> = per_key.iter().flatten().cloned().collect();
            let shares = entries_per_member(invocation, &batched)
                .unwrap_or_else(|refused| panic!("{commit}: {refused:?}"));
            for ((run, recorded), share) in members.iter().zip(&per_key).zip(&shares) {
                let split: Vec<Value> = share.iter().map(|index| batched[*index].clone()).collect();
                assert_eq!(
                    &split, recorded,
                    "{}: split differs from its own run",
                    run.id
                );
            }
            largest = largest.max(members.len());
        }
    }
    assert!(largest >= 5, "the largest batch had {largest} keys");
}

#[test]
fn verdicts_on_a_split_share_equal_verdicts_on_the_candidates_own_run() {
    let fixtures = inferencex_fixtures();
    let runs = recorded_runs(&fixtures);
    let groups = batchable_groups(&runs);
    let cases = matching_cases(&fixtures);
    let mut compared = 0;
    for case in &cases {
        let output = case["producer_output"].as_str().unwrap();
        let Some(((commit, _), members)) = groups.iter().find(|(_, members)| {
            members
                .iter()
                .any(|run| run.stdout_file.as_deref() == Some(output))
        }) else {
            continue;
        };
        let calls: Vec<ProducerCall> = members
            .iter()
            .map(|run| ProducerCall {
                head: commit.clone(),
                args: run.baseline_args(),
            })
            .collect();
        let indexed: Vec<(usize, &ProducerCall)> = calls.iter().enumerate().collect();
        let work = plan_producer_work(&indexed, Batching::ConfigKeys);
        let batched: Vec<Value> = members
            .iter()
            .flat_map(|run| producer_entries(&fixtures, run.stdout_file.as_deref().unwrap()))
            .collect();
        let shares = entries_per_member(&work[0].invocations[0], &batched).unwrap();
        let position = members
            .iter()
            .position(|run| run.stdout_file.as_deref() == Some(output))
            .unwrap();
        let share: Vec<Value> = shares[position]
            .iter()
            .map(|i| batched[*i].clone())
            .collect();
        let own = producer_entries(&fixtures, output);
        let row = public_row(&fixtures, case);
        assert_eq!(
            verify_baseline(
                std::slice::from_ref(&row),
                share.iter().enumerate(),
                &spellings()
            ),
            verify_baseline(&[row], own.iter().enumerate(), &spellings()),
            "{}",
            case["id"]
        );
        compared += 1;
    }
    assert!(compared >= 3, "{compared} cases compared");
}
