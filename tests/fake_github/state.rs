//! The repository's state as plain, serializable data: git objects and refs, pull requests (which
//! are also issues), issues that are not pull requests, the edit history of their bodies,
//! comments, labels, commit statuses, workflows, runs, jobs and dispatches, the collaborators'
//! roles and the owning organization's members, plus the tokens the server accepts.
//! `GET/PUT /_fake/state` dump and load exactly this document.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::clock::Timestamp;

/// One repository on a fake GitHub.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RepoState {
    pub owner: String,
    pub name: String,
    pub repository_id: u64,
    pub default_branch: String,
    pub fork: bool,
    /// Pinned "now" for everything the server creates; `None` follows the system clock.
    pub now: Option<Timestamp>,
    /// Bearer token → login.
    pub tokens: BTreeMap<String, String>,
    /// Commit sha → commit.
    pub commits: BTreeMap<String, Commit>,
    /// Tree sha → (file path → blob sha). Trees are flat: paths contain their directories.
    pub trees: BTreeMap<String, BTreeMap<String, String>>,
    /// Blob sha → content (text).
    pub blobs: BTreeMap<String, String>,
    /// Full ref name (`refs/heads/main`) → commit sha.
    pub refs: BTreeMap<String, String>,
    /// The repository's labels by name.
    pub labels: BTreeMap<String, Label>,
    /// Pull requests by number (issue numbers and pull numbers are the same sequence).
    pub pulls: BTreeMap<u64, PullRequest>,
    /// Issues that are not pull requests, by number (the same sequence as pull requests).
    #[serde(default)]
    pub issues: BTreeMap<u64, Issue>,
    /// Issue or pull request number → the revisions of its body, oldest first: none until the
    /// body is first edited, then the original and every edit (GitHub's `userContentEdits`).
    #[serde(default)]
    pub body_edits: BTreeMap<u64, Vec<BodyEdit>>,
    /// Issue or pull request number → every change of its labels, oldest first (GitHub's
    /// `LabeledEvent` and `UnlabeledEvent` on the issue timeline).
    #[serde(default)]
    pub label_events: BTreeMap<u64, Vec<LabelEvent>>,
    /// Login → the account's role on the repository; an account not listed has no access.
    #[serde(default)]
    pub collaborators: BTreeMap<String, Role>,
    /// The repository's topics.
    #[serde(default)]
    pub topics: Vec<String>,
    /// The organization that owns the repository (its login is `owner`); `None` when the owner
    /// is a user.
    #[serde(default)]
    pub organization: Option<Organization>,
    /// Issue comments by id.
    pub comments: BTreeMap<u64, IssueComment>,
    /// Workflows by id.
    pub workflows: BTreeMap<u64, Workflow>,
    /// Workflow runs by id.
    pub runs: BTreeMap<u64, WorkflowRun>,
    /// Jobs by run id.
    pub jobs: BTreeMap<u64, Vec<Job>>,
    /// Commit statuses (`POST /statuses/{sha}`), in the order they were created.
    #[serde(default)]
    pub statuses: Vec<CommitStatus>,
    /// Every accepted `workflow_dispatch`, in order.
    pub dispatches: Vec<Dispatch>,
    /// Run listings that leave out a newly dispatched run, as GitHub creates the run a moment
    /// after it answered the dispatch (0: listed at once).
    #[serde(default)]
    pub dispatched_run_listing_lag: u64,
    /// Run id → run listings that still leave the run out.
    #[serde(default)]
    pub unlisted_runs: BTreeMap<u64, u64>,
    /// Every ref deleted through the API, in order, with the commit it pointed at then.
    #[serde(default)]
    pub deleted_refs: Vec<DeletedRef>,
    /// Whether GraphQL offers `updateRefs` (an older GitHub Enterprise Server does not: the
    /// mutation is then an unknown field).
    #[serde(default = "available")]
    pub update_refs_available: bool,
    /// Whether `userContentEdits` lists an issue's revisions oldest first instead of newest
    /// first, for checking that klaud reads the newest ones in either order.
    #[serde(default)]
    pub edits_listed_oldest_first: bool,
    /// Job id → its log (`GET /actions/jobs/{job_id}/logs` redirects to it); a job without one
    /// has no log kept (404).
    #[serde(default)]
    pub job_logs: BTreeMap<u64, String>,
    pub next_ids: NextIds,
}

fn available() -> bool {
    true
}

/// Counters for the ids the server hands out.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NextIds {
    pub issue_number: u64,
    pub pull_id: u64,
    pub comment_id: u64,
    pub label_id: u64,
    pub workflow_id: u64,
    pub run_id: u64,
    pub job_id: u64,
    pub run_number: u64,
}

impl Default for NextIds {
    fn default() -> Self {
        NextIds {
            issue_number: 1,
            pull_id: 1_800_000_000,
            comment_id: 2_100_000_000,
            label_id: 6_000_000_000,
            workflow_id: 90_000_000,
            run_id: 10_000_000_000,
            job_id: 30_000_000_000,
            run_number: 1,
        }
    }
}

/// A git commit. Logins are what GitHub resolves from the emails; either may be `None`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Commit {
    pub sha: String,
    pub tree: String,
    pub parents: Vec<String>,
    pub message: String,
    pub author: GitIdentity,
    pub committer: GitIdentity,
    pub author_login: Option<String>,
    pub committer_login: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GitIdentity {
    pub name: String,
    pub email: String,
    pub date: Timestamp,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Label {
    pub id: u64,
    pub name: String,
    /// Six hex digits, as given (GitHub keeps their case).
    pub color: String,
    pub description: Option<String>,
    /// One of the labels GitHub gives every new repository.
    #[serde(default)]
    pub default: bool,
}

/// An organization owning the repository: who its members are (GitHub's `MEMBER` association).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Organization {
    pub members: BTreeSet<String>,
}

/// A locked conversation (`PUT /issues/{n}/lock`) and the reason it shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lock {
    /// `off-topic`, `too heated`, `resolved` or `spam`; `None` when locked without one.
    pub reason: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PullState {
    Open,
    Closed,
}

impl PullState {
    pub fn as_str(self) -> &'static str {
        match self {
            PullState::Open => "open",
            PullState::Closed => "closed",
        }
    }
}

/// A pull request and the issue that carries its labels, comments and `closed_by`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PullRequest {
    pub number: u64,
    pub id: u64,
    pub title: String,
    pub body: Option<String>,
    pub author: String,
    pub state: PullState,
    pub draft: bool,
    pub head_ref: String,
    pub head_sha: String,
    /// `owner/name` of the head repository; `None` when the fork was deleted.
    pub head_repo: Option<String>,
    pub base_ref: String,
    pub labels: Vec<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub closed_at: Option<Timestamp>,
    pub merged_at: Option<Timestamp>,
    pub merge_commit_sha: Option<String>,
    /// Login that closed the issue (GitHub's `closed_by` on `GET /issues/{n}`).
    pub closed_by: Option<String>,
    /// Whether it merges into its base cleanly, as GitHub last computed it.
    #[serde(default)]
    pub mergeability: Mergeability,
    /// Its base moved past the head's merge base, and branch protection requires it to be up
    /// to date (GitHub's `BEHIND`).
    #[serde(default)]
    pub behind: bool,
    #[serde(default)]
    pub lock: Option<Lock>,
}

/// GitHub's `mergeable` of a pull request (REST gives `true`, `false` or `null`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mergeability {
    #[default]
    Mergeable,
    Conflicting,
    /// Not computed yet.
    Unknown,
}

impl PullRequest {
    /// GraphQL's `mergeable`.
    pub fn mergeable_word(&self) -> &'static str {
        match self.mergeability {
            Mergeability::Mergeable => "MERGEABLE",
            Mergeability::Conflicting => "CONFLICTING",
            Mergeability::Unknown => "UNKNOWN",
        }
    }

    /// GraphQL's `mergeStateStatus` (REST's `mergeable_state` in lower case): a draft is
    /// `DRAFT`, a conflict `DIRTY`, mergeability not computed `UNKNOWN`, then `BEHIND` or `CLEAN`.
    pub fn merge_state_status(&self) -> &'static str {
        match (self.draft, self.mergeability, self.behind) {
            (true, _, _) => "DRAFT",
            (false, Mergeability::Conflicting, _) => "DIRTY",
            (false, Mergeability::Unknown, _) => "UNKNOWN",
            (false, Mergeability::Mergeable, true) => "BEHIND",
            (false, Mergeability::Mergeable, false) => "CLEAN",
        }
    }
}

/// An issue that is not a pull request.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Issue {
    pub number: u64,
    pub id: u64,
    pub title: String,
    pub body: Option<String>,
    pub author: String,
    pub state: PullState,
    /// `completed`, `not_planned` or `reopened`; `None` for an issue never closed.
    pub state_reason: Option<String>,
    pub labels: Vec<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub closed_at: Option<Timestamp>,
    pub closed_by: Option<String>,
    #[serde(default)]
    pub lock: Option<Lock>,
}

/// One change of an issue's labels: a label added (`LabeledEvent`) or removed
/// (`UnlabeledEvent`), by whom and when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelEvent {
    pub labeled: bool,
    pub label: String,
    /// `None` for an account GitHub no longer knows.
    pub actor: Option<String>,
    pub at: Timestamp,
}

/// One revision of an issue's (or pull request's) body: who wrote it, when, and its full text
/// (GitHub's `UserContentEdit.diff`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BodyEdit {
    /// `None` for an account GitHub no longer knows (deleted).
    pub editor: Option<String>,
    pub edited_at: Timestamp,
    pub body: Option<String>,
}

/// A collaborator's role on the repository, as GitHub's `role_name` spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Admin,
    Maintain,
    Write,
    Triage,
    Read,
}

impl Role {
    /// GitHub's `role_name`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Maintain => "maintain",
            Role::Write => "write",
            Role::Triage => "triage",
            Role::Read => "read",
        }
    }

    /// The roles in order: each can do what the ones before it can.
    pub fn rank(self) -> u8 {
        match self {
            Role::Read => 1,
            Role::Triage => 2,
            Role::Write => 3,
            Role::Maintain => 4,
            Role::Admin => 5,
        }
    }

    /// GitHub's legacy `permission`: `maintain` reads as `write`, `triage` as `read`.
    pub fn permission(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Maintain | Role::Write => "write",
            Role::Triage | Role::Read => "read",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IssueComment {
    pub id: u64,
    pub issue_number: u64,
    pub author: String,
    pub body: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Workflow {
    pub id: u64,
    pub name: String,
    /// `.github/workflows/<file>`.
    pub path: String,
    pub state: String,
    /// Declared `workflow_dispatch` inputs; `None` accepts any input.
    pub inputs: Option<Vec<String>>,
}

impl Workflow {
    pub fn file_name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkflowRun {
    pub id: u64,
    pub workflow_id: u64,
    pub name: String,
    pub display_title: String,
    pub run_number: u64,
    pub run_attempt: u64,
    pub head_branch: Option<String>,
    pub head_sha: String,
    pub event: String,
    pub status: String,
    pub conclusion: Option<String>,
    pub actor: String,
    pub triggering_actor: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub run_started_at: Timestamp,
    /// `owner/name` the run's head came from; `None` means this repository.
    pub head_repository: Option<String>,
    /// Inputs of a `workflow_dispatch` run (not part of GitHub's run JSON).
    pub inputs: Option<serde_json::Value>,
    pub check_suite_id: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Job {
    pub id: u64,
    pub run_id: u64,
    pub name: String,
    pub status: String,
    pub conclusion: Option<String>,
    pub created_at: Timestamp,
    pub started_at: Timestamp,
    pub completed_at: Option<Timestamp>,
    pub runner_name: Option<String>,
    /// The `runs-on` labels.
    #[serde(default = "hosted_runner_labels")]
    pub labels: Vec<String>,
}

/// The labels of a job that runs on a GitHub-hosted runner.
pub fn hosted_runner_labels() -> Vec<String> {
    vec!["ubuntu-latest".to_string()]
}

/// A commit status: a context's state on a commit, as an outside service reports it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CommitStatus {
    pub id: u64,
    pub sha: String,
    pub context: String,
    /// `error`, `failure`, `pending` or `success`.
    pub state: String,
    pub target_url: Option<String>,
    pub description: Option<String>,
    pub creator: String,
    pub created_at: Timestamp,
}

/// A ref `DELETE /git/refs/…` or GraphQL's `updateRefs` removed, and where it pointed when it
/// was removed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeletedRef {
    /// Full ref name (`refs/heads/klaud/auto-x`).
    pub name: String,
    pub sha: String,
    pub by: String,
}

/// A `workflow_dispatch` the server accepted.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Dispatch {
    pub workflow_id: u64,
    pub workflow_path: String,
    #[serde(rename = "ref")]
    pub git_ref: String,
    pub inputs: serde_json::Value,
    pub actor: String,
    pub run_id: u64,
    pub at: Timestamp,
}

impl RepoState {
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    /// The state's clock: the pinned time, or the system clock.
    pub fn now(&self) -> Timestamp {
        self.now.unwrap_or_else(Timestamp::system_now)
    }

    pub fn login_for_token(&self, token: &str) -> Option<&str> {
        self.tokens.get(token).map(String::as_str)
    }

    pub fn branch_sha(&self, branch: &str) -> Option<&str> {
        self.refs
            .get(&format!("refs/heads/{branch}"))
            .map(String::as_str)
    }

    /// Whether `number` is an issue or a pull request of this repository.
    pub fn has_issue_number(&self, number: u64) -> bool {
        self.pulls.contains_key(&number) || self.issues.contains_key(&number)
    }

    /// The labels of issue or pull request `number`.
    pub fn labels_of(&self, number: u64) -> Option<&Vec<String>> {
        match self.pulls.get(&number) {
            Some(pull) => Some(&pull.labels),
            None => self.issues.get(&number).map(|issue| &issue.labels),
        }
    }

    /// The labels of issue or pull request `number`, to change; its `updated_at` is set to now.
    pub fn labels_of_mut(&mut self, number: u64) -> Option<&mut Vec<String>> {
        let now = self.now();
        if let Some(pull) = self.pulls.get_mut(&number) {
            pull.updated_at = now;
            return Some(&mut pull.labels);
        }
        let issue = self.issues.get_mut(&number)?;
        issue.updated_at = now;
        Some(&mut issue.labels)
    }

    /// Locks (or with `None` unlocks) the conversation of issue or pull request `number`.
    pub fn set_lock(&mut self, number: u64, lock: Option<Lock>) {
        let now = self.now();
        if let Some(pull) = self.pulls.get_mut(&number) {
            pull.lock = lock;
            pull.updated_at = now;
        } else if let Some(issue) = self.issues.get_mut(&number) {
            issue.lock = lock;
            issue.updated_at = now;
        }
    }

    /// Renames label `from` to `to` on every issue and pull request carrying it.
    pub fn rename_label_on_issues(&mut self, from: &str, to: &str) {
        let pulls = self.pulls.values_mut().map(|pull| &mut pull.labels);
        let issues = self.issues.values_mut().map(|issue| &mut issue.labels);
        for label in pulls.chain(issues).flatten() {
            if label == from {
                *label = to.to_string();
            }
        }
    }

    /// Takes label `name` off every issue and pull request.
    pub fn remove_label_from_issues(&mut self, name: &str) {
        let pulls = self.pulls.values_mut().map(|pull| &mut pull.labels);
        let issues = self.issues.values_mut().map(|issue| &mut issue.labels);
        for labels in pulls.chain(issues) {
            labels.retain(|label| label != name);
        }
    }

    /// Sets the labels of issue or pull request `number` as `actor` does (each name once, in
    /// order; names compared without case, as GitHub does), recording a `LabeledEvent` for each
    /// label added and an `UnlabeledEvent` for each removed. False when there is no such number.
    pub fn set_labels_by(&mut self, number: u64, names: Vec<String>, actor: &str) -> bool {
        let Some(before) = self.labels_of(number).cloned() else {
            return false;
        };
        let mut after: Vec<String> = Vec::new();
        for name in names {
            if !after.iter().any(|kept| kept.eq_ignore_ascii_case(&name)) {
                after.push(name);
            }
        }
        let at = self.now();
        let has = |list: &[String], name: &str| list.iter().any(|l| l.eq_ignore_ascii_case(name));
        let mut events: Vec<LabelEvent> = Vec::new();
        for removed in before.iter().filter(|name| !has(&after, name)) {
            events.push(LabelEvent {
                labeled: false,
                label: removed.clone(),
                actor: Some(actor.to_string()),
                at,
            });
        }
        for added in after.iter().filter(|name| !has(&before, name)) {
            events.push(LabelEvent {
                labeled: true,
                label: added.clone(),
                actor: Some(actor.to_string()),
                at,
            });
        }
        for name in &after {
            self.ensure_label(name);
        }
        *self.labels_of_mut(number).expect("found above") = after;
        self.label_events.entry(number).or_default().extend(events);
        true
    }

    /// Sets the `updated_at` of issue or pull request `number` to now.
    pub fn touch_issue(&mut self, number: u64) {
        let now = self.now();
        if let Some(pull) = self.pulls.get_mut(&number) {
            pull.updated_at = now;
        } else if let Some(issue) = self.issues.get_mut(&number) {
            issue.updated_at = now;
        }
    }

    /// Whether GitHub knows the account: it has a token, a role, or wrote something here.
    pub fn knows_account(&self, login: &str) -> bool {
        self.tokens.values().any(|known| known == login)
            || self.collaborators.contains_key(login)
            || login == self.owner
            || self.pulls.values().any(|pull| pull.author == login)
            || self.issues.values().any(|issue| issue.author == login)
            || self
                .comments
                .values()
                .any(|comment| comment.author == login)
    }

    /// GitHub's `author_association` of `login` here: `OWNER`, `MEMBER` of the owning
    /// organization, `COLLABORATOR` with a role on the repository, else `otherwise` (`NONE`, or
    /// `CONTRIBUTOR` for the author of a pull request).
    pub fn author_association(&self, login: &str, otherwise: &'static str) -> &'static str {
        if login == self.owner {
            "OWNER"
        } else if self
            .organization
            .as_ref()
            .is_some_and(|organization| organization.members.contains(login))
        {
            "MEMBER"
        } else if self.collaborators.contains_key(login) {
            "COLLABORATOR"
        } else {
            otherwise
        }
    }

    /// The account's role; the owner is an admin.
    pub fn role_of(&self, login: &str) -> Option<Role> {
        self.collaborators
            .get(login)
            .copied()
            .or((login == self.owner).then_some(Role::Admin))
    }

    pub fn pull_by_node_id(&self, node_id: &str) -> Option<u64> {
        // The node id spells the pull request's id: compare ids, not 50,000 formatted strings.
        let id = node_id.strip_prefix("PR_kwDO")?.parse::<u64>().ok()?;
        self.pulls
            .values()
            .find(|pull| pull.id == id && super::render::pull_node_id(pull.id) == node_id)
            .map(|pull| pull.number)
    }

    /// Finds a workflow by file name (`klaud-plan.yml`), full path, or numeric id.
    pub fn workflow_by_key(&self, key: &str) -> Option<&Workflow> {
        if let Ok(id) = key.parse::<u64>() {
            return self.workflows.get(&id);
        }
        self.workflows
            .values()
            .find(|workflow| workflow.path == key || workflow.file_name() == key)
    }

    /// The latest status of each context on commit `sha`, by context.
    pub fn latest_statuses(&self, sha: &str) -> Vec<&CommitStatus> {
        let mut latest: BTreeMap<&str, &CommitStatus> = BTreeMap::new();
        for status in self.statuses.iter().filter(|status| status.sha == sha) {
            latest.insert(status.context.as_str(), status);
        }
        latest.into_values().collect()
    }

    pub fn jobs_of_run(&self, run_id: u64) -> &[Job] {
        self.jobs.get(&run_id).map(Vec::as_slice).unwrap_or(&[])
    }
}
