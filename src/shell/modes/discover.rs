//! `discover` (contract §11, §13): where the planner's candidates come from.
//!
//! With `discovery.source: issues`, the labelled issues decide (`discover/issues.rs`). Otherwise
//! it reads as: inputs (the repository checkout, the config's patterns and feeds; bad input is
//! exit 2 before anything is run or requested) → the families of the master configs rendered
//! by the repository's own generator (`discover/render.rs`: several at once, the render cache)
//! → the catalog from the images feed (a feed that fails is a failed discovery: exit 1, only
//! the report written) → what is taken: the ledger, klaud's open pull requests and branches
//! under the prefix and the legacy prefixes (an incomplete listing is a failed discovery too) →
//! the capacity gate, asked once about every row's hardware → `core::discovery` →
//! `candidates.json`, `discovery.json`, outputs and summary. It writes nothing to GitHub.

mod issues;
mod render;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::Utc;
use serde::Serialize;

use self::render::{FamilyJob, Generator, RenderCounts, RenderResult, matching_files, read_master};
use super::StepContext;
use super::select::facts::{ask_capacity_gate, read_github_facts};
use super::work_files::write_json_file;
use crate::adapters::feeds::{FeedReader, FeedSettings, FeedSource};
use crate::adapters::ledger_store::LedgerStore;
use crate::adapters::process::{ChildCommand, ChildEnvironment, run_child};
use crate::core::dashboard::render::cell;
use crate::core::discovery::catalog::read_catalog;
use crate::core::discovery::{
    Discovery, DiscoveryRun, DiscoverySnapshot, Family, Rendering, discover, hardware_targets,
    render_keys,
};
use crate::shell::cli::DiscoverArgs;
use crate::shell::config::DiscoverySource;
use crate::shell::error::StepError;
use crate::shell::github::{RequestReport, connect};
use crate::shell::outputs::markdown_table;

/// The step outputs of `discover`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct DiscoverOutputs {
    /// `true` when at least one candidate was discovered.
    pub has_candidates: bool,
    /// How many candidates `candidates.json` holds.
    pub candidates: usize,
    /// JSON array of the discovered candidate ids, in the run's order.
    pub discovered: Vec<String>,
    /// The path of `candidates.json`.
    pub candidates_file: String,
    /// JSON object: the GitHub requests of this step and its budgets.
    pub requests: RequestReport,
}

/// A master file that contributes no family, and why.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct UnreadableFile {
    pub file: String,
    pub reason: String,
}

/// `discovery.json`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
struct DiscoveryRecord<'a> {
    /// The checkout's HEAD commit.
    base: &'a str,
    /// The planner run that discovered (the order's seed).
    run: u64,
    /// Why discovery failed, when it did; nothing else is decided then.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    files: Vec<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    unreadable_files: &'a [UnreadableFile],
    rendering: RenderCounts,
    render_seconds: f64,
    feed_requests: u64,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    discovery: Option<&'a Discovery>,
}

/// The planner run that discovers: the order's seed (0 outside Actions).
fn planner_run_id(context: &StepContext) -> u64 {
    context
        .environment
        .github_run_id
        .as_deref()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .unwrap_or(0)
}

/// A failed discovery leaves no candidates file, not even an earlier one.
fn remove_stale_candidates(context: &StepContext) -> Result<(), StepError> {
    let stale = context.directory.join("candidates.json");
    if stale.is_file() {
        std::fs::remove_file(&stale).map_err(|error| {
            StepError::failed(format!("cannot remove {}: {error}", stale.display()))
        })?;
    }
    Ok(())
}

pub async fn run(context: &StepContext, arguments: &DiscoverArgs) -> Result<(), StepError> {
    if context.config.discovery.source == DiscoverySource::Issues {
        return issues::run(context, arguments).await;
    }
    let reporter = &context.reporter;
    let settings = &context.config.discovery;
    let root = repository_root(context, arguments)?;
    if let Some(cache) = &arguments.render_cache
        && cache.exists()
        && !cache.is_dir()
    {
        return Err(StepError::bad_input(
            "render-cache",
            format!("{} exists and is not a directory", cache.display()),
        ));
    }
    let images = FeedSource::parse(&settings.feeds.images)
        .map_err(|problem| StepError::bad_input("discovery.feeds.images", problem))?;
    let mut files: Vec<String> = Vec::new();
    for pattern in &settings.configs {
        let matched = matching_files(&root, pattern);
        if matched.is_empty() {
            return Err(StepError::bad_input(
                "discovery.configs",
                format!("'{pattern}' matches no file in {}", root.display()),
            ));
        }
        files.extend(matched);
    }
    files.sort();
    files.dedup();
    if !root.join(&settings.runner_config).is_file() {
        return Err(StepError::bad_input(
            "discovery.runner-config",
            format!(
                "{} is not a file in {}",
                settings.runner_config,
                root.display()
            ),
        ));
    }
    let producer = &context.config.producer;
    let entrypoint = producer
        .entrypoints
        .iter()
        .find(|entrypoint| root.join(entrypoint).is_file())
        .cloned()
        .ok_or_else(|| {
            StepError::bad_input(
                "producer.entrypoints",
                format!(
                    "none of {} is a file in {}",
                    producer.entrypoints.join(", "),
                    root.display()
                ),
            )
        })?;
    let run_id = planner_run_id(context);
    let connection = connect(context, &arguments.github)?;
    let base = head_commit(&root, context).await?;
    remove_stale_candidates(context)?;
    let record = |unreadable: &[UnreadableFile],
                  error: Option<String>,
                  counts: RenderCounts,
                  render_seconds: f64,
                  feed_requests: u64,
                  discovery: Option<&Discovery>| {
        let document = DiscoveryRecord {
            base: &base,
            run: run_id,
            error,
            files: files.iter().map(String::as_str).collect(),
            unreadable_files: unreadable,
            rendering: counts,
            render_seconds,
            feed_requests,
            discovery,
        };
        write_json_file(&context.directory, "discovery.json", &document)
    };

    // The catalog.
    let feeds = FeedReader::new(FeedSettings::default());
    let catalog = match feeds.get_json(&images, &[]).await {
        Ok(document) => read_catalog(&document).map_err(|error| error.to_string()),
        Err(error) => Err(error.to_string()),
    };
    let catalog = match catalog {
        Ok(catalog) => catalog,
        Err(error) => {
            let message = format!("discovery failed, nothing is proposed: {error}");
            record(
                &[],
                Some(message.clone()),
                RenderCounts::default(),
                0.0,
                feeds.requests(),
                None,
            )?;
            return Err(StepError::failed(message));
        }
    };
    for invalid in &catalog.invalid {
        reporter.warning(&format!(
            "discover: catalog row {} is skipped: missing or of the wrong type: {}",
            invalid.index,
            invalid.fields.join(", ")
        ));
    }

    // Families.
    let mut jobs: Vec<FamilyJob> = Vec::new();
    let mut unreadable: Vec<UnreadableFile> = Vec::new();
    for file in &files {
        match read_master(&root, file) {
            Ok(families) => jobs.extend(families),
            Err(reason) => {
                reporter.warning(&format!("discover: {file} contributes no family: {reason}"));
                unreadable.push(UnreadableFile {
                    file: file.clone(),
                    reason,
                });
            }
        }
    }
    let generator = Generator {
        root: root.clone(),
        interpreter: producer.interpreter.clone().into(),
        entrypoint,
        runner_config: settings.runner_config.clone(),
        timeout: Duration::from_secs(producer.timeout_seconds),
        environment: context
            .environment
            .scrubbed_child_environment(&producer.pass_env),
        parallel: std::thread::available_parallelism().map_or(1, usize::from),
        cache: arguments
            .render_cache
            .clone()
            .unwrap_or_else(|| context.directory.join("discovery-renderings")),
        excerpts: context.directory.join("discovery-excerpts"),
    };
    reporter.info(&format!(
        "discover: {} famil(ies) in {} file(s); rendering {} at once",
        jobs.len(),
        files.len(),
        generator.parallel
    ));
    let started = Instant::now();
    let (results, counts, not_kept) = generator.render_all(&jobs).await;
    let render_seconds = started.elapsed().as_secs_f64();
    reporter.info(&format!(
        "discover: rendered in {render_seconds:.1} s: {} generator run(s), {} from the cache, {} refused",
        counts.generator_runs, counts.from_cache, counts.refused
    ));
    if let Some(reason) = not_kept {
        reporter.warning(&format!(
            "discover: {} rendering(s) could not be kept in the render cache, so the next discovery runs the generator for them again: {reason}",
            counts.not_kept
        ));
    }
    let spellings = settings.spellings();
    let families: Vec<Family> = jobs
        .iter()
        .zip(results)
        .map(|(job, result)| Family {
            name: job.name(),
            rendering: match result {
                RenderResult::Entries(entries) => render_keys(&entries, &spellings),
                RenderResult::Refused(reason) => Rendering::Unrenderable { reason },
            },
        })
        .collect();
    for family in &families {
        if let Rendering::Unrenderable { reason } = &family.rendering {
            reporter.warning(&format!("discover: {} is skipped: {reason}", family.name));
        }
    }

    // What is taken.
    let client = &connection.client;
    let policy = &context.policy;
    let store = LedgerStore::new(client, &policy.state_branch);
    let prefixes: Vec<&str> = std::iter::once(policy.branch_prefix.as_str())
        .chain(settings.legacy_branch_prefixes.iter().map(String::as_str))
        .collect();
    let (loaded, github) = tokio::join!(store.load(), read_github_facts(client, &prefixes));
    let gap = match &loaded {
        Err(error) => Some(format!("the ledger could not be read: {error}")),
        Ok(_) => github
            .open_pull_requests
            .gap
            .clone()
            .or_else(|| github.candidate_branches.gap.clone()),
    };
    if let Some(gap) = gap {
        let message = format!(
            "discovery failed, nothing is proposed: what is taken is not known in full: {gap}"
        );
        record(
            &unreadable,
            Some(message.clone()),
            counts,
            render_seconds,
            feeds.requests(),
            None,
        )?;
        return Err(StepError::failed(message));
    }
    let ledger = loaded.expect("checked above").ledger;
    let capacity = ask_capacity_gate(
        &context.config.capacity,
        &hardware_targets(&catalog),
        reporter,
    )
    .await;

    let discovery = discover(
        DiscoverySnapshot {
            families: &families,
            catalog: &catalog,
            ledger: &ledger,
            github: &github,
            capacity: &capacity,
        },
        &DiscoveryRun {
            policy,
            legacy_branch_prefixes: &settings.legacy_branch_prefixes,
            base: &base,
            run_id,
            review_batch_size: settings.review_batch_size,
            now: Utc::now(),
        },
    );
    let candidates_path =
        write_json_file(&context.directory, "candidates.json", &discovery.candidates)?;
    let record_path = record(
        &unreadable,
        None,
        counts,
        render_seconds,
        feeds.requests(),
        Some(&discovery),
    )?;
    reporter.info(&format!(
        "discover: {} candidate(s) of {} famil(ies) and {} catalog row(s); wrote {} and {}",
        discovery.candidates.len(),
        families.len(),
        catalog.rows.len() + catalog.invalid.len(),
        candidates_path.display(),
        record_path.display()
    ));
    let requests = connection.report();
    let outputs = DiscoverOutputs {
        has_candidates: !discovery.candidates.is_empty(),
        candidates: discovery.candidates.len(),
        discovered: discovery.candidate_ids(),
        candidates_file: candidates_path.display().to_string(),
        requests,
    };
    reporter
        .write_outputs(&outputs)
        .map_err(|error| StepError::failed(format!("cannot write step outputs: {error}")))?;
    reporter
        .write_summary(&summary(&discovery, counts, render_seconds))
        .map_err(|error| StepError::failed(format!("cannot write the step summary: {error}")))?;
    Ok(())
}

fn repository_root(context: &StepContext, arguments: &DiscoverArgs) -> Result<PathBuf, StepError> {
    let root = match (&arguments.repo_path, &context.environment.github_workspace) {
        (Some(path), _) | (None, Some(path)) => path.clone(),
        (None, None) => {
            return Err(StepError::bad_input(
                "repo-path",
                "not given and GITHUB_WORKSPACE is not set",
            ));
        }
    };
    if !root.is_dir() {
        return Err(StepError::bad_input(
            "repo-path",
            format!("{} is not a directory", root.display()),
        ));
    }
    Ok(root)
}

/// The checkout's HEAD commit: every candidate's `base`.
async fn head_commit(root: &Path, context: &StepContext) -> Result<String, StepError> {
    let mut command = ChildCommand::new("git", Duration::from_secs(60))
        .arg("-C")
        .arg(root.as_os_str())
        .args(["rev-parse", "--verify", "HEAD^{commit}"]);
    command.environment =
        ChildEnvironment::Only(context.environment.scrubbed_child_environment(&[]));
    let output = run_child(&command)
        .await
        .map_err(|error| StepError::failed(format!("git could not be started: {error}")))?;
    let head = output.stdout.trim().to_ascii_lowercase();
    if !output.succeeded() || head.len() != 40 || !head.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(StepError::bad_input(
            "repo-path",
            format!(
                "{} has no HEAD commit: {}",
                root.display(),
                output.last_stderr_line().unwrap_or("git rev-parse failed")
            ),
        ));
    }
    Ok(head)
}

fn summary(discovery: &Discovery, counts: RenderCounts, render_seconds: f64) -> String {
    let mut text = format!(
        "### klaud discover\n\n{} candidate(s) from {} famil(ies): {} generator run(s), {} from the cache, {render_seconds:.1} s.\n\n",
        discovery.candidates.len(),
        counts.families,
        counts.generator_runs,
        counts.from_cache
    );
    text.push_str(&fate_table(
        &["family fate", "families"],
        &discovery.family_counts,
    ));
    text.push('\n');
    text.push_str(&fate_table(&["row fate", "rows"], &discovery.row_counts));
    if !discovery.candidates.is_empty() {
        let candidates: Vec<Vec<String>> = discovery
            .candidates
            .iter()
            .map(|candidate| {
                vec![
                    cell(&candidate.id),
                    cell(&candidate.family),
                    cell(
                        candidate
                            .source()
                            .and_then(|source| source.get("image"))
                            .and_then(|v| v.as_str())
                            .unwrap_or(""),
                    ),
                    cell(
                        candidate
                            .source()
                            .and_then(|source| source.get("date"))
                            .and_then(|v| v.as_str())
                            .unwrap_or(""),
                    ),
                ]
            })
            .collect();
        text.push('\n');
        text.push_str(&markdown_table(
            &["candidate", "family", "image", "date"],
            &candidates,
        ));
    }
    text
}

/// A table of how many families or rows met each fate, the fate as it is spelled in files.
fn fate_table<F: Serialize>(
    header: &[&str],
    counts: &std::collections::BTreeMap<F, usize>,
) -> String {
    let rows: Vec<Vec<String>> = counts
        .iter()
        .map(|(fate, count)| {
            let name = serde_json::to_value(fate).unwrap_or_default();
            vec![
                format!("`{}`", name.as_str().unwrap_or_default()),
                count.to_string(),
            ]
        })
        .collect();
    markdown_table(header, &rows)
}
