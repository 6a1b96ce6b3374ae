//! What keeps one candidate from being selected, apart from the capacity gate: the review's
//! judgement, occupancy of its family, cooldowns earned by finished sessions, and its baseline
//! verification.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, SecondsFormat, Utc};

use super::baselines::{BaselineCode, BaselineVerdict, BaselineVerdicts};
use super::{Decision, Reason, SelectingRun, SelectionSnapshot, session_of_run};
use crate::core::aftercare::waits_in_aftercare;
use crate::core::candidate::Candidate;
use crate::core::cooldown::{CooldownScope, RunningCooldown, running_cooldowns};
use crate::core::ledger::{Ledger, SessionState};
use crate::core::policy::Policy;
use crate::core::review::{Review, ReviewVerdict};

/// One reason not to select a candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Obstacle {
    pub decision: Decision,
    pub reason: Reason,
    pub until: Option<DateTime<Utc>>,
}

impl Obstacle {
    pub fn new(decision: Decision, message: impl AsRef<str>) -> Self {
        Obstacle {
            decision,
            reason: Reason::new(decision, message),
            until: None,
        }
    }
}

/// The review's obstacle for each candidate it holds back ([`Review::held_back`]):
/// `review-duplicate` when the decision holding it back is a duplicate, else `review-uncertain`.
pub fn review_obstacles(review: &Review, candidates: &[Candidate]) -> BTreeMap<String, Obstacle> {
    review
        .held_back(candidates)
        .into_iter()
        .map(|(id, held)| {
            let code = match held.verdict {
                ReviewVerdict::Duplicate => Decision::ReviewDuplicate,
                _ => Decision::ReviewUncertain,
            };
            (id, Obstacle::new(code, held.message))
        })
        .collect()
}

/// Who holds which family: the ledger's claims and open sessions, klaud's own open pull
/// requests, and retained candidate branches. A pull request that waits in after-care with no
/// session of its own holds only its own candidate (contract §12), while `aftercare.supersede`
/// is on.
pub struct Occupancy<'a> {
    ledger: &'a Ledger,
    run: SelectingRun,
    branch_prefix: &'a str,
    /// klaud's open pull requests per family that hold it for every candidate: (number,
    /// candidate).
    pull_request_of_family: BTreeMap<String, (u64, String)>,
    /// klaud's open pull requests per candidate id.
    pull_request_of_candidate: BTreeMap<String, u64>,
    /// Candidate ids whose branch exists.
    retained_branches: BTreeSet<String>,
}

impl<'a> Occupancy<'a> {
    pub fn new(
        snapshot: SelectionSnapshot<'a>,
        candidates: &[Candidate],
        policy: &'a Policy,
        run: SelectingRun,
    ) -> Self {
        // A pull request names only its candidate; the family comes from the candidates file,
        // else from the ledger's records of that candidate (its after-care record outlives its
        // pruned sessions).
        let mut family_of_candidate: BTreeMap<&str, &str> = BTreeMap::new();
        for record in &snapshot.ledger.aftercare {
            family_of_candidate.insert(&record.candidate, &record.family);
        }
        for session in &snapshot.ledger.sessions {
            family_of_candidate.insert(&session.candidate, &session.family);
        }
        for claim in &snapshot.ledger.claims {
            family_of_candidate.insert(&claim.candidate, &claim.family);
        }
        for candidate in candidates {
            family_of_candidate.insert(&candidate.id, &candidate.family);
        }
        let mut pull_request_of_family = BTreeMap::new();
        let mut pull_request_of_candidate = BTreeMap::new();
        if let Some(pulls) = snapshot.github.open_pull_requests.whole() {
            let mut own: Vec<(u64, &str)> = pulls
                .iter()
                .filter_map(|pull| {
                    own_candidate_of(pull, &snapshot.github.repository, policy)
                        .map(|id| (pull.number, id))
                })
                .collect();
            own.sort_unstable();
            for (number, id) in own {
                pull_request_of_candidate
                    .entry(id.to_string())
                    .or_insert(number);
                if waits_in_aftercare(snapshot.ledger, id, &policy.aftercare) {
                    continue;
                }
                if let Some(family) = family_of_candidate.get(id) {
                    pull_request_of_family
                        .entry(family.to_string())
                        .or_insert((number, id.to_string()));
                }
            }
        }
        let retained_branches = match snapshot.github.candidate_branches.whole() {
            Some(branches) => branches
                .iter()
                .filter_map(|branch| policy.candidate_of_branch(branch))
                .map(str::to_string)
                .collect(),
            None => BTreeSet::new(),
        };
        Occupancy {
            ledger: snapshot.ledger,
            run,
            branch_prefix: &policy.branch_prefix,
            pull_request_of_family,
            pull_request_of_candidate,
            retained_branches,
        }
    }

    /// The first thing that occupies the candidate's family, if any. Its own claim by this run
    /// (an earlier attempt, or an earlier try of this one) is no obstacle.
    pub fn obstacle(
        &self,
        candidate: &Candidate,
        taken_in_this_pass: &BTreeMap<&str, &str>,
    ) -> Option<Obstacle> {
        let family = candidate.family.as_str();
        if let Some(other) = taken_in_this_pass.get(family) {
            return Some(Obstacle::new(
                Decision::Occupied,
                format!("candidate {other} of the same family is selected in this pass"),
            ));
        }
        if let Some(claim) = self.ledger.claims.iter().find(|claim| {
            claim.family == family
                && !(claim.candidate == candidate.id && claim.parent_run == self.run.run_id)
        }) {
            return Some(Obstacle::new(
                Decision::Occupied,
                format!(
                    "the family is claimed for candidate {} by run {}",
                    claim.candidate, claim.parent_run
                ),
            ));
        }
        if let Some(session) = self.ledger.sessions.iter().find(|session| {
            session.family == family
                && session.state != SessionState::Finished
                && !(session.candidate == candidate.id
                    && session.parent_run == self.run.run_id
                    && session.state == SessionState::Live)
        }) {
            let state = match session.state {
                SessionState::Parked => "parked",
                _ => "live",
            };
            return Some(Obstacle::new(
                Decision::Occupied,
                format!(
                    "a {state} session of candidate {} (run {}) holds the family",
                    session.candidate, session.parent_run
                ),
            ));
        }
        let open_pull_request = self
            .pull_request_of_family
            .get(family)
            .map(|(number, id)| (*number, id.as_str()))
            .or_else(|| {
                self.pull_request_of_candidate
                    .get(&candidate.id)
                    .map(|number| (*number, candidate.id.as_str()))
            });
        if let Some((number, id)) = open_pull_request {
            return Some(Obstacle::new(
                Decision::Occupied,
                format!("klaud pull request #{number} of candidate {id} is open"),
            ));
        }
        if self.retained_branches.contains(&candidate.id) {
            return Some(Obstacle::new(
                Decision::Occupied,
                format!("branch {}{} still exists", self.branch_prefix, candidate.id),
            ));
        }
        None
    }

    /// True when this run already claimed the candidate's family for it and its session is
    /// live: selecting it again repeats the claim and takes no new room under the cap.
    pub fn holds_claim(&self, candidate: &Candidate) -> bool {
        self.ledger.claims.iter().any(|claim| {
            claim.family == candidate.family
                && claim.candidate == candidate.id
                && claim.parent_run == self.run.run_id
        }) && session_of_run(self.ledger, &candidate.id, self.run)
    }
}

/// The candidate id of a pull request that is klaud's: its head is a candidate branch of this
/// repository. Pull requests from forks or on other branches are other people's and never block.
pub fn own_candidate_of<'p>(
    pull: &'p super::OpenPullRequest,
    repository: &str,
    policy: &Policy,
) -> Option<&'p str> {
    policy.candidate_of_pull_request(
        pull.head_repository.as_deref(),
        &pull.head_branch,
        repository,
    )
}

/// The longest cooldown still running for the candidate: its own sessions' outcomes, and
/// family-wide cooldowns (`closed-by-maintainer`) of any session of its family, less those the
/// dashboard ended ([`running_cooldowns`]).
pub fn cooldown_obstacle(
    ledger: &Ledger,
    candidate: &Candidate,
    policy: &Policy,
    now: DateTime<Utc>,
) -> Option<Obstacle> {
    let longest = running_cooldowns(ledger, policy, now)
        .into_iter()
        .filter(|cooldown| cooldown.holds(&candidate.id, &candidate.family))
        .fold(
            None::<RunningCooldown<'_>>,
            |longest, cooldown| match longest {
                Some(known) if known.until >= cooldown.until => Some(known),
                _ => Some(cooldown),
            },
        )?;
    let session = longest.session;
    let message = match longest.scope {
        CooldownScope::Candidate => format!(
            "`{}` of run {} finished {} and earns {}",
            longest.outcome,
            session.parent_run,
            rfc3339(longest.finished_at),
            days(longest.duration)
        ),
        CooldownScope::Family => format!(
            "`{}` of candidate {} finished {} and holds the whole family for {}",
            longest.outcome,
            session.candidate,
            rfc3339(longest.finished_at),
            days(longest.duration)
        ),
    };
    Some(Obstacle {
        decision: Decision::CoolingDown,
        reason: Reason::new(
            Decision::CoolingDown,
            format!("{message}: cooling down until {}", rfc3339(longest.until)),
        ),
        until: Some(longest.until),
    })
}

/// A candidate whose baseline was not verified, when `baselines.json` was given.
pub fn baseline_obstacle(
    baselines: Option<&BaselineVerdicts>,
    candidate: &Candidate,
) -> Option<Obstacle> {
    let reason = match baselines?.verdict(&candidate.id) {
        Some(BaselineVerdict::Verified | BaselineVerdict::NotNeeded) => return None,
        Some(BaselineVerdict::Deferred(reason)) => reason.clone(),
        None => Reason::new(
            BaselineCode::NotVerified,
            "baselines.json has no record of this candidate",
        ),
    };
    Some(Obstacle {
        decision: Decision::BaselineDeferred,
        reason,
        until: None,
    })
}

fn rfc3339(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// `7 days`, `1 day`, `0.5 days`.
fn days(duration: Duration) -> String {
    let days = duration.num_seconds() as f64 / 86_400.0;
    if days == 1.0 {
        "1 day".to_string()
    } else if days.fract() == 0.0 {
        format!("{days:.0} days")
    } else {
        let text = format!("{days:.3}");
        format!("{} days", text.trim_end_matches('0').trim_end_matches('.'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_days() {
        assert_eq!(days(Duration::days(7)), "7 days");
        assert_eq!(days(Duration::days(1)), "1 day");
        assert_eq!(days(Duration::hours(12)), "0.5 days");
        assert_eq!(days(Duration::hours(8)), "0.333 days");
    }
}
