//! A small GraphQL executor over the fake's state, held to GitHub's schema.
//!
//! - [`schema`]: the schema served, the subset of GitHub's in `tests/graphql/` (without
//!   `updateRefs` while [`RepoState::update_refs_available`](super::state::RepoState) is off).
//! - [`validate`]: the whole document is checked before anything runs, as GitHub does: unknown
//!   fields, arguments and types, literals that do not fit, variables undeclared, unused or of
//!   the wrong type, fragments that cannot apply, leaves with selections. Any problem answers
//!   `{"errors": [...]}` without `data`, with GitHub's messages and `extensions.code`s.
//! - [`values`]: literals, JSON variables (with defaults) and arguments.
//! - [`execute`]: variables coerced, the operation chosen, fields collected through aliases,
//!   named and inline fragments and `@skip`/`@include`, values completed against their types
//!   (`__typename`, lists, non-null propagation), field errors with `type`, `path` and
//!   `locations`.
//! - [`resolve`]: the fake's objects and their fields (repository, pull requests, issues and
//!   the revisions of their bodies, commits, actors, labels, timeline items), with
//!   [`resolve_issues`] for the issue connections; [`mutations`]: the draft/ready toggles and
//!   `updateRefs`.

pub mod checks;
pub mod execute;
pub mod mutations;
pub mod resolve;
pub mod resolve_issues;
pub mod schema;
pub mod validate;
pub mod values;

use graphql_parser::Pos;
use graphql_parser::query::{
    Definition, Directive, OperationDefinition, Selection, SelectionSet, VariableDefinition,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

pub type Document = graphql_parser::query::Document<'static, String>;

/// Parses a query document.
pub fn parse(query: &str) -> Result<Document, String> {
    graphql_parser::parse_query::<String>(query)
        .map(|document| document.into_static())
        .map_err(|error| error.to_string())
}

/// The parts of an operation, whichever way it is written.
pub struct OperationParts<'d> {
    /// `query`, `mutation` or `subscription`.
    pub kind: &'static str,
    pub name: Option<&'d str>,
    pub variables: &'d [VariableDefinition<'static, String>],
    pub directives: &'d [Directive<'static, String>],
    pub selection_set: &'d SelectionSet<'static, String>,
    pub position: Pos,
}

impl<'d> OperationParts<'d> {
    pub fn of(operation: &'d OperationDefinition<'static, String>) -> Self {
        match operation {
            OperationDefinition::SelectionSet(set) => OperationParts {
                kind: "query",
                name: None,
                variables: &[],
                directives: &[],
                selection_set: set,
                position: set.span.0,
            },
            OperationDefinition::Query(query) => OperationParts {
                kind: "query",
                name: query.name.as_deref(),
                variables: &query.variable_definitions,
                directives: &query.directives,
                selection_set: &query.selection_set,
                position: query.position,
            },
            OperationDefinition::Mutation(mutation) => OperationParts {
                kind: "mutation",
                name: mutation.name.as_deref(),
                variables: &mutation.variable_definitions,
                directives: &mutation.directives,
                selection_set: &mutation.selection_set,
                position: mutation.position,
            },
            OperationDefinition::Subscription(subscription) => OperationParts {
                kind: "subscription",
                name: subscription.name.as_deref(),
                variables: &subscription.variable_definitions,
                directives: &subscription.directives,
                selection_set: &subscription.selection_set,
                position: subscription.position,
            },
        }
    }
}

/// One entry of a GraphQL answer's `errors`.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphqlError {
    /// GitHub's `type` of an execution error (`NOT_FOUND`, `UNPROCESSABLE`, …).
    pub kind: Option<String>,
    pub path: Option<Vec<Value>>,
    /// Validation errors carry `extensions.code` (`undefinedField`, …).
    pub extensions: Option<Value>,
    pub locations: Vec<Pos>,
    pub message: String,
}

impl GraphqlError {
    pub fn new(message: impl Into<String>) -> Self {
        GraphqlError {
            kind: None,
            path: None,
            extensions: None,
            locations: Vec::new(),
            message: message.into(),
        }
    }

    pub fn kind(mut self, kind: &str) -> Self {
        self.kind = Some(kind.to_string());
        self
    }

    pub fn at(mut self, position: Pos) -> Self {
        self.locations.push(position);
        self
    }

    pub fn path(mut self, path: Vec<Value>) -> Self {
        self.path = Some(path);
        self
    }

    pub fn extensions(mut self, extensions: Value) -> Self {
        self.extensions = Some(extensions);
        self
    }

    /// `extensions.code`.
    pub fn code(&self) -> Option<&str> {
        self.extensions.as_ref()?.get("code")?.as_str()
    }

    /// The error as GitHub writes it (keys in GitHub's order).
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        if let Some(kind) = &self.kind {
            object.insert("type".into(), json!(kind));
        }
        if let Some(path) = &self.path {
            object.insert("path".into(), Value::Array(path.clone()));
        }
        if let Some(extensions) = &self.extensions {
            object.insert("extensions".into(), extensions.clone());
        }
        if !self.locations.is_empty() {
            let locations: Vec<Value> = self
                .locations
                .iter()
                .map(|position| json!({"line": position.line, "column": position.column}))
                .collect();
            object.insert("locations".into(), Value::Array(locations));
        }
        object.insert("message".into(), json!(self.message));
        Value::Object(object)
    }
}

/// What a GraphQL request asks, read from its body: whether the operation is a mutation, and
/// the names (not aliases) of its top-level fields.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationSummary {
    pub mutation: bool,
    pub fields: Vec<String>,
}

impl OperationSummary {
    /// The summary of a `POST /graphql` body; `None` when it holds no readable operation.
    pub fn of_body(body: &str) -> Option<Self> {
        let request: Value = serde_json::from_str(body).ok()?;
        let query = request.get("query")?.as_str()?;
        let name = request.get("operationName").and_then(Value::as_str);
        let document = parse(query).ok()?;
        let operation = execute::choose_operation(&document, name).ok()?;
        let (mutation, selection_set) = match operation {
            OperationDefinition::Mutation(mutation) => (true, &mutation.selection_set),
            OperationDefinition::Query(query) => (false, &query.selection_set),
            OperationDefinition::SelectionSet(set) => (false, set),
            OperationDefinition::Subscription(subscription) => (false, &subscription.selection_set),
        };
        let mut fields = Vec::new();
        collect_root_fields(&document, selection_set, &mut fields, 0);
        Some(OperationSummary { mutation, fields })
    }
}

fn collect_root_fields(
    document: &Document,
    set: &graphql_parser::query::SelectionSet<'static, String>,
    fields: &mut Vec<String>,
    depth: usize,
) {
    if depth > 8 {
        return;
    }
    for selection in &set.items {
        match selection {
            Selection::Field(field) => {
                if !fields.contains(&field.name) {
                    fields.push(field.name.clone());
                }
            }
            Selection::InlineFragment(fragment) => {
                collect_root_fields(document, &fragment.selection_set, fields, depth + 1)
            }
            Selection::FragmentSpread(spread) => {
                let fragment =
                    document
                        .definitions
                        .iter()
                        .find_map(|definition| match definition {
                            Definition::Fragment(fragment)
                                if fragment.name == spread.fragment_name =>
                            {
                                Some(fragment)
                            }
                            _ => None,
                        });
                if let Some(fragment) = fragment {
                    collect_root_fields(document, &fragment.selection_set, fields, depth + 1);
                }
            }
        }
    }
}
