//! Ledgers written by earlier releases read back with nothing lost.
//!
//! `fixtures/ledger-v1/ledger.json` is the ledger the 0.1.0 release binary (`dist/` at the
//! `92fb9ad` release point) wrote after one recovery pass over a repository with each kind of
//! thing recovery remembers: a leftover branch of a pull request a maintainer closed, an
//! abandoned draft with a maintainer's commit below the bot's head, a draft whose head a
//! maintainer moved, a legacy lock ref that names no run, and a live session with its claim.
//! `regenerate_the_version_1_ledger_with_the_first_release` (ignored) writes it again while
//! `dist/` still holds that binary.

#![allow(clippy::disallowed_methods)] // the generator runs the release binary

use klaud_fake_github as fake_github;
#[path = "recover_support/mod.rs"]
mod recover_support;

use klaud::core::ledger::{KeptObject, KeptVerdict, LEDGER_VERSION, Ledger};
use recover_support::*;
use serde_json::Value;

const FIXTURE: &str = "tests/fixtures/ledger-v1/ledger.json";

#[test]
fn the_ledger_the_first_release_wrote_reads_back_with_nothing_lost() {
    let text = std::fs::read_to_string(FIXTURE).expect("the version-1 fixture");
    let raw: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(raw["version"], 1);

    let ledger = Ledger::from_json(&text).expect("a version-1 ledger reads");

    assert_eq!(ledger.version, LEDGER_VERSION);
    let upgraded: Value = serde_json::from_str(&ledger.to_json()).unwrap();
    for field in ["sessions", "claims", "recovery-lease"] {
        assert_eq!(upgraded[field], raw[field], "{field} kept as written");
    }
    let raw_kept = raw["kept"].as_array().expect("kept entries");
    assert_eq!(ledger.kept.len(), raw_kept.len());
    assert!(raw_kept.len() >= 4, "the fixture remembers each kind");
    for (kept, raw) in ledger.kept.iter().zip(raw_kept) {
        let object = raw["object"].as_str().unwrap();
        match &kept.object {
            KeptObject::Branch(name) => assert_eq!(object, format!("branch:{name}")),
            KeptObject::PullRequest(number) => {
                assert_eq!(object, format!("pull-request:{number}"));
            }
        }
        assert_eq!(raw["sha"], kept.sha.as_str());
        assert_eq!(raw["since"], serde_json::to_value(kept.since).unwrap());
        let reason = raw["reason"].as_str().unwrap();
        match kept.verdict {
            KeptVerdict::NeedsInspection => {
                assert_eq!(reason, format!("needs inspection: {}", kept.reason));
            }
            KeptVerdict::LeftAlone if reason.starts_with("left alone: ") => {
                assert_eq!(reason, format!("left alone: {}", kept.reason));
            }
            KeptVerdict::LeftAlone => assert_eq!(reason, kept.reason),
        }
    }
    assert!(
        ledger
            .kept
            .iter()
            .any(|kept| kept.verdict == KeptVerdict::NeedsInspection)
    );
    assert!(
        ledger
            .kept
            .iter()
            .any(|kept| matches!(kept.object, KeptObject::PullRequest(_))
                && kept.verdict == KeptVerdict::LeftAlone)
    );
    // What this version writes reads back the same.
    assert_eq!(Ledger::from_json(&ledger.to_json()).unwrap(), ledger);
}

#[test]
#[ignore = "writes the fixture with the 0.1.0 binary while dist/ holds it"]
fn regenerate_the_version_1_ledger_with_the_first_release() {
    let binary = std::path::Path::new("dist/x86_64-unknown-linux-gnu/klaud");
    let version = std::process::Command::new(binary)
        .arg("--version")
        .output()
        .expect("the release binary runs");
    assert!(
        String::from_utf8_lossy(&version.stdout).starts_with("klaud 0.1.0"),
        "dist/ no longer holds the 0.1.0 binary"
    );
    let mut world = World::new();
    let old = world.finished_planner(30, &[]);
    let running = world.running_planner(&["live"]);
    let closed = world.closed_bot_pull("closed", MAINTAINER, true);
    world.session(
        "closed",
        klaud::core::ledger::SessionState::Finished,
        old,
        Some(closed),
    );
    let commits = vec![
        world.maintainer_commit("commit", 12),
        world.bot_commit("commit", 10),
    ];
    world.bot_pull("commit", true, commits, &["klaud-in-progress"]);
    let commits = vec![
        world.bot_commit("moved", 12),
        world.maintainer_commit("moved", 10),
    ];
    world.bot_pull("moved", true, commits, &["klaud-in-progress"]);
    let live = world.bot_draft("live");
    world.session(
        "live",
        klaud::core::ledger::SessionState::Live,
        running,
        Some(live),
    );
    world.claim("live", running);
    world.lock_ref("klaud/claim-orphan");
    // The document as the first release writes it (nothing in it differs between the versions
    // before recovery remembers something).
    world.ledger.version = 1;
    let server = world.start();
    let pass = Pass::new(77_000_000_001);
    let mut command = std::process::Command::new(binary);
    let template = pass.mode_command(&server, "recover");
    for (name, value) in template.get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command.args(template.get_args());
    let output = command.output().expect("the release binary runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let text = server
        .with_state(|state| state.read_file(STATE_BRANCH, LEDGER_FILE))
        .expect("the ledger was written");
    std::fs::create_dir_all("tests/fixtures/ledger-v1").unwrap();
    std::fs::write(FIXTURE, text).unwrap();
}
