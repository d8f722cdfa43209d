//! Reading a request's JSON into a type so that a 422 names every field that does not fit, not
//! only the first one serde stops at: when serde refuses the value, the value is checked against
//! the type's own schema (the one the OpenAPI document shows, from `utoipa::ToSchema`), and each
//! violation at another field joins serde's error. A value serde accepts costs no schema check.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

use super::field::FieldError;
use super::schema::CompiledSchema;

/// Deserialize `value` into `T`; a mismatch is serde's error naming its field, then every other
/// field that breaks `T`'s schema.
pub fn parse_every_field<T: DeserializeOwned + ToSchema>(value: &Value) -> Result<T, Vec<FieldError>> {
    let error = match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(parsed) => return Ok(parsed),
        Err(error) => error,
    };
    let path = error.path().to_string();
    let first =
        FieldError::new(if path == "." { String::new() } else { path }, error.into_inner().to_string());
    let serde_missing = quoted(&first.message, "missing field `", '`').map(str::to_owned);
    let mut errors = vec![first];
    let Some(schema) = schema_of::<T>() else { return Err(errors) };
    for (path, message) in schema.violations(value) {
        let field = path.trim_start_matches('$').trim_start_matches('.').to_owned();
        // At serde's field, serde has said what is wrong; the schema adds only the other
        // properties missing there (both name a missing property at the object that lacks it).
        let adds = if field == errors[0].field {
            quoted(&message, "missing required property '", '\'')
                .is_some_and(|p| Some(p) != serde_missing.as_deref())
        } else {
            !errors.iter().any(|e| e.field == field && e.message == message)
        };
        if adds {
            errors.push(FieldError::new(field, message));
        }
    }
    Err(errors)
}

/// The text between `prefix` and the next `end` in `message`.
fn quoted<'a>(message: &'a str, prefix: &str, end: char) -> Option<&'a str> {
    let rest = message.split_once(prefix)?.1;
    rest.split_once(end).map(|(name, _)| name)
}

/// `T`'s schema with every schema it references, compiled once per type.
fn schema_of<T: ToSchema>() -> Option<CompiledSchema> {
    static COMPILED: OnceLock<Mutex<HashMap<String, Option<CompiledSchema>>>> = OnceLock::new();
    let name = T::name().into_owned();
    let mut compiled = COMPILED.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    compiled
        .entry(name)
        .or_insert_with(|| {
            let root = document_of::<T>();
            CompiledSchema::compile(&root)
                .inspect_err(|error| tracing::error!(?error, "a request type's schema does not compile"))
                .ok()
        })
        .clone()
}

/// A JSON Schema document for `T`: a reference to it among the schemas it uses, laid out as the
/// OpenAPI document lays them out (`#/components/schemas/<name>`), so their references resolve.
fn document_of<T: ToSchema>() -> Value {
    let mut used = Vec::new();
    T::schemas(&mut used);
    let mut schemas = Map::new();
    schemas.insert(T::name().into_owned(), serde_json::to_value(T::schema()).unwrap_or(Value::Null));
    for (name, schema) in used {
        schemas.insert(name, serde_json::to_value(schema).unwrap_or(Value::Null));
    }
    json!({
        "$ref": format!("#/components/schemas/{}", T::name()),
        "components": {"schemas": schemas},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::CrewSpec;

    fn fields(errors: &[FieldError]) -> Vec<&str> {
        errors.iter().map(|e| e.field.as_str()).collect()
    }

    #[test]
    fn a_crew_missing_several_fields_names_each() {
        let crew = json!({
            "name": "c",
            "agents": [{"name": "a", "role": "r"}, {"name": "b", "role": "r", "goal": "g", "backstory": "b", "max_iter": "x"}],
            "tasks": [{"name": "t", "description": "d", "agent": "a"}]
        });
        let errors = parse_every_field::<CrewSpec>(&crew).expect_err("invalid");
        assert_eq!(errors[0].field, "agents[0]", "serde's error first: {errors:?}");
        assert!(errors[0].message.contains("missing field"), "{errors:?}");
        let named = fields(&errors);
        for field in ["agents[1].max_iter", "tasks[0]"] {
            assert!(named.contains(&field), "{field} in {errors:?}");
        }
        // Both of agents[0]'s missing fields are said, once each (serde names one, the schema the
        // other).
        let about_first: Vec<&str> =
            errors.iter().filter(|e| e.field == "agents[0]").map(|e| e.message.as_str()).collect();
        assert_eq!(about_first.len(), 2, "{errors:?}");
        assert!(about_first.iter().any(|m| m.contains("goal")), "{errors:?}");
        assert!(about_first.iter().any(|m| m.contains("backstory")), "{errors:?}");
        assert!(
            errors.iter().any(|e| e.field == "tasks[0]" && e.message.contains("expected_output")),
            "{errors:?}"
        );
    }

    #[test]
    fn a_valid_crew_parses_and_a_single_error_stays_single() {
        let crew = json!({
            "name": "c",
            "agents": [{"name": "a", "role": "r", "goal": "g", "backstory": "b"}],
            "tasks": [{"name": "t", "description": "d", "expected_output": "e", "agent": "a"}]
        });
        assert!(parse_every_field::<CrewSpec>(&crew).is_ok());
        let mut one = crew.clone();
        one["agents"][0]["max_iter"] = json!("many");
        let errors = parse_every_field::<CrewSpec>(&one).expect_err("max_iter a string");
        assert_eq!(fields(&errors), ["agents[0].max_iter"], "{errors:?}");
    }
}
