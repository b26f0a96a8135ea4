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

/// One validator per request body of the document (the schemas its
/// operations' `requestBody` name), built once; the components they refer
/// to are shared by all of them.
static VALIDATORS: LazyLock<HashMap<String, jsonschema::Validator>> = LazyLock::new(|| {
    let doc = crate::openapi::api_json();
    let mut components = doc["components"].clone();
    strip_value_rules(&mut components);
    let root = json!({"components": components});
    body_schema_names(doc)
        .into_iter()
        .map(|name| {
            let mut schema = root.clone();
            schema["$ref"] = json!(format!("#/components/schemas/{name}"));
            // The document is generated from our own types: a schema that
            // does not compile is a bug to see at once, not a check to skip.
            let validator = jsonschema::validator_for(&schema)
                .unwrap_or_else(|e| panic!("the schema of request body {name} compiles: {e}"));
            (name, validator)
        })
        .collect()
});

/// Build the validators now (at startup) rather than on the first request.
pub fn prepare() {
    LazyLock::force(&VALIDATORS);
}

/// The component names the document's request bodies refer to.
fn body_schema_names(doc: &Value) -> Vec<String> {
    let mut names: Vec<String> = doc["paths"]
        .as_object()
        .into_iter()
        .flat_map(|paths| paths.values())
        .filter_map(Value::as_object)
        .flat_map(|item| item.values())
        .filter_map(|op| op.pointer("/requestBody/content/application~1json/schema"))
        .filter_map(|schema| {
            // `Option<T>` bodies are `oneOf [T, null]`.
            let direct = schema.get("$ref");
            let optional = schema.pointer("/oneOf/0/$ref");
            direct
                .or(optional)?
                .as_str()?
                .rsplit('/')
                .next()
                .map(str::to_owned)
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

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

/// The first way `value` does not have the shape of the named body schema:
/// the path of the offending field (`toolBindings[0].toolId`, empty for the
/// whole body) and what is wrong, without the value itself (it may hold a
/// secret or an `env` value, and a message should not echo a whole body).
/// `None` when it conforms.
///
/// Every `ApiJson<T>` names its `T` as the operation's `request_body`
/// (the `every_body_type_has_a_validator` test holds the list); a body
/// type without a validator is logged as the bug it is.
pub fn shape_problem(schema_name: &str, value: &Value) -> Option<(String, String)> {
    let Some(validator) = VALIDATORS.get(schema_name) else {
        tracing::error!(
            schema_name,
            "a request body type is not in the OpenAPI document"
        );
        debug_assert!(false, "{schema_name} is the request_body of its operation");
        return None;
    };
    let error = validator.iter_errors(value).next()?;
    let error = through_optional(&error);
    let path = field_path(&error.instance_path().to_string());
    Some((path, error.masked().to_string()))
}

/// An `Option<T>` field is `oneOf [null, T]` in the document: when a value
/// fails both, the `null` branch's mismatch says nothing, so the error is
/// the `T` branch's own (`opencode.config`, not `opencode`), however deep.
fn through_optional<'a, 'e>(
    error: &'e jsonschema::ValidationError<'a>,
) -> &'e jsonschema::ValidationError<'a> {
    use jsonschema::error::ValidationErrorKind as Kind;
    let Kind::OneOfNotValid { context } = error.kind() else {
        return error;
    };
    let at = error.instance_path();
    let not_null = |branch: &Vec<jsonschema::ValidationError<'static>>| matches!(branch.as_slice(), [e] if e.instance_path() == at && matches!(e.kind(), Kind::Type { .. }));
    match context.as_slice() {
        [a, b] if not_null(a) && !b.is_empty() => through_optional(&b[0]),
        [a, b] if not_null(b) && !a.is_empty() => through_optional(&a[0]),
        _ => error,
    }
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

    /// Every type a handler reads as a body is a request body of the
    /// document, so none goes unchecked.
    #[test]
    fn every_body_type_has_a_validator() {
        use utoipa::ToSchema;
        let names = [
            rtc_protocol::Assistant::name(),
            rtc_protocol::Workflow::name(),
            rtc_protocol::Tool::name(),
            rtc_protocol::McpServer::name(),
            rtc_protocol::TaskBackend::name(),
            rtc_protocol::RealtimeInterface::name(),
            rtc_protocol::SpeechInterface::name(),
            rtc_protocol::PutSecretParams::name(),
            rtc_protocol::CreateWorkspaceParams::name(),
            rtc_protocol::CreateSessionParams::name(),
            rtc_protocol::SendMessageParams::name(),
            crate::routes::sessions::EndParams::name(),
            rtc_protocol::CleanupParams::name(),
            rtc_protocol::ResumeGoalParams::name(),
            rtc_protocol::AnswerParams::name(),
            rtc_protocol::ConversationTest::name(),
            rtc_protocol::WorkspaceQuota::name(),
            rtc_protocol::ToolTestRequest::name(),
        ];
        for name in &names {
            assert!(VALIDATORS.contains_key(name.as_ref()), "{name}");
        }
        assert_eq!(
            VALIDATORS.len(),
            names.len(),
            "{:?}",
            VALIDATORS.keys().collect::<Vec<_>>()
        );
    }

    #[test]
    fn problems_do_not_echo_the_value() {
        let (_, message) = shape_problem(
            "McpServer",
            &json!({"name": "m", "transport": {"type": "stdio", "command": "x", "env": {"K": "hunter2-secret"}, "extra": [1]}, "description": ["hunter3-secret"]}),
        )
        .unwrap_or_default();
        assert!(!message.contains("hunter"), "{message}");
    }

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
    fn the_design_workflow_has_the_documented_shape() {
        let example: Value = serde_json::from_str(include_str!(
            "../../cli/tests/fixtures/workflows/order_support_v4.json"
        ))
        .unwrap_or_default();
        assert_eq!(shape_problem("Workflow", &example), None);
        let mut disabled = example.clone();
        disabled["nodes"][0]["builtInTools"]["endConversation"] = Value::Null;
        assert_eq!(shape_problem("Workflow", &disabled), None, "null disables");
    }

    #[test]
    fn a_bad_optional_field_is_named_itself() {
        let (field, message) = shape_problem(
            "TaskBackend",
            &json!({"name": "b", "type": "opencode", "opencode": {"command": "x", "config": ["hunter2-secret"], "model": {"providerID": "p", "modelID": "m"}}}),
        )
        .unwrap_or_default();
        assert_eq!(field, "opencode.config");
        assert!(!message.contains("hunter2"), "{message}");
        let (field, _) = shape_problem(
            "TaskBackend",
            &json!({"name": "b", "type": "reasoner", "reasoner": {"toolBindings": [{"toolId": 3}]}}),
        )
        .unwrap_or_default();
        assert_eq!(field, "reasoner.toolBindings[0].toolId");
    }

    #[test]
    fn pointers_become_field_paths() {
        assert_eq!(field_path(""), "");
        assert_eq!(field_path("/a/0/b~1c"), "a[0].b/c");
    }
}
