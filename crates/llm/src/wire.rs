//! The OpenAI chat-completions request body.

use rtc_core::llm::{ChatMessage, ChatRequest, OutputFormat};
use serde_json::{Value, json};

/// The JSON body of a `/chat/completions` request.
pub fn request_body(req: &ChatRequest) -> Value {
    let messages: Vec<Value> = req.messages.iter().map(message).collect();
    let mut body = json!({
        "model": req.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
    }
    if let Some(t) = req.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(m) = req.max_tokens {
        body["max_tokens"] = json!(m);
    }
    match &req.output {
        OutputFormat::Text => {}
        OutputFormat::JsonObject => body["response_format"] = json!({"type": "json_object"}),
        OutputFormat::JsonSchema { name, schema } => {
            body["response_format"] = json!({"type": "json_schema", "json_schema": {"name": name, "strict": true, "schema": schema}});
        }
    }
    body
}

fn message(m: &ChatMessage) -> Value {
    match m {
        ChatMessage::System { content } => json!({"role": "system", "content": content}),
        ChatMessage::User { content } => json!({"role": "user", "content": content}),
        ChatMessage::Assistant {
            content,
            tool_calls,
        } if tool_calls.is_empty() => {
            json!({"role": "assistant", "content": content})
        }
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => json!({
            "role": "assistant",
            "content": if content.is_empty() { Value::Null } else { json!(content) },
            "tool_calls": tool_calls.iter().map(|c| json!({
                "id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}
            })).collect::<Vec<_>>(),
        }),
        ChatMessage::Tool {
            tool_call_id,
            content,
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
    }
}

#[cfg(test)]
mod tests {
    use rtc_core::llm::{ToolCall, ToolSpec};

    use super::*;

    #[test]
    fn builds_openai_body() {
        let req = ChatRequest {
            model: "m".into(),
            messages: vec![
                ChatMessage::System {
                    content: "s".into(),
                },
                ChatMessage::User {
                    content: "u".into(),
                },
                ChatMessage::Assistant {
                    content: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "f".into(),
                        arguments: "{}".into(),
                    }],
                },
                ChatMessage::Tool {
                    tool_call_id: "c1".into(),
                    content: "{\"ok\":true}".into(),
                },
            ],
            tools: vec![ToolSpec {
                name: "f".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
            temperature: Some(0.2),
            max_tokens: None,
            output: OutputFormat::Text,
        };
        let body = request_body(&req);
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["name"],
            "f"
        );
        assert_eq!(body["messages"][3]["tool_call_id"], "c1");
        assert_eq!(body["tools"][0]["type"], "function");
        assert_eq!(body["temperature"], 0.2);
        assert!(body.get("max_tokens").is_none() && body.get("response_format").is_none());
    }
}
