//! Test mode (R-BX-10): a session flagged at creation answers every HTTP,
//! MCP and client tool from the tool's `mockResponse` (or from a
//! conversation test's scripted results) and makes no outbound request;
//! only model calls leave the server. The flag travels in the session's
//! configuration snapshot, so sub-agents and delegated tasks inherit it.

use std::collections::BTreeMap;

use rtc_core::mock_rules::{Mock, read_mock};
use rtc_expr::NoLlm;
use rtc_protocol::{ScriptedResult, Tool};

use serde_json::{Map, Value};

use crate::context::SessionCtx;

/// The error a tool without a mock answers in test mode.
pub const NO_MOCK: &str = "no mock response configured: this is a test-mode session, so the tool was not called; set the tool's `mockResponse` (or script the call in the test)";

/// The next scripted result of `name` in a test-mode session, counting
/// the call.
pub async fn next_scripted(ctx: &SessionCtx, name: &str) -> Option<ScriptedResult> {
    let test = ctx.config.test.as_ref()?;
    let results = test.scripted.get(name)?;
    let mut state = ctx.state.lock().await;
    let n = state.scripted_calls.entry(name.to_owned()).or_default();
    let result = results.get(*n).cloned();
    *n += 1;
    result
}

/// A tool's failure in test mode: a scripted error, or why its mock has
/// no answer (the model reads it as the call's error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MockFailure(pub String);

impl From<MockFailure> for crate::tool::CallError {
    fn from(e: MockFailure) -> Self {
        Self::Tool(e.0)
    }
}

/// A scripted result as a call's outcome.
pub fn scripted_outcome(result: ScriptedResult) -> Result<Value, MockFailure> {
    match (result.response, result.error) {
        (Some(v), _) => Ok(v),
        (None, Some(e)) => Err(MockFailure(e)),
        (None, None) => Ok(Value::Null),
    }
}

/// What `tool` answers to `args` in test mode: its mock's value, or the
/// first case whose `when` holds over the arguments (an argument the
/// call lacks makes a `when` false, never an error).
pub async fn mock_answer(tool: &Tool, args: &Map<String, Value>) -> Result<Value, MockFailure> {
    let Some(mock) = &tool.mock_response else {
        return Err(MockFailure(NO_MOCK.to_owned()));
    };
    let cases = match read_mock(mock) {
        Ok(Mock::Value(v)) => return Ok(v.clone()),
        Ok(Mock::Cases(cases)) => cases,
        Err(e) => {
            return Err(MockFailure(format!(
                "the tool's mockResponse is invalid: {}",
                e.message
            )));
        }
    };
    let vars: BTreeMap<String, Value> = args.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    for case in cases {
        let Some(when) = &case.when else {
            return Ok(case.response);
        };
        if let Ok(Value::Bool(true)) =
            rtc_expr::evaluate(when, &vars, &NoLlm, &Default::default()).await
        {
            return Ok(case.response);
        }
    }
    Err(MockFailure(format!(
        "no case of the mock response matches the arguments {}",
        Value::Object(args.clone())
    )))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(mock: Value) -> Tool {
        serde_json::from_value(json!({"name": "t", "type": "client", "client": {"functionName": "t"}, "mockResponse": mock})).unwrap()
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[tokio::test]
    async fn cases_answer_by_their_when() {
        let t = tool(json!([
            {"when": {"type": "eq", "left": {"type": "variable", "name": "id"}, "right": {"type": "constant", "value": "A1"}}, "response": {"status": "shipped"}},
            {"when": {"type": "gt", "left": {"type": "variable", "name": "n"}, "right": {"type": "constant", "value": 2}}, "response": "many"}
        ]));
        assert_eq!(
            mock_answer(&t, &args(json!({"id": "A1"}))).await,
            Ok(json!({"status": "shipped"}))
        );
        assert_eq!(
            mock_answer(&t, &args(json!({"id": "B", "n": 3}))).await,
            Ok(json!("many"))
        );
        let none = mock_answer(&t, &args(json!({"id": "B"})))
            .await
            .unwrap_err();
        assert!(none.0.contains("no case"), "{none}");
        let mut d = t.clone();
        d.mock_response
            .as_mut()
            .unwrap()
            .as_array_mut()
            .unwrap()
            .push(json!({"response": 0}));
        assert_eq!(mock_answer(&d, &args(json!({}))).await, Ok(json!(0)));
    }

    #[tokio::test]
    async fn a_value_answers_and_no_mock_is_an_error() {
        assert_eq!(
            mock_answer(&tool(json!([1, 2])), &Map::new()).await,
            Ok(json!([1, 2]))
        );
        let mut t = tool(json!(1));
        t.mock_response = None;
        assert_eq!(
            mock_answer(&t, &Map::new()).await,
            Err(MockFailure(NO_MOCK.to_owned()))
        );
    }
}
