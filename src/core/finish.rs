//! `finish`'s decision (contract §3.5, §4, §5): from the reported outcome and the facts of one
//! candidate's session — its pull request, commits, who closed it, its runs and its branch — what
//! the session's outcome is, which changes clean it up, and what the ledger records.
//!
//! After-care (contract §12): every `validated` ending makes its pull request watched (again)
//! at its head ([`record_aftercare`]); an after-care session (`refresh`, `repair`) that ends any
//! other way leaves its pull request open as a draft with its branch, labelled
//! `klaud-needs-maintainer` — never closed, its branch never deleted.
//!
//! The guards of §5 bind here as in `recover`: a pull request with a maintainer's commit, a head
//! moved to a commit that is not the bot's, a sweep started by a maintainer after the session
//! began, a ready pull request without a validated record, or a fact that could not be read
//! leave everything as it is and are reported. A closed pull request is never redrafted or
//! closed again; a handed-off one is never touched.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::execution::AgentRecord;
use super::finish_issue::{IssueFact, closed_without_merge};
use super::ledger::{AttemptEnd, JobRef, Ledger, Session, SessionState};
use super::outcome::{BranchOnCleanup, Outcome, StatusLabel};
use super::ownership::{CommitOwnership, commit_ownership, foreign_sweep_since};
use super::plan::{
    Action, ActionGroup, LedgerExpectation, MarkedComment, PullRequestCheck, status_label_action,
};
use super::policy::{Policy, SessionLimits};
use super::session::aftercare::aftercare_pull_request;
use super::snapshot::{CommitsFact, PullRequestFact, Read, RunFact};

/// What the agent's workflow reported.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishRequest {
    pub candidate: String,
    pub outcome: Outcome,
    /// False when the agent step never ran (`--agent-outcome skipped`): no cooldown.
    pub agent_ran: bool,
    /// Leave the session parked instead of finishing it.
    pub park: bool,
    /// This job (`GITHUB_RUN_ID`, `GITHUB_RUN_ATTEMPT`): its attempt, if `session` adopted one,
    /// is ended; its execution record is kept once whether or not one was adopted.
    pub job: JobRef,
    /// Why the attempt ends: its time ran out (parked), or the session's outcome.
    pub attempt_end: AttemptEnd,
    /// The runs on the session's branch this job saw, kept with the attempt.
    pub runs_seen: Vec<u64>,
    /// What the agent's execution record said, kept with the attempt.
    pub agent: Option<AgentRecord>,
}

/// What the deadline means for a job that ends without an outcome (contract §9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadlineVerdict {
    /// The job ended before its deadline, reported an outcome, or ran no adopted attempt.
    NotReached,
    /// Its time ran out with jobs left: the session is parked to continue in a new job.
    Park { attempt: u32, max_attempts: u32 },
    /// Its time ran out in the last job the session may take: it ends `no-outcome`.
    OutOfAttempts { attempts: u32 },
}

/// The reason code a session that ended on its run's own cap is recorded with.
pub const BUDGET_REASON_CODE: &str = "budget";

/// How a job ended, read before anything is decided about the pull request (contract §9, §10).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum JobEnding {
    /// The agent CLI stopped on the run's own cap (`--max-budget-usd`, result subtype
    /// `error_max_budget_usd`) without an outcome: the session ends `no-outcome` with reason
    /// `budget`, its cost recorded, never parked (another job would spend the same money again).
    BudgetStop { cost_usd: Option<f64> },
    /// Anything else: what the attempt's deadline says.
    Deadline(DeadlineVerdict),
}

impl JobEnding {
    /// Whether the session is parked: only when its time ran out with jobs left, or the workflow
    /// asked for it (`requested`) — never after a budget stop.
    pub fn park(self, requested: bool) -> bool {
        match self {
            JobEnding::BudgetStop { .. } => false,
            JobEnding::Deadline(DeadlineVerdict::Park { .. }) => true,
            JobEnding::Deadline(_) => requested,
        }
    }

    /// How the attempt ends in the ledger.
    pub fn attempt_end(self) -> AttemptEnd {
        match self {
            JobEnding::Deadline(DeadlineVerdict::Park { .. }) => AttemptEnd::TimeRanOut,
            _ => AttemptEnd::Finished,
        }
    }

    /// The reason code the session is recorded with, when the ending gives one.
    pub fn reason_code(self) -> Option<&'static str> {
        match self {
            JobEnding::BudgetStop { .. } => Some(BUDGET_REASON_CODE),
            JobEnding::Deadline(_) => None,
        }
    }
}

/// How this job ended: a run the CLI stopped on its cap, when no outcome was reported; else what
/// [`deadline_verdict`] says.
pub fn job_ending(
    session: &Session,
    run: u64,
    agent_step_failed: bool,
    outcome_reported: bool,
    agent: Option<&AgentRecord>,
    limits: SessionLimits,
    now: DateTime<Utc>,
) -> JobEnding {
    match agent {
        Some(record) if record.stopped_on_budget() && !outcome_reported => JobEnding::BudgetStop {
            cost_usd: record.cost_usd,
        },
        _ => JobEnding::Deadline(deadline_verdict(
            session,
            run,
            agent_step_failed,
            outcome_reported,
            limits,
            now,
        )),
    }
}

/// Whether this job's agent step ran out of time: it ended in failure or was cancelled, left no
/// valid outcome, and the deadline of the attempt this run adopted has passed.
pub fn deadline_verdict(
    session: &Session,
    run: u64,
    agent_step_failed: bool,
    outcome_reported: bool,
    limits: SessionLimits,
    now: DateTime<Utc>,
) -> DeadlineVerdict {
    let Some(attempt) = session.attempts.iter().rev().find(|a| a.run == run) else {
        return DeadlineVerdict::NotReached;
    };
    if !agent_step_failed || outcome_reported || now < attempt.deadline {
        return DeadlineVerdict::NotReached;
    }
    let taken = session.attempts.len() as u32;
    if taken < limits.max_attempts {
        DeadlineVerdict::Park {
            attempt: attempt.number,
            max_attempts: limits.max_attempts,
        }
    } else {
        DeadlineVerdict::OutOfAttempts { attempts: taken }
    }
}

/// The facts `finish` reads about one candidate.
#[derive(Debug, Clone, Default)]
pub struct FinishFacts {
    /// The candidate's pull request from `<branch-prefix><id>` in this repository, if any.
    pub pull: Option<PullRequestFact>,
    pub commits: Option<Read<CommitsFact>>,
    /// Who closed the pull request, when it is closed.
    pub closed_by: Option<Read<Option<String>>>,
    /// Runs on the candidate's branch (smoke and sweep), complete or an error.
    pub branch_runs: Option<Read<Vec<RunFact>>>,
    /// Runs the outcome file names.
    pub named_runs: Vec<RunFact>,
    /// Where the candidate branch points now (`None`: no branch).
    pub branch_sha: Option<String>,
    /// This run: never cancelled.
    pub own_run: u64,
    /// The issue the candidate came from (contract §13), when it came from one.
    pub issue: Option<IssueFact>,
}

/// How `finish` ends for the candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cleanup {
    /// Finished and cleaned up per the outcome.
    Done,
    /// Left parked, to be started again by recovery.
    Parked,
    /// The pull request belongs to maintainers (handoff, a maintainer closed it, merged).
    Untouched,
    /// A §5 guard holds: nothing changed but the outcome noted for recovery.
    LeftAlone,
}

impl Cleanup {
    pub fn name(self) -> &'static str {
        match self {
            Cleanup::Done => "done",
            Cleanup::Parked => "parked",
            Cleanup::Untouched => "untouched",
            Cleanup::LeftAlone => "left-alone",
        }
    }
}

/// What the ledger's after-care records learn from the ending (contract §12).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "record", rename_all = "kebab-case")]
pub enum AftercareEnding {
    /// Nothing: the session was not finished here, or its pull request is not klaud's to watch.
    Unchanged,
    /// Validated and made ready at `head`: watched (again).
    Watched { head: String },
    /// An after-care session ended without `validated`: its pull request waits for a maintainer.
    NeedsMaintainer,
}

/// What `finish` decided.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct FinishPlan {
    pub candidate: String,
    /// The outcome recorded (the reported one, unless the pull request says otherwise).
    pub outcome: Outcome,
    pub cleanup: Cleanup,
    /// Why, in one line.
    pub reason: String,
    pub pull_request: Option<u64>,
    /// The issue the candidate came from, which keeps klaud's comment on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issue: Option<u64>,
    /// Post or refresh the completion receipt on the pull request.
    pub receipt: bool,
    /// The pull request as examined: re-read and compared just before its first change.
    pub check: Option<PullRequestCheck>,
    /// Runs cancelled first; the changes below wait until they ended (bounded).
    pub cancel: Vec<Action>,
    /// Pull request and branch changes, in order.
    pub actions: Vec<Action>,
    /// What the ledger's after-care records learn.
    pub aftercare: AftercareEnding,
}

impl FinishPlan {
    /// The plan's writes as the one group the executor applies: the runs cancelled first, then
    /// the receipt (`receipt_body`, made by [`receipt_body`]) and the pull request and branch
    /// changes, all behind the re-check of the pull request. `None` when there is nothing to
    /// send.
    pub fn action_group(&self, receipt_body: String, parent_run: u64) -> Option<ActionGroup> {
        let mut actions = self.cancel.clone();
        if let (true, Some(number)) = (self.receipt, self.pull_request) {
            actions.push(Action::PostMarkedComment {
                pull_request: number,
                comment: MarkedComment::Receipt,
                marker: receipt_marker(&self.candidate, parent_run),
                body: receipt_body,
            });
        }
        actions.extend(self.actions.iter().cloned());
        (!actions.is_empty()).then(|| ActionGroup {
            subject: self.candidate.clone(),
            candidate: Some(self.candidate.clone()),
            pull_request_check: self.check.clone(),
            destructive: false,
            ledger_expectation: LedgerExpectation::Nothing,
            independent: false,
            actions,
        })
    }
}

/// Decides `finish` for `session` (the candidate's newest session) and the facts read: where
/// the pull request stands (the §5 guards), then what the reported outcome asks of it.
pub fn decide(
    request: &FinishRequest,
    session: &Session,
    facts: &FinishFacts,
    policy: &Policy,
) -> FinishPlan {
    let Some(retired) = retired_by_its_issue(request, facts) else {
        return decide_for(request, session, facts, policy);
    };
    let mut plan = decide_for(&retired, session, facts, policy);
    plan.reason = format!(
        "its issue was closed, not by the merge of its pull request: {}",
        plan.reason
    );
    plan
}

/// [`decide`] for the request as it stands.
fn decide_for(
    request: &FinishRequest,
    session: &Session,
    facts: &FinishFacts,
    policy: &Policy,
) -> FinishPlan {
    let plan = FinishPlan::examined(request, facts, policy);
    let Some(pull) = &facts.pull else {
        return without_pull_request(plan, request);
    };
    match standing(pull, session, facts, policy) {
        Ok(Standing::HandedOff) => handed_off(plan, pull, policy),
        Ok(Standing::Merged) => merged(plan, pull),
        Ok(Standing::Closed { foreign }) => {
            closed(plan, request, session, pull, facts, policy, foreign)
        }
        Ok(Standing::Open { runs }) => open(plan, request, session, pull, runs, facts, policy),
        Err(LeaveAlone(finding)) => left_alone(plan, finding),
    }
}

impl FinishPlan {
    /// The plan before anything is decided: the reported outcome, the pull request as examined,
    /// nothing to send.
    fn examined(request: &FinishRequest, facts: &FinishFacts, policy: &Policy) -> Self {
        FinishPlan {
            candidate: request.candidate.clone(),
            outcome: request.outcome,
            cleanup: Cleanup::Done,
            reason: String::new(),
            pull_request: facts.pull.as_ref().map(|pull| pull.number),
            issue: facts.issue.as_ref().map(|issue| issue.number),
            receipt: false,
            check: facts.pull.as_ref().map(|pull| PullRequestCheck {
                number: pull.number,
                head_sha: Some(pull.head_sha.clone()),
                author: policy.bot.clone(),
                draft: Some(pull.draft),
                handoff_label: policy.handoff_label.clone(),
                open: pull.open,
            }),
            cancel: Vec::new(),
            actions: Vec::new(),
            aftercare: AftercareEnding::Unchanged,
        }
    }
}

/// Where the pull request stands before anything is planned for it.
enum Standing<'a> {
    /// It carries the handoff label: the maintainers' now.
    HandedOff,
    Merged,
    /// Closed unmerged; `foreign` says why its commits are not the bot's alone, if they are not.
    Closed {
        foreign: Option<String>,
    },
    /// Open, the bot's alone, no maintainer's sweep since the session began; the runs on its
    /// branch.
    Open {
        runs: &'a [RunFact],
    },
}

/// Why the pull request is left as it is: a §5 guard holds, or a fact it needs was not read.
struct LeaveAlone(String);

/// The §5 guards in their order: the handoff label, the bot's pull request of this repository,
/// merged, its commits, closed, its runs and a maintainer's sweep.
fn standing<'a>(
    pull: &PullRequestFact,
    session: &Session,
    facts: &'a FinishFacts,
    policy: &Policy,
) -> Result<Standing<'a>, LeaveAlone> {
    if pull.labels.contains(&policy.handoff_label) {
        return Ok(Standing::HandedOff);
    }
    if pull.author.as_deref() != Some(policy.bot.as_str()) || !pull.from_this_repository {
        return Err(LeaveAlone(format!(
            "#{} is not the bot's pull request of this repository",
            pull.number
        )));
    }
    if pull.merged {
        return Ok(Standing::Merged);
    }
    let commits = read_commits(pull, facts)?;
    let foreign = foreign_commit(commits, pull, &policy.bot);
    if !pull.open {
        return Ok(Standing::Closed { foreign });
    }
    if let Some(finding) = foreign {
        return Err(LeaveAlone(finding));
    }
    let runs = read_branch_runs(pull, facts)?;
    if let Some(finding) = maintainers_sweep(runs, pull, session, policy) {
        return Err(LeaveAlone(finding));
    }
    Ok(Standing::Open { runs })
}

fn read_commits<'a>(
    pull: &PullRequestFact,
    facts: &'a FinishFacts,
) -> Result<&'a CommitsFact, LeaveAlone> {
    match &facts.commits {
        Some(Ok(commits)) => Ok(commits),
        Some(Err(error)) => Err(LeaveAlone(format!(
            "the commits of #{} could not be read ({error})",
            pull.number
        ))),
        None => Err(LeaveAlone(format!(
            "the commits of #{} were not read",
            pull.number
        ))),
    }
}

fn read_branch_runs<'a>(
    pull: &PullRequestFact,
    facts: &'a FinishFacts,
) -> Result<&'a [RunFact], LeaveAlone> {
    match &facts.branch_runs {
        Some(Ok(runs)) => Ok(runs),
        Some(Err(error)) => Err(LeaveAlone(format!(
            "the runs of {} could not be listed ({error})",
            pull.head_branch
        ))),
        None => Err(LeaveAlone(format!(
            "the runs of {} were not listed",
            pull.head_branch
        ))),
    }
}

/// A sweep a maintainer started on the branch after the session began, if there is one.
fn maintainers_sweep(
    runs: &[RunFact],
    pull: &PullRequestFact,
    session: &Session,
    policy: &Policy,
) -> Option<String> {
    let (run, _) = foreign_sweep_since(runs, session.started_at, &policy.bot, |workflow| {
        policy.is_sweep(workflow)
    })?;
    Some(format!(
        "sweep run {} on {} was started by a maintainer after the session began",
        run.id, pull.head_branch
    ))
}

/// The request as `retired` when the candidate's issue was closed by anything but the merge of
/// its pull request: not parked, whatever the agent reported.
fn retired_by_its_issue(request: &FinishRequest, facts: &FinishFacts) -> Option<FinishRequest> {
    let issue = facts.issue.as_ref()?;
    closed_without_merge(issue, facts.pull.as_ref()).then(|| FinishRequest {
        outcome: Outcome::Retired,
        park: false,
        ..request.clone()
    })
}

/// No pull request: nothing to clean up on GitHub, the session finished or parked.
fn without_pull_request(mut plan: FinishPlan, request: &FinishRequest) -> FinishPlan {
    plan.reason = "no pull request: nothing to clean up on GitHub".into();
    plan.cleanup = if request.park {
        Cleanup::Parked
    } else {
        Cleanup::Done
    };
    plan
}

fn handed_off(mut plan: FinishPlan, pull: &PullRequestFact, policy: &Policy) -> FinishPlan {
    plan.outcome = Outcome::Handoff;
    plan.cleanup = Cleanup::Untouched;
    plan.reason = format!(
        "#{} carries {}: nothing touched",
        pull.number, policy.handoff_label
    );
    plan
}

fn merged(mut plan: FinishPlan, pull: &PullRequestFact) -> FinishPlan {
    plan.cleanup = Cleanup::Untouched;
    plan.reason = format!("#{} is merged: nothing touched", pull.number);
    plan
}

/// An open pull request of the bot's alone: parked, made ready after a validated sweep, or
/// cleaned up per its outcome.
fn open(
    plan: FinishPlan,
    request: &FinishRequest,
    session: &Session,
    pull: &PullRequestFact,
    runs: &[RunFact],
    facts: &FinishFacts,
    policy: &Policy,
) -> FinishPlan {
    // Only a recorded validated outcome counts: klaud marked the pull request ready itself. A
    // validated finish left alone (no finished sweep on the head) is merely pending, so a ready
    // pull request then was made ready by someone else and is never redrafted or closed.
    let validated_record = session.outcome == Some(Outcome::Validated);
    if request.park {
        return parked(plan, pull, policy);
    }
    if request.outcome == Outcome::Validated {
        return validated(plan, pull, runs, policy);
    }
    if aftercare_pull_request(session) == Some(pull.number) {
        return waits_for_maintainer(plan, pull, policy);
    }
    if request.outcome == Outcome::Retired && !pull.draft && plan.issue.is_some() {
        return ready_left_to_maintainers(plan, pull);
    }
    if !pull.draft && !validated_record {
        return left_alone(
            plan,
            format!(
                "#{} is ready for review without a validated record",
                pull.number
            ),
        );
    }
    cleaned_up(plan, request, pull, runs, facts, policy)
}

/// A ready pull request of a retired issue's candidate stays as it is: the maintainers decide.
fn ready_left_to_maintainers(mut plan: FinishPlan, pull: &PullRequestFact) -> FinishPlan {
    plan.cleanup = Cleanup::Untouched;
    plan.receipt = true;
    plan.reason = format!(
        "#{} is ready for review: left to the maintainers",
        pull.number
    );
    plan
}

/// A parked session keeps its draft, with the parked status label.
fn parked(mut plan: FinishPlan, pull: &PullRequestFact, policy: &Policy) -> FinishPlan {
    if !pull.draft {
        return left_alone(
            plan,
            format!(
                "#{} is ready for review: a parked session keeps a draft",
                pull.number
            ),
        );
    }
    plan.cleanup = Cleanup::Parked;
    plan.receipt = true;
    plan.reason = format!("#{} stays a draft, parked", pull.number);
    plan.actions
        .extend(status_label_action(policy, pull, Some(StatusLabel::Parked)));
    plan
}

/// A validated outcome: ready for review once the final sweep on the exact head succeeded; the
/// branch stays.
fn validated(
    mut plan: FinishPlan,
    pull: &PullRequestFact,
    runs: &[RunFact],
    policy: &Policy,
) -> FinishPlan {
    if let Some(problem) = policy
        .sweep_workflow
        .as_deref()
        .and_then(|sweep| final_sweep(runs, pull, sweep))
    {
        return left_alone(plan, problem);
    }
    plan.receipt = true;
    plan.aftercare = AftercareEnding::Watched {
        head: pull.head_sha.clone(),
    };
    plan.reason = match policy.sweep_workflow {
        Some(_) => format!(
            "the final sweep on {} succeeded: #{} ready for review, branch kept",
            short(&pull.head_sha),
            pull.number
        ),
        None => format!(
            "validated (the repository has no sweep workflow): #{} ready for review, branch kept",
            pull.number
        ),
    };
    plan.actions.extend(status_label_action(
        policy,
        pull,
        Some(StatusLabel::Finished),
    ));
    if pull.draft {
        plan.actions.push(Action::MarkReady {
            pull_request: pull.number,
            node_id: pull.node_id.clone(),
        });
    }
    if let Some(issue) = plan.issue {
        plan.actions.push(Action::LinkIssue {
            pull_request: pull.number,
            issue,
        });
    }
    plan
}

/// An after-care session that ended any other way than `validated` (its last job's time used up
/// included): its pull request stays open as a draft with its branch and its runs, labelled
/// `klaud-needs-maintainer`, and waits for a maintainer. After-care never closes a pull request
/// or deletes a branch (except when superseding, which is not a session's ending).
fn waits_for_maintainer(
    mut plan: FinishPlan,
    pull: &PullRequestFact,
    policy: &Policy,
) -> FinishPlan {
    plan.receipt = true;
    plan.aftercare = AftercareEnding::NeedsMaintainer;
    plan.actions.extend(status_label_action(
        policy,
        pull,
        Some(StatusLabel::NeedsMaintainer),
    ));
    if !pull.draft {
        plan.actions.push(Action::ConvertToDraft {
            pull_request: pull.number,
            node_id: pull.node_id.clone(),
        });
    }
    plan.reason = format!(
        "after-care ended {}: #{} stays open as a draft with its branch and waits for a maintainer",
        plan.outcome, pull.number
    );
    plan
}

/// Any other outcome: the session's runs cancelled, its status label, a draft again, closed,
/// and the branch deleted when the outcome says so.
fn cleaned_up(
    mut plan: FinishPlan,
    request: &FinishRequest,
    pull: &PullRequestFact,
    runs: &[RunFact],
    facts: &FinishFacts,
    policy: &Policy,
) -> FinishPlan {
    plan.receipt = true;
    plan.cancel = cancellable(runs, facts, policy);
    plan.actions.extend(status_label_action(
        policy,
        pull,
        request.outcome.status_label(),
    ));
    plan.actions.extend(sweep_label_removals(policy, pull));
    if !pull.draft {
        plan.actions.push(Action::ConvertToDraft {
            pull_request: pull.number,
            node_id: pull.node_id.clone(),
        });
    }
    plan.actions.push(Action::ClosePullRequest {
        pull_request: pull.number,
    });
    plan.reason = format!("#{} closed", pull.number);
    if request.outcome.branch_on_cleanup() == BranchOnCleanup::Deleted {
        push_branch_deletion(&mut plan, pull, facts);
    }
    plan
}

/// A closed, unmerged pull request: never redrafted or closed again. Closed by anyone but the
/// bot means `closed-by-maintainer` and the branch stays as the maintainer left it.
fn closed(
    mut plan: FinishPlan,
    request: &FinishRequest,
    session: &Session,
    pull: &PullRequestFact,
    facts: &FinishFacts,
    policy: &Policy,
    foreign: Option<String>,
) -> FinishPlan {
    let closed_by = match &facts.closed_by {
        Some(Ok(closed_by)) => closed_by.clone(),
        Some(Err(error)) => {
            return left_alone(
                plan,
                format!("who closed #{} could not be read ({error})", pull.number),
            );
        }
        None => return left_alone(plan, format!("who closed #{} was not read", pull.number)),
    };
    plan.receipt = true;
    let by_bot = closed_by.as_deref() == Some(policy.bot.as_str());
    if !by_bot {
        plan.outcome = Outcome::ClosedByMaintainer;
        plan.reason = format!(
            "#{} was closed by {}: its branch stays as it is",
            pull.number,
            closed_by.as_deref().unwrap_or("a maintainer")
        );
    } else {
        plan.reason = format!("#{} was already closed by the bot", pull.number);
    }
    if let Ok(runs) = facts.branch_runs.clone().unwrap_or_else(|| Ok(Vec::new())) {
        plan.cancel = cancellable(&runs, facts, policy);
    }
    plan.actions.extend(status_label_action(
        policy,
        pull,
        plan.outcome.status_label(),
    ));
    plan.actions.extend(sweep_label_removals(policy, pull));
    if aftercare_pull_request(session) == Some(pull.number) {
        plan.reason
            .push_str("; branch kept: after-care deletes no branch when its session ends");
    } else if by_bot && request.outcome.branch_on_cleanup() == BranchOnCleanup::Deleted {
        match foreign {
            Some(finding) => plan.reason.push_str(&format!("; branch kept: {finding}")),
            None => push_branch_deletion(&mut plan, pull, facts),
        }
    }
    plan
}

fn left_alone(mut plan: FinishPlan, reason: String) -> FinishPlan {
    plan.cleanup = Cleanup::LeftAlone;
    plan.reason = format!("{reason}: left alone");
    plan.receipt = false;
    plan.cancel.clear();
    plan.actions.clear();
    plan.aftercare = AftercareEnding::Unchanged;
    plan
}

/// Why the commits make the pull request not the bot's alone (`recover`'s reading of them).
fn foreign_commit(commits: &CommitsFact, pull: &PullRequestFact, bot: &str) -> Option<String> {
    match commit_ownership(commits, pull.number, &pull.head_sha, bot) {
        CommitOwnership::BotOnly => None,
        CommitOwnership::ForeignCommit { login } => {
            Some(format!("#{} has a commit by {login}", pull.number))
        }
        CommitOwnership::Unsettled { reason, .. } => Some(reason),
    }
}

/// `Some(problem)` unless the newest finished sweep on the exact head succeeded and none runs.
fn final_sweep(runs: &[RunFact], pull: &PullRequestFact, sweep_workflow: &str) -> Option<String> {
    let sweeps: Vec<&RunFact> = runs
        .iter()
        .filter(|run| run.workflow == sweep_workflow)
        .collect();
    if let Some(active) = sweeps.iter().find(|run| run.active) {
        return Some(format!("sweep run {} is still running", active.id));
    }
    let last = sweeps
        .iter()
        .filter(|run| run.head_sha == pull.head_sha)
        .max_by_key(|run| (run.created_at, run.id));
    match last {
        Some(run) if run.succeeded() => None,
        Some(run) => Some(format!(
            "the final sweep {} on {} ended {}: not validated",
            run.id,
            short(&pull.head_sha),
            run.conclusion
                .as_ref()
                .map_or("without a conclusion", |conclusion| conclusion.as_str())
        )),
        None => Some(format!(
            "no finished sweep on the head {}: not validated",
            short(&pull.head_sha)
        )),
    }
}

/// The session's unfinished runs started by the bot (never this run).
fn cancellable(runs: &[RunFact], facts: &FinishFacts, policy: &Policy) -> Vec<Action> {
    let mut actions: Vec<Action> = Vec::new();
    for run in runs.iter().chain(&facts.named_runs) {
        let bot = run.actor.as_deref() == Some(policy.bot.as_str());
        let known = actions
            .iter()
            .any(|action| matches!(action, Action::CancelRun { run_id, .. } if *run_id == run.id));
        if run.active && bot && run.id != facts.own_run && !known {
            actions.push(Action::CancelRun {
                run_id: run.id,
                workflow: run.workflow.clone(),
            });
        }
    }
    actions
}

fn sweep_label_removals(policy: &Policy, pull: &PullRequestFact) -> Vec<Action> {
    policy
        .sweep_labels
        .iter()
        .filter(|label| pull.labels.contains(label))
        .map(|label| Action::RemoveLabel {
            pull_request: pull.number,
            label: label.clone(),
        })
        .collect()
}

/// Deletes the branch while it still points at the pull request's head (every commit the bot's
/// was checked by the caller).
fn push_branch_deletion(plan: &mut FinishPlan, pull: &PullRequestFact, facts: &FinishFacts) {
    match &facts.branch_sha {
        Some(sha) if *sha == pull.head_sha => plan.actions.push(Action::DeleteBranch {
            branch: pull.head_branch.clone(),
            expected_sha: sha.clone(),
            closed_pull_request: pull.number,
        }),
        Some(sha) => plan
            .reason
            .push_str(&format!("; branch kept: it moved to {}", short(sha))),
        None => {}
    }
}

/// The ledger after `plan`, or `None` when it already says so. Finished (or parked) sessions
/// record the outcome; a left-alone session keeps running with the outcome pending, so that
/// recovery uses it once a maintainer is done.
pub fn record(
    ledger: &Ledger,
    plan: &FinishPlan,
    request: &FinishRequest,
    now: DateTime<Utc>,
) -> Option<Ledger> {
    let mut next = ledger.clone();
    if let Some(agent) = &request.agent {
        next.record_agent_run(&request.candidate, request.job, agent, now);
    }
    let mut open = next.sessions.iter_mut().rev().find(|session| {
        session.candidate == request.candidate && session.state != SessionState::Finished
    });
    if let Some(attempt) = open
        .as_deref_mut()
        .and_then(|session| {
            session
                .attempts
                .iter_mut()
                .rev()
                .find(|a| a.run == request.job.run)
        })
        .filter(|attempt| attempt.end.is_none())
    {
        attempt.end = Some(request.attempt_end);
        attempt.ended_at = Some(now);
        attempt.runs = request.runs_seen.clone();
    }
    match plan.cleanup {
        Cleanup::LeftAlone | Cleanup::Parked => {
            let session = open?;
            if plan.cleanup == Cleanup::Parked {
                session.state = SessionState::Parked;
            }
            session.pending_outcome = Some(plan.outcome);
            session.agent_ran = request.agent_ran;
            if plan.pull_request.is_some() {
                session.pull_request = plan.pull_request;
            }
        }
        Cleanup::Done | Cleanup::Untouched => {
            let family = open.as_ref().map(|session| session.family.clone());
            if let (Some(session), Some(number)) = (open, plan.pull_request) {
                session.pull_request = Some(number);
            }
            // Already finished: nothing changes but an execution record not kept before.
            next.finish_session(&request.candidate, plan.outcome, request.agent_ran, now);
            if let Some(family) = family {
                record_aftercare(&mut next, plan, &family, now);
            }
        }
    }
    (next != *ledger).then_some(next)
}

/// The ledger's after-care records after a session finished (contract §12): a pull request
/// validated and made ready is watched (again) at its head; an after-care session's pull request
/// that ended any other way waits for a maintainer. The one place a `validated` ending reaches
/// the after-care records.
pub fn record_aftercare(ledger: &mut Ledger, plan: &FinishPlan, family: &str, now: DateTime<Utc>) {
    let Some(number) = plan.pull_request else {
        return;
    };
    match &plan.aftercare {
        AftercareEnding::Unchanged => {}
        AftercareEnding::Watched { head } => {
            ledger.record_validated(&plan.candidate, family, number, Some(head), now);
        }
        AftercareEnding::NeedsMaintainer => {
            ledger.record_aftercare_ended(number, plan.outcome, now);
        }
    }
}

/// The marker that makes a session's receipt comment findable and unique.
pub fn receipt_marker(candidate: &str, parent_run: u64) -> String {
    format!("<!-- klaud:receipt candidate={candidate} parent={parent_run} -->")
}

/// The completion receipt: the marker, then a few lines for people.
pub fn receipt_body(
    plan: &FinishPlan,
    parent_run: u64,
    agent_outcome: &str,
    reason_code: Option<&str>,
) -> String {
    let mut body = receipt_marker(&plan.candidate, parent_run);
    body.push_str(&format!(
        "\n**klaud** session for `{}` (planner run {parent_run}): **{}**",
        plan.candidate, plan.outcome
    ));
    if plan.cleanup == Cleanup::Parked {
        body.push_str(", parked: it continues in a new job when there is room");
    }
    body.push_str(&format!("\n\n- agent step: {agent_outcome}"));
    if let Some(code) = reason_code {
        body.push_str(&format!("\n- reason: `{code}`"));
    }
    body.push_str(&format!("\n- cleanup: {}\n", plan.reason));
    body
}

fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

#[cfg(test)]
#[path = "finish_tests.rs"]
mod tests;
