//! `discover`'s decision on small worlds.

use std::collections::BTreeSet;

use serde_json::json;

use super::catalog::read_catalog;
use super::identity::identity_of_text;
use super::observation::tests::inferencex_spellings;
use super::*;
use crate::core::outcome::Outcome;
use crate::core::policy::tests::inferencex_policy;
use crate::core::select::OpenPullRequest;
use crate::core::snapshot::Listed;
use crate::core::test_support::at;

const REPOSITORY: &str = "acme/bench";

fn entry(framework: &str, image: &str, isl: u64) -> Value {
    json!({"model-prefix": "dsr1", "runner": "cluster:b200-dgxc", "framework": framework,
           "precision": "fp4", "spec-decoding": "none", "disagg": false, "isl": isl,
           "osl": 1024, "image": image})
}

fn row(framework: &str, image: &str, isl: u64, date: &str) -> Value {
    json!({"model": "dsr1", "hardware": "b200", "framework": framework, "precision": "fp4",
           "spec_method": "none", "disagg": false, "isl": isl, "osl": 1024,
           "benchmark_type": "single_turn", "image": image, "date": date})
}

fn family(name: &str, entries: Value) -> Family {
    Family {
        name: name.to_string(),
        rendering: render_keys(&entries, &inferencex_spellings()),
    }
}

struct World {
    families: Vec<Family>,
    catalog: Catalog,
    ledger: Ledger,
    github: GitHubFacts,
    capacity: CapacityGate,
    batch: usize,
    run_id: u64,
    policy: Policy,
}

impl World {
    fn new(families: Vec<Family>, rows: Value) -> Self {
        World {
            families,
            catalog: read_catalog(&rows).unwrap(),
            ledger: Ledger::empty(),
            github: GitHubFacts {
                repository: REPOSITORY.into(),
                open_pull_requests: Listed::complete(Vec::new()),
                candidate_branches: Listed::complete(Vec::new()),
            },
            capacity: CapacityGate::Open,
            batch: DEFAULT_REVIEW_BATCH_SIZE,
            run_id: 42,
            policy: inferencex_policy(),
        }
    }

    fn decide(&self) -> Discovery {
        let policy = &self.policy;
        let legacy = vec!["klaude/auto-".to_string()];
        let base = "b".repeat(40);
        let run = DiscoveryRun {
            policy,
            legacy_branch_prefixes: &legacy,
            base: &base,
            run_id: self.run_id,
            review_batch_size: self.batch,
            now: at("2026-09-01T00:00:00Z"),
        };
        discover(
            DiscoverySnapshot {
                families: &self.families,
                catalog: &self.catalog,
                ledger: &self.ledger,
                github: &self.github,
                capacity: &self.capacity,
            },
            &run,
        )
    }
}

fn fate_of<'d>(discovery: &'d Discovery, family: &str) -> &'d FamilyReport {
    discovery
        .families
        .iter()
        .find(|report| report.family == family)
        .unwrap_or_else(|| panic!("no report of {family}"))
}

/// Two families of one key, one of another, and rows for both keys at two dates.
fn two_keys() -> World {
    World::new(
        vec![
            family(
                "m.yaml:b",
                json!([entry("vllm", "img:1", 1024), entry("vllm", "img:1", 8192)]),
            ),
            family(
                "m.yaml:a",
                json!([entry("vllm", "img:1", 1024), entry("vllm", "img:1", 8192)]),
            ),
            family("m.yaml:c", json!([entry("sglang", "img:2", 8192)])),
        ],
        json!([
            row("vllm", "img:1", 8192, "2026-07-01"),
            row("vllm", "img:1", 1024, "2026-08-01"),
            row("sglang", "img:2", 8192, "2026-08-02"),
            row("trt", "img:9", 1024, "2026-08-03"),
            {"model": "dsr1"}
        ]),
    )
}

#[test]
fn each_family_takes_its_newest_row_and_two_families_share_one() {
    let discovery = two_keys().decide();
    let ids: BTreeSet<String> = discovery.candidate_ids().into_iter().collect();
    let expected: BTreeSet<String> = [
        candidate_id("m.yaml:a", "img:1"),
        candidate_id("m.yaml:b", "img:1"),
        candidate_id("m.yaml:c", "img:2"),
    ]
    .into_iter()
    .collect();
    assert_eq!(ids, expected);
    let fates: Vec<(usize, RowFate)> = discovery.rows.iter().map(|r| (r.index, r.fate)).collect();
    assert_eq!(
        fates,
        [
            (0, RowFate::OlderThan),
            (1, RowFate::Candidate),
            (2, RowFate::Candidate),
            (3, RowFate::NoFamily),
            (4, RowFate::Invalid),
        ]
    );
    assert_eq!(discovery.rows[1].candidates.len(), 2, "one row serves both");
    assert_eq!(discovery.rows[4].fields.len(), 10);
    let candidate = discovery
        .candidates
        .iter()
        .find(|c| c.family == "m.yaml:c")
        .unwrap();
    assert_eq!(candidate.branch, format!("klaud/auto-{}", candidate.id));
    assert_eq!(candidate.base, "b".repeat(40));
    assert_eq!(candidate.source().unwrap()["date"], "2026-08-02");
    assert_eq!(candidate.targets(), None);
    assert_eq!(discovery.family_counts[&FamilyFate::Candidate], 3);
}

#[test]
fn the_same_run_orders_the_same_way_and_another_run_may_not() {
    let families: Vec<Family> = (0..20)
        .map(|n| {
            family(
                &format!("m.yaml:k{n:02}"),
                json!([entry("vllm", "img:1", 1000 + n)]),
            )
        })
        .collect();
    let rows: Vec<Value> = (0..20)
        .map(|n| row("vllm", "img:1", 1000 + n, "2026-08-01"))
        .collect();
    let mut world = World::new(families, Value::Array(rows));
    let first = world.decide().candidate_ids();
    assert_eq!(world.decide().candidate_ids(), first);
    world.run_id = 43;
    let other = world.decide().candidate_ids();
    assert_ne!(other, first, "a 20-item shuffle with another seed");
    let mut sorted_first = first.clone();
    sorted_first.sort();
    let mut sorted_other = other;
    sorted_other.sort();
    assert_eq!(sorted_first, sorted_other);
}

#[test]
fn the_review_batch_cuts_the_rest() {
    let mut world = two_keys();
    world.batch = 1;
    let discovery = world.decide();
    assert_eq!(discovery.candidates.len(), 1);
    assert_eq!(discovery.family_counts[&FamilyFate::Cut], 2);
    let kept = &discovery.candidates[0].family;
    assert_eq!(fate_of(&discovery, kept).fate, FamilyFate::Candidate);
    // The rows of the families cut are cut too.
    assert_eq!(discovery.row_counts[&RowFate::Cut], 1);
    assert_eq!(discovery.row_counts[&RowFate::Candidate], 1);
}

#[test]
fn occupied_claimed_cooling_and_held_families_are_left_out_with_their_reasons() {
    // g alone has its own coarse key (model, hardware, framework, precision, spec, disagg).
    let framework = |n: usize| if n == 6 { "sglang" } else { "vllm" };
    let names = [
        "m.yaml:a", "m.yaml:b", "m.yaml:c", "m.yaml:d", "m.yaml:e", "m.yaml:f", "m.yaml:g",
    ];
    let families: Vec<Family> = names
        .iter()
        .enumerate()
        .map(|(n, name)| family(name, json!([entry(framework(n), "img:1", 100 + n as u64)])))
        .collect();
    let rows: Vec<Value> = (0..names.len())
        .map(|n| row(framework(n), "img:1", 100 + n as u64, "2026-08-01"))
        .collect();
    let mut world = World::new(families, Value::Array(rows));
    let id = |family: &str| candidate_id(family, "img:1");
    let finished = at("2026-08-31T00:00:00Z");
    // a: a live session of an older image of the family.
    let older = candidate_id("m.yaml:a", "img:0");
    world
        .ledger
        .claim_family(&older, "m.yaml:a", 7, finished)
        .unwrap();
    // b: a claim alone (its session finished without releasing is impossible, so drop it).
    world
        .ledger
        .claim_family("manual", "m.yaml:b", 8, finished)
        .unwrap();
    world.ledger.sessions.retain(|s| s.candidate != "manual");
    // c: cooling down: this very candidate found its assets missing yesterday.
    world
        .ledger
        .claim_family(&id("m.yaml:c"), "m.yaml:c", 9, finished)
        .unwrap();
    world
        .ledger
        .finish_session(&id("m.yaml:c"), Outcome::MissingAssets, true, finished);
    // d: held: another candidate of the family closed by a maintainer.
    let other_d = candidate_id("m.yaml:d", "img:0");
    world
        .ledger
        .claim_family(&other_d, "m.yaml:d", 10, finished)
        .unwrap();
    world
        .ledger
        .finish_session(&other_d, Outcome::ClosedByMaintainer, true, finished);
    // e: an open klaud pull request of an older image; a fork's of f's id is not klaud's.
    world.github.open_pull_requests = Listed::complete(vec![
        OpenPullRequest {
            number: 5,
            head_branch: format!("klaud/auto-{}", candidate_id("m.yaml:e", "img:0")),
            head_repository: Some(REPOSITORY.into()),
        },
        OpenPullRequest {
            number: 6,
            head_branch: format!("klaud/auto-{}", id("m.yaml:f")),
            head_repository: Some("fork/bench".into()),
        },
    ]);
    // g: a legacy branch of the reference system's coarse id.
    let coarse = match &world.families[6].rendering {
        Rendering::Keys(keys) => identity(&keys.iter().next().unwrap().coarse())[..16].to_string(),
        _ => unreachable!(),
    };
    world.github.candidate_branches = Listed::complete(vec![format!("klaude/auto-{coarse}")]);
    let discovery = world.decide();
    let fates: Vec<(&str, FamilyFate)> = names
        .iter()
        .map(|name| (*name, fate_of(&discovery, name).fate))
        .collect();
    assert_eq!(
        fates,
        [
            ("m.yaml:a", FamilyFate::Occupied),
            ("m.yaml:b", FamilyFate::Claimed),
            ("m.yaml:c", FamilyFate::CoolingDown),
            ("m.yaml:d", FamilyFate::Held),
            ("m.yaml:e", FamilyFate::Occupied),
            ("m.yaml:f", FamilyFate::Candidate),
            ("m.yaml:g", FamilyFate::Occupied),
        ]
    );
    assert!(
        fate_of(&discovery, "m.yaml:a")
            .reason
            .contains("live session")
    );
    assert!(fate_of(&discovery, "m.yaml:e").reason.contains("#5"));
    assert!(
        fate_of(&discovery, "m.yaml:g")
            .reason
            .contains("klaude/auto-")
    );
    assert_eq!(discovery.candidate_ids(), [id("m.yaml:f")]);
    // Each row takes its family's fate, with the family's reason.
    let row_fates: Vec<RowFate> = discovery.rows.iter().map(|row| row.fate).collect();
    assert_eq!(
        row_fates,
        [
            RowFate::Occupied,
            RowFate::Claimed,
            RowFate::CoolingDown,
            RowFate::Held,
            RowFate::Occupied,
            RowFate::Candidate,
            RowFate::Occupied,
        ]
    );
    for (row, name) in discovery.rows.iter().zip(names) {
        assert!(
            row.reason.starts_with(&format!("{name}: ")) || row.fate == RowFate::Candidate,
            "{row:?}"
        );
    }
}

#[test]
fn the_capacity_gate_keeps_rows_whose_hardware_has_an_eligible_target() {
    let mut world = two_keys();
    world.capacity = CapacityGate::Eligible(
        ["b200-dgxc".to_string(), "gb200-nv".to_string()]
            .into_iter()
            .collect(),
    );
    let discovery = world.decide();
    assert_eq!(discovery.candidates.len(), 3);
    assert!(
        discovery
            .candidates
            .iter()
            .all(|c| c.targets() == Some(&["b200-dgxc".to_string()][..]))
    );
    world.capacity = CapacityGate::Eligible(["gb200-nv".to_string()].into_iter().collect());
    let discovery = world.decide();
    assert!(discovery.candidates.is_empty(), "b200 is not gb200");
    assert_eq!(discovery.row_counts[&RowFate::HardwareIneligible], 4);
    world.capacity = CapacityGate::Unavailable {
        message: "exit 1".into(),
    };
    let discovery = world.decide();
    assert!(discovery.candidates.is_empty());
    assert!(discovery.rows[0].reason.contains("could not answer"));
}

#[test]
fn unrenderable_families_and_families_without_a_row_are_reported() {
    let mut world = two_keys();
    world.families.push(Family {
        name: "m.yaml:refused".into(),
        rendering: Rendering::Unrenderable {
            reason: "exit 1: KeyError".into(),
        },
    });
    world
        .families
        .push(family("m.yaml:lonely", json!([entry("vllm", "img:7", 1)])));
    world
        .families
        .push(family("m.yaml:broken", json!([{"model-prefix": "x"}])));
    let discovery = world.decide();
    assert_eq!(
        fate_of(&discovery, "m.yaml:refused").fate,
        FamilyFate::Unrenderable
    );
    assert_eq!(
        fate_of(&discovery, "m.yaml:lonely").fate,
        FamilyFate::NoPublishedRow
    );
    let broken = fate_of(&discovery, "m.yaml:broken");
    assert_eq!(broken.fate, FamilyFate::Unrenderable);
    assert!(broken.reason.contains("runner"), "{}", broken.reason);
    assert_eq!(discovery.candidates.len(), 3, "the others go on");
}

#[test]
fn ties_of_one_date_go_to_the_row_of_the_larger_hash() {
    let world = World::new(
        vec![family(
            "m.yaml:a",
            json!([entry("vllm", "img:1", 1), entry("vllm", "img:2", 1)]),
        )],
        json!([
            row("vllm", "img:1", 1, "2026-08-01"),
            row("vllm", "img:2", 1, "2026-08-01")
        ]),
    );
    let discovery = world.decide();
    let hashes: Vec<String> = world.catalog.rows.iter().map(|r| r.hash.clone()).collect();
    let newest = if hashes[0] > hashes[1] { 0 } else { 1 };
    assert_eq!(discovery.rows[newest].fate, RowFate::Candidate);
    assert_eq!(discovery.rows[1 - newest].fate, RowFate::OlderThan);
}

/// The reference system's coarse id of a family with one observation key.
fn coarse_id_of(family: &Family) -> String {
    match &family.rendering {
        Rendering::Keys(keys) => identity(&keys.iter().next().unwrap().coarse())[..16].to_string(),
        Rendering::Unrenderable { .. } => panic!("{} has no key", family.name),
    }
}

#[test]
fn a_reference_branch_of_the_coarse_id_and_an_image_hash_occupies_its_family() {
    // The reference system names its branches `klaude/auto-<coarse id>-<image hash>`, and
    // klaud's own prefix may carry the same shape after a move.
    for prefix in ["klaude/auto-", "klaud/auto-"] {
        let mut world = World::new(
            vec![family("m.yaml:a", json!([entry("vllm", "img:1", 1024)]))],
            json!([row("vllm", "img:1", 1024, "2026-08-01")]),
        );
        let coarse = coarse_id_of(&world.families[0]);
        let image_hash = &identity_of_text("img:0")[..16];
        let branch = format!("{prefix}{coarse}-{image_hash}");
        world.github.candidate_branches = Listed::complete(vec![branch.clone()]);
        let discovery = world.decide();
        let report = fate_of(&discovery, "m.yaml:a");
        assert_eq!(report.fate, FamilyFate::Occupied, "{branch}");
        assert!(report.reason.contains(&branch), "{}", report.reason);
        assert!(discovery.candidates.is_empty());
    }
}

#[test]
fn a_branch_whose_candidate_part_only_begins_like_a_coarse_id_is_not_the_familys() {
    let mut world = World::new(
        vec![family("m.yaml:a", json!([entry("vllm", "img:1", 1024)]))],
        json!([row("vllm", "img:1", 1024, "2026-08-01")]),
    );
    let coarse = coarse_id_of(&world.families[0]);
    world.github.candidate_branches = Listed::complete(vec![
        format!("klaude/auto-{coarse}0-{}", &identity_of_text("img:0")[..16]),
        format!("klaude/auto-{}", &coarse[..15]),
    ]);
    let discovery = world.decide();
    assert_eq!(fate_of(&discovery, "m.yaml:a").fate, FamilyFate::Candidate);
}

/// A family whose older image's pull request #5 (and its branch) is validated and watched in
/// after-care with no session open, and a newer row of the family.
fn older_image_in_aftercare() -> (World, String) {
    let mut world = World::new(
        vec![family("m.yaml:a", json!([entry("vllm", "img:1", 1024)]))],
        json!([row("vllm", "img:1", 1024, "2026-08-01")]),
    );
    let older = candidate_id("m.yaml:a", "img:0");
    let validated = at("2026-08-20T00:00:00Z");
    world
        .ledger
        .claim_family(&older, "m.yaml:a", 7, validated)
        .unwrap();
    world
        .ledger
        .finish_session(&older, Outcome::Validated, true, validated);
    world
        .ledger
        .record_validated(&older, "m.yaml:a", 5, Some(&"c".repeat(40)), validated);
    let branch = format!("klaud/auto-{older}");
    world.github.open_pull_requests = Listed::complete(vec![OpenPullRequest {
        number: 5,
        head_branch: branch.clone(),
        head_repository: Some(REPOSITORY.into()),
    }]);
    world.github.candidate_branches = Listed::complete(vec![branch]);
    (world, older)
}

#[test]
fn a_pull_request_waiting_in_aftercare_leaves_its_family_to_a_newer_image() {
    let (world, _) = older_image_in_aftercare();
    let discovery = world.decide();
    assert_eq!(fate_of(&discovery, "m.yaml:a").fate, FamilyFate::Candidate);
    assert_eq!(
        discovery.candidate_ids(),
        [candidate_id("m.yaml:a", "img:1")]
    );
}

#[test]
fn a_pull_request_waiting_in_aftercare_still_holds_its_own_candidate() {
    let (mut world, older) = older_image_in_aftercare();
    // The newest row is the image of the waiting pull request itself.
    world.catalog = read_catalog(&json!([row("vllm", "img:0", 1024, "2026-08-01")])).unwrap();
    world.families = vec![family("m.yaml:a", json!([entry("vllm", "img:0", 1024)]))];
    let discovery = world.decide();
    let report = fate_of(&discovery, "m.yaml:a");
    assert_eq!(report.candidate.as_deref(), Some(older.as_str()));
    assert_eq!(report.fate, FamilyFate::Occupied);
    assert!(report.reason.contains("#5"), "{}", report.reason);
}

#[test]
fn a_pull_request_in_aftercare_with_a_session_open_or_without_supersede_holds_its_family() {
    let (mut with_session, older) = older_image_in_aftercare();
    with_session
        .ledger
        .claim_family(&older, "m.yaml:a", 8, at("2026-08-30T00:00:00Z"))
        .unwrap();
    let report = fate_of(&with_session.decide(), "m.yaml:a").clone();
    assert_eq!(report.fate, FamilyFate::Occupied);
    assert!(report.reason.contains("live session"), "{}", report.reason);

    let (mut without_supersede, _) = older_image_in_aftercare();
    without_supersede.policy.aftercare.supersede = false;
    let report = fate_of(&without_supersede.decide(), "m.yaml:a").clone();
    assert_eq!(report.fate, FamilyFate::Occupied);
    assert!(report.reason.contains("#5"), "{}", report.reason);
}
