use serde_json::{Value, json};

use super::*;
use crate::test_support::put;

fn example() -> Value {
    serde_json::from_str(include_str!(
        "../../cli/tests/fixtures/workflows/order_support_v4.json"
    ))
    .expect("the design's example is JSON")
}

fn rejection(v: &Value) -> (&'static str, String) {
    let e = parse_workflow(v).expect_err("rejected");
    (e.code, e.field)
}

#[test]
fn the_example_reads_and_writes_back_unchanged() {
    let v = example();
    let w = parse_workflow(&v).expect("valid shape");
    assert_eq!(serde_json::to_value(&w).expect("serializes"), v);
}

#[test]
fn only_the_number_4_passes_the_version_gate() {
    for version in [json!(3), json!("4"), json!(4.5), json!(null), json!(5)] {
        let v = put(example(), "/specVersion", version.clone());
        let e = parse_workflow(&v).expect_err("rejected");
        assert_eq!(
            (e.code, e.field.as_str()),
            ("unsupported_spec_version", "specVersion"),
            "{version}"
        );
        assert!(e.message.contains("rtc-agent migrate"), "{}", e.message);
    }
    // The gate comes before the shape: a v3 document is named as such.
    let v3 = json!({"specVersion": 3, "name": "x", "nodes": {"start": {"type": "start"}}, "globalToolIds": []});
    assert_eq!(rejection(&v3).0, "unsupported_spec_version");
}

#[test]
fn unknown_fields_are_named_by_their_path() {
    let cases = [
        ("/toolIds", json!([]), "toolIds"),
        ("/nodes/0/tools", json!([]), "nodes[0].tools"),
        (
            "/nodes/1/binding/params",
            json!({}),
            "nodes[1].binding.params",
        ),
        (
            "/nodes/1/binding/argumentBindings/order_id/extra",
            json!(1),
            "nodes[1].binding.argumentBindings.order_id.extra",
        ),
        (
            "/nodes/0/builtInTools/skipTurn/params",
            json!({}),
            "nodes[0].builtInTools.skipTurn.params",
        ),
        (
            "/edges/0/condition/expression/left/zz",
            json!(1),
            "edges[0].condition.expression.left.zz",
        ),
        (
            "/edges/2/condition/successful",
            json!(true),
            "edges[2].condition.successful",
        ),
        ("/edges/1/source", json!("greet"), "edges[1].source"),
        ("/limits", json!({"maxTurns": 3}), "limits.maxTurns"),
        (
            "/nodes/4/target/queue",
            json!("vip"),
            "nodes[4].target.queue",
        ),
        (
            "/edges/5/condition/expression",
            json!(true),
            "edges[5].condition.expression",
        ),
        (
            "/nodes/0/toolBindings",
            json!([{"toolId": "t", "argumentBindings": {"q": {"source": "model", "value": 1}}}]),
            "nodes[0].toolBindings[0].argumentBindings.q.value",
        ),
    ];
    for (pointer, value, field) in cases {
        let v = put(example(), pointer, value);
        assert_eq!(
            rejection(&v),
            ("unknown_field", field.to_owned()),
            "{pointer}"
        );
    }
}

#[test]
fn malformed_fields_are_named_by_their_path() {
    let cases = [
        ("/nodes/0/prompt", json!(3), "nodes[0].prompt"),
        ("/nodes/0/type", json!("start"), "nodes[0].type"),
        ("/nodes/3/reason", json!(null), "nodes[3].reason"),
        ("/edges/0/to", json!(null), "edges[0].to"),
        ("/name", json!(null), "name"),
        ("/nodes", json!({"greet": {}}), "nodes"),
    ];
    for (pointer, value, field) in cases {
        let v = put(example(), pointer, value);
        assert_eq!(
            rejection(&v),
            ("invalid_field", field.to_owned()),
            "{pointer}"
        );
    }
}

#[test]
fn field_paths_become_pointers() {
    assert_eq!(pointer_of("").as_deref(), Some(""));
    assert_eq!(
        pointer_of("nodes[1].binding.argumentBindings").as_deref(),
        Some("/nodes/1/binding/argumentBindings")
    );
}
