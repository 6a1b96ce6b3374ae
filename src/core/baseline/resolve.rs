//! The baselines of discovered candidates (contract §11, last part; the reference system's
//! `regenerate-producers`), as pure steps. `verify-baselines` makes the reads between them (the
//! two public feeds, a listing of the producer head's tree) and then verifies the baseline as it
//! verifies any other.
//!
//! 1. [`discovered_source`]: a candidate `discover` wrote carries its catalog row as `source` and
//!    no `baseline`; the row is read as the catalog reads it, the config key is the family's
//!    last `:` part.
//! 2. [`plan_candidates`]: what the review lets through. Without a review every candidate
//!    proceeds; an invalid review verifies nothing (`invalid-review-output`); a candidate the
//!    review holds back is `not-proceeding`. A discovered candidate that proceeds is looked up with
//!    a display model: its decision's `baseline-model`, else `discovery.models[<model prefix>]`;
//!    a `proceed` decision with neither makes the review invalid.
//! 3. [`family_rows`]: of `GET <benchmarks>?model=<display model>&date=<source date>&exact=true`,
//!    the rows whose `model`, `hardware`, `framework`, `precision`, `spec_method`, `disagg` and
//!    normalised image equal the source's — not `isl`/`osl`: every curve of the family counts.
//! 4. [`producer_runs`]: each row's producer run, the id in its `run_url`, which must be
//!    `https://github.com/<this repository>/actions/runs/<id>[/attempts/<n>]`.
//! 5. [`run_heads`] and [`prove_heads`]: `GET <workflow-info>?date=<date>` maps a run to its head
//!    (`runConfigs[]`: `github_run_id` → `head_sha`; the older `changelogs[]`: `workflow_run_id`
//!    → `head_ref`; ids as strings or numbers). A run with no head or several leaves its rows
//!    unproven; rows of several heads cannot be one baseline.
//! 6. [`listed_folders`] and [`producer_args`]: the master files and the runners file as they lie
//!    at that head — where `discovery.runner-config` says, or under `.github/` for heads before
//!    the master files moved out of it — make the producer's arguments
//!    `test-config --config-keys <key> --config-files <every master file> --runner-config <runners>`.
//!
//! A row that cannot be proven defers the candidate (every published row of the family must come
//! from the one producer head the baseline names), with a reason naming what failed.

use crate::core::discovery::pattern::pattern_matches;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::{Deferral, DeferralCode};
use crate::core::candidate::{Baseline, Candidate, ProducerCall};
use crate::core::discovery::catalog::{CatalogRow, read_catalog};
use crate::core::discovery::observation::normalise_image;
use crate::core::review::{HeldBack, Review, ReviewInput, ReviewVerdict};

/// The fields a published row must share with the source, compared exactly as JSON (`false` is
/// not `0`); the image is compared normalised besides.
pub const FAMILY_FIELDS: [&str; 6] = [
    "model",
    "hardware",
    "framework",
    "precision",
    "spec_method",
    "disagg",
];

/// Where master files lay at heads before they moved to the configured folder: the same paths
/// under `.github/` (InferenceX kept them in `.github/configs/` until 2026-07-02).
pub const EARLIER_LAYOUT_PREFIX: &str = ".github/";

/// The catalog row a discovered candidate came from, and the config key its family names.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscoveredSource {
    pub row: CatalogRow,
    pub config_key: String,
}

impl DiscoveredSource {
    /// The model prefix as published (`dsr1`).
    pub fn model(&self) -> &str {
        &self.row.key.model
    }

    /// The source's date as published (`2026-02-27`), the feeds' `date`.
    pub fn date(&self) -> &str {
        self.row
            .published
            .get("date")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// Why a discovered candidate's `source` or `family` cannot be looked up; `field` is relative
/// to the candidate (`source`, `family`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceProblem {
    pub field: &'static str,
    pub message: String,
}

/// The source of a candidate whose baseline is to be looked up: one with a `source` and no
/// `baseline` (`None` for every other candidate).
pub fn discovered_source(candidate: &Candidate) -> Option<Result<DiscoveredSource, SourceProblem>> {
    if candidate.baseline.is_some() {
        return None;
    }
    let source = candidate.passthrough.get("source")?;
    Some(read_source(candidate, source))
}

fn read_source(candidate: &Candidate, source: &Value) -> Result<DiscoveredSource, SourceProblem> {
    let catalog = read_catalog(&Value::Array(vec![source.clone()])).expect("an array");
    let row = match (catalog.rows.into_iter().next(), catalog.invalid.first()) {
        (Some(row), _) => row,
        (None, Some(invalid)) => {
            return Err(SourceProblem {
                field: "source",
                message: format!(
                    "not a catalog row: missing or of the wrong type: {}",
                    invalid.fields.join(", ")
                ),
            });
        }
        (None, None) => unreachable!("one row is read"),
    };
    let config_key = match candidate.family.rsplit_once(':') {
        Some((_, key)) if !key.is_empty() => key.to_string(),
        _ => {
            return Err(SourceProblem {
                field: "family",
                message: format!(
                    "'{}' names no config key (<file>:<key>) to look the baseline up for",
                    candidate.family
                ),
            });
        }
    };
    Ok(DiscoveredSource { row, config_key })
}

/// What becomes of one candidate before any producer runs.
#[derive(Debug, Clone, PartialEq)]
pub enum CandidatePlan {
    /// Verified as it is: it carries its own baseline, or none (`no-baseline`).
    AsGiven,
    /// A discovered candidate whose baseline is looked up with this display model.
    Resolve {
        source: Box<DiscoveredSource>,
        display_model: String,
    },
    /// Deferred before anything is read or run.
    Deferred(Deferral),
}

/// Every candidate's plan, and the review's problem when it is invalid.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidatePlans {
    /// One per candidate, in file order.
    pub plans: Vec<CandidatePlan>,
    /// Why the review is invalid (every candidate is then `invalid-review-output`).
    pub invalid_review: Option<String>,
}

/// Every candidate deferred because the review is invalid.
fn invalid_review_plans(candidates: &[Candidate], message: String) -> CandidatePlans {
    CandidatePlans {
        plans: candidates
            .iter()
            .map(|_| {
                CandidatePlan::Deferred(Deferral::with_detail(
                    DeferralCode::InvalidReviewOutput,
                    &format!("the review is invalid, so nothing is verified: {message}"),
                ))
            })
            .collect(),
        invalid_review: Some(message),
    }
}

/// Why the review is invalid for discovery: a proceed for a discovered candidate that names no
/// display model the configuration does not know either.
fn proceed_without_display_model(
    candidates: &[Candidate],
    sources: &[Option<DiscoveredSource>],
    review: &Review,
    models: &BTreeMap<String, String>,
) -> Option<String> {
    candidates
        .iter()
        .zip(sources)
        .find_map(|(candidate, source)| {
            let (Some(source), Some(decision)) = (source, review.decision(&candidate.id)) else {
                return None;
            };
            (decision.verdict == ReviewVerdict::Proceed
                && decision.baseline_model.is_none()
                && !models.contains_key(source.model()))
            .then(|| {
                format!(
                    "decisions[{}].baseline-model: the proceed for discovered candidate '{}' \
                 must name the display model of model '{}' (discovery.models names none)",
                    decision.index,
                    candidate.id,
                    source.model()
                )
            })
        })
}

/// One candidate's plan, once the review is valid: held back, as given (not discovered), or
/// resolved with the display model the review names, else the configuration's.
fn plan_candidate(
    candidate: &Candidate,
    source: Option<&DiscoveredSource>,
    review: Option<&Review>,
    held_back: &BTreeMap<String, HeldBack>,
    models: &BTreeMap<String, String>,
) -> CandidatePlan {
    if let Some(held) = held_back.get(&candidate.id) {
        return CandidatePlan::Deferred(Deferral::with_detail(
            DeferralCode::NotProceeding,
            &held.message,
        ));
    }
    let Some(source) = source else {
        return CandidatePlan::AsGiven;
    };
    let named = review
        .and_then(|review| review.decision(&candidate.id))
        .and_then(|decision| decision.baseline_model.clone());
    match named.or_else(|| models.get(source.model()).cloned()) {
        Some(display_model) => CandidatePlan::Resolve {
            source: Box::new(source.clone()),
            display_model,
        },
        None => CandidatePlan::Deferred(Deferral::with_detail(
            DeferralCode::NoDisplayModel,
            &format!(
                "no display model for model '{}': no review names one and \
                 discovery.models has none",
                source.model()
            ),
        )),
    }
}

/// What the review lets through, and the display model of each discovered candidate that
/// proceeds. `sources` holds each candidate's [`discovered_source`] (already checked).
pub fn plan_candidates(
    candidates: &[Candidate],
    sources: &[Option<DiscoveredSource>],
    review: &ReviewInput,
    models: &BTreeMap<String, String>,
) -> CandidatePlans {
    let review = match review {
        ReviewInput::Absent => None,
        ReviewInput::Invalid { message } => {
            return invalid_review_plans(candidates, message.clone());
        }
        ReviewInput::Decisions(review) => Some(review),
    };
    if let Some(message) =
        review.and_then(|review| proceed_without_display_model(candidates, sources, review, models))
    {
        return invalid_review_plans(candidates, message);
    }
    let held_back = review
        .map(|review| review.held_back(candidates))
        .unwrap_or_default();
    let plans = candidates
        .iter()
        .zip(sources)
        .map(|(candidate, source)| {
            plan_candidate(candidate, source.as_ref(), review, &held_back, models)
        })
        .collect();
    CandidatePlans {
        plans,
        invalid_review: None,
    }
}

/// The published rows of the candidate's family in a benchmarks answer, as published.
pub fn family_rows(
    source: &DiscoveredSource,
    display_model: &str,
    answer: &Value,
) -> Result<Vec<Map<String, Value>>, Deferral> {
    let Value::Array(rows) = answer else {
        return Err(Deferral::with_detail(
            DeferralCode::FeedFailed,
            &format!(
                "the benchmarks answer for {display_model} on {} is not a JSON array",
                source.date()
            ),
        ));
    };
    let published = &source.row.published;
    let same_family = |row: &Map<String, Value>| {
        FAMILY_FIELDS.iter().all(|field| {
            row.get(*field)
                .is_some_and(|value| Some(value) == published.get(*field))
        }) && row
            .get("image")
            .and_then(Value::as_str)
            .is_some_and(|image| normalise_image(image) == source.row.key.image)
    };
    let matched: Vec<Map<String, Value>> = rows
        .iter()
        .filter_map(Value::as_object)
        .filter(|row| same_family(row))
        .cloned()
        .collect();
    if matched.is_empty() {
        return Err(Deferral::with_detail(
            DeferralCode::NoPublishedBaseline,
            &format!(
                "none of the {} row(s) published for {display_model} on {} has the source's \
                 hardware, framework, precision, spec_method, disagg and image",
                rows.len(),
                source.date()
            ),
        ));
    }
    Ok(matched)
}

/// Why a published row names no producer run of this repository.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnprovenRow {
    #[error("the row has no run_url")]
    NoRunUrl,
    #[error(
        "run_url '{url}' is not a run of {repository} \
         (https://github.com/{repository}/actions/runs/<id>[/attempts/<n>])"
    )]
    NotARunOfThisRepository { url: String, repository: String },
}

/// The producer run of a published row: the id in its `run_url`, which must be a run of
/// `repository` (`owner/name`).
pub fn run_of_row(row: &Map<String, Value>, repository: &str) -> Result<u64, UnprovenRow> {
    let Some(url) = row.get("run_url").and_then(Value::as_str) else {
        return Err(UnprovenRow::NoRunUrl);
    };
    run_of_url(url, repository).ok_or_else(|| UnprovenRow::NotARunOfThisRepository {
        url: crate::core::text::bounded(url, 120),
        repository: repository.to_string(),
    })
}

fn run_of_url(url: &str, repository: &str) -> Option<u64> {
    let rest = url
        .strip_prefix("https://github.com/")?
        .strip_prefix(repository)?
        .strip_prefix("/actions/runs/")?;
    let (id, attempt) = match rest.split_once("/attempts/") {
        Some((id, attempt)) => (id, Some(attempt)),
        None => (rest, None),
    };
    let digits = |text: &str| !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit());
    if !digits(id) || attempt.is_some_and(|attempt| !digits(attempt)) {
        return None;
    }
    id.parse().ok().filter(|id| *id > 0)
}

/// Each row's producer run, in row order; the first row without one defers the candidate.
pub fn producer_runs(rows: &[Map<String, Value>], repository: &str) -> Result<Vec<u64>, Deferral> {
    rows.iter()
        .enumerate()
        .map(|(index, row)| {
            run_of_row(row, repository).map_err(|problem| {
                Deferral::with_detail(
                    DeferralCode::UnprovenBaseline,
                    &format!("published row {index} is unproven: {problem}"),
                )
            })
        })
        .collect()
}

/// Every head workflow-info names per run (as written: a head is checked when it is used).
pub type RunHeads = BTreeMap<u64, BTreeSet<String>>;

/// Why a workflow-info answer cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkflowInfoError {
    #[error("the workflow-info answer is not a JSON object")]
    NotAnObject,
    #[error("the workflow-info answer has neither a runConfigs nor a changelogs array")]
    NoRunList,
}

/// The runs and heads of a workflow-info answer, in either shape (both when both are there).
pub fn run_heads(document: &Value) -> Result<RunHeads, WorkflowInfoError> {
    let shapes = [
        ("runConfigs", "github_run_id", "head_sha"),
        ("changelogs", "workflow_run_id", "head_ref"),
    ];
    let Value::Object(fields) = document else {
        return Err(WorkflowInfoError::NotAnObject);
    };
    if !shapes
        .iter()
        .any(|(list, _, _)| matches!(fields.get(*list), Some(Value::Array(_))))
    {
        return Err(WorkflowInfoError::NoRunList);
    }
    let mut heads = RunHeads::new();
    for (list, id_field, head_field) in shapes {
        let Some(Value::Array(items)) = fields.get(list) else {
            continue;
        };
        for item in items {
            let Some(id) = item.get(id_field).and_then(run_id) else {
                continue;
            };
            let named = heads.entry(id).or_default();
            if let Some(head) = item.get(head_field).and_then(Value::as_str) {
                let head = head.trim();
                if !head.is_empty() {
                    named.insert(head.to_ascii_lowercase());
                }
            }
        }
    }
    Ok(heads)
}

/// A run id written as a number or a string of digits.
fn run_id(value: &Value) -> Option<u64> {
    match value {
        Value::Number(number) => number.as_u64(),
        Value::String(text) => {
            let text = text.trim();
            (!text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit()))
                .then(|| text.parse().ok())
                .flatten()
        }
        _ => None,
    }
}

/// The one producer head of the rows and the rows themselves (the baseline's points).
#[derive(Debug, Clone, PartialEq)]
pub struct ProvenRows {
    pub head: String,
    pub points: Vec<Map<String, Value>>,
    /// The producer runs the rows came from, ascending.
    pub runs: Vec<u64>,
}

/// Proves every row through its run's head: each run must have exactly one head, a commit sha,
/// and all rows one head.
pub fn prove_heads(
    rows: Vec<Map<String, Value>>,
    runs: &[u64],
    heads: &RunHeads,
    date: &str,
) -> Result<ProvenRows, Deferral> {
    let unproven = |detail: String| Deferral::with_detail(DeferralCode::UnprovenBaseline, &detail);
    let distinct_runs: BTreeSet<u64> = runs.iter().copied().collect();
    let mut head_of_run: BTreeMap<u64, &str> = BTreeMap::new();
    for run in &distinct_runs {
        let named: Vec<&String> = heads
            .get(run)
            .map(|set| set.iter().collect())
            .unwrap_or_default();
        match named.as_slice() {
            [] => {
                return Err(unproven(format!(
                    "run {run} has no head in the workflow-info of {date}"
                )));
            }
            [head] if is_commit_sha(head) => {
                head_of_run.insert(*run, head.as_str());
            }
            [head] => {
                return Err(unproven(format!(
                    "run {run}'s head '{}' in the workflow-info of {date} is not a commit sha",
                    crate::core::text::bounded(head, 60)
                )));
            }
            several => {
                let names: Vec<&str> = several.iter().map(|head| head.as_str()).collect();
                return Err(unproven(format!(
                    "run {run} has {} heads in the workflow-info of {date}: {}",
                    several.len(),
                    names.join(", ")
                )));
            }
        }
    }
    let mut runs_of_head: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for (run, head) in &head_of_run {
        runs_of_head.entry(head).or_default().push(*run);
    }
    if runs_of_head.len() > 1 {
        let heads: Vec<String> = runs_of_head
            .iter()
            .map(|(head, runs)| {
                let runs: Vec<String> = runs.iter().map(u64::to_string).collect();
                format!("{head} (run {})", runs.join(", "))
            })
            .collect();
        return Err(Deferral::with_detail(
            DeferralCode::ProducerHeadsDiffer,
            &format!(
                "the family's rows of {date} come from {} producer heads: {}",
                heads.len(),
                heads.join("; ")
            ),
        ));
    }
    let (head, _) = runs_of_head.into_iter().next().expect("rows have runs");
    Ok(ProvenRows {
        head: head.to_string(),
        points: rows,
        runs: distinct_runs.into_iter().collect(),
    })
}

fn is_commit_sha(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|byte| byte.is_ascii_hexdigit())
}

/// The layouts a head may have, in the order they are tried: the configured paths, then the same
/// under [`EARLIER_LAYOUT_PREFIX`].
fn layout_prefixes() -> [&'static str; 2] {
    ["", EARLIER_LAYOUT_PREFIX]
}

/// The folders of the head's tree to list (`git ls-tree` pathspecs, `.` for the whole tree): per
/// layout, the folder of the runners file and the fixed folders the patterns start with.
pub fn listed_folders(patterns: &[String], runner_config: &str) -> Vec<String> {
    let mut folders = BTreeSet::new();
    for prefix in layout_prefixes() {
        let runner_folder = runner_config
            .rsplit_once('/')
            .map_or("", |(folder, _)| folder);
        folders.insert(format!("{prefix}{runner_folder}"));
        for pattern in patterns {
            let segments: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
            let fixed: Vec<&str> = segments[..segments.len().saturating_sub(1)]
                .iter()
                .take_while(|segment| !segment.contains(['*', '?']))
                .copied()
                .collect();
            folders.insert(format!("{prefix}{}", fixed.join("/")));
        }
    }
    let folders: Vec<String> = folders
        .into_iter()
        .map(|folder| folder.trim_end_matches('/').to_string())
        .map(|folder| {
            if folder.is_empty() {
                ".".to_string()
            } else {
                folder
            }
        })
        .collect();
    if folders.iter().any(|folder| folder == ".") {
        return vec![".".to_string()];
    }
    folders
}

/// The producer's arguments at a head whose tree lists `files` (paths from the root): the
/// first layout whose runners file is there, and every master file the patterns match in it.
pub fn producer_args(
    config_key: &str,
    files: &[String],
    patterns: &[String],
    runner_config: &str,
) -> Result<Vec<String>, Deferral> {
    let present: BTreeSet<&str> = files.iter().map(String::as_str).collect();
    let Some(prefix) = layout_prefixes()
        .into_iter()
        .find(|prefix| present.contains(format!("{prefix}{runner_config}").as_str()))
    else {
        return Err(Deferral::with_detail(
            DeferralCode::ProducerConfigsMissing,
            &format!(
                "neither {runner_config} nor {EARLIER_LAYOUT_PREFIX}{runner_config} is a file at \
                 the producer head"
            ),
        ));
    };
    let masters: BTreeSet<&str> = files
        .iter()
        .map(String::as_str)
        .filter(|path| {
            patterns
                .iter()
                .any(|pattern| pattern_matches(&format!("{prefix}{pattern}"), path))
        })
        .collect();
    if masters.is_empty() {
        let patterns: Vec<String> = patterns.iter().map(|p| format!("{prefix}{p}")).collect();
        return Err(Deferral::with_detail(
            DeferralCode::ProducerConfigsMissing,
            &format!(
                "no master file matches {} at the producer head",
                patterns.join(", ")
            ),
        ));
    }
    let mut args: Vec<String> = ["test-config", "--config-keys", config_key, "--config-files"]
        .map(String::from)
        .to_vec();
    args.extend(masters.into_iter().map(str::to_string));
    args.push("--runner-config".to_string());
    args.push(format!("{prefix}{runner_config}"));
    Ok(args)
}

/// The baseline a resolution gives: the proven head and rows, and the arguments at that head.
pub fn resolved_baseline(proven: ProvenRows, args: Vec<String>) -> Baseline {
    Baseline {
        producer: ProducerCall {
            head: proven.head,
            args,
        },
        points: proven.points,
    }
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
