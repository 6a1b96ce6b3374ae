//! What maintainers asked of klaud through the dashboard (contract §10), as the ledger keeps it:
//! the pause switch, cooldowns and family holds ended early, parked sessions put first in line,
//! and the audit of every request acted on (naming the account) or ignored (naming it too).
//!
//! The dashboard's checkboxes are read and attributed in [`super::dashboard`]; this module owns
//! what an accepted request changes and how the other decisions ask about it (`select`'s cooldowns
//! and pause, `recover`'s resumes; a *retry after-care* grant is the after-care record's,
//! applied with the audit entry by the dashboard's `SteeringChanges`). Every operation is pure and idempotent: applying a request a
//! second time (a pass that lost a race re-deciding, or two passes seeing the same tick) changes
//! nothing, because the audit remembers the edit that asked for it.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How many acted-on requests the audit keeps (older ones stay in the state branch's history).
pub const AUDIT_KEPT: usize = 50;
/// How many ignored ticks the ledger keeps to name on the dashboard.
pub const IGNORED_KEPT: usize = 10;

/// One checkbox of the dashboard, by what it asks.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Request {
    /// End the candidate's cooldown now.
    RetryNow(String),
    /// Put the candidate's parked session first in line for the next resume.
    ResumeNow(String),
    /// End the family's hold (a family-wide cooldown such as `closed-by-maintainer`'s).
    ReleaseHold(String),
    /// Grant the after-care pull request that waits for a maintainer one more session
    /// (*retry after-care*): it is watched again.
    RetryAftercare(u64),
    /// Start no session and resume none while it stays ticked.
    Pause,
    /// The pause box unticked: klaud goes on.
    Unpause,
}

impl std::fmt::Display for Request {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Request::RetryNow(candidate) => write!(formatter, "retry {candidate} now"),
            Request::ResumeNow(candidate) => write!(formatter, "resume {candidate} now"),
            Request::ReleaseHold(family) => write!(formatter, "release the hold on {family}"),
            Request::RetryAftercare(number) => write!(formatter, "retry after-care of #{number}"),
            Request::Pause => formatter.write_str("pause"),
            Request::Unpause => formatter.write_str("unpause"),
        }
    }
}

/// Who asked, and when klaud acted on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Mark {
    /// The account whose edit ticked the box.
    pub by: String,
    /// When klaud acted on it.
    pub at: DateTime<Utc>,
}

/// One request klaud acted on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AuditEntry {
    pub request: Request,
    pub by: String,
    /// The time of the issue edit that ticked the box: with the request, what makes a second
    /// reading of the same tick act once.
    pub edited_at: DateTime<Utc>,
    pub acted_at: DateTime<Utc>,
    /// The run that acted on it.
    pub run: u64,
}

/// A tick by an account that may not steer klaud: cleared by the rewrite, its account named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct IgnoredTick {
    pub request: Request,
    /// The account, or `ghost` for a deleted one.
    pub by: String,
    pub edited_at: DateTime<Utc>,
    /// The account's permission on the repository, as GitHub named it.
    pub permission: String,
}

/// The ledger's `steering` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Steering {
    /// Set while the pause box is ticked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<Mark>,
    /// Candidates whose cooldowns were ended: outcomes finished before the mark earn none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cooldowns_ended: BTreeMap<String, Mark>,
    /// Families whose holds were released: family-wide cooldowns of outcomes finished before
    /// the mark hold nothing.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub holds_released: BTreeMap<String, Mark>,
    /// Parked sessions to resume before the others, by candidate.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resume_first: BTreeMap<String, Mark>,
    /// Requests acted on, oldest first, the last [`AUDIT_KEPT`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audit: Vec<AuditEntry>,
    /// Ticks of accounts that may not steer, oldest first, the last [`IGNORED_KEPT`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored: Vec<IgnoredTick>,
}

impl Steering {
    pub fn is_default(&self) -> bool {
        *self == Steering::default()
    }

    /// True when the pause switch is on.
    pub fn is_paused(&self) -> bool {
        self.paused.is_some()
    }

    /// True when a cooldown `candidate` earned at `finished_at` was ended by a request.
    pub fn cooldown_ended(&self, candidate: &str, finished_at: DateTime<Utc>) -> bool {
        self.cooldowns_ended
            .get(candidate)
            .is_some_and(|mark| finished_at <= mark.at)
    }

    /// True when a hold of `family` earned at `finished_at` was released by a request.
    pub fn hold_released(&self, family: &str, finished_at: DateTime<Utc>) -> bool {
        self.holds_released
            .get(family)
            .is_some_and(|mark| finished_at <= mark.at)
    }

    /// True when this exact tick (request and edit) was already acted on.
    pub fn already_acted(&self, request: &Request, edited_at: DateTime<Utc>) -> bool {
        self.audit
            .iter()
            .any(|entry| entry.request == *request && entry.edited_at == edited_at)
    }

    /// Applies one accepted request; `false` when the same tick was acted on before (nothing
    /// changes then).
    pub fn apply(&mut self, accepted: &AcceptedRequest, run: u64, now: DateTime<Utc>) -> bool {
        if self.already_acted(&accepted.request, accepted.edited_at) {
            return false;
        }
        let mark = Mark {
            by: accepted.by.clone(),
            at: now,
        };
        match &accepted.request {
            Request::RetryNow(candidate) => {
                self.cooldowns_ended.insert(candidate.clone(), mark);
            }
            Request::ResumeNow(candidate) => {
                self.resume_first.insert(candidate.clone(), mark);
            }
            Request::ReleaseHold(family) => {
                self.holds_released.insert(family.clone(), mark);
            }
            // The grant is the after-care record's (`Ledger::grant_aftercare_session`); the
            // audit entry below is what makes it once per tick.
            Request::RetryAftercare(_) => {}
            Request::Pause => self.paused = Some(mark),
            Request::Unpause => self.paused = None,
        }
        self.audit.push(AuditEntry {
            request: accepted.request.clone(),
            by: accepted.by.clone(),
            edited_at: accepted.edited_at,
            acted_at: now,
            run,
        });
        let excess = self.audit.len().saturating_sub(AUDIT_KEPT);
        self.audit.drain(..excess);
        true
    }

    /// Remembers a tick that was not acted on; `false` when it is already remembered.
    pub fn remember_ignored(&mut self, ignored: IgnoredTick) -> bool {
        if self.ignored.contains(&ignored) {
            return false;
        }
        self.ignored.push(ignored);
        let excess = self.ignored.len().saturating_sub(IGNORED_KEPT);
        self.ignored.drain(..excess);
        true
    }

    /// The candidates of `parked`, those a request put first (in the order asked) before the
    /// others (in their given order).
    pub fn resume_order<'a>(&self, parked: &[&'a str]) -> Vec<&'a str> {
        let mut first: Vec<(&DateTime<Utc>, &'a str)> = parked
            .iter()
            .filter_map(|candidate| {
                self.resume_first
                    .get(*candidate)
                    .map(|mark| (&mark.at, *candidate))
            })
            .collect();
        first.sort();
        let mut order: Vec<&'a str> = first.into_iter().map(|(_, candidate)| candidate).collect();
        order.extend(
            parked
                .iter()
                .filter(|candidate| !self.resume_first.contains_key(**candidate)),
        );
        order
    }

    /// Drops what no longer matters: a resume-first mark of a candidate that is not parked any
    /// more, marks and ignored ticks older than `keep_for` (the longest cooldown: an outcome
    /// older than it earns nothing to end).
    pub fn prune(&mut self, parked: &[&str], now: DateTime<Utc>, keep_for: Duration) {
        let horizon = now - keep_for;
        self.resume_first
            .retain(|candidate, _| parked.contains(&candidate.as_str()));
        self.cooldowns_ended.retain(|_, mark| mark.at >= horizon);
        self.holds_released.retain(|_, mark| mark.at >= horizon);
        self.ignored.retain(|tick| tick.edited_at >= horizon);
    }
}

/// A tick klaud acts on: the request, the account with write, maintain or admin permission
/// whose edit made it, and that edit's time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct AcceptedRequest {
    pub request: Request,
    pub by: String,
    pub edited_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::test_support::at;

    fn accepted(request: Request, edited_at: &str) -> AcceptedRequest {
        AcceptedRequest {
            request,
            by: "ann".into(),
            edited_at: at(edited_at),
        }
    }

    #[test]
    fn a_tick_acts_once_however_often_it_is_read() {
        let mut steering = Steering::default();
        let tick = accepted(Request::RetryNow("c".into()), "2026-12-01T10:00:00Z");
        assert!(steering.apply(&tick, 7, at("2026-12-01T10:05:00Z")));
        assert!(!steering.apply(&tick, 8, at("2026-12-01T10:10:00Z")));
        assert_eq!(steering.audit.len(), 1);
        assert_eq!(steering.cooldowns_ended["c"].at, at("2026-12-01T10:05:00Z"));
        // A later tick of the same box is a new request.
        let again = accepted(Request::RetryNow("c".into()), "2026-12-02T10:00:00Z");
        assert!(steering.apply(&again, 9, at("2026-12-02T10:01:00Z")));
        assert_eq!(steering.audit.len(), 2);
    }

    #[test]
    fn an_ended_cooldown_covers_outcomes_before_the_request_only() {
        let mut steering = Steering::default();
        steering.apply(
            &accepted(Request::RetryNow("c".into()), "2026-12-01T10:00:00Z"),
            7,
            at("2026-12-01T10:05:00Z"),
        );
        assert!(steering.cooldown_ended("c", at("2026-12-01T09:00:00Z")));
        assert!(!steering.cooldown_ended("c", at("2026-12-01T11:00:00Z")));
        assert!(!steering.cooldown_ended("d", at("2026-12-01T09:00:00Z")));
        steering.apply(
            &accepted(Request::ReleaseHold("f".into()), "2026-12-01T10:00:00Z"),
            7,
            at("2026-12-01T10:05:00Z"),
        );
        assert!(steering.hold_released("f", at("2026-12-01T09:00:00Z")));
        assert!(!steering.hold_released("f", at("2026-12-01T10:06:00Z")));
    }

    #[test]
    fn pause_and_unpause_switch() {
        let mut steering = Steering::default();
        steering.apply(
            &accepted(Request::Pause, "2026-12-01T10:00:00Z"),
            7,
            at("2026-12-01T10:05:00Z"),
        );
        assert!(steering.is_paused());
        steering.apply(
            &accepted(Request::Unpause, "2026-12-01T11:00:00Z"),
            8,
            at("2026-12-01T11:05:00Z"),
        );
        assert!(!steering.is_paused());
    }

    #[test]
    fn resume_first_candidates_lead_in_the_order_asked() {
        let mut steering = Steering::default();
        for (candidate, time) in [("z", "2026-12-01T10:00:00Z"), ("b", "2026-12-01T11:00:00Z")] {
            steering.apply(
                &accepted(Request::ResumeNow(candidate.into()), time),
                7,
                at(time),
            );
        }
        assert_eq!(
            steering.resume_order(&["a", "b", "c", "z"]),
            ["z", "b", "a", "c"]
        );
        steering.prune(&["a", "z"], at("2026-12-01T12:00:00Z"), Duration::days(7));
        assert!(!steering.resume_first.contains_key("b"));
        assert!(steering.resume_first.contains_key("z"));
    }

    #[test]
    fn the_audit_and_the_ignored_ticks_stay_bounded() {
        let mut steering = Steering::default();
        let start = at("2026-12-01T00:00:00Z");
        for minute in 0..(AUDIT_KEPT as i64 + 5) {
            let time = start + Duration::minutes(minute);
            steering.apply(
                &AcceptedRequest {
                    request: Request::RetryNow("c".into()),
                    by: "ann".into(),
                    edited_at: time,
                },
                1,
                time,
            );
            steering.remember_ignored(IgnoredTick {
                request: Request::Pause,
                by: "rob".into(),
                edited_at: time,
                permission: "read".into(),
            });
        }
        assert_eq!(steering.audit.len(), AUDIT_KEPT);
        assert_eq!(steering.ignored.len(), IGNORED_KEPT);
        assert_eq!(steering.audit[0].edited_at, start + Duration::minutes(5));
    }

    #[test]
    fn requests_serialize_in_kebab_case() {
        assert_eq!(
            serde_json::to_string(&Request::RetryNow("c".into())).unwrap(),
            r#"{"retry-now":"c"}"#
        );
        assert_eq!(
            serde_json::to_string(&Request::Pause).unwrap(),
            r#""pause""#
        );
    }
}
