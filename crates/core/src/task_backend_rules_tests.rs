use std::collections::{BTreeMap, BTreeSet};

use rtc_protocol::{Assistant, RealtimeInterface, TaskBackend, Tool};
use serde_json::{Value, json};

use super::*;
use crate::assistant_rules::{AssistantContext, validate_assistant};
use crate::realtime::shipped_interfaces;
use crate::test_support::put as set;

fn tools() -> BTreeMap<String, Tool> {
    let list = [
        json!({"id": "tool_search", "name": "search", "type": "http",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}, "tenant": {"type": "string"}, "limit": {"type": "integer", "maximum": 10}}, "required": ["q"]},
            "templateInputs": [{"name": "region"}],
            "http": {"method": "GET", "url": "https://x/{{input__region}}?q={{q}}&t={{tenant}}&l={{limit}}"}}),
        json!({"id": "tool_echo", "name": "echo", "type": "mcp", "parameters": {"type": "object", "properties": {"message": {"type": "string"}}}, "mcp": {"serverId": "m", "remoteToolName": "echo"}}),
        json!({"id": "tool_echo2", "name": "echo", "type": "http", "http": {"method": "GET", "url": "https://y/"}}),
        json!({"id": "tool_notify", "name": "notify", "type": "client", "client": {"functionName": "notify"}}),
    ];
    list.into_iter()
        .map(|v| {
            let t: Tool = serde_json::from_value(v).unwrap();
            (t.id.clone().unwrap(), t)
        })
        .collect()
}

fn reasoner() -> Value {
    json!({
        "name": "Research",
        "type": "reasoner",
        "reasoner": {
            "llm": {"provider": "openai", "model": "gpt-x"},
            "systemPrompt": "You research.",
            "maxSteps": 40,
            "toolBindings": [{
                "toolId": "tool_search",
                "argumentBindings": {
                    "q": {"source": "model"},
                    "tenant": {"source": "variable", "variableName": "tenant_id"},
                    "limit": {"source": "literal", "value": 5}
                },
                "templateBindings": {"region": {"source": "template", "template": "{{region}}-{{system__user_id}}"}}
            }, {"toolId": "tool_echo"}]
        },
        "timeoutSeconds": 900,
        "maxConcurrentTasks": 4
    })
}

fn opencode() -> Value {
    json!({
        "name": "Coder",
        "type": "opencode",
        "opencode": {
            "baseUrl": "http://127.0.0.1:4096",
            "password": "{{secret__opencode_pw}}",
            "model": {"providerID": "mock", "modelID": "tools-0"},
            "directory": "/srv/work",
            "agent": "build"
        }
    })
}

fn started() -> Value {
    json!({
        "name": "Local coder",
        "type": "opencode",
        "opencode": {
            "command": "/usr/local/bin/opencode",
            "config": {"provider": {"mock": {"options": {"apiKey": "{{secret__llm_key}}", "baseURL": "http://127.0.0.1:1/v1"}}}},
            "model": {"providerID": "mock", "modelID": "tools-0"}
        }
    })
}

fn backend(v: Value) -> TaskBackend {
    serde_json::from_value(v).unwrap()
}

fn validate(v: Value) -> Result<(), crate::ValidationError> {
    let tools = tools();
    let providers = BTreeSet::from(["openai".to_owned()]);
    let secrets = ["secret__opencode_pw", "secret__llm_key"];
    validate_task_backend(
        &backend(v),
        &TaskBackendContext {
            tools: &tools,
            providers: &providers,
            secret_exists: &|n| secrets.contains(&n),
        },
    )
}

#[test]
fn the_design_examples_are_valid() {
    validate(reasoner()).unwrap();
    validate(opencode()).unwrap();
    validate(started()).unwrap();
    let minimal = json!({"name": "R", "type": "reasoner", "reasoner": {}});
    validate(minimal).unwrap();
}

#[test]
fn task_backend_rules_table() {
    let r = reasoner;
    let o = opencode;
    let c = started;
    let cases: Vec<(Value, &str, Value, &str, &str)> = vec![
        (r(), "/name", json!(" "), "invalid_name", "name"),
        (
            r(),
            "/description",
            json!("x".repeat(4_097)),
            "too_long",
            "description",
        ),
        (r(), "/reasoner", Value::Null, "missing_field", "reasoner"),
        (
            r(),
            "/opencode",
            o()["opencode"].clone(),
            "unexpected_field",
            "opencode",
        ),
        (o(), "/opencode", Value::Null, "missing_field", "opencode"),
        (o(), "/reasoner", json!({}), "unexpected_field", "reasoner"),
        (
            r(),
            "/timeoutSeconds",
            json!(0),
            "out_of_range",
            "timeoutSeconds",
        ),
        (
            o(),
            "/timeoutSeconds",
            json!(86_401),
            "out_of_range",
            "timeoutSeconds",
        ),
        (
            r(),
            "/maxConcurrentTasks",
            json!(0),
            "out_of_range",
            "maxConcurrentTasks",
        ),
        (
            o(),
            "/maxConcurrentTasks",
            json!(65),
            "out_of_range",
            "maxConcurrentTasks",
        ),
        (
            r(),
            "/reasoner/maxSteps",
            json!(0),
            "out_of_range",
            "reasoner.maxSteps",
        ),
        (
            r(),
            "/reasoner/maxSteps",
            json!(201),
            "out_of_range",
            "reasoner.maxSteps",
        ),
        (
            r(),
            "/reasoner/llm/provider",
            json!("nobody"),
            "unknown_provider",
            "reasoner.llm.provider",
        ),
        (
            r(),
            "/reasoner/llm/temperature",
            json!(3),
            "out_of_range",
            "reasoner.llm.temperature",
        ),
        (
            r(),
            "/reasoner/llm/model",
            json!(" "),
            "invalid_name",
            "reasoner.llm.model",
        ),
        (
            r(),
            "/reasoner/systemPrompt",
            json!("x".repeat(200_001)),
            "too_long",
            "reasoner.systemPrompt",
        ),
        (
            r(),
            "/reasoner/systemPrompt",
            json!("Use {{secret__opencode_pw}}"),
            "secret_not_allowed",
            "reasoner.systemPrompt",
        ),
        (
            r(),
            "/reasoner/toolBindings/1/toolId",
            json!("nope"),
            "unknown_tool",
            "reasoner.toolBindings[1].toolId",
        ),
        (
            r(),
            "/reasoner/toolBindings/1/toolId",
            json!("tool_notify"),
            "tool_type_unsupported",
            "reasoner.toolBindings[1].toolId",
        ),
        (
            r(),
            "/reasoner/toolBindings/1/resultAssignments",
            json!({"x": "status"}),
            "result_assignments_not_allowed",
            "reasoner.toolBindings[1].resultAssignments",
        ),
        (
            r(),
            "/reasoner/toolBindings/1/toolId",
            json!("tool_search"),
            "missing_argument",
            "reasoner.toolBindings[1].argumentBindings.q",
        ),
        (
            r(),
            "/reasoner/toolBindings/0",
            json!({"toolId": "tool_echo2"}),
            "duplicate_tool_name",
            "reasoner.toolBindings[1].toolId",
        ),
        (
            r(),
            "/reasoner/toolBindings/0/argumentBindings/q",
            Value::Null,
            "missing_argument",
            "reasoner.toolBindings[0].argumentBindings.q",
        ),
        (
            r(),
            "/reasoner/toolBindings/0/argumentBindings/ghost",
            json!({"source": "model"}),
            "unknown_argument",
            "reasoner.toolBindings[0].argumentBindings.ghost",
        ),
        (
            r(),
            "/reasoner/toolBindings/0/argumentBindings/limit",
            json!({"source": "literal", "value": 50}),
            "invalid_literal",
            "reasoner.toolBindings[0].argumentBindings.limit.value",
        ),
        (
            r(),
            "/reasoner/toolBindings/0/argumentBindings/tenant",
            json!({"source": "variable", "variableName": "bad-name"}),
            "invalid_name",
            "reasoner.toolBindings[0].argumentBindings.tenant.variableName",
        ),
        (
            r(),
            "/reasoner/toolBindings/0/argumentBindings/tenant",
            json!({"source": "variable", "variableName": "system__nope"}),
            "unknown_variable",
            "reasoner.toolBindings[0].argumentBindings.tenant.variableName",
        ),
        (
            r(),
            "/reasoner/toolBindings/0/argumentBindings/tenant",
            json!({"source": "template", "template": "{{secret__opencode_pw}}"}),
            "secret_not_allowed",
            "reasoner.toolBindings[0].argumentBindings.tenant.template",
        ),
        (
            r(),
            "/reasoner/toolBindings/0/templateBindings/region",
            json!({"source": "model"}),
            "model_source_not_allowed",
            "reasoner.toolBindings[0].templateBindings.region.source",
        ),
        (
            r(),
            "/reasoner/toolBindings/0/modelResultFilter",
            json!(["a..b"]),
            "invalid_path",
            "reasoner.toolBindings[0].modelResultFilter[0]",
        ),
        (
            o(),
            "/opencode/baseUrl",
            json!("ftp://x"),
            "invalid_url",
            "opencode.baseUrl",
        ),
        (
            o(),
            "/opencode/baseUrl",
            json!("127.0.0.1:4096"),
            "invalid_url",
            "opencode.baseUrl",
        ),
        (
            o(),
            "/opencode/baseUrl",
            json!("http://opencode:pw@127.0.0.1:4096"),
            "invalid_url",
            "opencode.baseUrl",
        ),
        (
            o(),
            "/opencode/command",
            json!("opencode"),
            "unexpected_field",
            "opencode.command",
        ),
        (
            o(),
            "/opencode/baseUrl",
            Value::Null,
            "missing_field",
            "opencode.baseUrl",
        ),
        (
            o(),
            "/opencode/password",
            json!("hunter2-plain"),
            "invalid_placeholder",
            "opencode.password",
        ),
        (
            o(),
            "/opencode/password",
            json!("x{{secret__opencode_pw}}"),
            "invalid_placeholder",
            "opencode.password",
        ),
        (
            o(),
            "/opencode/password",
            json!("{{secret__opencode_pw}}{{secret__llm_key}}"),
            "invalid_placeholder",
            "opencode.password",
        ),
        (
            o(),
            "/opencode/password",
            json!(" {{secret__opencode_pw}}"),
            "invalid_placeholder",
            "opencode.password",
        ),
        (
            o(),
            "/opencode/password",
            json!("{{tenant}}"),
            "invalid_placeholder",
            "opencode.password",
        ),
        (
            o(),
            "/opencode/password",
            json!("{{secret__missing}}"),
            "unknown_secret",
            "opencode.password",
        ),
        (
            o(),
            "/opencode/config",
            json!({}),
            "unexpected_field",
            "opencode.config",
        ),
        (
            o(),
            "/opencode/directory",
            json!("relative/dir"),
            "invalid_value",
            "opencode.directory",
        ),
        (
            o(),
            "/opencode/model/providerID",
            json!(""),
            "invalid_name",
            "opencode.model.providerID",
        ),
        (
            o(),
            "/opencode/model/modelID",
            json!(" "),
            "invalid_name",
            "opencode.model.modelID",
        ),
        (
            o(),
            "/opencode/agent",
            json!(""),
            "invalid_name",
            "opencode.agent",
        ),
        (
            c(),
            "/opencode/command",
            json!("  "),
            "invalid_name",
            "opencode.command",
        ),
        (
            c(),
            "/opencode/password",
            json!("{{secret__opencode_pw}}"),
            "unexpected_field",
            "opencode.password",
        ),
        (
            c(),
            "/opencode/config",
            json!(["not", "an", "object"]),
            "invalid_value",
            "opencode.config",
        ),
        (
            c(),
            "/opencode/config/provider/mock/options/apiKey",
            json!("{{secret__missing}}"),
            "unknown_secret",
            "opencode.config.provider.mock.options.apiKey",
        ),
        (
            c(),
            "/opencode/config/provider/mock/options/apiKey",
            json!("{{tenant}}"),
            "invalid_placeholder",
            "opencode.config.provider.mock.options.apiKey",
        ),
    ];
    for (base, pointer, value, code, field) in cases {
        let err = validate(set(base, pointer, value.clone()))
            .expect_err(&format!("{pointer} = {value} is refused"));
        assert_eq!(
            (err.code, err.field.as_str()),
            (code, field),
            "{pointer} = {value}: {}",
            err.message
        );
    }
}

#[test]
fn too_many_bindings_are_refused() {
    let one = json!({"toolId": "tool_echo"});
    let v = set(reasoner(), "/reasoner/toolBindings", json!(vec![one; 129]));
    let err = validate(v).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_str()),
        ("too_many", "reasoner.toolBindings")
    );
}

#[test]
fn a_password_is_never_quoted() {
    for password in [
        "hunter2-plain",
        "hunter2{{",
        "{{secret__opencode_pw}} hunter2",
    ] {
        let err = validate(set(opencode(), "/opencode/password", json!(password))).unwrap_err();
        assert!(!err.message.contains("hunter2"), "{}", err.message);
    }
}

#[test]
fn references_and_variables() {
    let r = backend(reasoner());
    assert_eq!(
        referenced_tools(&r),
        BTreeSet::from(["tool_search".to_owned(), "tool_echo".to_owned()])
    );
    assert_eq!(
        backend_variables(&r),
        BTreeSet::from([
            "region".to_owned(),
            "system__user_id".to_owned(),
            "tenant_id".to_owned()
        ])
    );
    assert!(!starts_process(&r));
    assert_eq!(
        referenced_secrets(&backend(opencode())),
        ["secret__opencode_pw"]
    );
    let c = backend(started());
    assert_eq!(referenced_secrets(&c), ["secret__llm_key"]);
    assert!(starts_process(&c));
    assert!(referenced_tools(&c).is_empty());
}

fn assistant(
    v: Value,
    backend: Option<&TaskBackend>,
    iface: Option<&RealtimeInterface>,
) -> Result<(), crate::ValidationError> {
    let a: Assistant = serde_json::from_value(v).unwrap();
    let tools = BTreeMap::new();
    let providers = BTreeSet::new();
    validate_assistant(
        &a,
        &AssistantContext {
            tools: &tools,
            realtime_interface: iface,
            providers: &providers,
            task_backend: backend,
            speech_interfaces: &BTreeMap::new(),
            update_bounds: Default::default(),
        },
    )
}

#[test]
fn an_assistant_names_an_existing_backend_and_declares_its_variables() {
    let r = backend(reasoner());
    let declared = json!({
        "name": "A",
        "taskBackendId": "tb_research",
        "dynamicVariables": [{"name": "tenant_id", "type": "string"}, {"name": "region", "type": "string"}]
    });
    assistant(declared.clone(), Some(&r), None).unwrap();
    assistant(declared.clone(), Some(&backend(opencode())), None).unwrap();
    let err = assistant(declared.clone(), None, None).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_str()),
        ("unknown_task_backend", "taskBackendId")
    );
    let missing = set(
        declared.clone(),
        "/dynamicVariables/1",
        json!({"name": "other", "type": "string"}),
    );
    let err = assistant(missing, Some(&r), None).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_str()),
        ("unknown_variable", "taskBackendId")
    );
    assert!(err.message.contains("`region`"), "{}", err.message);
}

#[test]
fn a_realtime_assistant_has_no_task_backend() {
    let shipped = shipped_interfaces();
    let qwen = &shipped[0];
    let v = json!({
        "name": "A",
        "runMode": "realtime",
        "realtimeInterfaceId": qwen.id,
        "builtInTools": {},
    });
    assistant(v.clone(), None, Some(qwen)).unwrap();
    let with_backend = set(v, "/taskBackendId", json!("tb_research"));
    for backend in [Some(&self::backend(opencode())), None] {
        let err = assistant(with_backend.clone(), backend, Some(qwen)).unwrap_err();
        assert_eq!(
            (err.code, err.field.as_str()),
            ("task_backend_not_supported", "taskBackendId")
        );
    }
}
