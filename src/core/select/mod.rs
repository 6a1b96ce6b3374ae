//! `select`'s decision (contract §3.3, §3a, §4): which candidates start a session in this pass,
//! and for every other candidate the one reason why not.
//!
//! A candidate is checked in a fixed order and keeps the first obstacle it meets: the review
//! ([`review`]), occupancy of its family (ledger claims and open sessions, klaud's own open pull
//! requests, a retained candidate branch), cooldowns earned by finished sessions, the baseline
//! verification ([`baselines`]), the capacity gate ([`capacity`]) and finally the concurrent cap
//! (`max-candidates` minus the sessions live in the ledger). Three conditions defer the whole
//! selection instead: an invalid review, a listing of pull requests or branches that could not
//! be read to its end (an incomplete listing is never read as "no pull request"), and a daily
//! budget the agent runs of the last 24 hours used up ([`budget_exhausted`]).
//!
//! [`plan_claims`] is what a compare-and-swap writer calls on every reading of the ledger: it
//! decides on that reading, turns the selection into claims and live sessions, and marks as
//! `claim-lost` what an earlier reading had chosen but a concurrent pass took meanwhile.

pub mod baselines;
pub mod capacity;
mod codes;
mod obstacles;
/// The review, read the same way by `verify-baselines` ([`crate::core::review`]).
pub use crate::core::review;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::candidate::Candidate;
use super::cost::budget_exhausted;
use super::ledger::{Deferral, LastSelection, Ledger, SessionState};
use super::policy::Policy;
use super::snapshot::Listed;
use super::text::bounded;
use baselines::BaselineVerdicts;
use capacity::CapacityGate;
pub use codes::{Decision, Reason, ReasonCode, SelectionDeferral};
use obstacles::{Obstacle, Occupancy, baseline_obstacle, cooldown_obstacle, review_obstacles};
use review::ReviewInput;

/// An open pull request as listed, before deciding whether it is klaud's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenPullRequest {
    pub number: u64,
    pub head_branch: String,
    /// `owner/name` of the head repository; `None` when it was deleted.
    pub head_repository: Option<String>,
}

/// What `select` reads from GitHub besides the ledger.
#[derive(Debug, Clone, PartialEq)]
pub struct GitHubFacts {
    /// `owner/name` of this repository.
    pub repository: String,
    /// Every open pull request of the repository.
    pub open_pull_requests: Listed<OpenPullRequest>,
    /// Names of the branches starting with the branch prefix.
    pub candidate_branches: Listed<String>,
}

/// Everything read, with the ledger as of one reading.
#[derive(Debug, Clone, Copy)]
pub struct SelectionSnapshot<'a> {
    pub ledger: &'a Ledger,
    pub github: &'a GitHubFacts,
}

/// The planner run that selects: claims and sessions are recorded with it as their parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct SelectingRun {
    pub run_id: u64,
    pub attempt: u32,
}

/// The inputs of a selection, as validated data.
#[derive(Debug, Clone, Copy)]
pub struct SelectionInputs<'a> {
    pub candidates: &'a [Candidate],
    pub review: &'a ReviewInput,
    /// `baselines.json` when `--baselines` was given.
    pub baselines: Option<&'a BaselineVerdicts>,
    pub capacity: &'a CapacityGate,
}

/// One candidate's line of the plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CandidateDecision {
    pub id: String,
    pub family: String,
    pub decision: Decision,
    /// `null` for a selected candidate. For `baseline-deferred` the code is the verification's
    /// (e.g. `unmatched-baseline`); otherwise it is the decision's.
    pub reason: Option<Reason>,
    /// When a cooldown ends (`cooling-down` only).
    pub until: Option<DateTime<Utc>>,
}

/// The cap as this reading of the ledger saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct CapAccount {
    pub max_candidates: u32,
    /// Sessions live in the ledger before this pass claimed anything.
    pub live_sessions: usize,
    /// New sessions this pass may start.
    pub room: usize,
}

/// The decision of one pass.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectionPlan {
    pub run: SelectingRun,
    pub now: DateTime<Utc>,
    pub deferred_reason: Option<SelectionDeferral>,
    /// Every candidate exactly once, in the order of the candidates file.
    pub decisions: Vec<CandidateDecision>,
    pub cap: CapAccount,
}

/// Decides the selection on one reading of the ledger. Pure: "now" and the run are inputs.
pub fn select(
    snapshot: SelectionSnapshot<'_>,
    inputs: SelectionInputs<'_>,
    policy: &Policy,
    run: SelectingRun,
    now: DateTime<Utc>,
) -> SelectionPlan {
    let cap = CapAccount::of(snapshot.ledger, policy);
    let (deferred_reason, decisions) =
        match whole_selection_deferral(snapshot, inputs.review, policy, now) {
            Some((deferral, message)) => (
                Some(deferral),
                all_deferred(inputs.candidates, deferral, &message),
            ),
            None => {
                let obstacles = Obstacles::new(snapshot, inputs, policy, run, now);
                let capacity_deferral = matches!(inputs.capacity, CapacityGate::Unavailable { .. })
                    .then_some(SelectionDeferral::CapacityUnavailable);
                (
                    capacity_deferral,
                    decide_in_order(inputs.candidates, &obstacles, cap),
                )
            }
        };
    SelectionPlan {
        run,
        now,
        deferred_reason,
        decisions,
        cap,
    }
}

impl CapAccount {
    /// The room `max-candidates` leaves beside the sessions live in `ledger`.
    fn of(ledger: &Ledger, policy: &Policy) -> Self {
        let live_sessions = ledger.live_sessions().count();
        CapAccount {
            max_candidates: policy.max_candidates,
            live_sessions,
            room: (policy.max_candidates as usize).saturating_sub(live_sessions),
        }
    }
}

/// Every candidate held back by the deferral of the whole selection.
fn all_deferred(
    candidates: &[Candidate],
    deferral: SelectionDeferral,
    message: &str,
) -> Vec<CandidateDecision> {
    candidates
        .iter()
        .map(|candidate| {
            blocked(
                candidate,
                deferral.decision(),
                Reason::new(deferral.decision(), message),
                None,
            )
        })
        .collect()
}

/// Every obstacle a candidate can meet, asked in the contract's order.
struct Obstacles<'a> {
    /// The review's obstacle per candidate id.
    review: BTreeMap<String, Obstacle>,
    occupancy: Occupancy<'a>,
    ledger: &'a Ledger,
    inputs: SelectionInputs<'a>,
    policy: &'a Policy,
    now: DateTime<Utc>,
}

impl<'a> Obstacles<'a> {
    fn new(
        snapshot: SelectionSnapshot<'a>,
        inputs: SelectionInputs<'a>,
        policy: &'a Policy,
        run: SelectingRun,
        now: DateTime<Utc>,
    ) -> Self {
        let review = match inputs.review {
            ReviewInput::Decisions(review) => review_obstacles(review, inputs.candidates),
            ReviewInput::Absent | ReviewInput::Invalid { .. } => BTreeMap::new(),
        };
        Obstacles {
            review,
            occupancy: Occupancy::new(snapshot, inputs.candidates, policy, run),
            ledger: snapshot.ledger,
            inputs,
            policy,
            now,
        }
    }

    /// The first obstacle: the review, occupancy, cooldowns, the baseline, the capacity gate.
    fn first(
        &self,
        candidate: &Candidate,
        taken_in_this_pass: &BTreeMap<&str, &str>,
    ) -> Option<Obstacle> {
        self.review
            .get(candidate.id.as_str())
            .cloned()
            .or_else(|| self.occupancy.obstacle(candidate, taken_in_this_pass))
            .or_else(|| cooldown_obstacle(self.ledger, candidate, self.policy, self.now))
            .or_else(|| baseline_obstacle(self.inputs.baselines, candidate))
            .or_else(|| self.inputs.capacity.obstacle(candidate))
    }
}

/// The candidates in file order: each gets its first obstacle, else selected while the cap
/// leaves room (repeating this run's own claim takes none), else `over-cap`.
fn decide_in_order(
    candidates: &[Candidate],
    obstacles: &Obstacles<'_>,
    cap: CapAccount,
) -> Vec<CandidateDecision> {
    let mut taken_in_this_pass: BTreeMap<&str, &str> = BTreeMap::new();
    let mut new_sessions = 0;
    let mut decisions = Vec::with_capacity(candidates.len());
    for candidate in candidates {
        let decision = match obstacles.first(candidate, &taken_in_this_pass) {
            Some(obstacle) => blocked(
                candidate,
                obstacle.decision,
                obstacle.reason,
                obstacle.until,
            ),
            None if obstacles.occupancy.holds_claim(candidate) => selected(candidate),
            None if new_sessions < cap.room => {
                new_sessions += 1;
                selected(candidate)
            }
            None => over_cap(candidate, cap, new_sessions),
        };
        if decision.decision == Decision::Selected {
            taken_in_this_pass.insert(&candidate.family, &candidate.id);
        }
        decisions.push(decision);
    }
    decisions
}

fn over_cap(candidate: &Candidate, cap: CapAccount, new_sessions: usize) -> CandidateDecision {
    blocked(
        candidate,
        Decision::OverCap,
        Reason::new(
            Decision::OverCap,
            format!(
                "the cap of {} concurrent sessions is reached ({} live before this pass, {} started by it)",
                cap.max_candidates, cap.live_sessions, new_sessions
            ),
        ),
        None,
    )
}

/// What one reading of the ledger decided: the plan, and the ledger to store when it changes.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimDecision {
    pub plan: SelectionPlan,
    /// `None` when the ledger stays as it is.
    pub ledger: Option<Ledger>,
}

/// Decides on `snapshot` and turns the selection into claims and live sessions of `run`.
/// `chosen_on_earlier_readings` holds what earlier readings of the ledger selected (they lost
/// the compare-and-swap): those no longer selectable now are `claim-lost`.
pub fn plan_claims(
    snapshot: SelectionSnapshot<'_>,
    inputs: SelectionInputs<'_>,
    policy: &Policy,
    run: SelectingRun,
    now: DateTime<Utc>,
    chosen_on_earlier_readings: &BTreeSet<String>,
) -> ClaimDecision {
    let mut plan = select(snapshot, inputs, policy, run, now);
    plan.mark_lost_claims(chosen_on_earlier_readings);
    let mut next = snapshot.ledger.clone();
    for decision in &mut plan.decisions {
        if decision.decision != Decision::Selected {
            continue;
        }
        if let Err(refusal) = next.claim_family_in_attempt(
            &decision.id,
            &decision.family,
            run.run_id,
            run.attempt,
            now,
        ) {
            // The decision read the same ledger, so this cannot happen; if it ever does, the
            // candidate is not started rather than started without its claim.
            decision.decision = Decision::ClaimLost;
            decision.reason = Some(Reason::new(
                Decision::ClaimLost,
                format!("the ledger refused the claim: {refusal:?}"),
            ));
        }
    }
    let ledger = (next != *snapshot.ledger).then(|| {
        remember_selection(&mut next, &plan, run, now);
        next
    });
    ClaimDecision { plan, ledger }
}

/// Deferrals the ledger keeps of one selection (the dashboard shows them).
const DEFERRALS_KEPT: usize = 100;

/// Records what `plan` started and held back as the ledger's last selection, unless the ledger
/// already holds the same (a selection that changes nothing writes nothing).
fn remember_selection(
    next: &mut Ledger,
    plan: &SelectionPlan,
    run: SelectingRun,
    now: DateTime<Utc>,
) {
    let selected = plan.selected_ids();
    let deferred: Vec<Deferral> = plan
        .decisions
        .iter()
        .filter(|decision| decision.decision != Decision::Selected)
        .take(DEFERRALS_KEPT)
        .map(|decision| Deferral {
            candidate: decision.id.clone(),
            code: decision
                .reason
                .as_ref()
                .map_or(decision.decision.code(), |reason| reason.code.code())
                .to_string(),
            message: decision
                .reason
                .as_ref()
                .map(|reason| bounded(&reason.message, 300))
                .unwrap_or_default(),
        })
        .collect();
    let unchanged = next
        .last_selection
        .as_ref()
        .is_some_and(|last| last.selected == selected && last.deferred == deferred);
    if !unchanged {
        next.last_selection = Some(LastSelection {
            run: run.run_id,
            at: now,
            selected,
            deferred,
        });
    }
}

impl SelectionPlan {
    pub fn selected(&self) -> impl Iterator<Item = &CandidateDecision> {
        self.decisions
            .iter()
            .filter(|decision| decision.decision == Decision::Selected)
    }

    pub fn selected_ids(&self) -> Vec<String> {
        self.selected()
            .map(|decision| decision.id.clone())
            .collect()
    }

    /// Candidates per decision, every decision that occurred.
    pub fn counts(&self) -> BTreeMap<Decision, usize> {
        let mut counts = BTreeMap::new();
        for decision in &self.decisions {
            *counts.entry(decision.decision).or_insert(0) += 1;
        }
        counts
    }

    /// Candidates an earlier reading selected but this one does not: a concurrent pass took
    /// their family or the room under the cap.
    pub fn mark_lost_claims(&mut self, chosen_on_earlier_readings: &BTreeSet<String>) {
        for decision in &mut self.decisions {
            if decision.decision == Decision::Selected
                || !chosen_on_earlier_readings.contains(&decision.id)
            {
                continue;
            }
            let why = decision
                .reason
                .as_ref()
                .map_or_else(String::new, |reason| format!(": {}", reason.message));
            decision.decision = Decision::ClaimLost;
            decision.until = None;
            decision.reason = Some(Reason::new(
                Decision::ClaimLost,
                format!(
                    "chosen on an earlier reading of the ledger, taken by a concurrent pass before this one could claim it{why}"
                ),
            ));
        }
    }

    /// The commit message of the ledger write: which run claimed what.
    pub fn ledger_message(&self) -> String {
        let claimed: Vec<String> = self
            .selected()
            .map(|decision| format!("{} for {}", decision.family, decision.id))
            .collect();
        bounded(
            &format!(
                "select run {} attempt {}: claimed {}",
                self.run.run_id,
                self.run.attempt,
                claimed.join(", ")
            ),
            1000,
        )
    }
}

/// The reason the whole selection must wait, if any.
fn whole_selection_deferral(
    snapshot: SelectionSnapshot<'_>,
    review: &ReviewInput,
    policy: &Policy,
    now: DateTime<Utc>,
) -> Option<(SelectionDeferral, String)> {
    let github = snapshot.github;
    if let ReviewInput::Invalid { message } = review {
        return Some((
            SelectionDeferral::InvalidReviewOutput,
            format!("the review is invalid, so nothing is selected: {message}"),
        ));
    }
    let incomplete: Vec<&str> = [
        github.open_pull_requests.incomplete_reason(),
        github.candidate_branches.incomplete_reason(),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !incomplete.is_empty() {
        return Some((
            SelectionDeferral::ListingIncomplete,
            format!(
                "occupancy is unknown, so nothing is selected: {}",
                incomplete.join("; ")
            ),
        ));
    }
    if let Some(pause) = &snapshot.ledger.steering.paused {
        return Some((
            SelectionDeferral::Paused,
            format!(
                "the dashboard's pause is ticked (by {} since {}), so nothing is selected",
                pause.by,
                pause.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ),
        ));
    }
    budget_exhausted(snapshot.ledger, policy, now).map(|exhausted| {
        (
            SelectionDeferral::BudgetExhausted,
            format!(
                "the daily budget is used up, so nothing is selected: {}",
                exhausted.figures()
            ),
        )
    })
}

fn selected(candidate: &Candidate) -> CandidateDecision {
    CandidateDecision {
        id: candidate.id.clone(),
        family: candidate.family.clone(),
        decision: Decision::Selected,
        reason: None,
        until: None,
    }
}

fn blocked(
    candidate: &Candidate,
    decision: Decision,
    reason: Reason,
    until: Option<DateTime<Utc>>,
) -> CandidateDecision {
    CandidateDecision {
        id: candidate.id.clone(),
        family: candidate.family.clone(),
        decision,
        reason: Some(reason),
        until,
    }
}

/// True when `ledger` holds a live session of `candidate` started by `run` (any attempt).
pub fn session_of_run(ledger: &Ledger, candidate: &str, run: SelectingRun) -> bool {
    ledger.sessions.iter().any(|session| {
        session.candidate == candidate
            && session.parent_run == run.run_id
            && session.state == SessionState::Live
    })
}
