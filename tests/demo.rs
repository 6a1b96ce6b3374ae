//! The demo wave (`cargo run --example demo`, `tests/demo/mod.rs`) checked on its key facts, so
//! the README's first command keeps showing what klaud does: what each step decided, what it
//! changed on the fake GitHub and what it left alone.

#![allow(clippy::disallowed_methods)] // the wave starts the klaud binary

#[path = "demo/mod.rs"]
mod demo;
#[path = "fake_github/mod.rs"]
mod fake_github;
// It includes `step_support/` as `recover_support/` does: two copies of a few helpers.
#[allow(clippy::duplicate_mod)]
#[path = "github_mode_support/mod.rs"]
mod github_mode_support;
#[path = "recover_support/mod.rs"]
mod recover_support;

use demo::*;
use fake_github::{PullRequest, PullState};
use klaud::core::ledger::SessionState;
use klaud::core::outcome::Outcome;

fn pull(wave: &Wave, number: u64) -> PullRequest {
    wave.server.with_state(|state| state.pulls[&number].clone())
}

fn branch_exists(wave: &Wave, candidate: &str) -> bool {
    wave.server.with_state(|state| {
        state
            .branch_sha(&recover_support::branch(candidate))
            .is_some()
    })
}

fn verdict(record: &serde_json::Value, candidate: &str) -> (String, String) {
    let found = record["plan"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["candidate"] == candidate)
        .unwrap_or_else(|| panic!("{candidate} is in the plan"));
    (
        found["verdict"].as_str().unwrap().to_string(),
        found["outcome"].as_str().unwrap_or("").to_string(),
    )
}

#[test]
fn the_demo_wave_does_what_its_account_says() {
    let wave = run_wave(false);
    let account = wave.lines.join("\n");
    let seeded = wave.seeded.clone();

    // The first recovery pass: the abandoned bot draft is swept, the maintainer-closed session
    // reconciled (its pull request and branch left as the maintainer left them).
    let abandoned = pull(&wave, seeded.abandoned);
    assert_eq!(abandoned.state, PullState::Closed, "{account}");
    assert_eq!(abandoned.closed_by.as_deref(), Some(recover_support::BOT));
    assert!(!branch_exists(&wave, ABANDONED));
    assert_eq!(
        verdict(&wave.first_recover, ABANDONED).0,
        "swept",
        "{account}"
    );
    assert_eq!(
        verdict(&wave.first_recover, CLOSED_BY_MAINTAINER),
        ("reconciled".to_string(), "closed-by-maintainer".to_string())
    );
    let closed = pull(&wave, seeded.closed_by_maintainer);
    assert_eq!(
        closed.closed_by.as_deref(),
        Some(recover_support::MAINTAINER)
    );
    assert!(branch_exists(&wave, CLOSED_BY_MAINTAINER));

    // Maintainers' pull requests are never touched.
    for number in [seeded.handed_off, seeded.maintainers_own] {
        let untouched = pull(&wave, number);
        assert_eq!(untouched.state, PullState::Open, "#{number}");
        assert_eq!(untouched.updated_at, untouched.created_at, "#{number}");
    }
    let touching_maintainers: Vec<String> = wave
        .server
        .request_log()
        .iter()
        .filter(|request| request.is_write())
        .filter(|request| {
            [seeded.handed_off, seeded.maintainers_own]
                .iter()
                .any(|number| {
                    request.path.contains(&format!("/pulls/{number}"))
                        || request.path.contains(&format!("/issues/{number}/"))
                })
        })
        .map(|request| format!("{} {}", request.method, request.path))
        .collect();
    assert!(touching_maintainers.is_empty(), "{touching_maintainers:?}");

    // Selection: cooling, held and occupied families are not selected; the cap holds.
    let decision = |id: &str| wave.selection[id].as_str();
    assert_eq!(decision(COOLING), "cooling-down");
    assert_eq!(decision(SAME_FAMILY), "cooling-down");
    assert_eq!(decision(HANDED_OFF), "occupied");
    assert_eq!(decision(OVER_CAP), "over-cap");
    assert_eq!(wave.selected, [VALIDATED, FAILED, NO_CAPACITY, INTERRUPTED]);

    // Finish: the validated draft is ready and kept, the others closed and their branches gone.
    let validated = pull(&wave, wave.agent_pulls[VALIDATED]);
    assert_eq!(validated.state, PullState::Open);
    assert!(
        !validated.draft,
        "the validated pull request is ready for review"
    );
    assert_eq!(validated.labels, ["klaud-finished"]);
    assert!(branch_exists(&wave, VALIDATED));
    for (candidate, label) in [(FAILED, "klaud-error"), (NO_CAPACITY, "klaud-infra")] {
        let closed = pull(&wave, wave.agent_pulls[candidate]);
        assert_eq!(closed.state, PullState::Closed, "{candidate}");
        assert_eq!(closed.labels, [label], "{candidate}");
        assert!(!branch_exists(&wave, candidate), "{candidate}");
        assert_eq!(
            wave.finished[candidate]["plan"]["outcome"],
            candidate_outcome(candidate)
        );
    }

    // Wake dispatched exactly one recovery pass, which reconciled the interrupted session.
    assert!(wave.wake_dispatched);
    assert_eq!(wave.wake["decision"], "dispatch");
    let dispatches = wave.server.with_state(|state| state.dispatches.clone());
    assert_eq!(dispatches.len(), 1);
    assert_eq!(dispatches[0].inputs, serde_json::json!({"wake": "true"}));
    assert_eq!(
        verdict(&wave.last_recover, INTERRUPTED),
        ("reconciled".to_string(), "no-outcome".to_string())
    );
    let interrupted = pull(&wave, wave.agent_pulls[INTERRUPTED]);
    assert_eq!(interrupted.state, PullState::Closed);
    assert!(!branch_exists(&wave, INTERRUPTED));

    // The ledger: every session finished with its outcome, no claim, the lease free.
    let ledger = recover_support::stored_ledger(&wave.server);
    let outcome_of = |candidate: &str| {
        let session = ledger
            .sessions
            .iter()
            .rev()
            .find(|session| session.candidate == candidate)
            .unwrap_or_else(|| panic!("a session of {candidate}"));
        assert_eq!(session.state, SessionState::Finished, "{candidate}");
        session.outcome
    };
    assert_eq!(outcome_of(VALIDATED), Some(Outcome::Validated));
    assert_eq!(outcome_of(FAILED), Some(Outcome::Failed));
    assert_eq!(outcome_of(NO_CAPACITY), Some(Outcome::NoCapacity));
    assert_eq!(outcome_of(INTERRUPTED), Some(Outcome::NoOutcome));
    assert_eq!(
        outcome_of(CLOSED_BY_MAINTAINER),
        Some(Outcome::ClosedByMaintainer)
    );
    assert!(ledger.claims.is_empty(), "{:?}", ledger.claims);
    assert!(ledger.recovery_lease.is_none());

    // The account stays short enough to read in a terminal.
    assert!(wave.lines.len() < 150, "{} lines", wave.lines.len());
}

fn candidate_outcome(candidate: &str) -> &'static str {
    match candidate {
        FAILED => "failed",
        NO_CAPACITY => "no-capacity",
        other => panic!("no outcome for {other}"),
    }
}
