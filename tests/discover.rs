//! `klaud discover` end to end (contract §11): the real InferenceX master configs at 843c6254f
//! rendered by a generator that answers with the real generator's recorded output for every
//! family (`discovery_support/recorded_generator.py`), a derived `latest-images` catalog served
//! by a loopback server, and the fake GitHub holding the ledger, klaud's pull requests and its
//! branches. Candidate ids are checked against values computed independently (Python's
//! `json.dumps(x, sort_keys=True, separators=(",", ":"))` and SHA-256).

#![allow(clippy::disallowed_methods)] // tests start processes and read files

#[path = "discovery_support/mod.rs"]
mod discovery_support;
use klaud_fake_github as fake_github;
#[path = "recover_support/mod.rs"]
mod recover_support;

use std::path::Path;
use std::time::Duration;

use discovery_support::{Checkout, Feed, FeedServer, derived_catalog, fixtures, serve};
use klaud::core::ledger::SessionState;
use klaud::core::outcome::Outcome;
use recover_support::*;
use serde_json::Value;

const RUN: u64 = 70_000_001;

/// A render cache the tests share (the renderings of identical inputs are the same): only the
/// first discovery of a test binary runs the generator for every family.
fn shared_render_cache(pass: &Pass) {
    let shared = Path::new(env!("CARGO_TARGET_TMPDIR")).join("discover-render-cache");
    std::fs::create_dir_all(&shared).unwrap();
    let _ = std::fs::remove_dir_all(pass.path("render-cache"));
    std::os::unix::fs::symlink(&shared, pass.path("render-cache")).unwrap();
}

/// `klaud discover` against `server`, expecting `code`; returns the log.
fn discover(
    server: &fake_github::FakeGitHubHandle,
    pass: &Pass,
    checkout: &Checkout,
    config: &str,
    code: i32,
) -> String {
    std::fs::write(pass.path("klaud.yml"), config).unwrap();
    let mut command = assert_cmd::Command::from_std(pass.mode_command(server, "discover"));
    command
        .arg("--repo-path")
        .arg(checkout.root())
        .arg("--render-cache")
        .arg(pass.path("render-cache"))
        .timeout(Duration::from_secs(300));
    let assert = command.assert();
    let output = assert.get_output();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(code), "{log}");
    log
}

fn config(feed: &FeedServer, extra: &str) -> String {
    format!("discovery:\n  feeds:\n    images: {}\n{extra}", feed.url)
}

fn read_json(pass: &Pass, name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(pass.path(&format!("out/{name}"))).unwrap())
        .unwrap()
}

fn fate(record: &Value, family: &str) -> String {
    record["families"]
        .as_array()
        .unwrap()
        .iter()
        .find(|report| report["family"] == family)
        .unwrap_or_else(|| panic!("no report of {family}"))["fate"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Five ids computed independently: Python's canonical JSON and SHA-256 of the family and of
/// its normalised image (the enroot `nvcr.io#…` image of dsr1-fp4-b200-trt read as `nvcr.io/…`).
const EXPECTED_IDS: [(&str, &str); 5] = [
    (
        "configs/nvidia-master.yaml:dsr1-fp4-gb200-dynamo-trt",
        "a701f552c7b4e62e-6840bf8377fd5012",
    ),
    (
        "configs/amd-master.yaml:dsr1-fp4-mi355x-sglang",
        "03fbec6d05da3ebb-f454043d700e2dd0",
    ),
    (
        "configs/nvidia-master.yaml:dsv4-fp4-b200-vllm",
        "3f4d1fc2ee333e44-72c5e285f756ceb7",
    ),
    (
        "configs/nvidia-master.yaml:dsr1-fp4-b200-trt",
        "2d834450ad0a6d16-1e6fa8d804bf7b88",
    ),
    (
        "configs/amd-master.yaml:dsr1-fp4-mi355x-sglang-disagg",
        "3014d66c8ec28fca-a94694cac9909b2d",
    ),
];

#[test]
fn the_real_843c6254f_configs_are_discovered_with_the_reference_ids_and_every_fate() {
    let checkout = Checkout::new();
    let feed = serve(Feed::Catalog(derived_catalog()));
    let server = World::new().start();
    let pass = Pass::new(RUN);
    let config = config(&feed, "  review-batch-size: 256\n");

    let log = discover(&server, &pass, &checkout, &config, 0);

    let record = read_json(&pass, "discovery.json");
    assert_eq!(record["rendering"]["families"], 208, "{log}");
    assert_eq!(record["rendering"]["generator-runs"], 208);
    assert_eq!(record["rendering"]["refused"], 0);
    assert_eq!(record["base"], checkout.head());
    assert_eq!(
        record["files"],
        serde_json::json!(["configs/amd-master.yaml", "configs/nvidia-master.yaml"])
    );
    let candidates = read_json(&pass, "candidates.json");
    let candidates = candidates.as_array().unwrap();
    for (family, id) in EXPECTED_IDS {
        let candidate = candidates
            .iter()
            .find(|candidate| candidate["family"] == family)
            .unwrap_or_else(|| panic!("{family} was not discovered: {}", fate(&record, family)));
        assert_eq!(candidate["id"], id, "{family}");
        assert_eq!(candidate["branch"], format!("klaud/auto-{id}"));
        assert_eq!(candidate["base"], checkout.head());
    }
    // The enroot row is kept as published in `source`.
    let enroot = candidates
        .iter()
        .find(|c| c["family"] == EXPECTED_IDS[3].0)
        .unwrap();
    assert_eq!(
        enroot["source"]["image"],
        "nvcr.io#nvidia/tensorrt-llm/release:1.3.0rc14"
    );
    // The families the publisher spells otherwise (sglang-disagg → mori-sglang, atom-disagg →
    // mooncake-atom) are found.
    let respelled = ["sglang-disagg", "atom-disagg"];
    let recorded: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("discovery/generator-843c6254f.json")).unwrap(),
    )
    .unwrap();
    let families_respelled: Vec<&String> =
        recorded["families"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, family)| {
                family["entries"].as_array().unwrap().iter().any(|entry| {
                    respelled.contains(&entry["framework"].as_str().unwrap_or_default())
                })
            })
            .map(|(name, _)| name)
            .collect();
    assert_eq!(families_respelled.len(), 11);
    let found = |record: &Value| {
        families_respelled
            .iter()
            .filter(|family| fate(record, family) == "candidate")
            .count()
    };
    // Two of them share one published observation whose newest image is one of theirs
    // (dsr1-fp4-mi355x-sglang-disagg-mtp and its 8k1k sibling), so ten are found; without the
    // publisher's spellings none is.
    assert_eq!(found(&record), 10);
    // Every family and row has a fate with a reason; the counts add up.
    let families = record["families"].as_array().unwrap();
    assert_eq!(families.len(), 208);
    assert!(
        families
            .iter()
            .all(|f| !f["reason"].as_str().unwrap().is_empty())
    );
    let rows = record["rows"].as_array().unwrap();
    let catalog: Value = serde_json::from_slice(&derived_catalog()).unwrap();
    assert_eq!(rows.len(), catalog.as_array().unwrap().len());
    let row_fates: std::collections::BTreeSet<&str> = rows
        .iter()
        .map(|row| row["fate"].as_str().unwrap())
        .collect();
    for expected in ["candidate", "no-family", "invalid"] {
        assert!(row_fates.contains(expected), "{row_fates:?}");
    }
    let invalid: Vec<&Value> = rows.iter().filter(|row| row["fate"] == "invalid").collect();
    // The four made invalid, and a real published row without an image (dsr1 on mi355x,
    // 2025-10-06).
    assert_eq!(invalid.len(), 5);
    assert!(
        invalid
            .iter()
            .any(|row| row["fields"] == serde_json::json!(["image"]))
    );
    assert!(log.contains("::warning::discover: catalog row"), "{log}");
    let total: u64 = record["family-counts"]
        .as_object()
        .unwrap()
        .values()
        .map(|count| count.as_u64().unwrap())
        .sum();
    assert_eq!(total, 208);
    let outputs = pass.outputs();
    assert_eq!(outputs["has-candidates"], "true");
    assert_eq!(outputs["candidates"], candidates.len().to_string());
    let discovered: Vec<String> = serde_json::from_str(&outputs["discovered"]).unwrap();
    assert_eq!(discovered.len(), candidates.len());
    assert!(
        server
            .request_log()
            .iter()
            .all(|request| !request.is_write()),
        "discover never writes to GitHub"
    );

    // The same planner run orders the same way, from the render cache this time.
    let again = Pass::new(RUN);
    copy_dir(&pass.path("render-cache"), &again.path("render-cache"));
    discover(&server, &again, &checkout, &config, 0);
    let repeated: Vec<String> = serde_json::from_str(&again.outputs()["discovered"]).unwrap();
    assert_eq!(repeated, discovered);
    let record = read_json(&again, "discovery.json");
    assert_eq!(record["rendering"]["generator-runs"], 0);
    assert_eq!(record["rendering"]["from-cache"], 208);

    let unspelled = Pass::new(RUN);
    copy_dir(&pass.path("render-cache"), &unspelled.path("render-cache"));
    let plain = format!("{config}  published-as: {{}}\n  disagg-framework-prefixes: []\n");
    discover(&server, &unspelled, &checkout, &plain, 0);
    assert_eq!(found(&read_json(&unspelled, "discovery.json")), 0);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn occupied_claimed_cooling_held_and_cut_families_are_left_out() {
    let checkout = Checkout::new();
    let feed = serve(Feed::Catalog(derived_catalog()));
    let mut world = World::new();
    let [live, pull, claimed, cooling, held] = [
        EXPECTED_IDS[0],
        EXPECTED_IDS[1],
        EXPECTED_IDS[2],
        EXPECTED_IDS[3],
        EXPECTED_IDS[4],
    ];
    // A live session of the first family (an older image's id: the family part decides).
    let older = format!("{}-0000000000000000", &live.1[..16]);
    let parent = world.running_planner(&[]);
    world.session(&older, SessionState::Live, parent, None);
    world.ledger.sessions.last_mut().unwrap().family = live.0.to_string();
    // An open klaud pull request of the second.
    world.bot_draft(pull.1);
    // A claim alone of the third.
    world.claim(claimed.1, parent);
    world.ledger.claims.last_mut().unwrap().family = claimed.0.to_string();
    // The fourth's very candidate found its assets missing an hour ago: cooling down.
    let finished_parent = world.finished_planner(2, &[cooling.1]);
    world.session(cooling.1, SessionState::Finished, finished_parent, None);
    let session = world.ledger.sessions.last_mut().unwrap();
    session.family = cooling.0.to_string();
    session.outcome = Some(Outcome::MissingAssets);
    session.finished_at = Some(chrono::Utc::now() - chrono::Duration::hours(1));
    // A maintainer closed another candidate of the fifth: the whole family is held.
    world.session(
        "someone-else",
        SessionState::Finished,
        finished_parent,
        None,
    );
    let session = world.ledger.sessions.last_mut().unwrap();
    session.family = held.0.to_string();
    session.outcome = Some(Outcome::ClosedByMaintainer);
    session.finished_at = Some(chrono::Utc::now() - chrono::Duration::hours(1));
    let server = world.start();
    let pass = Pass::new(RUN);
    shared_render_cache(&pass);

    discover(&server, &pass, &checkout, &config(&feed, ""), 0);

    let record = read_json(&pass, "discovery.json");
    assert_eq!(fate(&record, live.0), "occupied");
    assert_eq!(fate(&record, pull.0), "occupied");
    assert_eq!(fate(&record, claimed.0), "claimed");
    assert_eq!(fate(&record, cooling.0), "cooling-down");
    assert_eq!(fate(&record, held.0), "held");
    // The default review batch: 64 candidates, the rest cut.
    let candidates = read_json(&pass, "candidates.json");
    assert_eq!(candidates.as_array().unwrap().len(), 64);
    assert!(record["family-counts"]["cut"].as_u64().unwrap() > 0);
    let ids: Vec<&str> = candidates
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    for (_, id) in EXPECTED_IDS {
        assert!(!ids.contains(&id), "{id} is left out");
    }
}

#[test]
fn a_key_the_generator_refuses_is_reported_and_the_others_go_on() {
    let checkout = Checkout::new();
    let amd = checkout.root().join("configs/amd-master.yaml");
    let mut text = std::fs::read_to_string(&amd).unwrap();
    text.push_str("\nnot-recorded-key:\n  image: x\n");
    std::fs::write(&amd, text).unwrap();
    // A master file that cannot be read at all contributes nothing and hides nothing.
    std::fs::write(
        checkout.root().join("configs/amd-broken-master.yaml"),
        "a: [unclosed\n",
    )
    .unwrap();
    checkout.commit("a key the generator refuses, a file that is not YAML");
    let feed = serve(Feed::Catalog(derived_catalog()));
    let server = World::new().start();
    let pass = Pass::new(RUN);
    shared_render_cache(&pass);

    let log = discover(
        &server,
        &pass,
        &checkout,
        &config(&feed, "  configs: [configs/amd-*.yaml]\n"),
        0,
    );

    assert!(
        log.contains("::warning::discover: configs/amd-master.yaml:not-recorded-key is skipped: the generator refused it (exit 1): KeyError"),
        "{log}"
    );
    let record = read_json(&pass, "discovery.json");
    assert_eq!(
        fate(&record, "configs/amd-master.yaml:not-recorded-key"),
        "unrenderable"
    );
    assert_eq!(
        record["files"],
        serde_json::json!(["configs/amd-broken-master.yaml", "configs/amd-master.yaml"])
    );
    assert!(
        log.contains("::warning::discover: configs/amd-broken-master.yaml contributes no family: not valid YAML"),
        "{log}"
    );
    let unreadable = record["unreadable-files"].as_array().unwrap();
    assert_eq!(unreadable.len(), 1);
    assert_eq!(unreadable[0]["file"], "configs/amd-broken-master.yaml");
    assert!(
        unreadable[0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("not valid YAML")
    );
    assert!(record["families"].as_array().unwrap().iter().all(|family| {
        !family["family"]
            .as_str()
            .unwrap()
            .starts_with("configs/amd-broken")
    }));
    assert!(pass.outputs()["has-candidates"] == "true");
}

#[test]
fn a_feed_that_fails_fails_the_step_and_writes_no_candidates() {
    let checkout = Checkout::new();
    let server = World::new().start();
    for (feed, expected) in [
        (Feed::NotJson, "not JSON"),
        (Feed::WrongType, "text/html"),
        (Feed::Redirect, "redirect refused"),
        (Feed::TooLarge, "limit"),
        (
            Feed::Catalog(b"{\"rows\": []}".to_vec()),
            "not a JSON array",
        ),
    ] {
        let feed = serve(feed);
        let pass = Pass::new(RUN);
        shared_render_cache(&pass);
        // An earlier discovery's candidates file is not left behind either.
        std::fs::create_dir_all(pass.path("out")).unwrap();
        std::fs::write(pass.path("out/candidates.json"), "[]").unwrap();
        let log = discover(
            &server,
            &pass,
            &checkout,
            &config(&feed, "  configs: [configs/amd-*.yaml]\n"),
            1,
        );
        assert!(log.contains(expected), "{expected}: {log}");
        assert!(!pass.path("out/candidates.json").exists(), "{expected}");
        let record = read_json(&pass, "discovery.json");
        assert!(
            record["error"].as_str().unwrap().contains(expected),
            "{record}"
        );
        assert!(
            pass.outputs().is_empty(),
            "no outputs: {:?}",
            pass.outputs()
        );
    }
}
