//! The expression language of SPEC §1.6: type checking against declared
//! variables at save time ([`check`]) and evaluation at run time
//! ([`evaluate`]). `llm` leaves are evaluated through the
//! [`LlmLeafEvaluator`] trait, which the runtime implements; this crate does
//! no IO.

mod check;
mod eval;

pub use check::{
    CheckError, LlmLeaves, MAX_DEPTH, MAX_NODES, check, check_assignment, count_llm_leaves,
};
pub use eval::{EvalError, EvalLimits, LlmLeafEvaluator, NoLlm, evaluate};
pub use rtc_protocol::{Expr, LlmOutputType, ValueType};

/// The type of a JSON value as the language sees it.
pub fn type_of_value(value: &serde_json::Value) -> ValueType {
    match value {
        serde_json::Value::String(_) => ValueType::String,
        serde_json::Value::Number(_) => ValueType::Number,
        serde_json::Value::Bool(_) => ValueType::Boolean,
        _ => ValueType::Json,
    }
}

/// Whether a value may be stored in a variable of type `ty`.
pub fn value_fits(value: &serde_json::Value, ty: ValueType) -> bool {
    ty == ValueType::Json || type_of_value(value) == ty
}

#[cfg(test)]
#[path = "expr_tests.rs"]
mod tests;
