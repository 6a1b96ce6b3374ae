//! The Stop hook's decision (`check-stop`) over any hook input and any outcome file: every
//! step ends in an answer whose stdout is empty or one JSON object of the CLI's hook protocol
//! (`{"decision": "block", "reason": …}` with a reason, or `hookSpecificOutput` context).
#![no_main]

use chrono::{TimeZone, Utc};
use klaud::core::outcome_file::parse_outcome_file;
use klaud::core::session::SessionContext;
use klaud::core::session::stop::{
    HookAnswer, OutcomeFileState, StopStep, first_step, read_hook_input, with_pull_requests,
    with_sweep_runs,
};
use klaud::core::snapshot::ReadFailure;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const CONTEXT: &str = r#"{"version": 1, "candidate": {"id": "a"}, "candidate-id": "a",
  "family": "f", "repository": "acme/bench", "api-url": "http://127.0.0.1:1",
  "branch": "klaud/auto-a", "pull-request": null, "attempt": 1, "max-attempts": 3,
  "resume": false, "session-started-at": "2026-12-01T08:00:00Z",
  "adopted-at": "2026-12-01T08:00:00Z", "deadline": "2026-12-01T13:30:00Z",
  "wrap-up-at": "2026-12-01T13:10:00Z", "earlier-attempts": [],
  "outcome-file": "/tmp/outcome.json", "outcomes": [],
  "workflows": {"smoke": "e2e-tests.yml", "sweep": "run-sweep.yml"}, "bot": "bot",
  "handoff-label": "klaud-handoff", "note-command": "klaud note --candidate a --text-file FILE"}"#;

fn check(answer: &HookAnswer) {
    let stdout = answer.stdout();
    if stdout.is_empty() {
        return;
    }
    let value: Value = serde_json::from_str(&stdout).expect("one JSON object");
    match value.get("decision") {
        Some(decision) => {
            assert_eq!(decision, "block");
            assert!(value["reason"].as_str().is_some_and(|reason| !reason.is_empty()));
        }
        None => assert!(value["hookSpecificOutput"]["additionalContext"].is_string()),
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (input, outcome) = text.split_once('\u{1}').unwrap_or((&text, ""));
    let context: SessionContext = serde_json::from_str(CONTEXT).unwrap();
    let event = read_hook_input(input);
    let outcome = if outcome.is_empty() {
        OutcomeFileState::Missing
    } else {
        match parse_outcome_file(outcome) {
            Ok(file) => OutcomeFileState::Valid(file),
            Err(error) => OutcomeFileState::Invalid(error),
        }
    };
    let minute = u32::try_from(data.len() % 600).unwrap();
    let now = Utc.with_ymd_and_hms(2026, 12, 1, 8 + minute / 60, minute % 60, 0).unwrap();
    match first_step(&event, Ok(&context), &outcome, now) {
        StopStep::Answer(answer) => check(&answer),
        _ => {
            for pulls in [Ok(&[][..]), Err(ReadFailure::new("a failed read"))] {
                match with_pull_requests(&context, &outcome, pulls) {
                    StopStep::Answer(answer) => check(&answer),
                    StopStep::NeedsSweepRuns { pull_request, head_sha } => {
                        check(&with_sweep_runs(&context, pull_request, &head_sha, Ok(&[])));
                    }
                    StopStep::NeedsPullRequests => panic!("asked for the pull requests twice"),
                    StopStep::NeedsIssue { .. } => panic!("asked for the issue last"),
                }
            }
        }
    }
    if let StopStep::Answer(answer) = first_step(&event, Err("unreadable"), &outcome, now) {
        check(&answer);
    }
});
