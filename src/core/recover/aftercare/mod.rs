//! After-care in `recover` (contract §12): what one pass does about every after-care record of
//! the ledger, from the recovery snapshot (the open pull requests with their mergeability and
//! checks, `Snapshot::pull_request_checks`) and `core::aftercare::next_for`, the one rule of what
//! comes next for a pull request. For an after-care pull request with no session of its own open,
//! the candidate's verdict comes from here, never from the abandonment sweep: a pull request that
//! waits for a maintainer or was left for good is not abandoned.
//!
//! In order, for each record: a pull request no longer open (on a whole listing) drops it; a
//! record left for good stays so; an open session of its candidate is decided as any session;
//! the handoff label, an author or branch not the bot's leave it for good. A pull request waiting
//! for a maintainer keeps `klaud-needs-maintainer`; a superseded one is closed with klaud's note
//! and its branch deleted (`supersede_group`, behind every guard); a watched draft waits unless
//! after-care itself left it one (retry after-care hands it back); a watched one whose head moved
//! from the validated head has its commits read (a commit not the bot's leaves it for good), then
//! `next_for` decides: watch or wait (`klaud-finished`), sessions used up (waits for a
//! maintainer), or a session due.
//!
//! A due session starts (`start.rs`) only after every check, cheapest first, so that a pass
//! with nothing to start reads nothing more: the dashboard's pause, the daily budget, one session
//! per family (no open session or claim of it, none started this pass), the room under the cap
//! left after the parked sessions this pass resumes (resumes go first: their work is under way),
//! then the guards that need reads — every commit the bot's, no sweep by anyone else since it
//! was validated — and the default branch to dispatch on. Due pull requests are taken oldest
//! validation first. The start itself is re-decided on the ledger as it is written
//! (`ledger.rs`). Its tests are `recover/tests/aftercare.rs`, on the recovery tests' worlds.

pub mod ledger;
mod start;

pub(super) use start::start_due;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::guards::{AftercareGuards, aftercare_commits, aftercare_guards};
use super::{CandidateDecision, Facts, Verdict, decision};
use crate::core::aftercare::{
    AftercareNext, AftercareRecord, AftercareState, SessionKind, next_for, supersede_group,
};
use crate::core::health::{HealthFacts, PullRequestHealth, health_report};
use crate::core::ledger::{Ledger, SessionState};
use crate::core::outcome::StatusLabel;
use crate::core::plan::{
    Action, ActionGroup, LedgerExpectation, PullRequestCheck, status_label_action,
};
use crate::core::policy::Policy;
use crate::core::snapshot::PullRequestFact;
use ledger::{AftercareChange, AftercareStart};

/// Whether a pass reads the mergeability and checks of klaud's open pull requests for
/// after-care: only when after-care may act (it starts sessions, or closes superseded pull
/// requests) and the ledger has after-care records, so a pass with nothing in after-care reads
/// nothing more.
pub fn reads_checks(policy: &Policy, ledger: &Ledger) -> bool {
    let settings = &policy.aftercare;
    (settings.starts_sessions() || settings.supersede) && !ledger.aftercare.is_empty()
}

/// What a pass decided about one after-care pull request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AftercareDecided {
    /// Its pull request is no longer open: its record is dropped.
    Dropped,
    /// A guard failed in this pass: left for good, nothing written on GitHub.
    Left,
    /// Left for good by an earlier pass: never touched again.
    LeftEarlier,
    /// A session of its candidate is open: decided as any session.
    SessionOpen,
    /// Nothing calls for a session: watched, `klaud-finished`.
    Watched,
    /// A session may be due once the wait ends.
    Waits,
    /// An after-care session is started.
    Started,
    /// A session is due and not started in this pass (the reason says why).
    NotStarted,
    /// It waits for a maintainer: `klaud-needs-maintainer`.
    NeedsMaintainer,
    /// Superseded: closed with klaud's note and its branch deleted.
    Closed,
    /// Something it depends on could not be read: left as it is this pass.
    Skipped,
}

/// One after-care pull request in `recover.json`: what was decided and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct AftercareReport {
    pub pull_request: u64,
    pub candidate: String,
    pub decided: AftercareDecided,
    /// The session started, due or waited for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<SessionKind>,
    pub reason: String,
}

/// What a pass decided about one after-care record: its report, its record's change, its
/// candidate's verdict (none when another step decides it) and the session it starts.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct AftercareDecision {
    pub report: AftercareReport,
    pub change: Option<AftercareChange>,
    pub candidate: Option<CandidateDecision>,
    pub start: Option<AftercareStart>,
}

/// A session due on a watched pull request, waiting for the room under the cap.
pub(super) struct Due<'a> {
    record: &'a AftercareRecord,
    pull: &'a PullRequestFact,
    kind: SessionKind,
    /// Why it is due (`#12: checks passing; conflicts with its base`).
    because: String,
}

/// The records decided before the room under the cap is known, and the sessions due.
pub(super) struct Settled<'a> {
    pub decisions: Vec<AftercareDecision>,
    pub due: Vec<Due<'a>>,
}

impl Settled<'_> {
    /// The candidates whose verdict after-care gives.
    pub fn candidates(&self) -> BTreeSet<String> {
        let decided = self.decisions.iter().filter(|d| d.candidate.is_some());
        decided
            .map(|decision| decision.report.candidate.clone())
            .chain(self.due.iter().map(|due| due.record.candidate.clone()))
            .collect()
    }
}

/// Every after-care record decided, but the sessions due (in start order: oldest validation
/// first, then by number).
pub(super) fn settle<'a>(facts: &Facts<'a>) -> Settled<'a> {
    let health = health_by_number(facts);
    let mut settled = Settled {
        decisions: Vec::new(),
        due: Vec::new(),
    };
    for record in &facts.snapshot.ledger.aftercare {
        match settle_record(facts, record, &health) {
            Ok(decision) => settled.decisions.push(decision),
            Err(due) => settled.due.push(due),
        }
    }
    settled
        .due
        .sort_by_key(|due| (due.record.validated_at, due.record.pull_request));
    settled
}

/// The health of each pull request whose checks were read (no sweep job is read for it).
fn health_by_number(facts: &Facts<'_>) -> BTreeMap<u64, PullRequestHealth> {
    let Some(pulls) = &facts.snapshot.pull_request_checks else {
        return BTreeMap::new();
    };
    let jobs = BTreeMap::new();
    let health = HealthFacts {
        pulls,
        jobs: &jobs,
        sweep_workflow: facts.policy.sweep_workflow.as_deref(),
    };
    health_report(health, &facts.policy.health)
        .pull_requests
        .into_iter()
        .map(|row| (row.number, row))
        .collect()
}

/// One record decided, or the session due on it (`Err`).
fn settle_record<'a>(
    facts: &Facts<'a>,
    record: &'a AftercareRecord,
    health: &BTreeMap<u64, PullRequestHealth>,
) -> Result<AftercareDecision, Due<'a>> {
    let listing = &facts.snapshot.open_pull_requests;
    let Some(pull) = listing
        .items
        .iter()
        .find(|pull| pull.number == record.pull_request)
    else {
        return Ok(match &listing.gap {
            None => Built::reported(record, AftercareDecided::Dropped, "no longer open")
                .changing(AftercareChange::Drop {
                    pull_request: record.pull_request,
                })
                .without_candidate(),
            Some(gap) => Built::reported(
                record,
                AftercareDecided::Skipped,
                format!("the open pull requests could not all be listed ({gap})"),
            )
            .without_candidate(),
        });
    };
    if let AftercareState::Left { reason, .. } = &record.state {
        let reason = format!("left for good earlier: {reason}");
        return Ok(Built::reported(record, AftercareDecided::LeftEarlier, reason).left_alone(pull));
    }
    if let Some(session) = open_session(facts, &record.candidate) {
        let reason = format!("its {} session is open", session.kind);
        return Ok(
            Built::reported(record, AftercareDecided::SessionOpen, reason).without_candidate(),
        );
    }
    if let Some(reason) = not_the_bots(facts, record, pull) {
        return Ok(left(record, pull, reason));
    }
    match &record.state {
        AftercareState::NeedsMaintainer { because, .. } => Ok(needs_maintainer(
            facts,
            record,
            pull,
            format!("waits for a maintainer: {because}"),
            None,
        )),
        AftercareState::Superseded { by, .. } => Ok(close_superseded(facts, record, pull, *by)),
        AftercareState::Watched => watched(facts, record, pull, health.get(&pull.number)),
        AftercareState::Left { .. } => unreachable!("decided above"),
    }
}

/// The live or parked session of `candidate`, if any.
fn open_session<'a>(
    facts: &Facts<'a>,
    candidate: &str,
) -> Option<&'a crate::core::ledger::Session> {
    facts
        .snapshot
        .ledger
        .sessions
        .iter()
        .find(|session| session.candidate == candidate && session.state != SessionState::Finished)
}

/// Why the pull request is not (or no longer) klaud's to act on, read from the listing alone:
/// the handoff label, another author, a head branch that is not the candidate's in this
/// repository.
fn not_the_bots(
    facts: &Facts<'_>,
    record: &AftercareRecord,
    pull: &PullRequestFact,
) -> Option<String> {
    let policy = facts.policy;
    if pull.labels.contains(&policy.handoff_label) {
        return Some(format!(
            "handed off to maintainers ({})",
            policy.handoff_label
        ));
    }
    if pull.author.as_deref() != Some(policy.bot.as_str()) {
        let author = pull.author.as_deref().unwrap_or("a deleted account");
        return Some(format!("#{} is now by {author}, not the bot", pull.number));
    }
    if !pull.from_this_repository || pull.head_branch != policy.candidate_branch(&record.candidate)
    {
        return Some(format!(
            "#{} no longer comes from {} in this repository",
            pull.number,
            policy.candidate_branch(&record.candidate)
        ));
    }
    None
}

/// A watched pull request: a draft waits (after-care acts on ready ones) unless after-care left
/// it a draft; a head that moved from the validated one has its commits read; then `next_for`
/// on its health.
fn watched<'a>(
    facts: &Facts<'a>,
    record: &'a AftercareRecord,
    pull: &'a PullRequestFact,
    health: Option<&PullRequestHealth>,
) -> Result<AftercareDecision, Due<'a>> {
    if pull.draft && !drafted_by_aftercare(record) {
        let reason = "a draft without an after-care session: left as it is until it is ready";
        return Ok(Built::reported(record, AftercareDecided::Skipped, reason).left_alone(pull));
    }
    if record.validated_head.as_deref() != Some(pull.head_sha.as_str()) {
        let moved = format!(
            "its head moved from the validated {}",
            short(record.validated_head.as_deref().unwrap_or("head"))
        );
        match aftercare_commits(facts, pull) {
            AftercareGuards::Hold => {}
            AftercareGuards::Touched(reason) => {
                return Ok(left(record, pull, format!("{moved}: {reason}")));
            }
            AftercareGuards::Unsure(reason) | AftercareGuards::Waiting(reason) => {
                return Ok(skipped(
                    record,
                    pull,
                    format!("{moved} and {reason}: left as it is"),
                ));
            }
        }
    }
    let settings = &facts.policy.aftercare;
    let Some(health) = health.filter(|_| settings.starts_sessions()) else {
        let reason = "after-care starts no session (its settings, or its checks were not read)";
        return Ok(finished(
            facts,
            record,
            pull,
            AftercareDecided::Watched,
            reason,
            None,
        ));
    };
    let next = next_for(record, health, false, settings, facts.context.now);
    let reason = format!("{next} ({})", health_in_words(health));
    match next {
        AftercareNext::Watch => Ok(finished(
            facts,
            record,
            pull,
            AftercareDecided::Watched,
            reason,
            None,
        )),
        AftercareNext::Wait { kind, .. } => Ok(finished(
            facts,
            record,
            pull,
            AftercareDecided::Waits,
            reason,
            kind,
        )),
        AftercareNext::SessionsUsedUp { kind, used } => Ok(needs_maintainer(
            facts,
            record,
            pull,
            reason,
            Some((kind, used)),
        )),
        AftercareNext::Start { kind } => Err(Due {
            record,
            pull,
            kind,
            because: health_in_words(health),
        }),
        AftercareNext::SessionOpen
        | AftercareNext::WaitsForMaintainer
        | AftercareNext::Close { .. }
        | AftercareNext::Left => Ok(skipped(record, pull, reason)),
    }
}

/// Whether klaud's own after-care left the pull request a draft: its last after-care session
/// started after its last validation and ended without `validated` (no session is open here),
/// which leaves an open draft waiting for a maintainer (contract §12). Watched again, it was
/// handed back by *retry after-care*, and the session granted may start on the draft.
fn drafted_by_aftercare(record: &AftercareRecord) -> bool {
    record
        .last_started_at
        .is_some_and(|started| started > record.validated_at)
}

/// What the health says in words, for the reason.
fn health_in_words(health: &PullRequestHealth) -> String {
    let mut words = vec![format!("checks {}", health.health.name())];
    if health.conflicting {
        words.push("conflicts with its base".into());
    }
    if health.behind {
        words.push("behind its base".into());
    }
    if !health.failed.is_empty() {
        let names: Vec<&str> = health.failed.iter().map(|f| f.name.as_str()).collect();
        words.push(format!("failed: {}", names.join(", ")));
    }
    format!("#{}: {}", health.number, words.join("; "))
}

/// A superseded pull request, closed behind every guard with klaud's note and its unmoved
/// branch deleted (destructive: only under the recovery lease).
fn close_superseded(
    facts: &Facts<'_>,
    record: &AftercareRecord,
    pull: &PullRequestFact,
    by: u64,
) -> AftercareDecision {
    if let Some(gap) = &facts.snapshot.refs.gap {
        let reason = format!(
            "superseded by #{by}, and the candidate branches could not all be listed ({gap})"
        );
        return skipped(record, pull, reason);
    }
    if let Some(decided) = guards_failed(facts, record, pull, &format!("superseded by #{by},")) {
        return decided;
    }
    let branch_sha = facts.branch_sha(&pull.head_branch);
    let (group, kept) = supersede_group(
        facts.policy,
        pull,
        branch_sha,
        by,
        LedgerExpectation::NoOpenSession,
    );
    let mut reason = format!("superseded by #{by}: closed with klaud's note, its branch deleted");
    if let Some(kept) = kept {
        reason = format!("superseded by #{by}: closed with klaud's note; {kept}");
    }
    let candidate = decision(
        Some(pull.number),
        Verdict::Swept,
        None,
        reason.clone(),
        Some(group),
    );
    AftercareDecision {
        report: report(record, AftercareDecided::Closed, reason),
        change: None,
        candidate: Some(candidate),
        start: None,
    }
}

/// The pull request as examined: open, ready, the bot's, at the same head, not handed off.
fn examined(facts: &Facts<'_>, pull: &PullRequestFact) -> PullRequestCheck {
    PullRequestCheck::examined(facts.policy, pull)
}

/// A group of a candidate's after-care actions, changing nothing destructive, dropped when a
/// session of it opened meanwhile.
fn label_group_of(candidate: &str, actions: Vec<Action>) -> ActionGroup {
    ActionGroup {
        subject: candidate.to_string(),
        candidate: Some(candidate.to_string()),
        pull_request_check: None,
        destructive: false,
        ledger_expectation: LedgerExpectation::NoOpenSession,
        independent: false,
        actions,
    }
}

/// The group making `wanted` the pull request's one status label, checked on it as examined;
/// none when it already is.
fn status_label(
    facts: &Facts<'_>,
    candidate: &str,
    pull: &PullRequestFact,
    wanted: StatusLabel,
) -> Option<ActionGroup> {
    let action = status_label_action(facts.policy, pull, Some(wanted))?;
    Some(ActionGroup {
        pull_request_check: Some(examined(facts, pull)),
        ..label_group_of(candidate, vec![action])
    })
}

/// A watched pull request left as it is with `klaud-finished`.
fn finished(
    facts: &Facts<'_>,
    record: &AftercareRecord,
    pull: &PullRequestFact,
    decided: AftercareDecided,
    reason: impl Into<String>,
    kind: Option<SessionKind>,
) -> AftercareDecision {
    let reason = reason.into();
    let group = status_label(facts, &record.candidate, pull, StatusLabel::Finished);
    AftercareDecision {
        report: AftercareReport {
            kind,
            ..report(record, decided, reason.clone())
        },
        change: None,
        candidate: Some(decision(
            Some(pull.number),
            Verdict::LeftAlone,
            None,
            reason,
            group,
        )),
        start: None,
    }
}

/// A pull request that waits for a maintainer (with `used_up`, from now on: its sessions are
/// used up), labelled `klaud-needs-maintainer`.
fn needs_maintainer(
    facts: &Facts<'_>,
    record: &AftercareRecord,
    pull: &PullRequestFact,
    reason: String,
    used_up: Option<(SessionKind, u32)>,
) -> AftercareDecision {
    let group = status_label(facts, &record.candidate, pull, StatusLabel::NeedsMaintainer);
    AftercareDecision {
        report: AftercareReport {
            kind: used_up.map(|(kind, _)| kind),
            ..report(record, AftercareDecided::NeedsMaintainer, reason.clone())
        },
        change: used_up.map(|(_, used)| AftercareChange::SessionsUsedUp {
            pull_request: record.pull_request,
            used,
        }),
        candidate: Some(decision(
            Some(pull.number),
            Verdict::LeftAlone,
            None,
            reason,
            group,
        )),
        start: None,
    }
}

/// A guard failed: the record is left for good and nothing is written on GitHub.
/// The §5 guards read just before a pull request is acted on (a session started, or it is
/// closed as superseded): the decision when one failed (left for good) or could not be told
/// (`doing` and why: left as it is this pass); `None` while they hold.
fn guards_failed(
    facts: &Facts<'_>,
    record: &AftercareRecord,
    pull: &PullRequestFact,
    doing: &str,
) -> Option<AftercareDecision> {
    match aftercare_guards(facts, pull, record.validated_at) {
        AftercareGuards::Hold => None,
        AftercareGuards::Touched(reason) => Some(left(record, pull, reason)),
        AftercareGuards::Unsure(reason) | AftercareGuards::Waiting(reason) => Some(skipped(
            record,
            pull,
            format!("{doing} {reason}: left as it is"),
        )),
    }
}

fn left(record: &AftercareRecord, pull: &PullRequestFact, reason: String) -> AftercareDecision {
    let reported = format!("left for good: {reason}");
    AftercareDecision {
        change: Some(AftercareChange::Leave {
            pull_request: record.pull_request,
            reason,
        }),
        ..Built::reported(record, AftercareDecided::Left, reported).left_alone(pull)
    }
}

/// Left as it is this pass, and why.
fn skipped(record: &AftercareRecord, pull: &PullRequestFact, reason: String) -> AftercareDecision {
    let candidate = decision(
        Some(pull.number),
        Verdict::Skipped,
        None,
        reason.clone(),
        None,
    );
    AftercareDecision {
        report: report(record, AftercareDecided::Skipped, reason),
        change: None,
        candidate: Some(candidate),
        start: None,
    }
}

fn report(
    record: &AftercareRecord,
    decided: AftercareDecided,
    reason: impl Into<String>,
) -> AftercareReport {
    AftercareReport {
        pull_request: record.pull_request,
        candidate: record.candidate.clone(),
        decided,
        kind: None,
        reason: reason.into(),
    }
}

/// A decision being built: its report and its record's change.
struct Built {
    report: AftercareReport,
    change: Option<AftercareChange>,
}

impl Built {
    fn reported(
        record: &AftercareRecord,
        decided: AftercareDecided,
        reason: impl Into<String>,
    ) -> Self {
        Built {
            report: report(record, decided, reason),
            change: None,
        }
    }

    fn changing(mut self, change: AftercareChange) -> Self {
        self.change = Some(change);
        self
    }

    /// Another step gives the candidate's verdict.
    fn without_candidate(self) -> AftercareDecision {
        AftercareDecision {
            report: self.report,
            change: self.change,
            candidate: None,
            start: None,
        }
    }

    /// The candidate is left alone, with the report's reason, and nothing written.
    fn left_alone(self, pull: &PullRequestFact) -> AftercareDecision {
        let candidate = decision(
            Some(pull.number),
            Verdict::LeftAlone,
            None,
            self.report.reason.clone(),
            None,
        );
        AftercareDecision {
            candidate: Some(candidate),
            ..self.without_candidate()
        }
    }
}

fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}
