use std::collections::{BTreeMap, BTreeSet};

use rtc_protocol::{Assistant, RealtimeInterface, Tool};
use serde_json::{Value, json};

use super::*;
use crate::realtime::{cleanup, compatibility, shipped_interfaces};
use crate::test_support::put as set;

fn tools() -> BTreeMap<String, Tool> {
    let list = [
        json!({"id": "tool_query_order", "name": "query_order", "type": "http",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "tenant": {"type": "string"}, "limit": {"type": "integer", "maximum": 10}}, "required": ["order_id", "tenant"]},
            "templateInputs": [{"name": "region"}, {"name": "lang", "required": false}],
            "http": {"method": "GET", "url": "https://x/{{input__region}}/{{input__lang}}/{{order_id}}?t={{tenant}}&l={{limit}}"}}),
        json!({"id": "tool_notify", "name": "notify", "type": "client", "client": {"functionName": "notify", "waitForResponse": false}}),
        json!({"id": "tool_echo", "name": "echo", "type": "mcp", "parameters": {"type": "object", "properties": {"message": {"type": "string"}}}, "mcp": {"serverId": "m", "remoteToolName": "echo"}}),
    ];
    list.into_iter()
        .map(|v| {
            let t: Tool = serde_json::from_value(v).unwrap();
            (t.id.clone().unwrap(), t)
        })
        .collect()
}

fn base() -> Value {
    json!({
        "name": "Support",
        "systemPrompt": "You help {{customer_name}} (session {{system__session_id}}).",
        "firstMessage": "Hi {{customer_name}}",
        "dynamicVariables": [
            {"name": "customer_name", "type": "string", "default": "there"},
            {"name": "tenant_id", "type": "string"},
            {"name": "order_status", "type": "string"},
            {"name": "score", "type": "number", "default": 0}
        ],
        "builtInTools": {
            "endConversation": {"messageType": "custom", "customMessage": "Bye", "captureReason": true},
            "updateState": {"description": "When the user is happy", "rules": [
                {"variable": "score", "expression": {"type": "add", "left": {"type": "variable", "name": "score"}, "right": {"type": "constant", "value": 1}}},
                {"variable": "customer_name", "expression": {"type": "llm", "prompt": "The user's name?", "outputType": "string"}}
            ]},
            "skipTurn": {}
        },
        "toolBindings": [{
            "toolId": "tool_query_order",
            "argumentBindings": {"order_id": {"source": "model"}, "tenant": {"source": "variable", "variableName": "tenant_id"}, "limit": {"source": "literal", "value": 5}},
            "templateBindings": {"region": {"source": "literal", "value": "cn"}},
            "resultAssignments": {"order_status": "status"},
            "modelResultFilter": ["status", "items[0].id"]
        }, {"toolId": "tool_notify"}],
        "startupActions": [{
            "toolId": "tool_query_order",
            "argumentBindings": {"order_id": {"source": "template", "template": "init-{{system__user_id}}"}, "tenant": {"source": "variable", "variableName": "tenant_id"}},
            "templateBindings": {"region": {"source": "variable", "variableName": "tenant_id"}}
        }]
    })
}

fn validate(v: Value, iface: Option<&RealtimeInterface>) -> Result<(), crate::ValidationError> {
    let a: Assistant = serde_json::from_value(v).unwrap();
    let tools = tools();
    let providers = BTreeSet::from(["openai".to_owned()]);
    validate_assistant(
        &a,
        &AssistantContext {
            tools: &tools,
            realtime_interface: iface,
            providers: &providers,
            task_backend: None,
            speech_interfaces: &BTreeMap::new(),
            update_bounds: Default::default(),
        },
    )
}

#[test]
fn base_assistant_is_valid() {
    validate(base(), None).unwrap();
}

#[test]
fn assistant_rules_table() {
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        ("/name", json!(" "), "invalid_name", "name"),
        (
            "/dynamicVariables/0/name",
            json!("system__x"),
            "reserved_name",
            "dynamicVariables[0].name",
        ),
        (
            "/dynamicVariables/0/name",
            json!("secret__x"),
            "reserved_name",
            "dynamicVariables[0].name",
        ),
        (
            "/dynamicVariables/0/name",
            json!("bad-name"),
            "invalid_name",
            "dynamicVariables[0].name",
        ),
        (
            "/dynamicVariables/1/name",
            json!("customer_name"),
            "duplicate_name",
            "dynamicVariables[1].name",
        ),
        (
            "/dynamicVariables/3/default",
            json!("zero"),
            "invalid_default",
            "dynamicVariables[3].default",
        ),
        (
            "/dynamicVariables/0/default",
            json!("x".repeat(17 * 1024)),
            "value_too_large",
            "dynamicVariables[0].default",
        ),
        (
            "/systemPrompt",
            json!("Hi {{who}}"),
            "unknown_variable",
            "systemPrompt",
        ),
        (
            "/systemPrompt",
            json!("Key {{secret__api_key}}"),
            "secret_not_allowed",
            "systemPrompt",
        ),
        (
            "/firstMessage",
            json!("Hi {{input__region}}"),
            "unknown_variable",
            "firstMessage",
        ),
        (
            "/llm",
            json!({"temperature": 3}),
            "out_of_range",
            "llm.temperature",
        ),
        (
            "/llm",
            json!({"provider": "nope"}),
            "unknown_provider",
            "llm.provider",
        ),
        (
            "/builtInTools/endConversation/customMessage",
            json!(""),
            "missing_field",
            "builtInTools.endConversation.customMessage",
        ),
        (
            "/builtInTools/updateState/rules",
            json!([]),
            "missing_field",
            "builtInTools.updateState.rules",
        ),
        (
            "/builtInTools/updateState/rules/0/variable",
            json!("system__turn_count"),
            "unknown_variable",
            "builtInTools.updateState.rules[0].variable",
        ),
        (
            "/builtInTools/updateState/rules/0/variable",
            json!("customer_name"),
            "type_mismatch",
            "builtInTools.updateState.rules[0].expression",
        ),
        (
            "/builtInTools/updateState/rules/0/expression",
            json!({"type": "not", "arg": {"type": "variable", "name": "nope"}}),
            "unknown_variable",
            "builtInTools.updateState.rules[0].expression.arg.name",
        ),
        (
            "/toolBindings/0/toolId",
            json!("tool_missing"),
            "unknown_tool",
            "toolBindings[0].toolId",
        ),
        (
            "/toolBindings/0/argumentBindings/extra",
            json!({"source": "model"}),
            "unknown_argument",
            "toolBindings[0].argumentBindings.extra",
        ),
        (
            "/toolBindings/0/argumentBindings",
            json!({"order_id": {"source": "model"}}),
            "missing_argument",
            "toolBindings[0].argumentBindings.tenant",
        ),
        (
            "/toolBindings/0/argumentBindings/tenant",
            json!({"source": "variable", "variableName": "ghost"}),
            "unknown_variable",
            "toolBindings[0].argumentBindings.tenant.variableName",
        ),
        (
            "/toolBindings/0/argumentBindings/tenant",
            json!({"source": "template", "template": "t-{{ghost}}"}),
            "unknown_variable",
            "toolBindings[0].argumentBindings.tenant.template",
        ),
        (
            "/toolBindings/0/argumentBindings/tenant",
            json!({"source": "template", "template": "{{secret__api_key}}"}),
            "secret_not_allowed",
            "toolBindings[0].argumentBindings.tenant.template",
        ),
        (
            "/toolBindings/0/argumentBindings/limit",
            json!({"source": "literal", "value": 50}),
            "invalid_literal",
            "toolBindings[0].argumentBindings.limit.value",
        ),
        (
            "/toolBindings/0/templateBindings",
            json!({}),
            "missing_template_input",
            "toolBindings[0].templateBindings.region",
        ),
        (
            "/toolBindings/0/templateBindings/zone",
            json!({"source": "literal", "value": "x"}),
            "unknown_template_input",
            "toolBindings[0].templateBindings.zone",
        ),
        (
            "/toolBindings/0/templateBindings/region",
            json!({"source": "model"}),
            "model_source_not_allowed",
            "toolBindings[0].templateBindings.region.source",
        ),
        (
            "/toolBindings/0/resultAssignments",
            json!({"ghost": "status"}),
            "unknown_variable",
            "toolBindings[0].resultAssignments.ghost",
        ),
        (
            "/toolBindings/0/resultAssignments",
            json!({"system__turn_count": "n"}),
            "unknown_variable",
            "toolBindings[0].resultAssignments.system__turn_count",
        ),
        (
            "/toolBindings/0/resultAssignments",
            json!({"order_status": "a[x]"}),
            "invalid_path",
            "toolBindings[0].resultAssignments.order_status",
        ),
        (
            "/toolBindings/0/modelResultFilter",
            json!(["ok", ""]),
            "invalid_path",
            "toolBindings[0].modelResultFilter[1]",
        ),
        (
            "/toolBindings/1",
            json!({"toolId": "tool_notify", "resultAssignments": {"order_status": "x"}}),
            "assignments_without_response",
            "toolBindings[1].resultAssignments",
        ),
        (
            "/toolBindings/1",
            json!({"toolId": "tool_query_order", "argumentBindings": {"order_id": {"source": "model"}, "tenant": {"source": "model"}}, "templateBindings": {"region": {"source": "literal", "value": "x"}}}),
            "duplicate_tool_name",
            "toolBindings[1].toolId",
        ),
        (
            "/startupActions/0/argumentBindings/order_id",
            json!({"source": "model"}),
            "model_source_not_allowed",
            "startupActions[0].argumentBindings.order_id.source",
        ),
        (
            "/startupActions/0/toolId",
            json!("nope"),
            "unknown_tool",
            "startupActions[0].toolId",
        ),
        (
            "/runMode",
            json!("realtime"),
            "missing_field",
            "realtimeInterfaceId",
        ),
    ];
    for (pointer, value, code, field) in cases {
        let v = set(base(), pointer, value.clone());
        let err = validate(v, None).unwrap_err();
        assert_eq!(
            (err.code, err.field.as_str()),
            (code, field),
            "{pointer} = {value}: {}",
            err.message
        );
    }
}

#[test]
fn realtime_gating_and_cleanup() {
    let shipped = shipped_interfaces();
    let (qwen, stepfun) = (&shipped[0], &shipped[1]);
    let mut v = base();
    v["runMode"] = json!("realtime");
    v["realtimeInterfaceId"] = json!("qwen-audio-realtime");
    // skipTurn is pipeline-only, even on Qwen.
    let err = validate(v.clone(), Some(qwen)).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_str()),
        ("realtime_incompatible", "builtInTools.skipTurn")
    );
    v["builtInTools"]
        .as_object_mut()
        .unwrap()
        .remove("skipTurn");
    validate(v.clone(), Some(qwen)).unwrap();
    // StepFun declares nothing: every tool and built-in is reported.
    v["realtimeInterfaceId"] = json!("stepfun-realtime");
    let err = validate(v.clone(), Some(stepfun)).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_str()),
        ("realtime_incompatible", "toolBindings[0]")
    );
    let mut a: Assistant = serde_json::from_value(v).unwrap();
    let issues = compatibility(&a, &tools(), Some(stepfun));
    let paths: Vec<_> = issues.iter().map(|i| i.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "toolBindings[0]",
            "toolBindings[1]",
            "builtInTools.endConversation",
            "builtInTools.updateState"
        ]
    );
    let startup_before = a.startup_actions.clone();
    cleanup(&mut a, &issues);
    assert!(a.tool_bindings.is_empty() && a.built_in_tools.enabled().is_empty());
    assert_eq!(
        a.startup_actions, startup_before,
        "cleanup removes only reported items"
    );
    assert!(compatibility(&a, &tools(), Some(stepfun)).is_empty());
}

#[test]
fn pipeline_mode_keeps_realtime_settings_without_gating() {
    let mut v = base();
    v["realtimeInterfaceId"] = json!("stepfun-realtime");
    let shipped = shipped_interfaces();
    validate(v.clone(), Some(&shipped[1])).unwrap();
    let err = validate(v, None).unwrap_err();
    assert_eq!(err.code, "unknown_realtime_interface");
}
