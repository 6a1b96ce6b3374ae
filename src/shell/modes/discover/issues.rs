//! `discover` with `discovery.source: issues` (contract §13): the open issues carrying the label
//! with their label events (one GraphQL query a page of 100), the default branch's head (every
//! candidate's `base`), the ledger, klaud's open pull requests and branches → one permission
//! read per distinct label actor, nothing kept from an earlier pass → `core::discovery::issues`
//! → `candidates.json`, `discovery.json`, outputs and summary. An incomplete listing or a read
//! that fails leaves nothing proposed (exit 1, only the report). It writes nothing to GitHub and
//! needs no checkout, producer, catalog or feed.

use std::collections::BTreeMap;

use chrono::Utc;
use futures::StreamExt;
use serde::Serialize;

use super::super::StepContext;
use super::super::select::facts::read_github_facts;
use super::super::work_files::write_json_file;
use super::{DiscoverOutputs, fate_table, planner_run_id, remove_stale_candidates};
use crate::adapters::github::GitHubClient;
use crate::adapters::ledger_store::LedgerStore;
use crate::core::dashboard::render::cell;
use crate::core::discovery::DiscoveryRun;
use crate::core::discovery::issues::{
    IssueDiscovery, IssueSnapshot, discover_issues, label_actors,
};
use crate::core::github_state::RepositoryPermission;
use crate::core::snapshot::{Read, ReadFailure};
use crate::shell::cli::DiscoverArgs;
use crate::shell::error::StepError;
use crate::shell::github::connect;
use crate::shell::outputs::markdown_table;

/// Permission reads in flight at once.
const PERMISSION_READS_AT_ONCE: usize = 8;

/// `discovery.json` of the issues source.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
struct IssueDiscoveryRecord<'a> {
    source: &'static str,
    label: &'a str,
    /// The default branch's head, when it was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    base: Option<&'a str>,
    run: u64,
    /// Why discovery failed, when it did; nothing else is decided then.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// How many accounts' permissions were read (one per distinct label actor).
    permission_reads: usize,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    discovery: Option<&'a IssueDiscovery>,
}

/// The default branch's head commit: every candidate's `base`.
async fn default_branch_head(client: &GitHubClient) -> Result<String, String> {
    let repository = client
        .repository_info()
        .await
        .map_err(|error| format!("the repository could not be read: {error}"))?;
    let branch = &repository.default_branch;
    match client.branch(branch).await {
        Ok(Some(reference)) => Ok(reference.object.sha),
        Ok(None) => Err(format!("the default branch {branch} does not exist")),
        Err(error) => Err(format!(
            "the default branch {branch} could not be read: {error}"
        )),
    }
}

/// Each account's permission, read once.
async fn permissions_of(
    client: &GitHubClient,
    accounts: impl IntoIterator<Item = String>,
) -> BTreeMap<String, Read<RepositoryPermission>> {
    futures::stream::iter(accounts)
        .map(|account| async move {
            let permission = client
                .collaborator_permission(&account)
                .await
                .map_err(|error| ReadFailure::new(error.to_string()));
            (account, permission)
        })
        .buffer_unordered(PERMISSION_READS_AT_ONCE)
        .collect()
        .await
}

pub async fn run(context: &StepContext, arguments: &DiscoverArgs) -> Result<(), StepError> {
    let reporter = &context.reporter;
    let settings = context.config.discovery.issues.settings();
    let run_id = planner_run_id(context);
    let connection = connect(context, &arguments.github)?;
    remove_stale_candidates(context)?;
    let record = |base: Option<&str>,
                  error: Option<String>,
                  permission_reads: usize,
                  discovery: Option<&IssueDiscovery>| {
        let document = IssueDiscoveryRecord {
            source: "issues",
            label: &settings.label,
            base,
            run: run_id,
            error,
            permission_reads,
            discovery,
        };
        write_json_file(&context.directory, "discovery.json", &document)
    };

    let client = &connection.client;
    let policy = &context.policy;
    let legacy = &context.config.discovery.legacy_branch_prefixes;
    let store = LedgerStore::new(client, &policy.state_branch);
    let prefixes: Vec<&str> = std::iter::once(policy.branch_prefix.as_str())
        .chain(legacy.iter().map(String::as_str))
        .collect();
    let (issues, loaded, github, base) = tokio::join!(
        client.labelled_issues(&settings.label),
        store.load(),
        read_github_facts(client, &prefixes),
        default_branch_head(client),
    );
    let gap = match (&issues, &loaded, &base) {
        (Err(error), _, _) => Some(format!("the labelled issues could not be read: {error}")),
        (_, Err(error), _) => Some(format!("the ledger could not be read: {error}")),
        (_, _, Err(error)) => Some(error.clone()),
        (Ok(issues), Ok(_), Ok(_)) => issues
            .gap
            .clone()
            .or_else(|| github.open_pull_requests.gap.clone())
            .or_else(|| github.candidate_branches.gap.clone()),
    };
    if let Some(gap) = gap {
        let message = format!(
            "discovery failed, nothing is proposed: what is labelled or taken is not known in full: {gap}"
        );
        record(base.as_deref().ok(), Some(message.clone()), 0, None)?;
        return Err(StepError::failed(message));
    }
    let (issues, ledger, base) = (
        issues.expect("checked above").items,
        loaded.expect("checked above").ledger,
        base.expect("checked above"),
    );
    let actors = label_actors(&issues, &settings.label);
    let permission_reads = actors.len();
    let permissions = permissions_of(client, actors).await;

    let discovery = discover_issues(
        IssueSnapshot {
            issues: &issues,
            permissions: &permissions,
            ledger: &ledger,
            github: &github,
        },
        &settings,
        &DiscoveryRun {
            policy,
            legacy_branch_prefixes: legacy,
            base: &base,
            run_id,
            review_batch_size: context.config.discovery.review_batch_size,
            now: Utc::now(),
        },
    );
    let candidates_path =
        write_json_file(&context.directory, "candidates.json", &discovery.candidates)?;
    let record_path = record(Some(&base), None, permission_reads, Some(&discovery))?;
    reporter.info(&format!(
        "discover: {} candidate(s) of {} open issue(s) labelled '{}'; {} permission read(s); wrote {} and {}",
        discovery.candidates.len(),
        issues.len(),
        settings.label,
        permission_reads,
        candidates_path.display(),
        record_path.display()
    ));
    let outputs = DiscoverOutputs {
        has_candidates: !discovery.candidates.is_empty(),
        candidates: discovery.candidates.len(),
        discovered: discovery.candidate_ids(),
        candidates_file: candidates_path.display().to_string(),
        requests: connection.report(),
    };
    reporter
        .write_outputs(&outputs)
        .map_err(|error| StepError::failed(format!("cannot write step outputs: {error}")))?;
    reporter
        .write_summary(&summary(&discovery, &settings.label))
        .map_err(|error| StepError::failed(format!("cannot write the step summary: {error}")))?;
    Ok(())
}

fn summary(discovery: &IssueDiscovery, label: &str) -> String {
    let mut text = format!(
        "### klaud discover\n\n{} candidate(s) from {} open issue(s) labelled `{}`.\n\n",
        discovery.candidates.len(),
        discovery.issues.len(),
        cell(label)
    );
    text.push_str(&fate_table(
        &["issue fate", "issues"],
        &discovery.issue_counts,
    ));
    if !discovery.issues.is_empty() {
        let rows: Vec<Vec<String>> = discovery
            .issues
            .iter()
            .map(|report| {
                let fate = serde_json::to_value(report.fate).unwrap_or_default();
                vec![
                    format!("#{}", report.issue),
                    cell(&report.family),
                    format!("`{}`", fate.as_str().unwrap_or_default()),
                    cell(&report.reason),
                ]
            })
            .collect();
        text.push('\n');
        text.push_str(&markdown_table(
            &["issue", "family", "fate", "reason"],
            &rows,
        ));
    }
    text
}
