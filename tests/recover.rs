//! `klaud recover` end to end against the fake GitHub (contract §4, §5): each guard of the
//! abandonment sweep as its own test, the reference bug, reconciled outcomes, status labels, the
//! recovery lease, legacy lock refs, the write budget, dry runs, and a parked session held
//! once its resumes went unadopted for six hours.

#![allow(clippy::disallowed_methods)] // tests read the environment and start processes

use klaud_fake_github as fake_github;
#[path = "recover_support/mod.rs"]
mod recover_support;

use std::time::{Duration, Instant};

use fake_github::{FaultConfig, PullState};
use klaud::core::ledger::{KeptObject, Lease, SessionState};
use klaud::core::outcome::Outcome;
use recover_support::*;

const OWN_RUN: u64 = 77_000_000_001;

fn pull_state(server: &fake_github::FakeGitHubHandle, number: u64) -> fake_github::PullRequest {
    server.with_state(|state| state.pulls[&number].clone())
}

fn branch_exists(server: &fake_github::FakeGitHubHandle, candidate: &str) -> bool {
    server.with_state(|state| state.branch_sha(&branch(candidate)).is_some())
}

#[test]
fn a_bot_only_draft_is_closed_and_its_branch_deleted() {
    let mut world = World::new();
    world.finished_planner(3, &["a"]);
    let number = world.bot_draft("a");
    let bot_smoke = world.smoke("a", BOT, true);
    let maintainer_smoke = world.smoke("a", MAINTAINER, true);
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    let pull = pull_state(&server, number);
    assert_eq!(pull.state, PullState::Closed);
    assert_eq!(pull.closed_by.as_deref(), Some(BOT));
    assert_eq!(
        pull.labels,
        ["klaud-error"],
        "one status label, reflecting the outcome"
    );
    assert!(!branch_exists(&server, "a"));
    let runs = server.with_state(|state| state.runs.clone());
    assert_eq!(runs[&bot_smoke].conclusion.as_deref(), Some("cancelled"));
    assert_eq!(
        runs[&maintainer_smoke].status, "in_progress",
        "not the bot's: not cancelled"
    );
    assert_eq!(pass.ids("swept"), ["a"]);
    let label_writes: Vec<_> = server
        .request_log()
        .into_iter()
        .filter(|request| request.is_write() && request.path.contains("/labels"))
        .collect();
    assert!(!label_writes.is_empty());
    assert!(
        label_writes
            .iter()
            .all(|request| request.login.as_deref() == Some(LABEL_LOGIN)),
        "status labels are written with the label token"
    );
    assert_eq!(
        stored_ledger(&server).recovery_lease,
        None,
        "the lease is released"
    );
}

/// klaud's open pull requests are read from its branches. When that read misses the abandoned
/// draft — the query fails, or its branch has more open pull requests than one query reads
/// (forks' on the same branch name) — the pass closes, deletes and cancels nothing.
#[test]
fn an_abandoned_draft_the_reads_miss_is_left_as_it_is() {
    for (missed, forks) in [("a failed query", 0), ("a cut branch", 10)] {
        let mut world = World::new();
        world.finished_planner(3, &["a"]);
        let number = world.bot_draft("a");
        let smoke = world.smoke("a", BOT, true);
        for fork in 0..forks {
            world.state.add_pull_request(fake_github::PullRequestSpec {
                title: format!("a fork's change {fork}"),
                author: format!("someone-{fork}"),
                head_ref: branch("a"),
                head_repo: Some(format!("someone-{fork}/bench")),
                ..fake_github::PullRequestSpec::default()
            });
        }
        let server = world.start();
        if forks == 0 {
            server.set_faults(FaultConfig::rules(vec![fake_github::FaultRule::nth(
                "POST", "/graphql", 1, 404,
            )]));
        }
        let pass = Pass::new(OWN_RUN);

        let log = pass.run(&server);

        assert!(log.contains("the open pull requests of"), "{missed}: {log}");
        assert_eq!(
            pull_state(&server, number).state,
            PullState::Open,
            "{missed}"
        );
        assert!(branch_exists(&server, "a"), "{missed}");
        let runs = server.with_state(|state| state.runs.clone());
        assert_eq!(runs[&smoke].status, "in_progress", "{missed}");
        assert_eq!(pass.ids("swept"), Vec::<String>::new(), "{missed}");
        assert_eq!(
            writes_beside_the_ledger(&server),
            Vec::<String>::new(),
            "{missed}: nothing but the ledger (the lease) is written"
        );
    }
}

#[test]
fn a_draft_with_a_maintainer_commit_is_untouched() {
    let mut world = World::new();
    world.finished_planner(3, &["a", "b"]);
    let head_by_maintainer = {
        let commits = vec![world.bot_commit("a", 9), world.maintainer_commit("a", 8)];
        world.bot_pull("a", true, commits, &["klaud-in-progress"])
    };
    let commit_below = {
        let commits = vec![world.maintainer_commit("b", 9), world.bot_commit("b", 8)];
        world.bot_pull("b", true, commits, &["klaud-in-progress"])
    };
    world.smoke("a", BOT, true);
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    for number in [head_by_maintainer, commit_below] {
        let pull = pull_state(&server, number);
        assert_eq!(pull.state, PullState::Open);
        assert!(pull.draft);
        assert_eq!(pull.labels, ["klaud-in-progress"]);
        assert!(writes_to(&server, &format!("/{number}")).is_empty());
    }
    assert!(branch_exists(&server, "a") && branch_exists(&server, "b"));
    assert!(
        writes_to(&server, "/cancel").is_empty(),
        "its smoke run is not cancelled"
    );
    assert_eq!(pass.ids("needs-inspection"), ["a"]);
    assert_eq!(pass.ids("left-alone"), ["b"]);
    assert!(
        pass.summary()
            .contains("moved to a commit by maintainer-ada")
    );
}

#[test]
fn a_ready_pull_request_is_untouched() {
    let mut world = World::new();
    world.finished_planner(3, &["a"]);
    let commits = vec![world.bot_commit("a", 9)];
    let number = world.bot_pull("a", false, commits, &["klaud-in-progress"]);
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    let pull = pull_state(&server, number);
    assert_eq!((pull.state, pull.draft), (PullState::Open, false));
    assert!(
        writes_beside_the_ledger(&server).is_empty(),
        "{:?}",
        writes_beside_the_ledger(&server)
    );
    assert_eq!(pass.ids("needs-inspection"), ["a"]);
    assert!(
        pass.summary()
            .contains("ready for review without a validated record")
    );
}

#[test]
fn a_handoff_labelled_pull_request_is_untouched() {
    let mut world = World::new();
    let parent = world.finished_planner(3, &["a"]);
    let commits = vec![world.bot_commit("a", 9)];
    let number = world.bot_pull("a", true, commits, &["klaud-in-progress", "klaud-handoff"]);
    world.session("a", SessionState::Live, parent, Some(number));
    world.smoke("a", BOT, true);
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    let pull = pull_state(&server, number);
    assert_eq!(pull.state, PullState::Open);
    assert_eq!(pull.labels, ["klaud-in-progress", "klaud-handoff"]);
    assert!(
        writes_beside_the_ledger(&server).is_empty(),
        "{:?}",
        writes_beside_the_ledger(&server)
    );
    let session = stored_ledger(&server).sessions[0].clone();
    assert_eq!(
        session.outcome,
        Some(Outcome::Handoff),
        "the ended session is recorded as handoff"
    );
    assert_eq!(pass.ids("reconciled"), ["a"]);
}

#[test]
fn a_pull_request_closed_by_a_maintainer_keeps_its_branch() {
    let mut world = World::new();
    let parent = world.finished_planner(30, &["a", "b"]);
    let finished = world.closed_bot_pull("a", MAINTAINER, true);
    world.session("a", SessionState::Finished, parent, Some(finished));
    let reconciled = world.closed_bot_pull("b", MAINTAINER, true);
    let live_parent = world.finished_planner(3, &["b"]);
    world.session("b", SessionState::Live, live_parent, Some(reconciled));
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    assert!(branch_exists(&server, "a") && branch_exists(&server, "b"));
    // The reconciled one loses its status label (`closed-by-maintainer` shows none); nothing
    // else of either is touched.
    assert_eq!(
        writes_beside_the_ledger(&server),
        [format!(
            "DELETE /repos/acme/bench/issues/{reconciled}/labels/klaud-error"
        )]
    );
    let ledger = stored_ledger(&server);
    assert_eq!(
        ledger.sessions[1].outcome,
        Some(Outcome::ClosedByMaintainer)
    );
    assert!(
        ledger
            .kept
            .iter()
            .any(|kept| kept.object == KeptObject::Branch("klaud/auto-a".into())),
        "remembered, so later passes do not read it again"
    );

    let again = Pass::new(OWN_RUN + 1);
    server.clear_request_log();
    again.run(&server);
    assert!(branch_exists(&server, "a"));
    assert!(
        server
            .request_log()
            .iter()
            .all(|request| !request.path.contains(&format!("/issues/{finished}"))),
        "the kept branch is not examined again"
    );
}

#[test]
fn a_pull_request_closed_by_the_bot_loses_its_branch() {
    let mut world = World::new();
    let parent = world.finished_planner(30, &["a"]);
    let number = world.closed_bot_pull("a", BOT, true);
    world.session("a", SessionState::Finished, parent, Some(number));
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    assert!(!branch_exists(&server, "a"));
    // One conditional deletion (`updateRefs`) and nothing else beside the ledger.
    assert_eq!(writes_beside_the_ledger(&server), ["POST /graphql"]);
    let deletion = server
        .request_log()
        .into_iter()
        .find(|request| request.is_write() && request.path == "/graphql")
        .expect("the deletion");
    assert_eq!(
        deletion.graphql().map(|operation| operation.fields),
        Some(vec!["updateRefs".to_string()])
    );
    assert!(deletion.body.contains("refs/heads/klaud/auto-a"));
    assert_eq!(pass.ids("swept"), ["a"]);
    assert_eq!(pass.outputs()["refs-deleted"], "1");
}

#[test]
fn an_active_sweep_keeps_the_candidate_alive() {
    let mut world = World::new();
    let parent = world.finished_planner(3, &["a", "b"]);
    let abandoned_looking = world.bot_draft("a");
    world.sweep("a", BOT, "in_progress", None, 20);
    let live_session = world.bot_draft("b");
    world.session("b", SessionState::Live, parent, Some(live_session));
    world.claim("b", parent);
    world.sweep("b", BOT, "queued", None, 5);
    world.smoke("b", BOT, true);
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    for number in [abandoned_looking, live_session] {
        assert_eq!(pull_state(&server, number).state, PullState::Open);
    }
    assert!(
        writes_beside_the_ledger(&server).is_empty(),
        "{:?}",
        writes_beside_the_ledger(&server)
    );
    let ledger = stored_ledger(&server);
    assert_eq!(ledger.sessions[0].state, SessionState::Live);
    assert_eq!(ledger.claims.len(), 1);
    assert!(pass.summary().contains("sweep run"));
}

#[test]
fn a_branch_moved_between_check_and_delete_is_kept() {
    let mut world = World::new();
    let parent = world.finished_planner(30, &["a"]);
    let number = world.closed_bot_pull("a", BOT, true);
    world.session("a", SessionState::Finished, parent, Some(number));
    let server = world.start();
    server.set_faults(FaultConfig {
        latency_ms: 300,
        ..FaultConfig::default()
    });
    let pass = Pass::new(OWN_RUN);
    let mut child = pass.command(&server).spawn().unwrap();

    // Once the pass has examined the branch and taken the lease (its first ledger write), the
    // branch moves: the deletion that follows must see it and keep the branch.
    let deadline = Instant::now() + Duration::from_secs(60);
    let moved_to = loop {
        let wrote_ledger = server
            .request_log()
            .iter()
            .any(|request| request.method == "PUT" && request.path.contains("ledger.json"));
        if wrote_ledger {
            break server.with_state(|state| {
                state.push_commits(
                    &branch("a"),
                    vec![fake_github::CommitSpec::by(BOT).file("late.txt", "late\n")],
                )
            });
        }
        assert!(Instant::now() < deadline, "the pass never wrote the ledger");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(child.wait().unwrap().success());

    assert_eq!(
        server.with_state(|state| state.branch_sha(&branch("a")).map(str::to_string)),
        Some(moved_to)
    );
    assert!(writes_to(&server, "/git/refs/heads/klaud/auto-a").is_empty());
    let record = pass.record();
    let results = record["applied"]["groups"][0]["actions"][0]["result"].clone();
    assert_eq!(results["result"], "dropped", "{results}");
}

/// A maintainer closes every open pull request at the moment the bot's close arrives.
fn maintainer_closes_open_pulls(state: &mut fake_github::RepoState) {
    let now = state.now();
    for pull in state.pulls.values_mut() {
        if pull.state == PullState::Open {
            pull.state = PullState::Closed;
            pull.closed_by = Some(MAINTAINER.into());
            pull.closed_at = Some(now);
            pull.updated_at = now;
        }
    }
}

#[test]
fn a_draft_a_maintainer_closed_just_before_the_bots_close_keeps_its_branch() {
    let mut world = World::new();
    world.finished_planner(3, &["a"]);
    let number = world.bot_draft("a");
    let server = world.start();
    // After the pass re-read the draft as open, a maintainer closes it; the bot's close then
    // succeeds without changing who closed it.
    server.before_request(
        "PATCH",
        &format!("/repos/acme/bench/pulls/{number}"),
        maintainer_closes_open_pulls,
    );
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    let pull = pull_state(&server, number);
    assert_eq!(pull.state, PullState::Closed);
    assert_eq!(pull.closed_by.as_deref(), Some(MAINTAINER));
    assert!(
        branch_exists(&server, "a"),
        "a maintainer-closed pull request keeps its branch"
    );
    assert!(writes_to(&server, "/git/refs/heads/klaud/auto-a").is_empty());
}

#[test]
fn reference_bug_a_bot_only_draft_needing_inspection_is_not_swept_in_the_same_pass() {
    let mut world = World::new();
    let parent = world.finished_planner(3, &["a"]);
    let number = world.bot_draft("a");
    world.session("a", SessionState::Live, parent, Some(number));
    world.claim("a", parent);
    world.smoke("a", BOT, true);
    // A maintainer started a sweep on the branch after the parent ended: a maintainer is acting.
    world.sweep("a", MAINTAINER, "completed", Some("failure"), 60);
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    assert_eq!(
        pull_state(&server, number).state,
        PullState::Open,
        "not closed"
    );
    assert!(branch_exists(&server, "a"), "its branch is not deleted");
    let ledger = stored_ledger(&server);
    assert_eq!(ledger.claims.len(), 1, "its claim is not released");
    assert_eq!(ledger.sessions[0].state, SessionState::Live);
    assert!(
        writes_beside_the_ledger(&server).is_empty(),
        "{:?}",
        writes_beside_the_ledger(&server)
    );
    assert_eq!(pass.ids("needs-inspection"), ["a"]);
    assert!(
        pass.summary()
            .contains("started by maintainer-ada after its parent ended")
    );
}

#[test]
fn a_session_whose_parent_ended_is_reconciled_and_its_claim_released_after_cleanup() {
    let mut world = World::new();
    let parent = world.finished_planner(3, &["a", "b"]);
    let failed = world.bot_draft("a");
    world
        .session("a", SessionState::Live, parent, Some(failed))
        .pending_outcome = Some(Outcome::Incompatible);
    world.claim("a", parent);
    let validated = world.bot_draft("b");
    world.session("b", SessionState::Live, parent, Some(validated));
    world.claim("b", parent);
    world.sweep("b", BOT, "completed", Some("success"), 200);
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    let incompatible = pull_state(&server, failed);
    assert_eq!(incompatible.state, PullState::Closed);
    assert_eq!(incompatible.labels, ["klaud-incompatible"]);
    assert!(!branch_exists(&server, "a"));
    let ready = pull_state(&server, validated);
    assert_eq!((ready.state, ready.draft), (PullState::Open, false));
    assert_eq!(ready.labels, ["klaud-finished"]);
    assert!(branch_exists(&server, "b"), "a validated branch is kept");
    let ledger = stored_ledger(&server);
    let outcomes: Vec<_> = ledger
        .sessions
        .iter()
        .map(|session| (session.state, session.outcome))
        .collect();
    assert_eq!(
        outcomes,
        [
            (SessionState::Finished, Some(Outcome::Incompatible)),
            (SessionState::Finished, Some(Outcome::Validated)),
        ]
    );
    assert!(ledger.claims.is_empty());
    assert_eq!(pass.ids("reconciled"), ["a", "b"]);
}

#[test]
fn a_session_whose_pull_request_a_maintainer_closed_ends_as_closed_by_maintainer() {
    let mut world = World::new();
    let parent = world.finished_planner(3, &["a"]);
    let number = world.closed_bot_pull("a", MAINTAINER, true);
    world.session("a", SessionState::Live, parent, Some(number));
    world.claim("a", parent);
    world.smoke("a", BOT, true);
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    let ledger = stored_ledger(&server);
    assert_eq!(
        ledger.sessions[0].outcome,
        Some(Outcome::ClosedByMaintainer)
    );
    assert!(ledger.claims.is_empty());
    assert!(branch_exists(&server, "a"));
    // Its smoke run and branch stay as the maintainer left them; only the status label goes.
    assert_eq!(
        writes_beside_the_ledger(&server),
        [format!(
            "DELETE /repos/acme/bench/issues/{number}/labels/klaud-error"
        )]
    );
}

#[test]
fn a_live_draft_shows_exactly_one_status_label() {
    let mut world = World::new();
    let parent = world.running_planner(&["a"]);
    let commits = vec![world.bot_commit("a", 2)];
    let number = world.bot_pull("a", true, commits, &["klaud-parked", "klaud-error", "bug"]);
    world.session("a", SessionState::Live, parent, Some(number));
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    let mut labels = pull_state(&server, number).labels;
    labels.sort();
    assert_eq!(labels, ["bug", "klaud-in-progress"]);
    assert_eq!(pull_state(&server, number).state, PullState::Open);
}

#[test]
fn a_dry_run_prints_the_plan_and_writes_nothing() {
    let mut world = World::new();
    world.finished_planner(3, &["a"]);
    let number = world.bot_draft("a");
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    let log = pass.run_with(
        &server,
        |command| {
            command.arg("--dry-run");
        },
        0,
    );

    assert!(
        server
            .request_log()
            .iter()
            .all(|request| !request.is_write())
    );
    assert_eq!(pull_state(&server, number).state, PullState::Open);
    assert!(log.contains(&format!("close #{number}")), "{log}");
    assert!(pass.summary().contains("(dry run)"));
    assert_eq!(pass.ids("swept"), ["a"]);
}

#[test]
fn a_pass_without_the_lease_names_its_holder_and_does_nothing_destructive() {
    let mut world = World::new();
    world.finished_planner(3, &["a"]);
    let holder = world.running_planner(&[]);
    let number = world.bot_draft("a");
    world.ledger.recovery_lease = Some(Lease {
        owner_run: holder,
        taken_at: chrono::Utc::now() - chrono::Duration::days(2),
    });
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    let log = pass.run(&server);

    assert_eq!(pull_state(&server, number).state, PullState::Open);
    assert!(
        server
            .request_log()
            .iter()
            .all(|request| !request.is_write())
    );
    assert!(
        log.contains(&format!("run {holder} holds the recovery lease")),
        "{log}"
    );
    assert!(
        pass.summary()
            .contains(&format!("run {holder} holds the recovery lease"))
    );
    assert_eq!(
        stored_ledger(&server).recovery_lease.unwrap().owner_run,
        holder
    );
}

#[test]
fn a_lease_left_by_a_finished_run_is_taken_over_and_released() {
    let mut world = World::new();
    let dead_holder = world.finished_planner(1, &[]);
    world.finished_planner(3, &["a"]);
    let number = world.bot_draft("a");
    world.ledger.recovery_lease = Some(Lease {
        owner_run: dead_holder,
        taken_at: chrono::Utc::now(),
    });
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    assert_eq!(pull_state(&server, number).state, PullState::Closed);
    assert_eq!(stored_ledger(&server).recovery_lease, None);
    assert!(
        pass.summary()
            .contains(&format!("lease of run {dead_holder} is taken over"))
    );
}

#[test]
fn legacy_lock_refs_are_deleted_once_their_parent_finished() {
    let mut world = World::new();
    let finished = world.finished_planner(5, &[]);
    let running = world.running_planner(&[]);
    world.lock_ref(&format!("klaud/recovery-{finished}-cand-a"));
    world.lock_ref(&format!("klaud/recovery-{running}-cand-b"));
    let main = world.state.branch_sha("main").unwrap().to_string();
    let claimed = world.state.add_commit(
        Some(&main),
        fake_github::CommitSpec::by(BOT).message(&format!("claim cand-c for run {finished}")),
    );
    world.state.set_branch("klaud/claim-cand-c", &claimed);
    let unnamed = world.state.add_commit(
        Some(&main),
        fake_github::CommitSpec::by(BOT).message("claim cand-d"),
    );
    world.state.set_branch("klaud/claim-cand-d", &unnamed);
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    let remaining: Vec<String> = server.with_state(|state| {
        state
            .refs
            .keys()
            .filter(|name| name.starts_with("refs/heads/klaud/") && !name.ends_with("/state"))
            .cloned()
            .collect()
    });
    assert_eq!(
        remaining,
        [
            "refs/heads/klaud/claim-cand-d".to_string(),
            format!("refs/heads/klaud/recovery-{running}-cand-b"),
        ]
    );
    assert_eq!(pass.outputs()["refs-deleted"], "2");
}

#[test]
fn the_write_budget_stops_a_pass_and_the_next_pass_finishes() {
    // 260 lock refs take two `updateRefs` requests (250 a request); a budget of 4 is one for the
    // first ledger write, two kept for the last one, and one for the refs.
    let mut world = World::new();
    let finished = world.finished_planner(5, &[]);
    for index in 0..260 {
        world.lock_ref(&format!("klaud/recovery-{finished}-cand-{index:03}"));
    }
    let server = world.start();
    let count_locks = || {
        server.with_state(|state| {
            state
                .refs
                .keys()
                .filter(|name| name.starts_with("refs/heads/klaud/recovery-"))
                .count()
        })
    };

    let first = Pass::new(OWN_RUN);
    let log = first.run_with(
        &server,
        |command| {
            command.env("KLAUD_MAX_OPERATIONS", "4");
        },
        0,
    );
    assert!(log.contains("write budget"), "{log}");
    assert_eq!(count_locks(), 10, "one batch of 250 deleted");
    assert_eq!(
        stored_ledger(&server).recovery_lease,
        None,
        "the lease is still released"
    );

    let second = Pass::new(OWN_RUN + 1);
    second.run(&server);
    assert_eq!(count_locks(), 0);
}

#[test]
fn a_missing_run_id_is_bad_input_before_anything_is_read() {
    let world = World::new();
    let server = world.start();
    let pass = Pass::new(OWN_RUN);
    let log = pass.run_with(
        &server,
        |command| {
            command.env_remove("GITHUB_RUN_ID");
        },
        2,
    );
    assert!(log.contains("GITHUB_RUN_ID"), "{log}");
    assert!(server.request_log().is_empty());
}

#[test]
fn a_parked_session_whose_resumes_no_job_adopted_for_six_hours_is_not_dispatched_again() {
    let mut world = World::new();
    let parent = world.finished_planner(8, &["p"]);
    world.claim("p", parent);
    let commits = vec![world.bot_commit("p", 8)];
    let number = world.bot_pull("p", true, commits, &["klaud-parked"]);
    let first_dispatch = world.ago(7 * 3600);
    let session = world.session("p", SessionState::Parked, parent, Some(number));
    session.resuming = Some(klaud::core::ledger::Resuming {
        by_run: parent,
        at: chrono::TimeZone::timestamp_opt(&chrono::Utc, first_dispatch.0, 0).unwrap(),
    });
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    assert!(
        server.with_state(|state| state.dispatches.is_empty()),
        "{}",
        pass.summary()
    );
    assert!(
        pass.summary()
            .contains("held: no job has adopted a resume of it since"),
        "{}",
        pass.summary()
    );
    assert_eq!(pull_state(&server, number).labels, ["klaud-parked"]);
    assert_eq!(
        stored_ledger(&server).sessions[0].state,
        SessionState::Parked
    );
}

/// A labelled issue, and the record discover wrote for its candidate; returns the candidate.
fn issue_candidate(world: &mut World) -> (u64, String) {
    let issue = world.state.add_issue(fake_github::builder::IssueSpec {
        title: "Rename the flags".into(),
        author: MAINTAINER.into(),
        labels: vec!["klaud".into()],
        ..Default::default()
    });
    let candidate = format!("issue-{issue}");
    world.state.put_file(
        STATE_BRANCH,
        &format!("records/{candidate}.json"),
        &serde_json::json!({
            "id": candidate, "family": family(&candidate),
            "issue": {"number": issue, "title": "Rename the flags", "url": "",
                      "labels": ["klaud"], "author": MAINTAINER, "label-actor": MAINTAINER},
            "task": {"title": "Rename the flags", "body": ""},
        })
        .to_string(),
    );
    (issue, candidate)
}

/// A maintainer closes `issue` (not a pull request's merge).
fn close_issue(world: &mut World, issue: u64) {
    let closed = world.state.issues.get_mut(&issue).unwrap();
    closed.state = PullState::Closed;
    closed.closed_by = Some(MAINTAINER.into());
}

fn session_of(
    server: &fake_github::FakeGitHubHandle,
    candidate: &str,
) -> klaud::core::ledger::Session {
    stored_ledger(server)
        .sessions
        .into_iter()
        .find(|session| session.candidate == candidate)
        .unwrap()
}

#[test]
fn a_session_whose_job_died_after_its_issue_was_closed_is_reconciled_retired() {
    let mut world = World::new();
    let (issue, candidate) = issue_candidate(&mut world);
    let parent = world.finished_planner(3, &[&candidate]);
    let number = world.bot_draft(&candidate);
    world.session(&candidate, SessionState::Live, parent, Some(number));
    world.claim(&candidate, parent);
    close_issue(&mut world, issue);
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    assert_eq!(
        session_of(&server, &candidate).outcome,
        Some(Outcome::Retired)
    );
    assert_eq!(pull_state(&server, number).state, PullState::Closed);
    assert!(
        !branch_exists(&server, &candidate),
        "retired deletes the branch"
    );
}

#[test]
fn a_parked_session_whose_issue_was_closed_ends_retired_and_no_agent_starts() {
    let mut world = World::new();
    let (issue, candidate) = issue_candidate(&mut world);
    let parent = world.finished_planner(8, &[&candidate]);
    world.claim(&candidate, parent);
    let commits = vec![world.bot_commit(&candidate, 8)];
    let number = world.bot_pull(&candidate, true, commits, &["klaud-parked"]);
    world.session(&candidate, SessionState::Parked, parent, Some(number));
    close_issue(&mut world, issue);
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    assert!(
        server.with_state(|state| state.dispatches.is_empty()),
        "not resumed: {}",
        pass.summary()
    );
    let session = session_of(&server, &candidate);
    assert_eq!(session.state, SessionState::Finished);
    assert_eq!(session.outcome, Some(Outcome::Retired));
    let pull = pull_state(&server, number);
    assert_eq!(pull.state, PullState::Closed);
    assert_eq!(pull.closed_by.as_deref(), Some(BOT));
    assert_eq!(pull.labels, ["klaud-retired"]);
    assert!(!branch_exists(&server, &candidate));
    assert_eq!(pass.ids("reconciled"), [candidate.as_str()]);
}

#[test]
fn a_parked_session_whose_issue_is_open_is_resumed() {
    let mut world = World::new();
    let (_, candidate) = issue_candidate(&mut world);
    let parent = world.finished_planner(8, &[&candidate]);
    world.claim(&candidate, parent);
    let commits = vec![world.bot_commit(&candidate, 8)];
    let number = world.bot_pull(&candidate, true, commits, &["klaud-parked"]);
    world.session(&candidate, SessionState::Parked, parent, Some(number));
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    assert_eq!(
        server.with_state(|state| state.dispatches.len()),
        1,
        "{}",
        pass.summary()
    );
    assert_eq!(session_of(&server, &candidate).state, SessionState::Live);
    assert_eq!(pull_state(&server, number).state, PullState::Open);
}

#[test]
fn an_abandoned_draft_whose_issue_was_closed_is_swept_as_retired() {
    let mut world = World::new();
    let (issue, candidate) = issue_candidate(&mut world);
    world.finished_planner(3, &[&candidate]);
    let number = world.bot_draft(&candidate);
    close_issue(&mut world, issue);
    let server = world.start();
    let pass = Pass::new(OWN_RUN);

    pass.run(&server);

    let pull = pull_state(&server, number);
    assert_eq!(pull.state, PullState::Closed);
    assert_eq!(pull.closed_by.as_deref(), Some(BOT));
    assert_eq!(pull.labels, ["klaud-retired"], "{}", pass.summary());
    assert!(!branch_exists(&server, &candidate));
    assert_eq!(pass.ids("swept"), [candidate.as_str()]);
}
