//! `finish` closing what a validated session supersedes (contract §12, *Superseded*): when a
//! candidate's first session ends `validated` and its pull request is made ready, the other
//! after-care pull requests of its family are marked superseded in the same ledger write; then
//! each one still open is examined — every §5 guard re-checked on what was just read — and
//! closed with klaud's `Superseded by #N` note and its branch deleted (`supersede_group`).
//!
//! A guard that fails leaves the pull request to its maintainers for good (its record becomes
//! `left`), with nothing written on GitHub. A read that failed, or an after-care session of its
//! own still open, closes nothing this time: the record stays superseded and the next `recover`
//! closes it.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::aftercare::{AftercareRecord, AftercareState, SessionKind, supersede_group};
use super::finish::{Cleanup, FinishPlan, FinishRequest, record};
use super::ledger::{Ledger, SessionState};
use super::outcome::Outcome;
use super::ownership::{CommitOwnership, commit_ownership, foreign_sweep_since};
use super::plan::{ActionGroup, LedgerExpectation};
use super::policy::Policy;
use super::snapshot::{CommitsFact, Listed, PullRequestFact, Read, RunFact};

/// The ledger after `plan` ([`record`]) with the after-care pull requests the validated session
/// supersedes marked, in the one write `finish` makes; `None` when it already says so.
pub fn record_superseding(
    ledger: &Ledger,
    plan: &FinishPlan,
    request: &FinishRequest,
    policy: &Policy,
    now: DateTime<Utc>,
) -> Option<Ledger> {
    let mut next = record(ledger, plan, request, now).unwrap_or_else(|| ledger.clone());
    if let Some((family, by)) = superseding(ledger, plan) {
        next.mark_superseded(&family, by, policy.aftercare.supersede, now);
    }
    (next != *ledger).then_some(next)
}

/// The family and the pull request of a session that supersedes the others of its family: a
/// candidate's first session (not an after-care one, which is no newer candidate) that ended
/// `validated` with its pull request made ready.
fn superseding(ledger: &Ledger, plan: &FinishPlan) -> Option<(String, u64)> {
    if plan.outcome != Outcome::Validated || plan.cleanup != Cleanup::Done {
        return None;
    }
    let by = plan.pull_request?;
    let session = ledger.session_of(&plan.candidate)?;
    (session.kind == SessionKind::Propose).then(|| (session.family.clone(), by))
}

/// The records to close after `plan`: those the ledger marks superseded by its pull request,
/// when it is a validated one.
pub fn to_close<'a>(ledger: &'a Ledger, plan: &FinishPlan) -> Vec<&'a AftercareRecord> {
    if plan.outcome != Outcome::Validated || plan.cleanup != Cleanup::Done {
        return Vec::new();
    }
    let Some(by) = plan.pull_request else {
        return Vec::new();
    };
    ledger
        .aftercare
        .iter()
        .filter(|record| matches!(record.state, AftercareState::Superseded { by: newer, .. } if newer == by))
        .collect()
}

/// What `finish` read about one pull request it is to close.
#[derive(Debug, Clone)]
pub struct SupersededFacts {
    /// The pull request, read with its commits in one batch.
    pub pull: Read<PullRequestFact>,
    pub commits: Read<CommitsFact>,
    /// The sweep runs on its branch since it was validated (none without a sweep workflow).
    pub sweeps: Read<Listed<RunFact>>,
}

/// What becomes of one superseded pull request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "verdict")]
pub enum SupersedeVerdict {
    /// Every guard holds: it is closed with klaud's note and its branch deleted.
    Close,
    /// A guard failed: nothing is written on GitHub, and after-care leaves it for good.
    Left { reason: String },
    /// Not this time: it stays superseded and the next `recover` closes it.
    Later { reason: String },
    /// It is closed or merged already: nothing to close.
    Gone { reason: String },
}

/// One superseded pull request as `finish` decided it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Supersede {
    pub pull_request: u64,
    pub candidate: String,
    /// The newer pull request that supersedes it.
    pub by: u64,
    #[serde(flatten)]
    pub verdict: SupersedeVerdict,
    /// Why its branch is kept although it is closed, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_kept: Option<String>,
    /// The writes that close it, behind the re-check of the pull request as examined.
    #[serde(skip)]
    pub group: Option<ActionGroup>,
}

/// Decides one superseded pull request from what was read: the §5 guards first, then the group
/// that closes it. Its own after-care session still open waits for that session to end.
pub fn decide_superseded(
    record: &AftercareRecord,
    facts: &SupersededFacts,
    ledger: &Ledger,
    policy: &Policy,
    by: u64,
) -> Supersede {
    let mut decided = Supersede {
        pull_request: record.pull_request,
        candidate: record.candidate.clone(),
        by,
        verdict: SupersedeVerdict::Close,
        branch_kept: None,
        group: None,
    };
    let pull = match examine(record, facts, ledger, policy) {
        Ok(pull) => pull,
        Err(verdict) => {
            decided.verdict = verdict;
            return decided;
        }
    };
    // An open pull request of this repository: its branch points at its head, and the deletion
    // is conditional on that sha (contract §5a), so a push landing since keeps the branch.
    let (group, kept) = supersede_group(
        policy,
        pull,
        Some(&pull.head_sha),
        by,
        LedgerExpectation::NoOpenSession,
    );
    decided.group = Some(group);
    decided.branch_kept = kept;
    decided
}

/// The §5 guards on a superseded pull request, in order: read, open, not handed off, the bot's
/// of this repository, no session of its own open, every commit the bot's, no sweep started by
/// anyone but the bot since it was validated.
fn examine<'a>(
    record: &AftercareRecord,
    facts: &'a SupersededFacts,
    ledger: &Ledger,
    policy: &Policy,
) -> Result<&'a PullRequestFact, SupersedeVerdict> {
    let number = record.pull_request;
    let later = |reason: String| SupersedeVerdict::Later { reason };
    let left = |reason: String| SupersedeVerdict::Left { reason };
    let pull = facts
        .pull
        .as_ref()
        .map_err(|error| later(format!("#{number} could not be read ({error})")))?;
    if pull.merged || !pull.open {
        let state = if pull.merged { "merged" } else { "closed" };
        return Err(SupersedeVerdict::Gone {
            reason: format!("#{number} is {state} already"),
        });
    }
    if pull.labels.contains(&policy.handoff_label) {
        return Err(left(format!("#{number} carries {}", policy.handoff_label)));
    }
    if pull.author.as_deref() != Some(policy.bot.as_str()) || !pull.from_this_repository {
        return Err(left(format!(
            "#{number} is not the bot's pull request of this repository"
        )));
    }
    if let Some(session) = ledger.sessions.iter().find(|session| {
        session.candidate == record.candidate && session.state != SessionState::Finished
    }) {
        return Err(later(format!(
            "a {} session of candidate {} is open",
            session.kind, record.candidate
        )));
    }
    let commits = facts.commits.as_ref().map_err(|error| {
        later(format!(
            "the commits of #{number} could not be read ({error})"
        ))
    })?;
    match commit_ownership(commits, number, &pull.head_sha, &policy.bot) {
        CommitOwnership::BotOnly => {}
        CommitOwnership::ForeignCommit { login } => {
            return Err(left(format!("#{number} has a commit by {login}")));
        }
        CommitOwnership::Unsettled {
            reason,
            remember: true,
        } => return Err(left(reason)),
        CommitOwnership::Unsettled { reason, .. } => return Err(later(reason)),
    }
    maintainers_sweep(record, pull, &facts.sweeps, policy)?;
    Ok(pull)
}

/// A sweep on the pull request's branch started by anyone but the bot since it was validated:
/// a maintainer is acting. Sweeps that could not all be listed close nothing this time.
fn maintainers_sweep(
    record: &AftercareRecord,
    pull: &PullRequestFact,
    sweeps: &Read<Listed<RunFact>>,
    policy: &Policy,
) -> Result<(), SupersedeVerdict> {
    let branch = &pull.head_branch;
    let sweeps = match sweeps {
        Ok(sweeps) if sweeps.is_complete() => sweeps,
        Ok(sweeps) => {
            return Err(SupersedeVerdict::Later {
                reason: format!(
                    "the sweep runs of {branch} could not all be listed ({})",
                    sweeps.gap.clone().unwrap_or_default()
                ),
            });
        }
        Err(error) => {
            return Err(SupersedeVerdict::Later {
                reason: format!("the sweep runs of {branch} could not be read ({error})"),
            });
        }
    };
    match foreign_sweep_since(
        &sweeps.items,
        record.validated_at,
        &policy.bot,
        |workflow| policy.is_sweep(workflow),
    ) {
        Some((run, login)) => Err(SupersedeVerdict::Left {
            reason: format!(
                "sweep run {} on {branch} was started by {login} after #{} was validated: a maintainer is acting",
                run.id, pull.number
            ),
        }),
        None => Ok(()),
    }
}

/// The ledger with the pull requests whose guard failed left for good, each still superseded
/// by `by`; `None` when nothing changes.
pub fn record_left(
    ledger: &Ledger,
    decided: &[Supersede],
    by: u64,
    now: DateTime<Utc>,
) -> Option<Ledger> {
    let mut next = ledger.clone();
    for supersede in decided {
        let SupersedeVerdict::Left { reason } = &supersede.verdict else {
            continue;
        };
        if let Some(record) = next.aftercare.iter_mut().find(|record| {
            record.pull_request == supersede.pull_request
                && matches!(record.state, AftercareState::Superseded { by: newer, .. } if newer == by)
        }) {
            record.state = AftercareState::Left {
                since: now,
                reason: reason.clone(),
            };
        }
    }
    (next != *ledger).then_some(next)
}

#[cfg(test)]
#[path = "finish_supersede_tests.rs"]
mod tests;
