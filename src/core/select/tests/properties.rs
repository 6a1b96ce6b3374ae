//! Properties of the selection on generated worlds: whatever the ledger, the open pull requests,
//! the branches, the review and the cap, a pass never starts more sessions than the cap leaves
//! room for, never selects a candidate whose family is occupied or cooling down, and never
//! selects two candidates of one family. Each property is checked against the facts of the
//! world directly, not through the decision's own helpers.

use proptest::collection::vec;
use proptest::prelude::*;

use super::*;
use crate::core::policy::Cooldown;

const FAMILIES: [&str; 4] = ["mi355x", "b200", "h100", "gb200"];
/// Candidate ids are `c0`…`c9`; the candidates file names some of them, the facts any of them.
const IDS: usize = 10;
const OTHER_RUN: u64 = 7;

fn id(index: usize) -> String {
    format!("c{index}")
}

/// One fact of the world, about candidate `c<candidate>` (whose family is fixed per world).
#[derive(Debug, Clone)]
enum Fact {
    /// A claim with its live session, by this selecting run or another one.
    Claim {
        candidate: usize,
        ours: bool,
    },
    Parked {
        candidate: usize,
    },
    Finished {
        candidate: usize,
        outcome: usize,
        hours_ago: i64,
        agent_ran: bool,
    },
    /// An open pull request from `klaud/auto-c<candidate>`, in this repository or a fork.
    PullRequest {
        candidate: usize,
        number: u64,
        from_fork: bool,
    },
    /// An open pull request that is not klaud's (another branch).
    OtherPullRequest {
        number: u64,
    },
    Branch {
        candidate: usize,
    },
}

fn fact() -> impl Strategy<Value = Fact> {
    let candidate = 0..IDS;
    // Finished sessions are the most common fact, mostly recent and mostly with an agent that
    // ran, so that cooldowns (a month at most) are often still running.
    prop_oneof![
        2 => (candidate.clone(), any::<bool>())
            .prop_map(|(candidate, ours)| Fact::Claim { candidate, ours }),
        1 => candidate
            .clone()
            .prop_map(|candidate| Fact::Parked { candidate }),
        4 => (
            candidate.clone(),
            0..Outcome::ALL.len(),
            0i64..1_000,
            proptest::bool::weighted(0.85)
        )
            .prop_map(
                |(candidate, outcome, hours_ago, agent_ran)| Fact::Finished {
                    candidate,
                    outcome,
                    hours_ago,
                    agent_ran,
                }
            ),
        2 => (candidate.clone(), 1u64..500, any::<bool>()).prop_map(|(candidate, number, from_fork)| {
            Fact::PullRequest {
                candidate,
                number,
                from_fork,
            }
        }),
        1 => (1u64..500).prop_map(|number| Fact::OtherPullRequest { number }),
        1 => candidate.prop_map(|candidate| Fact::Branch { candidate }),
    ]
}

/// What the generated world is made of; `build` turns it into a [`World`].
#[derive(Debug, Clone)]
struct Recipe {
    /// The family of each candidate id.
    families: Vec<usize>,
    /// Candidate ids in the candidates file, in order (duplicates dropped).
    listed: Vec<usize>,
    facts: Vec<Fact>,
    /// A verdict per listed candidate (0 proceed, 1 uncertain, 2 duplicate), or no review.
    review: Option<Vec<u8>>,
    max_candidates: u32,
    capacity_unavailable: bool,
    incomplete_listing: bool,
}

fn recipe() -> impl Strategy<Value = Recipe> {
    (
        vec(0..FAMILIES.len(), IDS),
        vec(0..IDS, 0..8),
        vec(fact(), 0..12),
        proptest::option::of(vec(0u8..3, IDS)),
        0u32..6,
        proptest::bool::weighted(0.1),
        proptest::bool::weighted(0.1),
    )
        .prop_map(
            |(
                families,
                mut listed,
                facts,
                review,
                max_candidates,
                capacity_unavailable,
                incomplete_listing,
            )| {
                let mut seen = BTreeSet::new();
                listed.retain(|index| seen.insert(*index));
                Recipe {
                    families,
                    listed,
                    facts,
                    review,
                    max_candidates,
                    capacity_unavailable,
                    incomplete_listing,
                }
            },
        )
}

impl Recipe {
    fn family(&self, candidate: usize) -> &'static str {
        FAMILIES[self.families[candidate]]
    }

    fn build(&self) -> World {
        let listed: Vec<(String, &str)> = self
            .listed
            .iter()
            .map(|&index| (id(index), self.family(index)))
            .collect();
        let pairs: Vec<(&str, &str)> = listed.iter().map(|(id, f)| (id.as_str(), *f)).collect();
        let mut world = World::with_candidates(&pairs).max_candidates(self.max_candidates);
        for fact in &self.facts {
            world = self.with_fact(world, fact);
        }
        if let Some(review) = self.review() {
            world = world.review(review);
        }
        if self.capacity_unavailable {
            world.capacity = CapacityGate::Unavailable {
                message: "the capacity command timed out".into(),
            };
        }
        if self.incomplete_listing {
            world.github.candidate_branches = Listed::failed("branches: HTTP 502");
        }
        world
    }

    /// `world` with one more fact.
    fn with_fact(&self, mut world: World, fact: &Fact) -> World {
        match *fact {
            Fact::Claim { candidate, ours } => {
                let run = if ours { RUN.run_id } else { OTHER_RUN };
                // A claim the ledger refuses (the family is taken) is simply not there.
                let _ = world.ledger.claim_family(
                    &id(candidate),
                    self.family(candidate),
                    run,
                    now() - Duration::hours(1),
                );
                world
            }
            Fact::Parked { candidate } => world.parked(&id(candidate), self.family(candidate)),
            Fact::Finished {
                candidate,
                outcome,
                hours_ago,
                agent_ran,
            } => {
                let outcome = Outcome::ALL[outcome].name();
                let world =
                    world.finished(&id(candidate), self.family(candidate), outcome, hours_ago);
                if agent_ran {
                    world
                } else {
                    world.agent_never_ran()
                }
            }
            Fact::PullRequest {
                candidate,
                number,
                from_fork,
            } => {
                let repository = if from_fork {
                    "fork/bench"
                } else {
                    "Acme/Bench"
                };
                world.open_pull_request(
                    number,
                    &format!("klaud/auto-{}", id(candidate)),
                    repository,
                )
            }
            Fact::OtherPullRequest { number } => {
                world.open_pull_request(number, "feature/faster-kernels", "acme/bench")
            }
            Fact::Branch { candidate } => world.branch(&format!("klaud/auto-{}", id(candidate))),
        }
    }

    /// The review's JSON: one decision per listed candidate, when the world has a review.
    fn review(&self) -> Option<serde_json::Value> {
        let verdicts = self.review.as_ref()?;
        let decisions: Vec<serde_json::Value> = self
            .listed
            .iter()
            .map(|&index| match verdicts[index] {
                0 => serde_json::json!({"candidate-id": id(index), "decision": "proceed",
                    "family": self.family(index)}),
                1 => serde_json::json!({"candidate-id": id(index), "decision": "uncertain"}),
                _ => serde_json::json!({"candidate-id": id(index), "decision": "duplicate",
                    "pull-requests": [7]}),
            })
            .collect();
        Some(serde_json::json!({ "decisions": decisions }))
    }
}

/// Sessions live in `ledger`, counted from the sessions themselves.
fn live_count(ledger: &Ledger) -> usize {
    ledger
        .sessions
        .iter()
        .filter(|session| session.state == SessionState::Live)
        .count()
}

/// This run already holds the candidate's claim and its live session (a repeated pass).
fn already_ours(ledger: &Ledger, candidate: &CandidateDecision) -> bool {
    ledger.claims.iter().any(|claim| {
        claim.candidate == candidate.id
            && claim.family == candidate.family
            && claim.parent_run == RUN.run_id
    }) && ledger.sessions.iter().any(|session| {
        session.candidate == candidate.id
            && session.parent_run == RUN.run_id
            && session.state == SessionState::Live
    })
}

/// Why `selected` should not have been selected in `world`, if it should not.
fn occupied_or_cooling(
    world: &World,
    recipe: &Recipe,
    selected: &CandidateDecision,
) -> Option<String> {
    let family = selected.family.as_str();
    let ledger = &world.ledger;
    if let Some(claim) = ledger.claims.iter().find(|claim| {
        claim.family == family
            && !(claim.candidate == selected.id && claim.parent_run == RUN.run_id)
    }) {
        return Some(format!("{family} is claimed by {claim:?}"));
    }
    if let Some(session) = ledger.sessions.iter().find(|session| {
        session.family == family
            && session.state != SessionState::Finished
            && !(session.candidate == selected.id
                && session.parent_run == RUN.run_id
                && session.state == SessionState::Live)
    }) {
        return Some(format!("{family} has an open session {session:?}"));
    }
    let Some(pulls) = world.github.open_pull_requests.whole() else {
        return Some("selected although the pull requests were not all listed".into());
    };
    for pull in pulls {
        let Some(owner) = pull.head_branch.strip_prefix("klaud/auto-c") else {
            continue;
        };
        let owner: usize = owner.parse().expect("generated ids are c<number>");
        let ours = pull
            .head_repository
            .as_deref()
            .is_some_and(|repository| repository.eq_ignore_ascii_case("acme/bench"));
        // A pull request names only its candidate: its family is known from the candidates
        // file or the ledger's record of that candidate.
        let known = recipe.listed.contains(&owner)
            || ledger
                .claims
                .iter()
                .any(|claim| claim.candidate == id(owner))
            || ledger
                .sessions
                .iter()
                .any(|session| session.candidate == id(owner));
        if ours && (id(owner) == selected.id || (known && recipe.family(owner) == family)) {
            return Some(format!(
                "klaud pull request #{} holds {family}",
                pull.number
            ));
        }
    }
    let Some(branches) = world.github.candidate_branches.whole() else {
        return Some("selected although the branches were not all listed".into());
    };
    if branches.contains(&format!("klaud/auto-{}", selected.id)) {
        return Some(format!("branch of {} is retained", selected.id));
    }
    for session in &ledger.sessions {
        let (SessionState::Finished, Some(outcome)) = (session.state, session.outcome) else {
            continue;
        };
        let finished = session.finished_at.unwrap_or(session.started_at);
        let own = session.candidate == selected.id;
        let until = match world.policy.cooldown(outcome, session.agent_ran) {
            Cooldown::Candidate(duration) if own => finished + duration,
            Cooldown::Family(duration) if own || session.family == family => finished + duration,
            _ => continue,
        };
        if until > now() {
            return Some(format!(
                "{outcome} of {} cools until {until}",
                session.candidate
            ));
        }
    }
    None
}

proptest! {
    // The layout has no place for a regressions directory: a failure prints its shrunk case,
    // which becomes a unit test.
    #![proptest_config(ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]
    #[test]
    fn the_selection_respects_the_cap_occupancy_cooldowns_and_families(recipe in recipe()) {
        let world = recipe.build();
        let decision = world.claims(&[]);
        let plan = &decision.plan;

        // Every candidate exactly once, in the order of the candidates file.
        let ids: Vec<&str> = plan.decisions.iter().map(|d| d.id.as_str()).collect();
        let listed: Vec<String> = recipe.listed.iter().map(|&index| id(index)).collect();
        prop_assert_eq!(ids, listed.iter().map(String::as_str).collect::<Vec<_>>());

        let live_before = live_count(&world.ledger);
        let room = (recipe.max_candidates as usize).saturating_sub(live_before);
        let selected: Vec<&CandidateDecision> = plan.selected().collect();
        let new = selected
            .iter()
            .filter(|candidate| !already_ours(&world.ledger, candidate))
            .count();
        prop_assert!(new <= room, "{new} new sessions with room for {room}: {plan:#?}");

        let after = decision.ledger.as_ref().unwrap_or(&world.ledger);
        prop_assert!(
            live_count(after) <= live_before.max(recipe.max_candidates as usize),
            "{} live sessions after the pass, cap {}, {live_before} before",
            live_count(after),
            recipe.max_candidates
        );

        let mut families = BTreeSet::new();
        for candidate in &selected {
            prop_assert!(
                families.insert(candidate.family.as_str()),
                "two candidates of {} selected",
                candidate.family
            );
            if let Some(why) = occupied_or_cooling(&world, &recipe, candidate) {
                prop_assert!(false, "{} selected although {why}", candidate.id);
            }
        }
        if plan.deferred_reason.is_some() {
            prop_assert!(selected.is_empty(), "a deferred selection selected {selected:?}");
        }

        // The ledger written holds one claim per family at most.
        let mut claimed = BTreeSet::new();
        for claim in &after.claims {
            prop_assert!(claimed.insert(claim.family.as_str()), "{} claimed twice", claim.family);
        }
    }
}
