//! After-care in `recover` (contract §12) on small worlds: a validated pull request whose base
//! moved or whose checks failed gets one refresh or repair session, started only when nothing
//! forbids it (each refusal said); a guard that fails leaves it for good with nothing written;
//! a pull request that waits for a maintainer is never swept; a superseded one is closed; and an
//! after-care session whose job died never has its pull request closed.

use super::*;
use crate::core::aftercare::{
    AftercareState, AftercareWork, FailedJob, NeedsMaintainerBecause, SessionKind,
};
use crate::core::github_state::{CheckConclusion, CheckStatus, MergeStateStatus, Mergeable};
use crate::core::health::{Check, CheckRun, CheckWorkflowRun, PullRequestChecks};
use crate::core::recover::aftercare::AftercareDecided;
use crate::core::recover::aftercare::ledger::AftercareChange;

const NUMBER: u64 = 7;

fn check(name: &str, status: CheckStatus, conclusion: Option<CheckConclusion>) -> Check {
    Check::Run(CheckRun {
        name: name.into(),
        id: Some(900),
        status: status.clone(),
        conclusion: conclusion.clone(),
        url: Some(format!("https://github.test/acme/bench/runs/900#{name}")),
        workflow_run: Some(CheckWorkflowRun {
            id: 800,
            path: ".github/workflows/run-sweep.yml".into(),
            status,
            conclusion,
        }),
    })
}

fn passed() -> Check {
    check(
        "sweep (b200)",
        CheckStatus::Completed,
        Some(CheckConclusion::Success),
    )
}

fn failed() -> Check {
    check(
        "sweep (mi355x)",
        CheckStatus::Completed,
        Some(CheckConclusion::Failure),
    )
}

impl World {
    /// Candidate `a`'s ready pull request #7 by the bot, validated five hours ago at its head
    /// and watched, its finished session on record, its checks read as `checks` with
    /// `mergeable`; the default branch known.
    fn validated(mergeable: Mergeable, checks: Vec<Check>) -> World {
        let mut world = World::new();
        world.bot_draft("a", NUMBER);
        let pull = world.pull(NUMBER);
        pull.draft = false;
        pull.labels = vec!["klaud-finished".into()];
        let session = world.session("a", SessionState::Finished, FINISHED_PARENT, Some(NUMBER));
        session.outcome = Some(Outcome::Validated);
        let head = sha("a", "head");
        world
            .snapshot
            .ledger
            .record_validated("a", "family-a", NUMBER, Some(&head), hours_ago(5));
        world.snapshot.pull_request_checks = Some(Listed::complete(vec![PullRequestChecks {
            number: NUMBER,
            candidate: "a".into(),
            created_at: hours_ago(10),
            draft: false,
            head_sha: head,
            mergeable,
            merge_state: MergeStateStatus::Clean,
            checks: Listed::complete(checks),
        }]));
        world.snapshot.default_branch = Some(Ok("main".into()));
        world
    }

    fn record(&mut self) -> &mut crate::core::aftercare::AftercareRecord {
        self.snapshot.ledger.aftercare.last_mut().unwrap()
    }
}

fn aftercare_of(plan: &RecoveryPlan) -> &AftercareReport {
    plan.aftercare
        .iter()
        .find(|report| report.pull_request == NUMBER)
        .unwrap_or_else(|| panic!("no after-care report: {:#?}", plan.aftercare))
}

fn conflicting() -> World {
    World::validated(Mergeable::Conflicting, vec![passed()])
}

#[test]
fn a_passing_mergeable_pull_request_is_watched_and_nothing_is_written() {
    let world = World::validated(Mergeable::Mergeable, vec![passed()]);

    let plan = world.plan();

    let aftercare = aftercare_of(&plan);
    assert_eq!(
        aftercare.decided,
        AftercareDecided::Watched,
        "{aftercare:?}"
    );
    assert_eq!(report(&plan, "a").verdict, Verdict::LeftAlone);
    assert!(plan.groups.is_empty(), "klaud-finished is on it already");
    assert!(plan.ledger.aftercare.is_empty() && plan.ledger.aftercare_starts.is_empty());
}

#[test]
fn a_conflicting_pull_request_gets_one_refresh_session_started_as_a_resume_is() {
    let world = conflicting();

    let plan = world.plan();

    let aftercare = aftercare_of(&plan);
    assert_eq!(
        aftercare.decided,
        AftercareDecided::Started,
        "{aftercare:?}"
    );
    assert_eq!(aftercare.kind, Some(SessionKind::Refresh));
    assert!(
        aftercare.reason.contains("conflicts with its base"),
        "{aftercare:?}"
    );
    assert_eq!(report(&plan, "a").verdict, Verdict::Live);
    assert_eq!(
        actions(&plan, "a"),
        [
            "dispatch klaud-candidate.yml on main for candidate a",
            "set status label klaud-in-progress on #7",
        ]
    );
    let group = &plan.groups[report(&plan, "a").group.unwrap()];
    assert_eq!(
        group.ledger_expectation,
        LedgerExpectation::AftercareStartedByThisPass
    );
    assert!(!group.destructive);
    let check = group.pull_request_check.as_ref().unwrap();
    assert_eq!(
        (check.head_sha.as_deref(), check.draft, check.open),
        (Some(sha("a", "head").as_str()), Some(false), true)
    );
    let [start] = plan.ledger.aftercare_starts.as_slice() else {
        panic!("one start: {:?}", plan.ledger.aftercare_starts)
    };
    assert_eq!(
        start.work,
        AftercareWork {
            pull_request: NUMBER,
            head_sha: sha("a", "head"),
            failed: Vec::new(),
        }
    );
}

#[test]
fn the_start_is_made_in_the_first_write_once_and_taken_back_when_its_run_did_not_start() {
    let world = conflicting();
    let plan = world.plan();

    let (written, grants, message) =
        decide_first_write(&world.snapshot.ledger, &plan, &write_settings());

    let written = written.expect("the start is written");
    assert!(
        message.contains("started a refresh session of a (#7)"),
        "{message}"
    );
    assert_eq!(grants.aftercare_started.len(), 1);
    assert_eq!(grants.groups_cleared, [true]);
    let session = written
        .sessions
        .iter()
        .find(|session| session.state == SessionState::Live)
        .expect("a live session");
    assert_eq!(
        (session.kind, session.parent_run, session.pull_request),
        (SessionKind::Refresh, OWN_RUN, Some(NUMBER))
    );
    assert_eq!(session.resuming.as_ref().unwrap().by_run, OWN_RUN);
    assert_eq!(
        session.aftercare.as_ref().unwrap().head_sha,
        sha("a", "head")
    );
    assert!(
        written
            .claims
            .iter()
            .any(|claim| claim.family == "family-a")
    );
    let record = written.aftercare_of(NUMBER).unwrap();
    assert_eq!(
        (record.sessions_used, record.last_started_at),
        (1, Some(now()))
    );

    // Another pass that decided the same start meets this ledger: it starts nothing more.
    let (again, grants_again, _) = decide_first_write(&written, &plan, &write_settings());
    assert_eq!(again, None);
    assert!(grants_again.aftercare_started.is_empty());
    assert_eq!(grants_again.refused_starts.len(), 1);
    assert_eq!(grants_again.groups_cleared, [false]);

    // The dispatch failed: the session, its claim and the count are taken back.
    let (last, message) = decide_second_write(
        &written,
        OWN_RUN,
        &[],
        (&[], &grants.aftercare_started),
        None,
    );
    let last = last.expect("taken back");
    assert!(message.contains("taken back"), "{message}");
    assert!(last.live_sessions().next().is_none());
    assert!(last.claims.is_empty());
    let record = last.aftercare_of(NUMBER).unwrap();
    assert_eq!((record.sessions_used, record.last_started_at), (0, None));
}

#[test]
fn failing_checks_start_a_repair_that_carries_the_failed_jobs() {
    let world = World::validated(Mergeable::Mergeable, vec![passed(), failed()]);

    let plan = world.plan();

    assert_eq!(aftercare_of(&plan).kind, Some(SessionKind::Repair));
    let [start] = plan.ledger.aftercare_starts.as_slice() else {
        panic!("one start")
    };
    assert_eq!(
        start.work.failed,
        [FailedJob {
            name: "sweep (mi355x)".into(),
            run_id: Some(800),
            job_id: Some(900),
            url: Some("https://github.test/acme/bench/runs/900#sweep (mi355x)".into()),
            conclusion: Some(CheckConclusion::Failure),
        }]
    );
}

#[test]
fn unknown_mergeability_and_a_check_still_running_start_nothing_and_say_why() {
    let running = check("sweep (h100)", CheckStatus::InProgress, None);
    for (world, why) in [
        (
            World::validated(Mergeable::Unknown, vec![failed()]),
            "GitHub has not computed its mergeability yet",
        ),
        (
            World::validated(Mergeable::Mergeable, vec![failed(), running]),
            "a check failed and another is still running",
        ),
    ] {
        let plan = world.plan();

        let aftercare = aftercare_of(&plan);
        assert_eq!(aftercare.decided, AftercareDecided::Waits, "{aftercare:?}");
        assert!(aftercare.reason.contains(why), "{aftercare:?}");
        assert!(plan.ledger.aftercare_starts.is_empty());
        assert!(plan.groups.is_empty());
    }
}

#[test]
fn a_full_cap_a_spent_budget_and_the_pause_each_start_nothing_with_the_reason() {
    let mut full = conflicting();
    full.policy.max_candidates = 1;
    full.session("b", SessionState::Live, RUNNING_PARENT, None);
    full.snapshot
        .runs
        .insert(RUNNING_PARENT, Ok(RunState::Active));

    let mut spent = conflicting();
    spent.policy.daily_budget_usd = Some(1.0);
    spent.snapshot.ledger.sessions[0]
        .unadopted_jobs
        .push(crate::core::ledger::UnadoptedJob {
            run: 5,
            run_attempt: 1,
            ended_at: hours_ago(2),
            agent: crate::core::execution::AgentRecord {
                cost_usd: Some(2.0),
                ..Default::default()
            },
        });

    let mut paused = conflicting();
    paused.snapshot.ledger.steering.paused = Some(crate::core::steering::Mark {
        by: MAINTAINER.into(),
        at: hours_ago(1),
    });

    for (world, why) in [
        (full, "no room under the cap of 1"),
        (spent, "budget-exhausted: $2.00 recorded"),
        (
            paused,
            "paused: the dashboard's pause is ticked (by maintainer-ada)",
        ),
    ] {
        let plan = world.plan();

        let aftercare = aftercare_of(&plan);
        assert_eq!(aftercare.decided, AftercareDecided::NotStarted, "{why}");
        assert!(aftercare.reason.contains(why), "{aftercare:?}");
        assert!(plan.ledger.aftercare_starts.is_empty(), "{why}");
        assert!(
            actions(&plan, "a").is_empty(),
            "{why}: it keeps klaud-finished"
        );
        let needs = details_needed(&world.snapshot, &world.policy, &context());
        assert!(needs.is_empty(), "{why}: nothing is read for it: {needs:?}");
    }
}

#[test]
fn a_parked_session_takes_the_room_before_an_after_care_start() {
    let mut world = conflicting();
    world.policy.max_candidates = 1;
    world.bot_draft("p", 20);
    world.pull(20).labels = vec!["klaud-parked".into()];
    world.session("p", SessionState::Parked, FINISHED_PARENT, Some(20));

    let plan = world.plan();

    assert_eq!(plan.with_verdict(Verdict::Resumed), ["p"]);
    assert_eq!(aftercare_of(&plan).decided, AftercareDecided::NotStarted);
}

#[test]
fn one_session_per_family_an_open_session_of_the_family_starts_nothing() {
    let mut world = conflicting();
    world
        .session("b", SessionState::Live, RUNNING_PARENT, None)
        .family = "family-a".into();
    world
        .snapshot
        .runs
        .insert(RUNNING_PARENT, Ok(RunState::Active));

    let plan = world.plan();

    let aftercare = aftercare_of(&plan);
    assert_eq!(aftercare.decided, AftercareDecided::NotStarted);
    assert!(
        aftercare.reason.contains("one session per family"),
        "{aftercare:?}"
    );
}

#[test]
fn a_maintainer_commit_a_handoff_label_and_a_foreign_sweep_leave_it_for_good_with_nothing_written()
{
    let mut commit = conflicting();
    commit.snapshot.commits.insert(
        NUMBER,
        Ok(CommitsFact {
            commits: vec![
                super::commit("below", MAINTAINER),
                super::commit(&sha("a", "head"), BOT),
            ],
            complete: true,
        }),
    );

    let mut handoff = conflicting();
    handoff.pull(NUMBER).labels.push("klaud-handoff".into());

    let mut sweep = conflicting();
    let mut foreign = run(61, "run-sweep.yml", &branch("a"), MAINTAINER, false);
    foreign.created_at = hours_ago(2);
    sweep.sweep("a", foreign);

    for (world, why) in [
        (commit, "has a commit by maintainer-ada"),
        (handoff, "handed off to maintainers (klaud-handoff)"),
        (
            sweep,
            "was started by maintainer-ada after it was validated",
        ),
    ] {
        let plan = world.plan();

        let aftercare = aftercare_of(&plan);
        assert_eq!(aftercare.decided, AftercareDecided::Left, "{why}");
        assert!(aftercare.reason.contains(why), "{aftercare:?}");
        assert!(plan.groups.is_empty(), "{why}: nothing written on GitHub");
        assert!(plan.ledger.aftercare_starts.is_empty());
        assert!(matches!(
            plan.ledger.aftercare.as_slice(),
            [AftercareChange::Leave {
                pull_request: NUMBER,
                ..
            }]
        ));
        assert_eq!(report(&plan, "a").verdict, Verdict::LeftAlone);

        let (written, _, _) = decide_first_write(&world.snapshot.ledger, &plan, &write_settings());
        let written = written.expect("left for good");
        assert!(matches!(
            written.aftercare_of(NUMBER).unwrap().state,
            AftercareState::Left { .. }
        ));
        let mut next = World::validated(Mergeable::Conflicting, vec![passed()]);
        next.snapshot.ledger = written;
        let later = next.plan();
        assert_eq!(aftercare_of(&later).decided, AftercareDecided::LeftEarlier);
        assert!(later.groups.is_empty() && later.ledger.aftercare.is_empty());
    }
}

#[test]
fn a_head_moved_from_the_validated_one_by_a_maintainer_leaves_it_for_good() {
    let mut world = World::validated(Mergeable::Mergeable, vec![passed()]);
    let moved = sha("a", "moved");
    world.pull(NUMBER).head_sha = moved.clone();
    world.snapshot.commits.insert(
        NUMBER,
        Ok(CommitsFact {
            commits: vec![
                super::commit(&sha("a", "head"), BOT),
                super::commit(&moved, MAINTAINER),
            ],
            complete: true,
        }),
    );

    let plan = world.plan();

    let aftercare = aftercare_of(&plan);
    assert_eq!(aftercare.decided, AftercareDecided::Left, "{aftercare:?}");
    assert!(
        aftercare
            .reason
            .contains("its head moved from the validated"),
        "{aftercare:?}"
    );
    assert!(plan.groups.is_empty());
}

#[test]
fn a_pull_request_no_longer_open_drops_its_record_only_on_a_whole_listing() {
    let mut world = conflicting();
    world.snapshot.open_pull_requests.items.clear();

    let plan = world.plan();
    assert_eq!(aftercare_of(&plan).decided, AftercareDecided::Dropped);
    assert_eq!(
        plan.ledger.aftercare,
        [AftercareChange::Drop {
            pull_request: NUMBER
        }]
    );
    let (written, _, _) = decide_first_write(&world.snapshot.ledger, &plan, &write_settings());
    assert!(written.unwrap().aftercare.is_empty());

    world.snapshot.open_pull_requests.gap = Some("a query failed".into());
    let plan = world.plan();
    assert_eq!(aftercare_of(&plan).decided, AftercareDecided::Skipped);
    assert!(plan.ledger.aftercare.is_empty());
}

#[test]
fn sessions_used_up_wait_for_a_maintainer_with_the_label() {
    let mut world = conflicting();
    world.record().sessions_used = 2;

    let plan = world.plan();

    let aftercare = aftercare_of(&plan);
    assert_eq!(aftercare.decided, AftercareDecided::NeedsMaintainer);
    assert_eq!(
        plan.ledger.aftercare,
        [AftercareChange::SessionsUsedUp {
            pull_request: NUMBER,
            used: 2
        }]
    );
    assert_eq!(
        actions(&plan, "a"),
        ["set status label klaud-needs-maintainer on #7"]
    );
    let (written, _, _) = decide_first_write(&world.snapshot.ledger, &plan, &write_settings());
    assert_eq!(
        written.unwrap().aftercare_of(NUMBER).unwrap().state,
        AftercareState::NeedsMaintainer {
            since: now(),
            because: NeedsMaintainerBecause::SessionsUsedUp { used: 2 },
        }
    );
}

#[test]
fn a_draft_waiting_for_a_maintainer_is_never_swept() {
    let mut world = conflicting();
    world.pull(NUMBER).draft = true;
    world.pull(NUMBER).labels = vec!["klaud-needs-maintainer".into()];
    world
        .session("a", SessionState::Finished, FINISHED_PARENT, Some(NUMBER))
        .outcome = Some(Outcome::Failed);
    world.record().state = AftercareState::NeedsMaintainer {
        since: hours_ago(1),
        because: NeedsMaintainerBecause::Ended(Outcome::Failed),
    };

    let plan = world.plan();

    assert_eq!(
        aftercare_of(&plan).decided,
        AftercareDecided::NeedsMaintainer
    );
    let verdict = report(&plan, "a");
    assert_eq!(verdict.verdict, Verdict::LeftAlone, "{}", verdict.reason);
    assert!(plan.groups.is_empty(), "not closed, nothing to relabel");
}

#[test]
fn a_draft_its_failed_after_care_session_left_gets_the_session_retry_after_care_granted() {
    let mut world = conflicting();
    world.pull(NUMBER).draft = true;
    world.pull(NUMBER).labels = vec!["klaud-needs-maintainer".into()];
    world
        .session("a", SessionState::Finished, FINISHED_PARENT, Some(NUMBER))
        .outcome = Some(Outcome::Failed);
    let record = world.record();
    record.validated_at = hours_ago(30);
    record.sessions_used = 1;
    record.last_started_at = Some(hours_ago(8));
    record.state = AftercareState::NeedsMaintainer {
        since: hours_ago(7),
        because: NeedsMaintainerBecause::Ended(Outcome::Failed),
    };
    assert!(world.snapshot.ledger.grant_aftercare_session(NUMBER));

    let plan = world.plan();

    let aftercare = aftercare_of(&plan);
    assert_eq!(
        aftercare.decided,
        AftercareDecided::Started,
        "{aftercare:?}"
    );
    assert_eq!(aftercare.kind, Some(SessionKind::Refresh));
    let group = &plan.groups[report(&plan, "a").group.unwrap()];
    assert_eq!(group.pull_request_check.as_ref().unwrap().draft, Some(true));

    // A draft someone else made of a pull request validated since its last after-care session
    // still waits until it is ready.
    let mut world = conflicting();
    world.pull(NUMBER).draft = true;
    let record = world.record();
    record.sessions_used = 1;
    record.last_started_at = Some(hours_ago(8));

    let plan = world.plan();

    assert_eq!(aftercare_of(&plan).decided, AftercareDecided::Skipped);
    assert!(plan.ledger.aftercare_starts.is_empty());
}

#[test]
fn a_superseded_pull_request_is_closed_with_the_note_and_its_branch_deleted() {
    let mut world = World::validated(Mergeable::Mergeable, vec![passed()]);
    world.record().state = AftercareState::Superseded {
        since: hours_ago(1),
        by: 12,
    };

    let plan = world.plan();

    assert_eq!(aftercare_of(&plan).decided, AftercareDecided::Closed);
    assert_eq!(report(&plan, "a").verdict, Verdict::Swept);
    assert_eq!(
        actions(&plan, "a"),
        [
            "post or refresh the superseded note on #7",
            "remove the status labels of #7",
            "close #7",
            "delete branch klaud/auto-a (if still at a-head-)",
        ]
    );
    assert!(plan.groups[0].destructive);
    assert_eq!(
        plan.groups[0].ledger_expectation,
        LedgerExpectation::NoOpenSession
    );
}

#[test]
fn nothing_in_after_care_asks_for_nothing_more() {
    let mut world = World::validated(Mergeable::Conflicting, vec![passed()]);
    let commits = world.snapshot.commits.clone();
    let sweeps = world.snapshot.sweeps.clone();
    world.snapshot.commits.clear();
    world.snapshot.sweeps.clear();
    world.snapshot.default_branch = None;
    let asked = |world: &World| details_needed(&world.snapshot, &world.policy, &context());
    assert_eq!(
        asked(&world).commits.len(),
        1,
        "a start reads its commits first"
    );
    world.snapshot.commits = commits;
    assert_eq!(
        asked(&world).sweeps.len(),
        1,
        "then the sweeps of its branch"
    );
    world.snapshot.sweeps = sweeps;
    assert!(
        asked(&world).default_branch,
        "then the branch to dispatch on"
    );

    world.snapshot.ledger.aftercare.clear();
    world.snapshot.pull_request_checks = None;
    world.snapshot.commits.clear();
    world.snapshot.sweeps.clear();
    let asked = asked(&world);
    assert!(asked.is_empty(), "{asked:?}");
}

/// An after-care session of `a` whose job died after `session` redrafted #7: its parent ended,
/// its one attempt used up the jobs it may take.
fn died_after_care_session(max_attempts: u32) -> World {
    let mut world = conflicting();
    world.policy.session.max_attempts = max_attempts;
    world.pull(NUMBER).draft = true;
    world.pull(NUMBER).labels = vec!["klaud-in-progress".into()];
    let session = world.session("a", SessionState::Live, FINISHED_PARENT, Some(NUMBER));
    session.kind = SessionKind::Refresh;
    session.aftercare = Some(AftercareWork {
        pull_request: NUMBER,
        head_sha: sha("a", "head"),
        failed: Vec::new(),
    });
    session.attempts.push(crate::core::ledger::Attempt {
        number: 1,
        run: 71,
        adopted_at: hours_ago(7),
        deadline: hours_ago(2),
        ended_at: None,
        end: None,
        runs: Vec::new(),
        notes: Vec::new(),
        notes_folded: 0,
        agent: None,
    });
    world.claim("a", FINISHED_PARENT);
    world.record().sessions_used = 1;
    world
}

#[test]
fn an_after_care_session_whose_job_died_leaves_its_pull_request_open_waiting_for_a_maintainer() {
    let world = died_after_care_session(1);

    let plan = world.plan();

    let verdict = report(&plan, "a");
    assert_eq!(verdict.verdict, Verdict::Reconciled, "{}", verdict.reason);
    assert_eq!(verdict.outcome, Some(Outcome::NoOutcome));
    assert_eq!(
        actions(&plan, "a"),
        ["set status label klaud-needs-maintainer on #7"],
        "never closed, its branch never deleted"
    );
    assert_eq!(aftercare_of(&plan).decided, AftercareDecided::SessionOpen);
    let (written, _, _) = decide_first_write(&world.snapshot.ledger, &plan, &write_settings());
    let written = written.unwrap();
    assert_eq!(
        written.aftercare_of(NUMBER).unwrap().state,
        AftercareState::NeedsMaintainer {
            since: now(),
            because: NeedsMaintainerBecause::Ended(Outcome::NoOutcome),
        }
    );
}

#[test]
fn an_after_care_session_whose_job_died_before_session_redrafted_it_leaves_a_draft() {
    let mut world = died_after_care_session(1);
    world.pull(NUMBER).draft = false;
    world.pull(NUMBER).labels = vec!["klaud-finished".into()];

    let plan = world.plan();

    assert_eq!(report(&plan, "a").outcome, Some(Outcome::NoOutcome));
    assert_eq!(
        actions(&plan, "a"),
        [
            "set status label klaud-needs-maintainer on #7",
            "convert #7 to a draft"
        ],
        "a draft waiting for a maintainer, never closed"
    );
}

#[test]
fn an_after_care_session_with_jobs_left_is_parked_and_one_validated_on_its_new_head_is_watched_again()
 {
    let world = died_after_care_session(3);
    let plan = world.plan();
    assert_eq!(report(&plan, "a").verdict, Verdict::Parked);

    let mut world = died_after_care_session(1);
    let pushed = sha("a", "pushed");
    world.pull(NUMBER).head_sha = pushed.clone();
    world.snapshot.commits.insert(
        NUMBER,
        Ok(CommitsFact {
            commits: vec![
                super::commit(&sha("a", "head"), BOT),
                super::commit(&pushed, BOT),
            ],
            complete: true,
        }),
    );
    let mut sweep = run(62, "run-sweep.yml", &branch("a"), BOT, false);
    sweep.head_sha = pushed.clone();
    world.sweep("a", sweep);

    let plan = world.plan();

    assert_eq!(report(&plan, "a").outcome, Some(Outcome::Validated));
    assert_eq!(
        actions(&plan, "a"),
        [
            "set status label klaud-finished on #7",
            "mark #7 ready for review"
        ]
    );
    let (written, _, _) = decide_first_write(&world.snapshot.ledger, &plan, &write_settings());
    let record = written.unwrap().aftercare_of(NUMBER).unwrap().clone();
    assert_eq!(record.state, AftercareState::Watched);
    assert_eq!(record.validated_head, Some(pushed));
    assert_eq!(record.sessions_used, 1);
}
