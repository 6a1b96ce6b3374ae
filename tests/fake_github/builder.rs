//! Seeding a [`RepoState`] from Rust: a repository with a root commit, then branches, commits,
//! pull requests, issues and the edits of their bodies, labels, comments, collaborators' roles
//! (and the [`Person`]s tests act as), workflows, runs and jobs, each described by a small spec
//! struct with defaults (`..Default::default()`).

use std::collections::BTreeMap;

use super::clock::{MINUTE, Timestamp};
use super::git::{NewCommit, identity_for_login};
use super::prng::fingerprint;
use super::state::{
    BodyEdit, CommitStatus, GitIdentity, Issue, IssueComment, Job, Label, LabelEvent, Lock,
    Mergeability, NextIds, Organization, PullRequest, PullState, RepoState, Role, Workflow,
    WorkflowRun, hosted_runner_labels,
};

/// The color GitHub gives a label created without one.
pub const LABEL_COLOR: &str = "ededed";

/// A commit to add. Logins may be `None`, as on GitHub when an email matches no account.
#[derive(Clone, Debug, Default)]
pub struct CommitSpec {
    pub message: String,
    pub author_login: Option<String>,
    pub committer_login: Option<String>,
    /// Path → new content (`None` removes the file).
    pub files: Vec<(String, Option<String>)>,
    pub at: Option<Timestamp>,
}

impl CommitSpec {
    /// A commit authored and committed by `login`.
    pub fn by(login: &str) -> Self {
        CommitSpec {
            message: format!("change by {login}"),
            author_login: Some(login.to_string()),
            committer_login: Some(login.to_string()),
            ..CommitSpec::default()
        }
    }

    pub fn message(mut self, message: &str) -> Self {
        self.message = message.to_string();
        self
    }

    pub fn file(mut self, path: &str, content: &str) -> Self {
        self.files
            .push((path.to_string(), Some(content.to_string())));
        self
    }

    pub fn at(mut self, at: Timestamp) -> Self {
        self.at = Some(at);
        self
    }
}

/// How a seeded pull request was closed.
#[derive(Clone, Debug, Default)]
pub struct ClosedSpec {
    pub by: String,
    pub at: Option<Timestamp>,
    pub merged: bool,
    /// Delete the head branch after closing (as "Delete branch" does).
    pub delete_branch: bool,
}

/// A pull request to add. Its commits are stacked on the base branch's head; with no commits
/// given, one commit by the author adds `changes/<head_ref>.md`.
#[derive(Clone, Debug, Default)]
pub struct PullRequestSpec {
    pub title: String,
    pub body: Option<String>,
    pub author: String,
    pub head_ref: String,
    /// Defaults to the repository's default branch.
    pub base_ref: Option<String>,
    pub draft: bool,
    pub labels: Vec<String>,
    pub commits: Vec<CommitSpec>,
    /// `owner/name` of a fork; `None` is this repository.
    pub head_repo: Option<String>,
    pub created_at: Option<Timestamp>,
    pub closed: Option<ClosedSpec>,
}

/// An issue (not a pull request) to add, open.
#[derive(Clone, Debug, Default)]
pub struct IssueSpec {
    pub title: String,
    pub body: Option<String>,
    pub author: String,
    pub labels: Vec<String>,
    /// Defaults to the state's clock.
    pub created_at: Option<Timestamp>,
}

/// An account tests act as: its token, login and role on the repository.
#[derive(Clone, Copy, Debug)]
pub struct Person {
    pub token: &'static str,
    pub login: &'static str,
    /// `None`: no access to the repository.
    pub role: Option<Role>,
}

/// A maintainer with write access.
pub const MAINTAINER_ANN: Person = Person {
    token: "maintainer-ann-token",
    login: "maintainer-ann",
    role: Some(Role::Write),
};

/// A collaborator with read access.
pub const READER_ROB: Person = Person {
    token: "reader-rob-token",
    login: "reader-rob",
    role: Some(Role::Read),
};

/// An account with no access to the repository.
pub const OUTSIDER_OLA: Person = Person {
    token: "outsider-ola-token",
    login: "outsider-ola",
    role: None,
};

/// A job of a seeded run.
#[derive(Clone, Debug)]
pub struct JobSpec {
    pub name: String,
    pub status: String,
    pub conclusion: Option<String>,
    pub started_at: Option<Timestamp>,
    pub completed_at: Option<Timestamp>,
    /// The `runs-on` labels; empty means a GitHub-hosted `ubuntu-latest` runner.
    pub labels: Vec<String>,
}

impl JobSpec {
    pub fn completed(name: &str, conclusion: &str) -> Self {
        JobSpec {
            name: name.to_string(),
            status: "completed".to_string(),
            conclusion: Some(conclusion.to_string()),
            started_at: None,
            completed_at: None,
            labels: Vec::new(),
        }
    }

    pub fn in_progress(name: &str) -> Self {
        JobSpec {
            status: "in_progress".to_string(),
            conclusion: None,
            ..JobSpec::completed(name, "success")
        }
    }

    pub fn queued(name: &str) -> Self {
        JobSpec {
            status: "queued".to_string(),
            conclusion: None,
            ..JobSpec::completed(name, "success")
        }
    }

    /// The job runs on runners with these `runs-on` labels.
    pub fn on(mut self, labels: &[&str]) -> Self {
        self.labels = labels.iter().map(|label| label.to_string()).collect();
        self
    }

    /// The job ran from `started_at` for `minutes`.
    pub fn took(mut self, started_at: Timestamp, minutes: i64) -> Self {
        self.started_at = Some(started_at);
        self.completed_at = Some(started_at.plus(minutes * MINUTE));
        self
    }
}

/// A workflow run to add; the workflow is created from its file name when unknown.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// File name (`klaud-plan.yml`) or path of the workflow.
    pub workflow: String,
    pub head_branch: Option<String>,
    /// Defaults to the head branch's sha, else the default branch's.
    pub head_sha: Option<String>,
    pub event: String,
    pub status: String,
    pub conclusion: Option<String>,
    /// Defaults to the repository owner.
    pub actor: Option<String>,
    pub triggering_actor: Option<String>,
    pub created_at: Option<Timestamp>,
    pub updated_at: Option<Timestamp>,
    pub run_attempt: u64,
    pub head_repository: Option<String>,
    pub display_title: Option<String>,
    pub jobs: Vec<JobSpec>,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            workflow: "ci.yml".to_string(),
            head_branch: None,
            head_sha: None,
            event: "push".to_string(),
            status: "completed".to_string(),
            conclusion: Some("success".to_string()),
            actor: None,
            triggering_actor: None,
            created_at: None,
            updated_at: None,
            run_attempt: 1,
            head_repository: None,
            display_title: None,
            jobs: Vec::new(),
        }
    }
}

impl RepoState {
    /// A repository `owner/name` whose default branch `main` holds one commit with a README.
    pub fn new(owner: &str, name: &str) -> Self {
        let mut state = RepoState::empty(owner, name);
        let root = state.add_commit(
            None,
            CommitSpec::by(owner)
                .message("Initial commit")
                .file("README.md", &format!("# {name}\n"))
                .at(Timestamp(1_577_836_800)),
        );
        state.set_ref("refs/heads/main", &root);
        state
    }

    /// An empty repository `owner/name`, as GitHub creates one without a README: no commit and
    /// no branch yet; its default branch `main` comes with the first file written.
    pub fn empty(owner: &str, name: &str) -> Self {
        RepoState {
            owner: owner.to_string(),
            name: name.to_string(),
            repository_id: 500_000_000 + fingerprint(&format!("{owner}/{name}")) % 100_000_000,
            default_branch: "main".to_string(),
            fork: false,
            now: None,
            tokens: BTreeMap::new(),
            commits: BTreeMap::new(),
            trees: BTreeMap::new(),
            blobs: BTreeMap::new(),
            refs: BTreeMap::new(),
            labels: BTreeMap::new(),
            pulls: BTreeMap::new(),
            issues: BTreeMap::new(),
            body_edits: BTreeMap::new(),
            label_events: BTreeMap::new(),
            collaborators: BTreeMap::new(),
            topics: Vec::new(),
            organization: None,
            comments: BTreeMap::new(),
            workflows: BTreeMap::new(),
            runs: BTreeMap::new(),
            jobs: BTreeMap::new(),
            statuses: Vec::new(),
            dispatches: Vec::new(),
            dispatched_run_listing_lag: 0,
            unlisted_runs: BTreeMap::new(),
            deleted_refs: Vec::new(),
            update_refs_available: true,
            edits_listed_oldest_first: false,
            job_logs: BTreeMap::new(),
            next_ids: NextIds::default(),
        }
    }

    /// Makes the owner an organization with these members.
    pub fn owned_by_organization(mut self, members: &[&str]) -> Self {
        self.organization = Some(Organization {
            members: members.iter().map(|member| member.to_string()).collect(),
        });
        self
    }

    /// Renames the default branch.
    pub fn with_default_branch(mut self, branch: &str) -> Self {
        let old = format!("refs/heads/{}", self.default_branch);
        if let Some(sha) = self.refs.remove(&old) {
            self.refs.insert(format!("refs/heads/{branch}"), sha);
        }
        self.default_branch = branch.to_string();
        self
    }

    /// Pins the clock used for everything created afterwards.
    pub fn with_now(mut self, now: Timestamp) -> Self {
        self.now = Some(now);
        self
    }

    /// Lists `userContentEdits` oldest first.
    pub fn with_edits_listed_oldest_first(mut self) -> Self {
        self.edits_listed_oldest_first = true;
        self
    }

    /// Serves GraphQL without `updateRefs`, as an older GitHub Enterprise Server does.
    pub fn without_update_refs(mut self) -> Self {
        self.update_refs_available = false;
        self
    }

    pub fn with_token(mut self, token: &str, login: &str) -> Self {
        self.add_token(token, login);
        self
    }

    pub fn add_token(&mut self, token: &str, login: &str) {
        self.tokens.insert(token.to_string(), login.to_string());
    }

    /// Gives `login` a role on the repository.
    pub fn with_role(mut self, login: &str, role: Role) -> Self {
        self.set_role(login, role);
        self
    }

    pub fn set_role(&mut self, login: &str, role: Role) {
        self.collaborators.insert(login.to_string(), role);
    }

    /// Takes `login`'s access away (the owner stays an admin).
    pub fn remove_role(&mut self, login: &str) {
        self.collaborators.remove(login);
    }

    /// Adds the person's token and role.
    pub fn with_person(mut self, person: Person) -> Self {
        self.add_token(person.token, person.login);
        if let Some(role) = person.role {
            self.set_role(person.login, role);
        }
        self
    }

    /// Opens an issue (not a pull request); returns its number, from the sequence pull requests
    /// share.
    pub fn add_issue(&mut self, spec: IssueSpec) -> u64 {
        for label in &spec.labels {
            self.ensure_label(label);
        }
        let created_at = spec.created_at.unwrap_or_else(|| self.now());
        let number = self.next_ids.issue_number;
        self.next_ids.issue_number += 1;
        let id = self.next_ids.pull_id;
        self.next_ids.pull_id += 1;
        let mut labels: Vec<String> = Vec::new();
        for label in spec.labels {
            if !labels.contains(&label) {
                labels.push(label);
            }
        }
        self.issues.insert(
            number,
            Issue {
                number,
                id,
                title: spec.title,
                body: spec.body,
                author: spec.author,
                state: PullState::Open,
                state_reason: None,
                labels,
                created_at,
                updated_at: created_at,
                closed_at: None,
                closed_by: None,
                lock: None,
            },
        );
        let author = self.issues[&number].author.clone();
        let events = self.issues[&number]
            .labels
            .iter()
            .map(|label| LabelEvent {
                labeled: true,
                label: label.clone(),
                actor: Some(author.clone()),
                at: created_at,
            })
            .collect();
        self.label_events.insert(number, events);
        number
    }

    /// `actor` adds `label` to issue or pull request `number` now (a `LabeledEvent`, also when
    /// the label is already there: GitHub records none then, and neither does this).
    pub fn label_issue(&mut self, number: u64, label: &str, actor: &str) {
        let mut labels = self.labels_of(number).cloned().expect("an issue");
        labels.push(label.to_string());
        self.set_labels_by(number, labels, actor);
    }

    /// `actor` removes `label` from issue or pull request `number` now (an `UnlabeledEvent`).
    pub fn unlabel_issue(&mut self, number: u64, label: &str, actor: &str) {
        let labels = self.labels_of(number).cloned().expect("an issue");
        let kept = labels
            .into_iter()
            .filter(|kept| !kept.eq_ignore_ascii_case(label))
            .collect();
        self.set_labels_by(number, kept, actor);
    }

    /// Locks issue `number`'s conversation.
    pub fn lock_issue(&mut self, number: u64) {
        self.issues.get_mut(&number).expect("an issue").lock = Some(Lock { reason: None });
    }

    /// Replaces the body of issue or pull request `number` as `editor` did it, recording the
    /// revision as GitHub does: the first edit also records the original (by the author, at the
    /// creation time). Returns false when there is no such issue.
    pub fn edit_body(&mut self, number: u64, editor: &str, body: Option<String>) -> bool {
        let now = self.now();
        let (author, created_at, original) =
            match (self.pulls.get(&number), self.issues.get(&number)) {
                (Some(pull), _) => (pull.author.clone(), pull.created_at, pull.body.clone()),
                (None, Some(issue)) => (issue.author.clone(), issue.created_at, issue.body.clone()),
                (None, None) => return false,
            };
        let edits = self.body_edits.entry(number).or_default();
        if edits.is_empty() {
            edits.push(BodyEdit {
                editor: Some(author),
                edited_at: created_at,
                body: original,
            });
        }
        edits.push(BodyEdit {
            editor: Some(editor.to_string()),
            edited_at: now,
            body: body.clone(),
        });
        if let Some(pull) = self.pulls.get_mut(&number) {
            pull.body = body;
            pull.updated_at = now;
        } else if let Some(issue) = self.issues.get_mut(&number) {
            issue.body = body;
            issue.updated_at = now;
        }
        true
    }

    /// The recorded revisions of the body of `number`, oldest first (none: never edited).
    pub fn body_edits_of(&self, number: u64) -> &[BodyEdit] {
        self.body_edits
            .get(&number)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Forgets the account of every revision `login` wrote, as GitHub shows a deleted account
    /// (`editor: null`).
    pub fn forget_editor(&mut self, login: &str) {
        for edits in self.body_edits.values_mut() {
            for edit in edits.iter_mut() {
                if edit.editor.as_deref() == Some(login) {
                    edit.editor = None;
                }
            }
        }
    }

    /// Creates the repository label when missing, as GitHub does for a label named on an issue
    /// (grey `ededed`, no description); returns its id.
    pub fn ensure_label(&mut self, name: &str) -> u64 {
        match self.labels.get(name) {
            Some(label) => label.id,
            None => self.add_label(name, LABEL_COLOR, None),
        }
    }

    /// Adds (or replaces) the repository label `name`; returns its id.
    pub fn add_label(&mut self, name: &str, color: &str, description: Option<&str>) -> u64 {
        let id = self.next_ids.label_id;
        self.next_ids.label_id += 1;
        self.labels.insert(
            name.to_string(),
            Label {
                id,
                name: name.to_string(),
                color: color.to_string(),
                description: description.map(str::to_string),
                default: false,
            },
        );
        id
    }

    /// Adds a commit on top of `parent` (none: a root commit) without moving any ref.
    pub fn add_commit(&mut self, parent: Option<&str>, spec: CommitSpec) -> String {
        let mut files = parent.map(|sha| self.commit_files(sha)).unwrap_or_default();
        for (path, content) in &spec.files {
            match content {
                Some(content) => {
                    let blob = self.store_blob(content);
                    files.insert(path.clone(), blob);
                }
                None => {
                    files.remove(path);
                }
            }
        }
        let tree = self.store_tree(files);
        let at = spec.at.unwrap_or_else(|| self.now());
        // Without a login, an identity whose email matches no GitHub account.
        let identity = |login: Option<&str>, name: &str, email: &str| match login {
            Some(login) => identity_for_login(login, at),
            None => GitIdentity {
                name: name.to_string(),
                email: email.to_string(),
                date: at,
            },
        };
        let author = identity(
            spec.author_login.as_deref(),
            "Unknown Author",
            "unknown.author@example.com",
        );
        let committer = identity(
            spec.committer_login.as_deref(),
            "Unknown Committer",
            "unknown.committer@example.com",
        );
        self.store_commit(NewCommit {
            tree,
            parents: parent.map(str::to_string).into_iter().collect(),
            message: spec.message,
            author,
            committer,
            author_login: spec.author_login,
            committer_login: spec.committer_login,
        })
    }

    /// Creates or moves a branch.
    pub fn set_branch(&mut self, branch: &str, sha: &str) {
        self.set_ref(&format!("refs/heads/{branch}"), sha);
    }

    pub fn delete_branch(&mut self, branch: &str) -> bool {
        self.refs.remove(&format!("refs/heads/{branch}")).is_some()
    }

    /// Adds commits on top of a branch's head (creating the branch from the default branch).
    pub fn push_commits(&mut self, branch: &str, commits: Vec<CommitSpec>) -> String {
        let mut head = self
            .branch_sha(branch)
            .or_else(|| self.branch_sha(&self.default_branch.clone()))
            .map(str::to_string);
        for spec in commits {
            head = Some(self.add_commit(head.as_deref(), spec));
        }
        let head = head.expect("a branch head");
        self.set_branch(branch, &head);
        head
    }

    /// Adds a pull request with its head branch and commits; returns its number.
    pub fn add_pull_request(&mut self, spec: PullRequestSpec) -> u64 {
        self.add_pull_requests(vec![spec])[0]
    }

    /// Adds pull requests in order, as [`RepoState::add_pull_request`] one after the other would;
    /// returns their numbers. The open pull requests that follow a moved head branch are found
    /// in one pass at the end rather than one per pull request, so a seeded repository with
    /// tens of thousands of them is built in linear time.
    pub fn add_pull_requests(&mut self, specs: Vec<PullRequestSpec>) -> Vec<u64> {
        let full_name = self.full_name();
        // Branch → the last pull request that moved it there, and where.
        let mut moved: BTreeMap<String, (u64, String)> = BTreeMap::new();
        let mut numbers = Vec::with_capacity(specs.len());
        for spec in specs {
            let (number, head_sha, same_repository) = self.insert_pull_request(spec);
            if same_repository {
                let head_ref = self.pulls[&number].head_ref.clone();
                moved.insert(head_ref, (number, head_sha));
            }
            numbers.push(number);
        }
        if moved.is_empty() {
            return numbers;
        }
        let now = self.now();
        for pull in self.pulls.values_mut() {
            let Some((mover, sha)) = moved.get(&pull.head_ref) else {
                continue;
            };
            if pull.number < *mover
                && pull.state == PullState::Open
                && pull.head_repo.as_deref() == Some(full_name.as_str())
                && pull.head_sha != *sha
            {
                pull.head_sha = sha.clone();
                pull.updated_at = now;
            }
        }
        numbers
    }

    /// Adds one pull request with its commits, its head branch set (and deleted again when it
    /// was closed with its branch) without moving other pull requests that follow that branch.
    /// Returns its number, head commit and whether its head is in this repository.
    fn insert_pull_request(&mut self, spec: PullRequestSpec) -> (u64, String, bool) {
        let base_ref = spec
            .base_ref
            .clone()
            .unwrap_or_else(|| self.default_branch.clone());
        let created_at = spec.created_at.unwrap_or_else(|| self.now());
        let base_sha = self.branch_sha(&base_ref).map(str::to_string);
        let mut commits = spec.commits.clone();
        if commits.is_empty() {
            commits.push(
                CommitSpec::by(&spec.author)
                    .message(&spec.title)
                    .file(&format!("changes/{}.md", spec.head_ref), &spec.title),
            );
        }
        let mut head = base_sha;
        for (index, mut commit) in commits.into_iter().enumerate() {
            commit.at = commit.at.or(Some(created_at.plus(index as i64 * MINUTE)));
            head = Some(self.add_commit(head.as_deref(), commit));
        }
        let head_sha = head.expect("a head commit");
        let full_name = self.full_name();
        let head_repo = Some(spec.head_repo.clone().unwrap_or(full_name.clone()));
        let same_repository = head_repo.as_deref() == Some(full_name.as_str());
        if same_repository {
            self.refs
                .insert(format!("refs/heads/{}", spec.head_ref), head_sha.clone());
        }
        for label in &spec.labels {
            self.ensure_label(label);
        }
        let number = self.next_ids.issue_number;
        self.next_ids.issue_number += 1;
        let id = self.next_ids.pull_id;
        self.next_ids.pull_id += 1;
        let mut pull = PullRequest {
            number,
            id,
            title: spec.title.clone(),
            body: spec.body.clone(),
            author: spec.author.clone(),
            state: PullState::Open,
            draft: spec.draft,
            head_ref: spec.head_ref.clone(),
            head_sha: head_sha.clone(),
            head_repo,
            base_ref,
            labels: spec.labels.clone(),
            created_at,
            updated_at: created_at,
            closed_at: None,
            merged_at: None,
            merge_commit_sha: None,
            closed_by: None,
            mergeability: Mergeability::default(),
            behind: false,
            lock: None,
        };
        if let Some(closed) = &spec.closed {
            let at = closed.at.unwrap_or(created_at.plus(MINUTE));
            pull.state = PullState::Closed;
            pull.closed_at = Some(at);
            pull.updated_at = at;
            pull.closed_by = Some(closed.by.clone());
            if closed.merged {
                pull.merged_at = Some(at);
                pull.merge_commit_sha = Some(pull.head_sha.clone());
            }
            if closed.delete_branch && same_repository {
                self.delete_branch(&spec.head_ref);
            }
        }
        self.pulls.insert(number, pull);
        (number, head_sha, same_repository)
    }

    pub fn add_label_to_issue(&mut self, number: u64, label: &str) {
        self.ensure_label(label);
        let labels = match self.pulls.get_mut(&number) {
            Some(pull) => Some(&mut pull.labels),
            None => self.issues.get_mut(&number).map(|issue| &mut issue.labels),
        };
        if let Some(labels) = labels
            && !labels.iter().any(|existing| existing == label)
        {
            labels.push(label.to_string());
        }
    }

    pub fn add_comment(&mut self, number: u64, author: &str, body: &str) -> u64 {
        let id = self.next_ids.comment_id;
        self.next_ids.comment_id += 1;
        let now = self.now();
        self.comments.insert(
            id,
            IssueComment {
                id,
                issue_number: number,
                author: author.to_string(),
                body: body.to_string(),
                created_at: now,
                updated_at: now,
            },
        );
        id
    }

    /// The workflow with this file name (or path), created when missing; returns its id.
    pub fn ensure_workflow(&mut self, file_or_path: &str) -> u64 {
        if let Some(workflow) = self.workflow_by_key(file_or_path) {
            return workflow.id;
        }
        let path = if file_or_path.contains('/') {
            file_or_path.to_string()
        } else {
            format!(".github/workflows/{file_or_path}")
        };
        let id = self.next_ids.workflow_id;
        self.next_ids.workflow_id += 1;
        let name = path
            .rsplit('/')
            .next()
            .unwrap_or(&path)
            .trim_end_matches(".yml")
            .trim_end_matches(".yaml")
            .to_string();
        self.workflows.insert(
            id,
            Workflow {
                id,
                name,
                path,
                state: "active".to_string(),
                inputs: None,
            },
        );
        id
    }

    /// Adds a workflow run (and its jobs); returns the run id.
    pub fn add_run(&mut self, spec: RunSpec) -> u64 {
        let workflow_id = self.ensure_workflow(&spec.workflow);
        let workflow_name = self.workflows[&workflow_id].name.clone();
        let created_at = spec.created_at.unwrap_or_else(|| self.now());
        let head_sha = spec
            .head_sha
            .clone()
            .or_else(|| {
                spec.head_branch
                    .as_deref()
                    .and_then(|branch| self.branch_sha(branch))
                    .map(str::to_string)
            })
            .or_else(|| self.branch_sha(&self.default_branch).map(str::to_string))
            .unwrap_or_default();
        let actor = spec.actor.clone().unwrap_or_else(|| self.owner.clone());
        let id = self.next_ids.run_id;
        self.next_ids.run_id += 1;
        let run_number = self.next_ids.run_number;
        self.next_ids.run_number += 1;
        self.runs.insert(
            id,
            WorkflowRun {
                id,
                workflow_id,
                name: workflow_name.clone(),
                display_title: spec.display_title.clone().unwrap_or(workflow_name),
                run_number,
                run_attempt: spec.run_attempt,
                head_branch: spec.head_branch.clone(),
                head_sha,
                event: spec.event.clone(),
                status: spec.status.clone(),
                conclusion: spec.conclusion.clone(),
                triggering_actor: spec.triggering_actor.clone().unwrap_or(actor.clone()),
                actor,
                created_at,
                updated_at: spec.updated_at.unwrap_or(created_at),
                run_started_at: created_at,
                head_repository: spec.head_repository.clone(),
                inputs: None,
                check_suite_id: id + 20_000_000_000,
            },
        );
        for job in spec.jobs {
            self.add_job(id, job);
        }
        id
    }

    /// Adds a job to a run; returns the job id.
    /// Keeps `text` as job `job_id`'s log, served through the logs redirect.
    pub fn set_job_log(&mut self, job_id: u64, text: &str) {
        self.job_logs.insert(job_id, text.to_string());
    }

    pub fn add_job(&mut self, run_id: u64, spec: JobSpec) -> u64 {
        let id = self.next_ids.job_id;
        self.next_ids.job_id += 1;
        let run_created = self
            .runs
            .get(&run_id)
            .map(|run| run.created_at)
            .unwrap_or_else(|| self.now());
        let started_at = spec.started_at.unwrap_or(run_created.plus(10));
        let completed_at = match spec.status.as_str() {
            "completed" => Some(spec.completed_at.unwrap_or(started_at.plus(5 * MINUTE))),
            _ => spec.completed_at,
        };
        self.jobs.entry(run_id).or_default().push(Job {
            id,
            run_id,
            name: spec.name,
            status: spec.status,
            conclusion: spec.conclusion,
            created_at: run_created,
            started_at,
            completed_at,
            runner_name: Some(format!("runner-{}", id % 16)),
            labels: match spec.labels.is_empty() {
                true => hosted_runner_labels(),
                false => spec.labels,
            },
        });
        id
    }

    /// Adds a commit status of `context` on commit `sha`, created by `creator`; returns its id.
    pub fn add_status(
        &mut self,
        sha: &str,
        context: &str,
        state: &str,
        target_url: Option<&str>,
        creator: &str,
    ) -> u64 {
        let id = 5_000_000_000 + self.statuses.len() as u64;
        let created_at = self.now();
        self.statuses.push(CommitStatus {
            id,
            sha: sha.to_string(),
            context: context.to_string(),
            state: state.to_string(),
            target_url: target_url.map(str::to_string),
            description: None,
            creator: creator.to_string(),
            created_at,
        });
        id
    }

    /// Sets what GitHub computed of pull request `number`'s mergeability: conflicting or not
    /// (or not computed yet), and behind its base.
    pub fn set_mergeability(&mut self, number: u64, mergeability: Mergeability, behind: bool) {
        if let Some(pull) = self.pulls.get_mut(&number) {
            pull.mergeability = mergeability;
            pull.behind = behind;
        }
    }

    /// Writes a file on a branch as one commit by the repository owner (the branch is created
    /// as an orphan when missing). For seeding, e.g. a ledger document on the state branch.
    pub fn put_file(&mut self, branch: &str, path: &str, content: &str) -> String {
        let owner = self.owner.clone();
        let now = self.now();
        self.commit_files_on_branch(
            branch,
            &[(path.to_string(), Some(content.to_string()))],
            &format!("Update {path}"),
            &owner,
            now,
        )
    }

    /// The content of a file at a branch's head.
    pub fn read_file(&self, branch: &str, path: &str) -> Option<String> {
        let sha = self.branch_sha(branch)?;
        self.file_at(sha, path).map(|(_, content)| content)
    }

    /// Ends a run (and its unfinished jobs) with a conclusion, or sets another status.
    pub fn set_run_status(&mut self, run_id: u64, status: &str, conclusion: Option<&str>) {
        let now = self.now();
        if let Some(run) = self.runs.get_mut(&run_id) {
            run.status = status.to_string();
            run.conclusion = conclusion.map(str::to_string);
            run.updated_at = now;
        }
        if status == "completed" {
            for job in self.jobs.entry(run_id).or_default() {
                if job.status != "completed" {
                    job.status = "completed".to_string();
                    job.conclusion = conclusion.map(str::to_string);
                    job.completed_at = Some(now);
                }
            }
        }
    }
}
