//! Candidates that came from an issue (contract §13): a parked session whose issue was closed
//! ends `retired` instead of being resumed, and an abandoned draft of such a candidate is swept
//! as `retired`; an issue that is open, or could not be read, changes nothing.

use super::*;

/// The issue candidate `id` came from, as the pass read it.
fn issue_read(world: &mut World, id: &str, read: Result<CandidateIssue, &str>) {
    world.snapshot.candidate_issues.insert(
        id.into(),
        read.map_err(|error| crate::core::snapshot::ReadFailure::new(error.to_string())),
    );
}

/// A parked session of `issue-5` with its draft #20, labelled parked; the default branch read.
fn parked_issue_candidate() -> World {
    let mut world = World::new();
    world.bot_draft("issue-5", 20);
    world.pull(20).labels = vec!["klaud-parked".into()];
    world.session("issue-5", SessionState::Parked, FINISHED_PARENT, Some(20));
    world.claim("issue-5", FINISHED_PARENT);
    world.snapshot.default_branch = Some(Ok("main".into()));
    world
}

#[test]
fn a_parked_session_whose_issue_was_closed_is_retired_not_resumed() {
    let mut world = parked_issue_candidate();
    let unread = world.plan();
    assert_eq!(report(&unread, "issue-5").verdict, Verdict::Skipped);
    assert!(unread.ledger.resumes.is_empty(), "no resume on a guess");
    assert!(
        details_needed(&world.snapshot, &world.policy, &context())
            .candidate_issues
            .contains("issue-5")
    );

    issue_read(&mut world, "issue-5", Ok(CandidateIssue::Closed(5)));
    let plan = world.plan();

    let verdict = report(&plan, "issue-5");
    assert_eq!(verdict.verdict, Verdict::Reconciled, "{}", verdict.reason);
    assert_eq!(verdict.outcome, Some(Outcome::Retired));
    assert!(
        verdict
            .reason
            .contains("its issue #5 was closed, not by the merge of its pull request"),
        "{}",
        verdict.reason
    );
    assert_eq!(
        actions(&plan, "issue-5"),
        [
            "set status label klaud-retired on #20",
            "close #20",
            "delete branch klaud/auto-issue-5 (if still at issue-5)",
        ],
        "no dispatch: no agent starts"
    );
    assert!(plan.ledger.resumes.is_empty());
    assert_eq!(plan.ledger.outcomes.len(), 1);
    assert_eq!(plan.ledger.outcomes[0].session, SessionState::Parked);

    let (written, grants, _) = decide_first_write(&world.snapshot.ledger, &plan, &write_settings());
    let session = written.unwrap().sessions[0].clone();
    assert_eq!(session.state, SessionState::Finished);
    assert_eq!(session.outcome, Some(Outcome::Retired));
    assert!(grants.groups_cleared[verdict.group.unwrap()]);
}

#[test]
fn a_parked_session_whose_issue_is_open_or_unreadable_is_resumed_as_before() {
    for read in [Ok(CandidateIssue::Open(5)), Err("HTTP 502")] {
        let mut world = parked_issue_candidate();
        issue_read(&mut world, "issue-5", read);
        let plan = world.plan();
        assert_eq!(plan.with_verdict(Verdict::Resumed), ["issue-5"], "{read:?}");
        assert!(plan.ledger.outcomes.is_empty());
    }
}

#[test]
fn a_retired_parked_session_is_not_recorded_once_another_pass_resumed_it() {
    let mut world = parked_issue_candidate();
    issue_read(&mut world, "issue-5", Ok(CandidateIssue::Closed(5)));
    let plan = world.plan();
    let group = report(&plan, "issue-5").group.unwrap();

    let mut fresh = world.snapshot.ledger.clone();
    fresh.sessions[0].state = SessionState::Live;
    fresh.sessions[0].parent_run = OWN_RUN + 1;
    let (written, grants, _) = decide_first_write(&fresh, &plan, &write_settings());

    assert!(grants.recorded.is_empty());
    assert!(!grants.groups_cleared[group], "its draft is not touched");
    if let Some(written) = written {
        assert_eq!(written.sessions[0].state, SessionState::Live);
    }
}

#[test]
fn a_retired_parked_session_frees_no_room_under_the_cap() {
    let mut world = parked_issue_candidate();
    issue_read(&mut world, "issue-5", Ok(CandidateIssue::Closed(5)));
    world.policy.max_candidates = 1;
    world.running_planner(RUNNING_PARENT, &["Run candidate l0"]);
    world.session("l0", SessionState::Live, RUNNING_PARENT, None);
    world.bot_draft("p0", 21);
    world.session("p0", SessionState::Parked, FINISHED_PARENT, Some(21));

    let plan = world.plan();

    assert_eq!(
        report(&plan, "issue-5").outcome,
        Some(Outcome::Retired),
        "{}",
        report(&plan, "issue-5").reason
    );
    assert_eq!(plan.with_verdict(Verdict::Parked), ["p0"]);
    assert!(
        report(&plan, "p0").reason.contains("waiting for room"),
        "{}",
        report(&plan, "p0").reason
    );
}

#[test]
fn an_abandoned_draft_whose_issue_was_closed_is_swept_as_retired() {
    let mut world = World::new();
    world.bot_draft("issue-6", 30);
    let unread = world.plan();
    assert_eq!(report(&unread, "issue-6").verdict, Verdict::Skipped);
    assert!(actions(&unread, "issue-6").is_empty());

    issue_read(&mut world, "issue-6", Ok(CandidateIssue::Closed(6)));
    let plan = world.plan();

    let verdict = report(&plan, "issue-6");
    assert_eq!(verdict.verdict, Verdict::Swept, "{}", verdict.reason);
    assert_eq!(verdict.outcome, Some(Outcome::Retired));
    assert!(verdict.reason.contains("retired: its issue #6 was closed"));
    assert_eq!(
        actions(&plan, "issue-6"),
        [
            "set status label klaud-retired on #30",
            "close #30",
            "delete branch klaud/auto-issue-6 (if still at issue-6)",
        ]
    );
    let group = &plan.groups[verdict.group.unwrap()];
    assert_eq!(group.ledger_expectation, LedgerExpectation::NoOpenSession);
    assert_eq!(
        group.pull_request_check.as_ref().unwrap().draft,
        Some(true),
        "closed only while still the examined draft"
    );

    // Open, or unreadable: swept as before, no-outcome.
    for read in [Ok(CandidateIssue::Open(6)), Err("HTTP 502")] {
        issue_read(&mut world, "issue-6", read);
        let plan = world.plan();
        assert_eq!(report(&plan, "issue-6").outcome, None);
        assert_eq!(
            actions(&plan, "issue-6")[0],
            "set status label klaud-error on #30"
        );
    }
}

#[test]
fn an_abandoned_draft_whose_issue_was_closed_keeps_the_section_5_guards() {
    // A maintainer's commit: left alone, issue or not.
    let mut world = World::new();
    world.bot_draft("issue-6", 30);
    issue_read(&mut world, "issue-6", Ok(CandidateIssue::Closed(6)));
    world.snapshot.commits.insert(
        30,
        Ok(CommitsFact {
            commits: vec![
                commit("m1", MAINTAINER),
                commit(&sha("issue-6", "head"), BOT),
            ],
            complete: true,
        }),
    );
    let plan = world.plan();
    assert_eq!(report(&plan, "issue-6").verdict, Verdict::LeftAlone);
    assert!(actions(&plan, "issue-6").is_empty());

    // A ready pull request: left to the maintainers.
    let mut world = World::new();
    world.bot_draft("issue-6", 30);
    world.pull(30).draft = false;
    world
        .session("issue-6", SessionState::Finished, FINISHED_PARENT, Some(30))
        .outcome = Some(Outcome::Validated);
    issue_read(&mut world, "issue-6", Ok(CandidateIssue::Closed(6)));
    let plan = world.plan();
    assert_eq!(report(&plan, "issue-6").verdict, Verdict::LeftAlone);
    assert!(actions(&plan, "issue-6").is_empty());

    // A maintainer's outcome on record: left as the maintainer left it.
    let mut world = World::new();
    world.bot_draft("issue-6", 30);
    world
        .session("issue-6", SessionState::Finished, FINISHED_PARENT, Some(30))
        .outcome = Some(Outcome::ClosedByMaintainer);
    issue_read(&mut world, "issue-6", Ok(CandidateIssue::Closed(6)));
    let plan = world.plan();
    assert_eq!(report(&plan, "issue-6").verdict, Verdict::LeftAlone);
    assert!(actions(&plan, "issue-6").is_empty());
}
