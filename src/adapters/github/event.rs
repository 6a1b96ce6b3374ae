//! The `workflow_run` event payload (the file at `GITHUB_EVENT_PATH`) as `wake` reads it: only
//! the fields the decision needs, turned into [`EndedRun`].
//!
//! The payload's strings (branch names above all) are data chosen by whoever pushed a branch:
//! they are parsed, never executed, and an unreadable payload is reported by position and
//! category only, so none of its text reaches a log line through an error message.

use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::models::{Account, RepositoryName};
use crate::core::github_state::{RunConclusion, RunStatus, WorkflowRunAction};
use crate::core::wake::EndedRun;

#[derive(Debug, Deserialize)]
struct WorkflowRunEvent {
    action: Option<WorkflowRunAction>,
    workflow_run: Option<EventRun>,
    workflow: Option<EventWorkflow>,
    repository: Option<RepositoryName>,
}

#[derive(Debug, Deserialize)]
struct EventRun {
    id: u64,
    path: Option<String>,
    head_branch: Option<String>,
    head_repository: Option<RepositoryName>,
    repository: Option<RepositoryName>,
    actor: Option<Account>,
    triggering_actor: Option<Account>,
    status: Option<RunStatus>,
    conclusion: Option<RunConclusion>,
    updated_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Deserialize)]
struct EventWorkflow {
    path: Option<String>,
}

/// Reads a `workflow_run` event payload. The error names what is wrong, never payload text.
pub fn parse_workflow_run_event(text: &str) -> Result<EndedRun, String> {
    let event: WorkflowRunEvent = serde_json::from_str(text).map_err(|error| {
        format!(
            "the event payload is not a readable workflow_run event ({:?} error at line {}, column {})",
            error.classify(),
            error.line(),
            error.column()
        )
    })?;
    let run = event.workflow_run.ok_or_else(|| {
        "the event payload has no workflow_run: wake runs on a workflow_run event".to_string()
    })?;
    let workflow_path = run
        .path
        .or_else(|| event.workflow.and_then(|workflow| workflow.path))
        .unwrap_or_default();
    Ok(EndedRun {
        id: run.id,
        // Without an action, the run's status stands in for it (`completed` is spelled alike).
        action: event
            .action
            .or_else(|| {
                run.status
                    .map(|status| WorkflowRunAction::from(status.as_str()))
            })
            .unwrap_or_default(),
        workflow_path,
        repository: run
            .repository
            .or(event.repository)
            .map(|repository| repository.full_name),
        head_repository: run.head_repository.map(|repository| repository.full_name),
        head_branch: run.head_branch,
        actor: run.actor.map(|account| account.login),
        triggering_actor: run.triggering_actor.map(|account| account.login),
        conclusion: run.conclusion,
        ended_at: run.updated_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completed_workflow_run_event_reads_into_an_ended_run() {
        let run = parse_workflow_run_event(
            r#"{"action": "completed",
                "workflow_run": {"id": 42, "path": ".github/workflows/e2e-tests.yml",
                  "head_branch": "klaud/auto-a", "status": "completed", "conclusion": "failure",
                  "actor": {"login": "Klaud-Cold"}, "triggering_actor": {"login": "Klaud-Cold"},
                  "updated_at": "2026-11-30T10:00:00Z",
                  "head_repository": {"full_name": "acme/bench"},
                  "repository": {"full_name": "acme/bench"}},
                "workflow": {"path": ".github/workflows/e2e-tests.yml"},
                "repository": {"full_name": "acme/bench", "default_branch": "main"}}"#,
        )
        .unwrap();
        assert_eq!(run.id, 42);
        assert_eq!(run.action, WorkflowRunAction::Completed);
        assert_eq!(run.head_branch.as_deref(), Some("klaud/auto-a"));
        assert_eq!(run.head_repository.as_deref(), Some("acme/bench"));
        assert_eq!(run.actor.as_deref(), Some("Klaud-Cold"));
        assert!(run.ended_at.is_some());
    }

    #[test]
    fn missing_optional_fields_fall_back_to_the_event() {
        let run = parse_workflow_run_event(
            r#"{"action": "completed", "workflow_run": {"id": 1, "head_repository": null,
                "actor": null}, "workflow": {"path": ".github/workflows/run-sweep.yml"},
                "repository": {"full_name": "acme/bench"}}"#,
        )
        .unwrap();
        assert_eq!(run.workflow_path, ".github/workflows/run-sweep.yml");
        assert_eq!(run.repository.as_deref(), Some("acme/bench"));
        assert_eq!(run.head_repository, None);
    }

    #[test]
    fn words_github_adds_later_still_read_and_the_run_status_stands_in_for_a_missing_action() {
        let run = parse_workflow_run_event(
            r#"{"action": "rerequested", "workflow_run": {"id": 1, "status": "expected",
                "conclusion": "superseded"}}"#,
        )
        .unwrap();
        assert_eq!(run.action, WorkflowRunAction::Other("rerequested".into()));
        assert_eq!(
            run.conclusion,
            Some(RunConclusion::Other("superseded".into()))
        );
        let without_action = parse_workflow_run_event(
            r#"{"workflow_run": {"id": 1, "status": "completed", "conclusion": "success"}}"#,
        )
        .unwrap();
        assert_eq!(without_action.action, WorkflowRunAction::Completed);
        let neither = parse_workflow_run_event(r#"{"workflow_run": {"id": 1}}"#).unwrap();
        assert_ne!(neither.action, WorkflowRunAction::Completed);
    }

    #[test]
    fn an_unreadable_payload_is_reported_without_its_text() {
        let error =
            parse_workflow_run_event(r#"{"workflow_run": {"id": "$(touch /tmp/x)"}}"#).unwrap_err();
        assert!(!error.contains("touch"), "{error}");
        let other_event = parse_workflow_run_event(r#"{"ref": "refs/heads/main"}"#).unwrap_err();
        assert!(other_event.contains("no workflow_run"));
    }
}
