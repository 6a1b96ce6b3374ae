//! Input values: checking literals written in a query against their input type, coercing the
//! request's JSON variables, and turning an argument (literal, variables, defaults) into the
//! JSON value a resolver reads.

use serde_json::{Map, Value, json};

use super::schema::{InputValueDef, Schema, TypeKind, TypeRef};

pub type Literal = graphql_parser::query::Value<'static, String>;

/// One reason a variable's value does not fit its type, as GitHub lists them.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub path: Vec<Value>,
    pub explanation: String,
}

impl Problem {
    fn at(path: &[Value], explanation: impl Into<String>) -> Self {
        Problem {
            path: path.to_vec(),
            explanation: explanation.into(),
        }
    }

    pub fn to_json(&self) -> Value {
        json!({"path": self.path, "explanation": self.explanation})
    }
}

/// A literal as GraphQL writes it, for error messages.
pub fn literal_text(value: &Literal) -> String {
    match value {
        Literal::Variable(name) => format!("${name}"),
        Literal::Int(number) => number.as_i64().unwrap_or_default().to_string(),
        Literal::Float(number) => number.to_string(),
        Literal::String(text) => serde_json::to_string(text).unwrap_or_default(),
        Literal::Boolean(flag) => flag.to_string(),
        Literal::Null => "null".into(),
        Literal::Enum(name) => name.clone(),
        Literal::List(items) => format!(
            "[{}]",
            items
                .iter()
                .map(literal_text)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Literal::Object(fields) => format!(
            "{{{}}}",
            fields
                .iter()
                .map(|(name, value)| format!("{name}: {}", literal_text(value)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A variable used inside a literal: its name and the type expected where it stands, and
/// whether that place has a default value.
#[derive(Clone, Debug)]
pub struct VariableUse {
    pub name: String,
    pub expected: TypeRef,
    pub place_has_default: bool,
}

/// Whether `value` (a literal, possibly holding variables) fits `ty`. Variables are collected
/// into `uses`; their own types are checked by the caller. `Err` names what does not fit.
pub fn check_literal(
    schema: &Schema,
    value: &Literal,
    ty: &TypeRef,
    place_has_default: bool,
    uses: &mut Vec<VariableUse>,
) -> Result<(), LiteralMismatch> {
    if let Literal::Variable(name) = value {
        uses.push(VariableUse {
            name: name.clone(),
            expected: ty.clone(),
            place_has_default,
        });
        return Ok(());
    }
    match ty {
        TypeRef::NonNull(inner) => {
            if matches!(value, Literal::Null) {
                return Err(LiteralMismatch::Invalid);
            }
            check_literal(schema, value, inner, place_has_default, uses)
        }
        TypeRef::List(item) => match value {
            Literal::Null => Ok(()),
            Literal::List(items) => items
                .iter()
                .try_for_each(|value| check_literal(schema, value, item, false, uses)),
            single => check_literal(schema, single, item, false, uses),
        },
        TypeRef::Named(name) => {
            if matches!(value, Literal::Null) {
                return Ok(());
            }
            let Some(def) = schema.get(name) else {
                return Err(LiteralMismatch::Invalid);
            };
            match def.kind {
                TypeKind::Scalar => {
                    if scalar_literal_fits(name, value) {
                        Ok(())
                    } else {
                        Err(LiteralMismatch::Invalid)
                    }
                }
                TypeKind::Enum => match value {
                    Literal::Enum(value) if def.enum_values.contains(value) => Ok(()),
                    _ => Err(LiteralMismatch::Invalid),
                },
                TypeKind::InputObject => {
                    let Literal::Object(fields) = value else {
                        return Err(LiteralMismatch::Invalid);
                    };
                    for name in fields.keys() {
                        if def.input_field(name).is_none() {
                            return Err(LiteralMismatch::UnknownField {
                                input_object: def.name.clone(),
                                field: name.clone(),
                            });
                        }
                    }
                    for field in &def.input_fields {
                        match fields.get(&field.name) {
                            Some(value) => check_literal(
                                schema,
                                value,
                                &field.ty,
                                field.default.is_some(),
                                uses,
                            )
                            .map_err(|mismatch| match mismatch {
                                LiteralMismatch::Invalid => LiteralMismatch::InvalidField {
                                    input_object: def.name.clone(),
                                    field: field.name.clone(),
                                    expected: field.ty.to_string(),
                                    value: literal_text(value),
                                },
                                nested => nested,
                            })?,
                            None if field.ty.is_non_null() && field.default.is_none() => {
                                return Err(LiteralMismatch::MissingField {
                                    input_object: def.name.clone(),
                                    field: field.name.clone(),
                                    expected: field.ty.to_string(),
                                });
                            }
                            None => {}
                        }
                    }
                    Ok(())
                }
                _ => Err(LiteralMismatch::Invalid),
            }
        }
    }
}

/// Why a literal does not fit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiteralMismatch {
    Invalid,
    UnknownField {
        input_object: String,
        field: String,
    },
    MissingField {
        input_object: String,
        field: String,
        expected: String,
    },
    InvalidField {
        input_object: String,
        field: String,
        expected: String,
        value: String,
    },
}

fn scalar_literal_fits(name: &str, value: &Literal) -> bool {
    match name {
        "Int" => {
            matches!(value, Literal::Int(number) if i32::try_from(number.as_i64().unwrap_or(i64::MAX)).is_ok())
        }
        "Float" => matches!(value, Literal::Int(_) | Literal::Float(_)),
        "Boolean" => matches!(value, Literal::Boolean(_)),
        "ID" => matches!(value, Literal::String(_) | Literal::Int(_)),
        // String and GitHub's custom scalars (DateTime, GitObjectID, GitRefname, URI, …) travel
        // as strings.
        _ => matches!(value, Literal::String(_)),
    }
}

fn scalar_json_fits(name: &str, value: &Value) -> bool {
    match name {
        "Int" => value
            .as_i64()
            .is_some_and(|number| i32::try_from(number).is_ok()),
        "Float" => value.is_number(),
        "Boolean" => value.is_boolean(),
        "ID" => value.is_string() || value.is_i64() || value.is_u64(),
        _ => value.is_string(),
    }
}

/// Coerces a request variable's JSON value to `ty`, applying input objects' defaults.
pub fn coerce_json(schema: &Schema, value: &Value, ty: &TypeRef) -> Result<Value, Vec<Problem>> {
    let mut problems = Vec::new();
    let coerced = coerce_json_at(schema, value, ty, &mut Vec::new(), &mut problems);
    if problems.is_empty() {
        Ok(coerced)
    } else {
        Err(problems)
    }
}

fn coerce_json_at(
    schema: &Schema,
    value: &Value,
    ty: &TypeRef,
    path: &mut Vec<Value>,
    problems: &mut Vec<Problem>,
) -> Value {
    match ty {
        TypeRef::NonNull(inner) => {
            if value.is_null() {
                problems.push(Problem::at(path, "Expected value to not be null"));
                return Value::Null;
            }
            coerce_json_at(schema, value, inner, path, problems)
        }
        _ if value.is_null() => Value::Null,
        TypeRef::List(item) => match value {
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(index, value)| {
                        path.push(json!(index));
                        let coerced = coerce_json_at(schema, value, item, path, problems);
                        path.pop();
                        coerced
                    })
                    .collect(),
            ),
            single => Value::Array(vec![coerce_json_at(schema, single, item, path, problems)]),
        },
        TypeRef::Named(name) => {
            let Some(def) = schema.get(name) else {
                problems.push(Problem::at(path, format!("{name} isn't a defined type")));
                return Value::Null;
            };
            match def.kind {
                TypeKind::Scalar => {
                    if scalar_json_fits(name, value) {
                        match (name.as_str(), value) {
                            ("ID", Value::Number(number)) => json!(number.to_string()),
                            _ => value.clone(),
                        }
                    } else {
                        problems.push(Problem::at(
                            path,
                            format!("Could not coerce value {value} to {name}"),
                        ));
                        Value::Null
                    }
                }
                TypeKind::Enum => match value.as_str() {
                    Some(text) if def.enum_values.iter().any(|known| known == text) => {
                        value.clone()
                    }
                    _ => {
                        problems.push(Problem::at(
                            path,
                            format!(
                                "Expected {value} to be one of: {}",
                                def.enum_values.join(", ")
                            ),
                        ));
                        Value::Null
                    }
                },
                TypeKind::InputObject => {
                    let Some(object) = value.as_object() else {
                        problems.push(Problem::at(
                            path,
                            format!("Expected {value} to be a key-value object."),
                        ));
                        return Value::Null;
                    };
                    let mut coerced = Map::new();
                    for key in object.keys() {
                        if def.input_field(key).is_none() {
                            path.push(json!(key));
                            problems.push(Problem::at(
                                path,
                                format!("Field is not defined on {}", def.name),
                            ));
                            path.pop();
                        }
                    }
                    for field in &def.input_fields {
                        path.push(json!(field.name));
                        match object.get(&field.name) {
                            Some(value) => {
                                let value =
                                    coerce_json_at(schema, value, &field.ty, path, problems);
                                coerced.insert(field.name.clone(), value);
                            }
                            None => match &field.default {
                                Some(default) => {
                                    let value =
                                        literal_to_json(schema, default, &field.ty, &Map::new());
                                    coerced.insert(field.name.clone(), value);
                                }
                                None if field.ty.is_non_null() => problems
                                    .push(Problem::at(path, "Expected value to not be null")),
                                None => {}
                            },
                        }
                        path.pop();
                    }
                    Value::Object(coerced)
                }
                _ => {
                    problems.push(Problem::at(path, format!("{name} is not an input type")));
                    Value::Null
                }
            }
        }
    }
}

/// A literal (already checked against `ty`) as JSON, with variables replaced by their coerced
/// values and input objects' defaults applied. A variable without a value reads as null.
pub fn literal_to_json(
    schema: &Schema,
    value: &Literal,
    ty: &TypeRef,
    variables: &Map<String, Value>,
) -> Value {
    match value {
        Literal::Variable(name) => variables.get(name).cloned().unwrap_or(Value::Null),
        Literal::Null => Value::Null,
        _ => match ty {
            TypeRef::NonNull(inner) => literal_to_json(schema, value, inner, variables),
            TypeRef::List(item) => match value {
                Literal::List(items) => Value::Array(
                    items
                        .iter()
                        .map(|value| literal_to_json(schema, value, item, variables))
                        .collect(),
                ),
                single => Value::Array(vec![literal_to_json(schema, single, item, variables)]),
            },
            TypeRef::Named(name) => match value {
                Literal::Int(number) if name == "ID" => {
                    json!(number.as_i64().unwrap_or_default().to_string())
                }
                Literal::Int(number) => json!(number.as_i64().unwrap_or_default()),
                Literal::Float(number) => json!(number),
                Literal::String(text) => json!(text),
                Literal::Boolean(flag) => json!(flag),
                Literal::Enum(name) => json!(name),
                Literal::List(items) => Value::Array(
                    items
                        .iter()
                        .map(|value| literal_to_json(schema, value, ty, variables))
                        .collect(),
                ),
                Literal::Object(fields) => {
                    let mut object = Map::new();
                    let Some(def) = schema.get(name) else {
                        return Value::Null;
                    };
                    for field in &def.input_fields {
                        let given = fields.get(&field.name).filter(|value| {
                            !matches!(value, Literal::Variable(name) if !variables.contains_key(name))
                        });
                        if let Some(value) = given.or(field.default.as_ref()) {
                            object.insert(
                                field.name.clone(),
                                literal_to_json(schema, value, &field.ty, variables),
                            );
                        }
                    }
                    Value::Object(object)
                }
                Literal::Variable(_) | Literal::Null => unreachable!("handled above"),
            },
        },
    }
}

/// A field's arguments as JSON: the given ones (a variable without a value counts as not
/// given), else their defaults.
pub fn arguments_json(
    schema: &Schema,
    definitions: &[InputValueDef],
    given: &[(String, Literal)],
    variables: &Map<String, Value>,
) -> Map<String, Value> {
    let mut arguments = Map::new();
    for definition in definitions {
        let value = given
            .iter()
            .find(|(name, _)| *name == definition.name)
            .map(|(_, value)| value)
            .filter(
                |value| !matches!(value, Literal::Variable(name) if !variables.contains_key(name)),
            );
        if let Some(value) = value.or(definition.default.as_ref()) {
            arguments.insert(
                definition.name.clone(),
                literal_to_json(schema, value, &definition.ty, variables),
            );
        }
    }
    arguments
}
