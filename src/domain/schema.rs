//! JSON schemas as crews use them (tool parameters, task output schemas). This module owns two
//! things: a structural check of the schemas themselves (`check_schema`: the keywords the engine
//! and the providers rely on must be well formed; not a full meta-schema validation, and unknown
//! keywords are allowed, as JSON Schema allows them), and the validation of instances against
//! them (`validate_instance`: tool-call arguments and task outputs an LLM produced, with messages
//! the model can act on).

use std::cmp::Ordering;
use std::collections::HashMap;

use serde_json::{Map, Number, Value};

use super::validate::FieldError;

const TYPES: [&str; 7] = ["object", "array", "string", "number", "integer", "boolean", "null"];

/// Check `schema` found at `path`, pushing one error per malformed keyword.
pub fn check_schema(schema: &Value, path: &str, errors: &mut Vec<FieldError>) {
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
                    check_schema(sub, &format!("{path}.properties.{name}"), errors);
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
            check_schema(items, &format!("{path}.items"), errors);
        }
    }
    if let Some(additional) = object.get("additionalProperties") {
        if !additional.is_boolean() {
            check_schema(additional, &format!("{path}.additionalProperties"), errors);
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
                        check_schema(sub, &format!("{path}.{keyword}[{i}]"), errors);
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

/// How many levels below the root `validate_instance` descends (through properties, items and
/// the subschemas of `anyOf`, `oneOf`, `allOf` and `not`) before it gives up with an error.
pub const MAX_VALIDATION_DEPTH: usize = 64;

/// Most errors of one failed `anyOf`/`oneOf` alternative quoted in the message about it.
const ERRORS_PER_ALTERNATIVE: usize = 3;
/// Most `enum` values listed in a message.
const ENUM_VALUES_LISTED: usize = 20;

/// Validate `instance` against `schema`, returning every violation, each prefixed with the JSON
/// path of the instance location (`$.items[2].sku: expected string, got number`); empty when the
/// instance is valid.
///
/// Supported: boolean schemas, `type` (one or an array; `integer` accepts numbers without a
/// fractional part, `number` accepts integers), `enum`, `const`, `minimum`, `maximum`,
/// `exclusiveMinimum`, `exclusiveMaximum` (numeric form), `multipleOf`, `minLength`, `maxLength`
/// (in characters), `properties`, `required`, `additionalProperties`, `minProperties`,
/// `maxProperties`, `prefixItems`, `items` (one schema), `minItems`, `maxItems`, `uniqueItems`,
/// `allOf`, `anyOf`, `oneOf` and `not`. Numbers compare by value (`1` equals `1.0`).
///
/// Not supported, and ignored like any unknown keyword: `$ref`/`$defs` (no references are
/// resolved), `pattern` and `patternProperties` (no regex engine; so `additionalProperties`
/// counts every property outside `properties`), `format`, `dependentRequired`,
/// `if`/`then`/`else` and the other keywords of JSON Schema. Malformed keywords (say a string
/// `minimum`) are ignored too: `check_schema` reports them when a spec is submitted.
pub fn validate_instance(schema: &Value, instance: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    validate_at(schema, instance, "$", 0, &mut errors);
    errors
}

/// One schema applied to one instance location.
struct Check<'a> {
    schema: &'a Map<String, Value>,
    path: &'a str,
    depth: usize,
}

impl Check<'_> {
    fn keyword(&self, name: &str) -> Option<&Value> {
        self.schema.get(name)
    }

    /// `instance` at `path` against the subschema `schema`, one level deeper.
    fn descend(&self, schema: &Value, instance: &Value, path: &str, errors: &mut Vec<String>) {
        validate_at(schema, instance, path, self.depth + 1, errors);
    }
}

fn validate_at(schema: &Value, instance: &Value, path: &str, depth: usize, errors: &mut Vec<String>) {
    let schema = match schema {
        Value::Object(schema) => schema,
        Value::Bool(false) => {
            errors.push(format!("{path}: no value is allowed here"));
            return;
        }
        // `true` accepts everything; anything else is malformed and left to `check_schema`.
        _ => return,
    };
    if depth > MAX_VALIDATION_DEPTH {
        errors
            .push(format!("{path}: nested too deeply to validate (more than {MAX_VALIDATION_DEPTH} levels)"));
        return;
    }
    let check = Check { schema, path, depth };
    check_type_keyword(&check, instance, errors);
    check_enum_and_const(&check, instance, errors);
    match instance {
        Value::Number(number) => check_number(&check, number, errors),
        Value::String(string) => check_string(&check, string, errors),
        Value::Array(items) => check_array(&check, items, errors),
        Value::Object(object) => check_object(&check, object, errors),
        Value::Null | Value::Bool(_) => {}
    }
    check_all_of(&check, instance, errors);
    check_any_of(&check, instance, errors);
    check_one_of(&check, instance, errors);
    check_not(&check, instance, errors);
}

fn check_type_keyword(check: &Check, instance: &Value, errors: &mut Vec<String>) {
    let names: Vec<&str> = match check.keyword("type") {
        Some(Value::String(name)) => vec![name.as_str()],
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => return,
    };
    if names.is_empty() || names.iter().any(|name| has_type(instance, name)) {
        return;
    }
    let got = match instance {
        Value::Number(n) if names.contains(&"integer") => format!("number {n}"),
        _ => json_type(instance).to_owned(),
    };
    errors.push(format!("{}: expected {}, got {got}", check.path, join_words(&names, "or")));
}

fn has_type(instance: &Value, name: &str) -> bool {
    match (name, instance) {
        ("null", Value::Null)
        | ("boolean", Value::Bool(_))
        | ("number", Value::Number(_))
        | ("string", Value::String(_))
        | ("array", Value::Array(_))
        | ("object", Value::Object(_)) => true,
        ("integer", Value::Number(n)) => is_integral(n),
        _ => false,
    }
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

fn check_enum_and_const(check: &Check, instance: &Value, errors: &mut Vec<String>) {
    let enum_values = check.keyword("enum").and_then(Value::as_array).filter(|v| !v.is_empty());
    let constant = check.keyword("const");
    if enum_values.is_none() && constant.is_none() {
        return;
    }
    let key = canonical(instance);
    if let Some(values) = enum_values {
        if !values.iter().any(|v| canonical(v) == key) {
            let listed = values.iter().take(ENUM_VALUES_LISTED).map(render_schema_value);
            let more = values.len().saturating_sub(ENUM_VALUES_LISTED);
            let more = if more > 0 { format!(" (and {more} more)") } else { String::new() };
            errors.push(format!(
                "{}: must be one of {}{more}; got {}",
                check.path,
                listed.collect::<Vec<_>>().join(", "),
                describe_instance(instance)
            ));
        }
    }
    if let Some(constant) = constant.filter(|c| canonical(c) != key) {
        errors.push(format!(
            "{}: must be exactly {}; got {}",
            check.path,
            render_schema_value(constant),
            describe_instance(instance)
        ));
    }
}

/// A bound keyword, the orderings of instance against bound that satisfy it, and its wording.
type Bound = (&'static str, fn(Ordering) -> bool, &'static str);

fn check_number(check: &Check, number: &Number, errors: &mut Vec<String>) {
    let bounds: [Bound; 4] = [
        ("minimum", Ordering::is_ge, "at least"),
        ("exclusiveMinimum", Ordering::is_gt, "greater than"),
        ("maximum", Ordering::is_le, "at most"),
        ("exclusiveMaximum", Ordering::is_lt, "less than"),
    ];
    for (keyword, holds, wording) in bounds {
        let Some(bound) = check.keyword(keyword).and_then(Value::as_number) else { continue };
        if compare_numbers(number, bound).is_some_and(|ordering| !holds(ordering)) {
            errors.push(format!("{}: must be {wording} {bound}, got {number}", check.path));
        }
    }
    let divisor = check.keyword("multipleOf").and_then(Value::as_number);
    if let Some(divisor) = divisor.filter(|d| d.as_f64().is_some_and(|d| d > 0.0)) {
        if !is_multiple_of(number, divisor) {
            errors.push(format!("{}: must be a multiple of {divisor}, got {number}", check.path));
        }
    }
}

/// Whether a number has no fractional part (`3` and `3.0` do).
fn is_integral(number: &Number) -> bool {
    number.is_i64() || number.is_u64() || number.as_f64().is_some_and(|f| f.fract() == 0.0)
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

/// Exact for integers, by `f64` otherwise.
fn compare_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    match (as_integer(a), as_integer(b)) {
        (Some(a), Some(b)) => Some(a.cmp(&b)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

/// Exact for integers; for decimals the quotient must be within rounding error of an integer,
/// so that 0.3 counts as a multiple of 0.1.
fn is_multiple_of(number: &Number, divisor: &Number) -> bool {
    if let (Some(n), Some(d)) = (as_integer(number), as_integer(divisor)) {
        return d != 0 && n % d == 0;
    }
    let (Some(n), Some(d)) = (number.as_f64(), divisor.as_f64()) else { return false };
    let quotient = n / d;
    quotient.is_finite() && (quotient - quotient.round()).abs() <= (quotient.abs() * 1e-14).max(1e-9)
}

fn check_string(check: &Check, string: &str, errors: &mut Vec<String>) {
    let length = string.chars().count();
    if let Some(min) = check.keyword("minLength").and_then(as_count).filter(|min| length < *min) {
        errors.push(format!(
            "{}: must be at least {} long, got {length}",
            check.path,
            plural(min, "character", "characters")
        ));
    }
    if let Some(max) = check.keyword("maxLength").and_then(as_count).filter(|max| length > *max) {
        errors.push(format!(
            "{}: must be at most {} long, got {length}",
            check.path,
            plural(max, "character", "characters")
        ));
    }
}

fn check_array(check: &Check, items: &[Value], errors: &mut Vec<String>) {
    let prefix = check.keyword("prefixItems").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    for (i, (schema, item)) in prefix.iter().zip(items).enumerate() {
        check.descend(schema, item, &index_path(check.path, i), errors);
    }
    // Only the single-schema form of `items`; the old array (tuple) form is ignored.
    if let Some(schema) = check.keyword("items").filter(|s| s.is_object() || s.is_boolean()) {
        for (i, item) in items.iter().enumerate().skip(prefix.len()) {
            check.descend(schema, item, &index_path(check.path, i), errors);
        }
    }
    check_count(check, items.len(), ("minItems", "maxItems"), ("item", "items"), errors);
    if check.keyword("uniqueItems") == Some(&Value::Bool(true)) {
        check_unique(check.path, items, errors);
    }
}

/// One error per item equal to an earlier one.
fn check_unique(path: &str, items: &[Value], errors: &mut Vec<String>) {
    let mut first_index: HashMap<String, usize> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let first = *first_index.entry(canonical(item)).or_insert(i);
        if first != i {
            errors.push(format!(
                "{}: duplicate of {} (items must be unique)",
                index_path(path, i),
                index_path(path, first)
            ));
        }
    }
}

fn check_object(check: &Check, object: &Map<String, Value>, errors: &mut Vec<String>) {
    let properties = check.keyword("properties").and_then(Value::as_object);
    if let Some(properties) = properties {
        for (name, schema) in properties {
            if let Some(value) = object.get(name) {
                check.descend(schema, value, &property_path(check.path, name), errors);
            }
        }
    }
    let required = check.keyword("required").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    for name in required.iter().filter_map(Value::as_str) {
        if !object.contains_key(name) {
            errors.push(format!("{}: missing required property '{name}'", check.path));
        }
    }
    if let Some(additional) = check.keyword("additionalProperties") {
        check_additional(check, object, properties, additional, errors);
    }
    check_count(check, object.len(), ("minProperties", "maxProperties"), ("property", "properties"), errors);
}

/// `additionalProperties` applies to every property not named in `properties`.
fn check_additional(
    check: &Check,
    object: &Map<String, Value>,
    properties: Option<&Map<String, Value>>,
    additional: &Value,
    errors: &mut Vec<String>,
) {
    let declared = |name: &str| properties.is_some_and(|p| p.contains_key(name));
    for (name, value) in object.iter().filter(|(name, _)| !declared(name)) {
        if additional == &Value::Bool(false) {
            errors.push(format!(
                "{}: unexpected property '{name}'; {}",
                check.path,
                allowed_list(properties)
            ));
        } else {
            check.descend(additional, value, &property_path(check.path, name), errors);
        }
    }
}

fn allowed_list(properties: Option<&Map<String, Value>>) -> String {
    match properties.filter(|p| !p.is_empty()) {
        Some(properties) => {
            let names: Vec<String> = properties.keys().map(|name| format!("'{name}'")).collect();
            format!("allowed properties are {}", names.join(", "))
        }
        None => "this object allows no properties".to_owned(),
    }
}

/// `minItems`/`maxItems` or `minProperties`/`maxProperties` against `count`.
fn check_count(
    check: &Check,
    count: usize,
    (min_keyword, max_keyword): (&str, &str),
    (one, many): (&str, &str),
    errors: &mut Vec<String>,
) {
    if let Some(min) = check.keyword(min_keyword).and_then(as_count).filter(|min| count < *min) {
        errors.push(format!("{}: must have at least {}, got {count}", check.path, plural(min, one, many)));
    }
    if let Some(max) = check.keyword(max_keyword).and_then(as_count).filter(|max| count > *max) {
        errors.push(format!("{}: must have at most {}, got {count}", check.path, plural(max, one, many)));
    }
}

fn check_all_of(check: &Check, instance: &Value, errors: &mut Vec<String>) {
    for schema in subschemas(check, "allOf") {
        check.descend(schema, instance, check.path, errors);
    }
}

fn check_any_of(check: &Check, instance: &Value, errors: &mut Vec<String>) {
    let list = subschemas(check, "anyOf");
    if list.is_empty() {
        return;
    }
    let mut failures = Vec::new();
    for schema in list {
        let found = errors_of(check, schema, instance);
        if found.is_empty() {
            return;
        }
        failures.push(found);
    }
    errors.push(format!(
        "{}: must match at least one schema in anyOf, but matches none: {}",
        check.path,
        summarize_failures("anyOf", &failures)
    ));
}

fn check_one_of(check: &Check, instance: &Value, errors: &mut Vec<String>) {
    let results: Vec<Vec<String>> =
        subschemas(check, "oneOf").iter().map(|schema| errors_of(check, schema, instance)).collect();
    let matching: Vec<String> = results
        .iter()
        .enumerate()
        .filter(|(_, e)| e.is_empty())
        .map(|(i, _)| format!("oneOf[{i}]"))
        .collect();
    match matching.len() {
        1 => {}
        0 if results.is_empty() => {}
        0 => errors.push(format!(
            "{}: must match exactly one schema in oneOf, but matches none: {}",
            check.path,
            summarize_failures("oneOf", &results)
        )),
        _ => errors.push(format!(
            "{}: must match exactly one schema in oneOf, but matches {}",
            check.path,
            join_words(&matching, "and")
        )),
    }
}

fn check_not(check: &Check, instance: &Value, errors: &mut Vec<String>) {
    let Some(schema) = check.keyword("not") else { return };
    if (schema.is_object() || schema.is_boolean()) && errors_of(check, schema, instance).is_empty() {
        errors.push(format!("{}: must not match the schema {}", check.path, render_schema_value(schema)));
    }
}

/// The schemas listed under an applicator keyword; none when it is absent or malformed.
fn subschemas<'a>(check: &Check<'a>, keyword: &str) -> &'a [Value] {
    check.schema.get(keyword).and_then(Value::as_array).map_or(&[][..], Vec::as_slice)
}

/// The violations of `instance` against a subschema, kept apart from the caller's.
fn errors_of(check: &Check, schema: &Value, instance: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check.descend(schema, instance, check.path, &mut errors);
    errors
}

/// `(anyOf[0]) $.x: expected string, got number; (anyOf[1]) ...`, a few errors per alternative.
fn summarize_failures(keyword: &str, failures: &[Vec<String>]) -> String {
    let mut parts = Vec::new();
    for (i, errors) in failures.iter().enumerate() {
        let mut quoted = errors.iter().take(ERRORS_PER_ALTERNATIVE).cloned().collect::<Vec<_>>().join("; ");
        if errors.len() > ERRORS_PER_ALTERNATIVE {
            quoted.push_str(&format!("; and {} more", errors.len() - ERRORS_PER_ALTERNATIVE));
        }
        parts.push(format!("({keyword}[{i}]) {quoted}"));
    }
    parts.join("; ")
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

/// A non-negative integer keyword value (`3` or `3.0`).
fn as_count(value: &Value) -> Option<usize> {
    value.as_number().and_then(as_integer).and_then(|n| usize::try_from(n).ok())
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
        validate_instance(&schema, &instance)
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
        // Bounds do not apply to other types, and the boolean (draft 4) form is ignored.
        assert!(violations(schema, json!("0")).is_empty());
        assert!(violations(json!({"minimum": 5, "exclusiveMinimum": true}), json!(5)).is_empty());
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
        assert_eq!(violations(json!({"multipleOf": 2}), json!(u64::MAX)).len(), 1);
        // A divisor that is not positive is malformed and ignored.
        assert!(violations(json!({"multipleOf": 0}), json!(3)).is_empty());
        assert!(violations(json!({"multipleOf": -2}), json!(3)).is_empty());
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
        assert_eq!(
            violations(schema.clone(), json!([1, 2, 1.0, 2, 1])),
            [
                "$[2]: duplicate of $[0] (items must be unique)",
                "$[3]: duplicate of $[1] (items must be unique)",
                "$[4]: duplicate of $[0] (items must be unique)"
            ]
        );
        assert_eq!(
            violations(schema, json!([{"a": 1, "b": 2}, {"b": 2, "a": 1}])),
            ["$[1]: duplicate of $[0] (items must be unique)"]
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
    fn unknown_and_unsupported_keywords_are_ignored() {
        let schema = json!({"type": "string", "description": "d", "default": 1, "pattern": "^a$",
            "format": "email", "$ref": "#/$defs/x", "x-vendor": {"type": "integer"}});
        assert!(violations(schema, json!("not an email")).is_empty());
    }

    #[test]
    fn malformed_keywords_are_ignored() {
        let schema = json!({"type": 5, "minimum": "3", "required": "a", "properties": [], "items": 3,
            "enum": [], "anyOf": {}, "maxLength": -1, "minItems": 1.5});
        assert!(violations(schema, json!({})).is_empty());
        assert!(violations(json!(42), json!("anything")).is_empty());
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
        let found = violations(nested_array_schema(200), nested_array(200));
        let path = format!("${}", "[0]".repeat(MAX_VALIDATION_DEPTH + 1));
        assert_eq!(found, [format!("{path}: nested too deeply to validate (more than 64 levels)")]);
        // Subschemas count as levels too.
        let schema = (0..100).fold(json!({"type": "string"}), |schema, _| json!({"allOf": [schema]}));
        assert_eq!(violations(schema, json!(1)), ["$: nested too deeply to validate (more than 64 levels)"]);
    }

    #[test]
    fn deep_instances_under_shallow_schemas_are_fine() {
        let deep = nested_array(1000);
        assert!(violations(json!({"type": "array"}), deep.clone()).is_empty());
        assert!(violations(json!({"enum": [deep.clone()]}), deep.clone()).is_empty());
        assert_eq!(violations(json!({"uniqueItems": true}), json!([deep.clone(), deep])).len(), 1);
    }
}
