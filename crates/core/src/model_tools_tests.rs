use serde_json::json;

use super::*;

fn tool() -> Tool {
    serde_json::from_value(json!({"id": "t", "name": "query_order", "type": "http",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string", "minLength": 2}, "tenant": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["order_id", "tenant"]},
        "http": {"method": "GET", "url": "https://x/{{order_id}}"}})).unwrap()
}

fn binding() -> ToolBinding {
    serde_json::from_value(json!({"toolId": "t",
        "argumentBindings": {"order_id": {"source": "model"}, "tenant": {"source": "variable", "variableName": "tenant_id"}, "limit": {"source": "literal", "value": 5}},
        "templateBindings": {"region": {"source": "template", "template": "{{tenant_id}}-cn"}},
        "resultAssignments": {"order_status": "data.status"},
        "modelResultFilter": ["data.status"]})).unwrap()
}

fn vars() -> Map<String, Value> {
    json!({"tenant_id": "acme"}).as_object().unwrap().clone()
}

#[test]
fn only_model_arguments_are_visible() {
    let s = model_schema(&tool(), &binding());
    assert_eq!(
        s["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["order_id"]
    );
    assert_eq!(s["required"], json!(["order_id"]));
}

#[test]
fn bound_arguments_cannot_be_overridden() {
    let args = complete_arguments(
        &tool(),
        &binding(),
        r#"{"order_id": "A1", "tenant": "evil", "limit": 99}"#,
        &vars(),
    )
    .unwrap();
    assert_eq!(
        Value::Object(args),
        json!({"order_id": "A1", "tenant": "acme", "limit": 5})
    );
    assert_eq!(
        template_inputs(&binding(), &vars()),
        BTreeMap::from([("region".to_owned(), "acme-cn".to_owned())])
    );
}

#[test]
fn invalid_model_arguments_are_tool_errors() {
    assert!(matches!(
        complete_arguments(&tool(), &binding(), "{not json", &vars()),
        Err(ArgumentError::NotJson(_))
    ));
    assert!(matches!(
        complete_arguments(&tool(), &binding(), "[1]", &vars()),
        Err(ArgumentError::NotJson(_))
    ));
    let err = complete_arguments(&tool(), &binding(), r#"{"order_id": "A"}"#, &vars()).unwrap_err();
    assert!(
        matches!(err, ArgumentError::Schema(ref m) if m.contains("order_id")),
        "{err}"
    );
    assert!(matches!(
        complete_arguments(&tool(), &binding(), "{}", &vars()),
        Err(ArgumentError::Schema(_))
    ));
}

#[test]
fn results_map_to_variables_and_a_filtered_view() {
    let result = json!({"data": {"status": "shipped", "address": "secret street"}});
    assert_eq!(
        result_assignments(&binding(), &result),
        vec![("order_status".to_owned(), json!("shipped"))]
    );
    assert_eq!(
        model_view(&binding(), &result),
        json!({"data": {"status": "shipped"}})
    );
}

#[test]
fn builtins_come_first_with_their_schemas() {
    let a: Assistant = serde_json::from_value(json!({"name": "a",
        "builtInTools": {"endConversation": {"captureReason": true}, "skipTurn": {}},
        "toolBindings": [{"toolId": "t", "argumentBindings": {"order_id": {"source": "model"}, "tenant": {"source": "model"}}}]})).unwrap();
    let tools = BTreeMap::from([("t".to_owned(), tool())]);
    let list = model_tools(&a, &tools);
    let names: Vec<_> = list.iter().map(|(s, _)| s.name.as_str()).collect();
    assert_eq!(names, ["endConversation", "skipTurn", "query_order"]);
    assert_eq!(list[0].0.parameters["required"], json!(["reason"]));
    assert_eq!(list[2].1, ToolTarget::Binding(0));
}
