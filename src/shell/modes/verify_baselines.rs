//! `verify-baselines` (contract §3.2, §3a, §6, §7): for each candidate that carries a baseline,
//! regenerate its producer output — each distinct head once, in an isolated checkout, with a
//! scrubbed environment — and match every published point to exactly one producer entry.
//!
//! Reads as: candidates (bad input is exit 2 before anything runs) → plan the producer work
//! (`core::baseline::invocation`) → do it (`heads`) → match (`core::baseline::matching`) →
//! `baselines.json`, outputs and summary. A candidate's failure defers that candidate only; the
//! step itself fails (exit 1) only when it cannot write its results.

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
use crate::adapters::producer::ProducerSetup;
use crate::adapters::producer_cache::ProducerCache;
use crate::core::baseline::invocation::{
    Batching, HeadWork, is_evaluation_entry, plan_producer_work,
};
use crate::core::baseline::matching::{MatchedPoint, PointVerdict, verify_baseline};
use crate::core::baseline::{Deferral, DeferralCode};
use crate::core::candidate::{Candidate, ProducerCall, parse_candidates};
use crate::shell::cli::VerifyBaselinesArgs;
use crate::shell::error::StepError;
use crate::shell::outputs::{Reporter, markdown_table};

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
}

/// `baselines.json` (contract §3a).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct BaselinesDocument {
    /// Every candidate of the candidates file, once, in its order.
    pub candidates: Vec<CandidateBaseline>,
    pub producer_runs: Vec<ProducerRunRecord>,
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BaselineStatus {
    Verified,
    Deferred,
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
    let with_baseline = candidates.iter().filter(|c| c.baseline.is_some()).count();
    let repository = match (&arguments.repo_path, &context.environment.github_workspace) {
        _ if with_baseline == 0 => PathBuf::new(),
        (Some(path), _) | (None, Some(path)) => path.clone(),
        (None, None) => {
            return Err(StepError::bad_input(
                "repo-path",
                "not given and GITHUB_WORKSPACE is not set",
            ));
        }
    };
    if with_baseline > 0 && !repository.is_dir() {
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
        "{} candidate(s), {with_baseline} with a baseline to verify",
        candidates.len()
    ));
    if with_baseline > 0 && options.setup.has_persisted_credentials().await {
        reporter.warning(
            "repo-path keeps a git credential in its configuration (actions/checkout \
             persist-credentials); producer checkouts share that configuration, so producer code \
             could read it: check repo-path out with persist-credentials: false",
        );
    }
    let work = plan_verification(&candidates, Batching::ConfigKeys);
    print_plan(reporter, &candidates, &work);
    let report = verify_candidates(&candidates, work, &options, |outcome| {
        print_head_log(reporter, outcome)
    })
    .await;
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

/// Does the planned producer work and matches every candidate's published points.
pub async fn verify_candidates(
    candidates: &[Candidate],
    work: Vec<HeadWork>,
    options: &ProducerWorkOptions,
    on_head: impl FnMut(&HeadOutcome),
) -> VerificationReport {
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
            let (record, detail) = judge_candidate(candidate, results.remove(&index));
            details.push(detail);
            record
        })
        .collect();
    VerificationReport {
        document: BaselinesDocument {
            candidates: records,
            producer_runs,
        },
        details,
        heads,
        planned_invocations,
        cached_invocations,
    }
}

/// The record of one candidate and its log line.
fn judge_candidate(
    candidate: &Candidate,
    result: Option<ProducerResult>,
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
    let verification = verify_baseline(&baseline.points, throughput);
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
        "### klaud verify-baselines: {} verified, {} deferred\n\n\
         {} producer run(s) over {} head(s) ({} fallback rerun(s) without the no-evals flag); \
         {} of {} planned invocation(s) answered from the cache.\n\n",
        outputs.verified.len(),
        outputs.deferred.len(),
        outputs.producer_runs,
        report.heads,
        fallbacks,
        report.cached_invocations,
        report.planned_invocations,
    );
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
