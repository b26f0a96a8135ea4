use serde_json::{Value, json};

use super::*;

fn tool(mock: Value) -> Tool {
    serde_json::from_value(json!({
        "name": "lookup_order",
        "type": "http",
        "parameters": {"type": "object", "properties": {
            "order_id": {"type": "string"}, "count": {"type": "integer"}, "extra": {"type": "object"}
        }},
        "http": {"method": "GET", "url": "https://example.com/orders/{{order_id}}"},
        "mockResponse": mock
    }))
    .unwrap()
}

fn order_is(id: &str) -> Value {
    json!({"type": "eq", "left": {"type": "variable", "name": "order_id"}, "right": {"type": "constant", "value": id}})
}

#[test]
fn a_plain_value_is_answered_to_every_call() {
    for v in [
        json!({"status": "shipped"}),
        json!([1, 2]),
        json!([{"response": 1, "other": 2}]),
        json!("x"),
    ] {
        assert_eq!(read_mock(&v).unwrap(), Mock::Value(&v));
        check_mock_response(&tool(v)).unwrap();
    }
}

#[test]
fn cases_are_read_in_order_with_an_optional_when() {
    let v = json!([{"when": order_is("A1"), "response": {"status": "shipped"}}, {"response": {"status": "unknown"}}]);
    let Mock::Cases(cases) = read_mock(&v).unwrap() else {
        panic!("cases")
    };
    assert_eq!(cases.len(), 2);
    assert!(cases[0].when.is_some() && cases[1].when.is_none());
    assert_eq!(cases[1].response, json!({"status": "unknown"}));
    check_mock_response(&tool(v)).unwrap();
}

#[test]
fn a_bad_case_is_refused_with_the_field_it_is_in() {
    let not_expr = json!([{"response": 1}, {"when": {"type": "nope"}, "response": 2}]);
    let e = check_mock_response(&tool(not_expr)).unwrap_err();
    assert_eq!(
        (e.code, e.field.as_str()),
        ("invalid_expression", "mockResponse[1].when")
    );

    let unknown = json!([{"when": {"type": "eq", "left": {"type": "variable", "name": "nope"}, "right": {"type": "constant", "value": 1}}, "response": 1}]);
    let e = check_mock_response(&tool(unknown)).unwrap_err();
    assert_eq!(e.field.split('.').next(), Some("mockResponse[0]"), "{e:?}");
    assert_eq!(e.code, "unknown_variable", "{e:?}");

    let not_bool = json!([{"when": {"type": "variable", "name": "count"}, "response": 1}]);
    let e = check_mock_response(&tool(not_bool)).unwrap_err();
    assert_eq!(
        (e.code, e.field.as_str()),
        ("type_mismatch", "mockResponse[0].when")
    );

    let llm =
        json!([{"when": {"type": "llm", "prompt": "?", "outputType": "boolean"}, "response": 1}]);
    assert!(check_mock_response(&tool(llm)).is_err());

    let many = Value::Array(
        (0..=MAX_MOCK_CASES)
            .map(|i| json!({"response": i}))
            .collect(),
    );
    assert_eq!(
        check_mock_response(&tool(many)).unwrap_err().code,
        "too_many_cases"
    );

    let big = json!({"text": "x".repeat(MAX_MOCK_BYTES)});
    assert_eq!(
        check_mock_response(&tool(big)).unwrap_err().code,
        "too_large"
    );
}

#[test]
fn parameters_have_the_types_of_their_schema() {
    let t = tool(json!(null));
    let types = argument_types(t.parameters.as_ref().unwrap());
    assert_eq!(types["order_id"], ValueType::String);
    assert_eq!(types["count"], ValueType::Number);
    assert_eq!(types["extra"], ValueType::Json);
}
