//! Resuming parked sessions (contract §3.4): oldest first, while the live sessions in the
//! ledger stay under `max-candidates`, by dispatching the candidate workflow for a parked draft
//! whose commits are all the bot's. The cap is decided again on the ledger as it is written, so
//! passes running at once never exceed it. Parked sessions that stay parked keep their label.

use super::labels::status_label_sync;
use std::collections::BTreeMap;

use super::{CandidateDecision, CandidateReport, Facts, Seen, Verdict, decision};
use crate::core::ledger::{Session, SessionState};
use crate::core::outcome::StatusLabel;
use crate::core::ownership::{CommitOwnership, commit_ownership};
use crate::core::plan::{Action, ActionGroup, LedgerExpectation, PullRequestCheck};
use crate::core::recover::ledger_plan::ResumeRecord;

/// Parked sessions, oldest first, start again while live sessions stay under the cap; the
/// others keep their parked status label.
///
/// `decided` holds the candidates' verdicts (only those decided `parked` are considered) and
/// `ending` the live sessions this pass reconciles, whose room under the cap the resumes may
/// take. Returns a decision for every parked candidate: resumed, or parked with its label.
pub(super) fn resume_parked(
    facts: &Facts<'_>,
    decided: &BTreeMap<String, CandidateReport>,
    ending: usize,
) -> Vec<(String, CandidateDecision)> {
    let snapshot = facts.snapshot;
    let policy = facts.policy;
    let mut decisions = Vec::new();
    let mut parked: Vec<&Session> = snapshot
        .ledger
        .sessions
        .iter()
        .filter(|session| session.state == SessionState::Parked)
        .filter(|session| {
            decided
                .get(&session.candidate)
                .is_some_and(|report| report.verdict == Verdict::Parked)
        })
        .collect();
    parked.sort_by(|a, b| (a.started_at, &a.candidate).cmp(&(b.started_at, &b.candidate)));
    let live = snapshot.ledger.live_sessions().count();
    let mut room = (policy.max_candidates as usize).saturating_sub(live.saturating_sub(ending));
    for session in parked {
        let id = session.candidate.clone();
        let branch = policy.candidate_branch(&id);
        let pull = snapshot
            .open_pull_requests
            .items
            .iter()
            .find(|pull| pull.head_branch == branch && pull.from_this_repository);
        let number = pull.map(|pull| pull.number);
        let parked = |reason: String| {
            let group =
                pull.and_then(|pull| status_label_sync(facts, &id, pull, StatusLabel::Parked));
            (
                id.clone(),
                decision(number, Verdict::Parked, None, reason, group),
            )
        };
        if room == 0 {
            let reason = format!(
                "waiting for room under the cap ({} live of {})",
                live.saturating_sub(ending),
                policy.max_candidates
            );
            decisions.push(parked(reason));
            continue;
        }
        room -= 1;
        let Some(pull) =
            pull.filter(|pull| pull.draft && pull.author.as_deref() == Some(policy.bot.as_str()))
        else {
            decisions.push(parked(
                "no open draft pull request by the bot to resume".into(),
            ));
            continue;
        };
        let commits_are_bots = match facts.commits(pull.number) {
            Seen::Known(commits) => {
                commit_ownership(commits, pull.number, &pull.head_sha, &policy.bot)
                    == CommitOwnership::BotOnly
            }
            Seen::Failed(_) => false,
            Seen::Unread => {
                decisions.push(parked("waiting for its commits to be read".into()));
                continue;
            }
        };
        if !commits_are_bots {
            decisions.push(parked(format!(
                "#{} has commits that are not the bot's: not resumed",
                pull.number
            )));
            continue;
        }
        let git_ref = match facts.default_branch() {
            Seen::Known(branch) => branch.clone(),
            Seen::Failed(error) => {
                decisions.push(parked(format!(
                    "the default branch could not be read ({error})"
                )));
                continue;
            }
            Seen::Unread => {
                decisions.push(parked("waiting for the default branch to be read".into()));
                continue;
            }
        };
        let resume = ResumeRecord {
            candidate: id.clone(),
            parent_run: session.parent_run,
            parent_attempt: session.parent_attempt,
        };
        let mut actions = vec![Action::DispatchCandidate {
            candidate: id.clone(),
            workflow: policy.candidate_workflow.clone(),
            git_ref,
        }];
        if let Some(group) = status_label_sync(facts, &id, pull, StatusLabel::InProgress) {
            actions.extend(group.actions);
        }
        let group = ActionGroup {
            subject: id.clone(),
            candidate: Some(id.clone()),
            pull_request_check: Some(PullRequestCheck {
                number: pull.number,
                head_sha: Some(pull.head_sha.clone()),
                author: policy.bot.clone(),
                draft: Some(true),
                handoff_label: policy.handoff_label.clone(),
                open: true,
            }),
            destructive: false,
            ledger_expectation: LedgerExpectation::ResumedByThisPass,
            independent: false,
            actions,
        };
        let reason = format!(
            "resumed oldest first under the cap of {}",
            policy.max_candidates
        );
        let mut resumed = decision(number, Verdict::Resumed, None, reason, Some(group));
        resumed.resume = Some(resume);
        decisions.push((id, resumed));
    }
    decisions
}
