//! Closing the pull requests a validated session superseded (contract §12), after `finish`'s
//! ledger write marked them: the pull requests with their commits in one batched GraphQL read,
//! the sweep runs on each branch since it was validated (one listing each, several at once) →
//! `core::finish_supersede` re-checks every §5 guard → the records a guard left for good are
//! written to the ledger (compare-and-swap, on the document just written) → the closing groups
//! go to the one executor, each behind the re-check of its pull request as examined. A read that
//! failed closes nothing: the record stays superseded for the next `recover`.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, Utc};
use futures::StreamExt;
use serde::Serialize;

use crate::adapters::github::GitHubClient;
use crate::adapters::github::actions::RunFilter;
use crate::adapters::github::batch::DetailBatch;
use crate::adapters::ledger_store::{LedgerDecision, LedgerStore, LoadedLedger};
use crate::core::aftercare::AftercareRecord;
use crate::core::finish::FinishPlan;
use crate::core::finish_supersede::{
    Supersede, SupersedeVerdict, SupersededFacts, decide_superseded, record_left, to_close,
};
use crate::core::plan::ActionGroup;
use crate::core::policy::Policy;
use crate::core::snapshot::{CommitsFact, Listed, PullRequestFact, Read, ReadFailure, RunFact};
use crate::shell::execute::{Clearance, ExecuteSettings, GroupRecord, RefDeletionPath, execute};
use crate::shell::gather::{
    commits_fact, failed_read, listed_commits, listed_runs, pull_request_fact, read_whole,
};
use crate::shell::github::GitHubConnection;

/// Sweep listings sent at once.
const READ_CONCURRENCY: usize = 4;

/// What became of the pull requests the session superseded.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Superseding {
    /// Each pull request with its verdict and, for one closed, what the executor did.
    pub pull_requests: Vec<SupersededReport>,
    /// The second ledger write (the pull requests left for good): `written`, `unchanged`,
    /// `not-written` (dry run), or why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ledger: Option<String>,
    /// Why branches were deleted by REST after a fresh re-read (GitHub does not offer the
    /// conditional mutation), when they were.
    #[serde(skip)]
    pub rest_fallback: Option<String>,
}

/// One superseded pull request in `finish.json`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct SupersededReport {
    #[serde(flatten)]
    pub decided: Supersede,
    /// For one to close: `closed`, or the step that stopped and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
}

impl SupersededReport {
    /// True when it was closed as superseded in this step.
    pub fn closed(&self) -> bool {
        self.result.as_deref() == Some("closed")
    }
}

impl Superseding {
    /// The pull requests closed as superseded in this step.
    pub fn closed(&self) -> Vec<u64> {
        self.pull_requests
            .iter()
            .filter(|report| report.closed())
            .map(|report| report.decided.pull_request)
            .collect()
    }

    /// One line per pull request, for the log and the summary.
    pub fn lines(&self) -> Vec<String> {
        self.pull_requests
            .iter()
            .map(|report| {
                let decided = &report.decided;
                let what = match (&decided.verdict, &report.result) {
                    (SupersedeVerdict::Close, Some(result)) => result.clone(),
                    (SupersedeVerdict::Close, None) => "to close".into(),
                    (SupersedeVerdict::Left { reason }, _) => {
                        format!("left to its maintainers for good: {reason}")
                    }
                    (SupersedeVerdict::Later { reason }, _) => {
                        format!("not closed now ({reason}): the next recover closes it")
                    }
                    (SupersedeVerdict::Gone { reason }, _) => reason.clone(),
                };
                let kept = decided
                    .branch_kept
                    .as_deref()
                    .map(|kept| format!("; {kept}"))
                    .unwrap_or_default();
                format!(
                    "#{} ({}) superseded by #{}: {what}{kept}",
                    decided.pull_request, decided.candidate, decided.by
                )
            })
            .collect()
    }
}

/// Closes what `plan` superseded in `written` (the ledger as `finish` just wrote it). `hold`
/// says why nothing is closed this time — the newer pull request's own changes stopped or were
/// dropped by their re-check — leaving every record superseded for the next `recover`.
pub async fn supersede(
    connection: &GitHubConnection,
    store: &LedgerStore<'_>,
    written: LoadedLedger,
    plan: &FinishPlan,
    policy: &Policy,
    now: DateTime<Utc>,
    hold: Option<String>,
) -> Superseding {
    let records: Vec<AftercareRecord> = to_close(&written.ledger, plan)
        .into_iter()
        .cloned()
        .collect();
    let (Some(by), false) = (plan.pull_request, records.is_empty()) else {
        return Superseding::default();
    };
    if let Some(reason) = hold {
        let later = |record: &AftercareRecord| SupersededReport {
            decided: Supersede {
                pull_request: record.pull_request,
                candidate: record.candidate.clone(),
                by,
                verdict: SupersedeVerdict::Later {
                    reason: format!("#{by}'s own changes did not all land ({reason})"),
                },
                branch_kept: None,
                group: None,
            },
            result: None,
        };
        return Superseding {
            pull_requests: records.iter().map(later).collect(),
            ..Superseding::default()
        };
    }
    let facts = read_facts(&connection.client, policy, &records, now).await;
    let decided: Vec<Supersede> = records
        .iter()
        .map(|record| {
            let facts = &facts[&record.pull_request];
            decide_superseded(record, facts, &written.ledger, policy, by)
        })
        .collect();
    let dry_run = connection.client.records_writes();
    let ledger = record_left_ones(store, written, &decided, (by, dry_run), now).await;
    let groups: Vec<ActionGroup> = decided.iter().filter_map(|d| d.group.clone()).collect();
    let execution = if groups.is_empty() {
        None
    } else {
        let settings = ExecuteSettings {
            bot: policy.bot.clone(),
            now,
            cancel_wait: std::time::Duration::ZERO,
            reserve: 0,
        };
        let clearances = vec![Clearance::Cleared; groups.len()];
        Some(execute(connection, &settings, &groups, &clearances).await)
    };
    let result_of = |decided: &Supersede| {
        let group = decided.group.as_ref()?;
        let record = execution
            .as_ref()?
            .groups
            .iter()
            .find(|record| record.subject == group.subject)?;
        Some(group_result(record))
    };
    Superseding {
        pull_requests: decided
            .iter()
            .map(|decided| SupersededReport {
                result: result_of(decided),
                decided: decided.clone(),
            })
            .collect(),
        ledger,
        rest_fallback: execution.and_then(|execution| match execution.ref_deletions {
            RefDeletionPath::RestFallback(reason) => Some(reason),
            _ => None,
        }),
    }
}

/// `closed`, or the step that stopped the group and why.
fn group_result(record: &GroupRecord) -> String {
    match record.stopped_at() {
        None => "closed".into(),
        Some(stopped) => format!("{}: {}", stopped.description, stopped.result.describe()),
    }
}

/// The second ledger write, when a guard left a pull request for good; `None` when there is
/// nothing to write.
async fn record_left_ones(
    store: &LedgerStore<'_>,
    written: LoadedLedger,
    decided: &[Supersede],
    (by, dry_run): (u64, bool),
    now: DateTime<Utc>,
) -> Option<String> {
    record_left(&written.ledger, decided, by, now)?;
    let update = store
        .update_starting_from(Some(written), |ledger| {
            match record_left(ledger, decided, by, now) {
                Some(next) => LedgerDecision::Write {
                    ledger: next,
                    message: format!("finish: after-care leaves pull requests superseded by #{by}"),
                    result: (),
                },
                None => LedgerDecision::Keep(()),
            }
        })
        .await;
    Some(match update {
        Ok(update) if !update.wrote => "unchanged".into(),
        Ok(_) if dry_run => "not-written".into(),
        Ok(_) => "written".into(),
        Err(error) => format!("failed ({error}): the records stay superseded"),
    })
}

/// The pull requests with their commits (one batched read, a long listing or a GitHub App's
/// commit read again by REST) and the sweep runs on their branches since they were validated.
async fn read_facts(
    client: &GitHubClient,
    policy: &Policy,
    records: &[AftercareRecord],
    now: DateTime<Utc>,
) -> BTreeMap<u64, SupersededFacts> {
    let batch = DetailBatch {
        pull_requests: records.iter().map(|record| record.pull_request).collect(),
        ..DetailBatch::default()
    };
    let mut answers = client.read_detail_batch(&batch).await.pull_requests;
    let repository = client.repository().to_string();
    let mut read: BTreeMap<u64, (Read<PullRequestFact>, Read<CommitsFact>)> = BTreeMap::new();
    let mut again = BTreeSet::new();
    for record in records {
        let number = record.pull_request;
        let entry = match answers.remove(&number) {
            Some(Ok(detail)) if read_whole(&detail.commits) => (
                Ok(pull_request_fact(&detail.pull, &repository)),
                Ok(commits_fact(&detail.commits)),
            ),
            Some(Ok(detail)) => {
                again.insert(number);
                (
                    Ok(pull_request_fact(&detail.pull, &repository)),
                    Err(ReadFailure::new("not read yet")),
                )
            }
            Some(Err(error)) => (Err(failed_read(&error)), Err(failed_read(&error))),
            None => {
                let missing = ReadFailure::new(format!("#{number} was not answered"));
                (Err(missing.clone()), Err(missing))
            }
        };
        read.insert(number, entry);
    }
    for number in again {
        let commits = listed_commits(client, number).await;
        if let Some(entry) = read.get_mut(&number) {
            entry.1 = commits;
        }
    }
    let sweeps: BTreeMap<u64, Read<Listed<RunFact>>> =
        futures::stream::iter(records.iter().map(|record| async move {
            let branch = policy.candidate_branch(&record.candidate);
            (
                record.pull_request,
                sweeps_since(client, policy, &branch, (record.validated_at, now)).await,
            )
        }))
        .buffer_unordered(READ_CONCURRENCY)
        .collect()
        .await;
    read.into_iter()
        .map(|(number, (pull, commits))| {
            let sweeps = sweeps
                .get(&number)
                .cloned()
                .unwrap_or_else(|| Err(ReadFailure::new("the sweep runs were not listed")));
            (
                number,
                SupersededFacts {
                    pull,
                    commits,
                    sweeps,
                },
            )
        })
        .collect()
}

/// The sweep runs on `branch` created since `since` (none without a sweep workflow, or when
/// its file does not exist).
async fn sweeps_since(
    client: &GitHubClient,
    policy: &Policy,
    branch: &str,
    (since, now): (DateTime<Utc>, DateTime<Utc>),
) -> Read<Listed<RunFact>> {
    let Some(sweep) = &policy.sweep_workflow else {
        return Ok(Listed::complete(Vec::new()));
    };
    let filter = RunFilter {
        branch: Some(branch.to_string()),
        created: Some((since, now + Duration::hours(1))),
        ..RunFilter::workflow(sweep)
    };
    listed_runs(client, &filter).await
}
