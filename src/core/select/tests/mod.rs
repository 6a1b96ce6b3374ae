//! The selection decision on small worlds built with [`World`]: one test per reason, the legacy
//! outcome names, the cap, the whole-selection deferrals and the claims a plan writes.

mod cap_and_claims;
mod cooldowns;
mod gates;
mod occupancy;
mod properties;

use std::collections::BTreeSet;

use chrono::{DateTime, Duration, Utc};

use super::baselines::parse_baselines;
use super::capacity::CapacityGate;
use super::review::{ReviewInput, read_review};
use super::*;
use crate::core::candidate::parse_candidates;
use crate::core::ledger::{Ledger, Session};
use crate::core::outcome::Outcome;
use crate::core::policy::tests::inferencex_policy;

const RUN: SelectingRun = SelectingRun {
    run_id: 900,
    attempt: 1,
};

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

/// A repository, a ledger and the inputs of one pass.
pub(super) struct World {
    ledger: Ledger,
    github: GitHubFacts,
    candidates: Vec<Candidate>,
    review: ReviewInput,
    baselines: Option<BaselineVerdicts>,
    capacity: CapacityGate,
    policy: Policy,
}

impl World {
    /// Candidates given as `(id, family)`, in order; nothing else anywhere.
    fn with_candidates(candidates: &[(&str, &str)]) -> Self {
        let list: Vec<serde_json::Value> = candidates
            .iter()
            .map(|(id, family)| serde_json::json!({"id": id, "family": family}))
            .collect();
        World {
            ledger: Ledger::empty(),
            github: GitHubFacts {
                repository: "acme/bench".into(),
                open_pull_requests: Listed::complete(Vec::new()),
                candidate_branches: Listed::complete(Vec::new()),
            },
            candidates: parse_candidates(&serde_json::Value::Array(list).to_string()).unwrap(),
            review: ReviewInput::Absent,
            baselines: None,
            capacity: CapacityGate::Open,
            policy: inferencex_policy(),
        }
    }

    fn session(
        &mut self,
        candidate: &str,
        family: &str,
        run: u64,
        state: SessionState,
    ) -> &mut Session {
        self.ledger.sessions.push(Session {
            candidate: candidate.into(),
            family: family.into(),
            parent_run: run,
            parent_attempt: None,
            state,
            started_at: now() - Duration::days(20),
            finished_at: None,
            outcome: None,
            agent_ran: true,
            pull_request: None,
            pending_outcome: None,
            attempts: Vec::new(),
            resuming: None,
            unadopted_jobs: Vec::new(),
            kind: Default::default(),
            aftercare: None,
        });
        self.ledger.sessions.last_mut().unwrap()
    }

    fn live(mut self, candidate: &str, family: &str, run: u64) -> Self {
        self.ledger
            .claim_family(candidate, family, run, now() - Duration::hours(1))
            .unwrap();
        self
    }

    fn parked(mut self, candidate: &str, family: &str) -> Self {
        self.session(candidate, family, 5, SessionState::Parked);
        self
    }

    /// A session of `candidate` that finished `hours_ago` with `outcome` (a public or legacy
    /// name, read as the ledger reads it).
    fn finished(mut self, candidate: &str, family: &str, outcome: &str, hours_ago: i64) -> Self {
        let outcome = Outcome::parse(outcome).expect("an outcome name");
        let session = self.session(candidate, family, 5, SessionState::Finished);
        session.outcome = Some(outcome);
        session.finished_at = Some(now() - Duration::hours(hours_ago));
        self
    }

    /// `candidate`'s pull request `number`, validated two hours ago, watched in after-care.
    fn validated_in_aftercare(mut self, candidate: &str, family: &str, number: u64) -> Self {
        self.ledger.record_validated(
            candidate,
            family,
            number,
            Some("0123456789abcdef0123456789abcdef01234567"),
            now() - Duration::hours(2),
        );
        self
    }

    fn agent_never_ran(mut self) -> Self {
        self.ledger.sessions.last_mut().unwrap().agent_ran = false;
        self
    }

    fn open_pull_request(mut self, number: u64, head_branch: &str, head_repository: &str) -> Self {
        let Some(pulls) = self.github.open_pull_requests.whole_mut() else {
            panic!("the listing is incomplete");
        };
        pulls.push(OpenPullRequest {
            number,
            head_branch: head_branch.into(),
            head_repository: Some(head_repository.into()),
        });
        self
    }

    fn branch(mut self, name: &str) -> Self {
        let Some(branches) = self.github.candidate_branches.whole_mut() else {
            panic!("the listing is incomplete");
        };
        branches.push(name.into());
        self
    }

    fn review(mut self, json: serde_json::Value) -> Self {
        self.review = read_review(&json.to_string(), &self.candidates);
        self
    }

    fn max_candidates(mut self, cap: u32) -> Self {
        self.policy.max_candidates = cap;
        self
    }

    fn decide(&self) -> SelectionPlan {
        select(self.snapshot(), self.inputs(), &self.policy, RUN, now())
    }

    fn claims(&self, chosen_earlier: &[&str]) -> ClaimDecision {
        let chosen: BTreeSet<String> = chosen_earlier.iter().map(|id| id.to_string()).collect();
        plan_claims(
            self.snapshot(),
            self.inputs(),
            &self.policy,
            RUN,
            now(),
            &chosen,
        )
    }

    fn snapshot(&self) -> SelectionSnapshot<'_> {
        SelectionSnapshot {
            ledger: &self.ledger,
            github: &self.github,
        }
    }

    fn inputs(&self) -> SelectionInputs<'_> {
        SelectionInputs {
            candidates: &self.candidates,
            review: &self.review,
            baselines: self.baselines.as_ref(),
            capacity: &self.capacity,
        }
    }
}

fn decision_of<'p>(plan: &'p SelectionPlan, id: &str) -> &'p CandidateDecision {
    plan.decisions
        .iter()
        .find(|decision| decision.id == id)
        .unwrap_or_else(|| panic!("{id} is in the plan"))
}

fn decisions(plan: &SelectionPlan) -> Vec<(&str, Decision)> {
    plan.decisions
        .iter()
        .map(|decision| (decision.id.as_str(), decision.decision))
        .collect()
}

fn message_of(plan: &SelectionPlan, id: &str) -> String {
    decision_of(plan, id)
        .reason
        .as_ref()
        .unwrap()
        .message
        .clone()
}
