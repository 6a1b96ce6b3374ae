//! `klaud select` end to end against the fake GitHub: claims in the ledger, `selection.json`,
//! `candidate.json`, outputs and summary; dry runs; bad input (exit 2, no request that writes);
//! invalid reviews, incomplete listings and a used-up daily budget (exit 0, nothing claimed);
//! baselines; the capacity gate; repeating a pass; a ledger that keeps changing (exit 1).

#![allow(clippy::disallowed_methods)] // tests read the environment and spawn the binary

use klaud_fake_github as fake_github;
#[path = "select_support/mod.rs"]
mod select_support;

use chrono::{Duration, Utc};
use fake_github::{FakeGitHub, FakeGitHubHandle, FaultConfig, FaultRule, PullRequestSpec};
use klaud::core::ledger::Ledger;
use klaud::core::outcome::Outcome;
use select_support::*;
use serde_json::{Value, json};

const RUN: u64 = 4242;

/// A busy repository: a live session holds family fx, c failed two hours ago, klaud's PR for d
/// is open, a person's PR sits on another branch, and e's branch was left behind.
fn busy_repository() -> FakeGitHubHandle {
    let mut state = repository();
    let mut ledger = Ledger::empty();
    let now = Utc::now();
    ledger
        .claim_family("x", "fx", 77, now - Duration::hours(1))
        .unwrap();
    ledger
        .claim_family("c", "fc", 70, now - Duration::hours(5))
        .unwrap();
    ledger.finish_session("c", Outcome::Failed, true, now - Duration::hours(2));
    seed_ledger(&mut state, &ledger);
    state.add_pull_request(PullRequestSpec {
        title: "klaud: d".into(),
        author: BOT.into(),
        head_ref: "klaud/auto-d".into(),
        draft: true,
        ..PullRequestSpec::default()
    });
    state.add_pull_request(PullRequestSpec {
        title: "a person's change".into(),
        author: "alice-dev".into(),
        head_ref: "feature/g".into(),
        ..PullRequestSpec::default()
    });
    let main = state.branch_sha("main").unwrap().to_string();
    state.set_branch("klaud/auto-e", &main);
    FakeGitHub::start(state)
}

fn busy_candidates() -> String {
    candidates_json(&[
        ("a", "fa"),
        ("b", "fx"),
        ("c", "fc"),
        ("d", "fd"),
        ("e", "fe"),
        ("g", "fg"),
        ("h", "fh"),
        ("i", "fi"),
    ])
}

fn with_cap(cap: &'static str) -> impl FnOnce(&mut assert_cmd::Command) {
    move |command| {
        command.args(["--max-candidates", cap]);
    }
}

#[test]
fn a_pass_claims_the_selected_families_and_reports_every_candidate() {
    let server = busy_repository();
    let pass = Pass::new(RUN, &busy_candidates());

    pass.run(&server, with_cap("3"), 0);

    assert_eq!(pass.selected_ids(), ["a", "g"]);
    assert_eq!(pass.outputs()["selected"], "true");
    let selection = pass.selection();
    assert_eq!(selection["deferred-reason"], json!(null));
    assert_eq!(selection["selected"], json!(["a", "g"]));
    let expected = [
        ("a", "selected"),
        ("b", "occupied"),
        ("c", "cooling-down"),
        ("d", "occupied"),
        ("e", "occupied"),
        ("g", "selected"),
        ("h", "over-cap"),
        ("i", "over-cap"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(id, decision)| (id.to_string(), decision.to_string()))
        .collect();
    assert_eq!(decisions(&selection), expected);
    let cooling = &selection["candidates"][2];
    assert_eq!(cooling["reason"]["code"], "cooling-down");
    assert!(cooling["until"].as_str().unwrap().ends_with('Z'));
    assert_eq!(selection["candidates"][0]["reason"], json!(null));

    let ledger = stored_ledger(&server);
    let claimed: Vec<(&str, &str, u64, Option<u32>)> = ledger
        .sessions
        .iter()
        .filter(|session| session.parent_run == RUN)
        .map(|s| {
            (
                s.candidate.as_str(),
                s.family.as_str(),
                s.parent_run,
                s.parent_attempt,
            )
        })
        .collect();
    assert_eq!(
        claimed,
        [("a", "fa", RUN, Some(1)), ("g", "fg", RUN, Some(1))]
    );
    assert_eq!(ledger.live_sessions().count(), 3, "never more than the cap");
    assert_eq!(
        write_requests(&server),
        [
            "POST /repos/acme/bench/git/trees",
            "POST /repos/acme/bench/git/commits",
            "PATCH /repos/acme/bench/git/refs/heads/klaud/state",
        ],
        "one commit of the claims and the claimed candidates' records, fast-forward only"
    );
    for (id, family) in [("a", "fa"), ("g", "fg")] {
        let record: Value = serde_json::from_str(
            &server
                .with_state(|state| state.read_file("klaud/state", &format!("records/{id}.json")))
                .expect("the claimed candidate's record is beside the ledger"),
        )
        .unwrap();
        assert_eq!(
            (record["id"].as_str(), record["family"].as_str()),
            (Some(id), Some(family))
        );
    }
    assert!(
        server
            .with_state(|state| state.read_file("klaud/state", "records/h.json"))
            .is_none(),
        "no record of a candidate not claimed"
    );

    let file = pass.candidate_file("a");
    assert_eq!(file["branch"], "klaud/auto-a");
    assert_eq!(file["decision"], "selected");
    assert_eq!(pass.candidate_file("h")["decision"], "over-cap");

    let summary = pass.summary();
    assert!(
        summary.contains("### klaud select: 2 of 8 candidate(s) selected"),
        "{summary}"
    );
    assert!(summary.contains("| `occupied` | 3 |"), "{summary}");
    assert!(
        summary.contains("| c | `fc` | `cooling-down` |"),
        "{summary}"
    );
    assert!(summary.contains("GitHub requests:"), "{summary}");
    let requests: serde_json::Value = serde_json::from_str(&pass.outputs()["requests"]).unwrap();
    assert_eq!(requests["writes"], 3, "tree, commit, ref");
}

#[test]
fn a_dry_run_prints_the_plan_and_writes_nothing_to_github() {
    let server = busy_repository();
    let before = stored_ledger(&server);
    let pass = Pass::new(RUN, &busy_candidates());

    let log = pass.run(
        &server,
        |command| {
            command.args(["--max-candidates", "3", "--dry-run"]);
        },
        0,
    );

    assert!(write_requests(&server).is_empty());
    assert_eq!(stored_ledger(&server), before);
    assert_eq!(pass.outputs()["selected"], "false");
    assert_eq!(pass.selected_ids(), Vec::<String>::new());
    assert_eq!(pass.selection()["selected"], json!(["a", "g"]));
    assert!(log.contains("  a (fa): selected"), "{log}");
    assert!(
        log.contains("dry run: 2 candidate(s) would be claimed"),
        "{log}"
    );
}

/// One kind of bad input: the candidates file, extra flags and variables, the field named.
struct BadInput {
    case: &'static str,
    candidates: &'static str,
    args: &'static [&'static str],
    environment: &'static [(&'static str, &'static str)],
    field: &'static str,
}

const BAD_INPUTS: [BadInput; 8] = [
    BadInput {
        case: "malformed candidates",
        candidates: "{",
        args: &[],
        environment: &[],
        field: "candidates:",
    },
    BadInput {
        case: "id outside the pattern",
        candidates: r#"[{"id": "has space", "family": "f"}]"#,
        args: &[],
        environment: &[],
        field: "candidates[0].id:",
    },
    BadInput {
        case: "missing family",
        candidates: r#"[{"id": "a"}]"#,
        args: &[],
        environment: &[],
        field: "candidates[0].family:",
    },
    BadInput {
        case: "max-candidates 0",
        candidates: "[]",
        args: &["--max-candidates", "0"],
        environment: &[],
        field: "max-candidates:",
    },
    BadInput {
        case: "max-candidates -3",
        candidates: "[]",
        args: &["--max-candidates", "-3"],
        environment: &[],
        field: "max-candidates:",
    },
    BadInput {
        case: "max-candidates x",
        candidates: "[]",
        args: &[],
        environment: &[("KLAUD_MAX_CANDIDATES", "x")],
        field: "max-candidates:",
    },
    BadInput {
        case: "cooldown-days -1",
        candidates: "[]",
        args: &["--cooldown-days", "-1"],
        environment: &[],
        field: "cooldown-days:",
    },
    BadInput {
        case: "baselines not a document",
        candidates: "[]",
        args: &["--baselines", "CANDIDATES"],
        environment: &[],
        field: "baselines:",
    },
];

#[test]
fn bad_input_is_exit_2_naming_the_field_before_any_request() {
    for BadInput {
        case,
        candidates,
        args,
        environment,
        field,
    } in BAD_INPUTS
    {
        let server = FakeGitHub::start(repository());
        let pass = Pass::new(RUN, candidates);
        let args: Vec<String> = args
            .iter()
            .map(|arg| arg.replace("CANDIDATES", pass.path("candidates.json").to_str().unwrap()))
            .collect();
        let log = pass.run(
            &server,
            |command| {
                command.args(&args);
                for (name, value) in environment {
                    command.env(name, value);
                }
            },
            2,
        );
        assert!(log.contains(&format!("::error::{field}")), "{case}: {log}");
        assert!(server.request_log().is_empty(), "{case}: no request at all");
        assert!(write_requests(&server).is_empty(), "{case}");
    }
}

#[test]
fn a_claiming_pass_needs_its_run_id() {
    let server = FakeGitHub::start(repository());
    let pass = Pass::new(RUN, &candidates_json(&[("a", "f")]));
    let log = pass.run(
        &server,
        |command| {
            command.env_remove("GITHUB_RUN_ID");
        },
        2,
    );
    assert!(log.contains("::error::GITHUB_RUN_ID:"), "{log}");
    assert!(server.request_log().is_empty());
}

fn proceed(id: &str, family: &str) -> serde_json::Value {
    json!({"candidate-id": id, "decision": "proceed", "family": family, "pull-requests": [], "reason": ""})
}

#[test]
fn an_invalid_review_defers_everything_with_a_warning_and_claims_nothing() {
    let candidates = candidates_json(&[("a", "fa"), ("b", "fb")]);
    let reviews = [
        ("not JSON", "the model ran out of tokens".to_string()),
        (
            "repeated id",
            json!({"decisions": [proceed("a", "fa"), proceed("a", "fa"), proceed("b", "fb")]})
                .to_string(),
        ),
        (
            "unknown id",
            json!({"decisions": [proceed("a", "fa"), proceed("b", "fb"), proceed("zz", "fb")]})
                .to_string(),
        ),
        (
            "missing candidate",
            json!({"decisions": [proceed("a", "fa")]}).to_string(),
        ),
        (
            "proceed that changed its family",
            json!({"decisions": [proceed("a", "fa"), proceed("b", "elsewhere")]}).to_string(),
        ),
    ];
    for (index, (case, review)) in reviews.iter().enumerate() {
        let server = FakeGitHub::start(repository());
        let pass = Pass::new(RUN, &candidates);
        // Alternate between the review file and the JSON in KLAUD_REVIEW.
        let review_file = pass.write("review.json", review);
        let log = pass.run(
            &server,
            |command| {
                if index.is_multiple_of(2) {
                    command.arg("--review").arg(&review_file);
                } else {
                    command.env("KLAUD_REVIEW", review);
                }
            },
            0,
        );
        assert!(
            log.contains("::warning::the review is invalid"),
            "{case}: {log}"
        );
        assert!(write_requests(&server).is_empty(), "{case}");
        assert_eq!(stored_ledger(&server), Ledger::empty(), "{case}");
        assert_eq!(pass.outputs()["selected"], "false", "{case}");
        let selection = pass.selection();
        assert_eq!(
            selection["deferred-reason"], "invalid-review-output",
            "{case}"
        );
        assert_eq!(
            decisions(&selection),
            [
                ("a".to_string(), "invalid-review-output".to_string()),
                ("b".to_string(), "invalid-review-output".to_string())
            ],
            "{case}"
        );
    }
}

#[test]
fn a_valid_review_holds_back_duplicates_and_passes_the_rest() {
    let server = FakeGitHub::start(repository());
    let pass = Pass::new(RUN, &candidates_json(&[("a", "fa"), ("b", "fb")]));
    let review = json!({"decisions": [
        proceed("a", "fa"),
        {"candidate-id": "b", "decision": "duplicate", "family": "fb", "pull-requests": [9], "reason": "same as #9"}
    ]});
    pass.run(
        &server,
        |command| {
            command.env("KLAUD_REVIEW", review.to_string());
        },
        0,
    );
    assert_eq!(pass.selected_ids(), ["a"]);
    let selection = pass.selection();
    assert_eq!(selection["candidates"][1]["decision"], "review-duplicate");
    assert!(
        selection["candidates"][1]["reason"]["message"]
            .as_str()
            .unwrap()
            .contains("#9")
    );
}

/// klaud's open pull requests are read from its branches. When that read misses one — the
/// query fails, or a branch has more open pull requests than one query reads (forks' on the
/// same branch name) — nothing is claimed: the selection waits as `listing-incomplete`.
#[test]
fn open_pull_requests_the_reads_miss_defer_instead_of_reading_as_no_pull_request() {
    for (missed, forks) in [("a failed query", 0), ("a cut branch", 10)] {
        let mut state = repository();
        state.add_pull_request(PullRequestSpec {
            title: "klaud: d".into(),
            author: BOT.into(),
            head_ref: "klaud/auto-d".into(),
            draft: true,
            ..PullRequestSpec::default()
        });
        for fork in 0..forks {
            state.add_pull_request(PullRequestSpec {
                title: format!("a fork's change {fork}"),
                author: format!("someone-{fork}"),
                head_ref: "klaud/auto-d".into(),
                head_repo: Some(format!("someone-{fork}/bench")),
                ..PullRequestSpec::default()
            });
        }
        let server = FakeGitHub::start(state);
        if forks == 0 {
            server.set_faults(FaultConfig::rules(vec![FaultRule::nth(
                "POST", "/graphql", 1, 404,
            )]));
        }
        let pass = Pass::new(RUN, &candidates_json(&[("d", "fd"), ("a", "fa")]));

        let log = pass.run(&server, |_| {}, 0);

        assert!(
            log.contains("::warning::occupancy is unknown"),
            "{missed}: {log}"
        );
        assert!(
            log.contains("the open pull requests of"),
            "{missed}: the reason is named: {log}"
        );
        assert!(write_requests(&server).is_empty(), "{missed}");
        let selection = pass.selection();
        assert_eq!(
            selection["deferred-reason"], "listing-incomplete",
            "{missed}"
        );
        assert_eq!(selection["candidates"][0]["decision"], "listing-incomplete");
        assert_eq!(selection["candidates"][1]["decision"], "listing-incomplete");
        assert_eq!(pass.outputs()["selected"], "false");
    }
}

/// A ledger whose finished session c and parked session p ran jobs that ended `hours_ago`
/// (each) and cost `cost_usd` (each).
fn ledger_with_costs(hours_ago: i64, cost_usd: f64) -> Ledger {
    let now = Utc::now();
    let mut ledger = Ledger::empty();
    for (candidate, family) in [("c", "fc"), ("p", "fp")] {
        ledger
            .claim_family(candidate, family, 70, now - Duration::hours(hours_ago + 2))
            .unwrap();
    }
    for (index, session) in ledger.sessions.iter_mut().enumerate() {
        let ended = now - Duration::hours(hours_ago);
        session.attempts.push(klaud::core::ledger::Attempt {
            number: 1,
            run: 600 + index as u64,
            adopted_at: ended - Duration::hours(1),
            deadline: ended + Duration::hours(4),
            ended_at: Some(ended),
            end: None,
            runs: Vec::new(),
            notes: Vec::new(),
            notes_folded: 0,
            agent: Some(klaud::core::execution::AgentRecord {
                cost_usd: Some(cost_usd),
                ..Default::default()
            }),
        });
    }
    ledger.sessions[1].state = klaud::core::ledger::SessionState::Parked;
    ledger.finish_session("c", Outcome::Failed, true, now - Duration::hours(hours_ago));
    ledger
}

#[test]
fn a_used_up_daily_budget_defers_every_candidate_with_the_figures_and_claims_nothing() {
    let mut state = repository();
    seed_ledger(&mut state, &ledger_with_costs(3, 6.2));
    let server = FakeGitHub::start(state);
    let pass = Pass::new(RUN, &candidates_json(&[("a", "fa"), ("b", "fb")]));
    pass.write("klaud.yml", "budget:\n  daily-usd: 10\n");

    let log = pass.run(&server, |_| {}, 0);

    let figures = "$12.40 recorded in the last 24 hours, budget $10.00";
    assert!(
        log.contains("::warning::the daily budget is used up"),
        "{log}"
    );
    assert!(log.contains(figures), "{log}");
    let selection = pass.selection();
    assert_eq!(selection["deferred-reason"], "budget-exhausted");
    for candidate in selection["candidates"].as_array().unwrap() {
        assert_eq!(candidate["decision"], "budget-exhausted");
        assert_eq!(candidate["reason"]["code"], "budget-exhausted");
        assert!(
            candidate["reason"]["message"]
                .as_str()
                .unwrap()
                .ends_with(figures)
        );
    }
    assert_eq!(pass.outputs()["selected"], "false");
    assert_eq!(pass.outputs()["candidates"], "[]");
    assert!(write_requests(&server).is_empty(), "nothing is claimed");
    assert!(pass.summary().contains("`budget-exhausted`"));
}

#[test]
fn the_budget_counts_only_the_last_24_hours() {
    let mut state = repository();
    seed_ledger(&mut state, &ledger_with_costs(25, 6.2));
    let server = FakeGitHub::start(state);
    let pass = Pass::new(RUN, &candidates_json(&[("a", "fa")]));
    pass.write("klaud.yml", "budget:\n  daily-usd: 10\n");

    pass.run(&server, |_| {}, 0);

    assert_eq!(pass.selected_ids(), ["a"]);
    assert_eq!(pass.selection()["deferred-reason"], Value::Null);
}

#[test]
fn candidates_not_verified_in_baselines_json_are_deferred_with_the_reason() {
    let server = FakeGitHub::start(repository());
    let pass = Pass::new(
        RUN,
        &candidates_json(&[("a", "fa"), ("b", "fb"), ("c", "fc")]),
    );
    let baselines = pass.write(
        "baselines.json",
        &json!({"candidates": [
            {"id": "a", "status": "verified", "reason": null, "producer": null, "points": []},
            {"id": "b", "status": "deferred", "reason": {"code": "ambiguous-baseline", "message": "row 2 matches entries 4 and 5"},
             "producer": null, "points": []}
        ], "producer-runs": []})
        .to_string(),
    );
    pass.run(
        &server,
        |command| {
            command.arg("--baselines").arg(&baselines);
        },
        0,
    );
    assert_eq!(pass.selected_ids(), ["a"]);
    let selection = pass.selection();
    assert_eq!(selection["candidates"][1]["decision"], "baseline-deferred");
    assert_eq!(
        selection["candidates"][1]["reason"]["code"],
        "ambiguous-baseline"
    );
    assert_eq!(selection["candidates"][2]["reason"]["code"], "not-verified");
}

fn gate_pass(script: &str) -> Pass {
    let pass = Pass::new(
        RUN,
        r#"[{"id": "a", "family": "fa", "targets": ["b200"]},
            {"id": "b", "family": "fb", "targets": ["h100", "b200"]},
            {"id": "c", "family": "fc"}]"#,
    );
    let config = json!({"capacity": {"command": ["sh", "-c", script], "timeout-seconds": 10}});
    pass.write("klaud.yml", &config.to_string());
    pass
}

#[test]
fn the_capacity_gate_admits_only_candidates_whose_targets_can_run() {
    let server = FakeGitHub::start(repository());
    let asked_file = tempfile::NamedTempFile::new().unwrap();
    let script = format!(
        "cat > '{}'; echo 'note on stderr' >&2; echo '[\"b200\"]'",
        asked_file.path().display()
    );
    let pass = gate_pass(&script);

    pass.run(&server, |_| {}, 0);

    let asked = std::fs::read_to_string(asked_file.path()).unwrap();
    assert_eq!(asked, r#"["b200","h100"]"#, "every target once, on stdin");
    assert_eq!(pass.selected_ids(), ["a", "c"]);
    let selection = pass.selection();
    assert_eq!(selection["candidates"][1]["decision"], "no-capacity");
    assert_eq!(selection["deferred-reason"], json!(null));
}

#[test]
fn a_capacity_gate_that_fails_or_prints_garbage_admits_nothing() {
    for script in ["exit 3", "echo 'all of them'", "sleep 30"] {
        let server = FakeGitHub::start(repository());
        let pass = gate_pass(script);
        if script.starts_with("sleep") {
            pass.write(
                "klaud.yml",
                &json!({"capacity": {"command": ["sh", "-c", script], "timeout-seconds": 1}})
                    .to_string(),
            );
        }
        let log = pass.run(&server, |_| {}, 0);
        assert!(
            log.contains("::warning::capacity gate unavailable"),
            "{script}: {log}"
        );
        let selection = pass.selection();
        assert_eq!(
            selection["deferred-reason"], "capacity-unavailable",
            "{script}"
        );
        assert!(
            decisions(&selection)
                .iter()
                .all(|(_, decision)| decision == "capacity-unavailable"),
            "{script}: {selection}"
        );
        assert!(write_requests(&server).is_empty(), "{script}");
    }
}

#[test]
fn repeating_a_pass_selects_the_same_candidates_without_writing_again() {
    let server = busy_repository();
    let pass = Pass::new(RUN, &busy_candidates());
    pass.run(&server, with_cap("3"), 0);
    let after_first = stored_ledger(&server);
    server.clear_request_log();

    let again = Pass::new(RUN, &busy_candidates());
    again.run(&server, with_cap("3"), 0);

    assert_eq!(again.selected_ids(), ["a", "g"]);
    assert!(write_requests(&server).is_empty());
    assert_eq!(stored_ledger(&server), after_first);
}

#[test]
fn another_run_finds_the_families_this_run_claimed() {
    let server = FakeGitHub::start(repository());
    let first = Pass::new(RUN, &candidates_json(&[("a", "fa")]));
    first.run(&server, |_| {}, 0);

    let second = Pass::new(RUN + 1, &candidates_json(&[("a2", "fa"), ("b", "fb")]));
    second.run(&server, |_| {}, 0);

    assert_eq!(second.selected_ids(), ["b"]);
    let selection = second.selection();
    assert_eq!(selection["candidates"][0]["decision"], "occupied");
    let message = selection["candidates"][0]["reason"]["message"]
        .as_str()
        .unwrap();
    assert!(message.contains(&format!("run {RUN}")), "{message}");
}

#[test]
fn a_ledger_that_keeps_changing_fails_the_step_and_nothing_is_claimed() {
    let mut state = repository();
    seed_ledger(&mut state, &Ledger::empty());
    let server = FakeGitHub::start(state);
    server.set_faults(FaultConfig::rules(vec![
        FaultRule::nth("PATCH", "/repos/acme/bench/git/refs/*", 1, 422).times(1000),
    ]));
    let pass = Pass::new(RUN, &candidates_json(&[("a", "fa")]));

    let log = pass.run(&server, |_| {}, 1);

    assert!(log.contains("::error::the ledger on klaud/state"), "{log}");
    assert_eq!(stored_ledger(&server), Ledger::empty());
    assert!(pass.outputs().is_empty(), "no outputs: no job may start");
}

/// A validated pull request of candidate `old` (family fa) that waits in after-care with no
/// session of its own.
fn repository_with_a_pull_request_in_aftercare() -> FakeGitHubHandle {
    let mut state = repository();
    let number = state.add_pull_request(PullRequestSpec {
        title: "klaud: old".into(),
        author: BOT.into(),
        head_ref: "klaud/auto-old".into(),
        draft: false,
        ..PullRequestSpec::default()
    });
    let mut ledger = Ledger::empty();
    let validated = Utc::now() - Duration::hours(2);
    ledger
        .claim_family("old", "fa", 70, validated - Duration::hours(3))
        .unwrap();
    ledger.finish_session("old", Outcome::Validated, true, validated);
    ledger.record_validated("old", "fa", number, None, validated);
    seed_ledger(&mut state, &ledger);
    FakeGitHub::start(state)
}

#[test]
fn a_pull_request_waiting_in_aftercare_leaves_its_family_to_another_candidate_only() {
    let server = repository_with_a_pull_request_in_aftercare();
    let pass = Pass::new(RUN, &candidates_json(&[("old", "fa"), ("new", "fa")]));

    pass.run(&server, |_| {}, 0);

    let selection = pass.selection();
    let expected = [("old", "occupied"), ("new", "selected")];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(id, decision)| (id.to_string(), decision.to_string()))
        .collect();
    assert_eq!(decisions(&selection), expected);
    let reason = selection["candidates"][0]["reason"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains("of candidate old is open"), "{reason}");

    let server = repository_with_a_pull_request_in_aftercare();
    let pass = Pass::new(RUN, &candidates_json(&[("new", "fa")]));
    pass.write("klaud.yml", "aftercare:\n  supersede: false\n");

    pass.run(&server, |_| {}, 0);

    let selection = pass.selection();
    assert_eq!(selection["candidates"][0]["decision"], "occupied");
    assert_eq!(pass.outputs()["selected"], "false");
}
