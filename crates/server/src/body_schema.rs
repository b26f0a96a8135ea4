//! Request bodies are checked against their schema in the served OpenAPI
//! document before they are used, so the server accepts exactly the shapes
//! the document describes: serde alone would also read a struct from a JSON
//! array (`"builtInTools": [null]`), which the document does not allow.
//!
//! Only the *shape* is checked here (types, required and unknown fields,
//! enums, variants). Value rules (patterns, lengths, ranges) are in the
//! schemas too, for clients, but the domain validators enforce them, each
//! with its stable code naming the field (`invalid_name`, `out_of_range`,
//! …); checking them here first would answer a generic code instead.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::{Value, json};

/// Keywords that state value rules, left to the domain validators.
const VALUE_RULES: &[&str] = &[
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "format",
];

/// One validator per component schema of the document.
static VALIDATORS: LazyLock<HashMap<String, jsonschema::Validator>> = LazyLock::new(|| {
    let doc = crate::openapi::api_json();
    let mut schemas = doc["components"]["schemas"].clone();
    strip_value_rules(&mut schemas);
    let names: Vec<String> = schemas
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let root = json!({"components": {"schemas": schemas}});
    names
        .into_iter()
        .filter_map(|name| {
            let mut schema = root.clone();
            schema["$ref"] = json!(format!("#/components/schemas/{name}"));
            let validator = jsonschema::validator_for(&schema).ok()?;
            Some((name, validator))
        })
        .collect()
});

fn strip_value_rules(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            // A keyword's value is a string or number; a field that happens
            // to be called `pattern` or `format` maps to a schema object and
            // stays.
            for key in VALUE_RULES {
                if map.get(*key).is_some_and(|v| !v.is_object()) {
                    map.remove(*key);
                }
            }
            map.values_mut().for_each(strip_value_rules);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_value_rules),
        _ => {}
    }
}

/// The first way `value` does not have the shape of the named schema: the
/// path of the offending field (`toolBindings[0].toolId`, empty for the
/// whole body) and what is wrong. `None` when it conforms, or when the
/// document has no such schema.
pub fn shape_problem(schema_name: &str, value: &Value) -> Option<(String, String)> {
    let validator = VALIDATORS.get(schema_name)?;
    let error = validator.iter_errors(value).next()?;
    let path = field_path(&error.instance_path().to_string());
    Some((path, error.to_string()))
}

/// A JSON pointer (`/toolBindings/0/toolId`) as the API names fields.
fn field_path(pointer: &str) -> String {
    let mut out = String::new();
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if segment.parse::<usize>().is_ok() {
            out.push_str(&format!("[{segment}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&segment);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_struct_is_not_read_from_an_array() {
        let problem = shape_problem(
            "Assistant",
            &json!({"name": "a", "builtInTools": [null, null]}),
        );
        let (field, message) = problem.unwrap_or_default();
        assert_eq!(field, "builtInTools");
        assert!(message.contains("object"), "{message}");
    }

    #[test]
    fn value_rules_are_left_to_the_domain_validators() {
        assert_eq!(
            shape_problem("Assistant", &json!({"name": "", "llm": {"temperature": 9}})),
            None
        );
        assert_eq!(
            shape_problem("Tool", &json!({"name": "x y", "type": "http"})),
            None
        );
    }

    #[test]
    fn unknown_fields_and_wrong_types_are_named() {
        let (field, _) =
            shape_problem("Tool", &json!({"name": "t", "type": "http", "toolIds": []}))
                .unwrap_or_default();
        assert_eq!(field, "");
        let (field, _) = shape_problem(
            "Assistant",
            &json!({"name": "a", "toolBindings": [{"toolId": 3}]}),
        )
        .unwrap_or_default();
        assert_eq!(field, "toolBindings[0].toolId");
    }

    #[test]
    fn pointers_become_field_paths() {
        assert_eq!(field_path(""), "");
        assert_eq!(field_path("/a/0/b~1c"), "a[0].b/c");
    }
}
