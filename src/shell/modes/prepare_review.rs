//! `prepare-review` (contract §3.8): the evidence for the planner's read-only overlap review.
//!
//! Reads as: the candidates file (bad input is exit 2 before any request) → the open pull
//! requests on the branches under the prefix (all of them or the step fails), of which only
//! klaud's are kept (a fork's on a branch of the same name is not) → each one's changed files (a few pull requests at
//! once; one that cannot be read is marked `files-complete: false` and never stops the others)
//! → `open-prs.json` and `review-schema.json` in the work directory → outputs `has-candidates`
//! and `review-schema` (the schema as compact JSON, for a structured-output step's
//! `--json-schema`) → summary. It writes nothing to GitHub.

use futures::StreamExt;
use serde::Serialize;
use serde_json::Value;

use super::StepContext;
use super::work_files::write_json_file;
use crate::adapters::github::GitHubClient;
use crate::adapters::github::error::GitHubError;
use crate::adapters::github::models::{PullRequest, PullRequestFile};
use crate::core::candidate::{Candidate, parse_candidates};
use crate::core::prepare_review::{
    ChangedFile, ListedPullRequest, OpenPullRequestEvidence, OpenPullRequestsDocument, evidence_of,
    klaud_candidate_of, review_schema,
};
use crate::core::snapshot::Listed;
use crate::shell::cli::PrepareReviewArgs;
use crate::shell::error::StepError;
use crate::shell::github::{RequestReport, connect};
use crate::shell::outputs::markdown_table;

/// Pull requests whose files are read at the same time.
const FILE_READS_AT_ONCE: usize = 4;

/// The step outputs of `prepare-review`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct PrepareReviewOutputs {
    /// `true` when the candidates file holds at least one candidate, so a review has something
    /// to decide.
    pub has_candidates: bool,
    /// The review's JSON Schema as compact JSON (also `review-schema.json` in `directory`).
    pub review_schema: Value,
    /// JSON object: the GitHub requests of this step and its budgets.
    pub requests: RequestReport,
}

pub async fn run(context: &StepContext, arguments: &PrepareReviewArgs) -> Result<(), StepError> {
    let reporter = &context.reporter;
    let candidates = read_candidates(arguments)?;
    let connection = connect(context, &arguments.github)?;
    let client = &connection.client;
    let repository = client.repository().to_string();

    let (_, open) = client
        .open_pull_requests_under(&[context.policy.branch_prefix.as_str()])
        .await;
    let open = open.into_whole().map_err(|gap| {
        StepError::failed(format!(
            "klaud's open pull requests could not all be listed, so the review would lack its evidence: {gap}"
        ))
    })?;
    let open_count = open.len();
    let klauds: Vec<(ListedPullRequest, String)> = open
        .into_iter()
        .map(listed)
        .filter_map(|pull| {
            let candidate = klaud_candidate_of(&pull, &repository, &context.policy)?.to_string();
            Some((pull, candidate))
        })
        .collect();
    reporter.info(&format!(
        "prepare-review: {} candidate(s); {} of the {open_count} open pull request(s) on klaud's branches are klaud's",
        candidates.len(),
        klauds.len()
    ));

    let mut evidence: Vec<OpenPullRequestEvidence> =
        futures::stream::iter(klauds.iter().map(|(pull, candidate)| async {
            let files = read_files(client, pull.number).await;
            if let Some(reason) = files.incomplete_reason() {
                reporter.warning(&format!(
                    "prepare-review: pull request #{}: files-complete is false: {reason}",
                    pull.number
                ));
            }
            evidence_of(pull, candidate, files, &candidates)
        }))
        .buffered(FILE_READS_AT_ONCE)
        .collect()
        .await;
    evidence.sort_by_key(|record| record.number);

    let document = OpenPullRequestsDocument {
        repository,
        branch_prefix: context.policy.branch_prefix.clone(),
        candidates: candidates.iter().map(|c| c.id.clone()).collect(),
        pull_requests: evidence,
    };
    let schema = review_schema(&candidates);
    let evidence_path = write_json_file(&context.directory, "open-prs.json", &document)?;
    let schema_path = write_json_file(&context.directory, "review-schema.json", &schema)?;
    reporter.info(&format!(
        "wrote {} and {}",
        evidence_path.display(),
        schema_path.display()
    ));
    let requests = connection.report();
    let outputs = PrepareReviewOutputs {
        has_candidates: !candidates.is_empty(),
        review_schema: schema,
        requests,
    };
    reporter
        .write_outputs(&outputs)
        .map_err(|error| StepError::failed(format!("cannot write step outputs: {error}")))?;
    reporter
        .write_summary(&summary(&document, &requests))
        .map_err(|error| StepError::failed(format!("cannot write the step summary: {error}")))?;
    Ok(())
}

fn read_candidates(arguments: &PrepareReviewArgs) -> Result<Vec<Candidate>, StepError> {
    let path = arguments
        .candidates
        .as_ref()
        .ok_or_else(|| StepError::bad_input("candidates", "required by prepare-review"))?;
    let text = std::fs::read_to_string(path).map_err(|error| {
        StepError::bad_input(
            "candidates",
            format!("cannot read {}: {error}", path.display()),
        )
    })?;
    parse_candidates(&text).map_err(|error| StepError::bad_input(error.field, error.message))
}

fn listed(pull: PullRequest) -> ListedPullRequest {
    ListedPullRequest {
        number: pull.number,
        title: pull.title,
        draft: pull.draft,
        author: pull.user.map(|account| account.login),
        head_branch: pull.head.branch,
        head_repository: pull.head.repo.map(|repository| repository.full_name),
        head_sha: pull.head.sha,
        labels: pull.labels.into_iter().map(|label| label.name).collect(),
    }
}

/// One pull request's changed files, complete or with the reason they are not.
async fn read_files(client: &GitHubClient, number: u64) -> Listed<ChangedFile> {
    let changed = |file: PullRequestFile| ChangedFile {
        path: file.filename,
        status: file.status,
        previous_path: file.previous_filename,
    };
    match client.pull_request_files_listing(number).await {
        Ok(files) => files.map(changed),
        Err(error) => Listed::failed(format!(
            "the changed files could not be read ({})",
            failure_kind(&error)
        )),
    }
}

/// What went wrong, without GitHub's message: `open-prs.json` is read by a model, and API
/// bodies stay out of artifacts.
fn failure_kind(error: &GitHubError) -> String {
    match error {
        GitHubError::Status { status, .. } => format!("HTTP {status}"),
        GitHubError::Unavailable { .. } | GitHubError::OutcomeUnknown { .. } => {
            "GitHub unavailable".to_string()
        }
        GitHubError::RateLimitExhausted { .. } | GitHubError::SecondaryRateLimit { .. } => {
            "rate limited".to_string()
        }
        GitHubError::BudgetExhausted { .. } => "read budget used up".to_string(),
        GitHubError::Decode { .. } | GitHubError::GraphQl { .. } => "unreadable answer".to_string(),
        GitHubError::DryRun { .. } => "not sent in a dry run".to_string(),
    }
}

fn summary(document: &OpenPullRequestsDocument, requests: &RequestReport) -> String {
    let rows: Vec<Vec<String>> = document
        .pull_requests
        .iter()
        .map(|pull| {
            vec![
                format!("#{}", pull.number),
                pull.candidate.clone(),
                if pull.draft { "draft" } else { "ready" }.to_string(),
                pull.files.len().to_string(),
                match &pull.files_incomplete_reason {
                    None => "yes".to_string(),
                    Some(reason) => format!("no: {reason}"),
                },
            ]
        })
        .collect();
    let table = if rows.is_empty() {
        "No open klaud pull request.\n".to_string()
    } else {
        markdown_table(
            &["pull request", "candidate", "state", "files", "complete"],
            &rows,
        )
    };
    format!(
        "### klaud prepare-review: {} candidate(s), {} open klaud pull request(s)\n\n{table}\n{}\n",
        document.candidates.len(),
        document.pull_requests.len(),
        requests.summary_line()
    )
}
