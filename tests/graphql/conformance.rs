//! Whether a GraphQL answer conforms to the schema for the query it answers: every response key
//! is a selected field (by alias or name) of the object's type and every selected field is
//! there, in selection order; each value has the JSON type of its schema type (scalars, enums,
//! objects, lists) and is null only where the type allows it; an abstract type's object is one
//! of its possible types; `__typename` names the object's type. Errors have GitHub's shape and
//! their `path` leads to a null.
//!
//! This reads the query and the schema itself: it shares nothing with the fake GitHub's
//! executor but the schema's lookup tables. Include it beside the fake GitHub:
//! `#[path = "graphql/conformance.rs"] mod conformance;`.

#![allow(dead_code)]

use graphql_parser::query::{
    Definition, Directive, Document, Field, OperationDefinition, Selection, SelectionSet,
    TypeCondition, Value as Literal,
};
use serde_json::Value;

use super::fake_github::graphql::schema::{Schema, TypeKind, TypeRef};

type Doc = Document<'static, String>;
type Set = SelectionSet<'static, String>;

/// Every way `answer` (a whole GraphQL response body) fails to conform to `schema` for the
/// operation of `document` run with `variables` (which decide `@skip`/`@include`); empty when
/// it conforms.
pub fn problems(schema: &Schema, document: &Doc, variables: &Value, answer: &Value) -> Vec<String> {
    let mut checker = Checker {
        schema,
        document,
        variables: variables.clone(),
        problems: Vec::new(),
    };
    checker.default_variables();
    checker.answer(answer);
    checker.problems
}

struct Checker<'a> {
    schema: &'a Schema,
    document: &'a Doc,
    variables: Value,
    problems: Vec<String>,
}

impl<'a> Checker<'a> {
    /// Variables left out take their declared defaults.
    fn default_variables(&mut self) {
        if !self.variables.is_object() {
            self.variables = Value::Object(Default::default());
        }
        for definition in &self.document.definitions {
            let Definition::Operation(operation) = definition else {
                continue;
            };
            let definitions = match operation {
                OperationDefinition::Query(query) => &query.variable_definitions,
                OperationDefinition::Mutation(mutation) => &mutation.variable_definitions,
                _ => continue,
            };
            for definition in definitions {
                if let Some(Literal::Boolean(flag)) = &definition.default_value {
                    let variables = self.variables.as_object_mut().expect("an object");
                    variables
                        .entry(definition.name.clone())
                        .or_insert(Value::Bool(*flag));
                }
            }
        }
    }

    /// Whether `@skip`/`@include` leave a selection out.
    fn skipped(&self, directives: &[Directive<'static, String>]) -> bool {
        directives.iter().any(|directive| {
            let condition = directive
                .arguments
                .iter()
                .find(|(name, _)| name == "if")
                .and_then(|(_, value)| match value {
                    Literal::Boolean(flag) => Some(*flag),
                    Literal::Variable(name) => self.variables.get(name).and_then(Value::as_bool),
                    _ => None,
                })
                .unwrap_or(false);
            match directive.name.as_str() {
                "skip" => condition,
                "include" => !condition,
                _ => false,
            }
        })
    }

    fn problem(&mut self, path: &str, text: impl Into<String>) {
        self.problems.push(format!("{path}: {}", text.into()));
    }

    fn answer(&mut self, answer: &Value) {
        let Some(body) = answer.as_object() else {
            self.problem("$", "the answer is not an object");
            return;
        };
        for key in body.keys() {
            if !["data", "errors", "extensions"].contains(&key.as_str()) {
                self.problem("$", format!("unexpected top-level key {key}"));
            }
        }
        if let Some(errors) = body.get("errors") {
            self.errors(errors, body.get("data"));
        }
        let Some(data) = body.get("data") else {
            if body.get("errors").is_none() {
                self.problem("$", "neither data nor errors");
            }
            return;
        };
        let operations: Vec<&OperationDefinition<'static, String>> = self
            .document
            .definitions
            .iter()
            .filter_map(|definition| match definition {
                Definition::Operation(operation) => Some(operation),
                Definition::Fragment(_) => None,
            })
            .collect();
        let [operation] = operations.as_slice() else {
            self.problem("$", "the document must hold exactly one operation");
            return;
        };
        let (root, set) = match operation {
            OperationDefinition::Mutation(mutation) => ("Mutation", &mutation.selection_set),
            OperationDefinition::Query(query) => ("Query", &query.selection_set),
            OperationDefinition::SelectionSet(set) => ("Query", set),
            OperationDefinition::Subscription(_) => {
                self.problem("$", "subscriptions are not checked");
                return;
            }
        };
        if data.is_null() {
            if body.get("errors").is_none() {
                self.problem("data", "null data without errors");
            }
            return;
        }
        self.object(root, &[set], data, "data");
    }

    fn errors(&mut self, errors: &Value, data: Option<&Value>) {
        let Some(errors) = errors.as_array() else {
            self.problem("errors", "not an array");
            return;
        };
        if errors.is_empty() {
            self.problem("errors", "an empty errors array");
        }
        for (index, error) in errors.iter().enumerate() {
            let at = format!("errors[{index}]");
            let Some(error) = error.as_object() else {
                self.problem(&at, "not an object");
                continue;
            };
            if !error.get("message").is_some_and(Value::is_string) {
                self.problem(&at, "no message");
            }
            if let Some(locations) = error.get("locations") {
                let fine = locations.as_array().is_some_and(|locations| {
                    locations.iter().all(|location| {
                        ["line", "column"].iter().all(|key| {
                            location
                                .get(key)
                                .and_then(Value::as_u64)
                                .is_some_and(|number| number >= 1)
                        })
                    })
                });
                if !fine {
                    self.problem(&at, "locations are not [{line, column}]");
                }
            }
            if let Some(kind) = error.get("type")
                && !kind.is_string()
            {
                self.problem(&at, "type is not a string");
            }
            let Some(path) = error.get("path") else {
                continue;
            };
            let Some(path) = path.as_array() else {
                self.problem(&at, "path is not an array");
                continue;
            };
            // A field error's path (one with `data`) leads to the null it left, or stops where
            // the null took its place.
            let Some(mut value) = data.filter(|data| !data.is_null()) else {
                continue;
            };
            for segment in path {
                let next = match segment {
                    Value::String(key) => value.get(key),
                    Value::Number(index) => {
                        index.as_u64().and_then(|index| value.get(index as usize))
                    }
                    _ => {
                        self.problem(&at, "a path segment is neither a key nor an index");
                        None
                    }
                };
                match next {
                    Some(next) => value = next,
                    None => break,
                }
            }
            if !value.is_null() {
                self.problem(&at, "its path does not lead to a null");
            }
        }
    }

    /// The fields selected on an object of type `object_type`, grouped by response key.
    fn selected(
        &self,
        object_type: &str,
        sets: &[&'a Set],
    ) -> Vec<(String, Vec<&'a Field<'static, String>>)> {
        let mut grouped: Vec<(String, Vec<&'a Field<'static, String>>)> = Vec::new();
        let mut visited = Vec::new();
        // Depth-first, in document order.
        let mut ordered: Vec<&'a Selection<'static, String>> = Vec::new();
        fn flatten<'b>(
            checker: &Checker<'b>,
            object_type: &str,
            set: &'b Set,
            out: &mut Vec<&'b Selection<'static, String>>,
            visited: &mut Vec<String>,
        ) {
            for selection in &set.items {
                match selection {
                    Selection::Field(field) if checker.skipped(&field.directives) => {}
                    Selection::Field(_) => out.push(selection),
                    Selection::InlineFragment(fragment)
                        if checker.skipped(&fragment.directives) => {}
                    Selection::InlineFragment(fragment) => {
                        let applies = match &fragment.type_condition {
                            Some(TypeCondition::On(condition)) => {
                                checker.schema.applies(condition, object_type)
                            }
                            None => true,
                        };
                        if applies {
                            flatten(checker, object_type, &fragment.selection_set, out, visited);
                        }
                    }
                    Selection::FragmentSpread(spread) => {
                        if checker.skipped(&spread.directives)
                            || visited.contains(&spread.fragment_name)
                        {
                            continue;
                        }
                        visited.push(spread.fragment_name.clone());
                        let fragment = checker.document.definitions.iter().find_map(|definition| {
                            match definition {
                                Definition::Fragment(fragment)
                                    if fragment.name == spread.fragment_name =>
                                {
                                    Some(fragment)
                                }
                                _ => None,
                            }
                        });
                        if let Some(fragment) = fragment {
                            let TypeCondition::On(condition) = &fragment.type_condition;
                            if checker.schema.applies(condition, object_type) {
                                flatten(
                                    checker,
                                    object_type,
                                    &fragment.selection_set,
                                    out,
                                    visited,
                                );
                            }
                        }
                    }
                }
            }
        }
        for set in sets {
            flatten(self, object_type, set, &mut ordered, &mut visited);
        }
        for selection in ordered {
            let Selection::Field(field) = selection else {
                continue;
            };
            let key = field.alias.clone().unwrap_or_else(|| field.name.clone());
            match grouped.iter_mut().find(|(existing, _)| *existing == key) {
                Some((_, fields)) => fields.push(field),
                None => grouped.push((key, vec![field])),
            }
        }
        grouped
    }

    /// `value`, of the composite type `type_name`, selected by `sets`.
    fn object(&mut self, type_name: &str, sets: &[&'a Set], value: &Value, path: &str) {
        let Some(def) = self.schema.get(type_name) else {
            self.problem(path, format!("unknown type {type_name}"));
            return;
        };
        if !value.is_object() {
            self.problem(
                path,
                format!("a {type_name} must be a JSON object, not {value}"),
            );
            return;
        }
        if !def.is_abstract() {
            self.concrete(type_name, sets, value, path);
            return;
        }
        let possible: Vec<String> = self
            .schema
            .possible_types(type_name)
            .into_iter()
            .map(str::to_string)
            .collect();
        if let Some(named) = value.get("__typename").and_then(Value::as_str) {
            if !possible.iter().any(|candidate| candidate == named) {
                self.problem(
                    path,
                    format!("__typename {named} is not a possible type of {type_name}"),
                );
                return;
            }
            self.concrete(named, sets, value, path);
            return;
        }
        // Without `__typename`, some possible type must account for the object.
        let mut first_problems = None;
        for candidate in &possible {
            let mut trial = Checker {
                schema: self.schema,
                document: self.document,
                variables: self.variables.clone(),
                problems: Vec::new(),
            };
            trial.concrete(candidate, sets, value, path);
            if trial.problems.is_empty() {
                return;
            }
            first_problems.get_or_insert(trial.problems);
        }
        self.problem(
            path,
            format!("fits none of the possible types of {type_name}"),
        );
        self.problems.extend(first_problems.unwrap_or_default());
    }

    fn concrete(&mut self, type_name: &str, sets: &[&'a Set], value: &Value, path: &str) {
        let object = value.as_object().expect("checked by the caller");
        let selected = self.selected(type_name, sets);
        let expected: Vec<&str> = selected.iter().map(|(key, _)| key.as_str()).collect();
        let got: Vec<&str> = object.keys().map(String::as_str).collect();
        if expected != got {
            self.problem(
                path,
                format!("keys {got:?} are not the selected fields {expected:?} of {type_name}"),
            );
        }
        for (key, fields) in selected {
            let Some(value) = object.get(&key) else {
                continue;
            };
            let at = format!("{path}.{key}");
            let field = fields[0];
            if field.name == "__typename" {
                if value.as_str() != Some(type_name) {
                    self.problem(&at, format!("__typename {value} on a {type_name}"));
                }
                continue;
            }
            let Some(definition) = self.schema.field(type_name, &field.name) else {
                self.problem(&at, format!("{type_name} has no field {}", field.name));
                continue;
            };
            let ty = definition.ty.clone();
            let sets: Vec<&'a Set> = fields.iter().map(|field| &field.selection_set).collect();
            self.value(&ty, &sets, value, &at);
        }
    }

    fn value(&mut self, ty: &TypeRef, sets: &[&'a Set], value: &Value, path: &str) {
        match ty {
            TypeRef::NonNull(inner) => {
                if value.is_null() {
                    self.problem(path, format!("null for the non-null type {ty}"));
                } else {
                    self.value(inner, sets, value, path);
                }
            }
            _ if value.is_null() => {}
            TypeRef::List(item) => match value.as_array() {
                Some(items) => {
                    for (index, value) in items.iter().enumerate() {
                        self.value(item, sets, value, &format!("{path}[{index}]"));
                    }
                }
                None => self.problem(path, format!("{value} is not a list ({ty})")),
            },
            TypeRef::Named(name) => {
                let Some(def) = self.schema.get(name) else {
                    self.problem(path, format!("unknown type {name}"));
                    return;
                };
                match def.kind {
                    TypeKind::Scalar => {
                        if let Err(why) = scalar(name, value) {
                            self.problem(path, why);
                        }
                    }
                    TypeKind::Enum => {
                        let known = value
                            .as_str()
                            .is_some_and(|text| def.enum_values.iter().any(|known| known == text));
                        if !known {
                            self.problem(path, format!("{value} is not a value of {name}"));
                        }
                    }
                    TypeKind::Object | TypeKind::Interface | TypeKind::Union => {
                        self.object(name, sets, value, path)
                    }
                    TypeKind::InputObject => self.problem(path, "an input type in an answer"),
                }
            }
        }
    }
}

/// Whether `value` is a JSON value of the scalar `name` as GitHub serializes it.
fn scalar(name: &str, value: &Value) -> Result<(), String> {
    let fits = match name {
        "Int" => value
            .as_i64()
            .is_some_and(|number| i32::try_from(number).is_ok()),
        "Float" => value.is_number(),
        "Boolean" => value.is_boolean(),
        "String" | "ID" | "URI" => value.is_string(),
        "DateTime" => value
            .as_str()
            .is_some_and(|text| chrono::DateTime::parse_from_rfc3339(text).is_ok()),
        "GitObjectID" => value.as_str().is_some_and(|text| {
            text.len() == 40
                && text
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        }),
        "GitRefname" => value.as_str().is_some_and(|text| text.starts_with("refs/")),
        other => return Err(format!("no check for the scalar {other}")),
    };
    if fits {
        Ok(())
    } else {
        Err(format!("{value} is not a {name}"))
    }
}
