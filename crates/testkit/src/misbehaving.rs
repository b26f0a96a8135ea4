//! How real model providers misbehave, for the scripted mock
//! ([`crate::MockReply::Misbehave`]): what was seen from OpenAI-compatible
//! gateways and hosted models, reproduced on the wire; and what OpenAI
//! refuses with a 400, checked on every request the mock receives
//! (`openai_refusal`).

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::mock_llm::{chunk, next_call_id, sse, text_chunks};

/// One misbehaving answer.
#[derive(Debug, Clone)]
pub enum Misbehaviour {
    /// The text streams, then the connection breaks: no finish reason, no
    /// `[DONE]`.
    CutText(String),
    /// Only the role chunk, then the connection breaks (nothing reached
    /// the caller, so a client may send the request again).
    CutBeforeOutput,
    /// The body ends cleanly but early, after some text: no finish
    /// reason, no `[DONE]` (a proxy that closes the stream).
    EndsEarly(String),
    /// A tool call whose arguments stream up to `partial`, then the
    /// connection breaks.
    CutCall { name: String, partial: String },
    /// Text, then `finish_reason` (`length`, `content_filter`) and `[DONE]`.
    Finish { text: String, reason: String },
    /// A tool call whose arguments stop at `partial`, then
    /// `finish_reason: "length"` and `[DONE]`.
    LengthCall { name: String, partial: String },
    /// A refusal (`delta.refusal`), `finish_reason: "stop"`, no content.
    Refusal(String),
    /// Tool calls without ids (StepFun, hosted Kimi, Gemini 2.5, LM Studio).
    CallsWithoutIds(Vec<(String, Value)>),
    /// A tool call with the id `call_0`, as some providers give in every
    /// answer.
    SameId(String, Value),
    /// Text whose last chunk carries an empty finish reason, then `[DONE]`
    /// (a tolerated quirk).
    EmptyFinish(String),
    /// An error status with these headers and this JSON body.
    Error {
        status: u16,
        headers: Vec<(String, String)>,
        body: Value,
    },
}

impl Misbehaviour {
    /// The 429 OpenAI answers when the account's quota is exhausted.
    pub fn insufficient_quota() -> Self {
        Self::Error {
            status: 429,
            headers: Vec::new(),
            body: json!({"error": {
                "message": "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
                "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}),
        }
    }

    /// A 429 rate limit asking to wait with `header: value`.
    pub fn rate_limited(header: &str, value: &str) -> Self {
        Self::Error {
            status: 429,
            headers: vec![(header.to_owned(), value.to_owned())],
            body: json!({"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}}),
        }
    }

    pub(crate) fn respond(self) -> Response {
        match self {
            Self::CutText(text) => {
                let mut chunks = text_chunks(&text);
                chunks.pop(); // the finish chunk
                broken(chunks)
            }
            Self::CutBeforeOutput => broken(vec![chunk(json!({"role": "assistant"}), None)]),
            Self::EndsEarly(text) => {
                let mut chunks = text_chunks(&text);
                chunks.pop();
                raw_sse(&chunks, false)
            }
            Self::CutCall { name, partial } => broken(call_chunks(&name, &partial, true)),
            Self::Finish { text, reason } => {
                let mut chunks = text_chunks(&text);
                chunks.pop();
                chunks.push(chunk(json!({}), Some(&reason)));
                sse(chunks)
            }
            Self::LengthCall { name, partial } => {
                let mut chunks = call_chunks(&name, &partial, true);
                chunks.push(chunk(json!({}), Some("length")));
                sse(chunks)
            }
            Self::Refusal(text) => {
                let mut chunks = vec![chunk(
                    json!({"role": "assistant", "content": null, "refusal": ""}),
                    None,
                )];
                for piece in text.split_inclusive(' ') {
                    chunks.push(chunk(json!({"refusal": piece}), None));
                }
                chunks.push(chunk(json!({}), Some("stop")));
                sse(chunks)
            }
            Self::CallsWithoutIds(calls) => {
                let mut chunks = Vec::new();
                for (i, (name, args)) in calls.iter().enumerate() {
                    chunks.push(chunk(
                        json!({"tool_calls": [{"index": i, "type": "function",
                            "function": {"name": name, "arguments": args.to_string()}}]}),
                        None,
                    ));
                }
                chunks.push(chunk(json!({}), Some("tool_calls")));
                sse(chunks)
            }
            Self::SameId(name, args) => sse(vec![
                chunk(
                    json!({"tool_calls": [{"index": 0, "id": "call_0", "type": "function",
                        "function": {"name": name, "arguments": args.to_string()}}]}),
                    None,
                ),
                chunk(json!({}), Some("tool_calls")),
            ]),
            Self::EmptyFinish(text) => {
                let mut chunks = text_chunks(&text);
                chunks.pop();
                chunks.push(chunk(json!({}), Some("")));
                raw_sse(&chunks, true)
            }
            Self::Error {
                status,
                headers,
                body,
            } => {
                let code =
                    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                let mut response = (code, axum::Json(body)).into_response();
                for (name, value) in headers {
                    if let (Ok(n), Ok(v)) = (
                        HeaderName::try_from(name.as_str()),
                        HeaderValue::from_str(&value),
                    ) {
                        response.headers_mut().insert(n, v);
                    }
                }
                response
            }
        }
    }
}

/// A tool call's chunks with its arguments up to `partial`.
fn call_chunks(name: &str, partial: &str, with_id: bool) -> Vec<Value> {
    let mut head =
        json!({"index": 0, "type": "function", "function": {"name": name, "arguments": ""}});
    if with_id {
        head["id"] = json!(next_call_id());
    }
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "tool_calls": [head]}),
        None,
    )];
    for piece in partial.as_bytes().chunks(4) {
        let piece = String::from_utf8_lossy(piece).into_owned();
        chunks.push(chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
            None,
        ));
    }
    chunks
}

/// An SSE body of `chunks`, with `[DONE]` at the end or not.
fn raw_sse(chunks: &[Value], done: bool) -> Response {
    let mut body = String::new();
    for c in chunks {
        body.push_str(&format!("data: {c}\n\n"));
    }
    if done {
        body.push_str("data: [DONE]\n\n");
    }
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from(body),
    )
        .into_response()
}

/// An SSE body of `chunks` whose connection then breaks (once they are
/// on the wire: an error before that would fail the response itself).
fn broken(chunks: Vec<Value>) -> Response {
    use futures::StreamExt;
    let parts: Vec<Result<String, std::io::Error>> = chunks
        .iter()
        .map(|c| Ok(format!("data: {c}\n\n")))
        .collect();
    let reset = futures::stream::once(async {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        Err(std::io::Error::other("connection reset by the mock"))
    });
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(futures::stream::iter(parts).chain(reset)),
    )
        .into_response()
}

/// What OpenAI answers 400 to, in its own words: the token-limit and
/// sampling parameters reasoning models refuse, more than 128 functions,
/// tool-call arguments in the history that are not valid JSON (strict
/// gateways such as vLLM refuse those too). The mock checks every request
/// against these before answering.
pub(crate) fn openai_refusal(request: &Value) -> Option<Response> {
    let model = request["model"].as_str().unwrap_or("");
    let name = model.rsplit('/').next().unwrap_or(model);
    let reasoning = ["o1", "o3", "o4"].iter().any(|f| {
        name.strip_prefix(f)
            .is_some_and(|r| r.is_empty() || r.starts_with('-'))
    }) || (name.starts_with("gpt-5") && !name.contains("-chat"));
    let refuse = |message: String, param: &str, code: &str| {
        let body = json!({"error": {"message": message, "type": "invalid_request_error",
            "param": param, "code": code}});
        Some((StatusCode::BAD_REQUEST, axum::Json(body)).into_response())
    };
    if reasoning && request.get("max_tokens").is_some() {
        return refuse(
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.".to_owned(),
            "max_tokens",
            "unsupported_parameter",
        );
    }
    if reasoning
        && let Some(t) = request.get("temperature").and_then(Value::as_f64)
        && t != 1.0
    {
        return refuse(
            format!(
                "Unsupported value: 'temperature' does not support {t} with this model. Only the default (1) value is supported."
            ),
            "temperature",
            "unsupported_value",
        );
    }
    let tools = request["tools"].as_array().map_or(0, Vec::len);
    if tools > 128 {
        return refuse(
            format!(
                "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length {tools} instead."
            ),
            "tools",
            "array_above_max_length",
        );
    }
    for (i, m) in request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (j, c) in m["tool_calls"].as_array().into_iter().flatten().enumerate() {
            let args = c["function"]["arguments"].as_str().unwrap_or("");
            if serde_json::from_str::<Value>(args).is_err() {
                let param = format!("messages.[{i}].tool_calls.[{j}].function.arguments");
                return refuse(
                    format!("Invalid '{param}': the arguments are not valid JSON."),
                    &param,
                    "invalid_value",
                );
            }
        }
    }
    None
}
