use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::*;

fn expr(v: Value) -> Expr {
    serde_json::from_value(v).unwrap()
}

fn vars() -> BTreeMap<String, Value> {
    BTreeMap::from([
        ("n".to_owned(), json!(7)),
        ("f".to_owned(), json!(2.5)),
        ("s".to_owned(), json!("abc")),
        ("b".to_owned(), json!(true)),
        ("j".to_owned(), json!({"k": 1})),
    ])
}

fn run(e: Value) -> Result<Value, EvalError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(evaluate(&expr(e), &vars(), &NoLlm, &EvalLimits::default()))
}

#[test]
fn evaluates_table() {
    let c = |v: Value| json!({"type": "constant", "value": v});
    let var = |n: &str| json!({"type": "variable", "name": n});
    let cases: Vec<(Value, Value)> = vec![
        (c(json!(1)), json!(1)),
        (var("s"), json!("abc")),
        (
            json!({"type": "add", "left": var("n"), "right": c(json!(3))}),
            json!(10),
        ),
        (
            json!({"type": "sub", "left": var("n"), "right": c(json!(10))}),
            json!(-3),
        ),
        (
            json!({"type": "mul", "left": var("f"), "right": c(json!(2))}),
            json!(5.0),
        ),
        (
            json!({"type": "div", "left": c(json!(6)), "right": c(json!(3))}),
            json!(2),
        ),
        (
            json!({"type": "div", "left": c(json!(7)), "right": c(json!(2))}),
            json!(3.5),
        ),
        (
            json!({"type": "mod", "left": var("n"), "right": c(json!(4))}),
            json!(3),
        ),
        (
            json!({"type": "eq", "left": c(json!(2)), "right": c(json!(2.0))}),
            json!(true),
        ),
        (
            json!({"type": "ne", "left": var("s"), "right": c(json!("abc"))}),
            json!(false),
        ),
        (
            json!({"type": "lt", "left": var("f"), "right": var("n")}),
            json!(true),
        ),
        (
            json!({"type": "ge", "left": c(json!("b")), "right": c(json!("a"))}),
            json!(true),
        ),
        (
            json!({"type": "le", "left": var("n"), "right": c(json!(7))}),
            json!(true),
        ),
        (
            json!({"type": "gt", "left": var("n"), "right": c(json!(7))}),
            json!(false),
        ),
        (
            json!({"type": "and", "args": [var("b"), c(json!(false))]}),
            json!(false),
        ),
        (
            json!({"type": "or", "args": [c(json!(false)), var("b")]}),
            json!(true),
        ),
        (json!({"type": "not", "arg": var("b")}), json!(false)),
        (
            json!({"type": "concat", "args": [var("s"), c(json!("-")), var("n"), c(json!(true))]}),
            json!("abc-7true"),
        ),
        (
            json!({"type": "if", "cond": var("b"), "then": c(json!("yes")), "else": c(json!("no"))}),
            json!("yes"),
        ),
        (
            json!({"type": "eq", "left": var("j"), "right": c(json!({"k": 1}))}),
            json!(true),
        ),
        // Short-circuit: the llm leaf on the untaken side is never asked.
        (
            json!({"type": "or", "args": [var("b"), {"type": "llm", "prompt": "x?", "outputType": "boolean"}]}),
            json!(true),
        ),
        (
            json!({"type": "if", "cond": c(json!(false)), "then": {"type": "llm", "prompt": "x?", "outputType": "string"}, "else": c(json!("e"))}),
            json!("e"),
        ),
    ];
    for (input, want) in cases {
        assert_eq!(run(input.clone()), Ok(want), "{input}");
    }
}

#[test]
fn runtime_errors_are_returned_not_panicked() {
    let c = |v: Value| json!({"type": "constant", "value": v});
    let cases: Vec<(Value, EvalError)> = vec![
        (
            json!({"type": "div", "left": c(json!(1)), "right": c(json!(0))}),
            EvalError::DivisionByZero { op: "div" },
        ),
        (
            json!({"type": "mod", "left": c(json!(1.5)), "right": c(json!(0.0))}),
            EvalError::DivisionByZero { op: "mod" },
        ),
        (
            json!({"type": "add", "left": c(json!(i64::MAX)), "right": c(json!(1))}),
            EvalError::Overflow { op: "add" },
        ),
        (
            json!({"type": "add", "left": c(json!("a")), "right": c(json!(1))}),
            EvalError::TypeMismatch {
                op: "add",
                expected: "number",
                found: ValueType::String,
            },
        ),
        (
            json!({"type": "not", "arg": c(json!(1))}),
            EvalError::TypeMismatch {
                op: "not",
                expected: "boolean",
                found: ValueType::Number,
            },
        ),
        (
            json!({"type": "variable", "name": "missing"}),
            EvalError::UnknownVariable {
                name: "missing".into(),
            },
        ),
        (
            json!({"type": "llm", "prompt": "p", "outputType": "number"}),
            EvalError::Llm {
                message: "`llm` leaves cannot be evaluated here".into(),
            },
        ),
    ];
    for (input, want) in cases {
        assert_eq!(run(input.clone()), Err(want), "{input}");
    }
}

struct FixedLlm(Value);

impl LlmLeafEvaluator for FixedLlm {
    async fn evaluate(&self, _prompt: &str, _t: LlmOutputType) -> Result<Value, String> {
        Ok(self.0.clone())
    }
}

#[tokio::test]
async fn llm_leaf_answer_is_type_checked() {
    let e = expr(json!({"type": "llm", "prompt": "How old?", "outputType": "number"}));
    assert_eq!(
        evaluate(&e, &vars(), &FixedLlm(json!(42)), &EvalLimits::default()).await,
        Ok(json!(42))
    );
    assert_eq!(
        evaluate(
            &e,
            &vars(),
            &FixedLlm(json!("forty")),
            &EvalLimits::default()
        )
        .await,
        Err(EvalError::LlmWrongType {
            expected: ValueType::Number,
            found: ValueType::String
        })
    );
}

/// A `concat` that doubles a string per argument stops at the bound,
/// with the string never much larger than it (the variable bomb).
#[tokio::test]
async fn concat_stops_at_the_string_bound() {
    let limits = EvalLimits {
        max_string_bytes: 1_000,
        max_llm_leaves: 8,
    };
    let var = json!({"type": "variable", "name": "s"});
    let doubling = expr(json!({"type": "concat", "args": vec![var; 500]}));
    let mut vars = vars();
    vars.insert("s".into(), json!("x".repeat(300)));
    assert_eq!(
        evaluate(&doubling, &vars, &NoLlm, &limits).await,
        Err(EvalError::TooLarge {
            op: "concat",
            max: 1_000
        })
    );
    vars.insert("s".into(), json!("x".repeat(2)));
    let v = evaluate(&doubling, &vars, &NoLlm, &limits).await.unwrap();
    assert_eq!(v.as_str().map(str::len), Some(1_000));
    assert_eq!(
        EvalError::TooLarge {
            op: "concat",
            max: 1
        }
        .code(),
        "value_too_large"
    );
}

/// One evaluation asks at most `max_llm_leaves` leaves; the next one is
/// an error, not a model call.
#[tokio::test]
async fn llm_leaves_are_counted_per_evaluation() {
    struct Counting(std::sync::atomic::AtomicUsize);
    impl LlmLeafEvaluator for Counting {
        async fn evaluate(&self, _prompt: &str, _t: LlmOutputType) -> Result<Value, String> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(json!("a"))
        }
    }
    let leaf = json!({"type": "llm", "prompt": "x", "outputType": "string"});
    let e = expr(json!({"type": "concat", "args": vec![leaf; 5]}));
    let counting = Counting(Default::default());
    let limits = EvalLimits {
        max_string_bytes: 100,
        max_llm_leaves: 3,
    };
    assert_eq!(
        evaluate(&e, &vars(), &counting, &limits).await,
        Err(EvalError::TooManyLlmLeaves { max: 3 })
    );
    assert_eq!(counting.0.load(std::sync::atomic::Ordering::SeqCst), 3);
    assert_eq!(count_llm_leaves(&e), 5);
    let nested = expr(
        json!({"type": "if", "cond": {"type": "constant", "value": true},
        "then": {"type": "llm", "prompt": "x", "outputType": "string"},
        "else": {"type": "concat", "args": [{"type": "llm", "prompt": "y", "outputType": "string"}]}}),
    );
    assert_eq!(count_llm_leaves(&nested), 2);
}

fn types() -> BTreeMap<String, ValueType> {
    BTreeMap::from([
        ("n".to_owned(), ValueType::Number),
        ("s".to_owned(), ValueType::String),
        ("b".to_owned(), ValueType::Boolean),
        ("j".to_owned(), ValueType::Json),
    ])
}

#[test]
fn type_checks_table() {
    let c = |v: Value| json!({"type": "constant", "value": v});
    let var = |n: &str| json!({"type": "variable", "name": n});
    let ok: Vec<(Value, ValueType)> = vec![
        (c(json!("x")), ValueType::String),
        (c(json!(null)), ValueType::Json),
        (
            json!({"type": "add", "left": var("n"), "right": c(json!(1))}),
            ValueType::Number,
        ),
        (
            json!({"type": "lt", "left": var("s"), "right": c(json!("m"))}),
            ValueType::Boolean,
        ),
        (
            json!({"type": "eq", "left": var("j"), "right": c(json!(3))}),
            ValueType::Boolean,
        ),
        (
            json!({"type": "concat", "args": [var("s"), var("n")]}),
            ValueType::String,
        ),
        (
            json!({"type": "if", "cond": var("b"), "then": var("n"), "else": c(json!(0))}),
            ValueType::Number,
        ),
        (
            json!({"type": "llm", "prompt": "Name?", "outputType": "string"}),
            ValueType::String,
        ),
    ];
    for (input, want) in ok {
        assert_eq!(
            check(&expr(input.clone()), &types(), LlmLeaves::Allowed),
            Ok(want),
            "{input}"
        );
    }
    let bad: Vec<(Value, &str, &str)> = vec![
        (var("nope"), "unknown_variable", ".name"),
        (
            json!({"type": "add", "left": var("s"), "right": c(json!(1))}),
            "type_mismatch",
            "",
        ),
        (
            json!({"type": "lt", "left": var("s"), "right": var("n")}),
            "type_mismatch",
            "",
        ),
        (
            json!({"type": "eq", "left": var("s"), "right": var("n")}),
            "type_mismatch",
            "",
        ),
        (
            json!({"type": "and", "args": [var("b"), var("n")]}),
            "type_mismatch",
            ".args[1]",
        ),
        (
            json!({"type": "and", "args": []}),
            "invalid_expression",
            ".args",
        ),
        (
            json!({"type": "not", "arg": var("s")}),
            "type_mismatch",
            ".arg",
        ),
        (
            json!({"type": "if", "cond": var("n"), "then": var("n"), "else": var("n")}),
            "type_mismatch",
            ".cond",
        ),
        (
            json!({"type": "if", "cond": var("b"), "then": var("n"), "else": var("s")}),
            "type_mismatch",
            "",
        ),
        (
            json!({"type": "concat", "args": [var("j")]}),
            "type_mismatch",
            ".args[0]",
        ),
        (
            json!({"type": "llm", "prompt": " ", "outputType": "string"}),
            "invalid_prompt",
            ".prompt",
        ),
    ];
    for (input, code, path) in bad {
        let err = check(&expr(input.clone()), &types(), LlmLeaves::Allowed).unwrap_err();
        assert_eq!((err.code, err.path.as_str()), (code, path), "{input}");
    }
}

#[test]
fn deterministic_context_rejects_llm_leaves_anywhere() {
    let e = expr(
        json!({"type": "not", "arg": {"type": "llm", "prompt": "Happy?", "outputType": "boolean"}}),
    );
    let err = check(&e, &types(), LlmLeaves::Rejected).unwrap_err();
    assert_eq!(
        (err.code, err.path.as_str()),
        ("llm_leaf_not_allowed", ".arg")
    );
    assert!(e.contains_llm());
}

#[test]
fn assignment_type_must_match_variable() {
    let e = expr(json!({"type": "constant", "value": "x"}));
    assert!(check_assignment(&e, ValueType::String, &types(), LlmLeaves::Allowed).is_ok());
    assert!(check_assignment(&e, ValueType::Json, &types(), LlmLeaves::Allowed).is_ok());
    assert_eq!(
        check_assignment(&e, ValueType::Number, &types(), LlmLeaves::Allowed)
            .unwrap_err()
            .code,
        "type_mismatch"
    );
}

#[test]
fn depth_and_size_are_bounded() {
    let mut e = json!({"type": "constant", "value": true});
    for _ in 0..MAX_DEPTH {
        e = json!({"type": "not", "arg": e});
    }
    assert_eq!(
        check(&expr(e), &types(), LlmLeaves::Allowed)
            .unwrap_err()
            .code,
        "expression_too_deep"
    );
    let wide =
        json!({"type": "and", "args": vec![json!({"type": "constant", "value": true}); MAX_NODES]});
    assert_eq!(
        check(&expr(wide), &types(), LlmLeaves::Allowed)
            .unwrap_err()
            .code,
        "expression_too_large"
    );
}

#[test]
fn json_encoding_round_trips_and_rejects_unknown_nodes() {
    let src = json!({"type": "if", "cond": {"type": "variable", "name": "b"}, "then": {"type": "constant", "value": 1}, "else": {"type": "llm", "prompt": "n?", "outputType": "number"}});
    assert_eq!(serde_json::to_value(expr(src.clone())).unwrap(), src);
    assert!(serde_json::from_value::<Expr>(json!({"type": "pow", "left": 1, "right": 2})).is_err());
    assert!(
        serde_json::from_value::<Expr>(json!({"type": "constant", "value": 1, "extra": 2}))
            .is_err()
    );
}
