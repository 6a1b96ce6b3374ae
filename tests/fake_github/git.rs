//! Git data on the fake: blobs, flat trees (listed nested, as GitHub lists them), commits and
//! refs, with the graph questions GitHub answers (is this a fast-forward, which commits does a
//! pull request add, which files did it change, which commits touched a path).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashSet, VecDeque};

use super::clock::Timestamp;
use super::prng::{object_id, user_id};
use super::state::{Commit, GitIdentity, PullState, RepoState};

/// How a file differs between two trees (`status` of `GET /pulls/{n}/files`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    pub status: &'static str,
    pub blob_sha: Option<String>,
    pub additions: u64,
    pub deletions: u64,
    /// The path before a rename (`previous_filename`).
    pub previous_path: Option<String>,
}

/// Like GitHub, a file removed at one path and added with the same content at another is one
/// `renamed` change carrying its `previous_filename`.
fn pair_renames(changes: &mut Vec<FileChange>, before: &BTreeMap<String, String>) {
    let mut renamed_from = Vec::new();
    for index in 0..changes.len() {
        if changes[index].status != "added" {
            continue;
        }
        let blob = changes[index].blob_sha.clone();
        let source = changes.iter().position(|change| {
            change.status == "removed"
                && !renamed_from.contains(&change.path)
                && before.get(&change.path) == blob.as_ref()
        });
        if let Some(source) = source {
            let previous = changes[source].path.clone();
            renamed_from.push(previous.clone());
            let change = &mut changes[index];
            change.status = "renamed";
            change.additions = 0;
            change.previous_path = Some(previous);
        }
    }
    changes.retain(|change| !(change.status == "removed" && renamed_from.contains(&change.path)));
}

/// The git identity GitHub shows for an account's web commits.
pub fn identity_for_login(login: &str, date: Timestamp) -> GitIdentity {
    GitIdentity {
        name: login.to_string(),
        email: format!("{}+{login}@users.noreply.github.com", user_id(login)),
        date,
    }
}

/// One entry of a tree listing: a blob (with its size) or a directory's tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeEntry {
    pub path: String,
    pub sha: String,
    /// The blob's size; `None` for a tree.
    pub size: Option<usize>,
}

impl TreeEntry {
    pub fn is_tree(&self) -> bool {
        self.size.is_none()
    }

    /// Git sorts a tree's entries by name, a directory's name as if it ended with `/`.
    fn git_order(&self) -> String {
        if self.is_tree() {
            format!("{}/", self.path)
        } else {
            self.path.clone()
        }
    }
}

/// A commit to write: the fields `POST /git/commits` and the builders fill in.
#[derive(Clone, Debug)]
pub struct NewCommit {
    pub tree: String,
    pub parents: Vec<String>,
    pub message: String,
    pub author: GitIdentity,
    pub committer: GitIdentity,
    pub author_login: Option<String>,
    pub committer_login: Option<String>,
}

impl RepoState {
    pub fn store_blob(&mut self, content: &str) -> String {
        let sha = object_id(&["blob", content]);
        self.blobs.insert(sha.clone(), content.to_string());
        sha
    }

    pub fn store_tree(&mut self, files: BTreeMap<String, String>) -> String {
        let listing: Vec<String> = files
            .iter()
            .map(|(path, blob)| format!("{path}:{blob}"))
            .collect();
        let sha = object_id(&["tree", &listing.join("\n")]);
        self.trees.insert(sha.clone(), files);
        sha
    }

    pub fn store_commit(&mut self, commit: NewCommit) -> String {
        let date = commit.committer.date.to_string();
        let sha = object_id(&[
            "commit",
            &commit.tree,
            &commit.parents.join(","),
            &commit.message,
            &commit.author.email,
            &commit.committer.email,
            &date,
        ]);
        self.commits.insert(
            sha.clone(),
            Commit {
                sha: sha.clone(),
                tree: commit.tree,
                parents: commit.parents,
                message: commit.message,
                author: commit.author,
                committer: commit.committer,
                author_login: commit.author_login,
                committer_login: commit.committer_login,
            },
        );
        sha
    }

    /// The entries of tree `sha` as `GET /git/trees` lists them: its own files and directories,
    /// or with `recursive` every file and directory below it, in git's order (a directory sorts
    /// as its name followed by `/`, before what it holds). Each directory named is stored as a
    /// tree of its own, so its sha can be read or used as a base like GitHub's.
    pub fn tree_listing(&mut self, sha: &str, recursive: bool) -> Vec<TreeEntry> {
        let files = self.tree_files(sha);
        let mut directories = BTreeSet::new();
        let mut entries = Vec::new();
        for (path, blob) in &files {
            let segments: Vec<&str> = path.split('/').collect();
            let depth = if recursive { segments.len() - 1 } else { 1 };
            for end in 1..=depth.min(segments.len() - 1) {
                directories.insert(segments[..end].join("/"));
            }
            if recursive || segments.len() == 1 {
                entries.push(TreeEntry {
                    path: path.clone(),
                    sha: blob.clone(),
                    size: Some(self.blobs.get(blob).map(String::len).unwrap_or(0)),
                });
            }
        }
        for directory in directories {
            let prefix = format!("{directory}/");
            let below: BTreeMap<String, String> = files
                .iter()
                .filter_map(|(path, blob)| {
                    path.strip_prefix(&prefix)
                        .map(|rest| (rest.to_string(), blob.clone()))
                })
                .collect();
            let sha = self.store_tree(below);
            entries.push(TreeEntry {
                path: directory,
                sha,
                size: None,
            });
        }
        entries.sort_by_key(TreeEntry::git_order);
        entries
    }

    pub fn tree_files(&self, tree_sha: &str) -> BTreeMap<String, String> {
        self.trees.get(tree_sha).cloned().unwrap_or_default()
    }

    pub fn commit_files(&self, commit_sha: &str) -> BTreeMap<String, String> {
        self.commits
            .get(commit_sha)
            .map(|commit| self.tree_files(&commit.tree))
            .unwrap_or_default()
    }

    /// The blob sha and content of `path` at a commit.
    pub fn file_at(&self, commit_sha: &str, path: &str) -> Option<(String, String)> {
        let commit = self.commits.get(commit_sha)?;
        let blob = self.trees.get(&commit.tree)?.get(path)?;
        Some((
            blob.clone(),
            self.blobs.get(blob).cloned().unwrap_or_default(),
        ))
    }

    /// Resolves a branch name, a full ref, or a commit sha (also abbreviated) to a commit sha.
    pub fn resolve_commitish(&self, reference: &str) -> Option<String> {
        if let Some(sha) = self.branch_sha(reference) {
            return Some(sha.to_string());
        }
        if let Some(sha) = self.refs.get(reference) {
            return Some(sha.clone());
        }
        if let Some(sha) = self.refs.get(&format!("refs/{reference}")) {
            return Some(sha.clone());
        }
        if reference.len() >= 7 && reference.chars().all(|c| c.is_ascii_hexdigit()) {
            return self
                .commits
                .range(reference.to_string()..)
                .next()
                .filter(|(sha, _)| sha.starts_with(reference))
                .map(|(sha, _)| sha.clone());
        }
        None
    }

    /// Every commit reachable from `sha`, itself included.
    pub fn ancestors(&self, sha: &str) -> HashSet<String> {
        let mut seen = HashSet::new();
        let mut queue = VecDeque::from([sha.to_string()]);
        while let Some(current) = queue.pop_front() {
            if !seen.insert(current.clone()) {
                continue;
            }
            if let Some(commit) = self.commits.get(&current) {
                queue.extend(commit.parents.iter().cloned());
            }
        }
        seen
    }

    /// Whether `descendant` contains `ancestor` in its history (a fast-forward from it).
    pub fn is_ancestor(&self, ancestor: &str, descendant: &str) -> bool {
        self.ancestors(descendant).contains(ancestor)
    }

    /// Commits reachable from `head` but not from `base`, oldest first (the pull request's
    /// commits), with the merge base (first commit shared with `base`, if any).
    pub fn commits_between(
        &self,
        base: Option<&str>,
        head: &str,
    ) -> (Vec<&Commit>, Option<String>) {
        let base_history = base.map(|base| self.ancestors(base)).unwrap_or_default();
        let mut seen = HashSet::new();
        let mut found = Vec::new();
        let mut merge_base = None;
        let mut queue = VecDeque::from([head.to_string()]);
        while let Some(current) = queue.pop_front() {
            if !seen.insert(current.clone()) {
                continue;
            }
            if base_history.contains(&current) {
                merge_base.get_or_insert(current);
                continue;
            }
            if let Some(commit) = self.commits.get(&current) {
                found.push(commit);
                queue.extend(commit.parents.iter().cloned());
            }
        }
        found.sort_by(|left, right| {
            (left.committer.date, &left.sha).cmp(&(right.committer.date, &right.sha))
        });
        (found, merge_base)
    }

    /// Files that differ between two commits' trees (`from` absent = every file is added).
    pub fn diff_commits(&self, from: Option<&str>, to: &str) -> Vec<FileChange> {
        let before = from.map(|sha| self.commit_files(sha)).unwrap_or_default();
        let after = self.commit_files(to);
        let mut changes = Vec::new();
        for (path, blob) in &after {
            let lines = self.blob_lines(blob);
            match before.get(path) {
                None => changes.push(FileChange {
                    path: path.clone(),
                    status: "added",
                    blob_sha: Some(blob.clone()),
                    additions: lines,
                    deletions: 0,
                    previous_path: None,
                }),
                Some(old) if old != blob => changes.push(FileChange {
                    path: path.clone(),
                    status: "modified",
                    blob_sha: Some(blob.clone()),
                    additions: lines,
                    deletions: self.blob_lines(old),
                    previous_path: None,
                }),
                Some(_) => {}
            }
        }
        for (path, blob) in &before {
            if !after.contains_key(path) {
                changes.push(FileChange {
                    path: path.clone(),
                    status: "removed",
                    blob_sha: None,
                    additions: 0,
                    deletions: self.blob_lines(blob),
                    previous_path: None,
                });
            }
        }
        pair_renames(&mut changes, &before);
        changes.sort_by(|left, right| left.path.cmp(&right.path));
        changes
    }

    fn blob_lines(&self, blob: &str) -> u64 {
        self.blobs
            .get(blob)
            .map(|content| content.lines().count() as u64)
            .unwrap_or(0)
    }

    /// History from `start` as `git log` orders it (newest first, a commit always before its
    /// parents); with a path, only commits that changed it.
    pub fn history(&self, start: &str, path: Option<&str>) -> Vec<&Commit> {
        let mut queue = BinaryHeap::new();
        let mut seen = HashSet::new();
        let mut pushed = 0u64;
        let mut ordered = Vec::new();
        if let Some(commit) = self.commits.get(start) {
            queue.push((commit.committer.date, Reverse(pushed), commit.sha.as_str()));
            seen.insert(start.to_string());
        }
        while let Some((_, _, sha)) = queue.pop() {
            let commit = &self.commits[sha];
            if path.is_none_or(|path| self.commit_touches(commit, path)) {
                ordered.push(commit);
            }
            for parent in &commit.parents {
                if let Some(parent_commit) = self.commits.get(parent)
                    && seen.insert(parent.clone())
                {
                    pushed += 1;
                    queue.push((
                        parent_commit.committer.date,
                        Reverse(pushed),
                        parent_commit.sha.as_str(),
                    ));
                }
            }
        }
        ordered
    }

    fn commit_touches(&self, commit: &Commit, path: &str) -> bool {
        let blob_here = self.tree_files(&commit.tree).get(path).cloned();
        let blob_before = commit
            .parents
            .first()
            .and_then(|parent| self.commit_files(parent).get(path).cloned());
        blob_here != blob_before
    }

    /// Points a ref at a commit; open pull requests whose head is that branch of this
    /// repository follow it, as they do on GitHub.
    pub fn set_ref(&mut self, full_ref: &str, sha: &str) {
        self.refs.insert(full_ref.to_string(), sha.to_string());
        let Some(branch) = full_ref.strip_prefix("refs/heads/") else {
            return;
        };
        let full_name = self.full_name();
        let now = self.now();
        for pull in self.pulls.values_mut() {
            if pull.state == PullState::Open
                && pull.head_ref == branch
                && pull.head_repo.as_deref() == Some(full_name.as_str())
                && pull.head_sha != sha
            {
                pull.head_sha = sha.to_string();
                pull.updated_at = now;
            }
        }
    }

    /// Writes (or, with `None`, removes) files on a branch as one commit by `login`, creating the
    /// branch as an orphan when it does not exist. Returns the new commit's sha.
    pub fn commit_files_on_branch(
        &mut self,
        branch: &str,
        changes: &[(String, Option<String>)],
        message: &str,
        login: &str,
        at: Timestamp,
    ) -> String {
        let parent = self.branch_sha(branch).map(str::to_string);
        let mut files = parent
            .as_deref()
            .map(|sha| self.commit_files(sha))
            .unwrap_or_default();
        for (path, content) in changes {
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
        let identity = identity_for_login(login, at);
        let sha = self.store_commit(NewCommit {
            tree,
            parents: parent.into_iter().collect(),
            message: message.to_string(),
            author: identity.clone(),
            committer: identity,
            author_login: Some(login.to_string()),
            committer_login: Some(login.to_string()),
        });
        self.set_ref(&format!("refs/heads/{branch}"), &sha);
        sha
    }
}
