//! Unit tests of the resolution steps on small hand-built candidates, reviews and feed answers
//! (shaped like the real ones in `tests/fixtures/inferencex/public/`). The binary against a
//! loopback feed server and real producer outputs is `tests/discovered_baselines.rs`.

use serde_json::json;

use super::*;
use crate::core::candidate::parse_candidates;
use crate::core::review::read_review;

const REPOSITORY: &str = "SemiAnalysisAI/InferenceX";
const HEAD: &str = "f267602ff7825dc02eaf81f512f50f380d6d39f9";
const OTHER_HEAD: &str = "9d5bbb82a1d648054e300003efb5692433f0fee8";

/// A catalog row for `dsr1-fp4-mi355x-sglang` (the real row of 2026-02-27, as the catalog
/// would list it).
fn source_row() -> Value {
    json!({
        "model": "dsr1", "hardware": "mi355x", "framework": "sglang", "precision": "fp4",
        "spec_method": "none", "disagg": false, "benchmark_type": "single_turn",
        "isl": 1024, "osl": 1024, "image": "lmsysorg/sglang:v0.5.9-rocm700-mi35x",
        "date": "2026-02-27"
    })
}

fn discovered(id: &str, source: Value) -> Value {
    json!({"id": id, "family": format!("configs/amd-master.yaml:key-{id}"), "source": source})
}

fn candidates(values: Value) -> Vec<Candidate> {
    parse_candidates(&values.to_string()).unwrap()
}

fn sources(candidates: &[Candidate]) -> Vec<Option<DiscoveredSource>> {
    candidates
        .iter()
        .map(|candidate| discovered_source(candidate).map(Result::unwrap))
        .collect()
}

fn models() -> BTreeMap<String, String> {
    BTreeMap::from([("dsr1".to_string(), "DeepSeek-R1-0528".to_string())])
}

fn decision(id: &str, verdict: &str, model: Option<&str>) -> Value {
    let mut decision = json!({"candidate-id": id, "decision": verdict,
        "family": format!("configs/amd-master.yaml:key-{id}"), "pull-requests": [],
        "reason": "looked at the open pull requests"});
    if let Some(model) = model {
        decision["baseline-model"] = json!(model);
    }
    decision
}

fn review(candidates: &[Candidate], decisions: Value) -> ReviewInput {
    read_review(&json!({ "decisions": decisions }).to_string(), candidates)
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(fields) => fields,
        _ => panic!("an object"),
    }
}

/// A published row of the family (the shape of `benchmarks-dsr1-sample.json`'s rows).
fn published(conc: u64, isl: u64, osl: u64) -> Value {
    json!({
        "hardware": "mi355x", "framework": "sglang", "model": "dsr1", "precision": "fp4",
        "spec_method": "none", "disagg": false, "is_multinode": false, "conc": conc,
        "isl": isl, "osl": osl, "image": "lmsysorg/sglang:v0.5.9-rocm700-mi35x",
        "date": "2026-02-27",
        "run_url": "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/22469096331/attempts/1"
    })
}

fn the_source() -> DiscoveredSource {
    let candidates = candidates(json!([discovered("a", source_row())]));
    discovered_source(&candidates[0]).unwrap().unwrap()
}

#[test]
fn only_a_candidate_with_a_source_and_no_baseline_is_looked_up() {
    let candidates = candidates(json!([
        discovered("a", source_row()),
        {"id": "b", "family": "configs/x.yaml:b"},
        {"id": "c", "family": "configs/x.yaml:c", "source": source_row(),
         "baseline": {"producer": {"head": HEAD, "args": []}, "points": []}},
    ]));
    let source = discovered_source(&candidates[0]).unwrap().unwrap();
    assert_eq!(source.config_key, "key-a");
    assert_eq!(source.model(), "dsr1");
    assert_eq!(source.date(), "2026-02-27");
    assert!(discovered_source(&candidates[1]).is_none());
    assert!(discovered_source(&candidates[2]).is_none());
}

#[test]
fn a_source_that_is_no_catalog_row_or_a_family_without_a_key_is_named() {
    let mut row = source_row();
    row.as_object_mut().unwrap().remove("date");
    row["disagg"] = json!(0);
    let candidates = candidates(json!([
        discovered("a", row),
        {"id": "b", "family": "configs/x.yaml", "source": source_row()},
    ]));
    let problem = discovered_source(&candidates[0]).unwrap().unwrap_err();
    assert_eq!(problem.field, "source");
    assert!(problem.message.contains("disagg"), "{}", problem.message);
    assert!(problem.message.contains("date"), "{}", problem.message);
    let problem = discovered_source(&candidates[1]).unwrap().unwrap_err();
    assert_eq!(problem.field, "family");
}

#[test]
fn without_a_review_every_candidate_proceeds_with_the_configured_display_model() {
    let mut other = source_row();
    other["model"] = json!("qwen3");
    let candidates = candidates(json!([
        discovered("a", source_row()),
        discovered("b", other),
        {"id": "c", "family": "configs/x.yaml:c"},
    ]));
    let plans = plan_candidates(
        &candidates,
        &sources(&candidates),
        &ReviewInput::Absent,
        &models(),
    );
    assert_eq!(plans.invalid_review, None);
    assert!(matches!(
        &plans.plans[0],
        CandidatePlan::Resolve { display_model, .. } if display_model == "DeepSeek-R1-0528"
    ));
    let CandidatePlan::Deferred(deferral) = &plans.plans[1] else {
        panic!("{:?}", plans.plans[1]);
    };
    assert_eq!(deferral.code, DeferralCode::NoDisplayModel);
    assert!(deferral.message.contains("'qwen3'"), "{}", deferral.message);
    assert_eq!(plans.plans[2], CandidatePlan::AsGiven);
}

#[test]
fn the_reviews_baseline_model_wins_and_what_it_holds_back_is_not_proceeding() {
    let candidates = candidates(json!([
        discovered("a", source_row()),
        discovered("b", source_row()),
    ]));
    let review = review(
        &candidates,
        json!([
            decision("a", "proceed", Some("DeepSeek-R1")),
            decision("b", "duplicate", None),
        ]),
    );
    let plans = plan_candidates(&candidates, &sources(&candidates), &review, &models());
    assert!(matches!(
        &plans.plans[0],
        CandidatePlan::Resolve { display_model, .. } if display_model == "DeepSeek-R1"
    ));
    let CandidatePlan::Deferred(deferral) = &plans.plans[1] else {
        panic!("{:?}", plans.plans[1]);
    };
    assert_eq!(deferral.code, DeferralCode::NotProceeding);
    assert_eq!(
        deferral.message,
        "the review judged it a duplicate: looked at the open pull requests"
    );
}

#[test]
fn a_family_held_back_by_another_candidates_decision_is_not_proceeding_either() {
    let mut values = json!([discovered("a", source_row()), discovered("b", source_row())]);
    values[1]["family"] = values[0]["family"].clone();
    let candidates = candidates(values);
    let mut uncertain = decision("b", "uncertain", None);
    uncertain["family"] = json!("configs/amd-master.yaml:key-a");
    let review = review(
        &candidates,
        json!([decision("a", "proceed", None), uncertain]),
    );
    let plans = plan_candidates(&candidates, &sources(&candidates), &review, &models());
    for plan in &plans.plans {
        assert!(
            matches!(plan, CandidatePlan::Deferred(d) if d.code == DeferralCode::NotProceeding),
            "{plan:?}"
        );
    }
}

#[test]
fn a_proceed_without_a_display_model_anywhere_makes_the_review_invalid() {
    let mut other = source_row();
    other["model"] = json!("qwen3");
    let candidates = candidates(json!([
        discovered("a", source_row()),
        discovered("b", other),
    ]));
    let review = review(
        &candidates,
        json!([
            decision("a", "proceed", None),
            decision("b", "proceed", Some("  "))
        ]),
    );
    let plans = plan_candidates(&candidates, &sources(&candidates), &review, &models());
    let message = plans.invalid_review.expect("invalid");
    assert!(
        message.starts_with("decisions[1].baseline-model: "),
        "{message}"
    );
    assert!(message.contains("'qwen3'"), "{message}");
    for plan in &plans.plans {
        assert!(
            matches!(plan, CandidatePlan::Deferred(d) if d.code == DeferralCode::InvalidReviewOutput),
            "{plan:?}"
        );
    }
    // A duplicate needs no display model.
    let review = review_of(&candidates, "b", "duplicate");
    let plans = plan_candidates(&candidates, &sources(&candidates), &review, &models());
    assert_eq!(plans.invalid_review, None);
}

fn review_of(candidates: &[Candidate], id: &str, verdict: &str) -> ReviewInput {
    let decisions: Vec<Value> = candidates
        .iter()
        .map(|candidate| {
            let verdict = if candidate.id == id {
                verdict
            } else {
                "proceed"
            };
            decision(&candidate.id, verdict, None)
        })
        .collect();
    review(candidates, json!(decisions))
}

#[test]
fn an_invalid_review_defers_every_candidate_with_its_message() {
    let candidates = candidates(json!([
        discovered("a", source_row()),
        {"id": "c", "family": "configs/x.yaml:c",
         "baseline": {"producer": {"head": HEAD, "args": []}, "points": []}},
    ]));
    let invalid = read_review("not json", &candidates);
    let plans = plan_candidates(&candidates, &sources(&candidates), &invalid, &models());
    assert!(
        plans
            .invalid_review
            .unwrap()
            .starts_with("the review is not JSON")
    );
    for plan in &plans.plans {
        let CandidatePlan::Deferred(deferral) = plan else {
            panic!("{plan:?}");
        };
        assert_eq!(deferral.code, DeferralCode::InvalidReviewOutput);
        assert!(deferral.message.starts_with("the review is invalid"));
    }
}

#[test]
fn every_curve_of_the_family_counts_and_nothing_else_does() {
    let mut other_image = published(8, 1024, 1024);
    other_image["image"] = json!("lmsysorg/sglang:v0.5.8-rocm700-mi35x");
    let mut disagg_as_number = published(8, 1024, 1024);
    disagg_as_number["disagg"] = json!(0);
    let mut other_framework = published(8, 1024, 1024);
    other_framework["framework"] = json!("atom");
    let mut no_image = published(8, 1024, 1024);
    no_image["image"] = Value::Null;
    let answer = json!([
        published(4, 1024, 1024),
        published(4, 8192, 1024),
        other_image,
        disagg_as_number,
        other_framework,
        no_image,
        "not a row",
    ]);
    let rows = family_rows(&the_source(), "DeepSeek-R1-0528", &answer).unwrap();
    assert_eq!(
        rows,
        [
            object(published(4, 1024, 1024)),
            object(published(4, 8192, 1024))
        ]
    );
}

#[test]
fn an_image_is_the_same_in_its_registry_and_enroot_spellings() {
    let mut row = source_row();
    row["image"] = json!("nvcr.io#nvidia/sglang:1");
    let candidates = candidates(json!([discovered("a", row)]));
    let source = discovered_source(&candidates[0]).unwrap().unwrap();
    let mut published = published(4, 1024, 1024);
    published["image"] = json!("nvcr.io/nvidia/sglang:1");
    let rows = family_rows(&source, "m", &json!([published])).unwrap();
    assert_eq!(rows.len(), 1);
}

#[test]
fn an_answer_with_no_row_of_the_family_or_no_array_defers() {
    let mut other = published(4, 1024, 1024);
    other["hardware"] = json!("mi300x");
    let none = family_rows(&the_source(), "DeepSeek-R1-0528", &json!([other])).unwrap_err();
    assert_eq!(none.code, DeferralCode::NoPublishedBaseline);
    assert!(
        none.message
            .starts_with("none of the 1 row(s) published for DeepSeek-R1-0528 on 2026-02-27"),
        "{}",
        none.message
    );
    let not_rows =
        family_rows(&the_source(), "DeepSeek-R1-0528", &json!({"rows": []})).unwrap_err();
    assert_eq!(not_rows.code, DeferralCode::FeedFailed);
}

#[test]
fn a_run_is_read_only_from_a_run_url_of_this_repository() {
    let row = |url: &str| object(json!({ "run_url": url }));
    let base = "https://github.com/SemiAnalysisAI/InferenceX/actions/runs";
    assert_eq!(
        run_of_row(&row(&format!("{base}/22469096331")), REPOSITORY),
        Ok(22469096331)
    );
    assert_eq!(
        run_of_row(&row(&format!("{base}/21701654125/attempts/3")), REPOSITORY),
        Ok(21701654125)
    );
    for url in [
        "https://github.com/someone/InferenceX/actions/runs/22469096331".to_string(),
        "https://github.com/SemiAnalysisAI/InferenceX-app/actions/runs/22469096331".to_string(),
        "http://github.com/SemiAnalysisAI/InferenceX/actions/runs/22469096331".to_string(),
        format!("{base}/22469096331/"),
        format!("{base}/22469096331?check_suite_focus=true"),
        format!("{base}/22469096331/attempts/"),
        format!("{base}/22469096331/job/1"),
        format!("{base}/0"),
        format!("{base}/-1"),
        format!("{base}/abc"),
    ] {
        let problem = run_of_row(&row(&url), REPOSITORY).unwrap_err().to_string();
        assert!(
            problem.contains("is not a run of SemiAnalysisAI/InferenceX"),
            "{url}: {problem}"
        );
    }
    assert_eq!(
        run_of_row(&Map::new(), REPOSITORY),
        Err(UnprovenRow::NoRunUrl)
    );
}

#[test]
fn the_first_row_without_a_run_of_this_repository_defers_the_candidate() {
    let mut foreign = published(8, 1024, 1024);
    foreign["run_url"] = json!("https://github.com/fork/InferenceX/actions/runs/1");
    let rows = [object(published(4, 1024, 1024)), object(foreign)];
    let deferral = producer_runs(&rows, REPOSITORY).unwrap_err();
    assert_eq!(deferral.code, DeferralCode::UnprovenBaseline);
    assert!(
        deferral.message.starts_with(
            "published row 1 is unproven: run_url 'https://github.com/fork/InferenceX/actions/runs/1'"
        ),
        "{}",
        deferral.message
    );
    assert_eq!(producer_runs(&rows[..1], REPOSITORY), Ok(vec![22469096331]));
}

#[test]
fn workflow_info_maps_runs_to_heads_in_both_shapes_with_ids_as_strings_or_numbers() {
    // The older shape, as in the real answer for 2026-05-05 (trimmed).
    let older = json!({
        "runs": [{"github_run_id": "25356359090", "conclusion": "success"}],
        "changelogs": [{"workflow_run_id": "25356359090", "date": "2026-05-05",
            "base_ref": "f7b1c444ea85b9e2157c5590e42905ea2a676fbc",
            "head_ref": "9d5bbb82a1d648054e300003efb5692433f0fee8"}],
        "configs": []
    });
    assert_eq!(
        run_heads(&older).unwrap(),
        RunHeads::from([(25356359090, BTreeSet::from([OTHER_HEAD.to_string()]))])
    );
    let newer = json!({"runConfigs": [
        {"github_run_id": 22469096331_u64, "head_sha": HEAD.to_uppercase()},
        {"github_run_id": 22469096331_u64, "head_sha": HEAD},
        {"github_run_id": "7", "head_sha": null},
        {"github_run_id": "x7", "head_sha": HEAD},
    ]});
    assert_eq!(
        run_heads(&newer).unwrap(),
        RunHeads::from([
            (22469096331, BTreeSet::from([HEAD.to_string()])),
            (7, BTreeSet::new()),
        ])
    );
    assert!(run_heads(&json!([])).is_err());
    assert!(run_heads(&json!({"runs": []})).is_err());
}

fn heads(pairs: &[(u64, &[&str])]) -> RunHeads {
    pairs
        .iter()
        .map(|(run, heads)| (*run, heads.iter().map(|h| h.to_string()).collect()))
        .collect()
}

#[test]
fn rows_of_one_run_with_one_head_are_proven() {
    let rows = vec![
        object(published(4, 1024, 1024)),
        object(published(8, 1024, 1024)),
    ];
    let proven = prove_heads(
        rows.clone(),
        &[22469096331, 22469096331],
        &heads(&[(22469096331, &[HEAD])]),
        "2026-02-27",
    )
    .unwrap();
    assert_eq!(proven.head, HEAD);
    assert_eq!(proven.points, rows);
    assert_eq!(proven.runs, [22469096331]);
}

#[test]
fn a_run_with_no_head_or_two_heads_leaves_its_rows_unproven() {
    let rows = vec![object(published(4, 1024, 1024))];
    let none = prove_heads(rows.clone(), &[5], &heads(&[(5, &[])]), "2026-02-27").unwrap_err();
    assert_eq!(none.code, DeferralCode::UnprovenBaseline);
    assert_eq!(
        none.message,
        "run 5 has no head in the workflow-info of 2026-02-27"
    );
    let absent = prove_heads(rows.clone(), &[5], &RunHeads::new(), "2026-02-27").unwrap_err();
    assert_eq!(absent.message, none.message);
    let two = prove_heads(
        rows.clone(),
        &[5],
        &heads(&[(5, &[HEAD, OTHER_HEAD])]),
        "2026-02-27",
    )
    .unwrap_err();
    assert_eq!(two.code, DeferralCode::UnprovenBaseline);
    assert_eq!(
        two.message,
        format!("run 5 has 2 heads in the workflow-info of 2026-02-27: {OTHER_HEAD}, {HEAD}")
    );
    let branch = prove_heads(rows, &[5], &heads(&[(5, &["main"])]), "2026-02-27").unwrap_err();
    assert!(branch.message.contains("'main'"), "{}", branch.message);
}

#[test]
fn rows_of_two_heads_cannot_be_one_baseline() {
    let rows = vec![
        object(published(4, 1024, 1024)),
        object(published(8, 1024, 1024)),
    ];
    let deferral = prove_heads(
        rows,
        &[5, 6],
        &heads(&[(5, &[HEAD]), (6, &[OTHER_HEAD])]),
        "2026-02-27",
    )
    .unwrap_err();
    assert_eq!(deferral.code, DeferralCode::ProducerHeadsDiffer);
    assert_eq!(
        deferral.message,
        format!(
            "the family's rows of 2026-02-27 come from 2 producer heads: {OTHER_HEAD} (run 6); {HEAD} (run 5)"
        )
    );
}

fn patterns() -> Vec<String> {
    vec!["configs/*-master.yaml".to_string()]
}

#[test]
fn the_listing_covers_both_layouts_or_the_whole_tree() {
    assert_eq!(
        listed_folders(&patterns(), "configs/runners.yaml"),
        [".github/configs", "configs"]
    );
    assert_eq!(
        listed_folders(&["*-master.yaml".to_string()], "configs/runners.yaml"),
        ["."]
    );
    assert_eq!(
        listed_folders(&["a/b/*/x.yaml".to_string()], "a/runners.yaml"),
        [".github/a", ".github/a/b", "a", "a/b"]
    );
}

#[test]
fn patterns_match_within_one_segment_and_never_under_deprecated() {
    assert!(pattern_matches(
        "configs/*-master.yaml",
        "configs/amd-master.yaml"
    ));
    assert!(pattern_matches(
        "configs/?md-master.yaml",
        "configs/amd-master.yaml"
    ));
    assert!(!pattern_matches(
        "configs/*-master.yaml",
        "configs/old/amd-master.yaml"
    ));
    assert!(!pattern_matches(
        "configs/*-master.yaml",
        "configs/runners.yaml"
    ));
    assert!(!pattern_matches(
        "*/*-master.yaml",
        "deprecated/amd-master.yaml"
    ));
    assert!(pattern_matches("*/*", "configs/deprecated"));
}

fn files(paths: &[&str]) -> Vec<String> {
    paths.iter().map(|path| path.to_string()).collect()
}

#[test]
fn the_arguments_name_every_master_file_and_the_runners_file_of_the_heads_layout() {
    let current = files(&[
        "configs/amd-master.yaml",
        "configs/nvidia-master.yaml",
        "configs/runners.yaml",
        "configs/deprecated/old-master.yaml",
    ]);
    assert_eq!(
        producer_args(
            "dsv4-fp4-b200-vllm",
            &current,
            &patterns(),
            "configs/runners.yaml"
        )
        .unwrap(),
        [
            "test-config",
            "--config-keys",
            "dsv4-fp4-b200-vllm",
            "--config-files",
            "configs/amd-master.yaml",
            "configs/nvidia-master.yaml",
            "--runner-config",
            "configs/runners.yaml",
        ]
    );
    let before_the_move = files(&[
        ".github/configs/nvidia-master.yaml",
        ".github/configs/amd-master.yaml",
        ".github/configs/runners.yaml",
    ]);
    assert_eq!(
        producer_args("k", &before_the_move, &patterns(), "configs/runners.yaml").unwrap(),
        [
            "test-config",
            "--config-keys",
            "k",
            "--config-files",
            ".github/configs/amd-master.yaml",
            ".github/configs/nvidia-master.yaml",
            "--runner-config",
            ".github/configs/runners.yaml",
        ]
    );
    // Where both are, the configured layout wins.
    let both: Vec<String> = current.iter().chain(&before_the_move).cloned().collect();
    let args = producer_args("k", &both, &patterns(), "configs/runners.yaml").unwrap();
    assert_eq!(args.last().unwrap(), "configs/runners.yaml");
}

#[test]
fn a_head_without_the_runners_file_or_a_master_file_defers() {
    let no_runners = producer_args(
        "k",
        &files(&["configs/amd-master.yaml"]),
        &patterns(),
        "configs/runners.yaml",
    )
    .unwrap_err();
    assert_eq!(no_runners.code, DeferralCode::ProducerConfigsMissing);
    assert_eq!(
        no_runners.message,
        "neither configs/runners.yaml nor .github/configs/runners.yaml is a file at the producer head"
    );
    let no_masters = producer_args(
        "k",
        &files(&["configs/runners.yaml", ".github/configs/amd-master.yaml"]),
        &patterns(),
        "configs/runners.yaml",
    )
    .unwrap_err();
    assert_eq!(
        no_masters.message,
        "no master file matches configs/*-master.yaml at the producer head"
    );
}

#[test]
fn the_resolved_baseline_is_in_the_candidates_file_format() {
    let proven = ProvenRows {
        head: HEAD.to_string(),
        points: vec![object(published(4, 1024, 1024))],
        runs: vec![22469096331],
    };
    let baseline = resolved_baseline(proven, vec!["test-config".to_string()]);
    assert_eq!(
        serde_json::to_value(&baseline).unwrap(),
        json!({"producer": {"head": HEAD, "args": ["test-config"]},
               "points": [published(4, 1024, 1024)]})
    );
}
