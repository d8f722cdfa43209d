//! The schema checks and the validation messages, keyword by keyword.

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
    assert_eq!(violations(json!({"type": "boolean"}), json!("true")), ["$: expected boolean, got string"]);
    assert_eq!(violations(json!({"type": "array"}), json!({})), ["$: expected array, got object"]);
    assert_eq!(violations(json!({"type": "string"}), json!(null)), ["$: expected string, got null"]);
}

#[test]
fn integer_accepts_integral_numbers_and_number_accepts_integers() {
    for integral in [json!(3), json!(3.0), json!(-7), json!(0), json!(u64::MAX), json!(1e300)] {
        assert!(violations(json!({"type": "integer"}), integral.clone()).is_empty(), "{integral}");
        assert!(violations(json!({"type": "number"}), integral.clone()).is_empty(), "{integral}");
    }
    assert_eq!(violations(json!({"type": "integer"}), json!(3.5)), ["$: expected integer, got number 3.5"]);
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
    assert_eq!(violations(schema.clone(), json!("héllo!")), ["$: must be at most 5 characters long, got 6"]);
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
    assert_eq!(violations(recursive, tree), ["$.children[0].children[0].name: expected string, got number"]);
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
