//! A pull request's `statusCheckRollup`, resolved from the fake's runs, jobs and commit statuses
//! as GitHub builds it: every job of a workflow run on the head commit is a `CheckRun` (its
//! `detailsUrl` the job's page, its status and conclusion the job's in capitals, its `checkSuite`
//! the run's, whose `workflowRun` names the workflow file and links the run; neither gives its
//! `databaseId`, a 32-bit `Int` that GitHub's run and job ids outgrew), then the latest `StatusContext` of
//! each context on the commit. A head with neither has no rollup (`null`). `contexts` pages by
//! `first`/`last` (at most 100) and the `after` cursor of its `pageInfo`.

use serde_json::{Map, Value};

use super::super::render::HTML_BASE;
use super::super::state::RepoState;
use super::resolve::{FieldError, FieldResult, Obj, PageInfo, Resolved, page};

/// The checks on commit `sha`, in rollup order: check runs by job id, then statuses by context.
fn checks_on(state: &RepoState, sha: &str) -> Vec<Obj> {
    let mut runs: Vec<Obj> = state
        .runs
        .values()
        .filter(|run| run.head_sha == sha)
        .flat_map(|run| {
            state.jobs_of_run(run.id).iter().map(|job| Obj::CheckRun {
                run_id: run.id,
                job_id: job.id,
            })
        })
        .collect();
    runs.sort_by_key(|check| match check {
        Obj::CheckRun { job_id, .. } => *job_id,
        _ => 0,
    });
    let statuses = state
        .latest_statuses(sha)
        .into_iter()
        .map(|status| Obj::StatusContext(status.id));
    runs.extend(statuses);
    runs
}

/// `PullRequest.statusCheckRollup` of a head at `sha`.
pub fn rollup(state: &RepoState, sha: &str) -> Resolved {
    match checks_on(state, sha).is_empty() {
        true => Resolved::Null,
        false => Resolved::Object(Obj::StatusCheckRollup(sha.to_string())),
    }
}

/// A cursor of the `contexts` connection: the position of a check.
fn check_cursor(position: usize) -> String {
    format!("Y2hlY2s6{position:08}")
}

fn check_position(cursor: &str) -> Option<usize> {
    cursor.strip_prefix("Y2hlY2s6")?.parse().ok()
}

fn contexts(state: &RepoState, sha: &str, arguments: &Map<String, Value>) -> FieldResult {
    let checks = checks_on(state, sha);
    let total = checks.len();
    let start = match arguments.get("after").and_then(Value::as_str) {
        None => 0,
        Some(cursor) => check_position(cursor)
            .filter(|position| *position < total)
            .map(|position| position + 1)
            .ok_or_else(|| {
                FieldError::new(
                    "INVALID_CURSOR_ARGUMENTS",
                    format!("`{cursor}` does not appear to be a valid cursor."),
                )
            })?,
    };
    let mut arguments = arguments.clone();
    arguments.remove("after");
    let window: Vec<(usize, Obj)> = checks.into_iter().enumerate().skip(start).collect();
    let (window, _) = page(window, &arguments, "contexts")?;
    let page_info = PageInfo {
        start_cursor: window.first().map(|(position, _)| check_cursor(*position)),
        end_cursor: window.last().map(|(position, _)| check_cursor(*position)),
        has_next_page: window
            .last()
            .is_some_and(|(position, _)| position + 1 < total),
        has_previous_page: start > 0,
    };
    Ok(Resolved::Object(Obj::CheckConnection {
        checks: window.into_iter().map(|(_, check)| check).collect(),
        total,
        page_info,
    }))
}

fn capitals(word: &str) -> Resolved {
    Resolved::Leaf(Value::String(word.to_ascii_uppercase()))
}

fn optional_capitals(word: Option<&str>) -> Resolved {
    word.map(capitals).unwrap_or(Resolved::Null)
}

/// Resolves `field` of one of the rollup's objects.
pub fn field(
    state: &RepoState,
    object: &Obj,
    field: &str,
    arguments: &Map<String, Value>,
) -> FieldResult {
    let full_name = state.full_name();
    let resolved = match (object, field) {
        (Obj::StatusCheckRollup(sha), "contexts") => return contexts(state, sha, arguments),
        (Obj::CheckConnection { checks, .. }, "nodes") => {
            Resolved::List(checks.iter().cloned().map(Resolved::Object).collect())
        }
        (Obj::CheckConnection { total, .. }, "totalCount") => Resolved::Leaf((*total).into()),
        (Obj::CheckConnection { page_info, .. }, "pageInfo") => {
            Resolved::Object(Obj::PageInfo(page_info.clone()))
        }
        (Obj::CheckRun { run_id, job_id }, _) => {
            let Some(job) = state
                .jobs_of_run(*run_id)
                .iter()
                .find(|job| job.id == *job_id)
            else {
                return Ok(Resolved::Null);
            };
            match field {
                "name" => Resolved::Leaf(Value::String(job.name.clone())),
                "status" => capitals(&job.status),
                "conclusion" => optional_capitals(job.conclusion.as_deref()),
                "detailsUrl" => Resolved::Leaf(Value::String(format!(
                    "{HTML_BASE}/{full_name}/actions/runs/{run_id}/job/{job_id}"
                ))),
                "checkSuite" => Resolved::Object(Obj::CheckSuite(*run_id)),
                _ => return unresolved(object, field),
            }
        }
        (Obj::StatusContext(id), _) => {
            let Some(status) = state.statuses.iter().find(|status| status.id == *id) else {
                return Ok(Resolved::Null);
            };
            match field {
                "context" => Resolved::Leaf(Value::String(status.context.clone())),
                "state" => capitals(&status.state),
                "targetUrl" => status
                    .target_url
                    .clone()
                    .map(|url| Resolved::Leaf(Value::String(url)))
                    .unwrap_or(Resolved::Null),
                _ => return unresolved(object, field),
            }
        }
        (Obj::CheckSuite(run_id) | Obj::WorkflowRun(run_id) | Obj::WorkflowRunFile(run_id), _) => {
            let Some(run) = state.runs.get(run_id) else {
                return Ok(Resolved::Null);
            };
            match (object, field) {
                (Obj::CheckSuite(_), "status") => capitals(&run.status),
                (Obj::CheckSuite(_), "conclusion") => optional_capitals(run.conclusion.as_deref()),
                (Obj::CheckSuite(_), "workflowRun") => Resolved::Object(Obj::WorkflowRun(run.id)),
                (Obj::WorkflowRun(_), "url") => Resolved::Leaf(Value::String(format!(
                    "{HTML_BASE}/{full_name}/actions/runs/{}",
                    run.id
                ))),
                (Obj::WorkflowRun(_), "file") => Resolved::Object(Obj::WorkflowRunFile(run.id)),
                (Obj::WorkflowRunFile(_), "path") => Resolved::Leaf(Value::String(
                    state
                        .workflows
                        .get(&run.workflow_id)
                        .map(|workflow| workflow.path.clone())
                        .unwrap_or_default(),
                )),
                _ => return unresolved(object, field),
            }
        }
        _ => return unresolved(object, field),
    };
    Ok(resolved)
}

fn unresolved(object: &Obj, field: &str) -> FieldResult {
    Err(FieldError {
        kind: None,
        message: format!(
            "the fake GitHub does not resolve {}.{field}",
            object.type_name()
        ),
    })
}
