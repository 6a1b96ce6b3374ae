//! The facts of one recovery pass, as plain data read from GitHub and the ledger.
//!
//! A snapshot is filled in rounds: first the listings every pass needs (the ledger, klaud's open
//! pull requests, candidate branches and legacy lock refs, the repository's active runs), then
//! only the details the decision asks for ([`crate::core::recover::details_needed`]): commits of
//! the pull requests the plan might act on, sweep runs of their branches, who closed a pull
//! request, the status of a parent run. A pass therefore costs O(live work), not O(history).
//!
//! Every listing says whether it is complete ([`Listed`]) and every single read keeps its error
//! ([`Read`]): "could not see it" is never mistaken for "it does not exist". [`Listed`] is the one
//! type of a listing that may be incomplete, from the GitHub adapter to every mode's decision.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::github_state::RunConclusion;
use super::health::PullRequestChecks;
use super::ledger::Ledger;

/// Why a read from GitHub did not give its fact, in one bounded line (never an API body): a
/// single read that failed, or a listing that is not whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct ReadFailure {
    pub reason: String,
}

impl ReadFailure {
    pub fn new(reason: impl Into<String>) -> Self {
        ReadFailure {
            reason: reason.into(),
        }
    }
}

impl From<String> for ReadFailure {
    fn from(reason: String) -> Self {
        ReadFailure { reason }
    }
}

impl From<&str> for ReadFailure {
    fn from(reason: &str) -> Self {
        ReadFailure::new(reason)
    }
}

/// A single read: the fact, or why it could not be read.
pub type Read<T> = Result<T, ReadFailure>;

/// A listing read from GitHub (pull requests, branches, runs, changed files) that knows whether
/// it holds everything GitHub has.
///
/// The rule: a listing that could not be read to its end is never read as the whole. It is the
/// items read so far (`items`, none when the read failed outright) plus why the rest may be
/// missing (`gap`), and `gap` is `None` only when GitHub listed everything. An answer that
/// needs the whole ("no pull request", "no run left", "that branch is gone") asks
/// [`Listed::whole`] or looks at `gap` first; only what holds of any part (a run listed as
/// active is active) reads `items` alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed<T> {
    pub items: Vec<T>,
    /// Why items may be missing; `None` when the listing is complete.
    pub gap: Option<String>,
}

impl<T> Listed<T> {
    pub fn complete(items: Vec<T>) -> Self {
        Listed { items, gap: None }
    }

    pub fn incomplete(items: Vec<T>, reason: impl Into<String>) -> Self {
        Listed {
            items,
            gap: Some(reason.into()),
        }
    }

    /// A listing that failed outright.
    pub fn failed(reason: impl Into<String>) -> Self {
        Listed::incomplete(Vec::new(), reason)
    }

    pub fn is_complete(&self) -> bool {
        self.gap.is_none()
    }

    /// Why items may be missing, if they may.
    pub fn incomplete_reason(&self) -> Option<&str> {
        self.gap.as_deref()
    }

    /// The items, only when they are all there.
    pub fn whole(&self) -> Option<&[T]> {
        self.is_complete().then_some(self.items.as_slice())
    }

    /// The items to add to, only when they are all there.
    pub fn whole_mut(&mut self) -> Option<&mut Vec<T>> {
        self.gap.is_none().then_some(&mut self.items)
    }

    /// The items when they are all there, else why not.
    pub fn into_whole(self) -> Read<Vec<T>> {
        match self.gap {
            None => Ok(self.items),
            Some(reason) => Err(ReadFailure { reason }),
        }
    }

    /// The same listing, each item turned into another; the gap stays.
    pub fn map<U>(self, turn: impl FnMut(T) -> U) -> Listed<U> {
        Listed {
            items: self.items.into_iter().map(turn).collect(),
            gap: self.gap,
        }
    }
}

impl<T> Default for Listed<T> {
    fn default() -> Self {
        Listed::failed("not read")
    }
}

/// A workflow run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFact {
    pub id: u64,
    /// The workflow's file name (`e2e-tests.yml`).
    pub workflow: String,
    pub head_branch: Option<String>,
    pub head_sha: String,
    /// The run's title (`run-name`), if GitHub gave one.
    pub title: Option<String>,
    pub actor: Option<String>,
    pub triggering_actor: Option<String>,
    /// Not yet `completed`.
    pub active: bool,
    pub conclusion: Option<RunConclusion>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl RunFact {
    /// The run ended with `success` (an unknown conclusion is not one).
    pub fn succeeded(&self) -> bool {
        self.conclusion
            .as_ref()
            .is_some_and(RunConclusion::is_success)
    }
}

/// A job of a run (planner jobs carry the candidate in their name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFact {
    pub name: String,
    pub active: bool,
}

/// A pull request as listed or read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestFact {
    pub number: u64,
    /// GraphQL id (draft/ready toggles).
    pub node_id: String,
    pub head_branch: String,
    pub head_sha: String,
    /// The head branch lives in this repository (not a fork).
    pub from_this_repository: bool,
    pub author: Option<String>,
    pub open: bool,
    pub draft: bool,
    pub merged: bool,
    pub labels: Vec<String>,
    pub created_at: DateTime<Utc>,
}

/// A commit of a pull request with the GitHub accounts GitHub matched to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitFact {
    pub sha: String,
    pub author: Option<String>,
    pub committer: Option<String>,
}

/// The commits of a pull request, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitsFact {
    pub commits: Vec<CommitFact>,
    /// False when GitHub's cap on listed commits (250) may hide some.
    pub complete: bool,
}

/// The issue side of a pull request: who closed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueFact {
    pub number: u64,
    pub open: bool,
    pub closed_by: Option<String>,
    pub merged: bool,
    /// Label names: a closed pull request still shows its status label in the list.
    pub labels: Vec<String>,
}

/// A branch (`refs/heads/<name>`) and where it points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefFact {
    pub name: String,
    pub sha: String,
}

/// A run read on its own (a parent, the lease owner).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    Active,
    /// Completed; `ended_at` is its last update.
    Finished {
        ended_at: DateTime<Utc>,
    },
    /// GitHub has no such run (deleted): it runs nothing.
    Missing,
}

/// Everything one recovery pass knows.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub ledger: Ledger,
    /// Open pull requests whose head branch starts with the candidate prefix (any author, forks
    /// included; the decision sorts out which are klaud's).
    pub open_pull_requests: Listed<PullRequestFact>,
    /// Branches under the candidate prefix and those matching the legacy lock patterns.
    pub refs: Listed<RefFact>,
    /// Every run of the repository that has not completed (queued, in progress or waiting).
    pub active_runs: Listed<RunFact>,
    /// Jobs of active planner runs.
    pub planner_jobs: BTreeMap<u64, Read<Vec<JobFact>>>,
    /// Runs read one by one.
    pub runs: BTreeMap<u64, Read<RunState>>,
    /// Commits of pull requests, by number.
    pub commits: BTreeMap<u64, Read<CommitsFact>>,
    /// Sweep runs of a candidate branch (any status), by branch.
    pub sweeps: BTreeMap<String, Read<Listed<RunFact>>>,
    /// The issue side of pull requests, by number.
    pub issues: BTreeMap<u64, Read<IssueFact>>,
    /// Every pull request (any state) of a branch of this repository, by branch.
    pub branch_pull_requests: BTreeMap<String, Read<Vec<PullRequestFact>>>,
    /// Commit messages by sha (legacy lock refs whose name does not carry their parent run).
    pub commit_messages: BTreeMap<String, Read<String>>,
    /// The default branch, read only when a parked session is resumed.
    pub default_branch: Option<Read<String>>,
    /// The issue a candidate came from (contract §13), by candidate: read from its record,
    /// only for an `issue-<n>` candidate that is reconciled, parked or swept.
    pub candidate_issues: BTreeMap<String, Read<CandidateIssue>>,
    /// klaud's open pull requests with their mergeability and the checks on their heads
    /// (contract §12), read with the open pull request listing when after-care may act on the
    /// ledger's records (or the pass keeps the dashboard); `None` when not read.
    pub pull_request_checks: Option<Listed<PullRequestChecks>>,
}

/// The issue a candidate came from, and whether it is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CandidateIssue {
    /// Its record names no issue.
    NoIssue,
    Open(u64),
    Closed(u64),
}

/// What the decision needs read before it can decide (see `recover::details_needed`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DetailRequests {
    pub runs: std::collections::BTreeSet<u64>,
    pub planner_jobs: std::collections::BTreeSet<u64>,
    pub commits: std::collections::BTreeSet<u64>,
    pub sweeps: std::collections::BTreeSet<String>,
    pub issues: std::collections::BTreeSet<u64>,
    pub branch_pull_requests: std::collections::BTreeSet<String>,
    pub commit_messages: std::collections::BTreeSet<String>,
    pub default_branch: bool,
    pub candidate_issues: std::collections::BTreeSet<String>,
}

impl DetailRequests {
    pub fn is_empty(&self) -> bool {
        self == &DetailRequests::default()
    }

    /// How many reads (at least) these requests cost.
    pub fn count(&self) -> usize {
        self.runs.len()
            + self.planner_jobs.len()
            + self.commits.len()
            + self.sweeps.len()
            + self.issues.len()
            + self.branch_pull_requests.len()
            + self.commit_messages.len()
            + usize::from(self.default_branch)
            + 2 * self.candidate_issues.len()
    }
}

impl Snapshot {
    /// Removes from `requests` what this snapshot already holds (read or failed).
    pub fn unanswered(&self, mut requests: DetailRequests) -> DetailRequests {
        requests.runs.retain(|id| !self.runs.contains_key(id));
        requests
            .planner_jobs
            .retain(|id| !self.planner_jobs.contains_key(id));
        requests
            .commits
            .retain(|number| !self.commits.contains_key(number));
        requests
            .sweeps
            .retain(|branch| !self.sweeps.contains_key(branch));
        requests
            .issues
            .retain(|number| !self.issues.contains_key(number));
        requests
            .branch_pull_requests
            .retain(|branch| !self.branch_pull_requests.contains_key(branch));
        requests
            .commit_messages
            .retain(|sha| !self.commit_messages.contains_key(sha));
        requests.default_branch &= self.default_branch.is_none();
        requests
            .candidate_issues
            .retain(|id| !self.candidate_issues.contains_key(id));
        requests
    }
}
