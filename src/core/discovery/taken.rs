//! What already holds a family, for every discovery source alike (contract §11, §13): a live or
//! parked session, an open klaud pull request or an existing branch (`occupied`), a ledger claim
//! alone (`claimed`), a cooldown of the candidate (`cooling-down`) or of the whole family
//! (`held`) — the first that applies, in that order.
//!
//! A record (a session, a claim, a pull request's or branch's candidate) is a family's when the
//! ledger names the family, when its candidate is one the family proposes, when its candidate is
//! of the discovered shape with the family's id, or when it is the reference system's coarse id of
//! one of the family's keys, alone or followed by `-` (its branches are
//! `klaude/auto-<coarse id>-<image hash>`).
//!
//! A pull request that waits in after-care with no session of its own (and its branch) holds
//! only its own candidate, so that a newer image of the family can be tried (contract §12),
//! while `aftercare.supersede` is on.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, SecondsFormat, Utc};

use super::FamilyFate;
use super::identity::{family_id, family_id_of_candidate};
use crate::core::aftercare::waits_in_aftercare;
use crate::core::cooldown::{CooldownScope, RunningCooldown, running_cooldowns};
use crate::core::ledger::{Ledger, SessionState};
use crate::core::policy::Policy;
use crate::core::select::{GitHubFacts, OpenPullRequest};

/// How one family is named by what is recorded elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyNames {
    name: String,
    /// The family part of the ids discovered for it (`identity(family)[:16]`).
    id16: String,
    /// The reference system's coarse ids of its keys.
    coarse: BTreeSet<String>,
    /// The candidates it proposes, whatever their shape (`issue-<n>`).
    members: BTreeSet<String>,
}

impl FamilyNames {
    /// A family named by its name, the coarse ids of its keys and the candidates it proposes.
    pub fn new(name: &str, coarse: BTreeSet<String>, members: BTreeSet<String>) -> Self {
        FamilyNames {
            name: name.to_string(),
            id16: family_id(name),
            coarse,
            members,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// True when a record of `candidate` (whose family the record names as `family`, if it
    /// does) is one of this family's.
    pub fn names(&self, candidate: &str, family: Option<&str>) -> bool {
        family == Some(self.name.as_str())
            || self.members.contains(candidate)
            || family_id_of_candidate(candidate) == Some(self.id16.as_str())
            || self.is_coarse(candidate)
    }

    /// A candidate part that is one of the coarse ids, or starts with one and `-`.
    fn is_coarse(&self, candidate: &str) -> bool {
        let head = candidate
            .split_once('-')
            .map_or(candidate, |(head, _)| head);
        self.coarse.contains(head)
    }
}

/// Why a family is left out: its fate and the reason, in one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Obstacle {
    pub fate: FamilyFate,
    pub reason: String,
}

impl Obstacle {
    fn new(fate: FamilyFate, reason: String) -> Self {
        Obstacle { fate, reason }
    }
}

/// Who holds what, read once from the ledger and klaud's pull requests and branches.
pub struct Taken<'a> {
    ledger: &'a Ledger,
    policy: &'a Policy,
    /// Candidates of klaud's open pull requests: (number, candidate).
    pull_requests: Vec<(u64, String)>,
    /// Candidates whose branch exists, with the branch.
    branches: Vec<(String, String)>,
    /// The family the ledger records for a candidate.
    family_of_candidate: BTreeMap<&'a str, &'a str>,
    cooldowns: Vec<RunningCooldown<'a>>,
}

impl<'a> Taken<'a> {
    /// `legacy_branch_prefixes`: earlier prefixes whose branches and pull requests still count.
    pub fn new(
        ledger: &'a Ledger,
        github: &GitHubFacts,
        policy: &'a Policy,
        legacy_branch_prefixes: &[String],
        now: DateTime<Utc>,
    ) -> Self {
        let prefixes: Vec<&str> = std::iter::once(policy.branch_prefix.as_str())
            .chain(legacy_branch_prefixes.iter().map(String::as_str))
            .collect();
        let candidate_of = |branch: &str| -> Option<String> {
            prefixes
                .iter()
                .find_map(|prefix| branch.strip_prefix(prefix))
                .filter(|id| !id.is_empty())
                .map(str::to_string)
        };
        let pull_requests = github
            .open_pull_requests
            .items
            .iter()
            .filter(|pull| own_head(pull, &github.repository))
            .filter_map(|pull| candidate_of(&pull.head_branch).map(|id| (pull.number, id)))
            .collect();
        let branches = github
            .candidate_branches
            .items
            .iter()
            .filter_map(|branch| candidate_of(branch).map(|id| (id, branch.clone())))
            .collect();
        let mut family_of_candidate = BTreeMap::new();
        for record in &ledger.aftercare {
            family_of_candidate.insert(record.candidate.as_str(), record.family.as_str());
        }
        for session in &ledger.sessions {
            family_of_candidate.insert(session.candidate.as_str(), session.family.as_str());
        }
        for claim in &ledger.claims {
            family_of_candidate.insert(claim.candidate.as_str(), claim.family.as_str());
        }
        Taken {
            ledger,
            policy,
            pull_requests,
            branches,
            family_of_candidate,
            cooldowns: running_cooldowns(ledger, policy, now),
        }
    }

    /// Why the family is left out, if it is, for the candidate `id` it would propose: the first
    /// that applies of occupied, claimed, cooling down and held.
    pub fn obstacle(&self, family: &FamilyNames, id: &str) -> Option<Obstacle> {
        self.occupant(family, id)
            .or_else(|| self.claim(family))
            .or_else(|| self.cooldown(family, id))
    }

    /// A live or parked session, an open klaud pull request, an existing branch; a pull request
    /// or branch of a candidate that waits in after-care only for that candidate (`id`).
    fn occupant(&self, family: &FamilyNames, id: &str) -> Option<Obstacle> {
        let recorded = |candidate: &str| self.family_of_candidate.get(candidate).copied();
        let holds = |candidate: &str| {
            family.names(candidate, recorded(candidate))
                && (candidate == id
                    || !waits_in_aftercare(self.ledger, candidate, &self.policy.aftercare))
        };
        if let Some(session) = self.ledger.sessions.iter().find(|session| {
            session.state != SessionState::Finished
                && family.names(&session.candidate, Some(&session.family))
        }) {
            let state = if session.state == SessionState::Parked {
                "parked"
            } else {
                "live"
            };
            return Some(Obstacle::new(
                FamilyFate::Occupied,
                format!(
                    "a {state} session of candidate {} (run {}) holds the family",
                    session.candidate, session.parent_run
                ),
            ));
        }
        if let Some((number, candidate)) = self
            .pull_requests
            .iter()
            .find(|(_, candidate)| holds(candidate))
        {
            return Some(Obstacle::new(
                FamilyFate::Occupied,
                format!("klaud pull request #{number} of candidate {candidate} is open"),
            ));
        }
        self.branches
            .iter()
            .find(|(candidate, _)| holds(candidate))
            .map(|(_, branch)| {
                Obstacle::new(
                    FamilyFate::Occupied,
                    format!("branch {branch} still exists"),
                )
            })
    }

    /// A ledger claim alone.
    fn claim(&self, family: &FamilyNames) -> Option<Obstacle> {
        self.ledger
            .claims
            .iter()
            .find(|claim| family.names(&claim.candidate, Some(&claim.family)))
            .map(|claim| {
                Obstacle::new(
                    FamilyFate::Claimed,
                    format!(
                        "the family is claimed for candidate {} by run {}",
                        claim.candidate, claim.parent_run
                    ),
                )
            })
    }

    /// The longest running cooldown of candidate `id`, else of the whole family.
    fn cooldown(&self, family: &FamilyNames, id: &str) -> Option<Obstacle> {
        let longest = |scope: CooldownScope| {
            self.cooldowns
                .iter()
                .filter(|cooldown| cooldown.scope == scope)
                .filter(|cooldown| match scope {
                    CooldownScope::Candidate => cooldown.session.candidate == id,
                    CooldownScope::Family => {
                        family.names(&cooldown.session.candidate, Some(&cooldown.session.family))
                    }
                })
                .max_by_key(|cooldown| cooldown.until)
        };
        let until =
            |cooldown: &RunningCooldown| cooldown.until.to_rfc3339_opts(SecondsFormat::Secs, true);
        if let Some(cooldown) = longest(CooldownScope::Candidate) {
            return Some(Obstacle::new(
                FamilyFate::CoolingDown,
                format!(
                    "`{}` of candidate {id} earns a cooldown until {}",
                    cooldown.outcome,
                    until(cooldown)
                ),
            ));
        }
        longest(CooldownScope::Family).map(|cooldown| {
            Obstacle::new(
                FamilyFate::Held,
                format!(
                    "`{}` of candidate {} holds the whole family until {}",
                    cooldown.outcome,
                    cooldown.session.candidate,
                    until(cooldown)
                ),
            )
        })
    }

    /// The policy the decision is made under (its branch prefix names the candidates' branches).
    pub fn policy(&self) -> &Policy {
        self.policy
    }
}

/// A pull request whose head is in this repository (a fork's is never klaud's).
fn own_head(pull: &OpenPullRequest, repository: &str) -> bool {
    pull.head_repository
        .as_deref()
        .is_some_and(|head| head.eq_ignore_ascii_case(repository))
}
