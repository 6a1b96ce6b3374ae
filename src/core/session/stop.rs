//! `check-stop`, the agent CLI's hook (contract §9), decided in steps so that the shell reads
//! GitHub only when the answer depends on it (at most twice: the branch's pull requests, then
//! the sweep runs on the pull request's head).
//!
//! On `Stop`: the agent may stop when its deadline passed, when its outcome file is valid (and a
//! `validated` outcome has a successful sweep on the pull request's exact head), or when its pull
//! request was handed off or closed; otherwise it is blocked with a reason that says exactly
//! what to do. A failed read blocks with the reason rather than guessing. On `PostToolUse`: from
//! the wrap-up time on, the agent is told how much time is left and what to do before the
//! deadline. Every input has an answer; none writes anything.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::SessionContext;
use crate::core::outcome::Outcome;
use crate::core::outcome_file::{OutcomeFile, OutcomeFileError, reportable_outcomes};
use crate::core::snapshot::{PullRequestFact, ReadFailure, RunFact};

/// The hook event the CLI reported on stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookEvent {
    Stop,
    PostToolUse,
    /// An event this hook has nothing to say about.
    Other(String),
    /// Stdin was not the CLI's hook JSON.
    Unreadable(String),
}

/// Reads the hook's stdin (`{"hook_event_name": …, …}`); never fails.
pub fn read_hook_input(text: &str) -> HookEvent {
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(error) => return HookEvent::Unreadable(format!("not JSON: {error}")),
    };
    match value.get("hook_event_name").and_then(Value::as_str) {
        Some("Stop" | "SubagentStop") => HookEvent::Stop,
        Some("PostToolUse") => HookEvent::PostToolUse,
        Some(other) => HookEvent::Other(crate::core::text::bounded(other, 60)),
        None => HookEvent::Unreadable("no hook_event_name".into()),
    }
}

/// What the agent wrote at the outcome file's path.
#[derive(Debug, Clone, PartialEq)]
pub enum OutcomeFileState {
    Missing,
    Unreadable(String),
    Invalid(OutcomeFileError),
    Valid(OutcomeFile),
}

/// The hook's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookAnswer {
    /// Print nothing: the agent may stop (or, after a tool call, nothing to add).
    Nothing,
    /// Keep the agent working; the reason becomes its next instruction.
    Block(String),
    /// Text added to the agent's context after a tool call.
    Context(String),
}

impl HookAnswer {
    /// The hook's stdout: empty, or one JSON object.
    pub fn stdout(&self) -> String {
        match self {
            HookAnswer::Nothing => String::new(),
            HookAnswer::Block(reason) => {
                json!({"decision": "block", "reason": reason}).to_string() + "\n"
            }
            HookAnswer::Context(text) => json!({
                "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": text}
            })
            .to_string()
                + "\n",
        }
    }
}

/// One step of the decision: an answer, or the read it needs next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopStep {
    Answer(HookAnswer),
    /// Whether the issue the candidate came from is still open (contract §13): asked only for
    /// such a candidate, and only when the hook would block it with `otherwise` — a closed issue
    /// lets the agent go instead. So the hook reads the issue after the pull requests (and the
    /// sweep runs), and only when the answer depends on it.
    NeedsIssue {
        number: u64,
        otherwise: String,
    },
    /// The pull requests of the session's branch.
    NeedsPullRequests,
    /// The sweep runs on this head.
    NeedsSweepRuns {
        pull_request: u64,
        head_sha: String,
    },
}

/// The first step, from the hook input, the context, the outcome file and the clock.
pub fn first_step(
    event: &HookEvent,
    context: Result<&SessionContext, &str>,
    outcome: &OutcomeFileState,
    now: DateTime<Utc>,
) -> StopStep {
    match event {
        HookEvent::PostToolUse => StopStep::Answer(match context {
            Ok(context) => time_warning(context, now),
            Err(_) => HookAnswer::Nothing,
        }),
        HookEvent::Other(_) => StopStep::Answer(HookAnswer::Nothing),
        HookEvent::Unreadable(problem) => StopStep::Answer(HookAnswer::Block(format!(
            "klaud's Stop hook could not read its input ({problem}), so it cannot check the session: write the outcome file named in the session context and stop again."
        ))),
        HookEvent::Stop => {
            let context = match context {
                Ok(context) => context,
                Err(problem) => {
                    return StopStep::Answer(HookAnswer::Block(format!(
                        "klaud's Stop hook could not read the session context ({problem}); stop again once it is readable."
                    )));
                }
            };
            if now >= context.deadline {
                return StopStep::Answer(HookAnswer::Nothing);
            }
            match outcome {
                OutcomeFileState::Valid(file) if file.outcome != Outcome::Validated => {
                    StopStep::Answer(HookAnswer::Nothing)
                }
                _ => StopStep::NeedsPullRequests,
            }
        }
    }
}

/// A block of a candidate that came from an issue becomes the question whether its issue is
/// still open; any other step stays as it is.
pub fn or_the_issue(context: &SessionContext, step: StopStep) -> StopStep {
    match (step, &context.maintainers_request) {
        (StopStep::Answer(HookAnswer::Block(reason)), Some(request)) => StopStep::NeedsIssue {
            number: request.issue,
            otherwise: reason,
        },
        (step, _) => step,
    }
}

/// The answer after the candidate's issue was read: a closed issue lets the agent go (`finish`
/// records the candidate `retired`); an open one, or one that could not be read, keeps the
/// block it was asked for.
pub fn with_issue(open: Result<bool, ReadFailure>, otherwise: String) -> HookAnswer {
    match open {
        Ok(false) => HookAnswer::Nothing,
        Ok(true) | Err(_) => HookAnswer::Block(otherwise),
    }
}

/// The step after the branch's pull requests were read (`Err`: the read failed).
pub fn with_pull_requests(
    context: &SessionContext,
    outcome: &OutcomeFileState,
    pulls: Result<&[PullRequestFact], ReadFailure>,
) -> StopStep {
    let pulls = match pulls {
        Ok(pulls) => pulls,
        Err(error) => {
            return StopStep::Answer(HookAnswer::Block(format!(
                "klaud could not read the pull requests of {} ({error}), so it cannot check the session yet. {} Then stop again.",
                context.branch,
                outcome_instruction(context, outcome)
            )));
        }
    };
    let pull = super::pick_pull_request(
        pulls,
        &context.branch,
        context.pull_request.as_ref().map(|known| known.number),
        context.session_started_at,
    );
    if let Some(pull) = pull
        && (pull
            .labels
            .iter()
            .any(|label| label == &context.handoff_label)
            || !pull.open)
    {
        return StopStep::Answer(HookAnswer::Nothing);
    }
    match outcome {
        OutcomeFileState::Valid(file) if file.outcome == Outcome::Validated => {
            match (pull, &context.workflows.sweep) {
                // Without a sweep workflow, validated needs the pull request only.
                (Some(_), None) => StopStep::Answer(HookAnswer::Nothing),
                (Some(pull), Some(_)) => StopStep::NeedsSweepRuns {
                    pull_request: pull.number,
                    head_sha: pull.head_sha.clone(),
                },
                (None, Some(sweep)) => StopStep::Answer(HookAnswer::Block(format!(
                    "the outcome file says validated, but {} has no open pull request: open the draft pull request from it, run the sweep ({sweep}) on its head, and write validated only after that sweep succeeded.",
                    context.branch
                ))),
                (None, None) => StopStep::Answer(HookAnswer::Block(format!(
                    "the outcome file says validated, but {} has no open pull request: open the draft pull request from it, test the change, and write validated only after that.",
                    context.branch
                ))),
            }
        }
        _ => StopStep::Answer(HookAnswer::Block(outcome_instruction(context, outcome))),
    }
}

/// The answer after the sweep runs on the pull request's head were read.
pub fn with_sweep_runs(
    context: &SessionContext,
    pull_request: u64,
    head_sha: &str,
    runs: Result<&[RunFact], ReadFailure>,
) -> HookAnswer {
    let short = &head_sha[..head_sha.len().min(12)];
    match runs {
        Err(error) => HookAnswer::Block(format!(
            "the outcome file says validated, but klaud could not read the sweep runs on #{pull_request}'s head {short} ({error}); stop again in a moment."
        )),
        Ok(runs) => {
            let sweep = context.workflows.sweep.as_deref().unwrap_or_default();
            let succeeded = runs
                .iter()
                .any(|run| run.head_sha == head_sha && run.workflow == sweep && run.succeeded());
            if succeeded {
                HookAnswer::Nothing
            } else {
                HookAnswer::Block(format!(
                    "the outcome file says validated, but no {sweep} run succeeded on #{pull_request}'s exact head {short}. Start the sweep on that head (or wait for the one running) and write validated only when it succeeded; if the head changed after the sweep, the sweep must run again. If it cannot succeed, write the outcome that says why."
                ))
            }
        }
    }
}

/// What to do about a missing or invalid outcome file.
fn outcome_instruction(context: &SessionContext, outcome: &OutcomeFileState) -> String {
    let names: Vec<&str> = reportable_outcomes().map(Outcome::name).collect();
    let how = format!(
        "Write a JSON object to {} with \"outcome\" one of {} (optional: \"pull-request\", \"run-ids\", \"phase\", \"reason-code\"); the session context lists what each outcome means.",
        context.outcome_file,
        names.join(", ")
    );
    match outcome {
        OutcomeFileState::Missing => format!("klaud: the session has no outcome yet. {how}"),
        OutcomeFileState::Unreadable(error) => {
            format!("klaud: the outcome file cannot be read ({error}). {how}")
        }
        OutcomeFileState::Invalid(error) => format!(
            "klaud: the outcome file is not valid: {} {}. {how}",
            error.field, error.message
        ),
        OutcomeFileState::Valid(_) => how,
    }
}

/// After a tool call: from the wrap-up time on, how much time is left and what to do.
pub fn time_warning(context: &SessionContext, now: DateTime<Utc>) -> HookAnswer {
    if now < context.wrap_up_at {
        return HookAnswer::Nothing;
    }
    let deadline = context.deadline.to_rfc3339_opts(SecondsFormat::Secs, true);
    let what = format!(
        "commit and push your work to {}, leave a note with `{}` saying what is done, what failed and what to do next, and write the outcome file only if the session is decided. A session without an outcome at the deadline is parked and continues in a new job that reads your notes.",
        context.branch, context.note_command
    );
    if now >= context.deadline {
        return HookAnswer::Context(format!(
            "klaud: this job's deadline ({deadline}) has passed. Now {what}"
        ));
    }
    let minutes = (context.deadline - now).num_minutes().max(0);
    HookAnswer::Context(format!(
        "klaud: {minutes} minutes are left until this job's deadline ({deadline}). Wrap up: {what}"
    ))
}

#[cfg(test)]
mod tests {
    use super::super::request::MaintainersRequest;
    use super::*;
    use crate::core::outcome_file::parse_outcome_file;
    use crate::core::test_support::at;

    fn context() -> SessionContext {
        serde_json::from_value(json!({
            "version": 1, "candidate": {"id": "a"}, "candidate-id": "a", "family": "f",
            "repository": "acme/bench", "api-url": "http://127.0.0.1:1", "branch": "klaud/auto-a",
            "pull-request": null, "attempt": 1, "max-attempts": 3, "resume": false,
            "session-started-at": "2026-12-01T08:00:00Z", "adopted-at": "2026-12-01T08:00:00Z",
            "deadline": "2026-12-01T13:30:00Z", "wrap-up-at": "2026-12-01T13:10:00Z",
            "earlier-attempts": [], "outcome-file": "/tmp/klaud/outcome.json", "outcomes": [],
            "workflows": {"smoke": "e2e-tests.yml", "sweep": "run-sweep.yml"}, "bot": "bot",
            "handoff-label": "klaud-handoff", "note-command": "klaud note --candidate a --text-file FILE"
        }))
        .unwrap()
    }

    fn valid(text: &str) -> OutcomeFileState {
        OutcomeFileState::Valid(parse_outcome_file(text).unwrap())
    }

    fn pull(open: bool, labels: &[&str]) -> PullRequestFact {
        PullRequestFact {
            number: 7,
            node_id: String::new(),
            head_branch: "klaud/auto-a".into(),
            head_sha: "abc".into(),
            from_this_repository: true,
            author: Some("bot".into()),
            open,
            draft: true,
            merged: false,
            labels: labels.iter().map(|label| label.to_string()).collect(),
            created_at: at("2026-12-01T09:00:00Z"),
        }
    }

    const BEFORE: &str = "2026-12-01T10:00:00Z";

    #[test]
    fn an_issue_candidates_issue_is_read_only_to_lift_a_block() {
        let plain = context();
        let mut from_issue = context();
        from_issue.maintainers_request = Some(MaintainersRequest {
            about: String::new(),
            issue: 40,
            url: String::new(),
            labelled_by: "maintainer-ann".into(),
            quoted: "> a task".into(),
            comments: Vec::new(),
            comments_unread: None,
        });
        let block = || StopStep::Answer(HookAnswer::Block("write the outcome".into()));
        assert_eq!(
            or_the_issue(&from_issue, block()),
            StopStep::NeedsIssue {
                number: 40,
                otherwise: "write the outcome".into()
            }
        );
        assert_eq!(
            or_the_issue(&plain, block()),
            block(),
            "no issue to ask about"
        );
        let go = StopStep::Answer(HookAnswer::Nothing);
        assert_eq!(
            or_the_issue(&from_issue, go.clone()),
            go,
            "no read to let it go"
        );
        assert_eq!(
            with_issue(Ok(false), "write the outcome".into()),
            HookAnswer::Nothing,
            "a closed issue lets the agent go"
        );
        for open in [Ok(true), Err(ReadFailure::new("HTTP 502"))] {
            assert_eq!(
                with_issue(open, "write the outcome".into()),
                HookAnswer::Block("write the outcome".into())
            );
        }
    }

    #[test]
    fn a_stop_reads_github_only_when_the_answer_depends_on_it() {
        let context = context();
        let now = at(BEFORE);
        let stop = HookEvent::Stop;
        assert_eq!(
            first_step(&stop, Ok(&context), &valid(r#"{"outcome": "failed"}"#), now),
            StopStep::Answer(HookAnswer::Nothing)
        );
        assert_eq!(
            first_step(&stop, Ok(&context), &OutcomeFileState::Missing, now),
            StopStep::NeedsPullRequests
        );
        assert_eq!(
            first_step(
                &stop,
                Ok(&context),
                &OutcomeFileState::Missing,
                at("2026-12-01T13:30:00Z")
            ),
            StopStep::Answer(HookAnswer::Nothing),
            "the deadline passed: it may stop"
        );
    }

    #[test]
    fn a_handed_off_or_closed_pull_request_lets_the_agent_stop() {
        let context = context();
        for pull in [pull(true, &["klaud-handoff"]), pull(false, &[])] {
            assert_eq!(
                with_pull_requests(
                    &context,
                    &OutcomeFileState::Missing,
                    Ok(std::slice::from_ref(&pull))
                ),
                StopStep::Answer(HookAnswer::Nothing)
            );
        }
        let StopStep::Answer(HookAnswer::Block(reason)) =
            with_pull_requests(&context, &OutcomeFileState::Missing, Ok(&[pull(true, &[])]))
        else {
            panic!("blocked");
        };
        assert!(reason.contains("/tmp/klaud/outcome.json"), "{reason}");
        let StopStep::Answer(HookAnswer::Block(reason)) =
            with_pull_requests(&context, &OutcomeFileState::Missing, Err("HTTP 502".into()))
        else {
            panic!("blocked");
        };
        assert!(
            reason.contains("HTTP 502"),
            "a failed read blocks with why: {reason}"
        );
    }

    #[test]
    fn validated_needs_a_successful_sweep_on_the_exact_head() {
        let context = context();
        let validated = valid(r#"{"outcome": "validated"}"#);
        assert_eq!(
            with_pull_requests(&context, &validated, Ok(&[pull(true, &[])])),
            StopStep::NeedsSweepRuns {
                pull_request: 7,
                head_sha: "abc".into()
            }
        );
        // Without a sweep workflow, the pull request is enough.
        let mut no_sweep = context.clone();
        no_sweep.workflows.sweep = None;
        assert_eq!(
            with_pull_requests(&no_sweep, &validated, Ok(&[pull(true, &[])])),
            StopStep::Answer(HookAnswer::Nothing)
        );
        assert!(matches!(
            with_pull_requests(&no_sweep, &validated, Ok(&[])),
            StopStep::Answer(HookAnswer::Block(_))
        ));
        let run = |head: &str, conclusion: &str| RunFact {
            id: 1,
            workflow: "run-sweep.yml".into(),
            head_branch: Some("klaud/auto-a".into()),
            head_sha: head.into(),
            title: None,
            actor: None,
            triggering_actor: None,
            active: false,
            conclusion: Some(crate::core::github_state::RunConclusion::from(conclusion)),
            created_at: at(BEFORE),
            updated_at: at(BEFORE),
        };
        assert_eq!(
            with_sweep_runs(&context, 7, "abc", Ok(&[run("abc", "success")])),
            HookAnswer::Nothing
        );
        for runs in [
            vec![run("old", "success")],
            vec![run("abc", "failure")],
            vec![],
        ] {
            assert!(matches!(
                with_sweep_runs(&context, 7, "abc", Ok(&runs)),
                HookAnswer::Block(reason) if reason.contains("no run-sweep.yml run succeeded")
            ));
        }
    }

    #[test]
    fn after_the_wrap_up_time_each_tool_call_says_how_long_is_left() {
        let context = context();
        let event = HookEvent::PostToolUse;
        let missing = OutcomeFileState::Missing;
        assert_eq!(
            first_step(&event, Ok(&context), &missing, at(BEFORE)),
            StopStep::Answer(HookAnswer::Nothing)
        );
        let StopStep::Answer(HookAnswer::Context(text)) =
            first_step(&event, Ok(&context), &missing, at("2026-12-01T13:15:00Z"))
        else {
            panic!("a warning");
        };
        assert!(text.contains("15 minutes are left"), "{text}");
        assert!(text.contains("klaud note --candidate a"), "{text}");
        let answer = HookAnswer::Context(text).stdout();
        let value: serde_json::Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(value["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    }

    #[test]
    fn every_hook_input_is_read_into_an_event() {
        assert_eq!(
            read_hook_input(r#"{"hook_event_name": "Stop"}"#),
            HookEvent::Stop
        );
        assert_eq!(
            read_hook_input(r#"{"hook_event_name": "PostToolUse"}"#),
            HookEvent::PostToolUse
        );
        assert!(matches!(read_hook_input("[]"), HookEvent::Unreadable(_)));
        assert!(matches!(read_hook_input(""), HookEvent::Unreadable(_)));
        assert!(matches!(
            read_hook_input(r#"{"hook_event_name": "SessionStart"}"#),
            HookEvent::Other(_)
        ));
    }
}
