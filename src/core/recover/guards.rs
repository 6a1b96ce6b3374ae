//! The guards of contract §5 on one candidate, in one place: every commit of the pull request
//! the bot's (its head above all), no sweep started by anyone but the bot after the session
//! ended, no unreadable detail; and for a leftover branch, a pull request the bot closed, every
//! commit the bot's and the branch still at its head. Whatever these find is decided before any
//! action of the candidate is planned.

use chrono::{DateTime, Utc};

use super::{Decider, Seen};
use crate::core::ownership::{CommitOwnership, commit_ownership, started_by_someone_else};
use crate::core::plan::Action;
use crate::core::snapshot::PullRequestFact;

/// What examining a pull request found.
pub(super) enum Examination {
    /// The guards hold; `maintainer_commit` names a non-bot commit below a bot head.
    Clear {
        maintainer_commit: Option<String>,
        final_sweep_succeeded: bool,
        active_sweep: Option<u64>,
    },
    /// A maintainer may be acting (or a read failed): nothing is touched. `remember` when the
    /// finding holds as long as the head stays where it is.
    NeedsInspection { reason: String, remember: bool },
    /// A detail has not been read yet.
    Waiting(String),
}

/// The §5 guards on an open pull request: every commit the bot's (the head above all), no
/// sweep started by anyone else after `since`, no unreadable detail.
pub(super) fn examine_pull_request(
    decider: &mut Decider<'_>,
    pull: &PullRequestFact,
    since: DateTime<Utc>,
    since_what: &str,
) -> Examination {
    let bot = decider.policy.bot.clone();
    let commits = match decider.commits(pull.number) {
        Seen::Known(commits) => commits,
        Seen::Failed(error) => {
            return Examination::NeedsInspection {
                reason: format!(
                    "the commits of #{} could not be read ({error})",
                    pull.number
                ),
                remember: false,
            };
        }
        Seen::Unread => return Examination::Waiting(format!("the commits of #{}", pull.number)),
    };
    let maintainer_commit = match commit_ownership(commits, pull.number, &pull.head_sha, &bot) {
        CommitOwnership::Unsettled { reason, remember } => {
            return Examination::NeedsInspection { reason, remember };
        }
        CommitOwnership::ForeignCommit { login } => Some(login),
        CommitOwnership::BotOnly => None,
    };
    if maintainer_commit.is_some() {
        // Left alone whatever the sweeps say: no need to read them.
        return Examination::Clear {
            maintainer_commit,
            final_sweep_succeeded: false,
            active_sweep: None,
        };
    }
    let branch = pull.head_branch.clone();
    match maintainer_sweep(decider, &branch, since, since_what) {
        Ok(Some(reason)) => {
            return Examination::NeedsInspection {
                reason,
                remember: false,
            };
        }
        Ok(None) => {}
        Err(what) => return Examination::Waiting(what),
    }
    let Seen::Known(sweeps) = decider.sweeps(&branch) else {
        return Examination::Waiting(format!("the sweep runs of {branch}"));
    };
    let sweep_workflow = decider.policy.sweep_workflow.clone();
    let active_sweep = sweeps
        .items
        .iter()
        .find(|run| run.active && run.workflow == sweep_workflow)
        .map(|run| run.id);
    let final_sweep_succeeded = sweeps
        .items
        .iter()
        .filter(|run| !run.active && run.head_sha == pull.head_sha)
        .max_by_key(|run| (run.created_at, run.id))
        .is_some_and(|run| run.succeeded());
    Examination::Clear {
        maintainer_commit: None,
        final_sweep_succeeded,
        active_sweep,
    }
}

/// `Ok(Some(reason))` when a sweep run on `branch` was started by anyone but the bot after
/// `since`; `Err(what)` while the sweep runs are unread.
pub(super) fn maintainer_sweep(
    decider: &mut Decider<'_>,
    branch: &str,
    since: DateTime<Utc>,
    since_what: &str,
) -> Result<Option<String>, String> {
    let bot = decider.policy.bot.clone();
    match decider.sweeps(branch) {
        Seen::Unread => Err(format!("the sweep runs of {branch}")),
        Seen::Failed(error) => Ok(Some(format!(
            "the sweep runs of {branch} could not be read ({error})"
        ))),
        Seen::Known(sweeps) if !sweeps.is_complete() => Ok(Some(format!(
            "the sweep runs of {branch} could not all be listed ({})",
            sweeps.gap.clone().unwrap_or_default()
        ))),
        Seen::Known(sweeps) => Ok(sweeps
            .items
            .iter()
            .filter(|run| run.created_at > since)
            .find_map(|run| started_by_someone_else(run, &bot).map(|login| (run.id, login)))
            .map(|(id, login)| {
                format!(
                    "sweep run {id} on {branch} was started by {login} after {since_what}: a maintainer is acting"
                )
            })),
    }
}

/// Why a leftover branch is not deleted.
pub(super) enum BranchFinding {
    Waiting(String),
    Kept(String),
}

/// The deletion of `branch` after its pull request `number` was closed by the bot: only when
/// every commit is the bot's and the branch still points at the pull request's head.
pub(super) fn deletable_branch(
    decider: &mut Decider<'_>,
    branch: &str,
    number: u64,
) -> Result<Option<Action>, BranchFinding> {
    let Some(sha) = decider
        .snapshot
        .refs
        .items
        .iter()
        .find(|reference| reference.name == branch)
        .map(|reference| reference.sha.clone())
    else {
        return Ok(None);
    };
    let bot = decider.policy.bot.clone();
    let commits = match decider.commits(number) {
        Seen::Known(commits) => commits,
        Seen::Failed(error) => {
            return Err(BranchFinding::Kept(format!(
                "the commits of #{number} could not be read ({error})"
            )));
        }
        Seen::Unread => return Err(BranchFinding::Waiting(format!("the commits of #{number}"))),
    };
    if !commits.complete {
        return Err(BranchFinding::Kept(format!(
            "#{number} has more commits than GitHub lists"
        )));
    }
    if let Some(commit) = commits.commits.iter().find(|commit| {
        commit.author.as_deref() != Some(bot.as_str())
            || commit.committer.as_deref() != Some(bot.as_str())
    }) {
        let login = commit
            .author
            .clone()
            .filter(|login| login != &bot)
            .or_else(|| commit.committer.clone())
            .unwrap_or_else(|| "an unknown author".into());
        return Err(BranchFinding::Kept(format!("a commit by {login}")));
    }
    if commits.commits.last().map(|commit| commit.sha.as_str()) != Some(sha.as_str()) {
        return Err(BranchFinding::Kept(format!(
            "it moved since #{number} was closed"
        )));
    }
    Ok(Some(Action::DeleteBranch {
        branch: branch.to_string(),
        expected_sha: sha,
        closed_pull_request: number,
    }))
}
