//! GitHub Actions: workflows, workflow-run listings with GitHub's filters and its 1000-result cap
//! (filtered listings reach at most 1000 runs through pagination while `total_count` stays true),
//! single runs, jobs, a job's log (a redirect to the blob server, `blobs.rs`), cancelling, and
//! `workflow_dispatch`.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::Uri;
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::clock::{DAY, Timestamp};
use super::errors::{
    ApiError, ApiResult, docs, empty_response, json_response, paged_response, parse_body,
};
use super::pagination::{Page, QueryParams, link_header};
use super::render;
use super::routes_pulls::{Params, number_param};
use super::server::{RequestContext, Shared};
use super::state::{Dispatch, RepoState, WorkflowRun};

/// Filtered run listings reach at most this many results.
pub const FILTERED_RUNS_CAP: usize = 1000;

/// The parameters that make a run listing a capped "search".
const CAPPED_FILTERS: [&str; 7] = [
    "actor",
    "branch",
    "check_suite_id",
    "created",
    "event",
    "head_sha",
    "status",
];

const RUN_STATUSES: [&str; 6] = [
    "queued",
    "in_progress",
    "completed",
    "waiting",
    "requested",
    "pending",
];

pub fn routes() -> Router<Shared> {
    Router::new()
        .route(
            "/repos/{owner}/{repo}/actions/workflows",
            get(list_workflows),
        )
        .route(
            "/repos/{owner}/{repo}/actions/workflows/{workflow}",
            get(get_workflow),
        )
        .route(
            "/repos/{owner}/{repo}/actions/workflows/{workflow}/runs",
            get(list_workflow_runs),
        )
        .route(
            "/repos/{owner}/{repo}/actions/workflows/{workflow}/dispatches",
            post(dispatch_workflow),
        )
        .route("/repos/{owner}/{repo}/actions/runs", get(list_all_runs))
        .route("/repos/{owner}/{repo}/actions/runs/{id}", get(get_run))
        .route(
            "/repos/{owner}/{repo}/actions/runs/{id}/jobs",
            get(list_jobs),
        )
        .route(
            "/repos/{owner}/{repo}/actions/runs/{id}/cancel",
            post(cancel_run),
        )
        .route(
            "/repos/{owner}/{repo}/actions/jobs/{id}/logs",
            get(job_logs),
        )
}

/// `302 Found` to the log's short-lived URL on the blob server, as GitHub answers; 404 for a
/// job that does not exist or keeps no log.
async fn job_logs(State(shared): State<Shared>, Path(params): Params) -> ApiResult {
    let job_id = number_param(&params, "id")?;
    let known = {
        let state = shared.repo();
        state.job_logs.contains_key(&job_id)
            && state.jobs.values().flatten().any(|job| job.id == job_id)
    };
    let location = known
        .then(|| super::blobs::grant(&shared, job_id))
        .flatten()
        .ok_or_else(|| ApiError::not_found(docs::JOB_LOGS))?;
    let mut response = empty_response(302);
    let location = axum::http::HeaderValue::from_str(&location)
        .map_err(|_| ApiError::not_found(docs::JOB_LOGS))?;
    response
        .headers_mut()
        .insert(axum::http::header::LOCATION, location);
    Ok(response)
}

async fn list_workflows(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    uri: Uri,
) -> ApiResult {
    let state = shared.repo();
    let items: Vec<Value> = state
        .workflows
        .values()
        .map(|workflow| render::workflow(&state, workflow, &context.api))
        .collect();
    Ok(counted_page(
        &context,
        &uri,
        "workflows",
        &items,
        items.len(),
    ))
}

async fn get_workflow(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
) -> ApiResult {
    let state = shared.repo();
    let key = params.get("workflow").cloned().unwrap_or_default();
    let workflow = state
        .workflow_by_key(&key)
        .ok_or_else(|| ApiError::not_found(docs::RUNS))?;
    Ok(json_response(
        200,
        &render::workflow(&state, workflow, &context.api),
    ))
}

/// `{"total_count": N, "<key>": [page]}` with a `Link` header over the first `reachable` items.
fn counted_page(
    context: &RequestContext,
    uri: &Uri,
    key: &str,
    items: &[Value],
    reachable: usize,
) -> axum::response::Response {
    let query = QueryParams::parse(uri.query());
    let page = Page::from_query(&query);
    let body = json!({
        "total_count": items.len(),
        key: page.slice(items, reachable),
    });
    paged_response(
        &body,
        link_header(
            context,
            uri.path(),
            &query,
            page,
            reachable.min(items.len()),
        ),
    )
}

/// An inclusive time window of the `created` filter.
#[derive(Clone, Copy, Debug)]
struct CreatedWindow {
    from: i64,
    until: i64,
}

fn day_start(text: &str) -> Option<i64> {
    Timestamp::parse(text).map(|time| time.0)
}

/// The last second a bound covers: the whole day for a bare date, the instant otherwise.
fn day_end(text: &str) -> Option<i64> {
    let start = Timestamp::parse(text)?.0;
    Some(if Timestamp::is_bare_date(text) {
        start + DAY - 1
    } else {
        start
    })
}

/// Parses `2024-01-01`, `>=…`, `>…`, `<=…`, `<…`, `A..B` (either side may be `*`).
fn parse_created(filter: &str) -> Option<CreatedWindow> {
    let filter = filter.trim();
    if let Some((from, until)) = filter.split_once("..") {
        let from = if from == "*" {
            i64::MIN
        } else {
            day_start(from)?
        };
        let until = if until == "*" {
            i64::MAX
        } else {
            day_end(until)?
        };
        return Some(CreatedWindow { from, until });
    }
    if let Some(rest) = filter.strip_prefix(">=") {
        return Some(CreatedWindow {
            from: day_start(rest)?,
            until: i64::MAX,
        });
    }
    if let Some(rest) = filter.strip_prefix("<=") {
        return Some(CreatedWindow {
            from: i64::MIN,
            until: day_end(rest)?,
        });
    }
    if let Some(rest) = filter.strip_prefix('>') {
        return Some(CreatedWindow {
            from: day_end(rest)? + 1,
            until: i64::MAX,
        });
    }
    if let Some(rest) = filter.strip_prefix('<') {
        return Some(CreatedWindow {
            from: i64::MIN,
            until: day_start(rest)? - 1,
        });
    }
    Some(CreatedWindow {
        from: day_start(filter)?,
        until: day_end(filter)?,
    })
}

/// Runs matching the listing's filters, newest first, and whether the listing is capped.
fn filtered_runs<'a>(
    state: &'a RepoState,
    query: &QueryParams,
    workflow_id: Option<u64>,
) -> Result<(Vec<&'a WorkflowRun>, bool), ApiError> {
    let created = match query.filter("created") {
        Some(filter) => Some(parse_created(filter).ok_or_else(|| {
            ApiError::validation_failed(
                json!({"resource": "WorkflowRun", "field": "created", "code": "invalid"}),
                docs::RUNS,
            )
        })?),
        None => None,
    };
    let actor = query.filter("actor");
    let branch = query.filter("branch");
    let event = query.filter("event");
    let status = query.filter("status");
    let head_sha = query.filter("head_sha");
    let check_suite = query
        .filter("check_suite_id")
        .and_then(|id| id.parse::<u64>().ok());
    let mut runs: Vec<&WorkflowRun> = state
        .runs
        .values()
        .filter(|run| workflow_id.is_none_or(|id| run.workflow_id == id))
        .filter(|run| actor.is_none_or(|actor| run.actor.eq_ignore_ascii_case(actor)))
        .filter(|run| branch.is_none_or(|branch| run.head_branch.as_deref() == Some(branch)))
        .filter(|run| event.is_none_or(|event| run.event == event))
        .filter(|run| head_sha.is_none_or(|sha| run.head_sha == sha))
        .filter(|run| check_suite.is_none_or(|id| run.check_suite_id == id))
        .filter(|run| {
            status.is_none_or(|status| {
                if RUN_STATUSES.contains(&status) {
                    run.status == status
                } else {
                    run.conclusion.as_deref() == Some(status)
                }
            })
        })
        .filter(|run| {
            created.is_none_or(|window| {
                run.created_at.0 >= window.from && run.created_at.0 <= window.until
            })
        })
        .collect();
    runs.sort_by_key(|run| std::cmp::Reverse((run.created_at, run.id)));
    let capped = CAPPED_FILTERS
        .iter()
        .any(|name| query.filter(name).is_some());
    Ok((runs, capped))
}

fn runs_answer(
    state: &mut RepoState,
    context: &RequestContext,
    uri: &Uri,
    workflow_id: Option<u64>,
) -> ApiResult {
    let query = QueryParams::parse(uri.query());
    let unlisted = take_one_listing_of_lag(state);
    let state = &*state;
    let (mut runs, capped) = filtered_runs(state, &query, workflow_id)?;
    runs.retain(|run| !unlisted.contains(&run.id));
    let reachable = if capped {
        runs.len().min(FILTERED_RUNS_CAP)
    } else {
        runs.len()
    };
    // Only the requested page is rendered; the rest stays plain data.
    let page = Page::from_query(&query);
    let window = page.slice(&runs, reachable);
    let rendered: Vec<Value> = window
        .iter()
        .map(|run| render::run(state, run, &context.api))
        .collect();
    let body = json!({ "total_count": runs.len(), "workflow_runs": rendered });
    let link = link_header(context, uri.path(), &query, page, reachable);
    Ok(paged_response(&body, link))
}

/// The runs this listing leaves out (dispatched too recently to be listed), counting the listing
/// against each one's lag.
fn take_one_listing_of_lag(state: &mut RepoState) -> Vec<u64> {
    let unlisted: Vec<u64> = state.unlisted_runs.keys().copied().collect();
    for listings_left in state.unlisted_runs.values_mut() {
        *listings_left = listings_left.saturating_sub(1);
    }
    state
        .unlisted_runs
        .retain(|_, listings_left| *listings_left > 0);
    unlisted
}

async fn list_workflow_runs(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    uri: Uri,
) -> ApiResult {
    let mut state = shared.repo();
    let key = params.get("workflow").cloned().unwrap_or_default();
    let workflow_id = state
        .workflow_by_key(&key)
        .map(|workflow| workflow.id)
        .ok_or_else(|| ApiError::not_found(docs::RUNS))?;
    runs_answer(&mut state, &context, &uri, Some(workflow_id))
}

async fn list_all_runs(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    uri: Uri,
) -> ApiResult {
    let mut state = shared.repo();
    runs_answer(&mut state, &context, &uri, None)
}

async fn get_run(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
) -> ApiResult {
    let state = shared.repo();
    let run = state
        .runs
        .get(&number_param(&params, "id")?)
        .ok_or_else(|| ApiError::not_found(docs::RUNS))?;
    Ok(json_response(200, &render::run(&state, run, &context.api)))
}

async fn list_jobs(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    uri: Uri,
) -> ApiResult {
    let state = shared.repo();
    let run_id = number_param(&params, "id")?;
    if !state.runs.contains_key(&run_id) {
        return Err(ApiError::not_found(docs::JOBS));
    }
    let items: Vec<Value> = state
        .jobs_of_run(run_id)
        .iter()
        .map(|job| render::job(&state, job, &context.api))
        .collect();
    Ok(counted_page(&context, &uri, "jobs", &items, items.len()))
}

async fn cancel_run(State(shared): State<Shared>, Path(params): Params) -> ApiResult {
    let run_id = number_param(&params, "id")?;
    let mut state = shared.repo();
    let run = state
        .runs
        .get(&run_id)
        .ok_or_else(|| ApiError::not_found(docs::CANCEL_RUN))?;
    if run.status == "completed" {
        return Err(ApiError::conflict(
            "Cannot cancel a workflow run that is completed.",
            docs::CANCEL_RUN,
        ));
    }
    state.set_run_status(run_id, "completed", Some("cancelled"));
    Ok(json_response(202, &json!({})))
}

#[derive(Deserialize)]
struct DispatchInput {
    #[serde(rename = "ref")]
    reference: Option<String>,
    #[serde(default)]
    inputs: Option<serde_json::Map<String, Value>>,
}

async fn dispatch_workflow(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    body: Bytes,
) -> ApiResult {
    let input: DispatchInput = parse_body(&body, docs::DISPATCH)?;
    let reference = input
        .reference
        .ok_or_else(|| ApiError::missing_field("ref", docs::DISPATCH))?;
    let mut state = shared.repo();
    let key = params.get("workflow").cloned().unwrap_or_default();
    let workflow = state
        .workflow_by_key(&key)
        .cloned()
        .ok_or_else(|| ApiError::not_found(docs::DISPATCH))?;
    let branch = reference
        .strip_prefix("refs/heads/")
        .unwrap_or(&reference)
        .to_string();
    let head_sha = state.resolve_commitish(&reference).ok_or_else(|| {
        ApiError::unprocessable(format!("No ref found for: {reference}"), docs::DISPATCH)
    })?;
    let inputs = input.inputs.unwrap_or_default();
    if let Some(declared) = &workflow.inputs {
        let unexpected: Vec<&String> = inputs
            .keys()
            .filter(|key| !declared.contains(key))
            .collect();
        if !unexpected.is_empty() {
            return Err(ApiError::unprocessable(
                format!("Unexpected inputs provided: {}", json!(unexpected)),
                docs::DISPATCH,
            ));
        }
    }
    let now = state.now();
    let run_id = state.add_run(super::builder::RunSpec {
        workflow: workflow.path.clone(),
        head_branch: Some(branch),
        head_sha: Some(head_sha),
        event: "workflow_dispatch".to_string(),
        status: "queued".to_string(),
        conclusion: None,
        actor: Some(context.login.clone()),
        created_at: Some(now),
        ..Default::default()
    });
    let inputs = Value::Object(inputs);
    if let Some(run) = state.runs.get_mut(&run_id) {
        run.inputs = Some(inputs.clone());
    }
    if state.dispatched_run_listing_lag > 0 {
        let lag = state.dispatched_run_listing_lag;
        state.unlisted_runs.insert(run_id, lag);
    }
    state.dispatches.push(Dispatch {
        workflow_id: workflow.id,
        workflow_path: workflow.path,
        git_ref: reference,
        inputs,
        actor: context.login,
        run_id,
        at: now,
    });
    Ok(empty_response(204))
}
