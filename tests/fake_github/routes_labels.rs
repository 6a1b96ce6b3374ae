//! The repository's labels: listing, creating (`201` with `Location`), reading, updating
//! (renaming follows on every issue and pull request) and deleting (taken off every issue and
//! pull request). Names are found regardless of case, as GitHub finds them; a color is six hex
//! digits kept as given, else `422 Validation Failed` with the field named.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::Uri;
use axum::routing::get;
use serde::Deserialize;
use serde_json::{Value, json};

use super::builder::LABEL_COLOR;
use super::errors::{
    ApiError, ApiResult, created_response, docs, empty_response, json_response, parse_body,
};
use super::pagination::page_of;
use super::render;
use super::routes_pulls::Params;
use super::server::{RequestContext, Shared};
use super::state::RepoState;

pub fn routes() -> Router<Shared> {
    Router::new()
        .route(
            "/repos/{owner}/{repo}/labels",
            get(list_labels).post(create_label),
        )
        .route(
            "/repos/{owner}/{repo}/labels/{name}",
            get(get_label).patch(update_label).delete(delete_label),
        )
}

async fn list_labels(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    uri: Uri,
) -> ApiResult {
    let state = shared.repo();
    let items: Vec<Value> = state
        .labels
        .values()
        .map(|label| render::label(label, &context.api, &state))
        .collect();
    Ok(page_of(&context, &uri, &items))
}

#[derive(Deserialize)]
struct LabelInput {
    name: Option<String>,
    new_name: Option<String>,
    color: Option<String>,
    description: Option<String>,
}

/// `422 Validation Failed` naming the label's field and what is wrong with it.
fn invalid_label(field: &str, code: &str, doc: &'static str) -> ApiError {
    ApiError::validation_failed(
        json!({"resource": "Label", "code": code, "field": field}),
        doc,
    )
}

/// A color as GitHub takes it: six hex digits, a leading `#` dropped.
fn checked_color(color: &str, doc: &'static str) -> Result<String, ApiError> {
    let color = color.strip_prefix('#').unwrap_or(color);
    if color.len() == 6 && color.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(color.to_string())
    } else {
        Err(invalid_label("color", "invalid", doc))
    }
}

/// The stored name of the label called `name` in any case.
fn stored_name(state: &RepoState, name: &str) -> Option<String> {
    state
        .labels
        .keys()
        .find(|stored| stored.eq_ignore_ascii_case(name))
        .cloned()
}

fn label_param(params: &std::collections::HashMap<String, String>) -> String {
    params.get("name").cloned().unwrap_or_default()
}

async fn create_label(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    body: Bytes,
) -> ApiResult {
    let input: LabelInput = parse_body(&body, docs::CREATE_LABEL)?;
    let name = input
        .name
        .filter(|name| !name.is_empty())
        .ok_or_else(|| ApiError::missing_field("name", docs::CREATE_LABEL))?;
    let color = match input.color.as_deref() {
        Some(color) => checked_color(color, docs::CREATE_LABEL)?,
        None => LABEL_COLOR.to_string(),
    };
    let mut state = shared.repo();
    if stored_name(&state, &name).is_some() {
        return Err(invalid_label("name", "already_exists", docs::CREATE_LABEL));
    }
    state.add_label(&name, &color, input.description.as_deref());
    let answer = render::label(&state.labels[&name], &context.api, &state);
    let location = render::label_url(&state, &name, &context.api);
    Ok(created_response(&answer, &location))
}

async fn get_label(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
) -> ApiResult {
    let state = shared.repo();
    let name = stored_name(&state, &label_param(&params))
        .ok_or_else(|| ApiError::not_found(docs::GET_LABEL))?;
    Ok(json_response(
        200,
        &render::label(&state.labels[&name], &context.api, &state),
    ))
}

async fn update_label(
    State(shared): State<Shared>,
    Extension(context): Extension<RequestContext>,
    Path(params): Params,
    body: Bytes,
) -> ApiResult {
    let input: LabelInput = parse_body(&body, docs::UPDATE_LABEL)?;
    let color = match input.color.as_deref() {
        Some(color) => Some(checked_color(color, docs::UPDATE_LABEL)?),
        None => None,
    };
    let mut state = shared.repo();
    let name = stored_name(&state, &label_param(&params))
        .ok_or_else(|| ApiError::not_found(docs::UPDATE_LABEL))?;
    let new_name = input.new_name.filter(|new_name| !new_name.is_empty());
    if let Some(new_name) = &new_name
        && stored_name(&state, new_name).is_some_and(|taken| taken != name)
    {
        return Err(invalid_label("name", "already_exists", docs::UPDATE_LABEL));
    }
    let mut label = state.labels.remove(&name).expect("found above");
    if let Some(color) = color {
        label.color = color;
    }
    if input.description.is_some() {
        label.description = input.description;
    }
    if let Some(new_name) = new_name {
        label.name = new_name;
        state.rename_label_on_issues(&name, &label.name);
    }
    let renamed = label.name.clone();
    state.labels.insert(renamed.clone(), label);
    Ok(json_response(
        200,
        &render::label(&state.labels[&renamed], &context.api, &state),
    ))
}

async fn delete_label(State(shared): State<Shared>, Path(params): Params) -> ApiResult {
    let mut state = shared.repo();
    let name = stored_name(&state, &label_param(&params))
        .ok_or_else(|| ApiError::not_found(docs::DELETE_LABEL))?;
    state.labels.remove(&name);
    state.remove_label_from_issues(&name);
    Ok(empty_response(204))
}
