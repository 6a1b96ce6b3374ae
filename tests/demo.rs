//! The demo wave (`cargo run --example demo`, `tests/demo/mod.rs`) checked on its key facts, so
//! the README's first command keeps showing what klaud does: what each step decided, what it
//! changed on the fake GitHub and what it left alone.

#![allow(clippy::disallowed_methods)] // the wave starts the klaud binary

#[path = "demo/mod.rs"]
mod demo;
use klaud_fake_github as fake_github;
// It includes `step_support/` as `recover_support/` does: two copies of a few helpers.
#[allow(clippy::duplicate_mod)]
#[path = "github_mode_support/mod.rs"]
mod github_mode_support;
#[path = "recover_support/mod.rs"]
mod recover_support;

use demo::*;
use fake_github::{PullRequest, PullState};
use klaud::core::discovery::identity::candidate_id;
use klaud::core::discovery::observation::normalise_image;
use klaud::core::ledger::SessionState;
use klaud::core::outcome::Outcome;
use serde_json::Value;

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

fn verdict(record: &Value, candidate: &str) -> (String, String) {
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

/// A family's report in `discovery.json`.
fn family_report<'a>(discovery: &'a Value, family: &str) -> &'a Value {
    discovery["families"]
        .as_array()
        .unwrap()
        .iter()
        .find(|report| report["family"] == family)
        .unwrap_or_else(|| panic!("no report of {family}"))
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
    assert!(!branch_exists(&wave, &ABANDONED.id()));
    assert_eq!(
        verdict(&wave.first_recover, &ABANDONED.id()).0,
        "swept",
        "{account}"
    );
    assert_eq!(
        verdict(&wave.first_recover, &held_session()),
        ("reconciled".to_string(), "closed-by-maintainer".to_string())
    );
    let closed = pull(&wave, seeded.closed_by_maintainer);
    assert_eq!(
        closed.closed_by.as_deref(),
        Some(recover_support::MAINTAINER)
    );
    assert!(!branch_exists(&wave, &held_session()));

    // The maintainer sees each open klaud pull request's health: the handed-off one failed its
    // sweep, the earlier wave's validated one is running (four mi355x jobs on nine runners: one
    // wave of the median of 9 and 11 minutes), the one this wave validated passes.
    let health = |number: u64| {
        wave.status["pull-requests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|pull| pull["number"] == number)
            .unwrap_or_else(|| panic!("#{number} in {:#}", wave.status))
            .clone()
    };
    assert_eq!(health(seeded.handed_off)["health"], "failing");
    assert_eq!(
        health(seeded.handed_off)["failed"][0]["name"],
        "sweep b200 shard 2"
    );
    let waiting = health(seeded.waiting);
    assert_eq!(waiting["health"], "running");
    assert_eq!(waiting["pending"]["mi355x"], 4);
    assert_eq!(waiting["eta-minutes"], 10);
    assert_eq!(
        wave.status["almost-ready"],
        serde_json::json!([seeded.waiting])
    );
    assert_eq!(
        health(wave.agent_pulls[&wave.endings["validated"]])["health"],
        "passing"
    );

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

    // Discovery: every family of the checkout rendered at its HEAD; the free families are the
    // candidates, with the ids of their family and published image; the handed-off family is
    // occupied, the maintainer-closed one held, the failed one cooling down, the unpublished one
    // has no row, and the row no family matches is reported.
    let discovery = &wave.discovery;
    assert_eq!(discovery["base"], wave.checkout.head(), "{account}");
    assert_eq!(
        discovery["rendering"]["families"],
        wave.checkout.families().len()
    );
    assert_eq!(discovery["rendering"]["refused"], 0);
    let mut expected: Vec<String> = FREE
        .iter()
        .map(|family| candidate_id(family.family, &normalise_image(family.image)))
        .collect();
    let mut discovered = wave.discovered.clone();
    expected.sort();
    discovered.sort();
    assert_eq!(discovered, expected, "{account}");
    // Computed independently (Python's canonical JSON and SHA-256) for the enroot image, whose
    // id is made from its normalised `nvcr.io/nvidia/…` spelling.
    assert_eq!(FREE[0].id(), "b6f058db1a5afbfd-1e6fa8d804bf7b88");
    for family in FREE {
        let report = family_report(discovery, family.family);
        assert_eq!(report["fate"], "candidate");
        assert_eq!(report["candidate"], family.id());
    }
    let mut families = wave.checkout.families();
    let mut named: Vec<String> = [HELD, COOLING, HANDED_OFF, UNPUBLISHED]
        .iter()
        .chain(&FREE)
        .map(|family| family.family.to_string())
        .collect();
    families.sort();
    named.sort();
    assert_eq!(
        families, named,
        "the checkout has the families the demo names"
    );
    assert!(!families.iter().any(|family| family == ABANDONED.family));
    for candidate in wave.candidates.as_array().unwrap() {
        let family = FREE
            .iter()
            .find(|family| candidate["family"] == family.family)
            .unwrap_or_else(|| panic!("{candidate} is of a free family"));
        assert_eq!(candidate["source"]["image"], family.image);
        assert_eq!(candidate["base"], wave.checkout.head());
    }
    let ids_in_file: Vec<&str> = wave
        .candidates
        .as_array()
        .unwrap()
        .iter()
        .map(|candidate| candidate["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids_in_file, wave.discovered,
        "the file is in the run's order"
    );
    for (family, fate) in [
        (HANDED_OFF, "occupied"),
        (HELD, "held"),
        (COOLING, "cooling-down"),
        (UNPUBLISHED, "no-published-row"),
    ] {
        assert_eq!(
            family_report(discovery, family.family)["fate"],
            fate,
            "{}",
            family.family
        );
    }
    assert_eq!(discovery["row-counts"]["no-family"], 1);
    assert!(account.contains("occupied: "), "{account}");

    // Selection from discover's candidates: the cap takes the first four in discover's order.
    let decisions: Vec<&str> = wave
        .discovered
        .iter()
        .map(|id| wave.selection[id].as_str())
        .collect();
    assert_eq!(
        decisions,
        ["selected", "selected", "selected", "selected", "over-cap"]
    );
    assert_eq!(wave.selected, wave.discovered[..4]);

    // Finish: the validated draft is ready and kept, the others closed and their branches gone.
    let validated = &wave.endings["validated"];
    let ready = pull(&wave, wave.agent_pulls[validated]);
    assert_eq!(ready.state, PullState::Open);
    assert!(
        !ready.draft,
        "the validated pull request is ready for review"
    );
    assert_eq!(ready.labels, ["klaud-finished"]);
    assert!(branch_exists(&wave, validated));
    for (ending, label) in [("failed", "klaud-error"), ("no-capacity", "klaud-infra")] {
        let candidate = &wave.endings[ending];
        let closed = pull(&wave, wave.agent_pulls[candidate]);
        assert_eq!(closed.state, PullState::Closed, "{ending}");
        assert_eq!(closed.labels, [label], "{ending}");
        assert!(!branch_exists(&wave, candidate), "{ending}");
        assert_eq!(wave.finished[candidate]["plan"]["outcome"], ending);
    }

    // Wake dispatched exactly one recovery pass, which reconciled the interrupted session.
    let interrupted = &wave.endings["interrupted"];
    assert!(wave.wake_dispatched);
    assert_eq!(wave.wake["decision"], "dispatch");
    let dispatches = wave.server.with_state(|state| state.dispatches.clone());
    assert_eq!(dispatches.len(), 1);
    assert_eq!(dispatches[0].inputs, serde_json::json!({"wake": "true"}));
    assert_eq!(
        verdict(&wave.last_recover, interrupted),
        ("reconciled".to_string(), "no-outcome".to_string())
    );
    let closed = pull(&wave, wave.agent_pulls[interrupted]);
    assert_eq!(closed.state, PullState::Closed);
    assert!(!branch_exists(&wave, interrupted));

    // The ledger: every session finished with its outcome and its discovered family, no claim,
    // the lease free.
    let ledger = recover_support::stored_ledger(&wave.server);
    let outcome_of = |candidate: &str| {
        let session = ledger
            .sessions
            .iter()
            .rev()
            .find(|session| session.candidate == candidate)
            .unwrap_or_else(|| panic!("a session of {candidate}"));
        assert_eq!(session.state, SessionState::Finished, "{candidate}");
        if let Some(family) = FREE.iter().find(|family| family.id() == candidate) {
            assert_eq!(session.family, family.family);
        }
        session.outcome
    };
    assert_eq!(outcome_of(validated), Some(Outcome::Validated));
    assert_eq!(outcome_of(&wave.endings["failed"]), Some(Outcome::Failed));
    assert_eq!(
        outcome_of(&wave.endings["no-capacity"]),
        Some(Outcome::NoCapacity)
    );
    assert_eq!(outcome_of(interrupted), Some(Outcome::NoOutcome));
    assert_eq!(
        outcome_of(&held_session()),
        Some(Outcome::ClosedByMaintainer)
    );
    assert!(ledger.claims.is_empty(), "{:?}", ledger.claims);
    assert!(ledger.recovery_lease.is_none());

    // The account stays short enough to read in a terminal.
    assert!(wave.lines.len() < 150, "{} lines", wave.lines.len());
}
