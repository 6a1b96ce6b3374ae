//! `klaud recover` looking after validated pull requests (contract §12) against the fake GitHub:
//! a validated pull request whose base moved under it gets exactly one refresh session (the
//! ledger's live session, the candidate workflow dispatched, `klaud-in-progress`), and the next
//! pass starts nothing more; a failing one gets a repair that carries the failed job; two passes
//! at once start one session; a guard that fails writes nothing on GitHub; a pull request waiting
//! for a maintainer is never swept; a superseded one is closed with klaud's note and its branch
//! deleted.

#![allow(clippy::disallowed_methods)] // tests start processes

use klaud_fake_github as fake_github;
#[path = "recover_support/mod.rs"]
mod recover_support;

use chrono::{Duration, Utc};
use fake_github::{FakeGitHubHandle, JobSpec, Mergeability, PullState, RunSpec};
use klaud::core::aftercare::{AftercareState, NeedsMaintainerBecause, SessionKind};
use klaud::core::github_state::CheckConclusion;
use klaud::core::ledger::SessionState;
use klaud::core::outcome::Outcome;
use recover_support::*;

/// A repository with candidate `a`'s ready pull request, validated six hours ago at its head and
/// watched; its session finished `validated`. Returns the world and the pull request's number.
fn validated_world() -> (World, u64) {
    let mut world = World::new();
    let parent = world.finished_planner(8, &["a"]);
    let commits = vec![world.bot_commit("a", 9)];
    let number = world.bot_pull("a", false, commits, &["klaud-finished"]);
    world.sweep("a", BOT, "completed", Some("success"), 7 * 60);
    let session = world.session("a", SessionState::Finished, parent, Some(number));
    session.outcome = Some(Outcome::Validated);
    let head = world.state.pulls[&number].head_sha.clone();
    world.ledger.record_validated(
        "a",
        &family("a"),
        number,
        Some(&head),
        Utc::now() - Duration::hours(6),
    );
    (world, number)
}

fn labels(server: &FakeGitHubHandle, number: u64) -> Vec<String> {
    server.with_state(|state| state.pulls[&number].labels.clone())
}

fn dispatched(server: &FakeGitHubHandle) -> Vec<String> {
    server.with_state(|state| {
        state
            .dispatches
            .iter()
            .map(|dispatch| {
                dispatch.inputs["candidate"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
            .collect()
    })
}

#[test]
fn a_validated_pull_request_that_conflicts_gets_one_refresh_session_and_no_second() {
    let (mut world, number) = validated_world();
    world
        .state
        .set_mergeability(number, Mergeability::Conflicting, false);
    let passes = [world.running_planner(&[]), world.running_planner(&[])];
    let server = world.start();
    let first = Pass::new(passes[0]);

    first.run(&server);

    assert_eq!(first.outputs()["aftercare-started"], "1");
    assert_eq!(dispatched(&server), ["a"]);
    assert_eq!(labels(&server, number), ["klaud-in-progress"]);
    let ledger = stored_ledger(&server);
    let live: Vec<_> = ledger.live_sessions().collect();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].kind, SessionKind::Refresh);
    assert_eq!(live[0].parent_run, passes[0]);
    let work = live[0].aftercare.as_ref().unwrap();
    assert_eq!(work.pull_request, number);
    assert!(work.failed.is_empty());
    assert!(ledger.claims.iter().any(|claim| claim.candidate == "a"));
    assert_eq!(ledger.aftercare_of(number).unwrap().sessions_used, 1);
    let record = first.record();
    let aftercare = &record["plan"]["aftercare"][0];
    assert_eq!(aftercare["decided"], "started", "{aftercare}");
    assert_eq!(aftercare["kind"], "refresh");
    assert!(first.summary().contains("After-care: 1 started"));

    let second = Pass::new(passes[1]);
    second.run(&server);

    assert_eq!(second.outputs()["aftercare-started"], "0");
    assert_eq!(dispatched(&server), ["a"], "no second session");
    assert_eq!(stored_ledger(&server).live_sessions().count(), 1);
    assert_eq!(
        second.record()["plan"]["aftercare"][0]["decided"],
        "session-open"
    );
}

#[test]
fn a_failing_pull_request_gets_a_repair_that_carries_the_failed_job() {
    let (mut world, number) = validated_world();
    let failed_run = world.state.add_run(RunSpec {
        workflow: SWEEP.into(),
        head_branch: Some(branch("a")),
        event: "pull_request".into(),
        status: "completed".into(),
        conclusion: Some("failure".into()),
        actor: Some(BOT.into()),
        created_at: Some(world.ago(60 * 60)),
        jobs: vec![JobSpec::completed("sweep (mi355x)", "failure")],
        ..RunSpec::default()
    });
    let server = world.start();
    let pass = Pass::new(77_100_000_001);

    pass.run(&server);

    assert_eq!(pass.outputs()["aftercare-started"], "1");
    let ledger = stored_ledger(&server);
    let session = ledger.live_sessions().next().expect("a live session");
    assert_eq!(session.kind, SessionKind::Repair);
    let failed = &session.aftercare.as_ref().unwrap().failed;
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].name, "sweep (mi355x)");
    assert_eq!(failed[0].run_id, Some(failed_run));
    assert!(failed[0].job_id.is_some());
    assert_eq!(failed[0].conclusion, Some(CheckConclusion::Failure));
    assert_eq!(labels(&server, number), ["klaud-in-progress"]);
}

#[test]
fn two_passes_at_once_start_one_after_care_session() {
    for round in 0..3u64 {
        let (mut world, number) = validated_world();
        world
            .state
            .set_mergeability(number, Mergeability::Conflicting, false);
        let passes = [world.running_planner(&[]), world.running_planner(&[])];
        let server = world.start();
        server.set_faults(fake_github::FaultConfig {
            seed: round,
            latency_ms: 30,
            latency_jitter_ms: 40,
            ..fake_github::FaultConfig::default()
        });
        let runs: Vec<Pass> = passes.iter().map(|run| Pass::new(*run)).collect();
        let mut children: Vec<std::process::Child> = runs
            .iter()
            .map(|pass| {
                pass.command(&server)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in &mut children {
            assert!(child.wait().unwrap().success(), "round {round}");
        }

        assert_eq!(dispatched(&server), ["a"], "round {round}: started once");
        let ledger = stored_ledger(&server);
        assert_eq!(ledger.live_sessions().count(), 1, "round {round}");
        assert_eq!(ledger.aftercare_of(number).unwrap().sessions_used, 1);
        let started: usize = runs
            .iter()
            .map(|pass| {
                pass.outputs()["aftercare-started"]
                    .parse::<usize>()
                    .unwrap()
            })
            .sum();
        assert_eq!(started, 1, "round {round}");
    }
}

#[test]
fn a_maintainer_commit_a_handoff_label_or_a_foreign_sweep_leave_it_for_good_writing_nothing() {
    for case in ["commit", "handoff", "sweep"] {
        let (mut world, number) = validated_world();
        world
            .state
            .set_mergeability(number, Mergeability::Conflicting, false);
        match case {
            "commit" => {
                let commit = world.maintainer_commit("a", 1);
                // The head moves from the validated one: a maintainer pushed to the branch.
                world.state.push_commits(&branch("a"), vec![commit]);
            }
            "handoff" => {
                world.state.pulls.get_mut(&number).unwrap().labels =
                    vec!["klaud-finished".into(), "klaud-handoff".into()]
            }
            _ => {
                world.sweep("a", MAINTAINER, "completed", Some("success"), 60);
            }
        }
        let server = world.start();
        let pass = Pass::new(77_100_000_002);

        let log = pass.run(&server);

        assert_eq!(
            writes_beside_the_ledger(&server),
            Vec::<String>::new(),
            "{case}: nothing written on GitHub"
        );
        assert!(dispatched(&server).is_empty(), "{case}");
        let record = stored_ledger(&server).aftercare_of(number).unwrap().clone();
        let AftercareState::Left { reason, .. } = &record.state else {
            panic!("{case}: left for good: {record:?}")
        };
        let why = match case {
            "commit" => "a commit by maintainer-ada",
            "handoff" => "handed off to maintainers",
            _ => "was started by maintainer-ada after it was validated",
        };
        assert!(reason.contains(why), "{case}: {reason}");
        assert!(
            log.contains("::warning::after-care #"),
            "{case}: said once: {log}"
        );
        assert_eq!(pass.outputs()["aftercare-started"], "0");

        let again = Pass::new(77_100_000_003);
        let log = again.run(&server);
        assert!(
            !log.contains("::warning::after-care #"),
            "{case}: not said again"
        );
        assert_eq!(
            again.record()["plan"]["aftercare"][0]["decided"],
            "left-earlier"
        );
        assert_eq!(writes_beside_the_ledger(&server), Vec::<String>::new());
    }
}

#[test]
fn a_pull_request_waiting_for_a_maintainer_is_not_swept() {
    let (mut world, number) = validated_world();
    world.state.pulls.get_mut(&number).unwrap().draft = true;
    world.state.pulls.get_mut(&number).unwrap().labels = vec!["klaud-needs-maintainer".into()];
    let parent = world.finished_planner(3, &["a"]);
    world
        .session("a", SessionState::Finished, parent, Some(number))
        .outcome = Some(Outcome::Failed);
    world.ledger.aftercare[0].state = AftercareState::NeedsMaintainer {
        since: Utc::now() - Duration::hours(2),
        because: NeedsMaintainerBecause::Ended(Outcome::Failed),
    };
    world.ledger.aftercare[0].sessions_used = 1;
    let server = world.start();
    let pass = Pass::new(77_100_000_004);

    pass.run(&server);

    let pull = server.with_state(|state| state.pulls[&number].clone());
    assert_eq!(pull.state, PullState::Open);
    assert!(pull.draft);
    assert_eq!(pull.labels, ["klaud-needs-maintainer"]);
    assert!(server.with_state(|state| state.branch_sha(&branch("a")).is_some()));
    assert_eq!(pass.ids("swept"), Vec::<String>::new());
    assert_eq!(pass.ids("left-alone"), ["a"]);
    assert_eq!(writes_beside_the_ledger(&server), Vec::<String>::new());
    assert_eq!(
        pass.record()["plan"]["aftercare"][0]["decided"],
        "needs-maintainer"
    );
}

#[test]
fn a_superseded_pull_request_is_closed_with_the_note_and_its_branch_deleted() {
    let (mut world, number) = validated_world();
    world.ledger.aftercare[0].state = AftercareState::Superseded {
        since: Utc::now() - Duration::hours(1),
        by: 99,
    };
    let server = world.start();
    let pass = Pass::new(77_100_000_005);

    pass.run(&server);

    let pull = server.with_state(|state| state.pulls[&number].clone());
    assert_eq!(pull.state, PullState::Closed);
    assert_eq!(pull.closed_by.as_deref(), Some(BOT));
    assert!(pull.labels.is_empty(), "{:?}", pull.labels);
    let notes: Vec<String> = server.with_state(|state| {
        state
            .comments
            .values()
            .filter(|comment| comment.issue_number == number)
            .map(|comment| comment.body.clone())
            .collect()
    });
    assert_eq!(notes.len(), 1);
    assert!(notes[0].contains("Superseded by #99"), "{notes:?}");
    assert!(server.with_state(|state| state.branch_sha(&branch("a")).is_none()));
    assert_eq!(pass.ids("swept"), ["a"]);

    let next = Pass::new(77_100_000_006);
    next.run(&server);
    assert!(
        stored_ledger(&server).aftercare.is_empty(),
        "dropped once closed"
    );
}
