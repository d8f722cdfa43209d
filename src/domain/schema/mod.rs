//! JSON schemas as crews use them (tool parameters, task output schemas). This module owns three
//! things:
//!
//! - `check_schema`, the check of a submitted schema (a crew's spec, at kickoff or when a crew is
//!   stored): our own structural checks of the keywords the engine and the providers rely on,
//!   each error with the path of its field; a nesting limit; then the schema must compile with
//!   the `jsonschema` crate (which validates it against its draft's meta-schema, compiles its
//!   `pattern`s and resolves its references). Unknown keywords are allowed, as JSON Schema allows
//!   them.
//! - [`CompiledSchema`], a schema compiled once, where a run sets up its tools and tasks, and
//!   then used for every tool call and every final answer.
//! - The messages of [`CompiledSchema::validate`]: every violation of tool-call arguments or a
//!   task output an LLM produced, worded for the model to act on and prefixed with the instance
//!   path (`$.items[2].sku: expected string, got number`).
//!
//! Validation is the `jsonschema` crate's, so every keyword of the schema's draft (2020-12 unless
//! `$schema` names another) is enforced, `pattern`, `format` and `$ref` included. `format` is
//! asserted (`email`, `date-time`, `uri`, `uuid`, …; unknown formats are ignored, and so are
//! `idn-email` and `idn-hostname`, which need a feature left off). References resolve inside the
//! schema only (`#/$defs/...`, `#/definitions/...`, an embedded `$id`): nothing is fetched, and a
//! remote `$ref` is an error when the schema is checked.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::Location;
use jsonschema::{ReferencingError, ValidationError, Validator};
use serde_json::{Number, Value};

use super::field::FieldError;

const TYPES: [&str; 7] = ["object", "array", "string", "number", "integer", "boolean", "null"];

/// Check `schema` found at `path`, pushing one error per malformed keyword; a schema that passes
/// our checks must also compile (see [`CompiledSchema::compile`]), or its compile error is pushed.
pub fn check_schema(schema: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let before = errors.len();
    check_keywords(schema, path, errors);
    if errors.len() > before {
        return;
    }
    if let Err(error) = CompiledSchema::compile(schema) {
        errors.push(FieldError::new(format!("{path}{}", error.field), error.message));
    }
}

fn check_keywords(schema: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let Some(object) = schema.as_object() else {
        errors.push(FieldError::new(path, "must be a JSON schema object"));
        return;
    };
    if let Some(ty) = object.get("type") {
        check_type(ty, &format!("{path}.type"), errors);
    }
    if let Some(properties) = object.get("properties") {
        match properties.as_object() {
            Some(properties) => {
                for (name, sub) in properties {
                    check_keywords(sub, &format!("{path}.properties.{name}"), errors);
                }
            }
            None => errors.push(FieldError::new(format!("{path}.properties"), "must be an object")),
        }
    }
    if let Some(required) = object.get("required") {
        check_required(required, object.get("properties"), &format!("{path}.required"), errors);
    }
    if let Some(items) = object.get("items") {
        if !items.is_boolean() {
            check_keywords(items, &format!("{path}.items"), errors);
        }
    }
    if let Some(additional) = object.get("additionalProperties") {
        if !additional.is_boolean() {
            check_keywords(additional, &format!("{path}.additionalProperties"), errors);
        }
    }
    if let Some(values) = object.get("enum") {
        if values.as_array().is_none_or(|v| v.is_empty()) {
            errors.push(FieldError::new(format!("{path}.enum"), "must be a non-empty array"));
        }
    }
    for keyword in ["anyOf", "oneOf", "allOf"] {
        if let Some(list) = object.get(keyword) {
            match list.as_array().filter(|l| !l.is_empty()) {
                Some(list) => {
                    for (i, sub) in list.iter().enumerate() {
                        check_keywords(sub, &format!("{path}.{keyword}[{i}]"), errors);
                    }
                }
                None => errors.push(FieldError::new(
                    format!("{path}.{keyword}"),
                    "must be a non-empty array of schemas",
                )),
            }
        }
    }
}

/// The `"type"` of a schema, when it names exactly one.
pub fn schema_type(schema: &Value) -> Option<&str> {
    schema.get("type").and_then(Value::as_str)
}

fn check_type(ty: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let valid = match ty {
        Value::String(name) => TYPES.contains(&name.as_str()),
        Value::Array(names) => {
            !names.is_empty() && names.iter().all(|n| n.as_str().is_some_and(|n| TYPES.contains(&n)))
        }
        _ => false,
    };
    if !valid {
        errors.push(FieldError::new(
            path,
            format!("must be one of {} (or an array of them)", TYPES.join(", ")),
        ));
    }
}

fn check_required(required: &Value, properties: Option<&Value>, path: &str, errors: &mut Vec<FieldError>) {
    let Some(names) = required.as_array() else {
        errors.push(FieldError::new(path, "must be an array of property names"));
        return;
    };
    for (i, name) in names.iter().enumerate() {
        match name.as_str() {
            None => errors.push(FieldError::new(format!("{path}[{i}]"), "must be a string")),
            Some(name) => {
                let declared = properties.and_then(Value::as_object).is_none_or(|p| p.contains_key(name));
                if !declared {
                    errors.push(FieldError::new(
                        format!("{path}[{i}]"),
                        format!("'{name}' is required but not declared in properties"),
                    ));
                }
            }
        }
    }
}

/// How deeply subschemas may nest (through `properties`, `items`, `allOf`, `$defs` and the other
/// keywords that hold schemas), and, for schemas with references (which may recurse), how deeply
/// an instance may nest; past it a schema does not compile, or an instance is not validated.
pub const MAX_VALIDATION_DEPTH: usize = 64;

/// Most errors of one failed `anyOf`/`oneOf` alternative quoted in the message about it.
const ERRORS_PER_ALTERNATIVE: usize = 3;
/// Most `enum` values listed in a message.
const ENUM_VALUES_LISTED: usize = 20;
/// Most duplicates named in a `uniqueItems` message.
const DUPLICATES_LISTED: usize = 5;

/// Why a schema does not compile: the field (a path below the schema's own, like
/// `.properties.id.pattern`, empty for the schema itself) and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    pub field: String,
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field.as_str() {
            "" => write!(f, "{}", self.message),
            field => write!(f, "at {}: {}", field.trim_start_matches('.'), self.message),
        }
    }
}

/// A schema compiled for validation, with the schema itself (for prompts and messages). Clones
/// share the compiled form.
#[derive(Clone)]
pub struct CompiledSchema(Arc<Compiled>);

struct Compiled {
    schema: Value,
    validator: Validator,
    /// The schema uses references, so validation may recurse as deep as the instance does.
    references: bool,
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CompiledSchema").field(&self.0.schema).finish()
    }
}

impl CompiledSchema {
    /// Compile `schema`: it must nest at most [`MAX_VALIDATION_DEPTH`] levels, be valid against
    /// its draft's meta-schema, and reference nothing outside itself (no retrieval: over the
    /// network, from files or otherwise). Formats are asserted, not just annotations.
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        if let Some(field) = too_deep(schema) {
            let message =
                format!("subschemas are nested too deeply (more than {MAX_VALIDATION_DEPTH} levels)");
            return Err(SchemaError { field, message });
        }
        let validator = jsonschema::options()
            .offline()
            .should_validate_formats(true)
            .build(schema)
            .map_err(|error| compile_error(schema, &error))?;
        let references = uses_references(schema);
        Ok(Self(Arc::new(Compiled { schema: schema.clone(), validator, references })))
    }

    /// The schema as it was given.
    pub fn schema(&self) -> &Value {
        &self.0.schema
    }

    /// Every violation of `instance`, each prefixed with the JSON path of the instance location
    /// (`$.items[2].sku: expected string, got number`); empty when the instance is valid.
    pub fn validate(&self, instance: &Value) -> Vec<String> {
        self.violations(instance).into_iter().map(|(path, message)| format!("{path}: {message}")).collect()
    }

    /// Every violation of `instance` as its JSON path (`$.items[2].sku`) and what is wrong there,
    /// in document order (errors at one location in the order the validator found them).
    pub fn violations(&self, instance: &Value) -> Vec<(String, String)> {
        if self.0.references {
            if let Some(path) = deeper_than(instance, MAX_VALIDATION_DEPTH) {
                let message =
                    format!("nested too deeply to validate (more than {MAX_VALIDATION_DEPTH} levels)");
                return vec![(path, message)];
            }
        }
        let mut errors: Vec<(Vec<Step>, String, String)> = self
            .0
            .validator
            .iter_errors(instance)
            .flat_map(|error| describe(Some(&self.0.schema), instance, &error))
            .collect();
        errors.sort_by(|a, b| a.0.cmp(&b.0));
        errors.into_iter().map(|(_, path, message)| (path, message)).collect()
    }

    /// Whether two handles share one compiled schema.
    #[cfg(test)]
    pub(crate) fn same_as(&self, other: &CompiledSchema) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// One step of an instance location, in the order errors are reported.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Index(usize),
    Property(String),
}

/// The steps of a JSON pointer into `root`: a segment is an index where the value there is an
/// array, a property name otherwise (the empty name included).
fn pointer_steps(root: &Value, location: &Location) -> Vec<Step> {
    let pointer = location.as_str();
    let mut steps = Vec::new();
    let mut current = Some(root);
    for segment in pointer.split('/').skip(1) {
        let name = segment.replace("~1", "/").replace("~0", "~");
        let step = match (current, name.parse::<usize>()) {
            (Some(Value::Array(items)), Ok(i)) => {
                current = items.get(i);
                Step::Index(i)
            }
            (value, _) => {
                current = value.and_then(|v| v.get(&name));
                Step::Property(name)
            }
        };
        steps.push(step);
    }
    steps
}

/// The steps of an instance location, and its path (`$.a[2]["b c"]`).
fn instance_steps(root: &Value, location: &Location) -> (Vec<Step>, String) {
    let steps = pointer_steps(root, location);
    let path = steps.iter().fold(String::from("$"), |path, step| match step {
        Step::Index(i) => index_path(&path, *i),
        Step::Property(name) => property_path(&path, name),
    });
    (steps, path)
}

/// The field below a schema that a location in it names: `.properties.id`, `.anyOf[0]`.
fn schema_field(schema: &Value, location: &Location) -> String {
    pointer_steps(schema, location)
        .iter()
        .map(|step| match step {
            Step::Index(i) => format!("[{i}]"),
            Step::Property(name) => format!(".{name}"),
        })
        .collect()
}

/// A compile error as a field error: the meta-schema's complaint at the keyword it is about, or
/// an unresolvable reference at its `$ref`.
fn compile_error(schema: &Value, error: &ValidationError) -> SchemaError {
    if let ValidationErrorKind::Referencing(reference) = error.kind() {
        return reference_error(schema, reference);
    }
    // The meta-schema's errors are about the schema as an instance.
    let field = schema_field(schema, error.instance_path());
    let message = message_of(None, schema, error).unwrap_or_else(|| error.to_string());
    SchemaError { field, message }
}

fn reference_error(schema: &Value, error: &ReferencingError) -> SchemaError {
    let inside = "only references inside the schema (like \"#/$defs/name\") are resolved";
    let (named, message) = match error {
        ReferencingError::Unretrievable { uri, .. } => {
            (uri.clone(), format!("'{uri}' is outside this schema and is not fetched; {inside}"))
        }
        ReferencingError::PointerToNowhere { pointer } => {
            (format!("#{pointer}"), format!("'#{pointer}' points to nothing in this schema"))
        }
        ReferencingError::UnknownSpecification { specification } => {
            let message = format!(
                "unknown meta-schema '{specification}'; use a JSON Schema draft (4, 6, 7, 2019-09 or 2020-12)"
            );
            return SchemaError { field: ".$schema".to_owned(), message };
        }
        other => (String::new(), format!("cannot resolve a reference: {other}; {inside}")),
    };
    SchemaError { field: reference_field(schema, &named).unwrap_or_default(), message }
}

/// The field of the `$ref` (or `$dynamicRef`) that a referencing error is about: the first one
/// whose value ends as the one the error names, else the first that leaves the document.
fn reference_field(schema: &Value, named: &str) -> Option<String> {
    let mut found = Vec::new();
    let mut stack = vec![(schema, String::new())];
    while let Some((value, field)) = stack.pop() {
        match value {
            Value::Object(object) => {
                for (key, sub) in object.iter().rev() {
                    if let ("$ref" | "$dynamicRef" | "$recursiveRef", Value::String(target)) =
                        (key.as_str(), sub)
                    {
                        found.push((format!("{field}.{key}"), target.clone()));
                    }
                    stack.push((sub, format!("{field}.{key}")));
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push((item, format!("{field}[{i}]")));
                }
            }
            _ => {}
        }
    }
    let named = found.iter().find(|(_, target)| !named.is_empty() && named.ends_with(target.as_str()));
    named
        .or_else(|| found.iter().find(|(_, target)| !target.starts_with('#')))
        .map(|(field, _)| field.clone())
}

/// Keywords whose value is a schema, an array of schemas, or an object of schemas.
const SCHEMA_KEYWORDS: [&str; 11] = [
    "items",
    "additionalItems",
    "additionalProperties",
    "unevaluatedItems",
    "unevaluatedProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
];
const SCHEMA_LIST_KEYWORDS: [&str; 5] = ["allOf", "anyOf", "oneOf", "prefixItems", "items"];
const SCHEMA_MAP_KEYWORDS: [&str; 6] =
    ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"];

/// The field of a subschema nested more than [`MAX_VALIDATION_DEPTH`] levels down, if any.
fn too_deep(schema: &Value) -> Option<String> {
    let mut stack = vec![(schema, 0usize, String::new())];
    while let Some((value, depth, field)) = stack.pop() {
        let Some(object) = value.as_object() else { continue };
        if depth > MAX_VALIDATION_DEPTH {
            return Some(field);
        }
        for (keyword, sub) in object {
            let here = format!("{field}.{keyword}");
            if SCHEMA_KEYWORDS.contains(&keyword.as_str()) && sub.is_object() {
                stack.push((sub, depth + 1, here.clone()));
            }
            if SCHEMA_LIST_KEYWORDS.contains(&keyword.as_str()) {
                for (i, item) in sub.as_array().into_iter().flatten().enumerate() {
                    stack.push((item, depth + 1, format!("{here}[{i}]")));
                }
            }
            if SCHEMA_MAP_KEYWORDS.contains(&keyword.as_str()) {
                for (name, item) in sub.as_object().into_iter().flatten() {
                    stack.push((item, depth + 1, format!("{here}.{name}")));
                }
            }
        }
    }
    None
}

/// Whether a schema holds a reference keyword anywhere.
fn uses_references(schema: &Value) -> bool {
    let mut stack = vec![schema];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(object) => {
                if ["$ref", "$dynamicRef", "$recursiveRef"].iter().any(|k| object.contains_key(*k)) {
                    return true;
                }
                stack.extend(object.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    false
}

/// The path of the first location in `instance` nested more than `limit` levels down.
fn deeper_than(instance: &Value, limit: usize) -> Option<String> {
    let mut stack = vec![(instance, 0usize, String::from("$"))];
    while let Some((value, depth, path)) = stack.pop() {
        if depth > limit {
            return Some(path);
        }
        match value {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push((item, depth + 1, index_path(&path, i)));
                }
            }
            Value::Object(object) => {
                let entries: Vec<_> = object.iter().collect();
                for (name, item) in entries.into_iter().rev() {
                    stack.push((item, depth + 1, property_path(&path, name)));
                }
            }
            _ => {}
        }
    }
    None
}

/// The messages of one validation error of `root` (one for most, one per property for
/// `additionalProperties`), with the steps of their location for ordering. `schema` is the one
/// `root` was validated against, where the error's keyword is looked up (`None` when that is a
/// meta-schema, for a schema's own errors).
fn describe(
    schema: Option<&Value>,
    root: &Value,
    error: &ValidationError,
) -> Vec<(Vec<Step>, String, String)> {
    let (steps, path) = instance_steps(root, error.instance_path());
    let messages = match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let allowed = allowed_list(schema.and_then(|s| keyword_parent(s, error)));
            unexpected.iter().map(|name| format!("unexpected property '{name}'; {allowed}")).collect()
        }
        ValidationErrorKind::FalseSchema if closes_object(schema, error) => {
            // Reported once, with the first property's value; every property is unexpected.
            let object = root.pointer(error.instance_path().as_str()).and_then(Value::as_object);
            let names: Vec<&String> = object.map(|o| o.keys().collect()).unwrap_or_default();
            let allowed = allowed_list(None);
            names.iter().map(|name| format!("unexpected property '{name}'; {allowed}")).collect()
        }
        ValidationErrorKind::UniqueItems => vec![unique_message(&path, error.instance())],
        _ => vec![message_of(schema, root, error).unwrap_or_else(|| error.to_string())],
    };
    messages.into_iter().map(|message| (steps.clone(), path.clone(), message)).collect()
}

/// Whether a `false` schema is the `additionalProperties: false` of an object schema with no
/// `properties` nor `patternProperties`, which the validator reports at the object itself.
fn closes_object(schema: Option<&Value>, error: &ValidationError) -> bool {
    let parent = schema.and_then(|s| keyword_parent(s, error));
    error.schema_path().as_str().ends_with("/additionalProperties")
        && parent.is_some_and(|p| p.get("properties").is_none() && p.get("patternProperties").is_none())
}

/// The schema object that holds the keyword an error is about.
fn keyword_parent<'a>(schema: &'a Value, error: &ValidationError) -> Option<&'a Value> {
    let pointer = error.schema_path().as_str();
    let parent = pointer.rsplit_once('/').map_or("", |(parent, _)| parent);
    schema.pointer(parent)
}

/// The value of the keyword an error is about, read from the schema.
fn keyword_value<'a>(schema: &'a Value, error: &ValidationError) -> Option<&'a Value> {
    schema.pointer(error.schema_path().as_str())
}

/// Our wording of an error, without its path; `None` for kinds we leave to the crate's wording.
fn message_of(schema: Option<&Value>, root: &Value, error: &ValidationError) -> Option<String> {
    let instance: &Value = error.instance();
    let keyword = || schema.and_then(|s| keyword_value(s, error));
    let number = || instance.as_number().map_or_else(|| instance.to_string(), Number::to_string);
    let length = || instance.as_str().map_or(0, |s| s.chars().count());
    let count = || match instance {
        Value::Array(items) => items.len(),
        Value::Object(object) => object.len(),
        _ => 0,
    };
    let message = match error.kind() {
        ValidationErrorKind::FalseSchema => "no value is allowed here".to_owned(),
        ValidationErrorKind::Type { kind } => type_message(keyword(), kind, instance),
        ValidationErrorKind::Enum { options } => {
            let values = options.as_array().map_or(&[][..], Vec::as_slice);
            let listed: Vec<String> =
                values.iter().take(ENUM_VALUES_LISTED).map(render_schema_value).collect();
            let more = values.len().saturating_sub(ENUM_VALUES_LISTED);
            let more = if more > 0 { format!(" (and {more} more)") } else { String::new() };
            format!("must be one of {}{more}; got {}", listed.join(", "), describe_instance(instance))
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!(
                "must be exactly {}; got {}",
                render_schema_value(expected_value),
                describe_instance(instance)
            )
        }
        ValidationErrorKind::Minimum { limit } => format!("must be at least {limit}, got {}", number()),
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!("must be greater than {limit}, got {}", number())
        }
        ValidationErrorKind::Maximum { limit } => format!("must be at most {limit}, got {}", number()),
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            format!("must be less than {limit}, got {}", number())
        }
        ValidationErrorKind::MultipleOf { .. } => {
            let divisor = match (keyword(), error.kind()) {
                (Some(value), _) => value.to_string(),
                (None, ValidationErrorKind::MultipleOf { multiple_of, .. }) => multiple_of.to_string(),
                (None, _) => String::new(),
            };
            format!("must be a multiple of {divisor}, got {}", number())
        }
        ValidationErrorKind::MinLength { limit } => {
            format!(
                "must be at least {} long, got {}",
                plural_u64(*limit, "character", "characters"),
                length()
            )
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!(
                "must be at most {} long, got {}",
                plural_u64(*limit, "character", "characters"),
                length()
            )
        }
        ValidationErrorKind::MinItems { limit } => {
            format!("must have at least {}, got {}", plural_u64(*limit, "item", "items"), count())
        }
        ValidationErrorKind::MaxItems { limit } => {
            format!("must have at most {}, got {}", plural_u64(*limit, "item", "items"), count())
        }
        ValidationErrorKind::MinProperties { limit } => {
            format!("must have at least {}, got {}", plural_u64(*limit, "property", "properties"), count())
        }
        ValidationErrorKind::MaxProperties { limit } => {
            format!("must have at most {}, got {}", plural_u64(*limit, "property", "properties"), count())
        }
        ValidationErrorKind::UniqueItems => unique_message("", instance),
        ValidationErrorKind::Required { property } => {
            format!("missing required property '{}'", property.as_str().unwrap_or_default())
        }
        ValidationErrorKind::Pattern { pattern } => {
            format!(
                "must match the pattern {}; got {}",
                Value::from(pattern.as_str()),
                describe_instance(instance)
            )
        }
        ValidationErrorKind::Format { format } => {
            format!("must be a valid {format}; got {}", describe_instance(instance))
        }
        ValidationErrorKind::Not { schema } => {
            format!("must not match the schema {}", render_schema_value(schema))
        }
        ValidationErrorKind::AnyOf { context } => format!(
            "must match at least one schema in anyOf, but matches none: {}",
            summarize_failures(schema, root, "anyOf", context)
        ),
        ValidationErrorKind::OneOfNotValid { context } => format!(
            "must match exactly one schema in oneOf, but matches none: {}",
            summarize_failures(schema, root, "oneOf", context)
        ),
        ValidationErrorKind::OneOfMultipleValid { context } => {
            let matching: Vec<String> = context
                .iter()
                .enumerate()
                .filter(|(_, errors)| errors.is_empty())
                .map(|(i, _)| format!("oneOf[{i}]"))
                .collect();
            match matching.len() {
                0 | 1 => "must match exactly one schema in oneOf, but matches more than one".to_owned(),
                _ => format!(
                    "must match exactly one schema in oneOf, but matches {}",
                    join_words(&matching, "and")
                ),
            }
        }
        _ => return None,
    };
    Some(message)
}

fn type_message(keyword: Option<&Value>, kind: &TypeKind, instance: &Value) -> String {
    let names: Vec<String> = match keyword {
        Some(Value::String(name)) => vec![name.clone()],
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => match kind {
            TypeKind::Single(ty) => vec![ty.to_string()],
            TypeKind::Multiple(types) => types.iter().map(|ty| ty.to_string()).collect(),
        },
    };
    let got = match instance {
        Value::Number(n) if names.iter().any(|n| n == "integer") => format!("number {n}"),
        _ => json_type(instance).to_owned(),
    };
    format!("expected {}, got {got}", join_words(&names, "or"))
}

/// The JSON type of a value, as `type` names it.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `a`, `a or b`, `a, b or c` (with `conjunction` "or").
fn join_words<S: AsRef<str>>(words: &[S], conjunction: &str) -> String {
    let words: Vec<&str> = words.iter().map(AsRef::as_ref).collect();
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} {conjunction} {last}", rest.join(", ")),
        _ => words.concat(),
    }
}

/// `items must be unique, but $[2] duplicates $[0], ...`: the first duplicates of the array at
/// `path`.
fn unique_message(path: &str, instance: &Value) -> String {
    let items = instance.as_array().map_or(&[][..], Vec::as_slice);
    let mut first_index: HashMap<String, usize> = HashMap::new();
    let mut duplicates = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let first = *first_index.entry(canonical(item)).or_insert(i);
        if first != i {
            duplicates.push(format!("{} duplicates {}", index_path(path, i), index_path(path, first)));
        }
    }
    let more = duplicates.len().saturating_sub(DUPLICATES_LISTED);
    duplicates.truncate(DUPLICATES_LISTED);
    let more = if more > 0 { format!(" (and {more} more)") } else { String::new() };
    format!("items must be unique, but {}{more}", duplicates.join(", "))
}

/// `(anyOf[0]) $.x: expected string, got number; (anyOf[1]) ...`, a few errors per alternative.
fn summarize_failures(
    schema: Option<&Value>,
    root: &Value,
    keyword: &str,
    failures: &[Vec<ValidationError<'static>>],
) -> String {
    let mut parts = Vec::new();
    for (i, errors) in failures.iter().enumerate() {
        let messages: Vec<String> = errors
            .iter()
            .flat_map(|e| describe(schema, root, e))
            .map(|(_, path, message)| format!("{path}: {message}"))
            .collect();
        let mut quoted = messages.iter().take(ERRORS_PER_ALTERNATIVE).cloned().collect::<Vec<_>>().join("; ");
        if messages.len() > ERRORS_PER_ALTERNATIVE {
            quoted.push_str(&format!("; and {} more", messages.len() - ERRORS_PER_ALTERNATIVE));
        }
        parts.push(format!("({keyword}[{i}]) {quoted}"));
    }
    parts.join("; ")
}

/// The properties an object schema (`parent`, which holds `additionalProperties`) allows.
fn allowed_list(parent: Option<&Value>) -> String {
    let keys = |keyword: &str| -> Vec<String> {
        let map = parent.and_then(|p| p.get(keyword)).and_then(Value::as_object);
        map.map(|m| m.keys().cloned().collect()).unwrap_or_default()
    };
    let names: Vec<String> = keys("properties").iter().map(|name| format!("'{name}'")).collect();
    let patterns: Vec<String> =
        keys("patternProperties").iter().map(|p| Value::from(p.as_str()).to_string()).collect();
    match (names.is_empty(), patterns.is_empty()) {
        (true, true) => "this object allows no properties".to_owned(),
        (false, true) => format!("allowed properties are {}", names.join(", ")),
        (true, false) => format!("allowed are properties whose names match {}", join_words(&patterns, "or")),
        (false, false) => format!(
            "allowed properties are {} and those whose names match {}",
            names.join(", "),
            join_words(&patterns, "or")
        ),
    }
}

/// The path of property `name` under `parent`: `$.order_id`, or `$["order id"]` for names that
/// are not identifiers.
fn property_path(parent: &str, name: &str) -> String {
    let mut chars = name.chars();
    let identifier = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if identifier {
        format!("{parent}.{name}")
    } else {
        format!("{parent}[{}]", Value::from(name))
    }
}

fn index_path(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

fn plural_u64(count: u64, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// An instance value in a message: scalars as JSON (long strings cut), containers by size.
fn describe_instance(value: &Value) -> String {
    match value {
        Value::Array(items) => format!("an array of {}", plural(items.len(), "item", "items")),
        Value::Object(object) => {
            format!("an object with {}", plural(object.len(), "property", "properties"))
        }
        _ => truncate(value.to_string(), 80),
    }
}

/// A value taken from a schema, as compact JSON, cut when long.
fn render_schema_value(value: &Value) -> String {
    truncate(value.to_string(), 80)
}

fn truncate(text: String, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// A text that is equal for two values exactly when JSON Schema deems them equal: object keys
/// sorted, numbers by value (`1` and `1.0` alike). Built with an explicit stack, so no instance
/// is too deep for it.
fn canonical(value: &Value) -> String {
    enum Step<'a> {
        Value(&'a Value),
        Text(&'static str),
        Key(&'a str),
    }
    let mut out = String::new();
    let mut stack = vec![Step::Value(value)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Text(text) => out.push_str(text),
            Step::Key(key) => out.push_str(&format!("{key:?}:")),
            Step::Value(Value::Array(items)) => {
                out.push('[');
                stack.push(Step::Text("]"));
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push(Step::Value(item));
                    if i > 0 {
                        stack.push(Step::Text(","));
                    }
                }
            }
            Step::Value(Value::Object(object)) => {
                out.push('{');
                stack.push(Step::Text("}"));
                let mut entries: Vec<_> = object.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                for (i, (key, item)) in entries.into_iter().enumerate().rev() {
                    stack.push(Step::Value(item));
                    stack.push(Step::Key(key));
                    if i > 0 {
                        stack.push(Step::Text(","));
                    }
                }
            }
            Step::Value(Value::Number(number)) => out.push_str(&canonical_number(number)),
            Step::Value(Value::String(string)) => out.push_str(&format!("{string:?}")),
            Step::Value(scalar) => out.push_str(&scalar.to_string()),
        }
    }
    out
}

fn canonical_number(number: &Number) -> String {
    match as_integer(number) {
        Some(n) => n.to_string(),
        None => number.as_f64().map_or_else(|| number.to_string(), |f| format!("{f:e}")),
    }
}

/// A number's value as an integer, when it has no fractional part and is below 1e30 in magnitude.
fn as_integer(number: &Number) -> Option<i128> {
    if let Some(n) = number.as_i64() {
        return Some(n.into());
    }
    if let Some(n) = number.as_u64() {
        return Some(n.into());
    }
    // Well inside the range of i128, so the conversion is exact.
    let value = number.as_f64()?;
    (value.fract() == 0.0 && value.abs() < 1e30).then_some(value as i128)
}
#[cfg(test)]
mod tests;
