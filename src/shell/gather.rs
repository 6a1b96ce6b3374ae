//! Building the snapshot of a recovery pass from GitHub and the ledger.
//!
//! First the listings every pass needs, read in parallel: the ledger and the branches under the
//! candidate and lock prefixes, then the open pull requests on the candidate branches (with
//! their mergeability and checks when after-care may act on the ledger's records, or the pass
//! keeps the dashboard), beside the repository's active runs (queued, then in progress, then
//! waiting: read in the order runs move, so a run changing state between two listings is still
//! seen once). Then, in rounds, exactly the details the decision asks for
//! (`core::recover::details_needed`), each round's reads in parallel: runs, jobs and sweep
//! listings by REST; a branch's pull requests, a pull request (who closed it, its commits) and a
//! commit's message in batched GraphQL reads, many objects a request. A pull request read
//! through its branch brings who closed it and its commits along, so later rounds need not ask.
//! A listing that fails or is cut short is kept as incomplete, never as a shorter truth.

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt;
use futures::future::join_all;

use crate::adapters::github::GitHubClient;
use crate::adapters::github::actions::RunFilter;
use crate::adapters::github::batch::{DetailAnswers, DetailBatch, PullRequestCommits};
use crate::adapters::github::error::GitHubError;
use crate::adapters::github::models::{Commit, Issue, Job, PullRequest, WorkflowRun};
use crate::adapters::ledger_store::{LedgerError, LedgerStore, LoadedLedger};
use crate::core::github_state::RunStatus;
use crate::core::health::PullRequestChecks;
use crate::core::policy::Policy;
use crate::core::recover::aftercare::reads_checks;
use crate::core::recover::{RecoveryContext, details_needed, listing_prefixes};
use crate::core::session::request::issue_task;
use crate::core::snapshot::{
    CandidateIssue, CommitFact, CommitsFact, DetailRequests, IssueFact, JobFact, Listed,
    PullRequestFact, Read, ReadFailure, RefFact, RunFact, RunState, Snapshot,
};
use crate::core::text::bounded;
use crate::shell::dashboard::{DashboardRead, TickReading, read_dashboard};
use crate::shell::health::{HealthSnapshot, health_of_open, klaud_pull_request_checks};

/// Reads of one round sent at once.
const READ_CONCURRENCY: usize = 8;
/// Rounds of detail reads; the longest chain is a session without an open pull request: its
/// parent run, its branch's pull requests, who closed one, its sweeps, its commits.
const DETAIL_ROUNDS: usize = 6;
/// GitHub lists at most this many commits of a pull request.
const LISTED_COMMITS_CAP: usize = 250;
/// Statuses of runs that have not completed, in the order a run moves through them.
const ACTIVE_STATUSES: [RunStatus; 3] =
    [RunStatus::Queued, RunStatus::InProgress, RunStatus::Waiting];

/// The snapshot, and the ledger as read (its blob sha is what the first write must name).
pub struct Gathered {
    pub snapshot: Snapshot,
    pub loaded: LoadedLedger,
    /// The dashboard as read, when the pass keeps it; its accepted ticks are already applied
    /// to the snapshot's ledger, so the decision sees what they ask.
    pub dashboard: Option<DashboardRead>,
    /// What the dashboard's health section is decided from, when the pass keeps the dashboard.
    pub health: Option<HealthSnapshot>,
}

/// Reads everything the decision needs (with `dashboard`, the dashboard's ticks too); only an
/// unreadable ledger is an error.
pub async fn gather_recovery_facts(
    client: &GitHubClient,
    store: &LedgerStore<'_>,
    policy: &Policy,
    context: &RecoveryContext,
    dashboard: bool,
) -> Result<Gathered, LedgerError> {
    let prefixes = listing_prefixes(policy);
    let listings = async {
        let (loaded, refs) = tokio::join!(store.load(), candidate_refs(client, policy, &prefixes));
        let loaded = loaded?;
        let reads = match (dashboard, reads_checks(policy, &loaded.ledger)) {
            (true, _) => PullRequestReads::Health,
            (false, true) => PullRequestReads::Checks,
            (false, false) => PullRequestReads::Listing,
        };
        let open = open_pull_requests(client, policy, &refs, reads).await;
        Ok::<_, LedgerError>((loaded, refs, open))
    };
    let (listings, runs) = tokio::join!(listings, active_runs_and_planner_jobs(client, policy));
    let (loaded, refs, (pulls, checks, health)) = listings?;
    let (runs, planner_jobs) = runs;
    let mut snapshot = Snapshot {
        ledger: loaded.ledger.clone(),
        open_pull_requests: pulls,
        refs,
        active_runs: runs,
        planner_jobs,
        pull_request_checks: checks,
        ..Snapshot::default()
    };
    let dashboard = match dashboard {
        true => Some(read_dashboard(client, policy, &loaded.ledger, TickReading::Act).await),
        false => None,
    };
    if let Some(read) = &dashboard {
        read.changes()
            .apply(&mut snapshot.ledger, context.own_run, context.now);
    }
    for _ in 0..DETAIL_ROUNDS {
        let needs = details_needed(&snapshot, policy, context);
        if needs.is_empty() {
            break;
        }
        read_details(client, policy, &mut snapshot, needs).await;
    }
    Ok(Gathered {
        snapshot,
        loaded,
        dashboard,
        health,
    })
}

/// What is read with the open pull requests.
enum PullRequestReads {
    /// The pull requests alone.
    Listing,
    /// Their mergeability and the checks on their heads too, for after-care (the same queries,
    /// a head's checks paged past 100).
    Checks,
    /// Their checks and the jobs of their active sweep runs, for the dashboard's health.
    Health,
}

/// The refs under the listing prefixes.
async fn candidate_refs(
    client: &GitHubClient,
    policy: &Policy,
    prefixes: &[String],
) -> Listed<RefFact> {
    let listings = join_all(
        prefixes
            .iter()
            .map(|prefix| client.branches_starting_with(prefix)),
    )
    .await;
    branch_listing(listings, policy)
}

/// The open pull requests on the candidate branches among `refs`
/// (`GitHubClient::open_pull_requests_on`): what this reads follows klaud's branches, not the
/// repository's open pull requests. With checks, klaud's among them with their mergeability and
/// checks (`Snapshot::pull_request_checks`); with health, the jobs of their active sweep runs
/// too.
async fn open_pull_requests(
    client: &GitHubClient,
    policy: &Policy,
    refs: &Listed<RefFact>,
    reads: PullRequestReads,
) -> (
    Listed<PullRequestFact>,
    Option<Listed<PullRequestChecks>>,
    Option<HealthSnapshot>,
) {
    let candidate_branches = Listed {
        items: refs
            .items
            .iter()
            .filter(|reference| reference.name.starts_with(&policy.branch_prefix))
            .map(|reference| reference.name.clone())
            .collect(),
        gap: refs.gap.clone(),
    };
    let repository = client.repository().to_string();
    let (pulls, checks, health) = match reads {
        PullRequestReads::Health => {
            let open = client
                .open_pull_requests_with_checks_on(&candidate_branches)
                .await;
            let health = health_of_open(client, policy, &open).await;
            (open.pulls, Some(health.pulls.clone()), Some(health))
        }
        PullRequestReads::Checks => {
            let open = client
                .open_pull_requests_with_checks_on(&candidate_branches)
                .await;
            let checks = klaud_pull_request_checks(&open, &repository, policy);
            (open.pulls, Some(checks), None)
        }
        PullRequestReads::Listing => (
            client.open_pull_requests_on(&candidate_branches).await,
            None,
            None,
        ),
    };
    let pulls = pulls.map(|pull| pull_request_fact(&pull, &repository));
    (pulls, checks, health)
}

/// Every run of the repository that has not completed, and the jobs of the planner runs among
/// them (they say which candidates are running).
async fn active_runs_and_planner_jobs(
    client: &GitHubClient,
    policy: &Policy,
) -> (Listed<RunFact>, BTreeMap<u64, Read<Vec<JobFact>>>) {
    let runs = active_runs(client).await;
    let planner_runs: Vec<u64> = runs
        .items
        .iter()
        .filter(|run| run.workflow == policy.planner_workflow)
        .map(|run| run.id)
        .collect();
    let jobs = futures::stream::iter(planner_runs.into_iter().map(|id| async move {
        let jobs = client
            .run_jobs(id)
            .await
            .map(|jobs| jobs.iter().map(job_fact).collect())
            .map_err(|error| failed_read(&error));
        (id, jobs)
    }))
    .buffer_unordered(READ_CONCURRENCY)
    .collect()
    .await;
    (runs, jobs)
}

/// Every run of the repository that has not completed.
async fn active_runs(client: &GitHubClient) -> Listed<RunFact> {
    let mut runs: Vec<RunFact> = Vec::new();
    let mut gaps = Vec::new();
    for status in ACTIVE_STATUSES {
        let filter = RunFilter {
            status: Some(status.clone()),
            ..RunFilter::default()
        };
        let listed = match client.workflow_runs(&filter).await {
            Ok(listed) => {
                gaps.extend(listed.gap);
                listed.items
            }
            Err(error) => {
                gaps.push(format!("{status} runs: {}", describe(&error)));
                Vec::new()
            }
        };
        for run in listed {
            if !runs.iter().any(|known| known.id == run.id) {
                runs.push(run_fact(&run));
            }
        }
    }
    match gaps.is_empty() {
        true => Listed::complete(runs),
        false => Listed::incomplete(runs, gaps.join("; ")),
    }
}

fn branch_listing(
    listings: Vec<Result<Vec<crate::adapters::github::models::GitReference>, GitHubError>>,
    policy: &Policy,
) -> Listed<RefFact> {
    let mut refs = Vec::new();
    let mut gaps = Vec::new();
    for listing in listings {
        match listing {
            Ok(references) => refs.extend(references.into_iter().filter_map(|reference| {
                let name = reference.name.strip_prefix("refs/heads/")?.to_string();
                (name.starts_with(&policy.branch_prefix) || policy.is_legacy_lock(&name)).then_some(
                    RefFact {
                        name,
                        sha: reference.object.sha,
                    },
                )
            })),
            Err(error) => gaps.push(describe(&error)),
        }
    }
    match gaps.is_empty() {
        true => Listed::complete(refs),
        false => Listed::incomplete(refs, gaps.join("; ")),
    }
}

/// One detail read by REST.
enum Detail {
    Run(u64, Read<RunState>),
    Jobs(u64, Read<Vec<JobFact>>),
    Sweeps(String, Read<Listed<RunFact>>),
    DefaultBranch(Read<String>),
    CandidateIssue(String, Read<CandidateIssue>),
}

/// The issue candidate `id` came from: its record on the state branch, then the issue's state.
async fn candidate_issue(client: &GitHubClient, policy: &Policy, id: &str) -> Read<CandidateIssue> {
    let store = LedgerStore::new(client, &policy.state_branch);
    let record = store
        .read_record(id)
        .await
        .map_err(|error| ReadFailure::new(bounded(&error.to_string(), 300)))?;
    let Some(number) = record
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|record| issue_task(&record))
        .map(|task| task.number)
    else {
        return Ok(CandidateIssue::NoIssue);
    };
    match client.standalone_issue(number).await {
        Ok(Some(issue)) if issue.state.is_open() => Ok(CandidateIssue::Open(number)),
        Ok(Some(_)) => Ok(CandidateIssue::Closed(number)),
        Ok(None) => Err(ReadFailure::new(format!("issue #{number} does not exist"))),
        Err(error) => Err(failed_read(&error)),
    }
}

async fn read_details(
    client: &GitHubClient,
    policy: &Policy,
    snapshot: &mut Snapshot,
    needs: DetailRequests,
) {
    let repository = client.repository().to_string();
    let repository = repository.as_str();
    let mut reads: Vec<futures::future::BoxFuture<'_, Detail>> = Vec::new();
    for id in needs.runs {
        reads.push(Box::pin(async move {
            let state = match client.workflow_run(id).await {
                Ok(run) if run.is_active() => Ok(RunState::Active),
                Ok(run) => Ok(RunState::Finished {
                    ended_at: run.updated_at,
                }),
                Err(error) if error.is_not_found() => Ok(RunState::Missing),
                Err(error) => Err(failed_read(&error)),
            };
            Detail::Run(id, state)
        }));
    }
    for id in needs.planner_jobs {
        reads.push(Box::pin(async move {
            let jobs = client
                .run_jobs(id)
                .await
                .map(|jobs| jobs.iter().map(job_fact).collect());
            Detail::Jobs(id, jobs.map_err(|error| failed_read(&error)))
        }));
    }
    for branch in needs.sweeps {
        let Some(sweep) = &policy.sweep_workflow else {
            // No sweep workflow: no sweep runs, and no read.
            reads.push(Box::pin(async move {
                Detail::Sweeps(branch, Ok(Listed::complete(Vec::new())))
            }));
            continue;
        };
        let filter = RunFilter {
            branch: Some(branch.clone()),
            ..RunFilter::workflow(sweep)
        };
        reads.push(Box::pin(async move {
            let listed = listed_runs(client, &filter).await;
            Detail::Sweeps(branch, listed)
        }));
    }
    for id in needs.candidate_issues {
        reads.push(Box::pin(async move {
            let issue = candidate_issue(client, policy, &id).await;
            Detail::CandidateIssue(id, issue)
        }));
    }
    if needs.default_branch {
        reads.push(Box::pin(async move {
            let branch = client
                .repository_info()
                .await
                .map(|repository| repository.default_branch);
            Detail::DefaultBranch(branch.map_err(|error| failed_read(&error)))
        }));
    }
    let batch = DetailBatch {
        branch_pull_requests: needs.branch_pull_requests,
        pull_requests: needs.issues.union(&needs.commits).copied().collect(),
        commit_messages: needs.commit_messages,
    };
    let (details, answers) = tokio::join!(
        futures::stream::iter(reads)
            .buffer_unordered(READ_CONCURRENCY)
            .collect::<Vec<Detail>>(),
        client.read_detail_batch(&batch),
    );
    take_batch(
        client,
        snapshot,
        &needs.issues,
        &needs.commits,
        answers,
        repository,
    )
    .await;
    for detail in details {
        match detail {
            Detail::Run(id, state) => {
                snapshot.runs.insert(id, state);
            }
            Detail::Jobs(id, jobs) => {
                snapshot.planner_jobs.insert(id, jobs);
            }
            Detail::Sweeps(branch, runs) => {
                snapshot.sweeps.insert(branch, runs);
            }
            Detail::DefaultBranch(branch) => snapshot.default_branch = Some(branch),
            Detail::CandidateIssue(id, issue) => {
                snapshot.candidate_issues.insert(id, issue);
            }
        }
    }
}

/// What the batched read answered, into the snapshot: each object asked for, and what came
/// along (who closed each pull request of a branch, and its commits) where the snapshot does not
/// hold it yet. A pull request with more commits than one batch reads, or with a commit whose
/// author or committer GraphQL names no user for, is read again by REST.
async fn take_batch(
    client: &GitHubClient,
    snapshot: &mut Snapshot,
    issues: &BTreeSet<u64>,
    commits: &BTreeSet<u64>,
    answers: DetailAnswers,
    repository: &str,
) {
    for (branch, pulls) in answers.branch_pull_requests {
        let pulls = match pulls {
            Ok(pulls) => pulls,
            Err(error) => {
                snapshot
                    .branch_pull_requests
                    .insert(branch, Err(failed_read(&error)));
                continue;
            }
        };
        for detail in &pulls {
            let number = detail.pull.number;
            snapshot
                .issues
                .entry(number)
                .or_insert_with(|| Ok(issue_fact(number, detail.issue.clone())));
            if read_whole(&detail.commits) {
                snapshot
                    .commits
                    .entry(number)
                    .or_insert_with(|| Ok(commits_fact(&detail.commits)));
            }
        }
        let facts = pulls
            .iter()
            .map(|detail| pull_request_fact(&detail.pull, repository))
            .collect();
        snapshot.branch_pull_requests.insert(branch, Ok(facts));
    }
    let mut beyond_the_batch = Vec::new();
    for (number, detail) in answers.pull_requests {
        if issues.contains(&number) {
            let issue = detail
                .as_ref()
                .map(|detail| issue_fact(number, detail.issue.clone()))
                .map_err(failed_read);
            snapshot.issues.insert(number, issue);
        }
        if commits.contains(&number) {
            match detail {
                Ok(detail) if !read_whole(&detail.commits) => beyond_the_batch.push(number),
                Ok(detail) => {
                    snapshot
                        .commits
                        .insert(number, Ok(commits_fact(&detail.commits)));
                }
                Err(error) => {
                    snapshot.commits.insert(number, Err(failed_read(&error)));
                }
            }
        }
    }
    let long: Vec<(u64, Read<CommitsFact>)> = futures::stream::iter(
        beyond_the_batch
            .into_iter()
            .map(|number| async move { (number, listed_commits(client, number).await) }),
    )
    .buffer_unordered(READ_CONCURRENCY)
    .collect()
    .await;
    snapshot.commits.extend(long);
    for (sha, message) in answers.commit_messages {
        snapshot
            .commit_messages
            .insert(sha, message.map_err(|error| failed_read(&error)));
    }
}

/// Whether the batch read a pull request's commits as REST would: every one of them, each with
/// the accounts of its author and committer. GraphQL names only a `User` there, so a commit by a
/// GitHub App (a bot that is not a user account) comes back without one and is read by REST.
pub fn read_whole(commits: &PullRequestCommits) -> bool {
    commits.complete()
        && commits
            .commits
            .iter()
            .all(|commit| commit.author.is_some() && commit.committer.is_some())
}

pub fn commits_fact(commits: &PullRequestCommits) -> CommitsFact {
    CommitsFact {
        complete: commits.complete(),
        commits: commits.commits.iter().cloned().map(commit_fact).collect(),
    }
}

/// A pull request's commits read by REST: complete when GitHub listed fewer than its cap.
pub async fn listed_commits(client: &GitHubClient, number: u64) -> Read<CommitsFact> {
    client
        .pull_request_commits(number)
        .await
        .map(|commits| CommitsFact {
            complete: commits.len() < LISTED_COMMITS_CAP,
            commits: commits.into_iter().map(commit_fact).collect(),
        })
        .map_err(|error| failed_read(&error))
}

/// The runs `filter` lists, as facts; a workflow file that does not exist has no runs.
pub async fn listed_runs(client: &GitHubClient, filter: &RunFilter) -> Read<Listed<RunFact>> {
    match client.workflow_runs(filter).await {
        Ok(runs) => Ok(runs.map(|run| run_fact(&run))),
        Err(error) if error.is_not_found() => Ok(Listed::complete(Vec::new())),
        Err(error) => Err(failed_read(&error)),
    }
}

fn commit_fact(commit: Commit) -> CommitFact {
    CommitFact {
        sha: commit.sha,
        author: commit.author.map(|account| account.login),
        committer: commit.committer.map(|account| account.login),
    }
}

/// klaud's view of a pull request.
pub fn pull_request_fact(pull: &PullRequest, repository: &str) -> PullRequestFact {
    PullRequestFact {
        number: pull.number,
        node_id: pull.node_id.clone(),
        head_branch: pull.head.branch.clone(),
        head_sha: pull.head.sha.clone(),
        from_this_repository: pull
            .head
            .repo
            .as_ref()
            .is_some_and(|repo| repo.full_name.eq_ignore_ascii_case(repository)),
        author: pull.user.as_ref().map(|user| user.login.clone()),
        open: pull.state.is_open(),
        draft: pull.draft,
        merged: pull.merged_at.is_some(),
        labels: pull.labels.iter().map(|label| label.name.clone()).collect(),
        created_at: pull.created_at,
    }
}

/// The issue side of pull request `number`: open, merged, who closed it, and its labels.
pub fn issue_fact(number: u64, issue: Issue) -> IssueFact {
    IssueFact {
        number,
        open: issue.state.is_open(),
        closed_by: issue.closed_by.map(|account| account.login),
        merged: issue
            .pull_request
            .as_ref()
            .is_some_and(|pull| pull.merged_at.is_some()),
        labels: issue.labels.into_iter().map(|label| label.name).collect(),
    }
}

/// klaud's view of a run; the workflow is its file name.
pub fn run_fact(run: &WorkflowRun) -> RunFact {
    RunFact {
        id: run.id,
        workflow: run.path.rsplit('/').next().unwrap_or(&run.path).to_string(),
        head_branch: run.head_branch.clone(),
        head_sha: run.head_sha.clone(),
        title: run.display_title.clone(),
        actor: run.actor.as_ref().map(|account| account.login.clone()),
        triggering_actor: run
            .triggering_actor
            .as_ref()
            .map(|account| account.login.clone()),
        active: run.is_active(),
        conclusion: run.conclusion.clone(),
        created_at: run.created_at,
        updated_at: run.updated_at,
    }
}

fn job_fact(job: &Job) -> JobFact {
    JobFact {
        name: job.name.clone(),
        active: !job.status.is_completed(),
    }
}

/// An error as a fact: method, path, status and GitHub's bounded message (never a token).
/// The pull requests of `branch` (any state) as facts; a failed listing fails the step.
pub async fn branch_pull_requests(
    client: &GitHubClient,
    branch: &str,
) -> Result<Vec<PullRequestFact>, crate::shell::error::StepError> {
    Ok(client
        .pull_requests_for_branch(branch)
        .await
        .map_err(|error| {
            crate::shell::error::StepError::failed(format!(
                "the pull requests of {branch} could not be listed: {}",
                describe(&error)
            ))
        })?
        .iter()
        .map(|pull| pull_request_fact(pull, client.repository()))
        .collect())
}

pub fn describe(error: &GitHubError) -> String {
    bounded(&error.to_string(), 300)
}

/// A failed read as the snapshot keeps it.
pub fn failed_read(error: &GitHubError) -> ReadFailure {
    ReadFailure::new(describe(error))
}
