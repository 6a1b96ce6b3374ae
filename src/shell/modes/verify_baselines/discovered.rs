//! The reads that look up the baselines of discovered candidates (contract §11, last part),
//! between the pure steps of `core::baseline::resolve`: the benchmarks feed once per display
//! model and date, workflow-info once per date (only when some row's run needs it), and the files
//! of each proven producer head once (`git ls-tree` of `repo-path`, no checkout). Every failure
//! defers only the candidates it concerns, with its reason; nothing here fails the step.

use std::collections::BTreeMap;

use crate::adapters::feeds::{FeedReader, FeedSettings, FeedSource};
use crate::adapters::producer::{ProducerSetup, TreeFailure};
use crate::core::baseline::resolve::{
    DiscoveredSource, RunHeads, family_rows, listed_folders, producer_args, producer_runs,
    prove_heads, resolved_baseline, run_heads,
};
use crate::core::baseline::{Deferral, DeferralCode};
use crate::core::candidate::Baseline;
use crate::shell::config::DiscoverySettings;
use crate::shell::error::StepError;

/// Where the two feeds are read.
#[derive(Debug, Clone)]
pub struct FeedEndpoints {
    pub benchmarks: FeedSource,
    pub workflow_info: FeedSource,
}

/// The feeds as configured (`discovery.feeds.benchmarks` and `.workflow-info`, by default on
/// the images feed's origin); one that names nothing readable is bad input.
pub fn feed_endpoints(settings: &DiscoverySettings) -> Result<FeedEndpoints, StepError> {
    let endpoint = |key: &str, configured: Option<&String>, path: &str| {
        let source = match configured {
            Some(text) => FeedSource::parse(text),
            None => FeedSource::parse(&settings.feeds.images).and_then(|images| {
                images
                    .on_origin(path)
                    .ok_or_else(|| "the images feed is a file, so this feed must be given".into())
            }),
        };
        source.map_err(|problem| StepError::bad_input(key, problem))
    };
    Ok(FeedEndpoints {
        benchmarks: endpoint(
            "discovery.feeds.benchmarks",
            settings.feeds.benchmarks.as_ref(),
            "/api/v1/benchmarks",
        )?,
        workflow_info: endpoint(
            "discovery.feeds.workflow-info",
            settings.feeds.workflow_info.as_ref(),
            "/api/v1/workflow-info",
        )?,
    })
}

/// One candidate to look up: its place in the candidates file, its source and display model.
#[derive(Debug, Clone)]
pub struct Lookup<'a> {
    pub index: usize,
    pub id: &'a str,
    pub source: &'a DiscoveredSource,
    pub display_model: &'a str,
}

/// A lookup that did not give a baseline: why, and the producer head when one was proven.
#[derive(Debug, Clone, PartialEq)]
pub struct Unresolved {
    pub deferral: Deferral,
    pub head: Option<String>,
}

/// What the lookups found.
#[derive(Debug, Default)]
pub struct Resolution {
    /// Per candidate index: its baseline, or why it has none.
    pub outcomes: BTreeMap<usize, Result<Baseline, Unresolved>>,
    /// HTTP requests sent to the feeds, retries included.
    pub feed_requests: u64,
    /// One line per candidate for the log.
    pub lines: Vec<String>,
}

/// Everything a lookup needs besides the candidate.
pub struct LookupContext<'a> {
    pub endpoints: &'a FeedEndpoints,
    /// `owner/name` of this repository: the only one whose runs prove a row.
    pub repository: &'a str,
    /// The checkout whose history holds the producer heads.
    pub setup: &'a ProducerSetup,
    pub settings: &'a DiscoverySettings,
}

/// What has been read so far, each thing once.
#[derive(Default)]
struct Reads {
    benchmarks: BTreeMap<(String, String), Result<serde_json::Value, Deferral>>,
    workflow_info: BTreeMap<String, Result<RunHeads, Deferral>>,
    files: BTreeMap<String, Result<Vec<String>, Deferral>>,
}

/// Looks every candidate's baseline up, one after the other (reads shared between them).
pub async fn resolve_baselines(lookups: &[Lookup<'_>], context: &LookupContext<'_>) -> Resolution {
    let feeds = FeedReader::new(FeedSettings::default());
    let mut reads = Reads::default();
    let mut resolution = Resolution::default();
    for lookup in lookups {
        let outcome = resolve_one(lookup, context, &feeds, &mut reads).await;
        resolution.lines.push(match &outcome {
            Ok(baseline) => format!(
                "{}: baseline looked up: {} published row(s) of {} for {}, producer head {}",
                lookup.id,
                baseline.points.len(),
                lookup.source.date(),
                lookup.display_model,
                baseline.producer.head
            ),
            Err(unresolved) => format!(
                "{}: no baseline looked up ({}): {}",
                lookup.id, unresolved.deferral.code, unresolved.deferral.message
            ),
        });
        resolution.outcomes.insert(lookup.index, outcome);
    }
    resolution.feed_requests = feeds.requests();
    resolution
}

async fn resolve_one(
    lookup: &Lookup<'_>,
    context: &LookupContext<'_>,
    feeds: &FeedReader,
    reads: &mut Reads,
) -> Result<Baseline, Unresolved> {
    let unresolved = |deferral: Deferral| Unresolved {
        deferral,
        head: None,
    };
    let date = lookup.source.date().to_string();
    let key = (lookup.display_model.to_string(), date.clone());
    if !reads.benchmarks.contains_key(&key) {
        let query = [
            ("model", lookup.display_model),
            ("date", date.as_str()),
            ("exact", "true"),
        ];
        let answer = feeds
            .get_json(&context.endpoints.benchmarks, &query)
            .await
            .map_err(|error| Deferral::with_detail(DeferralCode::FeedFailed, &error.to_string()));
        reads.benchmarks.insert(key.clone(), answer);
    }
    let answer = reads.benchmarks[&key].clone().map_err(unresolved)?;
    let rows = family_rows(lookup.source, lookup.display_model, &answer).map_err(unresolved)?;
    let runs = producer_runs(&rows, context.repository).map_err(unresolved)?;
    if !reads.workflow_info.contains_key(&date) {
        let heads = match feeds
            .get_json(&context.endpoints.workflow_info, &[("date", date.as_str())])
            .await
        {
            Ok(document) => run_heads(&document).map_err(|problem| {
                Deferral::with_detail(
                    DeferralCode::FeedFailed,
                    &format!("workflow-info of {date}: {problem}"),
                )
            }),
            Err(error) => Err(Deferral::with_detail(
                DeferralCode::FeedFailed,
                &error.to_string(),
            )),
        };
        reads.workflow_info.insert(date.clone(), heads);
    }
    let heads = reads.workflow_info[&date]
        .as_ref()
        .map_err(|d| unresolved(d.clone()))?;
    let proven = prove_heads(rows, &runs, heads, &date).map_err(unresolved)?;
    let head = proven.head.clone();
    if !reads.files.contains_key(&head) {
        let settings = context.settings;
        let folders = listed_folders(&settings.configs, &settings.runner_config);
        let files =
            context
                .setup
                .list_files(&head, &folders)
                .await
                .map_err(|failure| match failure {
                    TreeFailure::HeadMissing => Deferral::fixed(DeferralCode::ProducerHeadMissing),
                    TreeFailure::ListFailed { exit, truncated } => Deferral::with_detail(
                        DeferralCode::CheckoutFailed,
                        &match (truncated, exit) {
                            (true, _) => "git ls-tree of the producer head listed too much".into(),
                            (false, Some(exit)) => {
                                format!("git ls-tree of the producer head failed (exit {exit})")
                            }
                            (false, None) => "git ls-tree of the producer head was killed".into(),
                        },
                    ),
                    TreeFailure::Unavailable(error) => Deferral::with_detail(
                        DeferralCode::CheckoutFailed,
                        &format!("git could not be started ({})", error.kind()),
                    ),
                });
        reads.files.insert(head.clone(), files);
    }
    let with_head = |deferral: Deferral| Unresolved {
        deferral,
        head: Some(head.clone()),
    };
    let files = reads.files[&head]
        .as_ref()
        .map_err(|d| with_head(d.clone()))?;
    let settings = context.settings;
    let args = producer_args(
        &lookup.source.config_key,
        files,
        &settings.configs,
        &settings.runner_config,
    )
    .map_err(with_head)?;
    Ok(resolved_baseline(proven, args))
}
