//! The GraphQL schema the fake serves: the subset of GitHub's schema that klaud's queries reach,
//! `tests/graphql/github-subset.graphql` (extracted from `@octokit/graphql-schema`), read into
//! lookup tables. A field GitHub has but the subset leaves out does not exist here.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use graphql_parser::query::Value as Literal;
use graphql_parser::schema::{Definition, TypeDefinition};

/// The committed schema subset.
pub const GITHUB_SUBSET: &str = include_str!("../../graphql/github-subset.graphql");

/// Types that exist only for `Mutation.updateRefs`; an older GitHub Enterprise Server has none.
const UPDATE_REFS_TYPES: [&str; 3] = ["UpdateRefsInput", "RefUpdate", "UpdateRefsPayload"];

/// A type reference: `String`, `[RefUpdate!]!`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeRef {
    Named(String),
    List(Box<TypeRef>),
    NonNull(Box<TypeRef>),
}

impl TypeRef {
    pub fn from_ast<'a>(ty: &graphql_parser::query::Type<'a, String>) -> Self {
        use graphql_parser::query::Type;
        match ty {
            Type::NamedType(name) => TypeRef::Named(name.clone()),
            Type::ListType(inner) => TypeRef::List(Box::new(TypeRef::from_ast(inner))),
            Type::NonNullType(inner) => TypeRef::NonNull(Box::new(TypeRef::from_ast(inner))),
        }
    }

    /// The type without its list and non-null wrappers.
    pub fn named(&self) -> &str {
        match self {
            TypeRef::Named(name) => name,
            TypeRef::List(inner) | TypeRef::NonNull(inner) => inner.named(),
        }
    }

    pub fn is_non_null(&self) -> bool {
        matches!(self, TypeRef::NonNull(_))
    }

    /// The type with a non-null wrapper removed.
    pub fn nullable(&self) -> &TypeRef {
        match self {
            TypeRef::NonNull(inner) => inner,
            other => other,
        }
    }
}

impl std::fmt::Display for TypeRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TypeRef::Named(name) => write!(f, "{name}"),
            TypeRef::List(inner) => write!(f, "[{inner}]"),
            TypeRef::NonNull(inner) => write!(f, "{inner}!"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeKind {
    Scalar,
    Object,
    Interface,
    Union,
    Enum,
    InputObject,
}

/// An argument or an input object's field.
#[derive(Clone, Debug)]
pub struct InputValueDef {
    pub name: String,
    pub ty: TypeRef,
    pub default: Option<Literal<'static, String>>,
}

#[derive(Clone, Debug)]
pub struct FieldDef {
    pub name: String,
    pub arguments: Vec<InputValueDef>,
    pub ty: TypeRef,
}

impl FieldDef {
    pub fn argument(&self, name: &str) -> Option<&InputValueDef> {
        self.arguments.iter().find(|argument| argument.name == name)
    }
}

#[derive(Clone, Debug)]
pub struct TypeDef {
    pub name: String,
    pub kind: TypeKind,
    /// Object and interface fields.
    pub fields: Vec<FieldDef>,
    /// Interfaces an object implements.
    pub interfaces: Vec<String>,
    /// Union members.
    pub members: Vec<String>,
    pub enum_values: Vec<String>,
    pub input_fields: Vec<InputValueDef>,
}

impl TypeDef {
    fn new(name: &str, kind: TypeKind) -> Self {
        TypeDef {
            name: name.to_string(),
            kind,
            fields: Vec::new(),
            interfaces: Vec::new(),
            members: Vec::new(),
            enum_values: Vec::new(),
            input_fields: Vec::new(),
        }
    }

    pub fn field(&self, name: &str) -> Option<&FieldDef> {
        self.fields.iter().find(|field| field.name == name)
    }

    pub fn input_field(&self, name: &str) -> Option<&InputValueDef> {
        self.input_fields.iter().find(|field| field.name == name)
    }

    /// Objects, interfaces and unions: what selections are made on.
    pub fn is_composite(&self) -> bool {
        matches!(
            self.kind,
            TypeKind::Object | TypeKind::Interface | TypeKind::Union
        )
    }

    pub fn is_input(&self) -> bool {
        matches!(
            self.kind,
            TypeKind::Scalar | TypeKind::Enum | TypeKind::InputObject
        )
    }

    pub fn is_abstract(&self) -> bool {
        matches!(self.kind, TypeKind::Interface | TypeKind::Union)
    }
}

/// A schema: its types by name.
#[derive(Clone, Debug)]
pub struct Schema {
    pub types: BTreeMap<String, TypeDef>,
}

impl Schema {
    /// GitHub's schema (the subset), as github.com serves it.
    pub fn github() -> &'static Schema {
        static SCHEMA: OnceLock<Schema> = OnceLock::new();
        SCHEMA.get_or_init(|| Schema::parse(GITHUB_SUBSET).expect("the schema subset parses"))
    }

    /// GitHub's schema without `updateRefs`, as an older GitHub Enterprise Server serves it.
    pub fn github_without_update_refs() -> &'static Schema {
        static SCHEMA: OnceLock<Schema> = OnceLock::new();
        SCHEMA.get_or_init(|| {
            let mut schema = Schema::github().clone();
            for name in UPDATE_REFS_TYPES {
                schema.types.remove(name);
            }
            if let Some(mutation) = schema.types.get_mut("Mutation") {
                mutation.fields.retain(|field| field.name != "updateRefs");
            }
            schema
        })
    }

    /// Reads a schema document (SDL).
    pub fn parse(text: &str) -> Result<Schema, String> {
        let document = graphql_parser::parse_schema::<String>(text)
            .map_err(|error| error.to_string())?
            .into_static();
        let mut types = BTreeMap::new();
        for name in ["String", "Int", "Float", "Boolean", "ID"] {
            types.insert(name.to_string(), TypeDef::new(name, TypeKind::Scalar));
        }
        let input_value =
            |value: &graphql_parser::schema::InputValue<'static, String>| InputValueDef {
                name: value.name.clone(),
                ty: TypeRef::from_ast(&value.value_type),
                default: value.default_value.as_ref().map(Literal::into_static),
            };
        let field = |field: &graphql_parser::schema::Field<'static, String>| FieldDef {
            name: field.name.clone(),
            arguments: field.arguments.iter().map(input_value).collect(),
            ty: TypeRef::from_ast(&field.field_type),
        };
        for definition in &document.definitions {
            let Definition::TypeDefinition(definition) = definition else {
                return Err("only type definitions are expected".into());
            };
            let def = match definition {
                TypeDefinition::Scalar(scalar) => TypeDef::new(&scalar.name, TypeKind::Scalar),
                TypeDefinition::Object(object) => TypeDef {
                    fields: object.fields.iter().map(field).collect(),
                    interfaces: object.implements_interfaces.clone(),
                    ..TypeDef::new(&object.name, TypeKind::Object)
                },
                TypeDefinition::Interface(interface) => TypeDef {
                    fields: interface.fields.iter().map(field).collect(),
                    ..TypeDef::new(&interface.name, TypeKind::Interface)
                },
                TypeDefinition::Union(union) => TypeDef {
                    members: union.types.clone(),
                    ..TypeDef::new(&union.name, TypeKind::Union)
                },
                TypeDefinition::Enum(enumeration) => TypeDef {
                    enum_values: enumeration
                        .values
                        .iter()
                        .map(|value| value.name.clone())
                        .collect(),
                    ..TypeDef::new(&enumeration.name, TypeKind::Enum)
                },
                TypeDefinition::InputObject(input) => TypeDef {
                    input_fields: input.fields.iter().map(input_value).collect(),
                    ..TypeDef::new(&input.name, TypeKind::InputObject)
                },
            };
            types.insert(def.name.clone(), def);
        }
        let schema = Schema { types };
        schema.check()?;
        Ok(schema)
    }

    /// Every referenced type is defined.
    fn check(&self) -> Result<(), String> {
        let defined = |name: &str, at: &str| {
            if self.types.contains_key(name) {
                Ok(())
            } else {
                Err(format!("{at} refers to the undefined type {name}"))
            }
        };
        for def in self.types.values() {
            for field in &def.fields {
                let at = format!("{}.{}", def.name, field.name);
                defined(field.ty.named(), &at)?;
                for argument in &field.arguments {
                    defined(argument.ty.named(), &at)?;
                }
            }
            for name in def.interfaces.iter().chain(&def.members) {
                defined(name, &def.name)?;
            }
            for field in &def.input_fields {
                defined(field.ty.named(), &def.name)?;
            }
        }
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&TypeDef> {
        self.types.get(name)
    }

    /// A field of an object or interface type.
    pub fn field(&self, type_name: &str, field: &str) -> Option<&FieldDef> {
        self.get(type_name)?.field(field)
    }

    /// The object types a value of `type_name` can be.
    pub fn possible_types(&self, type_name: &str) -> Vec<&str> {
        let Some(def) = self.get(type_name) else {
            return Vec::new();
        };
        match def.kind {
            TypeKind::Object => vec![def.name.as_str()],
            TypeKind::Union => def.members.iter().map(String::as_str).collect(),
            TypeKind::Interface => self
                .types
                .values()
                .filter(|candidate| {
                    candidate.kind == TypeKind::Object
                        && candidate.interfaces.iter().any(|name| name == type_name)
                })
                .map(|candidate| candidate.name.as_str())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Whether an object of type `object` is a `condition` (itself, an interface it
    /// implements, or a union it belongs to).
    pub fn applies(&self, condition: &str, object: &str) -> bool {
        self.possible_types(condition).contains(&object)
    }

    /// Whether a fragment on `fragment_type` can apply inside a selection on `parent_type`.
    pub fn can_spread(&self, fragment_type: &str, parent_type: &str) -> bool {
        let parent = self.possible_types(parent_type);
        self.possible_types(fragment_type)
            .iter()
            .any(|name| parent.contains(name))
    }
}
