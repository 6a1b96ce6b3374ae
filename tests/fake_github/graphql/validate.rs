//! Static validation of a whole query document against a schema, before anything runs. The
//! messages and `extensions` follow GitHub's (graphql-ruby's) wording.

use std::collections::{BTreeMap, BTreeSet};

use graphql_parser::Pos;
use graphql_parser::query::{
    Definition, Directive, FragmentDefinition, OperationDefinition, Selection, SelectionSet,
    TypeCondition, VariableDefinition,
};
use serde_json::{Value, json};

use super::schema::{FieldDef, InputValueDef, Schema, TypeKind, TypeRef};
use super::values::{Literal, LiteralMismatch, VariableUse, check_literal, literal_text};
use super::{Document, GraphqlError, OperationParts};

type Set = SelectionSet<'static, String>;
type Fragment = FragmentDefinition<'static, String>;

/// Every problem of `document` against `schema`, in document order; empty when it is valid.
pub fn validate(schema: &Schema, document: &Document) -> Vec<GraphqlError> {
    let fragments: BTreeMap<&str, &Fragment> = document
        .definitions
        .iter()
        .filter_map(|definition| match definition {
            Definition::Fragment(fragment) => Some((fragment.name.as_str(), fragment)),
            Definition::Operation(_) => None,
        })
        .collect();
    let mut validator = Validator {
        schema,
        fragments,
        errors: Vec::new(),
        spread: BTreeSet::new(),
    };
    let operations = document
        .definitions
        .iter()
        .filter(|definition| matches!(definition, Definition::Operation(_)))
        .count();
    for definition in &document.definitions {
        match definition {
            Definition::Operation(operation) => {
                if operations > 1 && operation_name(operation).is_none() {
                    validator.errors.push(
                        GraphqlError::new(
                            "This anonymous operation must be the only defined operation.",
                        )
                        .extensions(json!({"code": "loneAnonymousOperation"})),
                    );
                }
                validator.operation(operation);
            }
            Definition::Fragment(fragment) => validator.fragment_definition(fragment),
        }
    }
    for definition in &document.definitions {
        if let Definition::Fragment(fragment) = definition
            && !validator.spread.contains(fragment.name.as_str())
        {
            validator.errors.push(
                GraphqlError::new(format!(
                    "Fragment {} was defined, but not used",
                    fragment.name
                ))
                .at(fragment.position)
                .path(vec![json!(format!("fragment {}", fragment.name))])
                .extensions(json!({"code": "useAndDefineFragment", "fragmentName": fragment.name})),
            );
        }
    }
    validator.errors
}

pub fn operation_name<'d>(operation: &'d OperationDefinition<'static, String>) -> Option<&'d str> {
    OperationParts::of(operation).name
}

/// A variable used somewhere in an operation, with where it stands.
struct Use {
    variable: VariableUse,
    argument: String,
    position: Pos,
}

struct Validator<'s, 'd> {
    schema: &'s Schema,
    fragments: BTreeMap<&'d str, &'d Fragment>,
    errors: Vec<GraphqlError>,
    /// Fragments spread anywhere.
    spread: BTreeSet<String>,
}

/// What a walk of a selection set reports: every problem (an operation, a fragment's own
/// definition), or only the variables it uses (a fragment spread into an operation, whose own
/// problems are reported once, at its definition).
struct Walk<'a> {
    report: bool,
    uses: &'a mut Vec<Use>,
    /// Variables written in the arguments of fields that do not exist: used, of no known type.
    mentioned: Vec<String>,
    /// Fragments entered on the way here, against loops.
    entered: Vec<String>,
}

impl<'s, 'd> Validator<'s, 'd> {
    fn error(&mut self, walk: &Walk, error: GraphqlError) {
        if walk.report {
            self.errors.push(error);
        }
    }

    fn operation(&mut self, operation: &'d OperationDefinition<'static, String>) {
        let OperationParts {
            kind,
            name,
            variables: definitions,
            directives,
            selection_set: set,
            position,
        } = OperationParts::of(operation);
        let root_path = match name {
            Some(name) => format!("{kind} {name}"),
            None => kind.to_string(),
        };
        let described = match name {
            Some(name) => name.to_string(),
            None => format!("anonymous {kind}"),
        };
        let root = match kind {
            "query" => "Query",
            "mutation" => "Mutation",
            _ => "Subscription",
        };
        if self.schema.get(root).is_none() {
            self.errors.push(
                GraphqlError::new(format!("Schema is not configured for {kind}s"))
                    .at(position)
                    .path(vec![json!(root_path)])
                    .extensions(json!({"code": format!("missing{}Configuration", root)})),
            );
            return;
        }
        for definition in definitions {
            self.variable_definition(definition, &root_path);
        }
        let mut uses = Vec::new();
        let mut walk = Walk {
            report: true,
            uses: &mut uses,
            mentioned: Vec::new(),
            entered: Vec::new(),
        };
        self.directives(directives, &mut walk, &[json!(root_path)]);
        self.selection_set(root, set, &mut vec![json!(root_path)], &mut walk);
        let mentioned = std::mem::take(&mut walk.mentioned);
        let declared: BTreeMap<&str, &VariableDefinition<'static, String>> = definitions
            .iter()
            .map(|definition| (definition.name.as_str(), definition))
            .collect();
        let mut used: BTreeSet<String> = mentioned.into_iter().collect();
        for usage in &uses {
            let name = usage.variable.name.as_str();
            used.insert(name.to_string());
            let Some(definition) = declared.get(name) else {
                self.errors.push(
                    GraphqlError::new(format!(
                        "Variable ${name} is used by {described} but not declared"
                    ))
                    .at(usage.position)
                    .path(vec![json!(root_path)])
                    .extensions(json!({"code": "variableNotDefined", "variableName": name})),
                );
                continue;
            };
            let declared_type = TypeRef::from_ast(&definition.var_type);
            if let Some(mismatch) = variable_mismatch(
                &declared_type,
                definition.default_value.is_some(),
                &usage.variable,
            ) {
                self.errors.push(
                    GraphqlError::new(format!(
                        "{mismatch} on variable ${name} and argument {} ({declared_type} / {})",
                        usage.argument, usage.variable.expected
                    ))
                    .at(usage.position)
                    .path(vec![json!(root_path)])
                    .extensions(json!({
                        "code": "variableMismatch",
                        "variableName": name,
                        "typeName": declared_type.to_string(),
                        "argumentName": usage.argument,
                        "errorMessage": mismatch,
                    })),
                );
            }
        }
        for definition in definitions {
            if !used.contains(&definition.name) {
                self.errors.push(
                    GraphqlError::new(format!(
                        "Variable ${} is declared by {described} but not used",
                        definition.name
                    ))
                    .at(definition.position)
                    .path(vec![json!(root_path)])
                    .extensions(
                        json!({"code": "variableNotUsed", "variableName": definition.name}),
                    ),
                );
            }
        }
    }

    fn variable_definition(
        &mut self,
        definition: &VariableDefinition<'static, String>,
        root_path: &str,
    ) {
        let ty = TypeRef::from_ast(&definition.var_type);
        let is_input = self
            .schema
            .get(ty.named())
            .is_some_and(|def| def.is_input());
        if !is_input {
            self.errors.push(
                GraphqlError::new(format!(
                    "{} isn't a defined input type (on ${})",
                    ty.named(),
                    definition.name
                ))
                .at(definition.position)
                .path(vec![json!(root_path)])
                .extensions(json!({
                    "code": "variableRequiresValidType",
                    "typeName": ty.named(),
                    "variableName": definition.name,
                })),
            );
            return;
        }
        if let Some(default) = &definition.default_value {
            let mut uses = Vec::new();
            let fits = check_literal(self.schema, default, &ty, false, &mut uses).is_ok();
            if !fits || !uses.is_empty() {
                self.errors.push(
                    GraphqlError::new(format!(
                        "Default value for ${} doesn't match type {ty}",
                        definition.name
                    ))
                    .at(definition.position)
                    .path(vec![json!(root_path)])
                    .extensions(json!({
                        "code": "defaultValueInvalidType",
                        "variableName": definition.name,
                        "typeName": ty.to_string(),
                    })),
                );
            }
        }
    }

    fn fragment_definition(&mut self, fragment: &'d Fragment) {
        let TypeCondition::On(type_name) = &fragment.type_condition;
        let path = vec![json!(format!("fragment {}", fragment.name))];
        let mut uses = Vec::new();
        let mut walk = Walk {
            report: true,
            uses: &mut uses,
            mentioned: Vec::new(),
            entered: vec![fragment.name.clone()],
        };
        if !self.fragment_type_ok(type_name, fragment.position, &path, &mut walk) {
            return;
        }
        self.directives(&fragment.directives, &mut walk, &path);
        self.selection_set(
            type_name,
            &fragment.selection_set,
            &mut path.clone(),
            &mut walk,
        );
    }

    /// The type condition names a composite type.
    fn fragment_type_ok(
        &mut self,
        type_name: &str,
        position: Pos,
        path: &[Value],
        walk: &mut Walk,
    ) -> bool {
        match self.schema.get(type_name) {
            None => {
                self.error(
                    walk,
                    GraphqlError::new(format!(
                        "No such type {type_name}, so it can't be a fragment condition"
                    ))
                    .at(position)
                    .path(path.to_vec())
                    .extensions(json!({"code": "undefinedType", "typeName": type_name})),
                );
                false
            }
            Some(def) if !def.is_composite() => {
                self.error(
                    walk,
                    GraphqlError::new(format!(
                        "Invalid fragment on type {type_name} (must be Union, Interface or Object)"
                    ))
                    .at(position)
                    .path(path.to_vec())
                    .extensions(
                        json!({"code": "fragmentOnNonCompositeType", "typeName": type_name}),
                    ),
                );
                false
            }
            Some(_) => true,
        }
    }

    fn selection_set(
        &mut self,
        parent: &str,
        set: &'d Set,
        path: &mut Vec<Value>,
        walk: &mut Walk,
    ) {
        for selection in &set.items {
            match selection {
                Selection::Field(field) => {
                    let key = field.alias.as_ref().unwrap_or(&field.name);
                    path.push(json!(key));
                    self.field(parent, field, path, walk);
                    path.pop();
                }
                Selection::InlineFragment(fragment) => {
                    let condition = match &fragment.type_condition {
                        Some(TypeCondition::On(name)) => name.as_str(),
                        None => parent,
                    };
                    path.push(json!(format!("... on {condition}")));
                    if self.fragment_type_ok(condition, fragment.position, path, walk) {
                        if !self.schema.can_spread(condition, parent) {
                            self.error(
                                walk,
                                GraphqlError::new(format!(
                                    "Fragment on {condition} can't be spread inside {parent}"
                                ))
                                .at(fragment.position)
                                .path(path.clone())
                                .extensions(json!({
                                    "code": "cantSpreadFragment",
                                    "fragmentName": "unknown",
                                    "typeName": condition,
                                    "parentName": parent,
                                })),
                            );
                        } else {
                            self.directives(&fragment.directives, walk, path);
                            self.selection_set(condition, &fragment.selection_set, path, walk);
                        }
                    }
                    path.pop();
                }
                Selection::FragmentSpread(spread) => {
                    let name = spread.fragment_name.as_str();
                    self.spread.insert(name.to_string());
                    self.directives(&spread.directives, walk, path);
                    let Some(fragment) = self.fragments.get(name).copied() else {
                        self.error(
                            walk,
                            GraphqlError::new(format!("Fragment {name} was used, but not defined"))
                                .at(spread.position)
                                .path(path.clone())
                                .extensions(
                                    json!({"code": "useAndDefineFragment", "fragmentName": name}),
                                ),
                        );
                        continue;
                    };
                    if walk.entered.iter().any(|entered| entered == name) {
                        self.error(
                            walk,
                            GraphqlError::new(format!("Fragment {name} contains an infinite loop"))
                                .at(spread.position)
                                .path(path.clone())
                                .extensions(json!({"code": "infiniteLoop", "fragmentName": name})),
                        );
                        continue;
                    }
                    let TypeCondition::On(condition) = &fragment.type_condition;
                    if self
                        .schema
                        .get(condition)
                        .is_some_and(|def| def.is_composite())
                        && !self.schema.can_spread(condition, parent)
                    {
                        self.error(
                            walk,
                            GraphqlError::new(format!(
                                "Fragment {name} on {condition} can't be spread inside {parent}"
                            ))
                            .at(spread.position)
                            .path(path.clone())
                            .extensions(json!({
                                "code": "cantSpreadFragment",
                                "fragmentName": name,
                                "typeName": condition,
                                "parentName": parent,
                            })),
                        );
                        continue;
                    }
                    if self.schema.get(condition).is_none() {
                        continue;
                    }
                    // The fragment's own problems are reported at its definition; here only
                    // the variables it uses count, for this operation.
                    let report = walk.report;
                    walk.report = false;
                    walk.entered.push(name.to_string());
                    self.selection_set(condition, &fragment.selection_set, path, walk);
                    walk.entered.pop();
                    walk.report = report;
                }
            }
        }
    }

    fn field(
        &mut self,
        parent: &str,
        field: &'d graphql_parser::query::Field<'static, String>,
        path: &mut Vec<Value>,
        walk: &mut Walk,
    ) {
        let Some(parent_def) = self.schema.get(parent) else {
            return;
        };
        self.directives(&field.directives, walk, path);
        if field.name == "__typename" {
            let typename = FieldDef {
                name: "__typename".into(),
                arguments: Vec::new(),
                ty: TypeRef::NonNull(Box::new(TypeRef::Named("String".into()))),
            };
            self.arguments(&typename, field, path, walk);
            self.selections_fit(&typename, field, path, walk);
            return;
        }
        if parent_def.kind == TypeKind::Union {
            self.error(
                walk,
                GraphqlError::new(format!(
                    "Selections can't be made directly on unions (see selections on {parent})"
                ))
                .at(field.position)
                .path(path.clone())
                .extensions(json!({"code": "selectionMismatch", "nodeName": parent})),
            );
            return;
        }
        let Some(definition) = parent_def.field(&field.name) else {
            for (_, value) in &field.arguments {
                variables_in(value, &mut walk.mentioned);
            }
            self.error(
                walk,
                GraphqlError::new(format!(
                    "Field '{}' doesn't exist on type '{parent}'",
                    field.name
                ))
                .at(field.position)
                .path(path.clone())
                .extensions(json!({
                    "code": "undefinedField",
                    "typeName": parent,
                    "fieldName": field.name,
                })),
            );
            return;
        };
        self.arguments(definition, field, path, walk);
        if self.selections_fit(definition, field, path, walk) {
            let named = definition.ty.named().to_string();
            if self
                .schema
                .get(&named)
                .is_some_and(|def| def.is_composite())
            {
                self.selection_set(&named, &field.selection_set, path, walk);
            }
        }
    }

    /// Leaves have no selection, objects have one. `true` when the selection may be walked.
    fn selections_fit(
        &mut self,
        definition: &FieldDef,
        field: &graphql_parser::query::Field<'static, String>,
        path: &[Value],
        walk: &mut Walk,
    ) -> bool {
        let named = definition.ty.named();
        let Some(def) = self.schema.get(named) else {
            return false;
        };
        let has_selection = !field.selection_set.items.is_empty();
        if def.is_composite() && !has_selection {
            self.error(
                walk,
                GraphqlError::new(format!(
                    "Field must have selections (field '{}' returns {} but has no selections. Did you mean '{} {{ ... }}'?)",
                    field.name, definition.ty, field.name
                ))
                .at(field.position)
                .path(path.to_vec())
                .extensions(json!({"code": "selectionMismatch", "nodeName": format!("field '{}'", field.name), "typeName": named})),
            );
            return false;
        }
        if !def.is_composite() && has_selection {
            let kind = if def.kind == TypeKind::Enum {
                "enums"
            } else {
                "scalars"
            };
            let selected: Vec<String> = field
                .selection_set
                .items
                .iter()
                .map(|selection| match selection {
                    Selection::Field(field) => field.name.clone(),
                    Selection::FragmentSpread(spread) => format!("...{}", spread.fragment_name),
                    Selection::InlineFragment(_) => "...".into(),
                })
                .collect();
            self.error(
                walk,
                GraphqlError::new(format!(
                    "Selections can't be made on {kind} (field '{}' returns {} but has selections [{}])",
                    field.name,
                    definition.ty,
                    selected.join(", ")
                ))
                .at(field.position)
                .path(path.to_vec())
                .extensions(json!({"code": "selectionMismatch", "nodeName": format!("field '{}'", field.name), "typeName": named})),
            );
            return false;
        }
        true
    }

    fn arguments(
        &mut self,
        definition: &FieldDef,
        field: &graphql_parser::query::Field<'static, String>,
        path: &mut Vec<Value>,
        walk: &mut Walk,
    ) {
        self.argument_list(
            "Field",
            &field.name,
            &definition.arguments,
            &field.arguments,
            field.position,
            path,
            walk,
        );
    }

    /// Arguments of a field or directive (`owner` is `Field` or `Directive`).
    #[allow(clippy::too_many_arguments)]
    fn argument_list(
        &mut self,
        owner: &str,
        name: &str,
        definitions: &[InputValueDef],
        given: &[(String, Literal)],
        position: Pos,
        path: &mut Vec<Value>,
        walk: &mut Walk,
    ) {
        for (argument, value) in given {
            path.push(json!(argument));
            let Some(definition) = definitions.iter().find(|def| def.name == *argument) else {
                self.error(
                    walk,
                    GraphqlError::new(format!(
                        "{owner} '{name}' doesn't accept argument '{argument}'"
                    ))
                    .at(position)
                    .path(path.clone())
                    .extensions(json!({
                        "code": "argumentNotAccepted",
                        "name": name,
                        "typeName": owner,
                        "argumentName": argument,
                    })),
                );
                path.pop();
                continue;
            };
            let mut uses = Vec::new();
            let checked = check_literal(
                self.schema,
                value,
                &definition.ty,
                definition.default.is_some(),
                &mut uses,
            );
            walk.uses.extend(uses.into_iter().map(|variable| Use {
                variable,
                argument: argument.clone(),
                position,
            }));
            if let Err(mismatch) = checked {
                let error = match mismatch {
                    LiteralMismatch::Invalid => GraphqlError::new(format!(
                        "Argument '{argument}' on {owner} '{name}' has an invalid value ({}). Expected type '{}'.",
                        literal_text(value),
                        definition.ty
                    ))
                    .extensions(json!({
                        "code": "argumentLiteralsIncompatible",
                        "typeName": owner,
                        "argumentName": argument,
                    })),
                    LiteralMismatch::InvalidField {
                        input_object,
                        field,
                        expected,
                        value,
                    } => GraphqlError::new(format!(
                        "Argument '{field}' on InputObject '{input_object}' has an invalid value ({value}). Expected type '{expected}'."
                    ))
                    .extensions(json!({
                        "code": "argumentLiteralsIncompatible",
                        "typeName": "InputObject",
                        "argumentName": field,
                    })),
                    LiteralMismatch::MissingField {
                        input_object,
                        field,
                        expected,
                    } => GraphqlError::new(format!(
                        "Argument '{field}' on InputObject '{input_object}' is required. Expected type {expected}"
                    ))
                    .extensions(json!({
                        "code": "missingRequiredInputObjectAttribute",
                        "argumentName": field,
                        "argumentType": expected,
                        "inputObjectType": input_object,
                    })),
                    LiteralMismatch::UnknownField {
                        input_object,
                        field,
                    } => GraphqlError::new(format!(
                        "InputObject '{input_object}' doesn't accept argument '{field}'"
                    ))
                    .extensions(json!({
                        "code": "argumentNotAccepted",
                        "name": input_object,
                        "typeName": "InputObject",
                        "argumentName": field,
                    })),
                };
                self.error(walk, error.at(position).path(path.clone()));
            }
            path.pop();
        }
        let missing: Vec<&str> = definitions
            .iter()
            .filter(|definition| definition.ty.is_non_null() && definition.default.is_none())
            .filter(|definition| !given.iter().any(|(name, _)| *name == definition.name))
            .map(|definition| definition.name.as_str())
            .collect();
        if !missing.is_empty() {
            self.error(
                walk,
                GraphqlError::new(format!(
                    "{owner} '{name}' is missing required arguments: {}",
                    missing.join(", ")
                ))
                .at(position)
                .path(path.clone())
                .extensions(json!({
                    "code": "missingRequiredArguments",
                    "className": owner,
                    "name": name,
                    "arguments": missing.join(", "),
                })),
            );
        }
    }

    /// `@skip(if:)` and `@include(if:)`, the directives GraphQL defines for queries.
    fn directives(
        &mut self,
        directives: &[Directive<'static, String>],
        walk: &mut Walk,
        path: &[Value],
    ) {
        for directive in directives {
            if directive.name != "skip" && directive.name != "include" {
                self.error(
                    walk,
                    GraphqlError::new(format!("Directive @{} is not defined", directive.name))
                        .at(directive.position)
                        .path(path.to_vec())
                        .extensions(
                            json!({"code": "undefinedDirective", "directiveName": directive.name}),
                        ),
                );
                continue;
            }
            let condition = [InputValueDef {
                name: "if".into(),
                ty: TypeRef::NonNull(Box::new(TypeRef::Named("Boolean".into()))),
                default: None,
            }];
            self.argument_list(
                "Directive",
                &directive.name,
                &condition,
                &directive.arguments,
                directive.position,
                &mut path.to_vec(),
                walk,
            );
        }
    }
}

/// The variables written anywhere in `value`.
fn variables_in(value: &Literal, out: &mut Vec<String>) {
    match value {
        Literal::Variable(name) => out.push(name.clone()),
        Literal::List(items) => items.iter().for_each(|item| variables_in(item, out)),
        Literal::Object(fields) => fields.values().for_each(|item| variables_in(item, out)),
        _ => {}
    }
}

/// Why a variable of `declared` type (with a default value or not) cannot stand where `usage`
/// expects its type: `Nullability mismatch`, `List dimension mismatch` or `Type mismatch`.
fn variable_mismatch(
    declared: &TypeRef,
    declared_default: bool,
    usage: &VariableUse,
) -> Option<&'static str> {
    let expected = &usage.expected;
    let (variable, location) = if expected.is_non_null()
        && !declared.is_non_null()
        && (declared_default || usage.place_has_default)
    {
        (declared, expected.nullable())
    } else {
        (declared, expected)
    };
    if compatible(variable, location) {
        return None;
    }
    Some(if variable.named() != location.named() {
        "Type mismatch"
    } else if depth(variable) != depth(location) {
        "List dimension mismatch"
    } else {
        "Nullability mismatch"
    })
}

fn compatible(variable: &TypeRef, location: &TypeRef) -> bool {
    match (variable, location) {
        (TypeRef::NonNull(variable), TypeRef::NonNull(location)) => compatible(variable, location),
        (_, TypeRef::NonNull(_)) => false,
        (TypeRef::NonNull(variable), location) => compatible(variable, location),
        (TypeRef::List(variable), TypeRef::List(location)) => compatible(variable, location),
        (_, TypeRef::List(_)) | (TypeRef::List(_), _) => false,
        (TypeRef::Named(variable), TypeRef::Named(location)) => variable == location,
    }
}

fn depth(ty: &TypeRef) -> usize {
    match ty {
        TypeRef::Named(_) => 0,
        TypeRef::NonNull(inner) => depth(inner),
        TypeRef::List(inner) => 1 + depth(inner),
    }
}
