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

use super::validate::FieldError;

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
        if self.0.references {
            if let Some(path) = deeper_than(instance, MAX_VALIDATION_DEPTH) {
                return vec![format!(
                    "{path}: nested too deeply to validate (more than {MAX_VALIDATION_DEPTH} levels)"
                )];
            }
        }
        let mut errors: Vec<(Vec<Step>, String)> = self
            .0
            .validator
            .iter_errors(instance)
            .flat_map(|error| describe(Some(&self.0.schema), instance, &error))
            .collect();
        // Errors at one location stay in the order the validator found them; locations go in
        // document order (array items by index).
        errors.sort_by(|a, b| a.0.cmp(&b.0));
        errors.into_iter().map(|(_, message)| message).collect()
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
fn describe(schema: Option<&Value>, root: &Value, error: &ValidationError) -> Vec<(Vec<Step>, String)> {
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
    messages.into_iter().map(|message| (steps.clone(), format!("{path}: {message}"))).collect()
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
        let messages: Vec<String> =
            errors.iter().flat_map(|e| describe(schema, root, e)).map(|(_, message)| message).collect();
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
mod tests {
    use serde_json::json;

    use super::*;

    fn errors_of(schema: Value) -> Vec<String> {
        let mut errors = Vec::new();
        check_schema(&schema, "s", &mut errors);
        errors.into_iter().map(|e| format!("{}: {}", e.field, e.message)).collect()
    }

    #[test]
    fn accepts_a_usual_object_schema() {
        let schema = json!({"type": "object", "properties": {"id": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["id"]});
        assert!(errors_of(schema).is_empty());
    }

    #[test]
    fn reports_each_malformed_keyword_with_its_path() {
        let schema = json!({"type": "obj", "properties": {"a": {"type": 3}, "b": []},
            "required": ["a", "zz", 4], "enum": []});
        let errors = errors_of(schema);
        assert_eq!(errors.len(), 6, "{errors:?}");
        assert!(errors.iter().any(|e| e.starts_with("s.type:")));
        assert!(errors.iter().any(|e| e.starts_with("s.properties.a.type:")));
        assert!(errors.iter().any(|e| e.starts_with("s.properties.b:")));
        assert!(errors.iter().any(|e| e.starts_with("s.required[1]:") && e.contains("zz")));
        assert!(errors.iter().any(|e| e.starts_with("s.required[2]:")));
        assert!(errors.iter().any(|e| e.starts_with("s.enum:")));
    }

    #[test]
    fn rejects_a_non_object() {
        assert_eq!(errors_of(json!("string")), ["s: must be a JSON schema object"]);
    }

    fn violations(schema: Value, instance: Value) -> Vec<String> {
        CompiledSchema::compile(&schema).unwrap_or_else(|e| panic!("{schema}: {e}")).validate(&instance)
    }

    #[test]
    fn a_valid_instance_has_no_violations() {
        let schema = json!({"type": "object", "properties": {"order_id": {"type": "string"},
            "items": {"type": "array", "items": {"type": "object", "properties": {
                "sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
                "required": ["sku", "qty"]}}}, "required": ["order_id"]});
        let instance = json!({"order_id": "A-1", "items": [{"sku": "x", "qty": 2}, {"sku": "y", "qty": 1}]});
        assert_eq!(violations(schema, instance), Vec::<String>::new());
    }

    #[test]
    fn boolean_schemas() {
        assert!(violations(json!(true), json!({"anything": [1, 2]})).is_empty());
        assert_eq!(violations(json!(false), json!(null)), ["$: no value is allowed here"]);
        let schema = json!({"properties": {"a": true, "b": false}});
        assert_eq!(violations(schema, json!({"a": 1, "b": 2})), ["$.b: no value is allowed here"]);
    }

    #[test]
    fn type_with_one_name() {
        let schema = json!({"properties": {"order_id": {"type": "string"}}});
        assert_eq!(violations(schema, json!({"order_id": 12})), ["$.order_id: expected string, got number"]);
        assert_eq!(violations(json!({"type": "object"}), json!([])), ["$: expected object, got array"]);
        assert_eq!(violations(json!({"type": "null"}), json!(false)), ["$: expected null, got boolean"]);
        assert_eq!(
            violations(json!({"type": "boolean"}), json!("true")),
            ["$: expected boolean, got string"]
        );
        assert_eq!(violations(json!({"type": "array"}), json!({})), ["$: expected array, got object"]);
        assert_eq!(violations(json!({"type": "string"}), json!(null)), ["$: expected string, got null"]);
    }

    #[test]
    fn integer_accepts_integral_numbers_and_number_accepts_integers() {
        for integral in [json!(3), json!(3.0), json!(-7), json!(0), json!(u64::MAX), json!(1e300)] {
            assert!(violations(json!({"type": "integer"}), integral.clone()).is_empty(), "{integral}");
            assert!(violations(json!({"type": "number"}), integral.clone()).is_empty(), "{integral}");
        }
        assert_eq!(
            violations(json!({"type": "integer"}), json!(3.5)),
            ["$: expected integer, got number 3.5"]
        );
        assert!(violations(json!({"type": "number"}), json!(3.5)).is_empty());
        assert_eq!(violations(json!({"type": "number"}), json!("3")), ["$: expected number, got string"]);
    }

    #[test]
    fn type_with_several_names() {
        let schema = json!({"type": ["string", "null"]});
        assert!(violations(schema.clone(), json!("x")).is_empty());
        assert!(violations(schema.clone(), json!(null)).is_empty());
        assert_eq!(violations(schema, json!(1)), ["$: expected string or null, got number"]);
        let schema = json!({"type": ["integer", "boolean", "null"]});
        assert_eq!(violations(schema, json!(0.5)), ["$: expected integer, boolean or null, got number 0.5"]);
    }

    #[test]
    fn paths_name_the_instance_location() {
        let schema = json!({"properties": {"order": {"properties": {"items": {"items": {
            "properties": {"sku": {"type": "string"}}}}}}}});
        let instance = json!({"order": {"items": [{"sku": "a"}, {"sku": "b"}, {"sku": 3}]}});
        assert_eq!(violations(schema, instance), ["$.order.items[2].sku: expected string, got number"]);
        let schema = json!({"properties": {"order id": {"type": "string"}, "first-name": {"type": "string"},
            "_ok9": {"type": "string"}, "9lives": {"type": "string"}, "": {"type": "string"}}});
        let instance = json!({"order id": 1, "first-name": 1, "_ok9": 1, "9lives": 1, "": 1});
        let mut found = violations(schema, instance);
        found.sort();
        assert_eq!(
            found,
            [
                "$._ok9: expected string, got number".to_owned(),
                "$[\"\"]: expected string, got number".to_owned(),
                "$[\"9lives\"]: expected string, got number".to_owned(),
                "$[\"first-name\"]: expected string, got number".to_owned(),
                "$[\"order id\"]: expected string, got number".to_owned(),
            ]
        );
    }

    #[test]
    fn required_properties() {
        let schema =
            json!({"type": "object", "properties": {"order_id": {}, "n": {}}, "required": ["order_id", "n"]});
        assert_eq!(
            violations(schema.clone(), json!({})),
            ["$: missing required property 'order_id'", "$: missing required property 'n'"]
        );
        assert!(violations(schema.clone(), json!({"order_id": null, "n": 0})).is_empty());
        // Object keywords do not apply to other types; `type` reports those.
        assert_eq!(violations(schema, json!("x")), ["$: expected object, got string"]);
        let nested = json!({"properties": {"customer": {"required": ["email"]}}});
        assert_eq!(
            violations(nested, json!({"customer": {}})),
            ["$.customer: missing required property 'email'"]
        );
    }

    #[test]
    fn additional_properties_false() {
        let schema = json!({"properties": {"a": {}, "b": {}}, "additionalProperties": false});
        assert!(violations(schema.clone(), json!({"a": 1})).is_empty());
        assert_eq!(
            violations(schema, json!({"a": 1, "c": 2})),
            ["$: unexpected property 'c'; allowed properties are 'a', 'b'"]
        );
        let closed = json!({"type": "object", "additionalProperties": false});
        assert_eq!(
            violations(closed, json!({"x": 1})),
            ["$: unexpected property 'x'; this object allows no properties"]
        );
    }

    #[test]
    fn additional_properties_schema() {
        let schema =
            json!({"properties": {"name": {"type": "string"}}, "additionalProperties": {"type": "number"}});
        assert!(violations(schema.clone(), json!({"name": "x", "weight": 2.5})).is_empty());
        assert_eq!(
            violations(schema, json!({"name": "x", "colour": "red"})),
            ["$.colour: expected number, got string"]
        );
        let open = json!({"properties": {"a": {}}, "additionalProperties": true});
        assert!(violations(open, json!({"a": 1, "b": 2})).is_empty());
    }

    #[test]
    fn items_and_prefix_items() {
        let schema = json!({"type": "array", "items": {"type": "string"}});
        assert!(violations(schema.clone(), json!([])).is_empty());
        assert_eq!(
            violations(schema, json!(["a", 1, "b", null])),
            ["$[1]: expected string, got number", "$[3]: expected string, got null"]
        );
        let tuple =
            json!({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": {"type": "boolean"}});
        assert!(violations(tuple.clone(), json!(["a", 1, true, false])).is_empty());
        assert!(violations(tuple.clone(), json!(["a"])).is_empty());
        assert_eq!(
            violations(tuple, json!([1, "a", "b"])),
            [
                "$[0]: expected string, got number",
                "$[1]: expected integer, got string",
                "$[2]: expected boolean, got string"
            ]
        );
        let closed = json!({"prefixItems": [{}], "items": false});
        assert_eq!(violations(closed, json!([1, 2])), ["$[1]: no value is allowed here"]);
    }

    #[test]
    fn enum_compares_by_json_value() {
        let schema = json!({"enum": ["GET", "POST"]});
        assert!(violations(schema.clone(), json!("POST")).is_empty());
        assert_eq!(violations(schema, json!("PUT")), [r#"$: must be one of "GET", "POST"; got "PUT""#]);
        let numbers = json!({"enum": [1, 2.5, null]});
        assert!(violations(numbers.clone(), json!(1.0)).is_empty());
        assert!(violations(numbers.clone(), json!(null)).is_empty());
        assert_eq!(violations(numbers, json!("1")), [r#"$: must be one of 1, 2.5, null; got "1""#]);
        let objects = json!({"enum": [{"a": 1, "b": [1, {"c": 2}]}]});
        assert!(violations(objects.clone(), json!({"b": [1.0, {"c": 2}], "a": 1})).is_empty());
        assert_eq!(
            violations(objects, json!({"a": 1})),
            [r#"$: must be one of {"a":1,"b":[1,{"c":2}]}; got an object with 1 property"#]
        );
    }

    #[test]
    fn long_enums_are_listed_in_part() {
        let values: Vec<Value> = (0..25).map(Value::from).collect();
        let found = violations(json!({"enum": values}), json!(99));
        assert_eq!(found.len(), 1);
        assert!(found[0].starts_with("$: must be one of 0, 1, 2,"), "{found:?}");
        assert!(found[0].ends_with("18, 19 (and 5 more); got 99"), "{found:?}");
    }

    #[test]
    fn const_requires_an_equal_value() {
        assert!(violations(json!({"const": 3}), json!(3.0)).is_empty());
        assert!(violations(json!({"const": {"x": [true]}}), json!({"x": [true]})).is_empty());
        assert_eq!(violations(json!({"const": "v1"}), json!("v2")), [r#"$: must be exactly "v1"; got "v2""#]);
        assert_eq!(
            violations(json!({"const": null}), json!([1, 2])),
            ["$: must be exactly null; got an array of 2 items"]
        );
    }

    #[test]
    fn numeric_bounds() {
        let schema = json!({"minimum": 1, "maximum": 10});
        for ok in [json!(1), json!(10), json!(5.5), json!(1.0)] {
            assert!(violations(schema.clone(), ok.clone()).is_empty(), "{ok}");
        }
        assert_eq!(violations(schema.clone(), json!(0)), ["$: must be at least 1, got 0"]);
        assert_eq!(violations(schema.clone(), json!(10.5)), ["$: must be at most 10, got 10.5"]);
        let exclusive = json!({"exclusiveMinimum": 0, "exclusiveMaximum": 1.5});
        assert!(violations(exclusive.clone(), json!(0.1)).is_empty());
        assert_eq!(violations(exclusive.clone(), json!(0)), ["$: must be greater than 0, got 0"]);
        assert_eq!(violations(exclusive, json!(1.5)), ["$: must be less than 1.5, got 1.5"]);
        // Bounds do not apply to other types.
        assert!(violations(schema, json!("0")).is_empty());
        // The boolean (draft 4) form is malformed in the default draft (2020-12), so such a
        // schema does not compile; a schema that declares draft 4 gets draft 4's meaning.
        let error =
            CompiledSchema::compile(&json!({"minimum": 5, "exclusiveMinimum": true})).expect_err("draft 4");
        assert_eq!(error.field, ".exclusiveMinimum");
        let draft4 = json!({"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 5,
            "exclusiveMinimum": true});
        assert!(violations(draft4.clone(), json!(6)).is_empty());
        assert_eq!(violations(draft4, json!(5)).len(), 1);
    }

    #[test]
    fn numeric_bounds_are_exact_for_large_integers() {
        let schema = json!({"maximum": 9_007_199_254_740_992_u64});
        assert_eq!(
            violations(schema, json!(9_007_199_254_740_993_u64)),
            ["$: must be at most 9007199254740992, got 9007199254740993"]
        );
        assert!(violations(json!({"minimum": -1}), json!(u64::MAX)).is_empty());
    }

    #[test]
    fn multiple_of() {
        assert!(violations(json!({"multipleOf": 5}), json!(15)).is_empty());
        assert!(violations(json!({"multipleOf": 5}), json!(-10.0)).is_empty());
        assert_eq!(violations(json!({"multipleOf": 5}), json!(12)), ["$: must be a multiple of 5, got 12"]);
        assert!(violations(json!({"multipleOf": 0.1}), json!(0.3)).is_empty());
        assert!(violations(json!({"multipleOf": 0.01}), json!(19.99)).is_empty());
        assert!(violations(json!({"multipleOf": 2.5}), json!(7.5)).is_empty());
        assert_eq!(
            violations(json!({"multipleOf": 0.1}), json!(0.35)),
            ["$: must be a multiple of 0.1, got 0.35"]
        );
        // Integers divide exactly, past 2^53 too.
        assert_eq!(
            violations(json!({"multipleOf": 2}), json!(u64::MAX)),
            ["$: must be a multiple of 2, got 18446744073709551615"]
        );
        assert!(violations(json!({"multipleOf": 5}), json!(u64::MAX)).is_empty());
        assert!(violations(json!({"multipleOf": 3}), json!(i64::MIN + 2)).is_empty());
        // A divisor that is not positive is malformed: such a schema does not compile.
        for divisor in [json!(0), json!(-2)] {
            let error = CompiledSchema::compile(&json!({"multipleOf": divisor})).expect_err("malformed");
            assert_eq!(error.field, ".multipleOf");
        }
    }

    #[test]
    fn string_lengths_count_characters() {
        let schema = json!({"minLength": 2, "maxLength": 5});
        assert!(violations(schema.clone(), json!("héllo")).is_empty());
        assert!(violations(schema.clone(), json!("🦀🦀")).is_empty());
        assert_eq!(violations(schema.clone(), json!("a")), ["$: must be at least 2 characters long, got 1"]);
        assert_eq!(
            violations(schema.clone(), json!("héllo!")),
            ["$: must be at most 5 characters long, got 6"]
        );
        assert_eq!(
            violations(json!({"maxLength": 1}), json!("ab")),
            ["$: must be at most 1 character long, got 2"]
        );
        assert!(violations(schema, json!(123456)).is_empty());
        assert!(violations(json!({"minLength": 2.0}), json!("ab")).is_empty());
    }

    #[test]
    fn item_counts() {
        let schema = json!({"minItems": 1, "maxItems": 2});
        assert!(violations(schema.clone(), json!([1, 2])).is_empty());
        assert_eq!(violations(schema.clone(), json!([])), ["$: must have at least 1 item, got 0"]);
        assert_eq!(violations(schema, json!([1, 2, 3])), ["$: must have at most 2 items, got 3"]);
    }

    #[test]
    fn unique_items() {
        let schema = json!({"uniqueItems": true});
        assert!(violations(schema.clone(), json!([1, "1", [1], {"a": 1}, true, null])).is_empty());
        // One message per array (the validator reports the array), naming every duplicate.
        assert_eq!(
            violations(schema.clone(), json!([1, 2, 1.0, 2, 1])),
            ["$: items must be unique, but $[2] duplicates $[0], $[3] duplicates $[1], $[4] duplicates $[0]"]
        );
        assert_eq!(
            violations(schema.clone(), json!([{"a": 1, "b": 2}, {"b": 2, "a": 1}])),
            ["$: items must be unique, but $[1] duplicates $[0]"]
        );
        let found = violations(schema, json!([0, 0, 0, 0, 0, 0, 0, 0]));
        assert_eq!(found.len(), 1);
        assert!(found[0].ends_with("$[5] duplicates $[0] (and 2 more)"), "{found:?}");
        let nested = json!({"properties": {"tags": {"uniqueItems": true}}});
        assert_eq!(
            violations(nested, json!({"tags": ["a", "a"]})),
            ["$.tags: items must be unique, but $.tags[1] duplicates $.tags[0]"]
        );
        assert!(violations(json!({"uniqueItems": false}), json!([1, 1])).is_empty());
    }

    #[test]
    fn property_counts() {
        let schema = json!({"minProperties": 1, "maxProperties": 2});
        assert!(violations(schema.clone(), json!({"a": 1})).is_empty());
        assert_eq!(violations(schema.clone(), json!({})), ["$: must have at least 1 property, got 0"]);
        assert_eq!(
            violations(schema, json!({"a": 1, "b": 2, "c": 3})),
            ["$: must have at most 2 properties, got 3"]
        );
    }

    #[test]
    fn any_of() {
        let schema = json!({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]});
        assert!(violations(schema.clone(), json!("x")).is_empty());
        assert!(violations(schema.clone(), json!(3)).is_empty());
        assert_eq!(
            violations(schema, json!(-1)),
            ["$: must match at least one schema in anyOf, but matches none: (anyOf[0]) $: expected string, \
              got number; (anyOf[1]) $: must be at least 0, got -1"]
        );
    }

    #[test]
    fn alternatives_quote_only_their_first_errors() {
        let schema = json!({"anyOf": [{"required": ["a", "b", "c", "d", "e"]}]});
        let found = violations(schema, json!({}));
        assert_eq!(found.len(), 1);
        assert!(found[0].ends_with("missing required property 'c'; and 2 more"), "{found:?}");
    }

    #[test]
    fn one_of_requires_exactly_one_match() {
        let schema = json!({"oneOf": [{"type": "integer"}, {"type": "number", "maximum": 10}]});
        assert!(violations(schema.clone(), json!(11)).is_empty());
        assert!(violations(schema.clone(), json!(2.5)).is_empty());
        assert_eq!(
            violations(schema.clone(), json!(5)),
            ["$: must match exactly one schema in oneOf, but matches oneOf[0] and oneOf[1]"]
        );
        assert_eq!(
            violations(schema, json!("x")),
            ["$: must match exactly one schema in oneOf, but matches none: (oneOf[0]) $: expected integer, \
              got string; (oneOf[1]) $: expected number, got string"]
        );
    }

    #[test]
    fn all_of_reports_every_failing_schema() {
        let schema = json!({"allOf": [{"type": "string"}, {"minLength": 3}, {"maxLength": 1}]});
        assert_eq!(
            violations(schema.clone(), json!("ab")),
            ["$: must be at least 3 characters long, got 2", "$: must be at most 1 character long, got 2"]
        );
        assert_eq!(violations(schema, json!(1)), ["$: expected string, got number"]);
    }

    #[test]
    fn not() {
        let schema = json!({"properties": {"status": {"not": {"enum": ["deleted"]}}}});
        assert!(violations(schema.clone(), json!({"status": "active"})).is_empty());
        assert_eq!(
            violations(schema, json!({"status": "deleted"})),
            [r#"$.status: must not match the schema {"enum":["deleted"]}"#]
        );
        assert_eq!(violations(json!({"not": true}), json!(1)), ["$: must not match the schema true"]);
        assert!(violations(json!({"not": false}), json!(1)).is_empty());
    }

    #[test]
    fn unknown_keywords_and_annotations_are_ignored() {
        let schema = json!({"type": "string", "description": "d", "default": 1, "title": "t",
            "examples": [2], "x-vendor": {"type": "integer"}, "format": "x-unknown-format"});
        assert!(violations(schema, json!("anything")).is_empty());
    }

    // Until the move to the `jsonschema` crate, `pattern`, `format` and `$ref` were ignored
    // (`unknown_and_unsupported_keywords_are_ignored`); they are enforced now.

    #[test]
    fn pattern_is_enforced() {
        let schema = json!({"properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-\\d+$"}}});
        assert!(violations(schema.clone(), json!({"sku": "ABC-12"})).is_empty());
        assert_eq!(
            violations(schema, json!({"sku": "abc-12"})),
            [r#"$.sku: must match the pattern "^[A-Z]{3}-\\d+$"; got "abc-12""#]
        );
        // Not anchored unless the pattern says so (ECMA-262 semantics), and only for strings.
        assert!(violations(json!({"pattern": "b"}), json!("abc")).is_empty());
        assert!(violations(json!({"pattern": "b"}), json!(12)).is_empty());
        let keyed = json!({"patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": false});
        assert!(violations(keyed.clone(), json!({"x-a": 1})).is_empty());
        let found = violations(keyed, json!({"x-a": "1", "b": 2}));
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0], r#"$: unexpected property 'b'; allowed are properties whose names match "^x-""#);
        assert_eq!(found[1], "$[\"x-a\"]: expected integer, got string");
    }

    #[test]
    fn format_is_enforced() {
        let schema = json!({"type": "object", "properties": {"email": {"type": "string", "format": "email"},
            "at": {"type": "string", "format": "date-time"}, "id": {"format": "uuid"}}});
        let good = json!({"email": "ada@example.com", "at": "2024-05-01T12:30:00Z",
            "id": "0190f8a8-1c7e-7c2a-9d1e-3b5c4a6f7e81"});
        assert!(violations(schema.clone(), good).is_empty());
        let bad = json!({"email": "not an email", "at": "tomorrow", "id": "x"});
        assert_eq!(
            violations(schema, bad),
            [
                r#"$.at: must be a valid date-time; got "tomorrow""#,
                r#"$.email: must be a valid email; got "not an email""#,
                r#"$.id: must be a valid uuid; got "x""#,
            ]
        );
        // Formats apply to strings only.
        assert!(violations(json!({"format": "email"}), json!(5)).is_empty());
    }

    #[test]
    fn local_references_are_resolved() {
        for (defs, pointer) in [("$defs", "#/$defs/sku"), ("definitions", "#/definitions/sku")] {
            let schema = json!({defs: {"sku": {"type": "string", "minLength": 3}},
                "properties": {"items": {"type": "array", "items": {"$ref": pointer}}}});
            assert!(violations(schema.clone(), json!({"items": ["abc", "defg"]})).is_empty(), "{defs}");
            assert_eq!(
                violations(schema, json!({"items": ["abc", 5, "x"]})),
                [
                    "$.items[1]: expected string, got number",
                    "$.items[2]: must be at least 3 characters long, got 1"
                ],
                "{defs}"
            );
        }
        let recursive = json!({"$defs": {"node": {"type": "object", "properties": {
            "name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
            "$ref": "#/$defs/node"});
        let tree = json!({"name": "a", "children": [{"name": "b", "children": [{"name": 3}]}]});
        assert_eq!(
            violations(recursive, tree),
            ["$.children[0].children[0].name: expected string, got number"]
        );
    }

    #[test]
    fn remote_and_dangling_references_do_not_compile() {
        let remote = json!({"properties": {"x": {"$ref": "https://example.com/s.json"}}});
        let error = CompiledSchema::compile(&remote).expect_err("remote");
        assert_eq!(error.field, ".properties.x.$ref");
        assert!(error.message.contains("'https://example.com/s.json' is outside this schema"), "{error}");
        assert!(error.message.contains("not fetched"), "{error}");
        let relative = json!({"$ref": "other.json"});
        assert_eq!(CompiledSchema::compile(&relative).expect_err("relative").field, ".$ref");
        let dangling = json!({"$defs": {}, "properties": {"x": {"$ref": "#/$defs/missing"}}});
        let error = CompiledSchema::compile(&dangling).expect_err("dangling");
        assert_eq!(error.field, ".properties.x.$ref");
        assert!(error.message.contains("'#/$defs/missing' points to nothing"), "{error}");
        let unknown = json!({"$schema": "https://example.com/my-meta", "type": "object"});
        assert_eq!(CompiledSchema::compile(&unknown).expect_err("meta").field, ".$schema");
    }

    #[test]
    fn malformed_keywords_do_not_compile() {
        // Until the move to the `jsonschema` crate, these were ignored when validating
        // (`malformed_keywords_are_ignored`); now `check_schema` reports each at kickoff.
        let cases = [
            (json!({"type": 5}), "s.type"),
            (json!({"minimum": "3"}), "s.minimum"),
            (json!({"required": "a"}), "s.required"),
            (json!({"properties": []}), "s.properties"),
            (json!({"items": 3}), "s.items"),
            (json!({"enum": []}), "s.enum"),
            (json!({"anyOf": {}}), "s.anyOf"),
            (json!({"maxLength": -1}), "s.maxLength"),
            (json!({"minItems": 1.5}), "s.minItems"),
            (json!({"pattern": "(["}), "s.pattern"),
            (json!({"properties": {"a": {"items": {"minimum": "3"}}}}), "s.properties.a.items.minimum"),
            (json!({"anyOf": [{"type": "string"}, {"maxItems": "x"}]}), "s.anyOf[1].maxItems"),
            (json!(42), "s"),
        ];
        for (schema, field) in cases {
            let errors = errors_of(schema.clone());
            assert_eq!(errors.len(), 1, "{schema}: {errors:?}");
            assert!(errors[0].starts_with(&format!("{field}: ")), "{schema}: {errors:?}");
        }
        assert_eq!(errors_of(json!({"minimum": "3"})), ["s.minimum: expected number, got string"]);
        assert_eq!(errors_of(json!({"pattern": "(["})), [r#"s.pattern: must be a valid regex; got "([""#]);
        assert_eq!(
            errors_of(json!({"properties": {"x": {"$ref": "https://example.com/s.json"}}})),
            ["s.properties.x.$ref: 'https://example.com/s.json' is outside this schema and is not fetched; \
              only references inside the schema (like \"#/$defs/name\") are resolved"]
        );
    }

    #[test]
    fn long_values_are_cut_in_messages() {
        let long = "x".repeat(200);
        let found = violations(json!({"enum": ["a"]}), json!(long));
        assert_eq!(found.len(), 1);
        assert!(found[0].ends_with(&format!("got \"{}…", "x".repeat(79))), "{found:?}");
    }

    /// `{"items": {"items": ... {"type": "string"}}}` nested `depth` times.
    fn nested_array_schema(depth: usize) -> Value {
        (0..depth).fold(json!({"type": "string"}), |schema, _| json!({"items": schema}))
    }

    /// `[[...[1]...]]` nested `depth` times.
    fn nested_array(depth: usize) -> Value {
        (0..depth).fold(json!(1), |value, _| json!([value]))
    }

    #[test]
    fn nesting_up_to_the_depth_limit_is_validated() {
        let found = violations(nested_array_schema(MAX_VALIDATION_DEPTH), nested_array(MAX_VALIDATION_DEPTH));
        let path = format!("${}", "[0]".repeat(MAX_VALIDATION_DEPTH));
        assert_eq!(found, [format!("{path}: expected string, got number")]);
    }

    #[test]
    fn nesting_past_the_depth_limit_is_an_error() {
        // Without references, validation goes as deep as the schema nests: a schema nested past
        // the limit does not compile (it used to fail at validation, with the instance's path).
        let error = CompiledSchema::compile(&nested_array_schema(200)).expect_err("too deep");
        assert_eq!(error.field, ".items".repeat(MAX_VALIDATION_DEPTH + 1));
        assert_eq!(error.message, "subschemas are nested too deeply (more than 64 levels)");
        let schema = (0..100).fold(json!({"type": "string"}), |schema, _| json!({"allOf": [schema]}));
        let error = CompiledSchema::compile(&schema).expect_err("too deep");
        assert_eq!(error.field, ".allOf[0]".repeat(MAX_VALIDATION_DEPTH + 1));
        assert_eq!(errors_of(schema).len(), 1);
        // With references, validation may recurse as deep as the instance: instances nested past
        // the limit are not validated.
        let recursive = json!({"$defs": {"list": {"type": ["array", "integer"], "items": {"$ref": "#/$defs/list"}}},
            "$ref": "#/$defs/list"});
        assert!(violations(recursive.clone(), nested_array(MAX_VALIDATION_DEPTH)).is_empty());
        let path = format!("${}", "[0]".repeat(MAX_VALIDATION_DEPTH + 1));
        assert_eq!(
            violations(recursive, nested_array(200)),
            [format!("{path}: nested too deeply to validate (more than 64 levels)")]
        );
    }

    #[test]
    fn deep_instances_under_shallow_schemas_are_fine() {
        let deep = nested_array(1000);
        assert!(violations(json!({"type": "array"}), deep.clone()).is_empty());
        assert!(violations(json!({"enum": [deep.clone()]}), deep.clone()).is_empty());
        assert_eq!(violations(json!({"uniqueItems": true}), json!([deep.clone(), deep])).len(), 1);
    }
}
