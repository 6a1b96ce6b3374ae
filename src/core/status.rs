//! `status` (contract §3.7, §10): the ledger and the live sessions as one plain report, built
//! from the ledger as read and klaud's open pull requests, at a given "now", with what the agent
//! runs cost over the last 7 days. Read-only: nothing here
//! changes the ledger, and nothing here is read back by another mode.
//!
//! The report is what `status.json` holds; the shell renders it as Markdown for the step summary
//! or as text for a terminal.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use super::aftercare::attach_aftercare;
use super::cooldown::running_cooldowns;
use super::cost::{CostReport, cost_report};
use super::health::{HealthFacts, HealthReport, health_report};
use super::ledger::{Ledger, SessionState};
use super::policy::Policy;
use super::snapshot::Listed;

/// One of klaud's open pull requests (head `<branch-prefix><id>` in this repository).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct KlaudPullRequest {
    pub number: u64,
    pub candidate: String,
    pub draft: bool,
    pub labels: Vec<String>,
}

/// `status.json`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct StatusReport {
    pub generated_at: DateTime<Utc>,
    pub repository: String,
    pub state_branch: String,
    /// False when the state branch holds no ledger yet (an empty ledger is shown).
    pub ledger_found: bool,
    pub max_candidates: u32,
    /// Sessions counting against the cap.
    pub live_sessions: usize,
    pub parked_sessions: usize,
    /// Sessions a wave may still start: `max-candidates` minus live sessions.
    pub room: u32,
    pub recovery_lease: Option<LeaseView>,
    /// Live and parked sessions, oldest first.
    pub sessions: Vec<SessionView>,
    pub claims: Vec<ClaimView>,
    /// Cooldowns still running, the one ending last first.
    pub cooldowns: Vec<CooldownView>,
    /// klaud's open pull requests that no live or parked session owns (recovery examines them).
    pub pull_requests_without_session: Vec<KlaudPullRequest>,
    /// Why the open pull requests are unknown, when they are.
    pub pull_requests_unknown: Option<String>,
    /// What the agent runs cost over the last 7 days, and the sessions per outcome.
    pub cost: CostReport,
    /// The health of klaud's open pull requests: `almost-ready`, `pull-requests`, `pools`
    /// (contract §12).
    #[serde(flatten)]
    pub health: HealthReport,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct LeaseView {
    pub owner_run: u64,
    pub taken_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct SessionView {
    pub candidate: String,
    pub family: String,
    /// `live` or `parked`.
    pub state: String,
    pub parent_run: u64,
    pub parent_attempt: Option<u32>,
    pub started_at: DateTime<Utc>,
    /// The session's open pull request: from the listing, else as the ledger recorded it.
    pub pull_request: Option<u64>,
    pub pull_request_draft: Option<bool>,
    /// An outcome reported before the parent ended, applied when the session is reconciled.
    pub pending_outcome: Option<String>,
    /// Jobs that ran the session so far.
    pub attempts: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct ClaimView {
    pub family: String,
    pub candidate: String,
    pub parent_run: u64,
    pub claimed_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct CooldownView {
    pub candidate: String,
    pub family: String,
    pub outcome: String,
    pub finished_at: DateTime<Utc>,
    pub until: DateTime<Utc>,
    /// `candidate`, or `family` when the outcome holds every candidate of the family.
    pub holds: String,
}

/// Everything the report is built from.
#[derive(Debug, Clone, Copy)]
pub struct StatusFacts<'a> {
    pub ledger: &'a Ledger,
    pub ledger_found: bool,
    /// klaud's open pull requests; when not all were listed, none is shown and the gap is said.
    pub pull_requests: &'a Listed<KlaudPullRequest>,
    pub repository: &'a str,
    /// klaud's open pull requests with their checks, and the jobs of their sweep runs.
    pub health: HealthFacts<'a>,
}

pub fn status_report(facts: StatusFacts<'_>, policy: &Policy, now: DateTime<Utc>) -> StatusReport {
    let ledger = facts.ledger;
    let listed: &[KlaudPullRequest] = facts.pull_requests.whole().unwrap_or_default();
    let pull_of_candidate: BTreeMap<&str, &KlaudPullRequest> = listed
        .iter()
        .map(|pull| (pull.candidate.as_str(), pull))
        .collect();
    let mut sessions: Vec<SessionView> = ledger
        .sessions
        .iter()
        .filter(|session| session.state != SessionState::Finished)
        .map(|session| {
            let listed = pull_of_candidate.get(session.candidate.as_str());
            SessionView {
                candidate: session.candidate.clone(),
                family: session.family.clone(),
                state: match session.state {
                    SessionState::Parked => "parked",
                    _ => "live",
                }
                .to_string(),
                parent_run: session.parent_run,
                parent_attempt: session.parent_attempt,
                started_at: session.started_at,
                pull_request: listed.map(|pull| pull.number).or(session.pull_request),
                pull_request_draft: listed.map(|pull| pull.draft),
                pending_outcome: session.pending_outcome.map(|outcome| outcome.to_string()),
                attempts: session.attempts.len(),
            }
        })
        .collect();
    sessions.sort_by_key(|session| session.started_at);
    let live_sessions = sessions.iter().filter(|s| s.state == "live").count();
    let parked_sessions = sessions.len() - live_sessions;
    let with_session: Vec<&str> = sessions.iter().map(|s| s.candidate.as_str()).collect();
    StatusReport {
        generated_at: now,
        repository: facts.repository.to_string(),
        state_branch: policy.state_branch.clone(),
        ledger_found: facts.ledger_found,
        max_candidates: policy.max_candidates,
        live_sessions,
        parked_sessions,
        room: policy
            .max_candidates
            .saturating_sub(u32::try_from(live_sessions).unwrap_or(u32::MAX)),
        recovery_lease: ledger.recovery_lease.as_ref().map(|lease| LeaseView {
            owner_run: lease.owner_run,
            taken_at: lease.taken_at,
        }),
        claims: ledger
            .claims
            .iter()
            .map(|claim| ClaimView {
                family: claim.family.clone(),
                candidate: claim.candidate.clone(),
                parent_run: claim.parent_run,
                claimed_at: claim.claimed_at,
            })
            .collect(),
        cooldowns: running_cooldown_views(ledger, policy, now),
        pull_requests_without_session: listed
            .iter()
            .filter(|pull| !with_session.contains(&pull.candidate.as_str()))
            .cloned()
            .collect(),
        pull_requests_unknown: facts.pull_requests.gap.clone(),
        cost: cost_report(ledger, policy, now),
        health: {
            let mut health = health_report(facts.health, &policy.health);
            attach_aftercare(&mut health.pull_requests, ledger, &policy.aftercare, now);
            health
        },
        sessions,
    }
}

/// The published JSON Schema of `status.json` (its `dashboard`, present when the step kept the
/// dashboard, is what became of it: an object).
pub fn status_schema() -> serde_json::Value {
    let mut schema =
        serde_json::to_value(schemars::schema_for!(StatusReport)).expect("schema serializes");
    schema["title"] = "klaud status.json".into();
    schema["properties"]["dashboard"] = serde_json::json!({
        "description": "What became of the dashboard issue, when the step kept it.",
        "type": "object",
    });
    schema
}

/// Every cooldown running at `now`, the one ending last first.
fn running_cooldown_views(
    ledger: &Ledger,
    policy: &Policy,
    now: DateTime<Utc>,
) -> Vec<CooldownView> {
    let mut cooldowns: Vec<CooldownView> = running_cooldowns(ledger, policy, now)
        .into_iter()
        .map(|cooldown| CooldownView {
            candidate: cooldown.session.candidate.clone(),
            family: cooldown.session.family.clone(),
            outcome: cooldown.outcome.to_string(),
            finished_at: cooldown.finished_at,
            until: cooldown.until,
            holds: cooldown.scope.name().to_string(),
        })
        .collect();
    cooldowns.sort_by(|a, b| b.until.cmp(&a.until).then(a.candidate.cmp(&b.candidate)));
    cooldowns
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;
    use crate::core::ledger::Lease;
    use crate::core::outcome::Outcome;
    use crate::core::policy::tests::inferencex_policy;
    use crate::core::test_support::at;

    fn now() -> DateTime<Utc> {
        at("2026-11-30T12:00:00Z")
    }

    /// Live a (family fa), parked p, c failed an hour ago, m closed by a maintainer three days
    /// ago, o failed two days ago (its one-day cooldown is over), lease held by run 90.
    fn ledger() -> Ledger {
        let mut ledger = Ledger::empty();
        let hours_ago = |hours| now() - Duration::hours(hours);
        ledger.claim_family("a", "fa", 10, hours_ago(2)).unwrap();
        ledger.claim_family("p", "fp", 11, hours_ago(3)).unwrap();
        ledger.sessions[1].state = SessionState::Parked;
        for (candidate, family, outcome, finished) in [
            ("c", "fc", Outcome::Failed, hours_ago(1)),
            ("m", "fm", Outcome::ClosedByMaintainer, hours_ago(72)),
            ("o", "fo", Outcome::Failed, hours_ago(48)),
        ] {
            ledger.claim_family(candidate, family, 9, finished).unwrap();
            ledger.finish_session(candidate, outcome, true, finished);
        }
        ledger.recovery_lease = Some(Lease {
            owner_run: 90,
            taken_at: hours_ago(0),
        });
        ledger
    }

    fn pulls() -> Listed<KlaudPullRequest> {
        Listed::complete(vec![
            KlaudPullRequest {
                number: 4,
                candidate: "a".into(),
                draft: true,
                labels: vec!["klaud-in-progress".into()],
            },
            KlaudPullRequest {
                number: 6,
                candidate: "z".into(),
                draft: true,
                labels: Vec::new(),
            },
        ])
    }

    fn report(pulls: &Listed<KlaudPullRequest>) -> StatusReport {
        let ledger = ledger();
        let facts = StatusFacts {
            ledger: &ledger,
            ledger_found: true,
            pull_requests: pulls,
            repository: "acme/bench",
            health: HealthFacts {
                pulls: &Listed::complete(Vec::new()),
                jobs: &std::collections::BTreeMap::new(),
                sweep_workflow: Some("run-sweep.yml"),
            },
        };
        status_report(facts, &inferencex_policy(), now())
    }

    #[test]
    fn open_sessions_are_listed_oldest_first_with_their_pull_request() {
        let report = report(&pulls());
        let sessions: Vec<(&str, &str, Option<u64>)> = report
            .sessions
            .iter()
            .map(|s| (s.candidate.as_str(), s.state.as_str(), s.pull_request))
            .collect();
        assert_eq!(sessions, [("p", "parked", None), ("a", "live", Some(4))]);
        assert_eq!((report.live_sessions, report.parked_sessions), (1, 1));
        assert_eq!(
            report.room, 4,
            "parked sessions do not count against the cap"
        );
        assert_eq!(report.claims.len(), 2);
        assert_eq!(
            report.recovery_lease.as_ref().map(|l| l.owner_run),
            Some(90)
        );
    }

    #[test]
    fn only_running_cooldowns_are_shown_the_longest_first() {
        let report = report(&pulls());
        let cooldowns: Vec<(&str, &str)> = report
            .cooldowns
            .iter()
            .map(|c| (c.candidate.as_str(), c.holds.as_str()))
            .collect();
        assert_eq!(cooldowns, [("m", "family"), ("c", "candidate")]);
        assert_eq!(report.cooldowns[0].until, now() + Duration::days(4));
    }

    #[test]
    fn sessions_per_outcome_over_seven_days_are_counted() {
        let report = report(&pulls());
        let rows: Vec<(&str, usize)> = report
            .cost
            .per_outcome
            .iter()
            .map(|row| (row.outcome.as_str(), row.sessions))
            .collect();
        assert_eq!(
            rows,
            [
                ("failed", 2),
                ("closed-by-maintainer", 1),
                ("live", 1),
                ("parked", 1)
            ]
        );
        assert_eq!(report.cost.total_usd, 0.0, "no attempt recorded a cost");
        assert_eq!(report.cost.daily_budget_usd, None);
    }

    #[test]
    fn a_klaud_pull_request_without_a_session_is_pointed_out() {
        let report = report(&pulls());
        let numbers: Vec<u64> = report
            .pull_requests_without_session
            .iter()
            .map(|p| p.number)
            .collect();
        assert_eq!(numbers, [6]);
    }

    /// Validated #7 of candidate v waits for a maintainer after using its two sessions and
    /// conflicts with its base; #8 of w is no after-care pull request.
    #[test]
    fn each_pull_request_carries_its_aftercare_or_null() {
        use crate::core::aftercare::{AftercareNext, AftercareState, NeedsMaintainerBecause};
        use crate::core::github_state::{MergeStateStatus, Mergeable};
        use crate::core::health::PullRequestChecks;

        let mut ledger = ledger();
        ledger.record_validated("v", "fv", 7, None, now() - Duration::days(2));
        let record = &mut ledger.aftercare[0];
        record.sessions_used = 2;
        record.granted = 1;
        record.state = AftercareState::NeedsMaintainer {
            since: now() - Duration::hours(1),
            because: NeedsMaintainerBecause::Ended(Outcome::Failed),
        };
        let pull = |number: u64, candidate: &str| PullRequestChecks {
            number,
            candidate: candidate.into(),
            created_at: now() - Duration::days(3),
            draft: true,
            head_sha: "abc".into(),
            mergeable: Mergeable::Conflicting,
            merge_state: MergeStateStatus::Dirty,
            checks: Listed::complete(Vec::new()),
        };
        let checks = Listed::complete(vec![pull(7, "v"), pull(8, "w")]);
        let facts = StatusFacts {
            ledger: &ledger,
            ledger_found: true,
            pull_requests: &pulls(),
            repository: "acme/bench",
            health: HealthFacts {
                pulls: &checks,
                jobs: &std::collections::BTreeMap::new(),
                sweep_workflow: Some("run-sweep.yml"),
            },
        };
        let report = status_report(facts, &inferencex_policy(), now());
        let row = |number: u64| {
            report
                .health
                .pull_requests
                .iter()
                .find(|row| row.number == number)
                .unwrap()
        };
        assert_eq!(row(8).aftercare, None);
        let aftercare = row(7).aftercare.clone().expect("#7 is in after-care");
        assert_eq!(
            (aftercare.sessions_used, aftercare.sessions_allowed),
            (2, 3)
        );
        assert_eq!(aftercare.next, AftercareNext::WaitsForMaintainer);
        let json = serde_json::to_value(&row(7).aftercare).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "state": "needs-maintainer",
                "reason": "its after-care session ended failed",
                "sessions-used": 2,
                "sessions-allowed": 3,
                "next": "waits-for-maintainer"
            })
        );
        assert_eq!(
            serde_json::to_value(row(8)).unwrap()["aftercare"],
            serde_json::Value::Null
        );
    }

    #[test]
    fn unknown_pull_requests_are_said_so_and_the_ledger_is_still_shown() {
        let unknown = Listed::failed("GET /pulls: HTTP 502");
        let report = report(&unknown);
        assert_eq!(report.sessions.len(), 2);
        assert_eq!(report.sessions[1].pull_request, None);
        assert!(report.pull_requests_without_session.is_empty());
        assert_eq!(
            report.pull_requests_unknown.as_deref(),
            Some("GET /pulls: HTTP 502")
        );
    }
}
