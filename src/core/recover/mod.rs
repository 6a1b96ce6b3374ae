//! The recovery decision (contract §3.4, §4, §5): from a [`Snapshot`], the [`Policy`] and "now",
//! what to reconcile, what to sweep, what to leave alone and why, which status labels to set,
//! which claims to release, which legacy lock refs to delete and which parked sessions to resume.
//!
//! Every candidate gets exactly one [`Verdict`] with a reason. Needs-inspection is decided before
//! anything is planned for a candidate, so a candidate that needs inspection is never swept in
//! the same pass: nothing of it is touched, its claim included. Information that is missing or
//! incomplete never shrinks what is live: the parts that depend on it are skipped and said so.
//!
//! The decision runs twice per pass: [`details_needed`] asks for the details it lacks (commits of
//! the pull requests it might act on, sweep runs of their branches, who closed a pull request,
//! the status of a parent run) until none are missing, then [`recover`] returns the plan.
//!
//! - `liveness.rs`: what keeps a candidate alive (planner job, sweep, candidate run, parent run);
//! - `candidates.rs`: per candidate, the verdict; `reconcile.rs`: the reconciled outcome;
//! - `guards.rs`: the §5 guards, in one place; `cleanup.rs`: the cleanup per outcome;
//! - `resume.rs`: parked sessions started again under the cap;
//! - `aftercare/`: after-care (contract §12): each validated pull request's record decided —
//!   dropped, left for good, labelled, closed as superseded, or a refresh or repair session
//!   started in the room the resumes leave — and its ledger changes;
//! - `labels.rs`: the one status label of each klaud pull request;
//! - `legacy.rs`: leftover candidate branches, legacy lock refs and what the ledger remembers;
//! - `ledger_plan.rs`: the ledger changes as data, re-decided on the ledger as it is when written.

pub mod aftercare;
mod candidates;
mod cleanup;
mod guards;
mod issue;
mod labels;
pub mod ledger_plan;
mod legacy;
mod liveness;
mod reconcile;
mod resume;
#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::ledger::{Kept, Session, SessionState};
use super::outcome::Outcome;
use super::plan::ActionGroup;
use super::policy::Policy;
use super::snapshot::{DetailRequests, Listed, Read, RunState, Snapshot};
pub use aftercare::{AftercareDecided, AftercareReport};
pub use ledger_plan::{
    ClaimRelease, LeaseStanding, LedgerPlan, OutcomeRecord, ParkRecord, ResumeRecord,
};
pub use legacy::listing_prefixes;
pub use resume::UNADOPTED_RESUMES_HELD_AFTER;

/// What a pass knows about itself.
#[derive(Debug, Clone)]
pub struct RecoveryContext {
    /// The run this pass belongs to: the lease owner when it takes the lease.
    pub own_run: u64,
    pub now: DateTime<Utc>,
    /// Objects a pass may ask about (a branch's pull requests, a pull request, a commit's
    /// message) to examine leftover candidate branches and legacy lock refs whose run is only in
    /// their commit; the rest is examined by later passes.
    pub inspections: usize,
}

/// What recovery decided about one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// A planner job, a sweep, a candidate run or its running parent keeps it alive.
    Live,
    /// Waiting for room under the cap.
    Parked,
    /// Parked, and started again by this pass.
    Resumed,
    /// Its parent ended: an outcome is recorded and it is cleaned up per the outcome.
    Reconciled,
    /// Abandoned: cleaned up per contract §5.
    Swept,
    /// Belongs to someone else now, or has nothing left to do.
    LeftAlone,
    /// A maintainer may be acting on it: nothing of it is touched.
    NeedsInspection,
    /// Information was missing or incomplete: left as it is this pass.
    Skipped,
}

impl Verdict {
    pub const ALL: [Verdict; 8] = [
        Verdict::Live,
        Verdict::Parked,
        Verdict::Resumed,
        Verdict::Reconciled,
        Verdict::Swept,
        Verdict::LeftAlone,
        Verdict::NeedsInspection,
        Verdict::Skipped,
    ];

    /// The verdict's one spelling, the same in logs, summaries, outputs and files (its serde
    /// name).
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Live => "live",
            Verdict::Parked => "parked",
            Verdict::Resumed => "resumed",
            Verdict::Reconciled => "reconciled",
            Verdict::Swept => "swept",
            Verdict::LeftAlone => "left-alone",
            Verdict::NeedsInspection => "needs-inspection",
            Verdict::Skipped => "skipped",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
}

/// One candidate's verdict and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct CandidateReport {
    pub candidate: String,
    pub pull_request: Option<u64>,
    pub verdict: Verdict,
    /// The outcome recorded (reconciled) or already on record.
    pub outcome: Option<Outcome>,
    pub reason: String,
    /// Index into [`RecoveryPlan::groups`] of its actions.
    pub group: Option<usize>,
}

/// What happens to branches and refs that no open pull request explains.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct RefsReport {
    /// Legacy lock refs whose parent run finished, planned for deletion.
    pub lock_refs_to_delete: usize,
    /// Legacy lock refs kept because their parent run is still running.
    pub lock_refs_of_running_runs: usize,
    /// Legacy lock refs kept for another reason (e.g. naming no run), from memory or this pass.
    pub lock_refs_kept: usize,
    /// Leftover candidate branches planned for deletion.
    pub branches_to_delete: usize,
    /// Leftover candidate branches kept (e.g. a maintainer closed their pull request).
    pub branches_kept: usize,
    /// Refs not examined this pass (inspection budget, or information missing).
    pub deferred: usize,
    /// Why refs were kept or deferred, with an example each.
    pub notes: Vec<String>,
}

/// The whole decision of a pass.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct RecoveryPlan {
    pub candidates: Vec<CandidateReport>,
    /// Applied in order (groups are independent of each other).
    pub groups: Vec<ActionGroup>,
    pub ledger: LedgerPlan,
    pub refs: RefsReport,
    /// Parts of the pass skipped because information was missing, and why.
    pub skipped: Vec<String>,
    /// Every after-care pull request: what was decided and why.
    pub aftercare: Vec<AftercareReport>,
}

impl RecoveryPlan {
    /// Candidates with a verdict, in id order.
    pub fn with_verdict(&self, verdict: Verdict) -> Vec<String> {
        self.candidates
            .iter()
            .filter(|report| report.verdict == verdict)
            .map(|report| report.candidate.clone())
            .collect()
    }

    /// True when the plan holds work only a lease holder may do.
    pub fn needs_lease(&self) -> bool {
        self.groups.iter().any(|group| group.destructive) || self.ledger.needs_lease()
    }
}

/// The details the decision still lacks; empty when it can decide.
pub fn details_needed(
    snapshot: &Snapshot,
    policy: &Policy,
    context: &RecoveryContext,
) -> DetailRequests {
    let facts = Facts::new(snapshot, policy, context);
    decide(&facts);
    snapshot.unanswered(facts.needs.into_inner())
}

/// The plan of a pass. Details that were never read make the affected candidates `skipped`.
pub fn recover(snapshot: &Snapshot, policy: &Policy, context: &RecoveryContext) -> RecoveryPlan {
    decide(&Facts::new(snapshot, policy, context))
}

/// The whole decision, folded once from its steps. Each step is a function of the facts and of
/// what the steps before it decided, passed explicitly: after-care records are settled first
/// (`aftercare::settle`: their pull requests' verdicts come from there), the other candidates
/// are decided one by one (`candidates::decide`), parked ones resumed with the room their
/// reconciled neighbours leave (`resume::resume_parked`), after-care sessions due started in the
/// room left (`aftercare::start_due`), claims released after their candidates
/// (`release_claims`), and the refs no open pull request explains examined last
/// (`legacy::decide_refs`).
fn decide(facts: &Facts<'_>) -> RecoveryPlan {
    let mut plan = PlanBuilder {
        skipped: listing_gaps(facts.snapshot),
        ..PlanBuilder::default()
    };
    plan.ledger.lease = lease_standing(facts);
    let liveness = liveness::Liveness::assess(facts);
    let settled = aftercare::settle(facts);
    let aftercare_candidates = settled.candidates();
    for id in candidate_ids(facts) {
        if aftercare_candidates.contains(&id) {
            continue;
        }
        let decision = candidates::decide(facts, &id, &liveness);
        plan.add(id, decision);
    }
    for decision in settled.decisions {
        plan.add_aftercare(decision);
    }
    // Room under the cap: the live sessions this pass ends (a parked one it ends held none).
    let ending = plan
        .ledger
        .outcomes
        .iter()
        .filter(|record| record.session == SessionState::Live)
        .count()
        + plan.ledger.parks.len();
    let resumes = resume::resume_parked(facts, &plan.reports, ending);
    let resumed = resumes
        .iter()
        .filter(|(_, decision)| decision.verdict == Verdict::Resumed)
        .count();
    for (id, decision) in resumes {
        plan.add(id, decision);
    }
    let live = facts.snapshot.ledger.live_sessions().count();
    let room = (facts.policy.max_candidates as usize)
        .saturating_sub(live.saturating_sub(ending) + resumed);
    for decision in aftercare::start_due(facts, settled.due, room) {
        plan.add_aftercare(decision);
    }
    plan.ledger.claim_releases = release_claims(facts, &plan.reports, &plan.untouchable);
    let refs = legacy::decide_refs(facts, &liveness, &plan.reports, &plan.untouchable);
    for (id, decision) in refs.candidates {
        plan.add(id, decision);
    }
    plan.ledger.kept_added.extend(refs.kept_added);
    plan.ledger.kept_dropped = refs.kept_dropped;
    if let Some(group) = refs.lock_refs {
        plan.groups.push(group);
    }
    plan.refs = refs.report;
    plan.build()
}

/// The plan as its steps add to it.
#[derive(Default)]
struct PlanBuilder {
    reports: BTreeMap<String, CandidateReport>,
    groups: Vec<ActionGroup>,
    ledger: LedgerPlan,
    refs: RefsReport,
    skipped: Vec<String>,
    /// Candidates that must not be touched (needs inspection, skipped, live).
    untouchable: BTreeSet<String>,
    aftercare: Vec<AftercareReport>,
}

impl PlanBuilder {
    /// One candidate's decision: its report (a later decision replaces an earlier one, as a
    /// resume replaces "parked"), its group, and what the ledger records of it.
    fn add(&mut self, candidate: String, decision: CandidateDecision) {
        if matches!(
            decision.verdict,
            Verdict::Live | Verdict::NeedsInspection | Verdict::Skipped
        ) {
            self.untouchable.insert(candidate.clone());
        }
        let group = decision
            .group
            .filter(|group| !group.actions.is_empty())
            .map(|group| {
                self.groups.push(group);
                self.groups.len() - 1
            });
        self.ledger.outcomes.extend(decision.recorded);
        self.ledger.resumes.extend(decision.resume);
        self.ledger.parks.extend(decision.park);
        self.ledger.kept_added.extend(decision.kept);
        self.reports.insert(
            candidate.clone(),
            CandidateReport {
                candidate,
                pull_request: decision.pull_request,
                verdict: decision.verdict,
                outcome: decision.outcome,
                reason: decision.reason,
                group,
            },
        );
    }

    /// One after-care record's decision: its report, its record's change, its session to start
    /// and, when after-care gives it, its candidate's verdict.
    fn add_aftercare(&mut self, decision: aftercare::AftercareDecision) {
        self.ledger.aftercare.extend(decision.change);
        self.ledger.aftercare_starts.extend(decision.start);
        if let Some(candidate) = decision.candidate {
            self.add(decision.report.candidate.clone(), candidate);
        }
        self.aftercare.push(decision.report);
    }

    fn build(mut self) -> RecoveryPlan {
        for release in &mut self.ledger.claim_releases {
            release.after_group = self
                .reports
                .get(&release.candidate)
                .and_then(|report| report.group);
        }
        RecoveryPlan {
            candidates: self.reports.into_values().collect(),
            groups: self.groups,
            ledger: self.ledger,
            refs: self.refs,
            skipped: self.skipped,
            aftercare: self.aftercare,
        }
    }
}

/// What one step decided about one candidate: its verdict and why, the actions for it, and
/// what the ledger records of it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CandidateDecision {
    pub pull_request: Option<u64>,
    pub verdict: Verdict,
    /// The outcome recorded (reconciled) or already on record.
    pub outcome: Option<Outcome>,
    pub reason: String,
    pub group: Option<ActionGroup>,
    /// The outcome the ledger records for its session.
    pub recorded: Option<OutcomeRecord>,
    /// Its parked session started again.
    pub resume: Option<ResumeRecord>,
    /// Its live session parked for a new job.
    pub park: Option<ParkRecord>,
    /// What recovery remembers of it while it stays where it is.
    pub kept: Vec<Kept>,
}

/// A decision with nothing for the ledger.
pub(crate) fn decision(
    pull_request: Option<u64>,
    verdict: Verdict,
    outcome: Option<Outcome>,
    reason: impl Into<String>,
    group: Option<ActionGroup>,
) -> CandidateDecision {
    CandidateDecision {
        pull_request,
        verdict,
        outcome,
        reason: reason.into(),
        group,
        recorded: None,
        resume: None,
        park: None,
        kept: Vec::new(),
    }
}

impl CandidateDecision {
    /// The same decision, recording `record` in the ledger.
    pub(crate) fn recording(mut self, record: OutcomeRecord) -> Self {
        self.recorded = Some(record);
        self
    }

    /// The same decision, parking its session for a new job.
    pub(crate) fn parking(mut self, record: ParkRecord) -> Self {
        self.park = Some(record);
        self
    }

    /// The same decision, remembering `kept` in the ledger.
    pub(crate) fn remembering(mut self, kept: Kept) -> Self {
        self.kept.push(kept);
        self
    }
}

/// A fact that may not have been read yet.
pub(crate) enum Seen<'a, T> {
    Known(&'a T),
    Failed(&'a str),
    Unread,
}

/// The status of a run, from the active listing or read on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RunSeen {
    Active,
    Ended(Option<DateTime<Utc>>),
    Failed(String),
    Unread,
}

fn lookup<'a, K: Ord, T>(map: &'a BTreeMap<K, Read<T>>, key: &K) -> Seen<'a, T> {
    match map.get(key) {
        Some(Ok(value)) => Seen::Known(value),
        Some(Err(error)) => Seen::Failed(&error.reason),
        None => Seen::Unread,
    }
}

/// What the decision reads: the snapshot, the policy and the pass's context. Every lookup of a
/// detail the snapshot lacks records it in `needs`, so the shell can read it and decide again;
/// nothing else is written while deciding.
pub(crate) struct Facts<'a> {
    pub snapshot: &'a Snapshot,
    pub policy: &'a Policy,
    pub context: &'a RecoveryContext,
    needs: RefCell<DetailRequests>,
}

impl<'a> Facts<'a> {
    fn new(snapshot: &'a Snapshot, policy: &'a Policy, context: &'a RecoveryContext) -> Self {
        Facts {
            snapshot,
            policy,
            context,
            needs: RefCell::new(DetailRequests::default()),
        }
    }

    fn need(&self, record: impl FnOnce(&mut DetailRequests)) {
        record(&mut self.needs.borrow_mut());
    }

    pub(crate) fn run_state(&self, run_id: u64) -> RunSeen {
        if self
            .snapshot
            .active_runs
            .items
            .iter()
            .any(|run| run.id == run_id)
        {
            return RunSeen::Active;
        }
        match lookup(&self.snapshot.runs, &run_id) {
            Seen::Known(RunState::Active) => RunSeen::Active,
            Seen::Known(RunState::Finished { ended_at }) => RunSeen::Ended(Some(*ended_at)),
            Seen::Known(RunState::Missing) => RunSeen::Ended(None),
            Seen::Failed(error) => RunSeen::Failed(error.to_string()),
            Seen::Unread => {
                self.need(|needs| {
                    needs.runs.insert(run_id);
                });
                RunSeen::Unread
            }
        }
    }

    pub(crate) fn planner_jobs(&self, run_id: u64) -> Seen<'a, Vec<super::snapshot::JobFact>> {
        let seen = lookup(&self.snapshot.planner_jobs, &run_id);
        if matches!(seen, Seen::Unread) {
            self.need(|needs| {
                needs.planner_jobs.insert(run_id);
            });
        }
        seen
    }

    pub(crate) fn commits(&self, number: u64) -> Seen<'a, super::snapshot::CommitsFact> {
        let seen = lookup(&self.snapshot.commits, &number);
        if matches!(seen, Seen::Unread) {
            self.need(|needs| {
                needs.commits.insert(number);
            });
        }
        seen
    }

    pub(crate) fn sweeps(&self, branch: &str) -> Seen<'a, Listed<super::snapshot::RunFact>> {
        let seen = lookup(&self.snapshot.sweeps, &branch.to_string());
        if matches!(seen, Seen::Unread) {
            self.need(|needs| {
                needs.sweeps.insert(branch.to_string());
            });
        }
        seen
    }

    pub(crate) fn issue(&self, number: u64) -> Seen<'a, super::snapshot::IssueFact> {
        let seen = lookup(&self.snapshot.issues, &number);
        if matches!(seen, Seen::Unread) {
            self.need(|needs| {
                needs.issues.insert(number);
            });
        }
        seen
    }

    /// The issue candidate `id` came from, asked for when unread.
    pub(crate) fn candidate_issue(&self, id: &str) -> Seen<'a, super::snapshot::CandidateIssue> {
        let seen = lookup(&self.snapshot.candidate_issues, &id.to_string());
        if matches!(seen, Seen::Unread) {
            self.need(|needs| {
                needs.candidate_issues.insert(id.to_string());
            });
        }
        seen
    }

    pub(crate) fn branch_pull_requests(
        &self,
        branch: &str,
    ) -> Seen<'a, Vec<super::snapshot::PullRequestFact>> {
        let seen = lookup(&self.snapshot.branch_pull_requests, &branch.to_string());
        if matches!(seen, Seen::Unread) {
            self.need(|needs| {
                needs.branch_pull_requests.insert(branch.to_string());
            });
        }
        seen
    }

    pub(crate) fn commit_message(&self, sha: &str) -> Seen<'a, String> {
        let seen = lookup(&self.snapshot.commit_messages, &sha.to_string());
        if matches!(seen, Seen::Unread) {
            self.need(|needs| {
                needs.commit_messages.insert(sha.to_string());
            });
        }
        seen
    }

    pub(crate) fn default_branch(&self) -> Seen<'a, String> {
        match &self.snapshot.default_branch {
            Some(Ok(branch)) => Seen::Known(branch),
            Some(Err(error)) => Seen::Failed(&error.reason),
            None => {
                self.need(|needs| needs.default_branch = true);
                Seen::Unread
            }
        }
    }

    /// Where branch `name` points, as the listing of candidate branches read it.
    pub(crate) fn branch_sha(&self, name: &str) -> Option<&'a str> {
        self.snapshot
            .refs
            .items
            .iter()
            .find(|reference| reference.name == name)
            .map(|reference| reference.sha.as_str())
    }

    /// The candidate id of a branch under the prefix, when it is a valid id.
    pub(crate) fn candidate_of_branch<'b>(&self, branch: &'b str) -> Option<&'b str> {
        self.policy
            .candidate_of_branch(branch)
            .filter(|id| is_candidate_id(id))
    }

    /// The open (live or parked) session of a candidate, else its latest finished one.
    pub(crate) fn session_of(&self, candidate: &str) -> Option<&'a Session> {
        let sessions = &self.snapshot.ledger.sessions;
        sessions
            .iter()
            .rev()
            .find(|s| s.candidate == candidate && s.state != SessionState::Finished)
            .or_else(|| sessions.iter().rev().find(|s| s.candidate == candidate))
    }
}

/// The listings that are incomplete, said once each.
fn listing_gaps(snapshot: &Snapshot) -> Vec<String> {
    let gaps = [
        ("open pull requests", &snapshot.open_pull_requests.gap),
        ("candidate branches and lock refs", &snapshot.refs.gap),
        ("active workflow runs", &snapshot.active_runs.gap),
    ];
    gaps.into_iter()
        .filter_map(|(what, gap)| {
            gap.as_ref().map(|reason| format!(
                "the listing of {what} is incomplete ({reason}): the sweep and every destructive step that depends on it are skipped this pass"
            ))
        })
        .collect()
}

/// Where the recovery lease stands for this pass.
fn lease_standing(facts: &Facts<'_>) -> LeaseStanding {
    let Some(lease) = facts.snapshot.ledger.recovery_lease.clone() else {
        return LeaseStanding::Free;
    };
    if lease.owner_run == facts.context.own_run {
        return LeaseStanding::Ours;
    }
    match facts.run_state(lease.owner_run) {
        RunSeen::Ended(_) => LeaseStanding::OwnerFinished {
            owner_run: lease.owner_run,
        },
        RunSeen::Active => LeaseStanding::HeldBy {
            owner_run: lease.owner_run,
            since: lease.taken_at,
        },
        RunSeen::Failed(error) => LeaseStanding::OwnerUnknown {
            owner_run: lease.owner_run,
            reason: error,
        },
        RunSeen::Unread => LeaseStanding::OwnerUnknown {
            owner_run: lease.owner_run,
            reason: "its run has not been read yet".into(),
        },
    }
}

/// Every candidate the pass has something to say about: open klaud pull requests, open
/// sessions and claims.
pub(crate) fn candidate_ids(facts: &Facts<'_>) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for pull in &facts.snapshot.open_pull_requests.items {
        if let Some(id) = facts.candidate_of_branch(&pull.head_branch)
            && pull.from_this_repository
        {
            ids.insert(id.to_string());
        }
    }
    for session in &facts.snapshot.ledger.sessions {
        if session.state != SessionState::Finished {
            ids.insert(session.candidate.clone());
        }
    }
    for claim in &facts.snapshot.ledger.claims {
        ids.insert(claim.candidate.clone());
    }
    ids
}

/// Claims whose parent run finished are released after their candidate's cleanup, unless the
/// candidate is live, needs inspection, was skipped or was resumed (`after_group` is set when
/// the plan is built).
fn release_claims(
    facts: &Facts<'_>,
    reports: &BTreeMap<String, CandidateReport>,
    untouchable: &BTreeSet<String>,
) -> Vec<ClaimRelease> {
    let destructive_ok =
        facts.snapshot.active_runs.is_complete() && facts.snapshot.open_pull_requests.is_complete();
    if !destructive_ok {
        return Vec::new();
    }
    facts
        .snapshot
        .ledger
        .claims
        .iter()
        .filter(|claim| !untouchable.contains(&claim.candidate))
        .filter(|claim| {
            reports
                .get(&claim.candidate)
                .is_none_or(|report| report.verdict != Verdict::Resumed)
        })
        .filter(|claim| matches!(facts.run_state(claim.parent_run), RunSeen::Ended(_)))
        .map(|claim| ClaimRelease {
            family: claim.family.clone(),
            candidate: claim.candidate.clone(),
            parent_run: claim.parent_run,
            after_group: None,
        })
        .collect()
}

pub use crate::core::candidate::is_candidate_id;

/// True when `title` names `candidate` (or its branch) as a whole word.
pub(crate) fn title_names(title: &str, candidate: &str, branch: &str) -> bool {
    title
        .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/')))
        .any(|word| word == candidate || word == branch)
}
