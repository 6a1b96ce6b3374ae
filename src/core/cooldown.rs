//! The cooldowns the ledger's finished sessions earn (contract §4), less those a maintainer
//! ended from the dashboard (contract §10): the one reading `select`'s obstacles, `status` and
//! the dashboard share.

use chrono::{DateTime, Utc};

use super::ledger::{Ledger, Session, SessionState};
use super::outcome::Outcome;
use super::policy::{Cooldown, Policy};

/// Whom a running cooldown holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CooldownScope {
    /// The candidate whose session earned it (`retry now` ends it).
    Candidate,
    /// Every candidate of the family (`release hold` ends it).
    Family,
}

impl CooldownScope {
    pub fn name(self) -> &'static str {
        match self {
            CooldownScope::Candidate => "candidate",
            CooldownScope::Family => "family",
        }
    }
}

/// A finished session's cooldown that has not ended.
#[derive(Debug, Clone, Copy)]
pub struct RunningCooldown<'a> {
    pub session: &'a Session,
    pub outcome: Outcome,
    pub finished_at: DateTime<Utc>,
    pub until: DateTime<Utc>,
    pub scope: CooldownScope,
    pub duration: chrono::Duration,
}

impl RunningCooldown<'_> {
    /// True when it holds back `candidate` of `family`.
    pub fn holds(&self, candidate: &str, family: &str) -> bool {
        match self.scope {
            CooldownScope::Candidate => self.session.candidate == candidate,
            CooldownScope::Family => {
                self.session.candidate == candidate || self.session.family == family
            }
        }
    }
}

/// Every cooldown running at `now`, in the ledger's order: the outcome's cooldown from the
/// policy, unless the dashboard ended it (`retry now` for a candidate's, `release hold` for a
/// family's) after the session finished.
pub fn running_cooldowns<'a>(
    ledger: &'a Ledger,
    policy: &Policy,
    now: DateTime<Utc>,
) -> Vec<RunningCooldown<'a>> {
    ledger
        .sessions
        .iter()
        .filter(|session| session.state == SessionState::Finished)
        .filter_map(|session| {
            let outcome = session.outcome?;
            let finished_at = session.finished_at.unwrap_or(session.started_at);
            let (duration, scope) = match policy.cooldown(outcome, session.agent_ran) {
                Cooldown::Candidate(duration) => (duration, CooldownScope::Candidate),
                Cooldown::Family(duration) => (duration, CooldownScope::Family),
                Cooldown::None | Cooldown::WhilePullRequestOpen => return None,
            };
            let ended = match scope {
                CooldownScope::Candidate => ledger
                    .steering
                    .cooldown_ended(&session.candidate, finished_at),
                CooldownScope::Family => {
                    ledger.steering.hold_released(&session.family, finished_at)
                }
            };
            let until = finished_at + duration;
            (until > now && !ended).then_some(RunningCooldown {
                session,
                outcome,
                finished_at,
                until,
                scope,
                duration,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;
    use crate::core::policy::tests::inferencex_policy;
    use crate::core::steering::{AcceptedRequest, Request};
    use crate::core::test_support::at;

    fn ledger() -> Ledger {
        let mut ledger = Ledger::empty();
        let finished = at("2026-12-01T08:00:00Z");
        for (candidate, family, outcome) in [
            ("c", "fc", Outcome::Failed),
            ("m", "fm", Outcome::ClosedByMaintainer),
        ] {
            ledger.claim_family(candidate, family, 9, finished).unwrap();
            ledger.finish_session(candidate, outcome, true, finished);
        }
        ledger
    }

    fn ask(ledger: &mut Ledger, request: Request) {
        ledger.steering.apply(
            &AcceptedRequest {
                request,
                by: "ann".into(),
                edited_at: at("2026-12-01T09:00:00Z"),
            },
            5,
            at("2026-12-01T09:01:00Z"),
        );
    }

    #[test]
    fn retry_now_ends_a_candidates_cooldown_and_release_hold_a_familys() {
        let now = at("2026-12-01T10:00:00Z");
        let policy = inferencex_policy();
        let mut ledger = ledger();
        let scopes = |ledger: &Ledger| {
            running_cooldowns(ledger, &policy, now)
                .iter()
                .map(|cooldown| (cooldown.session.candidate.clone(), cooldown.scope))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            scopes(&ledger),
            [
                ("c".to_string(), CooldownScope::Candidate),
                ("m".to_string(), CooldownScope::Family)
            ]
        );
        // `retry now` of the family-holding candidate leaves the family's hold running.
        ask(&mut ledger, Request::RetryNow("m".into()));
        assert_eq!(scopes(&ledger).len(), 2);
        ask(&mut ledger, Request::RetryNow("c".into()));
        ask(&mut ledger, Request::ReleaseHold("fm".into()));
        assert!(scopes(&ledger).is_empty());
        // An outcome after the request earns its cooldown again.
        let later = at("2026-12-01T09:30:00Z");
        ledger.claim_family("c", "fc", 10, later).unwrap();
        ledger.finish_session("c", Outcome::Failed, true, later);
        assert_eq!(
            scopes(&ledger),
            [("c".to_string(), CooldownScope::Candidate)]
        );
        assert!(running_cooldowns(&ledger, &policy, now + Duration::days(2)).is_empty());
    }
}
