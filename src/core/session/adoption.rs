//! Which job may run a session (contract §9): the planner run that claimed the candidate, or one
//! job of the candidate workflow that a resume dispatched — only attempt 1 of a job, only while
//! the session is live and its pull request is neither handed off nor closed. Adopting records
//! a new attempt with its deadline; it is decided on the ledger inside its compare-and-swap, so
//! two jobs racing for one resumed session cannot both adopt it.

use chrono::{DateTime, Duration, Utc};

use crate::core::cost::{BudgetExhausted, RunCap, run_cap};
use crate::core::ledger::{Attempt, Ledger, Session, SessionState};
use crate::core::outcome::Outcome;
use crate::core::policy::{Policy, SessionLimits};
use crate::core::snapshot::PullRequestFact;

/// The job asking to adopt a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobIdentity {
    /// `GITHUB_RUN_ID`: for a job of a called workflow, the caller's (the planner's) run.
    pub run_id: u64,
    /// `GITHUB_RUN_ATTEMPT`.
    pub run_attempt: u32,
}

/// Why a job does not run the session. Nothing is written for any of them.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// A re-run of a job: the session belongs to the first attempt, or to recovery.
    RerunAttempt { attempt: u32 },
    /// The ledger has no session of the candidate.
    NoSession,
    /// The newest session of the candidate is finished.
    Finished { outcome: Option<Outcome> },
    /// Parked and not resumed yet: recovery starts it again when there is room.
    Parked,
    /// Live, but neither this run's nor resumed for a dispatched job.
    OtherRun { parent_run: u64 },
    /// This run already adopted the session (a second job, or the step run twice).
    AlreadyAdopted { attempt: u32 },
    /// Every job the session may take was taken.
    OutOfAttempts { attempts: u32 },
    /// A maintainer took the pull request over.
    HandedOff { pull_request: u64 },
    /// The pull request was closed (or merged).
    Closed { pull_request: u64, merged: bool },
    /// The daily budget has less than a cent left: the agent would spend past the day.
    DailyBudgetSpent(BudgetExhausted),
    /// An after-care session whose pull request is not among its branch's.
    AftercarePullRequestMissing { pull_request: u64 },
    /// An after-care session whose pull request is not the bot's of this repository.
    NotTheBots { pull_request: u64 },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::RerunAttempt { attempt } => write!(
                formatter,
                "this is attempt {attempt} of the job: a re-run never runs a session (recovery resumes it when it needs to)"
            ),
            Refusal::NoSession => write!(formatter, "the ledger has no session of this candidate"),
            Refusal::Finished { outcome } => match outcome {
                Some(outcome) => write!(formatter, "the session is finished ({outcome})"),
                None => write!(formatter, "the session is finished"),
            },
            Refusal::Parked => write!(
                formatter,
                "the session is parked: recovery resumes it when there is room under the cap"
            ),
            Refusal::OtherRun { parent_run } => write!(
                formatter,
                "the live session belongs to run {parent_run} and was not resumed for a dispatched job"
            ),
            Refusal::AlreadyAdopted { attempt } => write!(
                formatter,
                "this run already runs the session (attempt {attempt})"
            ),
            Refusal::OutOfAttempts { attempts } => {
                write!(formatter, "the session already took its {attempts} jobs")
            }
            Refusal::HandedOff { pull_request } => {
                write!(formatter, "#{pull_request} was handed off to maintainers")
            }
            Refusal::Closed {
                pull_request,
                merged: true,
            } => write!(formatter, "#{pull_request} was merged"),
            Refusal::Closed {
                pull_request,
                merged: false,
            } => write!(formatter, "#{pull_request} was closed"),
            Refusal::DailyBudgetSpent(spent) => write!(
                formatter,
                "the daily budget is used up ({}): no agent run starts, so none spends past the day",
                spent.figures()
            ),
            Refusal::AftercarePullRequestMissing { pull_request } => write!(
                formatter,
                "the after-care session's pull request #{pull_request} is not among its branch's"
            ),
            Refusal::NotTheBots { pull_request } => write!(
                formatter,
                "#{pull_request} is not the bot's pull request of this repository: after-care leaves it alone"
            ),
        }
    }
}

/// A job's adoption of a session: the ledger to store and what the job runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Adoption {
    pub ledger: Ledger,
    /// The session as adopted (its new attempt last).
    pub session: Session,
    /// True when the job continues a session that ran before.
    pub resume: bool,
}

impl Adoption {
    /// The attempt this job runs.
    pub fn attempt(&self) -> &Attempt {
        self.session
            .attempts
            .last()
            .expect("an adopted session has its attempt")
    }
}

/// The newest session of `candidate`, in any state.
pub fn newest_session<'a>(ledger: &'a Ledger, candidate: &str) -> Option<&'a Session> {
    ledger
        .sessions
        .iter()
        .rev()
        .find(|session| session.candidate == candidate)
}

/// [`adopt`], and then the run's own cap (contract §10): refused, nothing written, when the daily
/// budget has less than a cent left, so no agent run spends past the day.
pub fn adopt_under_budget(
    ledger: &Ledger,
    candidate: &str,
    job: JobIdentity,
    policy: &Policy,
    now: DateTime<Utc>,
) -> Result<(Adoption, RunCap), Refusal> {
    let adoption = adopt(ledger, candidate, job, policy.session, now)?;
    let cap = run_cap(ledger, policy, now).map_err(Refusal::DailyBudgetSpent)?;
    Ok((adoption, cap))
}

/// Decides, on `ledger` as it is now, whether the job adopts the candidate's session.
pub fn adopt(
    ledger: &Ledger,
    candidate: &str,
    job: JobIdentity,
    limits: SessionLimits,
    now: DateTime<Utc>,
) -> Result<Adoption, Refusal> {
    if job.run_attempt != 1 {
        return Err(Refusal::RerunAttempt {
            attempt: job.run_attempt,
        });
    }
    let index = ledger
        .sessions
        .iter()
        .rposition(|session| session.candidate == candidate)
        .ok_or(Refusal::NoSession)?;
    let session = &ledger.sessions[index];
    match session.state {
        SessionState::Finished => {
            return Err(Refusal::Finished {
                outcome: session.outcome,
            });
        }
        SessionState::Parked => return Err(Refusal::Parked),
        SessionState::Live => {}
    }
    if let Some(earlier) = session.attempts.iter().find(|a| a.run == job.run_id) {
        return Err(Refusal::AlreadyAdopted {
            attempt: earlier.number,
        });
    }
    let resumed_for_dispatch = session.resuming.is_some();
    if !resumed_for_dispatch && session.parent_run != job.run_id {
        return Err(Refusal::OtherRun {
            parent_run: session.parent_run,
        });
    }
    let taken = session.attempts.len() as u32;
    if taken >= limits.max_attempts {
        return Err(Refusal::OutOfAttempts { attempts: taken });
    }
    let mut next = ledger.clone();
    let adopted = &mut next.sessions[index];
    adopted.resuming = None;
    adopted.attempts.push(Attempt {
        number: taken + 1,
        run: job.run_id,
        adopted_at: now,
        deadline: now + Duration::minutes(i64::from(limits.time_limit_minutes)),
        ended_at: None,
        end: None,
        runs: Vec::new(),
        notes: Vec::new(),
        notes_folded: 0,
        agent: None,
    });
    let session = adopted.clone();
    Ok(Adoption {
        ledger: next,
        resume: taken > 0,
        session,
    })
}

/// The session's pull request among the pull requests of its branch (see
/// [`super::pick_pull_request`]); an after-care session's is the one it was started for.
pub fn session_pull_request<'a>(
    pulls: &'a [PullRequestFact],
    session: &Session,
    policy: &Policy,
) -> Option<&'a PullRequestFact> {
    let known = super::aftercare::aftercare_pull_request(session).or(session.pull_request);
    super::pick_pull_request(
        pulls,
        &policy.candidate_branch(&session.candidate),
        known,
        session.started_at,
    )
}

/// Why the session's pull request stops it from running, if it does.
pub fn pull_request_refusal(pull: &PullRequestFact, policy: &Policy) -> Option<Refusal> {
    if pull
        .labels
        .iter()
        .any(|label| label == &policy.handoff_label)
    {
        return Some(Refusal::HandedOff {
            pull_request: pull.number,
        });
    }
    (!pull.open).then_some(Refusal::Closed {
        pull_request: pull.number,
        merged: pull.merged,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ledger::Resuming;
    use crate::core::policy::tests::inferencex_policy;
    use crate::core::test_support::at;

    fn claimed(run: u64) -> Ledger {
        let mut ledger = Ledger::empty();
        ledger
            .claim_family("a", "f", run, at("2026-12-01T08:00:00Z"))
            .unwrap();
        ledger
    }

    fn job(run_id: u64, run_attempt: u32) -> JobIdentity {
        JobIdentity {
            run_id,
            run_attempt,
        }
    }

    const LIMITS: SessionLimits = SessionLimits {
        time_limit_minutes: 330,
        wrap_up_minutes: 20,
        max_attempts: 3,
    };

    #[test]
    fn the_claiming_run_adopts_its_session_once_with_a_deadline() {
        let now = at("2026-12-01T08:01:00Z");
        let adoption = adopt(&claimed(7), "a", job(7, 1), LIMITS, now).unwrap();
        let attempt = adoption.attempt();
        assert_eq!((attempt.number, attempt.run), (1, 7));
        assert_eq!(attempt.deadline, at("2026-12-01T13:31:00Z"));
        assert!(!adoption.resume);
        assert_eq!(
            adopt(&adoption.ledger, "a", job(7, 1), LIMITS, now),
            Err(Refusal::AlreadyAdopted { attempt: 1 })
        );
    }

    #[test]
    fn re_runs_other_runs_and_closed_states_are_refused() {
        let now = at("2026-12-01T08:01:00Z");
        let ledger = claimed(7);
        assert_eq!(
            adopt(&ledger, "a", job(7, 2), LIMITS, now),
            Err(Refusal::RerunAttempt { attempt: 2 })
        );
        assert_eq!(
            adopt(&ledger, "a", job(8, 1), LIMITS, now),
            Err(Refusal::OtherRun { parent_run: 7 })
        );
        assert_eq!(
            adopt(&ledger, "b", job(7, 1), LIMITS, now),
            Err(Refusal::NoSession)
        );
        let mut finished = ledger.clone();
        finished.finish_session("a", Outcome::Failed, true, now);
        assert_eq!(
            adopt(&finished, "a", job(7, 1), LIMITS, now),
            Err(Refusal::Finished {
                outcome: Some(Outcome::Failed)
            })
        );
        let mut parked = ledger;
        parked.sessions[0].state = SessionState::Parked;
        assert_eq!(
            adopt(&parked, "a", job(7, 1), LIMITS, now),
            Err(Refusal::Parked)
        );
    }

    #[test]
    fn a_resumed_session_is_adopted_by_one_dispatched_job_and_knows_it_resumes() {
        let now = at("2026-12-01T08:01:00Z");
        let first = adopt(&claimed(7), "a", job(7, 1), LIMITS, now).unwrap();
        let mut resumed = first.ledger;
        let session = &mut resumed.sessions[0];
        session.attempts[0].end = Some(crate::core::ledger::AttemptEnd::TimeRanOut);
        session.parent_run = 90;
        session.resuming = Some(Resuming {
            by_run: 90,
            at: now,
        });
        let later = at("2026-12-01T14:00:00Z");
        let second = adopt(&resumed, "a", job(91, 1), LIMITS, later).unwrap();
        assert!(second.resume);
        assert_eq!(second.attempt().number, 2);
        assert_eq!(second.session.resuming, None);
        assert_eq!(
            adopt(&second.ledger, "a", job(92, 1), LIMITS, later),
            Err(Refusal::OtherRun { parent_run: 90 }),
            "the second dispatched job finds it adopted"
        );
    }

    fn budgets(daily_usd: Option<f64>, session_usd: Option<f64>) -> Policy {
        Policy {
            daily_budget_usd: daily_usd,
            session_budget_usd: session_usd,
            ..inferencex_policy()
        }
    }

    /// `claimed(7)` whose earlier session of another candidate cost `usd` an hour before `now`.
    fn claimed_after_spending(usd: f64, now: DateTime<Utc>) -> Ledger {
        let mut ledger = claimed(7);
        ledger
            .claim_family("b", "g", 6, now - Duration::hours(3))
            .unwrap();
        let mut spent = adopt(&ledger, "b", job(6, 1), LIMITS, now - Duration::hours(2))
            .unwrap()
            .ledger;
        spent.sessions[1].attempts[0].agent = Some(crate::core::execution::AgentRecord {
            cost_usd: Some(usd),
            ..Default::default()
        });
        spent.sessions[1].attempts[0].ended_at = Some(now - Duration::hours(1));
        spent
    }

    #[test]
    fn the_adopting_job_gets_the_runs_cap_and_none_when_the_day_is_spent() {
        let now = at("2026-12-01T12:00:00Z");
        let ledger = claimed_after_spending(7.5, now);
        let (adoption, cap) = adopt_under_budget(
            &ledger,
            "a",
            job(7, 1),
            &budgets(Some(10.0), Some(4.0)),
            now,
        )
        .unwrap();
        assert_eq!(adoption.attempt().number, 1);
        assert_eq!(cap.max_budget_usd(), "2.5", "the day's remainder is less");
        let (_, cap) =
            adopt_under_budget(&ledger, "a", job(7, 1), &budgets(None, None), now).unwrap();
        assert_eq!(cap.max_budget_usd(), "", "no budget: no cap");

        let refused = adopt_under_budget(&ledger, "a", job(7, 1), &budgets(Some(7.5), None), now);
        assert_eq!(
            refused,
            Err(Refusal::DailyBudgetSpent(BudgetExhausted {
                recorded_usd: 7.5,
                budget_usd: 7.5
            }))
        );
        assert_eq!(
            refused.unwrap_err().to_string(),
            "the daily budget is used up ($7.50 recorded in the last 24 hours, budget $7.50): no agent run starts, so none spends past the day"
        );
        assert_eq!(
            adopt_under_budget(&ledger, "a", job(8, 1), &budgets(Some(7.5), None), now),
            Err(Refusal::OtherRun { parent_run: 7 }),
            "a job that may not adopt is told why first"
        );
    }

    #[test]
    fn a_session_out_of_attempts_is_not_adopted() {
        let now = at("2026-12-01T08:01:00Z");
        let mut ledger = claimed(7);
        for run in 1..=3 {
            ledger.sessions[0].resuming = Some(Resuming { by_run: 1, at: now });
            ledger = adopt(&ledger, "a", job(100 + run, 1), LIMITS, now)
                .unwrap()
                .ledger;
        }
        ledger.sessions[0].resuming = Some(Resuming { by_run: 1, at: now });
        assert_eq!(
            adopt(&ledger, "a", job(200, 1), LIMITS, now),
            Err(Refusal::OutOfAttempts { attempts: 3 })
        );
    }

    fn pull(number: u64, open: bool, created: &str) -> PullRequestFact {
        PullRequestFact {
            number,
            node_id: String::new(),
            head_branch: "klaud/auto-a".into(),
            head_sha: "h".into(),
            from_this_repository: true,
            author: Some("Klaud-Cold".into()),
            open,
            draft: true,
            merged: false,
            labels: Vec::new(),
            created_at: at(created),
        }
    }

    #[test]
    fn the_session_pull_request_is_not_an_earlier_sessions_closed_one() {
        let policy = inferencex_policy();
        let ledger = claimed(7);
        let session = &ledger.sessions[0];
        let old = pull(3, false, "2026-11-01T00:00:00Z");
        assert_eq!(
            session_pull_request(std::slice::from_ref(&old), session, &policy),
            None
        );
        let closed_since = pull(9, false, "2026-12-01T09:00:00Z");
        let pulls = [old, closed_since];
        let found = session_pull_request(&pulls, session, &policy).unwrap();
        assert_eq!(found.number, 9);
        assert_eq!(
            pull_request_refusal(found, &policy),
            Some(Refusal::Closed {
                pull_request: 9,
                merged: false
            })
        );
        let mut handed = pull(10, true, "2026-12-01T09:00:00Z");
        handed.labels.push("klaud-handoff".into());
        assert_eq!(
            pull_request_refusal(&handed, &policy),
            Some(Refusal::HandedOff { pull_request: 10 })
        );
        assert_eq!(
            pull_request_refusal(&pull(11, true, "2026-12-01T09:00:00Z"), &policy),
            None
        );
    }
}
