use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::*;

fn test_case(v: Value) -> ConversationTest {
    let mut base = json!({"name": "ships", "turns": ["Where is my order A1?"]});
    for (k, val) in v.as_object().unwrap() {
        base[k] = val.clone();
    }
    serde_json::from_value(base).unwrap()
}

fn declared() -> BTreeSet<String> {
    ["order_status".to_owned()].into()
}

fn code(v: Value) -> (&'static str, String) {
    let e = validate_test(&test_case(v), &declared()).unwrap_err();
    (e.code, e.field)
}

#[test]
fn a_good_test_is_accepted() {
    let t = test_case(json!({
        "variables": {"order_status": "new"},
        "toolResponses": {"lookup_order": [{"response": {"status": "shipped"}}, {"error": "down"}]},
        "expect": {
            "toolCalls": [{"name": "lookup_order", "arguments": {"order_id": {"$regex": "^A"}}}, {"name": "refund", "maxCalls": 0, "minCalls": 0}],
            "variables": {"order_status": "shipped", "system__session_id": {"$exists": true}},
            "endReason": {"$exists": false},
            "successCriterion": "The assistant tells the user the order has shipped."
        }
    }));
    assert_eq!(t.timeout_seconds, 120);
    validate_test(&t, &declared()).unwrap();
}

#[test]
fn bad_tests_name_the_field() {
    assert_eq!(code(json!({"name": " "})), ("invalid_name", "name".into()));
    assert_eq!(
        code(json!({"turns": []})),
        ("invalid_turns", "turns".into())
    );
    assert_eq!(
        code(json!({"turns": ["hi", "  "]})),
        ("invalid_turn", "turns[1]".into())
    );
    assert_eq!(
        code(json!({"variables": {"nope": 1}})),
        ("unknown_variable", "variables.nope".into())
    );
    assert_eq!(
        code(json!({"toolResponses": {"t": [{"response": 1, "error": "x"}]}})),
        ("invalid_scripted_result", "toolResponses.t[0]".into())
    );
    assert_eq!(
        code(json!({"toolResponses": {"t": [{}]}})).0,
        "invalid_scripted_result"
    );
    assert_eq!(
        code(json!({"timeoutSeconds": 0})),
        ("out_of_range", "timeoutSeconds".into())
    );
    assert_eq!(
        code(json!({"expect": {"toolCalls": [{"name": "t", "minCalls": 2, "maxCalls": 1}]}})),
        ("out_of_range", "expect.toolCalls[0].maxCalls".into())
    );
    assert_eq!(
        code(
            json!({"expect": {"toolCalls": [{"name": "t", "arguments": {"a": {"$regex": "("}}}]}})
        ),
        ("invalid_matcher", "expect.toolCalls[0].arguments.a".into())
    );
    assert_eq!(
        code(json!({"expect": {"variables": {"order_status": {"$near": 1}}}})),
        ("invalid_matcher", "expect.variables.order_status".into())
    );
    assert_eq!(
        code(json!({"expect": {"variables": {"other": 1}}})),
        ("unknown_variable", "expect.variables.other".into())
    );
    assert_eq!(
        code(json!({"expect": {"successCriterion": " "}})).0,
        "required"
    );
}

#[test]
fn matchers() {
    let s = json!("Order A1 has shipped");
    let cases = [
        (json!("Order A1 has shipped"), Some(&s), true),
        (json!("other"), Some(&s), false),
        (json!({"$contains": "SHIPPED"}), Some(&s), true),
        (json!({"$regex": "^Order A\\d"}), Some(&s), true),
        (json!({"$regex": "^A"}), Some(&s), false),
        (json!({"$exists": true}), None, false),
        (json!({"$exists": false}), None, true),
        (json!({"$exists": false}), Some(&Value::Null), true),
        (json!(null), None, true),
        (
            json!({"$oneOf": ["x", "Order A1 has shipped"]}),
            Some(&s),
            true,
        ),
    ];
    for (m, actual, want) in cases {
        assert_eq!(matches(&m, actual), want, "{m} on {actual:?}");
    }
    assert!(matches(&json!(2), Some(&json!(2.0))));
    assert!(matches(&json!({"$gt": 1}), Some(&json!(2))));
    assert!(!matches(&json!({"$lt": 1}), Some(&json!(2))));
    assert!(matches(&json!({"$contains": 3}), Some(&json!([1, 3]))));
    assert!(matches(
        &json!({"a": [1, {"b": 2}]}),
        Some(&json!({"a": [1.0, {"b": 2}]}))
    ));
    assert!(!matches(&json!({"a": 1}), Some(&json!({"a": 1, "b": 2}))));
}

#[test]
fn expectations_are_judged_on_what_the_run_saw() {
    let t = test_case(json!({"expect": {
        "toolCalls": [
            {"name": "lookup_order", "arguments": {"order_id": "A1"}},
            {"name": "lookup_order", "minCalls": 2},
            {"name": "refund", "maxCalls": 0, "minCalls": 0}
        ],
        "variables": {"order_status": "shipped"},
        "endReason": {"$contains": "resolved"}
    }}));
    let calls = vec![ObservedToolCall {
        name: "lookup_order".into(),
        arguments: json!({"order_id": "A1"}),
        result: Some(json!({"status": "shipped"})),
        is_error: false,
    }];
    let vars = json!({"order_status": "shipped"})
        .as_object()
        .unwrap()
        .clone();
    let seen = Observed {
        tool_calls: &calls,
        variables: &vars,
        end_reason: None,
    };
    let verdict = judge_expectations(&t.expect, &seen);
    let passed: Vec<bool> = verdict.iter().map(|r| r.passed).collect();
    assert_eq!(passed, [true, false, true, true, false], "{verdict:#?}");
    assert!(
        verdict[1].detail.contains("at least 2"),
        "{}",
        verdict[1].detail
    );
    assert!(
        verdict[4].detail.contains("did not end"),
        "{}",
        verdict[4].detail
    );
}
