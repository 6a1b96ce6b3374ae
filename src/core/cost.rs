//! What the agent runs cost, as the ledger records it (contract §10): `finish` keeps every job's
//! execution record once, on the attempt `session` adopted or as a job nobody adopted
//! ([`Session::agent_runs`]), so the cost of a window is the sum over the agent runs recorded in
//! it, parked sessions' included. From it: whether the daily budget is used up (`select`
//! starts nothing and `recover` resumes nothing then), a run's own cap (`session`'s
//! `max-budget-usd`: the least of `budget.session-usd` and what is left of the daily budget, or
//! no run at all when less than a cent is left), and the cost and sessions per outcome over the
//! last days that `status` shows.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::ledger::{Ledger, Session, SessionState};
use super::policy::Policy;

/// The window of the daily budget.
pub const BUDGET_WINDOW_HOURS: i64 = 24;
/// The window of the cost `status` shows.
pub const REPORT_WINDOW_DAYS: i64 = 7;

/// The cost of `session`'s agent runs recorded at or after `since`, and how many of them carry
/// a cost.
fn session_cost_since(session: &Session, since: DateTime<Utc>) -> (f64, usize) {
    session
        .agent_runs()
        .filter(|(recorded_at, _)| *recorded_at >= since)
        .filter_map(|(_, agent)| agent.cost_usd)
        .fold((0.0, 0), |(sum, count), cost| (sum + cost, count + 1))
}

/// The cost of every agent run recorded at or after `since`, whatever became of its session.
pub fn recorded_cost_since(ledger: &Ledger, since: DateTime<Utc>) -> f64 {
    ledger
        .sessions
        .iter()
        .map(|session| session_cost_since(session, since).0)
        .sum()
}

/// The daily budget is used up: what was recorded in the last 24 hours and the budget.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct BudgetExhausted {
    pub recorded_usd: f64,
    pub budget_usd: f64,
}

impl BudgetExhausted {
    /// `$12.40 recorded in the last 24 hours, budget $10.00`.
    pub fn figures(&self) -> String {
        format!(
            "${:.2} recorded in the last {BUDGET_WINDOW_HOURS} hours, budget ${:.2}",
            self.recorded_usd, self.budget_usd
        )
    }
}

/// `Some` when the policy has a daily budget and the cost recorded in the 24 hours before `now`
/// reaches it.
pub fn budget_exhausted(
    ledger: &Ledger,
    policy: &Policy,
    now: DateTime<Utc>,
) -> Option<BudgetExhausted> {
    let budget_usd = policy.daily_budget_usd?;
    let recorded_usd = recorded_cost_since(ledger, now - Duration::hours(BUDGET_WINDOW_HOURS));
    (recorded_usd >= budget_usd).then_some(BudgetExhausted {
        recorded_usd,
        budget_usd,
    })
}

/// A run's own cap (contract §10): what one agent run may spend, and which budget bounds it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RunCap {
    /// Neither `budget.session-usd` nor `budget.daily-usd` is configured.
    Uncapped,
    /// The run may spend at most `usd`.
    Capped { usd: f64, bound: RunCapBound },
}

/// Which budget a run's cap comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunCapBound {
    /// `budget.session-usd`, the smaller of the two.
    Session,
    /// What is left of `budget.daily-usd` in the last 24 hours, rounded down to the cent.
    DailyRemainder,
}

impl RunCap {
    /// The agent CLI's `--max-budget-usd` value (`2.5`, `0.37`), or empty without a cap.
    pub fn max_budget_usd(&self) -> String {
        match self {
            RunCap::Uncapped => String::new(),
            RunCap::Capped { usd, .. } => usd.to_string(),
        }
    }

    /// One line for logs and summaries.
    pub fn describe(&self) -> String {
        match self {
            RunCap::Uncapped => "no cap (no budget configured)".to_string(),
            RunCap::Capped {
                usd,
                bound: RunCapBound::Session,
            } => format!("${usd:.2} (budget.session-usd)"),
            RunCap::Capped {
                usd,
                bound: RunCapBound::DailyRemainder,
            } => format!(
                "${usd:.2} (what is left of budget.daily-usd in the last {BUDGET_WINDOW_HOURS} hours)"
            ),
        }
    }
}

/// What is left of the daily budget, in whole cents: a float error of a sum of costs never
/// turns a cent left into none.
fn cents_left(budget_usd: f64, recorded_usd: f64) -> i64 {
    ((budget_usd - recorded_usd) * 100.0 + 1e-6).floor() as i64
}

/// The cap of an agent run starting at `now`: the least of the session budget and what is left
/// of the daily budget in the 24 hours before `now` (rounded down to the cent, so the run never
/// spends past the day). `Err` when the daily budget has less than a cent left: no agent run
/// starts then.
pub fn run_cap(
    ledger: &Ledger,
    policy: &Policy,
    now: DateTime<Utc>,
) -> Result<RunCap, BudgetExhausted> {
    let session = policy.session_budget_usd.map(|usd| RunCap::Capped {
        usd,
        bound: RunCapBound::Session,
    });
    let Some(budget_usd) = policy.daily_budget_usd else {
        return Ok(session.unwrap_or(RunCap::Uncapped));
    };
    let recorded_usd = recorded_cost_since(ledger, now - Duration::hours(BUDGET_WINDOW_HOURS));
    let cents = cents_left(budget_usd, recorded_usd);
    if cents <= 0 {
        return Err(BudgetExhausted {
            recorded_usd,
            budget_usd,
        });
    }
    let remainder = cents as f64 / 100.0;
    Ok(match policy.session_budget_usd {
        Some(usd) if usd <= remainder => RunCap::Capped {
            usd,
            bound: RunCapBound::Session,
        },
        _ => RunCap::Capped {
            usd: remainder,
            bound: RunCapBound::DailyRemainder,
        },
    })
}

/// The cost and sessions of the last [`REPORT_WINDOW_DAYS`] days (`cost` of `status.json`).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct CostReport {
    pub days: i64,
    /// Every agent run's recorded cost in the window.
    pub total_usd: f64,
    /// Agent runs in the window whose execution record carried a cost (adopted attempts and jobs
    /// nobody adopted).
    pub attempts_with_cost: usize,
    /// The daily budget, when one is configured.
    pub daily_budget_usd: Option<f64>,
    /// What was recorded in the last 24 hours.
    pub last_24_hours_usd: f64,
    /// Sessions per outcome (`live` and `parked` for open ones), those that finished in the
    /// window or are still open, with the cost their attempts recorded in it.
    pub per_outcome: Vec<OutcomeCost>,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct OutcomeCost {
    /// An outcome's public name, or `live` or `parked`.
    pub outcome: String,
    pub sessions: usize,
    pub cost_usd: f64,
}

/// The cost report at `now`.
pub fn cost_report(ledger: &Ledger, policy: &Policy, now: DateTime<Utc>) -> CostReport {
    let since = now - Duration::days(REPORT_WINDOW_DAYS);
    let mut per_outcome: BTreeMap<String, OutcomeCost> = BTreeMap::new();
    let mut total_usd = 0.0;
    let mut attempts_with_cost = 0;
    for session in &ledger.sessions {
        let (cost, with_cost) = session_cost_since(session, since);
        let name = match (session.state, session.outcome) {
            (SessionState::Live, _) => "live".to_string(),
            (SessionState::Parked, _) => "parked".to_string(),
            (SessionState::Finished, _)
                if session.finished_at.unwrap_or(session.started_at) < since && with_cost == 0 =>
            {
                continue;
            }
            (SessionState::Finished, Some(outcome)) => outcome.to_string(),
            (SessionState::Finished, None) => "no outcome recorded".to_string(),
        };
        total_usd += cost;
        attempts_with_cost += with_cost;
        let entry = per_outcome.entry(name.clone()).or_insert(OutcomeCost {
            outcome: name,
            sessions: 0,
            cost_usd: 0.0,
        });
        entry.sessions += 1;
        entry.cost_usd += cost;
    }
    let mut per_outcome: Vec<OutcomeCost> = per_outcome.into_values().collect();
    per_outcome.sort_by(|a, b| {
        b.sessions
            .cmp(&a.sessions)
            .then_with(|| a.outcome.cmp(&b.outcome))
    });
    CostReport {
        days: REPORT_WINDOW_DAYS,
        total_usd,
        attempts_with_cost,
        daily_budget_usd: policy.daily_budget_usd,
        last_24_hours_usd: recorded_cost_since(ledger, now - Duration::hours(BUDGET_WINDOW_HOURS)),
        per_outcome,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::execution::AgentRecord;
    use crate::core::ledger::{Attempt, JobRef};
    use crate::core::outcome::Outcome;
    use crate::core::policy::tests::inferencex_policy;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn hours_ago(hours: i64) -> DateTime<Utc> {
        now() - Duration::hours(hours)
    }

    fn attempt(number: u32, ended_hours_ago: Option<i64>, cost: Option<f64>) -> Attempt {
        let adopted = hours_ago(ended_hours_ago.unwrap_or(0) + 2);
        Attempt {
            number,
            run: 100 + u64::from(number),
            adopted_at: adopted,
            deadline: adopted + Duration::hours(5),
            ended_at: ended_hours_ago.map(hours_ago),
            end: None,
            runs: Vec::new(),
            notes: Vec::new(),
            notes_folded: 0,
            agent: Some(AgentRecord {
                cost_usd: cost,
                ..AgentRecord::default()
            }),
        }
    }

    /// a: finished failed 1 hour ago ($4 + $3.40 an hour and 30 hours ago); p: parked after a
    /// $5 job 10 hours ago; l: live, its job not ended, no cost yet; o: finished validated 10
    /// days ago ($100 then).
    fn ledger() -> Ledger {
        let mut ledger = Ledger::empty();
        for (candidate, family) in [("a", "fa"), ("p", "fp"), ("l", "fl"), ("o", "fo")] {
            ledger
                .claim_family(candidate, family, 9, hours_ago(40))
                .unwrap();
        }
        ledger.sessions[0].attempts = vec![
            attempt(1, Some(30), Some(3.4)),
            attempt(2, Some(1), Some(4.0)),
        ];
        ledger.finish_session("a", Outcome::Failed, true, hours_ago(1));
        ledger.sessions[1].attempts = vec![attempt(1, Some(10), Some(5.0))];
        ledger.sessions[1].state = SessionState::Parked;
        ledger.sessions[2].attempts = vec![attempt(1, None, None)];
        ledger.sessions[3].attempts = vec![attempt(1, Some(240), Some(100.0))];
        ledger.finish_session("o", Outcome::Validated, true, hours_ago(240));
        ledger
    }

    fn with_budget(daily_usd: f64) -> Policy {
        Policy {
            daily_budget_usd: Some(daily_usd),
            ..inferencex_policy()
        }
    }

    #[test]
    fn the_last_24_hours_count_every_attempt_parked_ones_included() {
        assert_eq!(recorded_cost_since(&ledger(), hours_ago(24)), 9.0);
        let two_days = recorded_cost_since(&ledger(), hours_ago(48));
        assert!(
            (two_days - 12.4).abs() < 1e-9,
            "the first job of a counts once it is in the window: {two_days}"
        );
    }

    #[test]
    fn the_budget_is_exhausted_when_the_recorded_cost_reaches_it() {
        assert_eq!(
            budget_exhausted(&ledger(), &with_budget(9.0), now()),
            Some(BudgetExhausted {
                recorded_usd: 9.0,
                budget_usd: 9.0
            })
        );
        assert_eq!(budget_exhausted(&ledger(), &with_budget(9.01), now()), None);
        assert_eq!(
            budget_exhausted(&ledger(), &inferencex_policy(), now()),
            None
        );
        // A day later the same jobs are out of the window.
        assert_eq!(
            budget_exhausted(&ledger(), &with_budget(1.0), now() + Duration::hours(24)),
            None
        );
    }

    fn capped(daily_usd: Option<f64>, session_usd: Option<f64>) -> Policy {
        Policy {
            daily_budget_usd: daily_usd,
            session_budget_usd: session_usd,
            ..inferencex_policy()
        }
    }

    #[test]
    fn a_run_without_any_budget_is_uncapped() {
        let cap = run_cap(&ledger(), &capped(None, None), now()).unwrap();
        assert_eq!(cap, RunCap::Uncapped);
        assert_eq!(cap.max_budget_usd(), "");
    }

    #[test]
    fn the_session_budget_alone_caps_every_run() {
        let cap = run_cap(&ledger(), &capped(None, Some(2.5)), now()).unwrap();
        assert_eq!(
            cap,
            RunCap::Capped {
                usd: 2.5,
                bound: RunCapBound::Session
            }
        );
        assert_eq!(cap.max_budget_usd(), "2.5");
    }

    #[test]
    fn the_run_gets_the_least_of_the_session_budget_and_the_days_remainder() {
        // $9 recorded in the last 24 hours (the fixture's ledger).
        let remainder = run_cap(&ledger(), &capped(Some(12.5), Some(5.0)), now()).unwrap();
        assert_eq!(
            remainder,
            RunCap::Capped {
                usd: 3.5,
                bound: RunCapBound::DailyRemainder
            }
        );
        assert_eq!(remainder.max_budget_usd(), "3.5");
        let session = run_cap(&ledger(), &capped(Some(20.0), Some(5.0)), now()).unwrap();
        assert_eq!(
            session,
            RunCap::Capped {
                usd: 5.0,
                bound: RunCapBound::Session
            }
        );
        let daily_only = run_cap(&ledger(), &capped(Some(20.0), None), now()).unwrap();
        assert_eq!(daily_only.max_budget_usd(), "11");
        // A day later the same jobs are out of the window.
        let later = run_cap(
            &ledger(),
            &capped(Some(12.5), None),
            now() + Duration::hours(24),
        );
        assert_eq!(later.unwrap().max_budget_usd(), "12.5");
    }

    #[test]
    fn the_days_remainder_is_rounded_down_to_the_cent() {
        let cap = run_cap(&ledger(), &capped(Some(9.018), None), now()).unwrap();
        assert_eq!(cap.max_budget_usd(), "0.01");
        // 10 − 9.99 is 0.00999… in floating point: still the cent that is left.
        let mut ledger = Ledger::empty();
        ledger.claim_family("c1", "f1", 9, hours_ago(3)).unwrap();
        ledger.sessions[0].attempts = vec![attempt(1, Some(1), Some(9.99))];
        let cap = run_cap(&ledger, &capped(Some(10.0), None), now()).unwrap();
        assert_eq!(cap.max_budget_usd(), "0.01");
    }

    #[test]
    fn no_run_starts_when_less_than_a_cent_of_the_day_is_left() {
        for daily_usd in [9.0, 8.0, 9.009] {
            assert_eq!(
                run_cap(&ledger(), &capped(Some(daily_usd), Some(1.0)), now()),
                Err(BudgetExhausted {
                    recorded_usd: 9.0,
                    budget_usd: daily_usd
                }),
                "{daily_usd}"
            );
        }
    }

    #[test]
    fn the_budgets_message_has_the_figures() {
        let exhausted = BudgetExhausted {
            recorded_usd: 12.4,
            budget_usd: 10.0,
        };
        assert_eq!(
            exhausted.figures(),
            "$12.40 recorded in the last 24 hours, budget $10.00"
        );
    }

    #[test]
    fn the_report_counts_sessions_per_outcome_and_their_cost_over_seven_days() {
        let report = cost_report(&ledger(), &with_budget(20.0), now());
        assert_eq!(report.days, 7);
        assert!((report.total_usd - 12.4).abs() < 1e-9, "{report:?}");
        assert_eq!(report.attempts_with_cost, 3);
        assert_eq!(report.last_24_hours_usd, 9.0);
        assert_eq!(report.daily_budget_usd, Some(20.0));
        let rows: Vec<(&str, usize, f64)> = report
            .per_outcome
            .iter()
            .map(|row| (row.outcome.as_str(), row.sessions, row.cost_usd))
            .collect();
        assert_eq!(
            rows,
            [
                ("failed", 1, 4.0 + 3.4),
                ("live", 1, 0.0),
                ("parked", 1, 5.0)
            ],
            "the session finished ten days ago is outside the window"
        );
    }

    fn costing(cost: f64) -> AgentRecord {
        AgentRecord {
            cost_usd: Some(cost),
            ..AgentRecord::default()
        }
    }

    #[test]
    fn a_job_no_session_adopted_counts_once_per_job() {
        let mut ledger = Ledger::empty();
        ledger.claim_family("c1", "f1", 9, hours_ago(3)).unwrap();
        let job = JobRef {
            run: 500,
            run_attempt: 1,
        };
        assert!(ledger.record_agent_run("c1", job, &costing(0.03), hours_ago(1)));
        // finish run again in the same job keeps nothing more.
        assert!(!ledger.record_agent_run("c1", job, &costing(0.03), hours_ago(1)));
        ledger.finish_session("c1", Outcome::Failed, true, hours_ago(1));
        assert!(!ledger.record_agent_run("c1", job, &costing(0.03), now()));
        assert!((recorded_cost_since(&ledger, hours_ago(24)) - 0.03).abs() < 1e-9);
        assert_eq!(
            budget_exhausted(&ledger, &with_budget(0.01), now()).map(|b| b.recorded_usd),
            Some(0.03)
        );
        // A re-run of the job is another agent run.
        let rerun = JobRef {
            run: 500,
            run_attempt: 2,
        };
        assert!(ledger.record_agent_run("c1", rerun, &costing(0.02), now()));
        let report = cost_report(&ledger, &with_budget(1.0), now());
        assert_eq!(report.attempts_with_cost, 2);
        assert!((report.total_usd - 0.05).abs() < 1e-9, "{report:?}");
        assert_eq!(
            ledger.sessions[0].unadopted_jobs.len(),
            2,
            "kept as jobs nobody adopted"
        );
    }

    #[test]
    fn an_adopted_jobs_record_goes_on_its_attempt_once() {
        let mut ledger = Ledger::empty();
        ledger.claim_family("c1", "f1", 9, hours_ago(3)).unwrap();
        let mut adopted = attempt(1, None, None);
        adopted.agent = None;
        ledger.sessions[0].attempts = vec![adopted];
        let job = JobRef {
            run: 101,
            run_attempt: 1,
        };
        assert!(ledger.record_agent_run("c1", job, &costing(2.0), hours_ago(1)));
        assert!(!ledger.record_agent_run("c1", job, &costing(2.0), hours_ago(1)));
        let session = &ledger.sessions[0];
        assert!(session.unadopted_jobs.is_empty());
        assert_eq!(session.attempts[0].agent, Some(costing(2.0)));
        assert!((recorded_cost_since(&ledger, hours_ago(24)) - 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_session_keeps_the_last_unadopted_jobs_only() {
        let mut ledger = Ledger::empty();
        ledger.claim_family("c1", "f1", 9, hours_ago(3)).unwrap();
        for run in 0..(crate::core::ledger::UNADOPTED_JOBS_KEPT as u64 + 5) {
            let job = JobRef {
                run: 1000 + run,
                run_attempt: 1,
            };
            assert!(ledger.record_agent_run("c1", job, &costing(1.0), hours_ago(1)));
        }
        let kept = &ledger.sessions[0].unadopted_jobs;
        assert_eq!(kept.len(), crate::core::ledger::UNADOPTED_JOBS_KEPT);
        assert_eq!(kept[0].run, 1005, "the oldest are dropped");
    }
}
