//! The guards of contract §5 on one candidate, in one place: every commit of the pull request
//! the bot's (its head above all), no sweep started by anyone but the bot after the session
//! ended, no unreadable detail; for a leftover branch, a pull request the bot closed, every
//! commit the bot's and the branch still at its head; for an after-care pull request (contract
//! §12), every commit the bot's and no sweep by anyone else since it was validated. Whatever
//! these find is decided before any action of the candidate is planned.

use chrono::{DateTime, Utc};

use super::{Facts, Seen};
use crate::core::ownership::{CommitOwnership, commit_ownership, foreign_sweep_since};
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
    facts: &Facts<'_>,
    pull: &PullRequestFact,
    since: DateTime<Utc>,
    since_what: &str,
) -> Examination {
    let bot = facts.policy.bot.clone();
    let commits = match facts.commits(pull.number) {
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
    match maintainer_sweep(facts, &branch, since, since_what) {
        SweepFinding::Maintainer(reason) | SweepFinding::Unreadable(reason) => {
            return Examination::NeedsInspection {
                reason,
                remember: false,
            };
        }
        SweepFinding::Clear => {}
        SweepFinding::Unread(what) => return Examination::Waiting(what),
    }
    let Seen::Known(sweeps) = facts.sweeps(&branch) else {
        return Examination::Waiting(format!("the sweep runs of {branch}"));
    };
    let active_sweep = sweeps
        .items
        .iter()
        .find(|run| run.active && facts.policy.is_sweep(&run.workflow))
        .map(|run| run.id);
    // Without a sweep workflow a validated outcome needs no sweep.
    let final_sweep_succeeded = facts.policy.sweep_workflow.is_none()
        || sweeps
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

/// What the sweep runs of a branch say about who is acting on it.
pub(super) enum SweepFinding {
    /// Only the bot started sweeps since then.
    Clear,
    /// A sweep was started by someone else since then: a maintainer is acting.
    Maintainer(String),
    /// The sweeps could not be read, or not all listed: a maintainer may be acting.
    Unreadable(String),
    /// The sweep runs are not read yet (what is missing).
    Unread(String),
}

/// Whether a sweep run on `branch` was started by anyone but the bot after `since`.
pub(super) fn maintainer_sweep(
    facts: &Facts<'_>,
    branch: &str,
    since: DateTime<Utc>,
    since_what: &str,
) -> SweepFinding {
    let bot = facts.policy.bot.clone();
    match facts.sweeps(branch) {
        Seen::Unread => SweepFinding::Unread(format!("the sweep runs of {branch}")),
        Seen::Failed(error) => SweepFinding::Unreadable(format!(
            "the sweep runs of {branch} could not be read ({error})"
        )),
        Seen::Known(sweeps) if !sweeps.is_complete() => SweepFinding::Unreadable(format!(
            "the sweep runs of {branch} could not all be listed ({})",
            sweeps.gap.clone().unwrap_or_default()
        )),
        Seen::Known(sweeps) => foreign_sweep_since(&sweeps.items, since, &bot, |workflow| {
            facts.policy.is_sweep(workflow)
        })
        .map_or(SweepFinding::Clear, |(run, login)| {
            SweepFinding::Maintainer(format!(
                "sweep run {} on {branch} was started by {login} after {since_what}: a maintainer is acting",
                run.id
            ))
        }),
    }
}

/// What the guards of contract §12 say about an after-care pull request, read just before
/// klaud acts on it.
pub(super) enum AftercareGuards {
    /// Every guard holds.
    Hold,
    /// Someone else acts on it (a commit or a sweep not the bot's): after-care leaves it for
    /// good.
    Touched(String),
    /// A read failed or disagreed with the listing: left as it is this pass.
    Unsure(String),
    /// A detail has not been read yet.
    Waiting(String),
}

/// The commits guard of an after-care pull request: every commit the bot's, its head above all.
/// A head or a history that is not provably the bot's is a touch; a failed read, or a listing
/// that does not end at the head, is only unsure.
pub(super) fn aftercare_commits(facts: &Facts<'_>, pull: &PullRequestFact) -> AftercareGuards {
    let commits = match facts.commits(pull.number) {
        Seen::Known(commits) => commits,
        Seen::Failed(error) => {
            return AftercareGuards::Unsure(format!(
                "the commits of #{} could not be read ({error})",
                pull.number
            ));
        }
        Seen::Unread => {
            return AftercareGuards::Waiting(format!("the commits of #{}", pull.number));
        }
    };
    match commit_ownership(commits, pull.number, &pull.head_sha, &facts.policy.bot) {
        CommitOwnership::BotOnly => AftercareGuards::Hold,
        CommitOwnership::ForeignCommit { login } => {
            AftercareGuards::Touched(format!("#{} has a commit by {login}", pull.number))
        }
        CommitOwnership::Unsettled {
            reason,
            remember: true,
        } => AftercareGuards::Touched(reason),
        CommitOwnership::Unsettled { reason, .. } => AftercareGuards::Unsure(reason),
    }
}

/// Every guard of an after-care pull request that needs a read: its commits, then no sweep on
/// its branch started by anyone but the bot since it was validated (`since`).
pub(super) fn aftercare_guards(
    facts: &Facts<'_>,
    pull: &PullRequestFact,
    since: DateTime<Utc>,
) -> AftercareGuards {
    match aftercare_commits(facts, pull) {
        AftercareGuards::Hold => {}
        finding => return finding,
    }
    match maintainer_sweep(facts, &pull.head_branch, since, "it was validated") {
        SweepFinding::Clear => AftercareGuards::Hold,
        SweepFinding::Maintainer(reason) => AftercareGuards::Touched(reason),
        SweepFinding::Unreadable(reason) => AftercareGuards::Unsure(reason),
        SweepFinding::Unread(what) => AftercareGuards::Waiting(what),
    }
}

/// What a ready (non-draft) pull request allows: reconciling and sweeping never close or
/// redraft one (contract §5); only a validated record explains it.
pub(super) enum ReadyPullRequest {
    /// A validated outcome is on record: it stays ready.
    Validated,
    /// No validated record: a maintainer may have marked it ready.
    Unexplained(String),
}

/// The ready-pull-request guard, in one place: `None` for a draft.
pub(super) fn ready_pull_request(
    pull: &PullRequestFact,
    validated_on_record: bool,
) -> Option<ReadyPullRequest> {
    if pull.draft {
        return None;
    }
    Some(if validated_on_record {
        ReadyPullRequest::Validated
    } else {
        ReadyPullRequest::Unexplained(format!(
            "#{} is ready for review without a validated record: reconciling never closes or redrafts it",
            pull.number
        ))
    })
}

/// Why a leftover branch is not deleted.
pub(super) enum BranchFinding {
    Waiting(String),
    Kept(String),
}

/// The deletion of `branch` after its pull request `number` was closed by the bot: only when
/// every commit is the bot's and the branch still points at the pull request's head.
pub(super) fn deletable_branch(
    facts: &Facts<'_>,
    branch: &str,
    number: u64,
) -> Result<Option<Action>, BranchFinding> {
    let Some(sha) = facts.branch_sha(branch).map(str::to_string) else {
        return Ok(None);
    };
    let bot = facts.policy.bot.clone();
    let commits = match facts.commits(number) {
        Seen::Known(commits) => commits,
        Seen::Failed(error) => {
            return Err(BranchFinding::Kept(format!(
                "the commits of #{number} could not be read ({error})"
            )));
        }
        Seen::Unread => return Err(BranchFinding::Waiting(format!("the commits of #{number}"))),
    };
    // The one reading of who owns the commits, with the branch as the head they must end at:
    // a branch that moved since the pull request closed no longer ends where its commits do.
    match commit_ownership(commits, number, &sha, &bot) {
        CommitOwnership::BotOnly => {}
        CommitOwnership::ForeignCommit { login } => {
            return Err(BranchFinding::Kept(format!("a commit by {login}")));
        }
        CommitOwnership::Unsettled { reason, .. } => {
            return Err(BranchFinding::Kept(format!(
                "{reason} (the branch is at {})",
                sha.get(..7).unwrap_or(&sha)
            )));
        }
    }
    Ok(Some(Action::DeleteBranch {
        branch: branch.to_string(),
        expected_sha: sha,
        closed_pull_request: number,
    }))
}
