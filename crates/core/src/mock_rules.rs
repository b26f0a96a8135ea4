//! A tool's `mockResponse` (R-BX-10): what it answers in a test-mode
//! session. Either any JSON value, answered to every call, or a list of
//! cases `[{"when": <expression>, "response": <value>}, …]` over the call's
//! arguments: the first case whose `when` is true answers, and a case
//! without `when` always matches (the default, usually last).
//!
//! Checked at save time: each `when` is an expression (R-EX-5) of type
//! boolean over the tool's parameters, without `llm` leaves.

use std::collections::BTreeMap;

use rtc_expr::{LlmLeaves, check};
use rtc_protocol::{Expr, Tool, ValueType};
use serde_json::Value;

use crate::error::{Rule, ValidationError};
use crate::tool_rules::schema_properties;

/// Largest `mockResponse`, as JSON text.
pub const MAX_MOCK_BYTES: usize = 64 * 1024;
/// Most cases in one `mockResponse`.
pub const MAX_MOCK_CASES: usize = 32;

/// One case of a `mockResponse` list.
#[derive(Debug, Clone, PartialEq)]
pub struct MockCase {
    pub when: Option<Expr>,
    pub response: Value,
}

/// What a `mockResponse` says.
#[derive(Debug, Clone, PartialEq)]
pub enum Mock<'a> {
    /// One answer for every call.
    Value(&'a Value),
    /// The first matching case answers.
    Cases(Vec<MockCase>),
}

/// Whether `value` is written as cases: a non-empty array of objects that
/// each hold `response` and nothing but `when` and `response`.
fn is_case_list(value: &Value) -> bool {
    let Some(items) = value.as_array() else {
        return false;
    };
    !items.is_empty()
        && items.iter().all(|item| {
            item.as_object().is_some_and(|o| {
                o.contains_key("response") && o.keys().all(|k| k == "when" || k == "response")
            })
        })
}

/// Read a `mockResponse`; a case whose `when` is not an expression is an
/// error naming it.
pub fn read_mock(value: &Value) -> Rule<Mock<'_>> {
    if !is_case_list(value) {
        return Ok(Mock::Value(value));
    }
    let items = value.as_array().map(Vec::as_slice).unwrap_or_default();
    let mut cases = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let when = match item.get("when") {
            None | Some(Value::Null) => None,
            Some(w) => Some(serde_json::from_value::<Expr>(w.clone()).map_err(|e| {
                ValidationError::new(
                    "invalid_expression",
                    format!("mockResponse[{i}].when"),
                    format!("`when` is not an expression: {e}"),
                )
            })?),
        };
        cases.push(MockCase {
            when,
            response: item.get("response").cloned().unwrap_or(Value::Null),
        });
    }
    Ok(Mock::Cases(cases))
}

/// The types of a tool's parameters as the expression language sees them.
pub fn argument_types(parameters: &Value) -> BTreeMap<String, ValueType> {
    schema_properties(parameters)
        .into_iter()
        .map(|(name, schema)| {
            let ty = match schema.get("type").and_then(Value::as_str) {
                Some("string") => ValueType::String,
                Some("number" | "integer") => ValueType::Number,
                Some("boolean") => ValueType::Boolean,
                _ => ValueType::Json,
            };
            (name.to_owned(), ty)
        })
        .collect()
}

/// The save-time rules of a tool's `mockResponse` (its parameters are
/// already checked).
pub fn check_mock_response(tool: &Tool) -> Rule {
    let Some(mock) = &tool.mock_response else {
        return Ok(());
    };
    let size = mock.to_string().len();
    if size > MAX_MOCK_BYTES {
        return Err(ValidationError::new(
            "too_large",
            "mockResponse",
            format!("`mockResponse` is {size} bytes of JSON; at most {MAX_MOCK_BYTES} are allowed"),
        ));
    }
    let Mock::Cases(cases) = read_mock(mock)? else {
        return Ok(());
    };
    if cases.len() > MAX_MOCK_CASES {
        return Err(ValidationError::new(
            "too_many_cases",
            "mockResponse",
            format!(
                "`mockResponse` has {} cases; at most {MAX_MOCK_CASES} are allowed",
                cases.len()
            ),
        ));
    }
    let fallback = crate::tool_rules::empty_parameters();
    let types = argument_types(tool.parameters.as_ref().unwrap_or(&fallback));
    for (i, case) in cases.iter().enumerate() {
        let Some(when) = &case.when else { continue };
        let field = format!("mockResponse[{i}].when");
        let ty = check(when, &types, LlmLeaves::Rejected)
            .map_err(|e| ValidationError::new(e.code, format!("{field}{}", e.path), e.message))?;
        if !matches!(ty, ValueType::Boolean | ValueType::Json) {
            return Err(ValidationError::new(
                "type_mismatch",
                field,
                format!("`when` must be a boolean expression; it has type {ty}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "mock_rules_tests.rs"]
mod tests;
