//! The fake's issue connections, as GitHub answers them: `Repository.issues` (only issues, never
//! pull requests, unlike REST's listing; filtered by `states` and by `labels`, any of them without
//! case; oldest first unless `orderBy` says otherwise) and an issue's `timelineItems` (its
//! `LabeledEvent`s and `UnlabeledEvent`s with their actors and, once closed, a `ClosedEvent`,
//! oldest first), both Relay connections with cursors.

use serde_json::{Map, Value};

use super::super::clock::Timestamp;
use super::super::state::{PullState, RepoState};
use super::resolve::{
    FieldError, FieldResult, Obj, PageInfo, Resolved, edit_cursor, edit_position, order,
    ordered_numbers, page, strings, timeline_items,
};

/// A Relay page of `items` (in the connection's order): `after`/`before` cut at a cursor of
/// this connection, then `first` keeps the head and `last` the tail; an unknown cursor is
/// `INVALID_CURSOR_ARGUMENTS`.
fn relay_page<T>(
    items: Vec<T>,
    arguments: &Map<String, Value>,
    connection: &str,
) -> Result<(Vec<T>, usize, PageInfo), FieldError> {
    let total = items.len();
    let cursor = |name: &str| -> Result<Option<usize>, FieldError> {
        match arguments.get(name).and_then(Value::as_str) {
            None => Ok(None),
            Some(text) => edit_position(text)
                .filter(|position| *position < total)
                .map(Some)
                .ok_or_else(|| {
                    FieldError::new(
                        "INVALID_CURSOR_ARGUMENTS",
                        format!("`{text}` does not appear to be a valid cursor."),
                    )
                }),
        }
    };
    let start = cursor("after")?.map_or(0, |after| after + 1);
    let end = cursor("before")?.unwrap_or(total).max(start);
    let window: Vec<(usize, T)> = items
        .into_iter()
        .enumerate()
        .skip(start)
        .take(end - start)
        .collect();
    let mut bounds = arguments.clone();
    bounds.remove("after");
    bounds.remove("before");
    let cut = window.len();
    let (window, _) = page(window, &bounds, connection)?;
    let first = bounds
        .get("first")
        .and_then(Value::as_u64)
        .map(|n| n as usize);
    let last = bounds
        .get("last")
        .and_then(Value::as_u64)
        .map(|n| n as usize);
    let after_first = first.map_or(cut, |first| cut.min(first));
    let page_info = PageInfo {
        start_cursor: window.first().map(|(position, _)| edit_cursor(*position)),
        end_cursor: window.last().map(|(position, _)| edit_cursor(*position)),
        has_next_page: first.is_some_and(|first| cut > first) || end < total,
        has_previous_page: last.is_some_and(|last| after_first > last) || start > 0,
    };
    Ok((
        window.into_iter().map(|(_, item)| item).collect(),
        total,
        page_info,
    ))
}

/// `Repository.issues`: the issues that are not pull requests, filtered by `states` and by
/// `labels` (any of them, without case), oldest first unless `orderBy` says otherwise; a Relay
/// connection with cursors.
pub(super) fn issues(state: &RepoState, arguments: &Map<String, Value>) -> FieldResult {
    if arguments
        .get("filterBy")
        .is_some_and(|value| !value.is_null())
    {
        return Err(FieldError {
            kind: None,
            message: "the fake GitHub does not resolve Repository.issues(filterBy:)".into(),
        });
    }
    let states = strings(arguments, "states");
    let labels = strings(arguments, "labels");
    let issues: Vec<_> = state
        .issues
        .values()
        .filter(|issue| {
            states.as_ref().is_none_or(|states| {
                states
                    .iter()
                    .any(|wanted| wanted.eq_ignore_ascii_case(issue.state.as_str()))
            })
        })
        .filter(|issue| {
            labels.as_ref().is_none_or(|labels| {
                issue
                    .labels
                    .iter()
                    .any(|label| labels.iter().any(|l| l.eq_ignore_ascii_case(label)))
            })
        })
        .collect();
    let (field, descending) = order(arguments).unwrap_or(("CREATED_AT".into(), false));
    let entries = issues
        .iter()
        .map(|issue| (issue.number, issue.created_at, issue.updated_at))
        .collect();
    let numbers = ordered_numbers(state, entries, &field, descending);
    let (numbers, total, page_info) = relay_page(numbers, arguments, "issues")?;
    Ok(Resolved::Object(Obj::IssueConnection {
        numbers,
        total,
        page_info,
    }))
}

/// An issue's timeline: its label events and, once closed, a `ClosedEvent`, oldest first,
/// filtered by `itemTypes` and `since`, `skip` applied, then paged with cursors.
pub(super) fn issue_timeline(
    state: &RepoState,
    number: u64,
    arguments: &Map<String, Value>,
) -> FieldResult {
    let mut items: Vec<(Timestamp, &str, Obj)> = state
        .label_events
        .get(&number)
        .into_iter()
        .flatten()
        .map(|event| {
            let kind = if event.labeled {
                "LABELED_EVENT"
            } else {
                "UNLABELED_EVENT"
            };
            (event.at, kind, Obj::LabelEvent(event.clone()))
        })
        .collect();
    if let Some(issue) = state.issues.get(&number)
        && issue.state == PullState::Closed
        && let Some(at) = issue.closed_at
    {
        let actor = issue.closed_by.clone();
        items.push((at, "CLOSED_EVENT", Obj::ClosedEvent { actor, at }));
    }
    let items = timeline_items(items, arguments);
    let (items, total, page_info) = relay_page(items, arguments, "timelineItems")?;
    Ok(Resolved::Object(Obj::IssueTimelineConnection {
        items,
        total,
        page_info,
    }))
}
