//! Two `klaud recover` passes at once (contract §7): with 4 live and 3 parked sessions under a
//! cap of 5, at most 5 are live afterwards, one parked session is started exactly once, only
//! one pass holds the recovery lease, and the abandoned draft is closed exactly once; the
//! invariant checker (`invariants/`) compares the states before and after each round.

#![allow(clippy::disallowed_methods)] // tests start processes

use klaud_fake_github as fake_github;
#[path = "invariants/mod.rs"]
mod invariants;
#[path = "recover_support/mod.rs"]
mod recover_support;

use fake_github::{FaultConfig, PullState};
use klaud::core::ledger::SessionState;
use recover_support::*;

fn world_with_four_live_and_three_parked() -> (World, Vec<u64>, u64, [u64; 2]) {
    let mut world = World::new();
    let live_parent = world.running_planner(&["l0", "l1", "l2", "l3"]);
    for live in ["l0", "l1", "l2", "l3"] {
        let number = world.bot_draft(live);
        world.session(live, SessionState::Live, live_parent, Some(number));
        world.claim(live, live_parent);
    }
    let parked_parent = world.finished_planner(20, &["p0", "p1", "p2"]);
    let mut parked = Vec::new();
    for (age, candidate) in ["p0", "p1", "p2"].into_iter().enumerate() {
        let commits = vec![world.bot_commit(candidate, 19)];
        let number = world.bot_pull(candidate, true, commits, &["klaud-parked"]);
        let started = chrono::Utc::now() - chrono::Duration::hours(30 - age as i64);
        world
            .session(candidate, SessionState::Parked, parked_parent, Some(number))
            .started_at = started;
        parked.push(number);
    }
    world.finished_planner(3, &["gone"]);
    let abandoned = world.bot_draft("gone");
    // The two recovery passes are planner runs themselves.
    let passes = [world.running_planner(&[]), world.running_planner(&[])];
    (world, parked, abandoned, passes)
}

#[test]
fn two_passes_at_once_never_exceed_the_cap_and_never_double_close() {
    for round in 0..4u64 {
        let (world, parked, abandoned, [first_run, second_run]) =
            world_with_four_live_and_three_parked();
        let server = world.start();
        let before = server.state();
        server.set_faults(FaultConfig {
            seed: round,
            latency_ms: 30,
            latency_jitter_ms: 40,
            ..FaultConfig::default()
        });
        let first = Pass::new(first_run);
        let second = Pass::new(second_run);
        let mut children: Vec<std::process::Child> = [&first, &second]
            .iter()
            .map(|pass| {
                pass.command(&server)
                    .env("KLAUD_MAX_CANDIDATES", "5")
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in &mut children {
            assert!(child.wait().unwrap().success(), "round {round}");
        }

        invariants::assert_none(
            &format!("round {round}"),
            &invariants::check(&invariants::Rules::new(BOT, 5), &before, &server.state()),
        );
        let ledger = recover_support::stored_ledger(&server);
        let live: Vec<&str> = ledger
            .sessions
            .iter()
            .filter(|session| session.state == SessionState::Live)
            .map(|session| session.candidate.as_str())
            .collect();
        assert_eq!(live.len(), 5, "round {round}: {live:?}");
        assert!(live.contains(&"p0"), "the oldest parked session is resumed");
        let dispatches = server.with_state(|state| state.dispatches.clone());
        assert_eq!(dispatches.len(), 1, "round {round}: started exactly once");
        assert_eq!(dispatches[0].inputs["candidate"], "p0");
        assert_eq!(ledger.recovery_lease, None, "round {round}");
        let closes = writes_to(&server, &format!("/pulls/{abandoned}"));
        assert_eq!(closes.len(), 1, "round {round}: {closes:?}");
        assert_eq!(
            server.with_state(|state| state.pulls[&abandoned].state),
            PullState::Closed
        );
        for number in &parked {
            assert_eq!(
                server.with_state(|state| state.pulls[number].state),
                PullState::Open
            );
        }
        let resumed: Vec<String> = [&first, &second]
            .iter()
            .flat_map(|pass| pass.ids("resumed"))
            .collect();
        assert_eq!(resumed, ["p0"], "round {round}");
        let swept: Vec<String> = [&first, &second]
            .iter()
            .flat_map(|pass| pass.ids("swept"))
            .collect();
        assert_eq!(swept, ["gone"], "round {round}: one pass sweeps it");
    }
}
