//! Conversation tests (R-BX-10) without IO: the save-time rules of a test
//! case, matchers (see `rtc_protocol::testing`), and the verdict on every
//! expectation but the success criterion, which the small model judges.

use std::collections::BTreeSet;

use regex::Regex;
use rtc_protocol::{
    ConversationTest, ExpectationKind, ExpectationResult, Expectations, ObservedToolCall,
};
use serde_json::{Map, Value};

use crate::error::{Rule, ValidationError};
use crate::names::check_max_chars;

/// Most user turns in one test.
pub const MAX_TURNS: usize = 50;
/// Longest user turn, in characters.
pub const MAX_TURN_CHARS: usize = 10_000;
/// Most scripted results per tool.
pub const MAX_SCRIPTED_PER_TOOL: usize = 50;
/// Longest test run an operator may allow.
pub const MAX_TEST_SECONDS: u32 = 600;

const OPERATORS: [&str; 6] = ["$contains", "$regex", "$exists", "$oneOf", "$gt", "$lt"];

/// Validate a test case against the variables its target declares.
pub fn validate_test(test: &ConversationTest, declared: &BTreeSet<String>) -> Rule {
    let name = test.name.trim();
    if name.is_empty() || name.chars().count() > 128 {
        return Err(ValidationError::new(
            "invalid_name",
            "name",
            "`name` must be 1 to 128 characters, not blank",
        ));
    }
    check_max_chars(&test.description, "description", 4096)?;
    if test.turns.is_empty() || test.turns.len() > MAX_TURNS {
        return Err(ValidationError::new(
            "invalid_turns",
            "turns",
            format!("a test has 1 to {MAX_TURNS} user turns"),
        ));
    }
    for (i, turn) in test.turns.iter().enumerate() {
        if turn.trim().is_empty() || turn.chars().count() > MAX_TURN_CHARS {
            return Err(ValidationError::new(
                "invalid_turn",
                format!("turns[{i}]"),
                format!("a user turn is 1 to {MAX_TURN_CHARS} characters, not blank"),
            ));
        }
    }
    for name in test.variables.keys() {
        if !declared.contains(name) {
            return Err(unknown_variable(&format!("variables.{name}"), name));
        }
    }
    for (tool, results) in &test.tool_responses {
        if results.len() > MAX_SCRIPTED_PER_TOOL {
            return Err(ValidationError::new(
                "too_many_results",
                format!("toolResponses.{tool}"),
                format!("at most {MAX_SCRIPTED_PER_TOOL} scripted results per tool"),
            ));
        }
        for (i, r) in results.iter().enumerate() {
            if r.response.is_some() == r.error.is_some() {
                return Err(ValidationError::new(
                    "invalid_scripted_result",
                    format!("toolResponses.{tool}[{i}]"),
                    "a scripted result has exactly one of `response` and `error`",
                ));
            }
        }
    }
    if !(1..=MAX_TEST_SECONDS).contains(&test.timeout_seconds) {
        return Err(ValidationError::new(
            "out_of_range",
            "timeoutSeconds",
            format!("`timeoutSeconds` must be between 1 and {MAX_TEST_SECONDS}"),
        ));
    }
    check_expectations(&test.expect, declared)
}

fn unknown_variable(field: &str, name: &str) -> ValidationError {
    ValidationError::new(
        "unknown_variable",
        field,
        format!("`{name}` is not a declared dynamic variable"),
    )
}

fn check_expectations(expect: &Expectations, declared: &BTreeSet<String>) -> Rule {
    for (i, call) in expect.tool_calls.iter().enumerate() {
        let field = format!("expect.toolCalls[{i}]");
        if call.name.trim().is_empty() {
            return Err(ValidationError::new(
                "required",
                format!("{field}.name"),
                "name the function",
            ));
        }
        if call.max_calls.is_some_and(|max| max < call.min_calls) {
            return Err(ValidationError::new(
                "out_of_range",
                format!("{field}.maxCalls"),
                "`maxCalls` must not be below `minCalls`",
            ));
        }
        for (arg, m) in &call.arguments {
            check_matcher(m, &format!("{field}.arguments.{arg}"))?;
        }
    }
    for (name, m) in &expect.variables {
        let field = format!("expect.variables.{name}");
        if !declared.contains(name) && !name.starts_with("system__") {
            return Err(unknown_variable(&field, name));
        }
        check_matcher(m, &field)?;
    }
    if let Some(m) = &expect.end_reason {
        check_matcher(m, "expect.endReason")?;
    }
    if let Some(c) = &expect.success_criterion {
        if c.trim().is_empty() {
            return Err(ValidationError::new(
                "required",
                "expect.successCriterion",
                "the success criterion must not be blank (omit it instead)",
            ));
        }
        check_max_chars(c, "expect.successCriterion", 4096)?;
    }
    Ok(())
}

/// The operator of a matcher object (`{"$op": operand}`), if it is one.
fn operator(m: &Value) -> Option<(&str, &Value)> {
    let o = m.as_object()?;
    if o.len() != 1 {
        return None;
    }
    let (k, v) = o.iter().next()?;
    k.starts_with('$').then_some((k.as_str(), v))
}

fn check_matcher(m: &Value, field: &str) -> Rule {
    let Some((op, operand)) = operator(m) else {
        return Ok(());
    };
    let bad = |message: String| Err(ValidationError::new("invalid_matcher", field, message));
    match op {
        "$contains" if operand.is_null() => bad("`$contains` needs a value".into()),
        "$regex" => match operand.as_str().map(Regex::new) {
            Some(Ok(_)) => Ok(()),
            Some(Err(e)) => bad(format!("`$regex` does not compile: {e}")),
            None => bad("`$regex` takes a string".into()),
        },
        "$exists" if !operand.is_boolean() => bad("`$exists` takes true or false".into()),
        "$oneOf" if !operand.is_array() => bad("`$oneOf` takes an array".into()),
        "$gt" | "$lt" if !operand.is_number() => bad(format!("`{op}` takes a number")),
        op if !OPERATORS.contains(&op) => bad(format!(
            "unknown matcher `{op}`; use one of {}",
            OPERATORS.join(", ")
        )),
        _ => Ok(()),
    }
}

/// Whether two JSON values are equal, numbers compared by value.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// Whether `actual` (`None`: absent) satisfies matcher `m`.
pub fn matches(m: &Value, actual: Option<&Value>) -> bool {
    let present = actual.filter(|v| !v.is_null());
    let Some((op, operand)) = operator(m) else {
        return same(m, actual.unwrap_or(&Value::Null));
    };
    let number = |v: Option<&Value>| v.and_then(Value::as_f64);
    match op {
        "$exists" => operand.as_bool() == Some(present.is_some()),
        "$contains" => match present {
            Some(Value::String(s)) => match operand {
                Value::String(needle) => s.to_lowercase().contains(&needle.to_lowercase()),
                other => s.contains(&other.to_string()),
            },
            Some(Value::Array(items)) => items.iter().any(|i| same(i, operand)),
            _ => false,
        },
        "$regex" => match (operand.as_str().and_then(|r| Regex::new(r).ok()), present) {
            (Some(re), Some(Value::String(s))) => re.is_match(s),
            (Some(re), Some(other)) => re.is_match(&other.to_string()),
            _ => false,
        },
        "$oneOf" => operand.as_array().is_some_and(|options| {
            options
                .iter()
                .any(|o| same(o, actual.unwrap_or(&Value::Null)))
        }),
        "$gt" => matches!((number(present), operand.as_f64()), (Some(a), Some(b)) if a > b),
        "$lt" => matches!((number(present), operand.as_f64()), (Some(a), Some(b)) if a < b),
        _ => false,
    }
}

/// What a run saw, as the verdict needs it.
pub struct Observed<'a> {
    pub tool_calls: &'a [ObservedToolCall],
    pub variables: &'a Map<String, Value>,
    pub end_reason: Option<&'a str>,
}

/// The verdict on every expectation but the success criterion.
pub fn judge_expectations(expect: &Expectations, seen: &Observed<'_>) -> Vec<ExpectationResult> {
    let mut out = Vec::new();
    for call in &expect.tool_calls {
        let of_name: Vec<&ObservedToolCall> = seen
            .tool_calls
            .iter()
            .filter(|c| c.name == call.name)
            .collect();
        let matching = of_name
            .iter()
            .filter(|c| {
                call.arguments
                    .iter()
                    .all(|(arg, m)| matches(m, c.arguments.get(arg)))
            })
            .count();
        let count = u32::try_from(matching).unwrap_or(u32::MAX);
        let passed = count >= call.min_calls && call.max_calls.is_none_or(|max| count <= max);
        let wanted = match call.max_calls {
            Some(max) if max == call.min_calls => format!("exactly {max}"),
            Some(max) => format!("{} to {max}", call.min_calls),
            None => format!("at least {}", call.min_calls),
        };
        let args = if call.arguments.is_empty() {
            String::new()
        } else {
            format!(
                " with arguments matching {}",
                serde_json::to_string(&call.arguments).unwrap_or_default()
            )
        };
        out.push(ExpectationResult {
            kind: ExpectationKind::ToolCall,
            subject: call.name.clone(),
            passed,
            detail: format!(
                "expected {wanted} call(s){args}; saw {matching} matching of {} call(s)",
                of_name.len()
            ),
        });
    }
    for (name, m) in &expect.variables {
        let actual = seen.variables.get(name);
        out.push(ExpectationResult {
            kind: ExpectationKind::Variable,
            subject: name.clone(),
            passed: matches(m, actual),
            detail: format!("expected {m}; final value {}", shown(actual)),
        });
    }
    if let Some(m) = &expect.end_reason {
        let actual = seen.end_reason.map(|r| Value::String(r.to_owned()));
        out.push(ExpectationResult {
            kind: ExpectationKind::EndReason,
            subject: "endReason".into(),
            passed: matches(m, actual.as_ref()),
            detail: format!(
                "expected {m}; the session {}",
                match seen.end_reason {
                    Some(r) => format!("ended with {r:?}"),
                    None => "did not end".into(),
                }
            ),
        });
    }
    out
}

fn shown(v: Option<&Value>) -> String {
    v.map_or_else(|| "absent".to_owned(), Value::to_string)
}

#[cfg(test)]
#[path = "test_rules_tests.rs"]
mod tests;
