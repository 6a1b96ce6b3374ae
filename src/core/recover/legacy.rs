//! Branches and refs no open pull request explains:
//!
//! - **leftover candidate branches** of abandoned candidates are deleted only when their pull
//!   request was closed by the bot (a maintainer-closed one keeps its branch), every commit is
//!   the bot's, and the branch still points at the pull request's head;
//! - **legacy lock refs** (`klaud/recovery-*`, `klaud/claim-*`, configurable) are deleted once
//!   their parent run finished, by the pass holding the recovery lease. The parent is read from
//!   the ref's name (`klaud/recovery-<run>-<candidate>`) or else from its commit message.
//!
//! Examining a leftover branch or a lock ref's commit means asking GitHub about a few objects
//! (read in batches), so a pass asks about at most `inspections` of them and later passes
//! continue. What is found to stay (a branch whose pull request a maintainer closed, a ref that
//! names no run) is remembered in the ledger while it points where it did, so it is not read
//! again.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow::{self, Break, Continue};

use super::cleanup::cancel_bot_smokes;
use super::guards::{BranchFinding, deletable_branch};
use super::liveness::{Alive, Liveness};

use super::{CandidateDecision, CandidateReport, Facts, RefsReport, Seen, Verdict, decision};
use crate::core::ledger::{Kept, KeptObject, KeptVerdict, Session};
use crate::core::outcome::{BranchOnCleanup, Outcome};
use crate::core::plan::{Action, ActionGroup, LedgerExpectation};
use crate::core::policy::Policy;
use crate::core::snapshot::RefFact;

/// The branch prefixes a pass lists: the candidate prefix and the literal start of each lock
/// pattern, without prefixes covered by another.
pub fn listing_prefixes(policy: &Policy) -> Vec<String> {
    let mut prefixes: Vec<String> = std::iter::once(policy.branch_prefix.clone())
        .chain(
            policy
                .legacy_lock_patterns
                .iter()
                .map(|pattern| pattern.split('*').next().unwrap_or(pattern).to_string()),
        )
        .collect();
    prefixes.sort();
    prefixes.dedup();
    let all = prefixes.clone();
    prefixes.retain(|prefix| {
        !all.iter()
            .any(|other| other != prefix && prefix.starts_with(other.as_str()))
    });
    // One listing of a shared directory (`klaud/`) instead of several of its children.
    let common = common_directory(&prefixes);
    match common {
        Some(directory) if prefixes.len() > 1 => vec![directory],
        _ => prefixes,
    }
}

/// The longest common prefix of `prefixes` ending in `/`, if any.
fn common_directory(prefixes: &[String]) -> Option<String> {
    let first = prefixes.first()?;
    let mut common = first.as_str();
    for prefix in &prefixes[1..] {
        let shared = common
            .char_indices()
            .zip(prefix.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map(|((index, c), _)| index + c.len_utf8())
            .unwrap_or(0);
        common = &common[..shared];
    }
    let end = common.rfind('/')?;
    Some(common[..=end].to_string())
}

/// What examining the refs decided: the sweeps of leftover branches (candidates no earlier
/// step decided), the lock refs to delete, what the ledger remembers and forgets, the report.
#[derive(Debug, Default)]
pub(super) struct RefsDecision {
    pub candidates: Vec<(String, CandidateDecision)>,
    pub lock_refs: Option<ActionGroup>,
    pub kept_added: Vec<Kept>,
    pub kept_dropped: Vec<KeptObject>,
    pub report: RefsReport,
}

/// The step's working state: its explicit inputs from the candidates' decisions, the
/// inspection budget it spends, and the decision it builds.
struct Examination<'d> {
    decided: &'d BTreeMap<String, CandidateReport>,
    untouchable: &'d BTreeSet<String>,
    inspections_left: usize,
    out: RefsDecision,
}

/// The refs no open pull request explains, examined after every candidate was decided
/// (`decided`, `untouchable`: a candidate with a verdict is not examined again here).
pub(super) fn decide_refs(
    facts: &Facts<'_>,
    liveness: &Liveness,
    decided: &BTreeMap<String, CandidateReport>,
    untouchable: &BTreeSet<String>,
) -> RefsDecision {
    let mut out = Examination {
        decided,
        untouchable,
        inspections_left: facts.context.inspections,
        out: RefsDecision::default(),
    };
    examine_refs(facts, liveness, &mut out);
    out.out
}

fn examine_refs(facts: &Facts<'_>, liveness: &Liveness, out: &mut Examination<'_>) {
    let snapshot = facts.snapshot;
    forget_what_moved(facts, out);
    if let Some(gap) = &snapshot.refs.gap {
        out.out.report.notes.push(format!(
            "branches and lock refs not examined: the listing is incomplete ({gap})"
        ));
        return;
    }
    if let Some(gap) = &snapshot.active_runs.gap {
        out.out.report.notes.push(format!(
            "branches and lock refs not examined: the active runs could not all be listed ({gap})"
        ));
        return;
    }
    let mut lock_deletions = Vec::new();
    let mut refs: Vec<&RefFact> = snapshot.refs.items.iter().collect();
    refs.sort_by(|a, b| a.name.cmp(&b.name));
    for reference in refs {
        if reference.name == facts.policy.state_branch {
            continue;
        }
        if let Some(id) = facts.candidate_of_branch(&reference.name) {
            let id = id.to_string();
            leftover_branch(facts, out, &id, reference, liveness);
        } else if facts.policy.is_legacy_lock(&reference.name)
            && let Some(action) = lock_ref(facts, out, reference)
        {
            lock_deletions.push(action);
        }
    }
    out.out.report.lock_refs_to_delete = lock_deletions.len();
    if !lock_deletions.is_empty() {
        out.out.lock_refs = Some(ActionGroup {
            subject: "legacy lock refs".into(),
            candidate: None,
            pull_request_check: None,
            destructive: true,
            ledger_expectation: LedgerExpectation::Nothing,
            independent: true,
            actions: lock_deletions,
        });
    }
}

/// Remembered objects that moved or disappeared are examined again.
fn forget_what_moved(facts: &Facts<'_>, out: &mut Examination<'_>) {
    let snapshot = facts.snapshot;
    if !snapshot.refs.is_complete() || !snapshot.open_pull_requests.is_complete() {
        return;
    }
    for kept in &snapshot.ledger.kept {
        let still_there = match &kept.object {
            KeptObject::Branch(branch) => snapshot
                .refs
                .items
                .iter()
                .any(|reference| reference.name == *branch && reference.sha == kept.sha),
            KeptObject::PullRequest(number) => snapshot
                .open_pull_requests
                .items
                .iter()
                .any(|pull| pull.number == *number && pull.head_sha == kept.sha),
        };
        if !still_there {
            out.out.kept_dropped.push(kept.object.clone());
        }
    }
}

fn remembered<'a>(facts: &Facts<'a>, object: &KeptObject, sha: &str) -> Option<&'a Kept> {
    facts
        .snapshot
        .ledger
        .kept
        .iter()
        .find(|kept| kept.object == *object && kept.sha == sha)
}

fn keep(
    facts: &Facts<'_>,
    out: &mut Examination<'_>,
    object: KeptObject,
    sha: &str,
    reason: String,
) {
    if out.out.report.notes.len() < 8 {
        out.out.report.notes.push(format!("{object}: {reason}"));
    }
    out.out.kept_added.push(Kept {
        object,
        sha: sha.to_string(),
        verdict: KeptVerdict::LeftAlone,
        reason,
        since: facts.context.now,
    });
}

fn defer(out: &mut Examination<'_>, why: String) {
    if out.out.report.deferred == 0 || out.out.report.notes.len() < 8 {
        out.out.report.notes.push(why);
    }
    out.out.report.deferred += 1;
}

/// What examining a leftover candidate branch decided.
enum LeftoverBranch {
    /// Nothing to say or do this pass: an open pull request, a verdict or liveness explains
    /// the branch, it is gone, or a detail is not read yet (the decision asks for it).
    Nothing,
    /// Kept, as the ledger remembers it.
    Remembered,
    /// Kept, and remembered from now on while it points where it does, and why.
    Kept(String),
    /// Left for a later pass, and why.
    Deferred(String),
    /// Deleted: the bot's smoke runs cancelled, then the branch.
    Swept {
        number: u64,
        outcome: Option<Outcome>,
        actions: Vec<Action>,
    },
}

/// A step of examining a leftover branch: `Continue` with what it found, or `Break` with what
/// becomes of the branch, which ends its examination there.
type Examined<T> = ControlFlow<LeftoverBranch, T>;

/// A candidate branch without an open pull request or open session: what becomes of it,
/// counted in the report, remembered or swept.
fn leftover_branch(
    facts: &Facts<'_>,
    out: &mut Examination<'_>,
    id: &str,
    reference: &RefFact,
    liveness: &Liveness,
) {
    let fate = match leftover_branch_fate(facts, out, id, reference, liveness) {
        Break(fate) | Continue(fate) => fate,
    };
    match fate {
        LeftoverBranch::Nothing => {}
        LeftoverBranch::Remembered => out.out.report.branches_kept += 1,
        LeftoverBranch::Kept(why) => {
            out.out.report.branches_kept += 1;
            let object = KeptObject::Branch(reference.name.clone());
            keep(facts, out, object, &reference.sha, why);
        }
        LeftoverBranch::Deferred(why) => defer(out, format!("{}: {why}", reference.name)),
        LeftoverBranch::Swept {
            number,
            outcome,
            actions,
        } => {
            out.out.report.branches_to_delete += 1;
            let swept = swept_leftover_branch(id, number, outcome, actions);
            out.out.candidates.push((id.to_string(), swept));
        }
    }
}

/// The examination of a leftover branch in order: worth examining at all, within the
/// inspection budget, its pull request found and closed by the bot, then its deletion when
/// every commit is the bot's and the branch is still at the pull request's head.
fn leftover_branch_fate(
    facts: &Facts<'_>,
    out: &mut Examination<'_>,
    id: &str,
    reference: &RefFact,
    liveness: &Liveness,
) -> Examined<LeftoverBranch> {
    let session = worth_examining(facts, out, id, reference, liveness)?;
    let known_number = session.and_then(|session| session.pull_request);
    // Its pull request and its commits, and the branch's pull requests when none is known.
    spend_inspections(out, 2 + usize::from(known_number.is_none()))?;
    let number = pull_request_of_branch(facts, reference, known_number)?;
    closed_by_the_bot(facts, number)?;
    let outcome = session.and_then(|session| session.outcome);
    Continue(match deletable_branch(facts, &reference.name, number) {
        Ok(Some(delete)) => {
            let mut actions = cancel_bot_smokes(facts, id, liveness);
            actions.push(delete);
            LeftoverBranch::Swept {
                number,
                outcome,
                actions,
            }
        }
        Ok(None) | Err(BranchFinding::Waiting(_)) => LeftoverBranch::Nothing,
        Err(BranchFinding::Kept(why)) => LeftoverBranch::Kept(why),
    })
}

/// The checks before anything is read about a leftover branch: the open pull requests all
/// listed (its own may be open), no open pull request, verdict or liveness explaining it, not
/// remembered, and its session (returned) not ended with an outcome that keeps the branch.
fn worth_examining<'a>(
    facts: &Facts<'a>,
    out: &Examination<'_>,
    id: &str,
    reference: &RefFact,
    liveness: &Liveness,
) -> Examined<Option<&'a Session>> {
    let snapshot = facts.snapshot;
    if let Some(gap) = &snapshot.open_pull_requests.gap {
        // Its pull request may be open and simply not listed.
        return Break(LeftoverBranch::Deferred(format!(
            "the open pull requests could not all be listed ({gap})"
        )));
    }
    let has_open_pull = snapshot
        .open_pull_requests
        .items
        .iter()
        .any(|pull| pull.head_branch == reference.name && pull.from_this_repository);
    if has_open_pull || out.decided.contains_key(id) || out.untouchable.contains(id) {
        return Break(LeftoverBranch::Nothing);
    }
    let object = KeptObject::Branch(reference.name.clone());
    if remembered(facts, &object, &reference.sha).is_some() {
        return Break(LeftoverBranch::Remembered);
    }
    let session = facts.session_of(id);
    match liveness.of(facts, id, session) {
        Alive::No => {}
        Alive::Yes(_) => return Break(LeftoverBranch::Nothing),
        Alive::Unknown(why) | Alive::Unreadable(why) => {
            return Break(LeftoverBranch::Deferred(why));
        }
    }
    if let Some(outcome) = session.and_then(|session| session.outcome)
        && outcome.branch_on_cleanup() != BranchOnCleanup::Deleted
    {
        return Break(LeftoverBranch::Kept(format!(
            "its session ended {outcome}: the branch stays"
        )));
    }
    Continue(session)
}

/// `cost` objects of the inspection budget spent on a branch, or the branch left for a later
/// pass when fewer are left.
fn spend_inspections(out: &mut Examination<'_>, cost: usize) -> Examined<()> {
    if out.inspections_left < cost {
        return Break(LeftoverBranch::Deferred(
            "left for a later pass (inspection budget)".into(),
        ));
    }
    out.inspections_left -= cost;
    Continue(())
}

/// The pull request of a leftover branch: the one its session names, else the one from this
/// repository at the branch's head (else the newest); a branch no pull request was opened
/// from is kept.
fn pull_request_of_branch(
    facts: &Facts<'_>,
    reference: &RefFact,
    known_number: Option<u64>,
) -> Examined<u64> {
    if let Some(number) = known_number {
        return Continue(number);
    }
    match facts.branch_pull_requests(&reference.name) {
        Seen::Unread => Break(LeftoverBranch::Nothing),
        Seen::Failed(error) => Break(LeftoverBranch::Deferred(format!(
            "its pull requests could not be read ({error})"
        ))),
        Seen::Known(pulls) => pulls
            .iter()
            .filter(|pull| pull.from_this_repository)
            .max_by_key(|pull| (pull.head_sha == reference.sha, pull.number))
            .map_or_else(
                || {
                    Break(LeftoverBranch::Kept(
                        "no pull request was opened from it".into(),
                    ))
                },
                |pull| Continue(pull.number),
            ),
    }
}

/// Only the branch of a pull request the bot closed may go: a merged one, or one closed by
/// anyone else, keeps its branch; one open after all waits for a later pass.
fn closed_by_the_bot(facts: &Facts<'_>, number: u64) -> Examined<()> {
    let issue = match facts.issue(number) {
        Seen::Unread => return Break(LeftoverBranch::Nothing),
        Seen::Failed(error) => {
            return Break(LeftoverBranch::Deferred(format!(
                "#{number} could not be read ({error})"
            )));
        }
        Seen::Known(issue) => issue,
    };
    if issue.open {
        return Break(LeftoverBranch::Deferred(format!(
            "#{number} is open but was not listed"
        )));
    }
    if issue.merged {
        return Break(LeftoverBranch::Kept(format!("#{number} was merged")));
    }
    if issue.closed_by.as_deref() != Some(facts.policy.bot.as_str()) {
        return Break(LeftoverBranch::Kept(format!(
            "#{number} was closed by {}: a maintainer-closed pull request keeps its branch",
            issue.closed_by.as_deref().unwrap_or("someone")
        )));
    }
    Continue(())
}

/// The sweep of a leftover branch whose pull request the bot closed: its deletion, while no
/// session of it is open.
fn swept_leftover_branch(
    id: &str,
    number: u64,
    outcome: Option<Outcome>,
    actions: Vec<Action>,
) -> CandidateDecision {
    let group = ActionGroup {
        subject: id.to_string(),
        candidate: Some(id.to_string()),
        pull_request_check: None,
        destructive: true,
        ledger_expectation: LedgerExpectation::NoOpenSession,
        independent: false,
        actions,
    };
    let reason = format!("leftover branch of #{number}, which the bot closed");
    decision(Some(number), Verdict::Swept, outcome, reason, Some(group))
}

/// A legacy lock ref: its deletion when its parent run finished.
fn lock_ref(facts: &Facts<'_>, out: &mut Examination<'_>, reference: &RefFact) -> Option<Action> {
    let object = KeptObject::Branch(reference.name.clone());
    if remembered(facts, &object, &reference.sha).is_some() {
        out.out.report.lock_refs_kept += 1;
        return None;
    }
    let parent = match parent_in_name(facts.policy, &reference.name) {
        Some(parent) => parent,
        None => {
            if out.inspections_left == 0 {
                defer(
                    out,
                    format!(
                        "{}: left for a later pass (inspection budget)",
                        reference.name
                    ),
                );
                return None;
            }
            out.inspections_left -= 1;
            match facts.commit_message(&reference.sha) {
                Seen::Unread => return None,
                Seen::Failed(error) => {
                    defer(
                        out,
                        format!("{}: its commit could not be read ({error})", reference.name),
                    );
                    return None;
                }
                Seen::Known(message) => match run_in_message(message) {
                    Some(parent) => parent,
                    None => {
                        out.out.report.lock_refs_kept += 1;
                        keep(
                            facts,
                            out,
                            object,
                            &reference.sha,
                            "names no run, neither in its name nor in its commit message".into(),
                        );
                        return None;
                    }
                },
            }
        }
    };
    if facts
        .snapshot
        .active_runs
        .items
        .iter()
        .any(|run| run.id == parent)
    {
        out.out.report.lock_refs_of_running_runs += 1;
        return None;
    }
    Some(Action::DeleteLockRef {
        name: reference.name.clone(),
        expected_sha: reference.sha.clone(),
    })
}

/// The run id right after a lock pattern's literal start: `klaud/recovery-<run>-<candidate>`.
pub(crate) fn parent_in_name(policy: &Policy, name: &str) -> Option<u64> {
    policy
        .legacy_lock_patterns
        .iter()
        .filter(|pattern| crate::core::policy::glob_matches(pattern, name))
        .find_map(|pattern| {
            let start = pattern.split('*').next().unwrap_or(pattern);
            leading_run_id(name.strip_prefix(start)?)
        })
}

/// A run id (at least four digits) at the start of `text`, ended by `-`, `/` or the end.
fn leading_run_id(text: &str) -> Option<u64> {
    let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
    let rest = &text[digits.len()..];
    (digits.len() >= 4 && (rest.is_empty() || rest.starts_with(['-', '/'])))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The run a commit message names: `run 123456`, `run-id: 123456`, `run_id=123456`,
/// `runs/123456`.
pub(crate) fn run_in_message(message: &str) -> Option<u64> {
    let lower = message.to_ascii_lowercase();
    let mut search = lower.as_str();
    while let Some(index) = search.find("run") {
        let before_ok = index == 0
            || !search[..index]
                .chars()
                .last()
                .is_some_and(|c| c.is_ascii_alphanumeric());
        let mut rest = &search[index + 3..];
        for suffix in ["s/", "_id", "-id", " id", "id"] {
            if let Some(after) = rest.strip_prefix(suffix) {
                rest = after;
                break;
            }
        }
        let rest = rest.trim_start_matches([' ', ':', '#', '=', '-', '/']);
        if before_ok
            && let Some(run) = leading_run_id(rest).or_else(|| {
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                (digits.len() >= 4).then(|| digits.parse().ok()).flatten()
            })
        {
            return Some(run);
        }
        search = &search[index + 3..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::policy::tests::inferencex_policy;

    #[test]
    fn one_listing_covers_the_candidate_prefix_and_the_lock_patterns() {
        let policy = inferencex_policy();
        assert_eq!(listing_prefixes(&policy), ["klaud/"]);
        let mut separate = inferencex_policy();
        separate.legacy_lock_patterns = vec!["locks/*".into()];
        assert_eq!(listing_prefixes(&separate), ["klaud/auto-", "locks/"]);
    }

    #[test]
    fn the_parent_run_is_read_from_the_name_or_the_commit_message() {
        let policy = inferencex_policy();
        assert_eq!(
            parent_in_name(&policy, "klaud/recovery-10000000123-cand-07"),
            Some(10_000_000_123)
        );
        assert_eq!(parent_in_name(&policy, "klaud/claim-cand-07"), None);
        assert_eq!(parent_in_name(&policy, "klaud/recovery-12-x"), None);
        assert_eq!(
            run_in_message("claim cand-30 for run 10000004321"),
            Some(10_000_004_321)
        );
        assert_eq!(run_in_message("lock\n\nrun-id: 98765"), Some(98_765));
        assert_eq!(run_in_message("see actions/runs/55555/job"), Some(55_555));
        assert_eq!(run_in_message("rerun 12"), None);
        assert_eq!(run_in_message("no number"), None);
    }
}
