//! A structural check of the JSON schemas a crew declares (tool parameters, task output schemas):
//! the keywords the engine and the providers rely on must be well formed. It is not a full
//! meta-schema validation; unknown keywords are allowed, as JSON Schema allows them.

use serde_json::Value;

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
}
