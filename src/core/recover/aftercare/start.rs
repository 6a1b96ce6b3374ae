//! Starting the after-care sessions due (contract §12), in order, each only after every check
//! allows it, cheapest first: the dashboard's pause, the daily budget, one session per family,
//! the room under the cap, then the guards that need reads and the default branch. A start is a
//! live `refresh` or `repair` session of this run in the ledger (`ledger.rs`) and the candidate
//! workflow dispatched as a resume is, the pull request labelled `klaud-in-progress`.

use std::collections::BTreeSet;

use super::ledger::AftercareStart;
use super::{
    AftercareDecided, AftercareDecision, AftercareReport, Due, examined, finished, guards_failed,
    label_group_of, report, skipped,
};
use crate::core::aftercare::{AftercareWork, FailedJob, SessionKind};
use crate::core::cost::budget_exhausted;
use crate::core::health::{Check, PullRequestChecks, failed_check};
use crate::core::outcome::StatusLabel;
use crate::core::plan::{Action, ActionGroup, LedgerExpectation, status_label_action};
use crate::core::recover::{Facts, Seen, Verdict, decision};

/// The sessions due, started while every check allows, in order (see the module doc);
/// `room` is what the cap leaves after this pass's resumes.
pub(in crate::core::recover) fn start_due(
    facts: &Facts<'_>,
    due: Vec<Due<'_>>,
    mut room: usize,
) -> Vec<AftercareDecision> {
    let ledger = &facts.snapshot.ledger;
    let budget = budget_exhausted(ledger, facts.policy, facts.context.now);
    let mut families: BTreeSet<&str> = BTreeSet::new();
    let mut decisions = Vec::new();
    for due in due {
        let refused = if let Some(pause) = &ledger.steering.paused {
            Some(format!(
                "paused: the dashboard's pause is ticked (by {})",
                pause.by
            ))
        } else if let Some(exhausted) = &budget {
            Some(format!("budget-exhausted: {}", exhausted.figures()))
        } else if let Some(holder) = family_held(facts, &due, &families) {
            Some(format!("one session per family: {holder}"))
        } else if room == 0 {
            Some(format!(
                "no room under the cap of {} (parked sessions resumed first)",
                facts.policy.max_candidates
            ))
        } else {
            None
        };
        if let Some(why) = refused {
            decisions.push(not_started(facts, &due, why));
            continue;
        }
        let decided = start(facts, &due);
        if decided.start.is_some() || decided.report.decided == AftercareDecided::Skipped {
            // A start, or one waiting for its reads, takes the room.
            room -= 1;
            families.insert(due.record.family.as_str());
        }
        decisions.push(decided);
    }
    decisions
}

/// Who holds the due pull request's family: an open session or a claim in the ledger, or a
/// session this pass starts.
fn family_held(facts: &Facts<'_>, due: &Due<'_>, started: &BTreeSet<&str>) -> Option<String> {
    let family = due.record.family.as_str();
    let ledger = &facts.snapshot.ledger;
    if let Some(session) = ledger.open_session_of_family(family) {
        return Some(format!(
            "{} has an open session of the family",
            session.candidate
        ));
    }
    if let Some(claim) = ledger.claim_of_family(family) {
        return Some(format!("{} holds the family's claim", claim.candidate));
    }
    started
        .contains(family)
        .then(|| "another pull request of the family starts a session in this pass".into())
}

/// A due session given room: the guards read, the default branch known, then started by
/// dispatching the candidate workflow as a resume is, the pull request labelled in progress.
fn start(facts: &Facts<'_>, due: &Due<'_>) -> AftercareDecision {
    let (record, pull) = (due.record, due.pull);
    if let Some(decided) = guards_failed(facts, record, pull, &format!("a {} is due and", due.kind))
    {
        return decided;
    }
    let git_ref = match facts.default_branch() {
        Seen::Known(branch) => branch.clone(),
        Seen::Failed(error) => {
            return skipped(
                record,
                pull,
                format!("the default branch could not be read ({error})"),
            );
        }
        Seen::Unread => {
            return skipped(
                record,
                pull,
                "the default branch could not be read this pass".into(),
            );
        }
    };
    let policy = facts.policy;
    let id = &record.candidate;
    let mut actions = vec![Action::DispatchCandidate {
        candidate: id.clone(),
        workflow: policy.candidate_workflow.clone(),
        git_ref,
    }];
    actions.extend(status_label_action(
        policy,
        pull,
        Some(StatusLabel::InProgress),
    ));
    let group = ActionGroup {
        pull_request_check: Some(examined(facts, pull)),
        ledger_expectation: LedgerExpectation::AftercareStartedByThisPass,
        ..label_group_of(id, actions)
    };
    let reason = format!("a {} session started: {}", due.kind, due.because);
    let start = AftercareStart {
        candidate: id.clone(),
        family: record.family.clone(),
        kind: due.kind,
        work: AftercareWork {
            pull_request: pull.number,
            head_sha: pull.head_sha.clone(),
            failed: match due.kind {
                SessionKind::Repair => failed_jobs(facts, pull.number),
                _ => Vec::new(),
            },
        },
        sessions_used: record.sessions_used,
        last_started_at: record.last_started_at,
    };
    AftercareDecision {
        report: AftercareReport {
            kind: Some(due.kind),
            ..report(record, AftercareDecided::Started, reason.clone())
        },
        change: None,
        candidate: Some(decision(
            Some(pull.number),
            Verdict::Live,
            None,
            reason,
            Some(group),
        )),
        start: Some(start),
    }
}

/// A due session not started this pass, and why: the pull request keeps `klaud-finished`.
fn not_started(facts: &Facts<'_>, due: &Due<'_>, why: String) -> AftercareDecision {
    let reason = format!(
        "a {} is due ({}) but not started: {why}",
        due.kind, due.because
    );
    finished(
        facts,
        due.record,
        due.pull,
        AftercareDecided::NotStarted,
        reason,
        Some(due.kind),
    )
}

/// The failed checks on the pull request's head with their conclusion, in the health report's
/// order: a `repair` session's evidence.
fn failed_jobs(facts: &Facts<'_>, number: u64) -> Vec<FailedJob> {
    let Some(checks) = facts
        .snapshot
        .pull_request_checks
        .as_ref()
        .and_then(|pulls| pulls.items.iter().find(|pull| pull.number == number))
    else {
        return Vec::new();
    };
    failed_of(checks)
}

fn failed_of(checks: &PullRequestChecks) -> Vec<FailedJob> {
    checks
        .checks
        .items
        .iter()
        .filter_map(|check| {
            let failed = failed_check(check)?;
            let conclusion = match check {
                Check::Run(run) => run.conclusion.clone(),
                Check::Status(_) => None,
            };
            Some(FailedJob {
                name: failed.name,
                run_id: failed.run_id,
                job_id: failed.job_id,
                url: failed.url,
                conclusion,
            })
        })
        .collect()
}
