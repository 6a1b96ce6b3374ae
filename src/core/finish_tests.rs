//! `core::finish` on small worlds: the outcome recorded and the changes planned.

use chrono::TimeZone;

use super::*;
use crate::core::finish_issue::IssueFact;
use crate::core::policy::tests::inferencex_policy;
use crate::core::snapshot::CommitFact;

const BOT: &str = "Klaud-Cold";
const HEAD: &str = "0123456789abcdef0123456789abcdef01234567";

fn at(hour: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, hour, 0, 0).unwrap()
}

fn session() -> Session {
    Session {
        candidate: "a".into(),
        family: "f".into(),
        parent_run: 9,
        parent_attempt: None,
        state: SessionState::Live,
        started_at: at(1),
        finished_at: None,
        outcome: None,
        agent_ran: true,
        pull_request: Some(3),
        pending_outcome: None,
        attempts: Vec::new(),
        resuming: None,
        unadopted_jobs: Vec::new(),
        kind: Default::default(),
        aftercare: None,
    }
}

fn request(outcome: Outcome) -> FinishRequest {
    FinishRequest {
        candidate: "a".into(),
        outcome,
        agent_ran: true,
        park: false,
        job: JobRef {
            run: 70,
            run_attempt: 1,
        },
        attempt_end: AttemptEnd::Finished,
        runs_seen: Vec::new(),
        agent: None,
    }
}

/// The bot's open draft with one bot commit at `HEAD` and its branch there.
fn draft_facts() -> FinishFacts {
    FinishFacts {
        pull: Some(PullRequestFact {
            number: 3,
            node_id: "PR_3".into(),
            head_branch: "klaud/auto-a".into(),
            head_sha: HEAD.into(),
            from_this_repository: true,
            author: Some(BOT.into()),
            open: true,
            draft: true,
            merged: false,
            labels: vec!["klaud-in-progress".into()],
            created_at: at(1),
        }),
        commits: Some(Ok(CommitsFact {
            commits: vec![CommitFact {
                sha: HEAD.into(),
                author: Some(BOT.into()),
                committer: Some(BOT.into()),
            }],
            complete: true,
        })),
        closed_by: None,
        branch_runs: Some(Ok(Vec::new())),
        named_runs: Vec::new(),
        branch_sha: Some(HEAD.into()),
        own_run: 100,
        issue: None,
    }
}

fn sweep(conclusion: &str) -> RunFact {
    RunFact {
        id: 50,
        workflow: "run-sweep.yml".into(),
        head_branch: Some("klaud/auto-a".into()),
        head_sha: HEAD.into(),
        title: None,
        actor: Some(BOT.into()),
        triggering_actor: Some(BOT.into()),
        active: false,
        conclusion: Some(conclusion.into()),
        created_at: at(2),
        updated_at: at(3),
    }
}

fn steps(plan: &FinishPlan) -> Vec<String> {
    plan.cancel
        .iter()
        .chain(&plan.actions)
        .map(ToString::to_string)
        .collect()
}

#[test]
fn a_failed_draft_is_labelled_closed_and_its_branch_deleted() {
    let plan = decide(
        &request(Outcome::Failed),
        &session(),
        &draft_facts(),
        &inferencex_policy(),
    );
    assert_eq!(plan.cleanup, Cleanup::Done);
    assert!(plan.receipt);
    assert_eq!(
        steps(&plan),
        [
            "set status label klaud-error on #3",
            "close #3",
            "delete branch klaud/auto-a (if still at 0123456)",
        ]
    );
}

#[test]
fn validated_needs_a_successful_sweep_on_the_exact_head() {
    let policy = inferencex_policy();
    let mut facts = draft_facts();
    facts.branch_runs = Some(Ok(vec![sweep("success")]));
    let plan = decide(&request(Outcome::Validated), &session(), &facts, &policy);
    assert_eq!(
        steps(&plan),
        [
            "set status label klaud-finished on #3",
            "mark #3 ready for review"
        ]
    );

    facts.branch_runs = Some(Ok(vec![sweep("failure")]));
    let plan = decide(&request(Outcome::Validated), &session(), &facts, &policy);
    assert_eq!(plan.cleanup, Cleanup::LeftAlone);
    assert!(steps(&plan).is_empty());
}

#[test]
fn a_maintainer_closed_pull_request_is_never_redrafted_or_closed() {
    let mut facts = draft_facts();
    let pull = facts.pull.as_mut().unwrap();
    pull.open = false;
    pull.draft = false;
    facts.closed_by = Some(Ok(Some("maintainer".into())));
    let plan = decide(
        &request(Outcome::Failed),
        &session(),
        &facts,
        &inferencex_policy(),
    );
    assert_eq!(plan.outcome, Outcome::ClosedByMaintainer);
    assert_eq!(steps(&plan), ["remove the status labels of #3"]);
}

#[test]
fn a_head_moved_to_a_maintainer_commit_is_left_alone() {
    let mut facts = draft_facts();
    if let Some(Ok(commits)) = facts.commits.as_mut() {
        commits.commits[0].author = Some("maintainer".into());
    }
    let plan = decide(
        &request(Outcome::Failed),
        &session(),
        &facts,
        &inferencex_policy(),
    );
    assert_eq!(plan.cleanup, Cleanup::LeftAlone);
    assert!(!plan.receipt && steps(&plan).is_empty());
}

#[test]
fn a_left_alone_session_keeps_running_with_its_outcome_pending() {
    let mut ledger = Ledger::empty();
    ledger.sessions.push(session());
    let mut facts = draft_facts();
    facts.pull.as_mut().unwrap().draft = false;
    let plan = decide(
        &request(Outcome::Failed),
        &session(),
        &facts,
        &inferencex_policy(),
    );
    let next = record(&ledger, &plan, &request(Outcome::Failed), at(5)).unwrap();
    assert_eq!(next.sessions[0].state, SessionState::Live);
    assert_eq!(next.sessions[0].pending_outcome, Some(Outcome::Failed));
}

#[test]
fn the_agents_record_is_kept_with_the_attempt_this_job_ends() {
    let mut ledger = Ledger::empty();
    let mut open = session();
    for (number, run) in [(1, 60), (2, 70)] {
        open.attempts.push(crate::core::ledger::Attempt {
            number,
            run,
            adopted_at: at(1),
            deadline: at(6),
            ended_at: None,
            end: None,
            runs: Vec::new(),
            notes: Vec::new(),
            notes_folded: 0,
            agent: None,
        });
    }
    ledger.sessions.push(open.clone());
    let agent = AgentRecord {
        cost_usd: Some(1.25),
        turns: Some(12),
        subtype: Some("success".into()),
        is_error: Some(true),
        ..AgentRecord::default()
    };
    let finishing = FinishRequest {
        agent: Some(agent.clone()),
        ..request(Outcome::Failed)
    };
    let plan = decide(&finishing, &open, &draft_facts(), &inferencex_policy());
    let next = record(&ledger, &plan, &finishing, at(5)).unwrap();
    let attempts = &next.sessions[0].attempts;
    assert_eq!(attempts[1].agent, Some(agent));
    assert_eq!(
        attempts[0].agent, None,
        "another job's attempt is not touched"
    );
}

#[test]
fn recording_twice_changes_nothing_the_second_time() {
    let mut ledger = Ledger::empty();
    ledger.sessions.push(session());
    let plan = decide(
        &request(Outcome::Failed),
        &session(),
        &draft_facts(),
        &inferencex_policy(),
    );
    let once = record(&ledger, &plan, &request(Outcome::Failed), at(5)).unwrap();
    assert_eq!(once.sessions[0].outcome, Some(Outcome::Failed));
    assert_eq!(record(&once, &plan, &request(Outcome::Failed), at(6)), None);
}

#[test]
fn a_ready_pull_request_with_validated_only_pending_is_never_redrafted_or_closed() {
    let policy = inferencex_policy();
    // A validated finish without a finished sweep is left alone, its outcome pending.
    let mut ledger = Ledger::empty();
    ledger.sessions.push(session());
    let plan = decide(
        &request(Outcome::Validated),
        &session(),
        &draft_facts(),
        &policy,
    );
    assert_eq!(plan.cleanup, Cleanup::LeftAlone);
    let next = record(&ledger, &plan, &request(Outcome::Validated), at(5)).unwrap();
    let pending = next.sessions[0].clone();
    assert_eq!(pending.pending_outcome, Some(Outcome::Validated));

    // Someone else marks the draft ready; a later finish with another outcome leaves it alone.
    let mut facts = draft_facts();
    facts.pull.as_mut().unwrap().draft = false;
    let plan = decide(&request(Outcome::Failed), &pending, &facts, &policy);
    assert_eq!(plan.cleanup, Cleanup::LeftAlone);
    assert!(
        !plan.receipt && steps(&plan).is_empty(),
        "{:?}",
        steps(&plan)
    );

    // Once klaud recorded validated itself, a later failure may redraft and close it.
    let mut validated = pending;
    validated.outcome = Some(Outcome::Validated);
    let plan = decide(&request(Outcome::Failed), &validated, &facts, &policy);
    assert!(
        steps(&plan).contains(&"close #3".to_string()),
        "{:?}",
        steps(&plan)
    );
}

fn issue(open: Read<bool>) -> Option<IssueFact> {
    Some(IssueFact { number: 40, open })
}

#[test]
fn a_validated_issue_candidate_links_its_issue_and_comments_on_it() {
    let policy = inferencex_policy();
    let mut facts = draft_facts();
    facts.branch_runs = Some(Ok(vec![sweep("success")]));
    facts.issue = issue(Ok(true));
    let plan = decide(&request(Outcome::Validated), &session(), &facts, &policy);
    assert_eq!(
        steps(&plan),
        [
            "set status label klaud-finished on #3",
            "mark #3 ready for review",
            "link #3 to issue #40 (Closes #40)"
        ]
    );
    let group = plan.issue_comment_group("text".into()).unwrap();
    assert_eq!(group.pull_request_check, None, "rests on no pull request");
    assert_eq!(
        group.actions[0].to_string(),
        "post or refresh klaud's comment on issue #40"
    );
}

#[test]
fn an_issue_closed_by_anything_but_its_merge_retires_the_candidate() {
    let policy = inferencex_policy();
    let mut facts = draft_facts();
    facts.issue = issue(Ok(false));
    let plan = decide(&request(Outcome::Validated), &session(), &facts, &policy);
    assert_eq!(plan.outcome, Outcome::Retired);
    assert_eq!(
        steps(&plan),
        [
            "set status label klaud-retired on #3",
            "close #3",
            "delete branch klaud/auto-a (if still at 0123456)",
        ]
    );
    assert!(
        plan.reason.starts_with("its issue was closed"),
        "{}",
        plan.reason
    );
    // Parking does not keep it either.
    let mut parked = request(Outcome::Failed);
    parked.park = true;
    assert_eq!(
        decide(&parked, &session(), &facts, &policy).outcome,
        Outcome::Retired
    );
    // Closed by the merge of its pull request: not retired.
    facts.pull.as_mut().unwrap().merged = true;
    facts.pull.as_mut().unwrap().open = false;
    let plan = decide(&request(Outcome::Validated), &session(), &facts, &policy);
    assert_eq!(plan.outcome, Outcome::Validated);
    assert_eq!(plan.cleanup, Cleanup::Untouched);
    // An issue that could not be read is not taken as closed.
    let mut facts = draft_facts();
    facts.issue = issue(Err("HTTP 502".into()));
    let plan = decide(&request(Outcome::Failed), &session(), &facts, &policy);
    assert_eq!(plan.outcome, Outcome::Failed);
}

#[test]
fn a_retired_issue_candidates_ready_pull_request_is_left_to_the_maintainers() {
    let policy = inferencex_policy();
    let mut facts = draft_facts();
    facts.pull.as_mut().unwrap().draft = false;
    facts.issue = issue(Ok(false));
    let mut validated = session();
    validated.outcome = Some(Outcome::Validated);
    let plan = decide(&request(Outcome::Failed), &validated, &facts, &policy);
    assert_eq!(plan.outcome, Outcome::Retired);
    assert_eq!(plan.cleanup, Cleanup::Untouched);
    assert!(steps(&plan).is_empty());
}

#[test]
fn without_a_sweep_workflow_validated_needs_no_sweep() {
    let mut policy = inferencex_policy();
    policy.sweep_workflow = None;
    let plan = decide(
        &request(Outcome::Validated),
        &session(),
        &draft_facts(),
        &policy,
    );
    assert_eq!(plan.cleanup, Cleanup::Done);
    assert_eq!(
        steps(&plan),
        [
            "set status label klaud-finished on #3",
            "mark #3 ready for review"
        ]
    );
}

/// The session with attempt 1 adopted by this job (run 70), its deadline at 6 o'clock, one of
/// three jobs taken.
fn adopted_by_this_job() -> Session {
    let mut adopted = session();
    adopted.attempts.push(crate::core::ledger::Attempt {
        number: 1,
        run: 70,
        adopted_at: at(1),
        deadline: at(6),
        ended_at: None,
        end: None,
        runs: Vec::new(),
        notes: Vec::new(),
        notes_folded: 0,
        agent: None,
    });
    adopted
}

fn stopped_on_budget(cost_usd: f64) -> AgentRecord {
    AgentRecord {
        cost_usd: Some(cost_usd),
        turns: Some(4),
        subtype: Some("error_max_budget_usd".into()),
        is_error: Some(true),
        ..AgentRecord::default()
    }
}

#[test]
fn a_run_stopped_on_its_cap_ends_no_outcome_for_budget_with_its_cost_never_parked() {
    let policy = inferencex_policy();
    let open = adopted_by_this_job();
    let agent = stopped_on_budget(2.5);
    // Past its deadline with jobs left, a failed step without an outcome would be parked.
    let ending = job_ending(&open, 70, true, false, Some(&agent), policy.session, at(7));
    assert_eq!(
        ending,
        JobEnding::BudgetStop {
            cost_usd: Some(2.5)
        }
    );
    assert!(!ending.park(false));
    assert!(!ending.park(true), "not even when the workflow asks");
    assert_eq!(ending.reason_code(), Some("budget"));
    let finishing = FinishRequest {
        park: ending.park(false),
        attempt_end: ending.attempt_end(),
        agent: Some(agent.clone()),
        ..request(Outcome::NoOutcome)
    };
    let plan = decide(&finishing, &open, &draft_facts(), &policy);
    assert_eq!(plan.outcome, Outcome::NoOutcome);
    assert_eq!(plan.cleanup, Cleanup::Done);
    assert!(
        steps(&plan).iter().any(|step| step == "close #3"),
        "{plan:?}"
    );

    let mut ledger = Ledger::empty();
    ledger.sessions.push(open);
    let next = record(&ledger, &plan, &finishing, at(7)).unwrap();
    let finished = &next.sessions[0];
    assert_eq!(finished.state, SessionState::Finished);
    assert_eq!(finished.outcome, Some(Outcome::NoOutcome));
    assert_eq!(finished.attempts[0].end, Some(AttemptEnd::Finished));
    assert_eq!(finished.attempts[0].agent, Some(agent));
    assert_eq!(
        crate::core::cost::recorded_cost_since(&next, at(0)),
        2.5,
        "its cost counts against the day"
    );
}

#[test]
fn only_the_budget_subtype_without_an_outcome_is_a_budget_stop() {
    let policy = inferencex_policy();
    let open = adopted_by_this_job();
    let ran_out = AgentRecord {
        subtype: Some("error_during_execution".into()),
        ..stopped_on_budget(1.0)
    };
    let ending = job_ending(
        &open,
        70,
        true,
        false,
        Some(&ran_out),
        policy.session,
        at(7),
    );
    assert_eq!(
        ending,
        JobEnding::Deadline(DeadlineVerdict::Park {
            attempt: 1,
            max_attempts: policy.session.max_attempts
        })
    );
    assert!(ending.park(false));
    assert_eq!(ending.attempt_end(), AttemptEnd::TimeRanOut);
    assert_eq!(ending.reason_code(), None);
    // An outcome written before the cap stopped the run is the session's outcome.
    let reported = job_ending(
        &open,
        70,
        true,
        true,
        Some(&stopped_on_budget(1.0)),
        policy.session,
        at(7),
    );
    assert_eq!(reported, JobEnding::Deadline(DeadlineVerdict::NotReached));
    assert!(!reported.park(false));
    assert_eq!(reported.reason_code(), None);
}

/// An after-care session of `kind` on pull request 3, started by recover at `HEAD`.
fn aftercare_session(kind: crate::core::aftercare::SessionKind) -> Session {
    Session {
        kind,
        aftercare: Some(crate::core::aftercare::AftercareWork {
            pull_request: 3,
            head_sha: HEAD.into(),
            failed: Vec::new(),
        }),
        ..session()
    }
}

/// The ledger with `open` live and pull request 3 watched since it was validated at hour 0.
fn watched_ledger(open: &Session) -> Ledger {
    let mut ledger = Ledger::empty();
    ledger.sessions.push(open.clone());
    ledger.record_validated("a", "f", 3, Some("old-head"), at(0));
    ledger.aftercare[0].sessions_used = 1;
    ledger
}

/// The facts of the after-care pull request: a draft again (or `ready`), at `HEAD`.
fn aftercare_facts(draft: bool) -> FinishFacts {
    let mut facts = draft_facts();
    let pull = facts.pull.as_mut().unwrap();
    pull.draft = draft;
    pull.labels = vec!["klaud-in-progress".into(), "sweep-enabled".into()];
    facts
}

#[test]
fn a_validated_session_of_any_kind_makes_its_pull_request_watched_at_its_head() {
    use crate::core::aftercare::{AftercareState, SessionKind};
    let policy = inferencex_policy();
    let mut facts = draft_facts();
    facts.branch_runs = Some(Ok(vec![sweep("success")]));
    let mut ledger = Ledger::empty();
    ledger.sessions.push(session());
    let plan = decide(&request(Outcome::Validated), &session(), &facts, &policy);
    assert_eq!(
        plan.aftercare,
        AftercareEnding::Watched { head: HEAD.into() }
    );
    let next = record(&ledger, &plan, &request(Outcome::Validated), at(5)).unwrap();
    let watched = next.aftercare_of(3).unwrap();
    assert_eq!(
        (watched.candidate.as_str(), watched.family.as_str()),
        ("a", "f")
    );
    assert_eq!(watched.validated_head.as_deref(), Some(HEAD));
    assert_eq!(watched.state, AftercareState::Watched);

    for kind in [SessionKind::Refresh, SessionKind::Repair] {
        let open = aftercare_session(kind);
        let mut facts = aftercare_facts(true);
        facts.branch_runs = Some(Ok(vec![sweep("success")]));
        let plan = decide(&request(Outcome::Validated), &open, &facts, &policy);
        assert_eq!(
            steps(&plan),
            [
                "set status label klaud-finished on #3",
                "mark #3 ready for review"
            ],
            "{kind}: ready again, its sweep label kept"
        );
        let mut ledger = watched_ledger(&open);
        ledger.aftercare[0].state = AftercareState::NeedsMaintainer {
            since: at(0),
            because: crate::core::aftercare::NeedsMaintainerBecause::SessionsUsedUp { used: 1 },
        };
        let next = record(&ledger, &plan, &request(Outcome::Validated), at(5)).unwrap();
        let watched = next.aftercare_of(3).unwrap();
        assert_eq!(watched.state, AftercareState::Watched, "{kind}");
        assert_eq!(watched.validated_head.as_deref(), Some(HEAD));
        assert_eq!((watched.validated_at, watched.sessions_used), (at(5), 1));
        assert_eq!(next.sessions[0].outcome, Some(Outcome::Validated));
    }
}

#[test]
fn an_aftercare_session_ending_otherwise_leaves_an_open_draft_with_its_branch_to_a_maintainer() {
    use crate::core::aftercare::{AftercareState, NeedsMaintainerBecause, SessionKind};
    let policy = inferencex_policy();
    let open = aftercare_session(SessionKind::Repair);
    for outcome in [
        Outcome::Failed,
        Outcome::NoOutcome,
        Outcome::Inconclusive,
        Outcome::NoCapacity,
    ] {
        let mut facts = aftercare_facts(true);
        let mut running = sweep("success");
        running.active = true;
        running.conclusion = None;
        facts.branch_runs = Some(Ok(vec![running]));
        let plan = decide(&request(outcome), &open, &facts, &policy);
        assert_eq!(plan.cleanup, Cleanup::Done);
        assert!(plan.receipt);
        assert_eq!(
            steps(&plan),
            ["set status label klaud-needs-maintainer on #3"],
            "{outcome}: not closed, no branch deleted, its runs and sweep label kept"
        );
        assert_eq!(plan.aftercare, AftercareEnding::NeedsMaintainer);
        let next = record(&watched_ledger(&open), &plan, &request(outcome), at(5)).unwrap();
        assert_eq!(
            next.aftercare_of(3).unwrap().state,
            AftercareState::NeedsMaintainer {
                since: at(5),
                because: NeedsMaintainerBecause::Ended(outcome)
            }
        );
        assert_eq!(next.sessions[0].outcome, Some(outcome));
    }

    // A pull request still ready (its draft conversion failed when the session started) is
    // made a draft again; it is never left alone for want of a validated record.
    let plan = decide(
        &request(Outcome::Failed),
        &aftercare_session(SessionKind::Refresh),
        &aftercare_facts(false),
        &policy,
    );
    assert_eq!(
        steps(&plan),
        [
            "set status label klaud-needs-maintainer on #3",
            "convert #3 to a draft"
        ]
    );
    assert_eq!(
        plan.reason,
        "after-care ended failed: #3 stays open as a draft with its branch and waits for a maintainer"
    );
}

#[test]
fn an_aftercare_session_out_of_time_in_its_last_job_waits_for_a_maintainer_and_one_with_jobs_left_is_parked()
 {
    use crate::core::aftercare::SessionKind;
    let policy = inferencex_policy();
    let open = aftercare_session(SessionKind::Refresh);
    let ending = JobEnding::Deadline(DeadlineVerdict::OutOfAttempts { attempts: 3 });
    let last_job = FinishRequest {
        park: ending.park(false),
        attempt_end: ending.attempt_end(),
        ..request(Outcome::NoOutcome)
    };
    let plan = decide(&last_job, &open, &aftercare_facts(true), &policy);
    assert_eq!(plan.aftercare, AftercareEnding::NeedsMaintainer);
    assert_eq!(
        steps(&plan),
        ["set status label klaud-needs-maintainer on #3"]
    );
    let parking = FinishRequest {
        park: true,
        attempt_end: AttemptEnd::TimeRanOut,
        ..request(Outcome::NoOutcome)
    };
    let plan = decide(&parking, &open, &aftercare_facts(true), &policy);
    assert_eq!(plan.cleanup, Cleanup::Parked);
    assert_eq!(plan.aftercare, AftercareEnding::Unchanged);
    assert_eq!(steps(&plan), ["set status label klaud-parked on #3"]);
    let ledger = watched_ledger(&open);
    let next = record(&ledger, &plan, &parking, at(5)).unwrap();
    assert_eq!(
        next.aftercare, ledger.aftercare,
        "a parked session changes no record"
    );
}

#[test]
fn an_aftercare_pull_request_the_bot_closed_keeps_its_branch() {
    use crate::core::aftercare::SessionKind;
    let policy = inferencex_policy();
    let mut facts = aftercare_facts(true);
    facts.pull.as_mut().unwrap().open = false;
    facts.closed_by = Some(Ok(Some(BOT.into())));
    let open = aftercare_session(SessionKind::Repair);
    let plan = decide(&request(Outcome::Failed), &open, &facts, &policy);
    assert!(
        !steps(&plan)
            .iter()
            .any(|step| step.starts_with("delete branch")),
        "{:?}",
        steps(&plan)
    );
    assert!(
        plan.reason
            .ends_with("after-care deletes no branch when its session ends")
    );
    let propose = decide(&request(Outcome::Failed), &session(), &facts, &policy);
    assert!(
        steps(&propose)
            .iter()
            .any(|step| step.starts_with("delete branch")),
        "a propose session's branch goes as before"
    );
}
