//! `verify-baselines` (contract §3.2, §3a, §6, §7, §11): for each candidate that carries a
//! baseline, regenerate its producer output — each distinct head once, in an isolated checkout,
//! with a scrubbed environment — and match every published point to exactly one producer entry.
//! A discovered candidate (a `source`, no `baseline`) has its baseline looked up in the public
//! feeds first; with a review, only candidates it lets proceed are looked up and verified.
//!
//! Reads as: candidates and the review (bad input is exit 2 before anything runs; an invalid
//! review verifies nothing) → what the review lets through (`core::baseline::resolve`) → look the
//! discovered baselines up (`discovered`) → plan the producer work
//! (`core::baseline::invocation`) → do it (`heads`) → match (`core::baseline::matching`) →
//! `baselines.json`, outputs and summary. A candidate's failure defers that candidate only; the
//! step itself fails (exit 1) only when it cannot write its results.

mod discovered;
mod heads;

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

pub use heads::{
    HeadOutcome, LogEvent, ProducerResult, ProducerRunRecord, ProducerShare, ProducerWorkOptions,
    run_producer_work,
};

use super::StepContext;
use crate::adapters::github::valid_repository_name;
use crate::adapters::producer::ProducerSetup;
use crate::adapters::producer_cache::ProducerCache;
use crate::core::baseline::invocation::{
    Batching, HeadWork, is_evaluation_entry, plan_producer_work,
};
use crate::core::baseline::matching::{MatchedPoint, PointVerdict, verify_baseline};
use crate::core::baseline::resolve::{
    CandidatePlan, DiscoveredSource, discovered_source, plan_candidates,
};
use crate::core::baseline::{Deferral, DeferralCode};
use crate::core::candidate::{Baseline, Candidate, ProducerCall, parse_candidates};
use crate::core::discovery::observation::PublishedSpellings;
use crate::shell::cli::VerifyBaselinesArgs;
use crate::shell::config::DiscoverySource;
use crate::shell::error::StepError;
use crate::shell::modes::review_input::review_input;
use crate::shell::outputs::{Reporter, markdown_table};
use discovered::{FeedEndpoints, Lookup, LookupContext, Resolution, feed_endpoints};

/// Bytes of producer stdout kept; a larger output defers its candidates.
pub const PRODUCER_STDOUT_LIMIT: usize = 32 * 1024 * 1024;

/// The step outputs of `verify-baselines`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct VerifyBaselinesOutputs {
    /// Ids of the candidates whose baseline was verified (JSON array).
    pub verified: Vec<String>,
    /// Ids of the deferred candidates (JSON array); `baselines.json` says why.
    pub deferred: Vec<String>,
    /// Producer processes this pass ran (0 when every output came from the cache).
    pub producer_runs: usize,
    /// Deferred candidates per reason code (JSON object).
    pub deferred_reasons: BTreeMap<DeferralCode, usize>,
    /// HTTP requests this pass sent to the public feeds to look the baselines of discovered
    /// candidates up (retries included; 0 when none was looked up).
    pub feed_requests: u64,
}

/// `baselines.json` (contract §3a).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct BaselinesDocument {
    /// Every candidate of the candidates file, once, in its order.
    pub candidates: Vec<CandidateBaseline>,
    pub producer_runs: Vec<ProducerRunRecord>,
    /// HTTP requests sent to the public feeds (retries included).
    pub feed_requests: u64,
}

/// One candidate's verification.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CandidateBaseline {
    pub id: String,
    pub status: BaselineStatus,
    pub reason: Option<Deferral>,
    /// `null` for a candidate without a baseline.
    pub producer: Option<ProducerUsed>,
    /// Published rows and the producer entries they matched (entry = index in the output a run
    /// with the candidate's own arguments prints).
    pub points: Vec<MatchedPoint>,
    /// The baseline looked up in the public feeds for a discovered candidate, in the
    /// candidates-file format (`points` index its `points`); absent when the candidate carried
    /// its own baseline or none was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BaselineStatus {
    Verified,
    Deferred,
    /// The candidate carries no baseline and needs none: a labelled issue's task
    /// (`discovery.source: issues`), which `select` may claim.
    NotNeeded,
}

/// The producer that served a candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProducerUsed {
    pub head: String,
    /// `null` when the head could not be checked out or has no entrypoint.
    pub entrypoint: Option<String>,
    /// True when the producer predates the no-evals flag and ran without it.
    pub fallback: bool,
}

/// What [`verify_candidates`] found.
#[derive(Debug, Clone)]
pub struct VerificationReport {
    pub document: BaselinesDocument,
    /// One line per candidate for the log (verdicts per published row included).
    pub details: Vec<String>,
    pub heads: usize,
    pub planned_invocations: usize,
    pub cached_invocations: usize,
}

pub async fn run(context: &StepContext, arguments: &VerifyBaselinesArgs) -> Result<(), StepError> {
    let reporter = &context.reporter;
    let producer = &context.config.producer;
    let discovery = &context.config.discovery;
    let candidates_path = arguments
        .candidates
        .as_ref()
        .ok_or_else(|| StepError::bad_input("candidates", "required by verify-baselines"))?;
    let text = std::fs::read_to_string(candidates_path).map_err(|error| {
        StepError::bad_input(
            "candidates",
            format!("cannot read {}: {error}", candidates_path.display()),
        )
    })?;
    let candidates = parse_candidates(&text)
        .map_err(|error| StepError::bad_input(error.field, error.message))?;
    reject_flag_in_arguments(&candidates, &producer.no_evals_flag)?;
    let sources = discovered_sources(&candidates)?;
    let review = review_input(arguments.review.as_deref(), &candidates);
    let plans = plan_candidates(&candidates, &sources, &review, &discovery.models);
    if let Some(message) = &plans.invalid_review {
        reporter.warning(&format!(
            "the review is invalid, so no baseline is verified ({}): {message}",
            DeferralCode::InvalidReviewOutput
        ));
    }
    let lookups: Vec<Lookup<'_>> = plans
        .plans
        .iter()
        .enumerate()
        .filter_map(|(index, plan)| match plan {
            CandidatePlan::Resolve {
                source,
                display_model,
            } => Some(Lookup {
                index,
                id: &candidates[index].id,
                source: source.as_ref(),
                display_model,
            }),
            _ => None,
        })
        .collect();
    let with_baseline = candidates
        .iter()
        .zip(&plans.plans)
        .filter(|(candidate, plan)| {
            matches!(plan, CandidatePlan::AsGiven) && candidate.baseline.is_some()
        })
        .count();
    let endpoints = match lookups.is_empty() {
        true => None,
        false => Some((feed_endpoints(discovery)?, this_repository(context)?)),
    };
    let needs_repository = with_baseline + lookups.len() > 0;
    let repository = match (&arguments.repo_path, &context.environment.github_workspace) {
        _ if !needs_repository => PathBuf::new(),
        (Some(path), _) | (None, Some(path)) => path.clone(),
        (None, None) => {
            return Err(StepError::bad_input(
                "repo-path",
                "not given and GITHUB_WORKSPACE is not set",
            ));
        }
    };
    if needs_repository && !repository.is_dir() {
        return Err(StepError::bad_input(
            "repo-path",
            format!("{} is not a directory", repository.display()),
        ));
    }

    let options = ProducerWorkOptions {
        setup: ProducerSetup {
            repository,
            checkouts_directory: context.directory.join("producer-checkouts"),
            git: OsString::from("git"),
            interpreter: OsString::from(&producer.interpreter),
            entrypoints: producer.entrypoints.clone(),
            timeout: Duration::from_secs(producer.timeout_seconds),
            stdout_limit: PRODUCER_STDOUT_LIMIT,
            environment: context
                .environment
                .scrubbed_child_environment(&producer.pass_env),
        },
        cache: Some(ProducerCache::new(&context.directory)),
        no_evals_flag: producer.no_evals_flag.clone(),
        parallel_heads: std::thread::available_parallelism().map_or(1, usize::from),
    };
    reporter.info(&format!(
        "{} candidate(s), {with_baseline} with a baseline to verify, {} to look up in the public feeds",
        candidates.len(),
        lookups.len()
    ));
    if needs_repository && options.setup.has_persisted_credentials().await {
        reporter.warning(
            "repo-path keeps a git credential in its configuration (actions/checkout \
             persist-credentials); producer checkouts share that configuration, so producer code \
             could read it: check repo-path out with persist-credentials: false",
        );
    }
    let resolution = match &endpoints {
        Some((endpoints, this_repository)) => {
            look_up(
                &lookups,
                endpoints,
                this_repository,
                &options.setup,
                discovery,
            )
            .await
        }
        None => Resolution::default(),
    };
    for line in &resolution.lines {
        reporter.info(line);
    }
    let mut planned = apply_plans(&candidates, plans.plans, resolution.outcomes);
    planned.baselines_needed = discovery.source != DiscoverySource::Issues;
    let work = plan_verification(&planned.candidates, Batching::ConfigKeys);
    print_plan(reporter, &planned.candidates, &work);
    let spellings = discovery.spellings();
    let mut report = verify_candidates(&planned, &spellings, work, &options, |outcome| {
        print_head_log(reporter, outcome)
    })
    .await;
    report.document.feed_requests = resolution.feed_requests;
    for line in &report.details {
        reporter.info(line);
    }

    write_document(&context.directory, &report.document)?;
    let outputs = outputs_of(&report.document);
    reporter
        .write_outputs(&outputs)
        .map_err(|error| StepError::failed(format!("cannot write step outputs: {error}")))?;
    reporter
        .write_summary(&summary(&report, &outputs))
        .map_err(|error| StepError::failed(format!("cannot write the step summary: {error}")))?;
    Ok(())
}

/// Each candidate's discovered source; a malformed one is bad input naming its field.
fn discovered_sources(
    candidates: &[Candidate],
) -> Result<Vec<Option<DiscoveredSource>>, StepError> {
    candidates
        .iter()
        .enumerate()
        .map(|(index, candidate)| {
            discovered_source(candidate).transpose().map_err(|problem| {
                StepError::bad_input(
                    format!("candidates[{index}].{}", problem.field),
                    problem.message,
                )
            })
        })
        .collect()
}

/// `GITHUB_REPOSITORY`, the one repository whose runs prove a published row.
fn this_repository(context: &StepContext) -> Result<String, StepError> {
    match context.environment.github_repository.as_deref() {
        Some(name) if valid_repository_name(name) => Ok(name.to_string()),
        Some(name) => Err(StepError::bad_input(
            "GITHUB_REPOSITORY",
            format!("'{name}' is not a repository name of the form owner/name"),
        )),
        None => Err(StepError::bad_input(
            "GITHUB_REPOSITORY",
            "must name the repository whose runs produced the published baselines (owner/name)",
        )),
    }
}

async fn look_up(
    lookups: &[Lookup<'_>],
    endpoints: &FeedEndpoints,
    repository: &str,
    setup: &ProducerSetup,
    settings: &crate::shell::config::DiscoverySettings,
) -> Resolution {
    let context = LookupContext {
        endpoints,
        repository,
        setup,
        settings,
    };
    discovered::resolve_baselines(lookups, &context).await
}

/// The candidates as they are verified: each with the baseline it carries or was given by the
/// lookup, none when it is deferred before anything runs (and why).
#[derive(Debug, Clone, Default)]
pub struct PlannedCandidates {
    pub candidates: Vec<Candidate>,
    /// Candidates deferred before verification, by index, with the producer head when known.
    pub early: BTreeMap<usize, (Deferral, Option<String>)>,
    /// The baselines looked up, by index.
    pub resolved: BTreeMap<usize, Baseline>,
    /// Whether a candidate without a baseline is deferred (`no-baseline`); not for the issues
    /// source, whose candidates carry a task instead.
    pub baselines_needed: bool,
}

impl PlannedCandidates {
    /// Every candidate verified as given.
    pub fn as_given(candidates: &[Candidate]) -> Self {
        PlannedCandidates {
            candidates: candidates.to_vec(),
            baselines_needed: true,
            ..PlannedCandidates::default()
        }
    }
}

fn apply_plans(
    candidates: &[Candidate],
    plans: Vec<CandidatePlan>,
    mut outcomes: BTreeMap<usize, Result<Baseline, discovered::Unresolved>>,
) -> PlannedCandidates {
    let mut planned = PlannedCandidates::as_given(candidates);
    for (index, plan) in plans.into_iter().enumerate() {
        match plan {
            CandidatePlan::AsGiven => {}
            CandidatePlan::Deferred(deferral) => {
                planned.candidates[index].baseline = None;
                planned.early.insert(index, (deferral, None));
            }
            CandidatePlan::Resolve { .. } => match outcomes.remove(&index) {
                Some(Ok(baseline)) => {
                    planned.candidates[index].baseline = Some(baseline.clone());
                    planned.resolved.insert(index, baseline);
                }
                Some(Err(unresolved)) => {
                    planned
                        .early
                        .insert(index, (unresolved.deferral, unresolved.head));
                }
                None => {
                    let deferral = Deferral::with_detail(
                        DeferralCode::FeedFailed,
                        "the lookup gave no result for this candidate",
                    );
                    planned.early.insert(index, (deferral, None));
                }
            },
        }
    }
    planned
}

/// The arguments of a baseline are the producer's argv *without* the no-evals flag: klaud
/// appends it, and the fallback depends on knowing it did.
fn reject_flag_in_arguments(candidates: &[Candidate], flag: &str) -> Result<(), StepError> {
    for (index, candidate) in candidates.iter().enumerate() {
        let Some(baseline) = &candidate.baseline else {
            continue;
        };
        if !flag.is_empty() && baseline.producer.args.iter().any(|arg| arg == flag) {
            return Err(StepError::bad_input(
                format!("candidates[{index}].baseline.producer.args"),
                format!("must not contain {flag}: klaud appends it"),
            ));
        }
    }
    Ok(())
}

/// The producer work the candidates' baselines need, per head.
pub fn plan_verification(candidates: &[Candidate], batching: Batching) -> Vec<HeadWork> {
    let calls: Vec<(usize, &ProducerCall)> = candidates
        .iter()
        .enumerate()
        .filter_map(|(index, candidate)| {
            candidate
                .baseline
                .as_ref()
                .map(|baseline| (index, &baseline.producer))
        })
        .collect();
    plan_producer_work(&calls, batching)
}

fn print_plan(reporter: &Reporter, candidates: &[Candidate], work: &[HeadWork]) {
    let invocations: usize = work.iter().map(|head| head.invocations.len()).sum();
    reporter.info(&format!(
        "plan: {invocations} producer invocation(s) over {} head(s), each head checked out once",
        work.len()
    ));
    for head in work {
        for invocation in &head.invocations {
            let ids: Vec<&str> = invocation
                .members
                .iter()
                .map(|member| candidates[member.candidate].id.as_str())
                .collect();
            reporter.info(&format!(
                "  {} {} → {}",
                head.head,
                invocation.args.join(" "),
                ids.join(", ")
            ));
        }
    }
}

/// Does the planned producer work and matches every candidate's published points, the producer
/// entries spelled as published; a candidate deferred before verification keeps its deferral.
pub async fn verify_candidates(
    planned: &PlannedCandidates,
    spellings: &PublishedSpellings,
    work: Vec<HeadWork>,
    options: &ProducerWorkOptions,
    on_head: impl FnMut(&HeadOutcome),
) -> VerificationReport {
    let candidates = &planned.candidates;
    let heads = work.len();
    let planned_invocations = work.iter().map(|head| head.invocations.len()).sum();
    let outcomes = run_producer_work(work, options, on_head).await;

    let cached_invocations = outcomes.iter().map(|o| o.cached_invocations).sum();
    let mut results: HashMap<usize, ProducerResult> = HashMap::new();
    let mut producer_runs = Vec::new();
    for outcome in outcomes {
        producer_runs.extend(outcome.runs);
        results.extend(outcome.results);
    }
    let mut details = Vec::new();
    let records = candidates
        .iter()
        .enumerate()
        .map(|(index, candidate)| {
            let (mut record, detail) = match planned.early.get(&index) {
                Some((deferral, head)) => deferred_early(candidate, deferral, head.as_deref()),
                None if candidate.baseline.is_none() && !planned.baselines_needed => {
                    not_needed(candidate)
                }
                None => judge_candidate(candidate, results.remove(&index), spellings),
            };
            record.baseline = planned.resolved.get(&index).cloned();
            details.push(detail);
            record
        })
        .collect();
    VerificationReport {
        document: BaselinesDocument {
            candidates: records,
            producer_runs,
            feed_requests: 0,
        },
        details,
        heads,
        planned_invocations,
        cached_invocations,
    }
}

/// The record and log line of a candidate deferred before verification.
fn deferred_early(
    candidate: &Candidate,
    deferral: &Deferral,
    head: Option<&str>,
) -> (CandidateBaseline, String) {
    let line = format!(
        "{}: deferred ({}): {}",
        candidate.id, deferral.code, deferral.message
    );
    let record = CandidateBaseline {
        id: candidate.id.clone(),
        status: BaselineStatus::Deferred,
        reason: Some(deferral.clone()),
        producer: head.map(|head| ProducerUsed {
            head: head.to_string(),
            entrypoint: None,
            fallback: false,
        }),
        points: Vec::new(),
        baseline: None,
    };
    (record, line)
}

/// The record of one candidate and its log line.
/// A candidate of the issues source: no baseline to verify, none needed.
fn not_needed(candidate: &Candidate) -> (CandidateBaseline, String) {
    let record = CandidateBaseline {
        id: candidate.id.clone(),
        status: BaselineStatus::NotNeeded,
        reason: None,
        producer: None,
        points: Vec::new(),
        baseline: None,
    };
    let line = format!(
        "{}: no baseline needed (a labelled issue's task)",
        candidate.id
    );
    (record, line)
}

fn judge_candidate(
    candidate: &Candidate,
    result: Option<ProducerResult>,
    spellings: &PublishedSpellings,
) -> (CandidateBaseline, String) {
    let deferred = |producer: Option<ProducerUsed>, deferral: Deferral| {
        let line = format!(
            "{}: deferred ({}): {}",
            candidate.id, deferral.code, deferral.message
        );
        let record = CandidateBaseline {
            id: candidate.id.clone(),
            status: BaselineStatus::Deferred,
            reason: Some(deferral),
            producer,
            points: Vec::new(),
            baseline: None,
        };
        (record, line)
    };
    let Some(baseline) = &candidate.baseline else {
        return deferred(None, Deferral::fixed(DeferralCode::NoBaseline));
    };
    let head = baseline.producer.head.clone();
    let share = match result {
        Some(ProducerResult::Share(share)) => share,
        Some(ProducerResult::Deferred {
            entrypoint,
            fallback,
            deferral,
        }) => {
            let used = ProducerUsed {
                head,
                entrypoint,
                fallback,
            };
            return deferred(Some(used), deferral);
        }
        None => {
            let used = ProducerUsed {
                head,
                entrypoint: None,
                fallback: false,
            };
            let deferral = Deferral::with_detail(
                DeferralCode::ProducerFailed,
                "the producer work gave no result for this candidate",
            );
            return deferred(Some(used), deferral);
        }
    };
    // Without the no-evals flag the producer may mark evaluation rows; they are no throughput
    // baseline and are left out of the matching (their numbers stay those of the full output).
    let throughput = share
        .entries
        .iter()
        .enumerate()
        .filter(|(_, entry)| !share.fallback || !is_evaluation_entry(entry));
    let verification = verify_baseline(&baseline.points, throughput, spellings);
    let used = ProducerUsed {
        head,
        entrypoint: Some(share.entrypoint.clone()),
        fallback: share.fallback,
    };
    let rows = describe_verdicts(&verification.verdicts);
    let status = if verification.deferral.is_some() {
        BaselineStatus::Deferred
    } else {
        BaselineStatus::Verified
    };
    let line = match &verification.deferral {
        None => format!(
            "{}: verified: {} of {} published point(s) matched {} producer entries{rows}",
            candidate.id,
            verification.matched.len(),
            baseline.points.len(),
            share.entries.len()
        ),
        Some(deferral) => format!(
            "{}: deferred ({}): {}{rows}",
            candidate.id, deferral.code, deferral.message
        ),
    };
    let record = CandidateBaseline {
        id: candidate.id.clone(),
        status,
        reason: verification.deferral,
        producer: Some(used),
        points: verification.matched,
        baseline: None,
    };
    (record, line)
}

fn describe_verdicts(verdicts: &[PointVerdict]) -> String {
    let rows: Vec<String> = verdicts
        .iter()
        .enumerate()
        .map(|(row, verdict)| match verdict {
            PointVerdict::Matched(entry) => format!("row {row} → entry {entry}"),
            PointVerdict::Unmatched => format!("row {row} → none (sibling workload)"),
            PointVerdict::Ambiguous(entries) => format!("row {row} → ambiguous {entries:?}"),
            PointVerdict::ImageMismatch(entries) => {
                format!("row {row} → other image than {entries:?}")
            }
        })
        .collect();
    if rows.is_empty() {
        String::new()
    } else {
        format!(" [{}]", rows.join("; "))
    }
}

fn print_head_log(reporter: &Reporter, outcome: &HeadOutcome) {
    reporter.begin_group(&format!("producer head {}", outcome.head));
    for event in &outcome.log {
        match event {
            LogEvent::Info(line) => reporter.info(line),
            LogEvent::Warning(line) => reporter.warning(line),
            LogEvent::ChildStderr { title, text } => reporter.untrusted_block(title, text),
        }
    }
    reporter.end_group();
}

fn write_document(directory: &Path, document: &BaselinesDocument) -> Result<(), StepError> {
    std::fs::create_dir_all(directory).map_err(|error| {
        StepError::failed(format!("cannot create {}: {error}", directory.display()))
    })?;
    let path = directory.join("baselines.json");
    let text = serde_json::to_string_pretty(document).expect("the document serializes");
    std::fs::write(&path, text + "\n")
        .map_err(|error| StepError::failed(format!("cannot write {}: {error}", path.display())))
}

/// The step outputs of a finished verification.
pub fn outputs_of(document: &BaselinesDocument) -> VerifyBaselinesOutputs {
    let ids = |status: BaselineStatus| {
        document
            .candidates
            .iter()
            .filter(|candidate| candidate.status == status)
            .map(|candidate| candidate.id.clone())
            .collect()
    };
    let mut deferred_reasons = BTreeMap::new();
    for reason in document.candidates.iter().filter_map(|c| c.reason.as_ref()) {
        *deferred_reasons.entry(reason.code).or_insert(0) += 1;
    }
    VerifyBaselinesOutputs {
        verified: ids(BaselineStatus::Verified),
        deferred: ids(BaselineStatus::Deferred),
        producer_runs: document.producer_runs.len(),
        deferred_reasons,
        feed_requests: document.feed_requests,
    }
}

fn summary(report: &VerificationReport, outputs: &VerifyBaselinesOutputs) -> String {
    let document = &report.document;
    let fallbacks = document
        .producer_runs
        .iter()
        .filter(|run| run.fallback)
        .count();
    let mut text = format!(
        "### klaud verify-baselines: {} verified, {} deferred, {} need no baseline\n\n\
         {} producer run(s) over {} head(s) ({} fallback rerun(s) without the no-evals flag); \
         {} of {} planned invocation(s) answered from the cache.\n\n",
        outputs.verified.len(),
        outputs.deferred.len(),
        document
            .candidates
            .iter()
            .filter(|candidate| candidate.status == BaselineStatus::NotNeeded)
            .count(),
        outputs.producer_runs,
        report.heads,
        fallbacks,
        report.cached_invocations,
        report.planned_invocations,
    );
    let looked_up = document
        .candidates
        .iter()
        .filter(|candidate| candidate.baseline.is_some())
        .count();
    if outputs.feed_requests > 0 || looked_up > 0 {
        text.push_str(&format!(
            "{looked_up} baseline(s) of discovered candidates looked up in the public feeds \
             ({} feed request(s)).\n\n",
            outputs.feed_requests
        ));
    }
    if !outputs.deferred_reasons.is_empty() {
        let rows: Vec<Vec<String>> = outputs
            .deferred_reasons
            .iter()
            .map(|(code, count)| vec![format!("`{code}`"), count.to_string()])
            .collect();
        text.push_str(&markdown_table(&["deferral reason", "candidates"], &rows));
        text.push('\n');
    }
    let rows: Vec<Vec<String>> = document
        .candidates
        .iter()
        .map(|candidate| {
            let producer = candidate.producer.as_ref();
            vec![
                candidate.id.clone(),
                match &candidate.reason {
                    None => "verified".to_string(),
                    Some(reason) => format!("`{}`: {}", reason.code, reason.message),
                },
                producer.map_or(String::new(), |p| p.head.chars().take(12).collect()),
                producer.map_or(String::new(), |p| {
                    if p.fallback { "yes" } else { "no" }.to_string()
                }),
                candidate.points.len().to_string(),
            ]
        })
        .collect();
    text.push_str(&markdown_table(
        &[
            "candidate",
            "result",
            "producer head",
            "fallback",
            "points matched",
        ],
        &rows,
    ));
    text
}
