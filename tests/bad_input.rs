//! Every class of bad input, per mode, against the fake GitHub: the exit code, the message and
//! the proof that nothing was written. The rows live in the table of `docs/bad-input.md`; this test
//! reads that table, runs each row in each mode it names, and fails when a row is missing on
//! either side, so the documentation and the binary cannot drift apart.

#![allow(clippy::disallowed_methods)] // tests read the environment and start processes
#![allow(clippy::duplicate_mod)] // github_mode_support and recover_support each bring step_support

use klaud_fake_github as fake_github;
#[path = "github_mode_support/mod.rs"]
mod github_mode_support;
#[path = "recover_support/mod.rs"]
mod recover_support;

use std::collections::BTreeSet;
use std::path::Path;

use fake_github::FakeGitHubHandle;
use github_mode_support::{REPOSITORY, Step, TOKEN, hermetic_klaud, write_requests};
use klaud::core::ledger::SessionState;
use klaud::core::outcome::Outcome;
use serde_json::json;

const ALL_MODES: [&str; 11] = [
    "install-cli",
    "verify-baselines",
    "select",
    "discover",
    "recover",
    "finish",
    "wake",
    "prepare-review",
    "status",
    "session",
    "note",
];
const GITHUB_MODES: [&str; 9] = [
    "select",
    "discover",
    "recover",
    "finish",
    "wake",
    "prepare-review",
    "status",
    "session",
    "note",
];
/// `check-stop` reads no configuration and never fails (a hook that fails lets the agent stop
/// unchecked): its rows are its own, and every one of them answers with a block.
const HOOK_MODE: &str = "check-stop";
const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

/// One `klaud` invocation being assembled: the mode, its flags and changes to the environment.
struct Invocation<'a> {
    step: &'a Step,
    mode: Option<String>,
    flags: Vec<(String, String)>,
    environment: Vec<(String, Option<String>)>,
    /// What the step reads on stdin (the hook's input).
    stdin: String,
}

impl Invocation<'_> {
    fn set(&mut self, flag: &str, value: &str) {
        self.unset(flag);
        self.flags.push((flag.to_string(), value.to_string()));
    }

    fn unset(&mut self, flag: &str) {
        self.flags.retain(|(name, _)| name != flag);
    }

    fn env(&mut self, name: &str, value: Option<&str>) {
        self.environment
            .push((name.to_string(), value.map(str::to_string)));
    }

    fn file(&self, name: &str, text: &str) {
        self.step.write(name, text);
    }

    /// A candidates file whose one candidate carries `baseline`.
    fn candidate_with_baseline(&self, baseline: serde_json::Value) {
        let candidates = json!([{"id": "a", "family": "configs/x.yaml:a", "baseline": baseline}]);
        self.file("candidates.json", &candidates.to_string());
    }

    /// A candidates file whose one candidate came from discovery (a `source`, no baseline),
    /// with `change` applied to its source.
    fn discovered_candidate(&self, change: fn(&mut serde_json::Value)) {
        let mut source = json!({
            "model": "dsr1", "hardware": "mi355x", "framework": "sglang", "precision": "fp4",
            "spec_method": "none", "disagg": false, "benchmark_type": "single_turn",
            "isl": 1024, "osl": 1024, "image": "lmsysorg/sglang:v0.5.9-rocm700-mi35x",
            "date": "2026-02-27"
        });
        change(&mut source);
        let candidates = json!([{"id": "a", "family": "configs/x.yaml:a", "source": source}]);
        self.file("candidates.json", &candidates.to_string());
    }
}

/// What each documented row changes in an otherwise valid invocation of its mode.
type Change = fn(&mut Invocation);

const ROWS: &[(&str, &str, Change)] = &[
    ("(none)", "no mode", |run| run.mode = None),
    (
        "(none)",
        "`mode` empty (what the action passes for an empty input)",
        |run| run.mode = Some(String::new()),
    ),
    ("(none)", "unknown mode `frob`", |run| {
        run.mode = Some("frob".into())
    }),
    ("every mode", "config: unknown key `bogus: 1`", |run| {
        run.file("klaud.yml", "bogus: 1\n")
    }),
    (
        "every mode",
        "config: unknown nested key `labels: {colour: red}`",
        |run| run.file("klaud.yml", "labels:\n  colour: red\n"),
    ),
    ("every mode", "config: wrong type `bot: [1]`", |run| {
        run.file("klaud.yml", "bot: [1]\n")
    }),
    (
        "every mode",
        "config: out of range `producer: {timeout-seconds: 0}`",
        |run| run.file("klaud.yml", "producer:\n  timeout-seconds: 0\n"),
    ),
    (
        "every mode",
        "config: `cooldowns` names no outcome",
        |run| run.file("klaud.yml", "cooldowns:\n  bogus: 1\n"),
    ),
    ("every mode", "config: not YAML", |run| {
        run.file("klaud.yml", "bot: \"unterminated\n")
    }),
    ("every mode", "config: unreadable (a directory)", |run| {
        let path = run.step.path("klaud.yml");
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
    }),
    ("every mode", "`max-candidates: 0`", |run| {
        run.set("max-candidates", "0")
    }),
    ("every mode", "`max-candidates: many`", |run| {
        run.set("max-candidates", "many")
    }),
    ("every mode", "`cooldown-days: -1`", |run| {
        run.set("cooldown-days", "-1")
    }),
    ("every mode", "`dry-run: maybe`", |run| {
        run.set("dry-run", "maybe")
    }),
    ("every GitHub mode", "`max-operations: 0`", |run| {
        run.set("max-operations", "0")
    }),
    ("every GitHub mode", "`max-reads: lots`", |run| {
        run.set("max-reads", "lots")
    }),
    (
        "every GitHub mode",
        "no token (`github-token` empty, no `GITHUB_TOKEN`)",
        |run| {
            run.env("GITHUB_TOKEN", None);
            run.env("KLAUD_GITHUB_TOKEN", Some(""));
        },
    ),
    (
        "every GitHub mode",
        "`github-token` with a line break",
        |run| run.env("GITHUB_TOKEN", Some("ghs_token\nbroken")),
    ),
    (
        "every GitHub mode",
        "`label-token` with a line break",
        |run| run.env("KLAUD_LABEL_TOKEN", Some("ghs_label\nbroken")),
    ),
    (
        "every GitHub mode",
        "`GITHUB_REPOSITORY` not `owner/name`",
        |run| run.env("GITHUB_REPOSITORY", Some("bench")),
    ),
    ("`install-cli`", "no `cli-version`", |run| {
        run.unset("cli-version")
    }),
    (
        "`install-cli`",
        "`cli-version: latest` (a dist-tag)",
        |run| run.set("cli-version", "latest"),
    ),
    ("`install-cli`", "`cli-version: ^2.1.0` (a range)", |run| {
        run.set("cli-version", "^2.1.0")
    }),
    ("`install-cli`", "`cli-attempts: 0`", |run| {
        run.set("cli-attempts", "0")
    }),
    ("`install-cli`", "`cli-attempts: two`", |run| {
        run.set("cli-attempts", "two")
    }),
    ("`install-cli`", "`cli-package` empty", |run| {
        run.set("cli-package", "")
    }),
    (
        "`install-cli`",
        "`cli-package: --registry=http://127.0.0.1:9/x` (an npm option)",
        |run| run.set("cli-package", "--registry=http://127.0.0.1:9/x"),
    ),
    ("`verify-baselines`", "no `candidates`", |run| {
        run.unset("candidates")
    }),
    ("`select`", "no `candidates`", |run| run.unset("candidates")),
    ("`prepare-review`", "no `candidates`", |run| {
        run.unset("candidates")
    }),
    (
        "`verify-baselines`, `select`, `prepare-review`",
        "candidates file missing",
        |run| run.set("candidates", "missing.json"),
    ),
    (
        "`verify-baselines`, `select`, `prepare-review`",
        "candidates file not JSON",
        |run| run.file("candidates.json", "[{\n"),
    ),
    (
        "`verify-baselines`, `select`, `prepare-review`",
        "candidates neither an array nor `{\"candidates\": [...]}`",
        |run| run.file("candidates.json", r#"{"proposals": []}"#),
    ),
    (
        "`verify-baselines`, `select`, `prepare-review`",
        "candidate id `a b`",
        |run| run.file("candidates.json", r#"[{"id": "a b", "family": "f"}]"#),
    ),
    (
        "`verify-baselines`, `select`, `prepare-review`",
        "the same id twice",
        |run| {
            run.file(
                "candidates.json",
                r#"[{"id": "a", "family": "f"}, {"id": "a", "family": "g"}]"#,
            )
        },
    ),
    (
        "`verify-baselines`, `select`, `prepare-review`",
        "a candidate without `family`",
        |run| run.file("candidates.json", r#"[{"id": "a"}]"#),
    ),
    (
        "`verify-baselines`, `select`, `prepare-review`",
        "a baseline's head not a commit sha",
        |run| {
            run.candidate_with_baseline(
                json!({"producer": {"head": "main", "args": []}, "points": []}),
            )
        },
    ),
    (
        "`verify-baselines`, `select`, `prepare-review`",
        "a baseline without `producer`",
        |run| run.candidate_with_baseline(json!({"points": []})),
    ),
    (
        "`verify-baselines`",
        "`repo-path` not a directory (a candidate has a baseline)",
        |run| {
            run.candidate_with_baseline(
                json!({"producer": {"head": SHA, "args": ["test-config"]}, "points": [{}]}),
            );
            run.set("repo-path", "missing-repository");
        },
    ),
    (
        "`verify-baselines`",
        "a discovered candidate's `source` that is no catalog row",
        |run| run.discovered_candidate(|source| source["date"] = json!("yesterday")),
    ),
    (
        "`verify-baselines`",
        "no `GITHUB_REPOSITORY` (a discovered candidate to look up)",
        |run| {
            run.discovered_candidate(|_| {});
            run.env("GITHUB_REPOSITORY", None);
        },
    ),
    (
        "`verify-baselines`",
        "`discovery.feeds.benchmarks` a file that does not exist (a discovered candidate to look up)",
        |run| {
            run.discovered_candidate(|_| {});
            run.file(
                "klaud.yml",
                "discovery:\n  feeds:\n    benchmarks: missing-benchmarks.json\n",
            );
        },
    ),
    (
        "`verify-baselines`",
        "`discovery.feeds.workflow-info` a file that does not exist (a discovered candidate to look up)",
        |run| {
            run.discovered_candidate(|_| {});
            run.file("empty-feed.json", "[]");
            run.file(
                "klaud.yml",
                "discovery:\n  feeds:\n    benchmarks: empty-feed.json\n    workflow-info: missing-workflow-info.json\n",
            );
        },
    ),
    ("`verify-baselines`", "`review` not JSON", |run| {
        run.set("review", "{decisions")
    }),
    (
        "`verify-baselines`",
        "`review` whose proceed for a discovered candidate names no `baseline-model` that `discovery.models` lacks",
        |run| {
            run.discovered_candidate(|source| source["model"] = json!("qwen3"));
            let review = json!({"decisions": [{"candidate-id": "a", "decision": "proceed",
            "family": "configs/x.yaml:a", "pull-requests": [], "reason": "r"}]});
            run.set("review", &review.to_string());
        },
    ),
    ("`select`", "`review` not JSON", |run| {
        run.set("review", "{decisions")
    }),
    ("`select`", "`review` file missing", |run| {
        run.set("review", "missing-review.json")
    }),
    ("`select`", "`review` without a `decisions` array", |run| {
        run.set("review", "[]")
    }),
    (
        "`select`",
        "`review` deciding an unknown candidate",
        |run| {
            let review = json!({"decisions": [{"candidate-id": "zz", "decision": "proceed",
            "family": "f", "pull-requests": [], "reason": "r"}]});
            run.set("review", &review.to_string());
        },
    ),
    ("`select`", "`baselines` file missing", |run| {
        run.set("baselines", "missing-baselines.json")
    }),
    ("`select`", "`baselines` not a `baselines.json`", |run| {
        run.file("baselines.json", "{\"candidates\": 3}");
        run.set("baselines", "baselines.json");
    }),
    ("`select`", "no `GITHUB_RUN_ID`", |run| {
        run.env("GITHUB_RUN_ID", None)
    }),
    ("`finish`", "no `candidate`", |run| run.unset("candidate")),
    ("`finish`", "`candidate: a b`", |run| {
        run.set("candidate", "a b")
    }),
    ("`finish`", "neither `outcome` nor `outcome-file`", |run| {
        run.unset("outcome")
    }),
    ("`finish`", "both `outcome` and `outcome-file`", |run| {
        run.file("outcome.json", r#"{"outcome": "failed"}"#);
        run.set("outcome-file", "outcome.json");
    }),
    ("`finish`", "`outcome: bogus`", |run| {
        run.set("outcome", "bogus")
    }),
    ("`finish`", "`agent-outcome: maybe`", |run| {
        run.set("agent-outcome", "maybe")
    }),
    ("`finish`", "`park: maybe`", |run| run.set("park", "maybe")),
    ("`status`, `recover`", "`dashboard: maybe`", |run| {
        run.set("dashboard", "maybe")
    }),
    ("`finish`", "`cancel-wait: soon`", |run| {
        run.set("cancel-wait", "soon")
    }),
    ("`finish`", "`outcome-file` missing", |run| {
        run.unset("outcome");
        run.set("outcome-file", "missing-outcome.json");
    }),
    ("`finish`", "`outcome-file` not JSON", |run| {
        run.file("outcome.json", "{\"outcome\": ");
        run.unset("outcome");
        run.set("outcome-file", "outcome.json");
    }),
    (
        "`finish`",
        "`outcome-file` naming an unknown outcome",
        |run| {
            run.file("outcome.json", r#"{"outcome": "bogus"}"#);
            run.unset("outcome");
            run.set("outcome-file", "outcome.json");
        },
    ),
    ("`wake`", "no `GITHUB_EVENT_PATH`", |run| {
        run.env("GITHUB_EVENT_PATH", None)
    }),
    ("`wake`", "event file missing", |run| {
        run.env("GITHUB_EVENT_PATH", Some("missing-event.json"))
    }),
    ("`wake`", "event not JSON", |run| {
        run.file("event.json", "{\"workflow_run\": ")
    }),
    (
        "`wake`",
        "event of another kind (no `workflow_run`)",
        |run| run.file("event.json", r#"{"action": "opened", "pull_request": {}}"#),
    ),
    (
        "`wake`",
        "`workflow_run` malformed (`id` a string)",
        |run| {
            run.file(
                "event.json",
                r#"{"action": "completed", "workflow_run": {"id": "x"}}"#,
            )
        },
    ),
    ("`wake`", "`confirm-timeout: soon`", |run| {
        run.set("confirm-timeout", "soon")
    }),
    (
        "every mode",
        "config: out of range `session: {max-attempts: 0}`",
        |run| run.file("klaud.yml", "session:\n  max-attempts: 0\n"),
    ),
    (
        "every mode",
        "config: `session: {wrap-up-minutes: 400}` (not before the deadline)",
        |run| run.file("klaud.yml", "session:\n  wrap-up-minutes: 400\n"),
    ),
    (
        "every mode",
        "config: `budget: {daily-usd: 0}` (not a positive amount)",
        |run| run.file("klaud.yml", "budget:\n  daily-usd: 0\n"),
    ),
    (
        "every mode",
        "config: `budget: {session-usd: -1}` (not a positive amount)",
        |run| run.file("klaud.yml", "budget:\n  session-usd: -1\n"),
    ),
    (
        "every mode",
        "config: `budget: {session-usd: .inf}` (not a finite amount)",
        |run| run.file("klaud.yml", "budget:\n  session-usd: .inf\n"),
    ),
    (
        "every mode",
        "config: `dashboard: {label: 'a,b'}` (a comma would split the listing's filter)",
        |run| run.file("klaud.yml", "dashboard:\n  label: 'a,b'\n"),
    ),
    ("every mode", "config: `health: {bogus: 1}`", |run| {
        run.file("klaud.yml", "health:\n  bogus: 1\n")
    }),
    (
        "every mode",
        "config: `health: {pools: {b200: 0}}` (a pool without runners)",
        |run| run.file("klaud.yml", "health:\n  pools:\n    b200: 0\n"),
    ),
    (
        "every mode",
        "config: `health: {pools: {other: 3}}` (`other` is the pool of unnamed jobs)",
        |run| run.file("klaud.yml", "health:\n  pools:\n    other: 3\n"),
    ),
    (
        "every mode",
        "config: `health: {default-runners: 0}`",
        |run| run.file("klaud.yml", "health:\n  default-runners: 0\n"),
    ),
    ("every mode", "config: `health: {job-minutes: 0}`", |run| {
        run.file("klaud.yml", "health:\n  job-minutes: 0\n")
    }),
    (
        "every mode",
        "config: `health: {max-run-reads: 101}`",
        |run| run.file("klaud.yml", "health:\n  max-run-reads: 101\n"),
    ),
    ("every mode", "config: `aftercare: {bogus: 1}`", |run| {
        run.file("klaud.yml", "aftercare:\n  bogus: 1\n")
    }),
    (
        "every mode",
        "config: `aftercare: {refresh: sometimes}`",
        |run| run.file("klaud.yml", "aftercare:\n  refresh: sometimes\n"),
    ),
    (
        "every mode",
        "config: `aftercare: {max-sessions: 11}`",
        |run| run.file("klaud.yml", "aftercare:\n  max-sessions: 11\n"),
    ),
    (
        "every mode",
        "config: `aftercare: {cooldown-hours: 169}`",
        |run| run.file("klaud.yml", "aftercare:\n  cooldown-hours: 169\n"),
    ),
    ("every mode", "config: `aftercare: {log-lines: 0}`", |run| {
        run.file("klaud.yml", "aftercare:\n  log-lines: 0\n")
    }),
    (
        "every mode",
        "config: `aftercare: {max-log-bytes: 0}`",
        |run| run.file("klaud.yml", "aftercare:\n  max-log-bytes: 0\n"),
    ),
    (
        "`verify-baselines`, `select`, `prepare-review`",
        "a candidate's record over 64 KiB",
        |run| {
            let notes = "n".repeat(70_000);
            run.file(
                "candidates.json",
                &json!([{"id": "a", "family": "f", "notes": notes}]).to_string(),
            )
        },
    ),
    ("`session`, `note`", "no `candidate`", |run| {
        run.unset("candidate")
    }),
    ("`session`, `note`", "`candidate: a b`", |run| {
        run.set("candidate", "a b")
    }),
    ("`session`, `note`", "no `GITHUB_RUN_ID`", |run| {
        run.env("GITHUB_RUN_ID", None)
    }),
    ("`session`", "no `GITHUB_RUN_ATTEMPT`", |run| {
        run.env("GITHUB_RUN_ATTEMPT", None)
    }),
    ("`note`", "neither `text` nor `text-file`", |run| {
        run.unset("text")
    }),
    ("`note`", "both `text` and `text-file`", |run| {
        run.file("note.txt", "a note");
        run.set("text-file", "note.txt");
    }),
    ("`note`", "`text-file` missing", |run| {
        run.unset("text");
        run.set("text-file", "missing-note.txt");
    }),
    ("`note`", "`text` blank", |run| run.set("text", "  ")),
    (
        "`discover`",
        "no `repo-path` and no `GITHUB_WORKSPACE`",
        |run| run.unset("repo-path"),
    ),
    ("`discover`", "`repo-path` not a directory", |run| {
        run.set("repo-path", "missing-repository")
    }),
    (
        "`discover`",
        "`render-cache` a file, not a directory",
        |run| {
            run.file("cache-file", "not a folder\n");
            run.set("render-cache", "cache-file");
        },
    ),
    (
        "`discover`",
        "`repo-path` a checkout without a commit",
        |run| {
            let checkout = run.step.path("checkout");
            std::fs::remove_dir_all(checkout.join(".git")).unwrap();
            git(&checkout, &["init", "-q"]);
        },
    ),
    (
        "`discover`",
        "`discovery.feeds.images` a file that does not exist",
        |run| {
            run.file(
                "klaud.yml",
                "discovery:\n  feeds:\n    images: missing-images.json\n    benchmarks: empty-feed.json\n    workflow-info: empty-feed.json\n",
            )
        },
    ),
    (
        "`discover`",
        "`discovery.feeds.images` a directory",
        |run| {
            run.file(
                "klaud.yml",
                "discovery:\n  feeds:\n    images: checkout\n    benchmarks: empty-feed.json\n    workflow-info: empty-feed.json\n",
            )
        },
    ),
    (
        "`discover`",
        "`discovery.feeds.images` a URL with a user name and password",
        |run| {
            run.file(
                "klaud.yml",
                "discovery:\n  feeds:\n    images: https://user:secret@example.com/api/v1/latest-images\n",
            )
        },
    ),
    (
        "`discover`",
        "`discovery.configs` a pattern that matches no file",
        |run| discover_config(run, "  configs: ['configs/*-main.yaml']\n"),
    ),
    (
        "`discover`",
        "`discovery.runner-config` not a file in the checkout",
        |run| std::fs::remove_file(run.step.path("checkout/configs/runners.yaml")).unwrap(),
    ),
    (
        "`discover`",
        "no `producer.entrypoints` file in the checkout (the generator)",
        |run| std::fs::remove_file(run.step.path(DISCOVER_GENERATOR)).unwrap(),
    ),
    ("every mode", "config: `discovery: {configs: []}`", |run| {
        run.file("klaud.yml", "discovery:\n  configs: []\n")
    }),
    (
        "every mode",
        "config: `discovery: {configs: ['../other/*-master.yaml']}` (outside the repository)",
        |run| {
            run.file(
                "klaud.yml",
                "discovery:\n  configs: ['../other/*-master.yaml']\n",
            )
        },
    ),
    (
        "every mode",
        "config: `discovery: {runner-config: ''}`",
        |run| run.file("klaud.yml", "discovery:\n  runner-config: ''\n"),
    ),
    (
        "every mode",
        "config: `discovery: {feeds: {images: 'http://example.com/latest-images'}}` (not https://)",
        |run| {
            run.file(
                "klaud.yml",
                "discovery:\n  feeds:\n    images: 'http://example.com/latest-images'\n",
            )
        },
    ),
    (
        "every mode",
        "config: `discovery: {feeds: {images: latest-images.json}}` (a file, without `benchmarks`)",
        |run| {
            run.file(
                "klaud.yml",
                "discovery:\n  feeds:\n    images: latest-images.json\n",
            )
        },
    ),
    (
        "every mode",
        "config: `discovery: {feeds: {workflow-info: 'ftp://example.com/workflow-info'}}`",
        |run| {
            run.file(
                "klaud.yml",
                "discovery:\n  feeds:\n    workflow-info: 'ftp://example.com/workflow-info'\n",
            )
        },
    ),
    (
        "every mode",
        "config: `discovery: {published-as: {colour: {red: rot}}}` (not a published field)",
        |run| {
            run.file(
                "klaud.yml",
                "discovery:\n  published-as:\n    colour:\n      red: rot\n",
            )
        },
    ),
    (
        "every mode",
        "config: `discovery: {disagg-framework-prefixes: ['']}`",
        |run| {
            run.file(
                "klaud.yml",
                "discovery:\n  disagg-framework-prefixes: ['']\n",
            )
        },
    ),
    (
        "every mode",
        "config: `discovery: {models: {dsr1: ''}}`",
        |run| run.file("klaud.yml", "discovery:\n  models:\n    dsr1: ''\n"),
    ),
    (
        "every mode",
        "config: `discovery: {review-batch-size: 0}`",
        |run| run.file("klaud.yml", "discovery:\n  review-batch-size: 0\n"),
    ),
    (
        "every mode",
        "config: `discovery: {review-batch-size: 257}`",
        |run| run.file("klaud.yml", "discovery:\n  review-batch-size: 257\n"),
    ),
    (
        "every mode",
        "config: `discovery: {legacy-branch-prefixes: ['']}`",
        |run| run.file("klaud.yml", "discovery:\n  legacy-branch-prefixes: ['']\n"),
    ),
    (
        "every mode",
        "config: unknown nested key `discovery: {bogus: 1}`",
        |run| run.file("klaud.yml", "discovery:\n  bogus: 1\n"),
    ),
    (
        "every mode",
        "config: `workflows: {sweep: ''}` (empty; `null` is no sweep workflow)",
        |run| run.file("klaud.yml", "workflows:\n  sweep: ''\n"),
    ),
    (
        "every mode",
        "config: `discovery: {source: tickets}` (not a source)",
        |run| run.file("klaud.yml", "discovery:\n  source: tickets\n"),
    ),
    (
        "every mode",
        "config: unknown key `discovery: {issues: {lable: klaud}}`",
        |run| run.file("klaud.yml", "discovery:\n  issues:\n    lable: klaud\n"),
    ),
    (
        "every mode",
        "config: `discovery: {issues: {label: ''}}`",
        |run| run.file("klaud.yml", "discovery:\n  issues:\n    label: ''\n"),
    ),
    (
        "every mode",
        "config: `discovery: {issues: {family-labels: ''}}`",
        |run| {
            run.file(
                "klaud.yml",
                "discovery:\n  issues:\n    family-labels: ''\n",
            )
        },
    ),
    (
        "every mode",
        "config: `discovery: {issues: {priority-labels: [P0, p0]}}` (a repeat without case)",
        |run| {
            run.file(
                "klaud.yml",
                "discovery:\n  issues:\n    priority-labels: [P0, p0]\n",
            )
        },
    ),
    ("`check-stop`", "stdin not the hook's JSON", |run| {
        run.stdin = "Stop".into()
    }),
    ("`check-stop`", "no `context-file`", |run| {
        run.unset("context-file")
    }),
    ("`check-stop`", "`context-file` missing", |run| {
        run.set("context-file", "missing-session.json")
    }),
    (
        "`check-stop`",
        "`context-file` not a session context",
        |run| run.file("session.json", "{\"version\": 1}"),
    ),
];

/// A row of the table in `docs/bad-input.md`.
#[derive(Debug)]
struct DocumentedRow {
    modes: String,
    input: String,
    exit: i32,
    message: String,
    requests: String,
}

fn documented_rows() -> Vec<DocumentedRow> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/bad-input.md");
    let page_text = std::fs::read_to_string(&path).expect("docs/bad-input.md");
    let header = "| mode | bad input | exit | message | requests |";
    let table = page_text
        .split(header)
        .nth(1)
        .expect("docs/bad-input.md has a table with the expected columns");
    table
        .lines()
        .skip(2) // the rest of the header line and the separator
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let cells: Vec<&str> = line
                .trim()
                .trim_matches('|')
                .split(" | ")
                .map(str::trim)
                .collect();
            assert_eq!(cells.len(), 5, "five cells: {line}");
            let message = cells[3];
            assert!(
                message.len() > 2 && message.starts_with('`') && message.ends_with('`'),
                "the message is one code span: {line}"
            );
            DocumentedRow {
                modes: cells[0].to_string(),
                input: cells[1].to_string(),
                exit: cells[2].parse().unwrap_or_else(|_| panic!("exit: {line}")),
                message: message[1..message.len() - 1].to_string(),
                requests: cells[4].to_string(),
            }
        })
        .collect()
}

fn modes_of(cell: &str) -> Vec<Option<String>> {
    match cell {
        "(none)" => vec![None],
        "every mode" => ALL_MODES
            .iter()
            .map(|mode| Some(mode.to_string()))
            .collect(),
        "every GitHub mode" => GITHUB_MODES
            .iter()
            .map(|mode| Some(mode.to_string()))
            .collect(),
        listed => listed
            .split(", ")
            .map(|mode| {
                let mode = mode.trim_matches('`');
                assert!(
                    ALL_MODES.contains(&mode) || mode == HOOK_MODE,
                    "unknown mode {mode}"
                );
                Some(mode.to_string())
            })
            .collect(),
    }
}

/// A repository where a valid run of any mode would write: a live session of candidate `a`
/// with the bot's draft and claim, and a planner workflow that takes `wake`.
fn world() -> FakeGitHubHandle {
    let mut world = recover_support::World::new();
    world.state.add_token(TOKEN, recover_support::BOT);
    let planner = world.state.ensure_workflow(recover_support::PLANNER);
    world.state.workflows.get_mut(&planner).unwrap().inputs = Some(vec!["wake".into()]);
    let parent = world.running_planner(&["a"]);
    let number = world.bot_draft("a");
    world.session("a", SessionState::Live, parent, Some(number));
    world.claim("a", parent);
    world.start()
}

/// The generator of a valid `discover`'s checkout (the first default `producer.entrypoints`).
const DISCOVER_GENERATOR: &str = "checkout/utils/matrix_logic/generate_sweep_configs.py";

fn git(directory: &Path, arguments: &[&str]) {
    let status = std::process::Command::new("git")
        .args(arguments)
        .current_dir(directory)
        .status()
        .unwrap();
    assert!(status.success(), "git {arguments:?}");
}

/// A generator that renders nothing and leaves `generator-ran` in the step's root, so that a
/// row can tell it was never run.
const DISCOVER_GENERATOR_TEXT: &str = "import os\n\
open(os.path.join(os.path.dirname(__file__), '../../../generator-ran'), 'w').close()\n\
print('[]')\n";

/// `discover`'s checkout: one master config with one family, the runners file and a generator
/// that renders nothing, committed.
fn discover_checkout(step: &Step) {
    for (path, text) in [
        (
            "checkout/configs/x-master.yaml",
            "k1:\n  image: vllm/vllm-openai:v1\n",
        ),
        ("checkout/configs/runners.yaml", "b200: [b200-1]\n"),
        (DISCOVER_GENERATOR, DISCOVER_GENERATOR_TEXT),
    ] {
        let full = step.path(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    }
    let checkout = step.path("checkout");
    git(&checkout, &["init", "-q"]);
    git(&checkout, &["add", "-A"]);
    git(
        &checkout,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-q",
            "-m",
            "x",
        ],
    );
    let catalog = json!([{"model": "dsr1", "hardware": "b200", "framework": "vllm",
        "precision": "fp8", "spec_method": "none", "disagg": false, "isl": 1024, "osl": 1024,
        "benchmark_type": "single_turn", "image": "vllm/vllm-openai:v1", "date": "2026-08-01"}]);
    step.write("latest-images.json", &catalog.to_string());
    step.write("empty-feed.json", "[]");
}

/// `discover`'s configuration: the bot, the feeds as local files and `more` of `discovery`.
fn discover_config(run: &Invocation, more: &str) {
    let feeds = "  feeds:\n    images: latest-images.json\n    benchmarks: empty-feed.json\n    workflow-info: empty-feed.json\n";
    let config = format!("bot: {}\ndiscovery:\n{feeds}{more}", recover_support::BOT);
    run.file("klaud.yml", &config);
}

/// The valid files and flags of each mode, before a row changes them.
fn valid_invocation<'a>(step: &'a Step, mode: Option<&str>) -> Invocation<'a> {
    step.write("klaud.yml", &format!("bot: {}\n", recover_support::BOT));
    step.write(
        "candidates.json",
        r#"[{"id": "a", "family": "configs/x.yaml:a"}]"#,
    );
    let ended = chrono::Utc::now() - chrono::Duration::minutes(1);
    let event = json!({
        "action": "completed",
        "workflow_run": {
            "id": 501, "name": "e2e-tests", "path": ".github/workflows/e2e-tests.yml",
            "head_branch": "klaud/auto-a", "head_sha": SHA, "event": "workflow_dispatch",
            "status": "completed", "conclusion": "failure",
            "actor": {"login": recover_support::BOT},
            "triggering_actor": {"login": recover_support::BOT},
            "updated_at": ended.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "repository": {"full_name": REPOSITORY},
            "head_repository": {"full_name": REPOSITORY},
        },
        "repository": {"full_name": REPOSITORY, "default_branch": "main"},
    });
    step.write("event.json", &event.to_string());
    let mut invocation = Invocation {
        step,
        mode: mode.map(str::to_string),
        flags: Vec::new(),
        environment: Vec::new(),
        stdin: String::new(),
    };
    let npm = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-npm/npm");
    match mode {
        Some("install-cli") => {
            invocation.set("cli-version", "2.1.282");
            invocation.set("cli-attempts", "1");
            invocation.set("npm", &npm.display().to_string());
        }
        Some("verify-baselines") => {
            invocation.set("candidates", "candidates.json");
            invocation.set("repo-path", ".");
        }
        Some("select") | Some("prepare-review") => invocation.set("candidates", "candidates.json"),
        Some("finish") => {
            invocation.set("candidate", "a");
            invocation.set("outcome", "failed");
            invocation.set("cancel-wait", "0");
        }
        Some("wake") => invocation.set("confirm-timeout", "5"),
        Some("session") => invocation.set("candidate", "a"),
        Some("note") => {
            invocation.set("candidate", "a");
            invocation.set("text", "smoke passed");
        }
        Some("discover") => {
            discover_checkout(step);
            discover_config(&invocation, "");
            invocation.set("repo-path", "checkout");
        }
        Some(HOOK_MODE) => {
            let context = step.write("session.json", "{}");
            invocation.set("context-file", &context.display().to_string());
            invocation.stdin = r#"{"hook_event_name": "Stop", "stop_hook_active": false}"#.into();
        }
        _ => {}
    }
    invocation
}

fn command(invocation: &Invocation, server: &FakeGitHubHandle) -> assert_cmd::Command {
    let step = invocation.step;
    let mut command = match &invocation.mode {
        Some(mode) => step.command(server, mode),
        None => {
            let mut command = hermetic_klaud();
            command
                .current_dir(step.path(""))
                .env("GITHUB_ACTIONS", "true")
                .env("GITHUB_OUTPUT", step.path("github-output"))
                .env("GITHUB_STEP_SUMMARY", step.path("step-summary"));
            assert_cmd::Command::from_std(command)
        }
    };
    command.env("FAKE_NPM_COUNTER", step.path("npm-calls"));
    for (flag, value) in &invocation.flags {
        if value.starts_with('-') {
            command.arg(format!("--{flag}={value}"));
        } else {
            command.arg(format!("--{flag}")).arg(value);
        }
    }
    for (name, value) in &invocation.environment {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command.write_stdin(invocation.stdin.clone());
    command.timeout(std::time::Duration::from_secs(120));
    command
}

/// The message with `…` standing for any text: every part, in order.
fn contains_in_order(log: &str, message: &str) -> bool {
    let mut rest = log;
    for part in message.split('…') {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

fn files_under(directory: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut pending = vec![directory.to_path_buf()];
    while let Some(directory) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&directory) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.path().is_dir() {
                pending.push(entry.path());
            } else {
                files.push(entry.path().display().to_string());
            }
        }
    }
    files
}

fn check(row: &DocumentedRow, change: Change, mode: Option<&str>) {
    let what = format!("{} in {}", row.input, mode.unwrap_or("(no mode)"));
    let server = world();
    let step = Step::default();
    let mut invocation = valid_invocation(&step, mode);
    change(&mut invocation);
    let output = command(&invocation, &server).output().unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(row.exit), "{what}: exit\n{log}");
    assert!(
        contains_in_order(&log, &row.message),
        "{what}: the message `{}`\n{log}",
        row.message
    );
    assert!(
        !step.path("npm-calls").exists(),
        "{what}: npm was never called"
    );
    assert!(
        !step.path("generator-ran").exists(),
        "{what}: discover's generator was never run"
    );
    let requests = github_mode_support::requests(&server);
    match row.requests.as_str() {
        "none" => assert!(requests.is_empty(), "{what}: no request: {requests:?}"),
        "reads only" => {
            assert!(!requests.is_empty(), "{what}: GitHub was read");
            assert_eq!(write_requests(&server), Vec::<String>::new(), "{what}");
        }
        "records `no-outcome`" => {
            let session = recover_support::stored_ledger(&server)
                .sessions
                .into_iter()
                .rev()
                .find(|session| session.candidate == "a")
                .expect("the session of a");
            assert_eq!(session.outcome, Some(Outcome::NoOutcome), "{what}\n{log}");
        }
        other => panic!("{what}: unknown requests cell {other:?}"),
    }
    if row.exit == 2 {
        assert_eq!(
            std::fs::read_to_string(step.path("github-output")).unwrap_or_default(),
            "",
            "{what}: no step output"
        );
        assert_eq!(
            files_under(&step.path("out")),
            Vec::<String>::new(),
            "{what}: nothing in the work directory"
        );
    }
}

#[test]
fn the_documented_table_and_the_tests_rows_are_the_same_rows() {
    let documented: BTreeSet<(String, String)> = documented_rows()
        .into_iter()
        .map(|row| (row.modes, row.input))
        .collect();
    let tested: BTreeSet<(String, String)> = ROWS
        .iter()
        .map(|(modes, input, _)| (modes.to_string(), input.to_string()))
        .collect();
    assert_eq!(tested.len(), ROWS.len(), "no test row twice");
    let only_documented: Vec<_> = documented.difference(&tested).collect();
    let only_tested: Vec<_> = tested.difference(&documented).collect();
    assert!(
        only_documented.is_empty() && only_tested.is_empty(),
        "rows only in docs/bad-input.md: {only_documented:?}\nrows only in tests/bad_input.rs: {only_tested:?}"
    );
}

#[test]
fn every_documented_bad_input_is_rejected_as_documented() {
    let rows = documented_rows();
    assert!(rows.len() >= 50, "the table is read whole: {}", rows.len());
    for row in &rows {
        let Some((_, _, change)) = ROWS
            .iter()
            .find(|(modes, input, _)| *modes == row.modes && *input == row.input)
        else {
            continue; // reported by the other test
        };
        for mode in modes_of(&row.modes) {
            check(row, *change, mode.as_deref());
        }
    }
}
