//! What a model's answer becomes before it is stored and run (R-RN-6),
//! whatever the provider sent: tool-call ids unique in the session's
//! history (some providers send none, or `call_0` in every answer);
//! arguments that are a JSON object, or else `{}` in the history with the
//! call not run and the model told why (a request must never replay
//! arguments that are not valid JSON: strict gateways refuse the whole
//! history); a refusal kept as the answer's text.

use std::collections::HashMap;

use rtc_core::llm::ChatResponse;
use serde_json::Value;

/// What the model is told of a call whose arguments were cut by the
/// token limit.
const CUT_BY_LENGTH: &str = "the answer reached the token limit before this call's arguments were complete, so the call did not run; call it again with shorter arguments";

/// A model's answer, checked.
#[derive(Debug)]
pub struct CheckedAnswer {
    /// The answer as stored: ids unique, arguments valid, a refusal as
    /// its content.
    pub response: ChatResponse,
    /// The model declined to answer (`response.content` is its refusal).
    pub refusal: bool,
    /// Calls that do not run, by id, with what the model is told.
    pub refused: HashMap<String, String>,
    /// The arguments as the model wrote them, by call id, where they
    /// differ from the stored ones (the host's `tool.called` shows them).
    pub written: HashMap<String, String>,
}

/// Check `response`; `taken(id)` tells whether an id is already in the
/// session's history.
pub fn check(mut response: ChatResponse, taken: &[bool]) -> CheckedAnswer {
    let mut refused = HashMap::new();
    let mut written = HashMap::new();
    let cut_by_length = response.finish_reason.as_deref() == Some("length");
    for (i, call) in response.tool_calls.iter_mut().enumerate() {
        if taken.get(i).copied().unwrap_or(false) {
            call.id = rtc_store::new_id("call");
        }
        let problem = match serde_json::from_str::<Value>(call.arguments.trim()) {
            Ok(Value::Object(_)) => None,
            // Some models write nothing for a call without parameters.
            Err(_) if call.arguments.trim().is_empty() => {
                call.arguments = "{}".to_owned();
                None
            }
            Ok(_) => Some("the call's arguments were not a JSON object, so the call did not run; call it again with a JSON object".to_owned()),
            Err(_) if cut_by_length => Some(CUT_BY_LENGTH.to_owned()),
            Err(e) => Some(format!(
                "the call's arguments were not valid JSON ({e}), so the call did not run; call it again with a JSON object"
            )),
        };
        if let Some(problem) = problem {
            written.insert(
                call.id.clone(),
                std::mem::replace(&mut call.arguments, "{}".to_owned()),
            );
            refused.insert(call.id.clone(), problem);
        }
    }
    let refusal = response.content.is_empty()
        && response.tool_calls.is_empty()
        && response.refusal.as_ref().is_some_and(|r| !r.is_empty());
    if refusal && let Some(text) = response.refusal.take() {
        response.content = text;
    }
    CheckedAnswer {
        response,
        refusal,
        refused,
        written,
    }
}

#[cfg(test)]
mod tests {
    use rtc_core::llm::ToolCall;

    use super::*;

    fn call(id: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "f".into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn ids_are_unique_and_bad_arguments_never_stored() {
        let response = ChatResponse {
            tool_calls: vec![
                call("call_0", r#"{"q": 1}"#),
                call("call_1", r#"{"q": "abcdefghij"#),
                call("call_2", "[1]"),
                call("call_3", " "),
            ],
            finish_reason: Some("length".into()),
            ..ChatResponse::default()
        };
        let checked = check(response, &[true, false, false, false]);
        let calls = &checked.response.tool_calls;
        assert_ne!(calls[0].id, "call_0", "an id the history has is replaced");
        assert!(calls[0].id.starts_with("call_"));
        assert_eq!(calls[0].arguments, r#"{"q": 1}"#);
        assert_eq!(calls[1].arguments, "{}", "cut arguments are not stored");
        assert_eq!(checked.written["call_1"], r#"{"q": "abcdefghij"#);
        assert!(checked.refused["call_1"].contains("token limit"));
        assert!(checked.refused["call_2"].contains("not a JSON object"));
        assert_eq!(calls[3].arguments, "{}", "no arguments read as none");
        assert!(!checked.refused.contains_key("call_3"));
        assert!(!checked.refused.contains_key(&calls[0].id));
    }

    #[test]
    fn a_refusal_is_the_answer() {
        let response = ChatResponse {
            refusal: Some("I can't help with that.".into()),
            ..ChatResponse::default()
        };
        let checked = check(response, &[]);
        assert!(checked.refusal);
        assert_eq!(checked.response.content, "I can't help with that.");
    }
}
