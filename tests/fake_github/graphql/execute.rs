//! Running a GraphQL request: parse, validate the whole document, choose the operation, coerce
//! its variables, then execute it against the state. Answers are shaped as GitHub's: a request
//! rejected before it runs has only `errors`; one that ran has `data` and, when a field failed,
//! `errors` whose `path` names the failed field (its alias) and whose value is null there (or
//! further up, when the field may not be null).

use std::collections::BTreeSet;

use graphql_parser::query::{
    Definition, Field, FragmentDefinition, OperationDefinition, Selection, SelectionSet,
    TypeCondition, VariableDefinition,
};
use serde_json::{Map, Value, json};

use super::super::state::RepoState;
use super::resolve::{self, FieldError, Obj, Resolved};
use super::schema::{Schema, TypeKind, TypeRef};
use super::values::{arguments_json, coerce_json, literal_to_json};
use super::{Document, GraphqlError, OperationParts, mutations, parse, validate};

type Set = SelectionSet<'static, String>;
type FieldNode = Field<'static, String>;
type Operation = OperationDefinition<'static, String>;

/// The operation a request runs: the one named `name`, or the only one.
pub fn choose_operation<'d>(
    document: &'d Document,
    name: Option<&str>,
) -> Result<&'d Operation, String> {
    let operations: Vec<&Operation> = document
        .definitions
        .iter()
        .filter_map(|definition| match definition {
            Definition::Operation(operation) => Some(operation),
            Definition::Fragment(_) => None,
        })
        .collect();
    match name {
        Some(name) => operations
            .into_iter()
            .find(|operation| validate::operation_name(operation) == Some(name))
            .ok_or_else(|| format!("No operation named \"{name}\"")),
        None => match operations.as_slice() {
            [operation] => Ok(operation),
            [] => Err("No operations in this document".into()),
            _ => Err("An operation name is required".into()),
        },
    }
}

fn errors_only(errors: Vec<GraphqlError>) -> Value {
    json!({"errors": errors.iter().map(GraphqlError::to_json).collect::<Vec<_>>()})
}

/// Answers a `POST /graphql` body for `caller`, with `schema` as the schema served.
pub fn answer(schema: &Schema, state: &mut RepoState, caller: &str, body: &Value) -> Value {
    let Some(query) = body.get("query").and_then(Value::as_str) else {
        return errors_only(vec![GraphqlError::new(
            "A query attribute must be specified and must be a string.",
        )]);
    };
    let document = match parse(query) {
        Ok(document) => document,
        Err(error) => return errors_only(vec![parse_error(&error)]),
    };
    let problems = validate::validate(schema, &document);
    if !problems.is_empty() {
        return errors_only(problems);
    }
    let name = body.get("operationName").and_then(Value::as_str);
    let operation = match choose_operation(&document, name) {
        Ok(operation) => operation,
        Err(message) => return errors_only(vec![GraphqlError::new(message)]),
    };
    let given = match body.get("variables") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(variables)) => variables.clone(),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(variables)) => variables,
            _ => {
                return errors_only(vec![GraphqlError::new(
                    "Variables are invalid JSON: expected an object",
                )]);
            }
        },
        Some(_) => {
            return errors_only(vec![GraphqlError::new(
                "Variables are invalid JSON: expected an object",
            )]);
        }
    };
    let parts = OperationParts::of(operation);
    if parts.kind == "subscription" {
        return errors_only(vec![GraphqlError::new(
            "Subscriptions are not supported over HTTP",
        )]);
    }
    let (mutation, definitions, set) = (
        parts.kind == "mutation",
        parts.variables,
        parts.selection_set,
    );
    let variables = match coerce_variables(schema, definitions, &given) {
        Ok(variables) => variables,
        Err(errors) => return errors_only(errors),
    };
    let mut execution = Execution {
        schema,
        document: &document,
        variables,
        errors: Vec::new(),
    };
    let data = if mutation {
        execution.mutation(state, caller, set)
    } else {
        execution.root(
            state,
            "Query",
            &Obj::Query {
                viewer: caller.to_string(),
            },
            set,
        )
    };
    let mut out = Map::new();
    out.insert("data".into(), data);
    if !execution.errors.is_empty() {
        out.insert(
            "errors".into(),
            Value::Array(execution.errors.iter().map(GraphqlError::to_json).collect()),
        );
    }
    Value::Object(out)
}

/// GitHub's answer to a document that does not parse.
fn parse_error(detail: &str) -> GraphqlError {
    // graphql-parser: "query parse error: Parse error at 1:5\nUnexpected ...".
    let detail = detail.trim_start_matches("query parse error: ");
    let mut error = GraphqlError::new(detail.replace('\n', " "));
    if let Some(position) = detail
        .split_whitespace()
        .find_map(|word| word.split_once(':'))
        .and_then(|(line, column)| Some((line.parse().ok()?, column.parse().ok()?)))
    {
        error.locations.push(graphql_parser::Pos {
            line: position.0,
            column: position.1,
        });
    }
    error
}

/// The operation's variables: given values coerced to their declared types, defaults for the
/// others. A value that does not fit (a required one missing, too) rejects the request.
pub fn coerce_variables(
    schema: &Schema,
    definitions: &[VariableDefinition<'static, String>],
    given: &Map<String, Value>,
) -> Result<Map<String, Value>, Vec<GraphqlError>> {
    let mut variables = Map::new();
    let mut errors = Vec::new();
    for definition in definitions {
        let ty = TypeRef::from_ast(&definition.var_type);
        let result = match (given.get(&definition.name), &definition.default_value) {
            (Some(value), _) => coerce_json(schema, value, &ty).map(Some),
            (None, Some(default)) => Ok(Some(literal_to_json(schema, default, &ty, &Map::new()))),
            (None, None) => coerce_json(schema, &Value::Null, &ty).map(|_| None),
        };
        match result {
            Ok(Some(value)) => {
                variables.insert(definition.name.clone(), value);
            }
            Ok(None) => {}
            Err(problems) => errors.push(
                GraphqlError::new(format!(
                    "Variable ${} of type {ty} was provided invalid value",
                    definition.name
                ))
                .at(definition.position)
                .extensions(json!({
                    "value": given.get(&definition.name).cloned().unwrap_or(Value::Null),
                    "problems": problems.iter().map(super::values::Problem::to_json).collect::<Vec<_>>(),
                })),
            ),
        }
    }
    if errors.is_empty() {
        Ok(variables)
    } else {
        Err(errors)
    }
}

/// A value became null where its type does not allow it: the null moves up to the nearest
/// place that may be null (the error is already recorded).
struct Propagate;

struct Execution<'a> {
    schema: &'a Schema,
    document: &'a Document,
    variables: Map<String, Value>,
    errors: Vec<GraphqlError>,
}

impl<'a> Execution<'a> {
    fn fragment(&self, name: &str) -> Option<&'a FragmentDefinition<'static, String>> {
        self.document
            .definitions
            .iter()
            .find_map(|definition| match definition {
                Definition::Fragment(fragment) if fragment.name == name => Some(fragment),
                _ => None,
            })
    }

    /// `@skip(if:)` / `@include(if:)` leave the selection out.
    fn skipped(&self, directives: &[graphql_parser::query::Directive<'static, String>]) -> bool {
        directives.iter().any(|directive| {
            let condition = directive
                .arguments
                .iter()
                .find(|(name, _)| name == "if")
                .map(|(_, value)| {
                    literal_to_json(
                        self.schema,
                        value,
                        &TypeRef::Named("Boolean".into()),
                        &self.variables,
                    )
                })
                .and_then(|value| value.as_bool())
                .unwrap_or(false);
            match directive.name.as_str() {
                "skip" => condition,
                "include" => !condition,
                _ => false,
            }
        })
    }

    /// The fields selected on an object of type `object_type`, grouped by response key in
    /// selection order (GraphQL's CollectFields).
    fn collect<'s>(
        &self,
        object_type: &str,
        set: &'s Set,
        grouped: &mut Vec<(String, Vec<&'s FieldNode>)>,
        visited: &mut BTreeSet<String>,
    ) where
        'a: 's,
    {
        for selection in &set.items {
            match selection {
                Selection::Field(field) => {
                    if self.skipped(&field.directives) {
                        continue;
                    }
                    let key = field.alias.clone().unwrap_or_else(|| field.name.clone());
                    match grouped.iter_mut().find(|(existing, _)| *existing == key) {
                        Some((_, fields)) => fields.push(field),
                        None => grouped.push((key, vec![field])),
                    }
                }
                Selection::InlineFragment(fragment) => {
                    if self.skipped(&fragment.directives) {
                        continue;
                    }
                    let applies = match &fragment.type_condition {
                        Some(TypeCondition::On(condition)) => {
                            self.schema.applies(condition, object_type)
                        }
                        None => true,
                    };
                    if applies {
                        self.collect(object_type, &fragment.selection_set, grouped, visited);
                    }
                }
                Selection::FragmentSpread(spread) => {
                    if self.skipped(&spread.directives)
                        || !visited.insert(spread.fragment_name.clone())
                    {
                        continue;
                    }
                    let Some(fragment) = self.fragment(&spread.fragment_name) else {
                        continue;
                    };
                    let TypeCondition::On(condition) = &fragment.type_condition;
                    if self.schema.applies(condition, object_type) {
                        self.collect(object_type, &fragment.selection_set, grouped, visited);
                    }
                }
            }
        }
    }

    fn grouped(&self, object_type: &str, sets: &[&'a Set]) -> Vec<(String, Vec<&'a FieldNode>)> {
        let mut grouped = Vec::new();
        let mut visited = BTreeSet::new();
        for set in sets {
            self.collect(object_type, set, &mut grouped, &mut visited);
        }
        grouped
    }

    /// A query's `data`: null when a non-null root field failed.
    fn root(&mut self, state: &RepoState, root: &str, object: &Obj, set: &'a Set) -> Value {
        let mut path = Vec::new();
        self.object_value(state, root, object, &[set], &mut path)
            .unwrap_or(Value::Null)
    }

    /// A mutation's `data`: its top-level fields run one after another, each mutating the state
    /// before its payload is read.
    fn mutation(&mut self, state: &mut RepoState, caller: &str, set: &'a Set) -> Value {
        let mut data = Map::new();
        for (key, fields) in self.grouped("Mutation", &[set]) {
            let field = fields[0];
            let mut path = vec![json!(key)];
            let Some(definition) = self.schema.field("Mutation", &field.name).cloned() else {
                if field.name == "__typename" {
                    data.insert(key, json!("Mutation"));
                }
                continue;
            };
            let arguments = arguments_json(
                self.schema,
                &definition.arguments,
                &field.arguments,
                &self.variables,
            );
            let value = match mutations::apply(state, caller, &field.name, &arguments) {
                Ok(payload) => self
                    .complete(
                        state,
                        "Mutation",
                        &definition.ty,
                        Resolved::Object(payload),
                        &fields,
                        &mut path,
                    )
                    .unwrap_or(Value::Null),
                Err(error) => {
                    self.field_error(error, field, &path);
                    Value::Null
                }
            };
            data.insert(key, value);
        }
        Value::Object(data)
    }

    fn field_error(&mut self, error: FieldError, field: &FieldNode, path: &[Value]) {
        let mut recorded = GraphqlError::new(error.message)
            .path(path.to_vec())
            .at(field.position);
        recorded.kind = error.kind.map(str::to_string);
        self.errors.push(recorded);
    }

    /// The selected fields of `object` (of concrete type `object_type`).
    fn object_value(
        &mut self,
        state: &RepoState,
        object_type: &str,
        object: &Obj,
        sets: &[&'a Set],
        path: &mut Vec<Value>,
    ) -> Result<Value, Propagate> {
        let mut out = Map::new();
        let mut failed = false;
        for (key, fields) in self.grouped(object_type, sets) {
            path.push(json!(key));
            match self.field_value(state, object_type, object, &fields, path) {
                Ok(value) => {
                    out.insert(key, value);
                }
                Err(Propagate) => failed = true,
            }
            path.pop();
        }
        if failed {
            Err(Propagate)
        } else {
            Ok(Value::Object(out))
        }
    }

    fn field_value(
        &mut self,
        state: &RepoState,
        object_type: &str,
        object: &Obj,
        fields: &[&'a FieldNode],
        path: &mut Vec<Value>,
    ) -> Result<Value, Propagate> {
        let field = fields[0];
        if field.name == "__typename" {
            return Ok(json!(object_type));
        }
        let Some(definition) = self.schema.field(object_type, &field.name).cloned() else {
            self.field_error(
                FieldError {
                    kind: None,
                    message: format!(
                        "Field '{}' doesn't exist on type '{object_type}'",
                        field.name
                    ),
                },
                field,
                path,
            );
            return Ok(Value::Null);
        };
        let arguments = arguments_json(
            self.schema,
            &definition.arguments,
            &field.arguments,
            &self.variables,
        );
        let result = match resolve::field(state, object, &field.name, &arguments) {
            Ok(resolved) => {
                self.complete(state, object_type, &definition.ty, resolved, fields, path)
            }
            Err(error) => {
                self.field_error(error, field, path);
                Err(Propagate)
            }
        };
        match result {
            Err(Propagate) if !definition.ty.is_non_null() => Ok(Value::Null),
            other => other,
        }
    }

    /// A resolved value completed against `ty`.
    fn complete(
        &mut self,
        state: &RepoState,
        owner: &str,
        ty: &TypeRef,
        resolved: Resolved,
        fields: &[&'a FieldNode],
        path: &mut Vec<Value>,
    ) -> Result<Value, Propagate> {
        match ty {
            TypeRef::NonNull(inner) => {
                if matches!(resolved, Resolved::Null) {
                    let field = fields[0];
                    self.errors.push(
                        GraphqlError::new(format!(
                            "Cannot return null for non-nullable field {owner}.{}",
                            field.name
                        ))
                        .path(path.clone())
                        .at(field.position),
                    );
                    return Err(Propagate);
                }
                self.complete(state, owner, inner, resolved, fields, path)
            }
            _ if matches!(resolved, Resolved::Null) => Ok(Value::Null),
            TypeRef::List(item) => {
                let Resolved::List(items) = resolved else {
                    return self
                        .complete(state, owner, item, resolved, fields, path)
                        .map(|value| json!([value]));
                };
                let mut out = Vec::with_capacity(items.len());
                for (index, resolved) in items.into_iter().enumerate() {
                    path.push(json!(index));
                    let value = match self.complete(state, owner, item, resolved, fields, path) {
                        Ok(value) => value,
                        Err(Propagate) if !item.is_non_null() => Value::Null,
                        Err(Propagate) => {
                            path.pop();
                            return Err(Propagate);
                        }
                    };
                    path.pop();
                    out.push(value);
                }
                Ok(Value::Array(out))
            }
            TypeRef::Named(name) => {
                let kind = self.schema.get(name).map(|def| def.kind);
                match (kind, resolved) {
                    (Some(TypeKind::Scalar | TypeKind::Enum), Resolved::Leaf(value)) => Ok(value),
                    (
                        Some(TypeKind::Object | TypeKind::Interface | TypeKind::Union),
                        Resolved::Object(object),
                    ) => {
                        let concrete = object.type_name().to_string();
                        if !self.schema.applies(name, &concrete) {
                            self.field_error(
                                FieldError {
                                    kind: None,
                                    message: format!(
                                        "the fake GitHub resolved a {concrete} where {name} is expected"
                                    ),
                                },
                                fields[0],
                                path,
                            );
                            return Ok(Value::Null);
                        }
                        let sets: Vec<&'a Set> =
                            fields.iter().map(|field| &field.selection_set).collect();
                        self.object_value(state, &concrete, &object, &sets, path)
                    }
                    (_, other) => {
                        self.field_error(
                            FieldError {
                                kind: None,
                                message: format!(
                                    "the fake GitHub resolved {other:?} where {name} is expected"
                                ),
                            },
                            fields[0],
                            path,
                        );
                        Ok(Value::Null)
                    }
                }
            }
        }
    }
}
