//! The one executor: every mode's [`ActionGroup`]s are applied here, and only here.
//!
//! - Candidates' groups run concurrently, each group's actions in order up to its first ref
//!   deletion; the first action that does not complete stops the rest of its group (unless the
//!   group is `independent`), which the next pass decides again.
//! - Every target is re-checked just before it changes, one check per kind of target
//!   ([`checks`]): a pull request is read again before its group's first change to it (open or
//!   closed, author, head, draft, no handoff label); a branch goes only while GitHub still says
//!   the bot closed its pull request (one batched read for all of them); a ref is deleted only
//!   while it still points at the sha checked, which GitHub itself enforces ([`refs`]); a run is
//!   read again before it is cancelled, and one that ended or that someone else re-ran is left
//!   as it is.
//! - Cancelled runs are waited for (bounded by `cancel_wait`) before the same group changes its
//!   pull request, so a cancelled run cannot write to it afterwards.
//! - Writes are charged to the pass's allowances as they are sent: one for candidates' groups,
//!   one for what their actions leave (legacy lock refs); a batch of ref deletions is one write.
//! - A dry run goes through all of this with a client that records its writes instead of sending
//!   them (`adapters::github::writes`): the same order, re-check reads, batches and budget.

mod checks;
mod effect;
mod labels;
mod refs;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use futures::StreamExt;
use serde::Serialize;

use crate::adapters::github::GitHubClient;
use crate::adapters::github::actions::RunCancel;
use crate::adapters::github::error::GitHubError;
use crate::adapters::github::pulls::CommentPosted;
use crate::core::finish_issue::linked_body;
use crate::core::plan::{Action, ActionGroup};
use crate::core::text::bounded;
use crate::shell::github::GitHubConnection;
use checks::FreshPullRequest;
pub use effect::Effect;
pub use refs::RefDeletionPath;

/// Groups sent at once.
pub const WRITE_CONCURRENCY: usize = 8;
/// How often cancelled runs are read again while waiting for them to end.
const CANCEL_POLL: Duration = Duration::from_secs(2);

/// What happened to one action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", content = "detail", rename_all = "kebab-case")]
pub enum ActionResult {
    Done(Effect),
    /// Its re-check failed: the target changed since it was examined.
    Dropped(String),
    Failed(String),
    /// Not sent (write budget, an earlier step of its group did not complete, not cleared).
    NotAttempted(String),
}

impl ActionResult {
    pub fn is_done(&self) -> bool {
        matches!(self, ActionResult::Done(_))
    }

    /// One line for logs and summaries.
    pub fn describe(&self) -> String {
        match self {
            ActionResult::Done(effect) => format!("done ({effect})"),
            ActionResult::Dropped(reason) => format!("dropped: {reason}"),
            ActionResult::Failed(error) => format!("failed: {error}"),
            ActionResult::NotAttempted(reason) => format!("not sent: {reason}"),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ActionRecord {
    pub description: String,
    pub action: Action,
    pub result: ActionResult,
}

/// What became of one group: the one result type every mode's report, outputs and JSON file are
/// made from.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct GroupRecord {
    pub subject: String,
    pub candidate: Option<String>,
    /// This pass was cleared to apply it.
    pub cleared: bool,
    /// Every action done.
    pub completed: bool,
    pub actions: Vec<ActionRecord>,
}

impl GroupRecord {
    /// The first action that did not complete, and why.
    pub fn stopped_at(&self) -> Option<&ActionRecord> {
        self.actions.iter().find(|record| !record.result.is_done())
    }

    /// The runs whose cancellation GitHub accepted.
    pub fn cancelled_runs(&self) -> Vec<u64> {
        self.actions
            .iter()
            .filter_map(|record| match (&record.action, &record.result) {
                (Action::CancelRun { run_id, .. }, ActionResult::Done(Effect::CancelRequested)) => {
                    Some(*run_id)
                }
                _ => None,
            })
            .collect()
    }
}

/// How to apply.
#[derive(Debug, Clone)]
pub struct ExecuteSettings {
    /// The bot's login (who must have closed a pull request whose branch goes; the actor of
    /// the runs it dispatches).
    pub bot: String,
    pub now: DateTime<Utc>,
    /// How long a group waits for the runs it cancelled before changing its pull request
    /// (zero: no wait).
    pub cancel_wait: Duration,
    /// Writes kept back for what the mode sends after the groups (its last ledger write).
    pub reserve: u64,
}

/// Whether a group may be applied in this pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Clearance {
    Cleared,
    /// Not applied, and why.
    Refused(String),
}

/// What the executor did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Execution {
    /// The writes were recorded, not sent.
    pub dry_run: bool,
    /// One record per group, in the plan's order.
    pub groups: Vec<GroupRecord>,
    /// The write budget stopped the pass before the end of the plan.
    pub budget_reached: bool,
    /// How refs were deleted: conditionally through `updateRefs`, or by REST after a fresh
    /// re-read because GitHub does not offer the mutation.
    pub ref_deletions: RefDeletionPath,
    /// Cancelled runs that had not ended when the wait was over.
    pub pending_runs: Vec<u64>,
}

/// Applies `groups` (each cleared or refused) and returns one record per group.
pub async fn execute(
    connection: &GitHubConnection,
    settings: &ExecuteSettings,
    groups: &[ActionGroup],
    clearances: &[Clearance],
) -> Execution {
    let cleared = |index: usize| matches!(clearances.get(index), Some(Clearance::Cleared));
    let available = connection
        .client
        .writes_left()
        .saturating_sub(settings.reserve);
    // Candidates' cleanup comes first, with room for their branch deletions should GitHub not
    // offer conditional deletions (one request per ref then); legacy lock refs get the rest.
    let candidate_actions: Vec<&Action> = groups
        .iter()
        .enumerate()
        .filter(|(index, group)| cleared(*index) && !group.independent)
        .flat_map(|(_, group)| &group.actions)
        .collect();
    let deletions = candidate_actions
        .iter()
        .filter(|action| action.is_ref_deletion())
        .count();
    let candidate_writes: u64 = candidate_actions
        .iter()
        .filter(|action| !action.is_ref_deletion())
        .map(|action| action.writes())
        .sum::<u64>()
        + refs::requests_for(deletions)
        + deletions as u64;
    let executor = Executor {
        connection,
        settings,
        allowance: Allowance::new(available.min(candidate_writes)),
        lock_allowance: Allowance::new(available.saturating_sub(candidate_writes)),
        halted: AtomicBool::new(false),
        refs: refs::RefDeleter::default(),
        pending_runs: Mutex::new(Vec::new()),
        closed_by_this_dry_run: Mutex::new(std::collections::BTreeSet::new()),
    };
    let records = executor.apply_groups(groups, clearances).await;
    Execution {
        dry_run: connection.client.records_writes(),
        groups: records,
        budget_reached: executor.allowance.exhausted() || executor.lock_allowance.exhausted(),
        ref_deletions: executor.refs.path(),
        pending_runs: executor
            .pending_runs
            .into_inner()
            .expect("pending runs lock"),
    }
}

/// Writes the actions may still send.
struct Allowance {
    left: Mutex<u64>,
    exhausted: AtomicBool,
}

impl Allowance {
    fn new(left: u64) -> Self {
        Allowance {
            left: Mutex::new(left),
            exhausted: AtomicBool::new(false),
        }
    }

    fn take(&self, writes: u64) -> bool {
        let mut left = self.left.lock().expect("allowance lock");
        if *left < writes {
            self.exhausted.store(true, Ordering::SeqCst);
            return false;
        }
        *left -= writes;
        true
    }

    fn exhausted(&self) -> bool {
        self.exhausted.load(Ordering::SeqCst)
    }
}

const BUDGET_REACHED: &str = "the write budget of this pass is used: left for the next pass";
const STOPPED: &str = "GitHub stopped this pass";

struct Executor<'a> {
    connection: &'a GitHubConnection,
    settings: &'a ExecuteSettings,
    /// Writes for the candidates' groups.
    allowance: Allowance,
    /// Writes for legacy lock refs: what the candidates' groups leave.
    lock_allowance: Allowance,
    /// Set when GitHub stops the pass (rate limit, budget): nothing more is sent.
    halted: AtomicBool,
    refs: refs::RefDeleter,
    pending_runs: Mutex<Vec<u64>>,
    /// In a dry run, the pull requests this pass closed (recorded, so GitHub still shows them
    /// open): the re-read of who closed one is made, and read as the bot's own close.
    closed_by_this_dry_run: Mutex<std::collections::BTreeSet<u64>>,
}

/// Progress of one group: a result per action, `None` while not sent.
type Progress = Vec<Option<ActionResult>>;

impl Executor<'_> {
    fn bot(&self) -> &GitHubClient {
        &self.connection.client
    }

    fn halted(&self) -> bool {
        self.halted.load(Ordering::SeqCst)
    }

    async fn apply_groups(
        &self,
        groups: &[ActionGroup],
        clearances: &[Clearance],
    ) -> Vec<GroupRecord> {
        let cleared = |index: usize| matches!(clearances.get(index), Some(Clearance::Cleared));
        let candidate_groups = groups
            .iter()
            .enumerate()
            .filter(|(index, group)| cleared(*index) && !group.independent)
            .map(|(index, group)| async move { (index, self.apply_until_deletion(group).await) });
        let independent_groups = async {
            let mut done = Vec::new();
            for (index, group) in groups.iter().enumerate() {
                if cleared(index) && group.independent {
                    done.push((index, self.apply_independent(group).await));
                }
            }
            done
        };
        let (candidates, independent) = tokio::join!(
            futures::stream::iter(candidate_groups)
                .buffer_unordered(WRITE_CONCURRENCY)
                .collect::<Vec<_>>(),
            independent_groups
        );
        let mut progress: BTreeMap<usize, Progress> =
            candidates.into_iter().chain(independent).collect();
        self.finish_ref_deletions(groups, &mut progress).await;
        groups
            .iter()
            .enumerate()
            .map(|(index, group)| match progress.remove(&index) {
                Some(results) => record(group, results),
                None => {
                    let reason = match clearances.get(index) {
                        Some(Clearance::Refused(reason)) => reason.clone(),
                        _ => "not cleared".to_string(),
                    };
                    not_attempted(group, &reason)
                }
            })
            .collect()
    }

    /// Runs a group's actions in order until its first ref deletion (left `None`) or the first
    /// action that does not complete (the rest are not sent).
    async fn apply_until_deletion(&self, group: &ActionGroup) -> Progress {
        let mut results: Progress = vec![None; group.actions.len()];
        let mut fresh: Option<FreshPullRequest> = None;
        let mut cancelled: Vec<u64> = Vec::new();
        for (index, action) in group.actions.iter().enumerate() {
            if action.is_ref_deletion() {
                break;
            }
            if action.rests_on_pull_request() && !cancelled.is_empty() {
                self.wait_for_runs(std::mem::take(&mut cancelled)).await;
            }
            let result = match (&group.pull_request_check, action.rests_on_pull_request()) {
                (Some(check), true) if fresh.is_none() => {
                    match checks::pull_request(self, check).await {
                        Ok(pull) => {
                            fresh = Some(pull);
                            self.apply_action(action, fresh.as_mut(), &self.allowance)
                                .await
                        }
                        Err(result) => result,
                    }
                }
                _ => {
                    self.apply_action(action, fresh.as_mut(), &self.allowance)
                        .await
                }
            };
            if let (Action::CancelRun { run_id, .. }, ActionResult::Done(Effect::CancelRequested)) =
                (action, &result)
            {
                cancelled.push(*run_id);
            }
            let done = result.is_done();
            results[index] = Some(result);
            if !done && !group.independent {
                break;
            }
        }
        if !cancelled.is_empty() {
            self.wait_for_runs(cancelled).await;
        }
        results
    }

    /// An independent group (legacy lock refs): its deletions in batches, every other action
    /// on its own.
    async fn apply_independent(&self, group: &ActionGroup) -> Progress {
        let deletions: Vec<refs::RefToDelete> = group
            .actions
            .iter()
            .filter_map(refs::RefToDelete::of)
            .collect();
        let mut deleted = self
            .refs
            .delete(self, &deletions, &self.lock_allowance)
            .await
            .into_iter();
        let mut results = Vec::with_capacity(group.actions.len());
        for action in &group.actions {
            results.push(Some(if action.is_ref_deletion() {
                deleted.next().expect("one result per deletion")
            } else {
                self.apply_action(action, None, &self.lock_allowance).await
            }));
        }
        results
    }

    /// The ref deletions candidate groups stopped at, when every earlier step completed: a
    /// branch whose deletion rests on a close goes only while GitHub says the bot closed it
    /// (read again just before, all at once); then whatever follows them in their group.
    async fn finish_ref_deletions(
        &self,
        groups: &[ActionGroup],
        progress: &mut BTreeMap<usize, Progress>,
    ) {
        let mut waiting: Vec<(usize, usize)> = Vec::new();
        for (group_index, results) in progress.iter() {
            let group = &groups[*group_index];
            if group.independent {
                continue;
            }
            if let Some(next) = results.iter().position(Option::is_none)
                && results[..next]
                    .iter()
                    .all(|result| result.as_ref().is_some_and(ActionResult::is_done))
                && group.actions[next].is_ref_deletion()
            {
                waiting.push((*group_index, next));
            }
        }
        let closes: Vec<Option<u64>> = waiting
            .iter()
            .map(|(group_index, action_index)| {
                checks::close_it_rests_on(&groups[*group_index].actions[*action_index])
            })
            .collect();
        let closers = checks::closed_by_the_bot(self, &closes).await;
        let mut cleared = Vec::new();
        for ((group_index, action_index), closer) in waiting.into_iter().zip(closers) {
            match closer {
                Ok(()) => cleared.push((group_index, action_index)),
                Err(result) => {
                    if let Some(progress) = progress.get_mut(&group_index) {
                        progress[action_index] = Some(result);
                    }
                }
            }
        }
        let deletions: Vec<refs::RefToDelete> = cleared
            .iter()
            .filter_map(|(group, action)| refs::RefToDelete::of(&groups[*group].actions[*action]))
            .collect();
        let results = self.refs.delete(self, &deletions, &self.allowance).await;
        for ((group_index, action_index), result) in cleared.into_iter().zip(results) {
            let group = &groups[group_index];
            let Some(progress) = progress.get_mut(&group_index) else {
                continue;
            };
            let mut done = result.is_done();
            progress[action_index] = Some(result);
            for (action, slot) in group
                .actions
                .iter()
                .zip(progress.iter_mut())
                .skip(action_index + 1)
            {
                if !done {
                    break;
                }
                let result = self.apply_action(action, None, &self.allowance).await;
                done = result.is_done();
                *slot = Some(result);
            }
        }
    }

    /// Applies one action that is not a ref deletion, unless the pass stopped, the fresh read
    /// it works from is missing or its allowance is used.
    async fn apply_action(
        &self,
        action: &Action,
        fresh: Option<&mut FreshPullRequest>,
        allowance: &Allowance,
    ) -> ActionResult {
        if self.halted() {
            return ActionResult::NotAttempted(STOPPED.into());
        }
        if fresh.is_none() && needs_fresh_read(action) {
            return ActionResult::Failed("no fresh read of the pull request".into());
        }
        if let Action::CancelRun { run_id, .. } = action
            && let Err(result) = checks::run(self, *run_id).await
        {
            return result;
        }
        if !allowance.take(action.writes()) {
            return ActionResult::NotAttempted(BUDGET_REACHED.into());
        }
        match self.send(action, fresh).await {
            Ok(effect) => ActionResult::Done(effect),
            Err(error) => self.failure(&error),
        }
    }

    /// Sends one action that is not a ref deletion: the one `match` on [`Action`].
    async fn send(
        &self,
        action: &Action,
        fresh: Option<&mut FreshPullRequest>,
    ) -> Result<Effect, GitHubError> {
        match action {
            Action::CancelRun { run_id, .. } => {
                self.bot()
                    .cancel_run(*run_id)
                    .await
                    .map(|cancel| match cancel {
                        RunCancel::Requested => Effect::CancelRequested,
                        RunCancel::AlreadyCompleted => Effect::AlreadyCompleted,
                    })
            }
            Action::SetStatusLabel {
                pull_request,
                label,
                others,
            } => match fresh {
                Some(fresh) => {
                    labels::make_only_status_label(
                        &self.connection.label_client,
                        *pull_request,
                        label.as_deref(),
                        others,
                        &mut fresh.labels,
                    )
                    .await
                }
                None => unreachable!("checked by apply_action"),
            },
            Action::RemoveLabel {
                pull_request,
                label,
            } => self.remove_label(*pull_request, label, fresh).await,
            Action::MarkReady { node_id, .. } => {
                let node_id = fresh.map_or(node_id.clone(), |fresh| fresh.node_id.clone());
                self.bot()
                    .mark_ready_for_review(&node_id)
                    .await
                    .map(|()| Effect::MarkedReady)
            }
            Action::ConvertToDraft { node_id, .. } => {
                let node_id = fresh.map_or(node_id.clone(), |fresh| fresh.node_id.clone());
                self.bot()
                    .convert_to_draft(&node_id)
                    .await
                    .map(|()| Effect::ConvertedToDraft)
            }
            Action::ClosePullRequest { pull_request } => {
                self.close_pull_request(*pull_request).await
            }
            Action::PostMarkedComment {
                pull_request,
                marker,
                body,
                ..
            } => self.post_marked_comment(*pull_request, marker, body).await,
            Action::PostIssueComment {
                issue,
                marker,
                body,
            } => self.post_marked_comment(*issue, marker, body).await,
            Action::LinkIssue {
                pull_request,
                issue,
            } => self.link_issue(*pull_request, *issue).await,
            Action::DispatchCandidate {
                candidate,
                workflow,
                git_ref,
            } => {
                let inputs = BTreeMap::from([("candidate".to_string(), candidate.clone())]);
                self.bot()
                    .dispatch_workflow_once(
                        workflow,
                        git_ref,
                        &inputs,
                        &self.settings.bot,
                        self.settings.now,
                    )
                    .await
                    .map(|()| Effect::Dispatched)
            }
            Action::DeleteBranch { .. } | Action::DeleteLockRef { .. } => {
                unreachable!("ref deletions are sent in batches by refs::RefDeleter")
            }
            Action::WriteDashboard {
                issue,
                title,
                label,
                body,
                reopen,
                expected_body,
            } => match issue {
                None => self
                    .bot()
                    .create_issue(title, body, std::slice::from_ref(label))
                    .await
                    .map(|written| Effect::DashboardCreated {
                        number: written.issue().map(|issue| issue.number),
                    }),
                Some(number) => {
                    self.rewrite_dashboard(*number, body, *reopen, expected_body.as_deref())
                        .await
                }
            },
        }
    }

    /// Removes a label the fresh read shows (or, without one, whatever GitHub holds).
    async fn remove_label(
        &self,
        number: u64,
        label: &str,
        fresh: Option<&mut FreshPullRequest>,
    ) -> Result<Effect, GitHubError> {
        match fresh {
            Some(fresh) if !fresh.labels.iter().any(|present| present == label) => {
                Ok(Effect::LabelNotThere)
            }
            fresh => {
                let removed = self.bot().remove_label(number, label).await;
                if let (Ok(()), Some(fresh)) = (&removed, fresh) {
                    fresh.labels.retain(|present| present != label);
                }
                removed.map(|()| Effect::LabelRemoved)
            }
        }
    }

    /// Rewrites klaud's dashboard only while GitHub still holds the body the pass read, so a
    /// tick made since is never overwritten (the next pass reads it).
    async fn rewrite_dashboard(
        &self,
        number: u64,
        body: &str,
        reopen: bool,
        expected_body: Option<&str>,
    ) -> Result<Effect, GitHubError> {
        if let Some(expected) = expected_body {
            let fresh = self.bot().standalone_issue(number).await?;
            let fresh_body = fresh.as_ref().map(|issue| issue.body.as_str());
            if fresh_body != Some(expected) {
                return Ok(Effect::DashboardEditedMeanwhile);
            }
        }
        self.bot()
            .update_issue(number, body, reopen)
            .await
            .map(|_| Effect::DashboardRewritten { reopened: reopen })
    }

    /// Closes a pull request; a dry run remembers it closed it (GitHub still shows it open).
    async fn close_pull_request(&self, number: u64) -> Result<Effect, GitHubError> {
        let closed = self.bot().close_pull_request(number).await;
        if closed.is_ok() && self.bot().records_writes() {
            self.closed_by_this_dry_run
                .lock()
                .expect("dry run lock")
                .insert(number);
        }
        closed.map(|()| Effect::Closed)
    }

    /// Posts the receipt, or updates the bot's existing one in place when its text changed.
    async fn post_marked_comment(
        &self,
        number: u64,
        marker: &str,
        body: &str,
    ) -> Result<Effect, GitHubError> {
        let bot = self.settings.bot.as_str();
        let existing = self
            .bot()
            .comments(number)
            .await?
            .into_iter()
            .find(|comment| {
                comment
                    .body
                    .as_deref()
                    .is_some_and(|text| text.contains(marker))
                    && comment.user.as_ref().map(|user| user.login.as_str()) == Some(bot)
            });
        match existing {
            Some(comment) if comment.body.as_deref() == Some(body) => Ok(Effect::CommentUnchanged),
            Some(comment) => {
                self.bot().update_comment(comment.id, body).await?;
                Ok(Effect::CommentUpdated)
            }
            None => match self.bot().post_comment_once(number, body, marker).await? {
                CommentPosted::FoundAfterUncertainPost(_) => {
                    Ok(Effect::CommentFoundAfterUncertainPost)
                }
                CommentPosted::Created(_) | CommentPosted::Recorded => Ok(Effect::CommentPosted),
            },
        }
    }

    /// Adds `Closes #<issue>` as a line of the pull request's body, read just before, unless a
    /// line already says so.
    async fn link_issue(&self, pull_request: u64, issue: u64) -> Result<Effect, GitHubError> {
        let current = self.bot().pull_request(pull_request).await?;
        let body = current.body.unwrap_or_default();
        match linked_body(&body, issue) {
            None => Ok(Effect::IssueAlreadyLinked),
            Some(next) => {
                self.bot()
                    .update_pull_request_body(pull_request, &next)
                    .await?;
                Ok(Effect::IssueLinked)
            }
        }
    }

    /// Reads the cancelled runs until each ended or the wait is over; those still running are
    /// reported. A dry run does not wait: nothing was cancelled.
    async fn wait_for_runs(&self, runs: Vec<u64>) {
        let wait = self.settings.cancel_wait;
        if wait.is_zero() || self.bot().records_writes() {
            return;
        }
        let deadline = Instant::now() + wait;
        let mut pending = runs;
        loop {
            let mut still = Vec::new();
            for id in &pending {
                match self.bot().workflow_run(*id).await {
                    Ok(run) if !run.is_active() => {}
                    Err(error) if error.is_not_found() => {}
                    _ => still.push(*id),
                }
            }
            pending = still;
            if pending.is_empty() || Instant::now() + CANCEL_POLL > deadline {
                break;
            }
            tokio::time::sleep(CANCEL_POLL).await;
        }
        self.pending_runs
            .lock()
            .expect("pending runs lock")
            .extend(pending);
    }

    fn failure(&self, error: &GitHubError) -> ActionResult {
        if error.stops_the_pass() {
            self.halted.store(true, Ordering::SeqCst);
            if matches!(error, GitHubError::BudgetExhausted { .. }) {
                self.allowance.exhausted.store(true, Ordering::SeqCst);
                self.lock_allowance.exhausted.store(true, Ordering::SeqCst);
                return ActionResult::NotAttempted(BUDGET_REACHED.into());
            }
        }
        ActionResult::Failed(bounded(&error.to_string(), 300))
    }
}

/// Actions that work from the fresh read of their pull request (its labels).
fn needs_fresh_read(action: &Action) -> bool {
    matches!(action, Action::SetStatusLabel { .. })
}

fn not_attempted(group: &ActionGroup, reason: &str) -> GroupRecord {
    GroupRecord {
        subject: group.subject.clone(),
        candidate: group.candidate.clone(),
        cleared: false,
        completed: false,
        actions: group
            .actions
            .iter()
            .map(|action| ActionRecord {
                description: action.to_string(),
                action: action.clone(),
                result: ActionResult::NotAttempted(reason.to_string()),
            })
            .collect(),
    }
}

/// The record of a cleared group from its per-action results (`None`: not sent).
fn record(group: &ActionGroup, results: Progress) -> GroupRecord {
    let mut stopped: Option<String> = None;
    let actions: Vec<ActionRecord> = group
        .actions
        .iter()
        .zip(results)
        .map(|(action, result)| {
            let result = match result {
                Some(result) => result,
                None => ActionResult::NotAttempted(stopped.clone().unwrap_or_else(|| {
                    "not sent: an earlier step of its group did not complete".into()
                })),
            };
            if !result.is_done() && stopped.is_none() && !group.independent {
                stopped = Some(format!(
                    "not sent: '{action}' did not complete ({})",
                    result.describe()
                ));
            }
            ActionRecord {
                description: action.to_string(),
                action: action.clone(),
                result,
            }
        })
        .collect();
    GroupRecord {
        subject: group.subject.clone(),
        candidate: group.candidate.clone(),
        cleared: true,
        completed: actions.iter().all(|record| record.result.is_done()),
        actions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowance_refuses_beyond_what_is_left() {
        let allowance = Allowance::new(3);
        assert!(allowance.take(2));
        assert!(!allowance.take(2));
        assert!(allowance.exhausted());
        assert!(allowance.take(1));
    }
}
