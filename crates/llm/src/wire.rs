//! The OpenAI chat-completions request body, written straight to JSON
//! bytes from borrowed parts: no `Value` tree of the whole request is
//! built or kept while the model answers, and the functions offered go
//! in as the JSON text their list rendered once
//! (`rtc_core::llm::FunctionList`), not serialized again per request.

use rtc_core::llm::{ChatMessage, ChatRequest, OutputFormat, ToolCall};
use rtc_core::model_caps::{ModelCaps, TokenParameter};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// The JSON body of a `/chat/completions` request to a model that
/// accepts `caps` (its token-limit parameter; `temperature` only where it
/// takes sampling parameters).
pub fn request_body(req: &ChatRequest, caps: ModelCaps) -> Vec<u8> {
    let completion = caps.token_parameter == TokenParameter::MaxCompletionTokens;
    let body = Body {
        model: &req.model,
        messages: Messages(&req.messages),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools: req.tools.json(),
        temperature: req.temperature.filter(|_| caps.sampling),
        max_tokens: req.max_tokens.filter(|_| !completion),
        max_completion_tokens: req.max_tokens.filter(|_| completion),
        response_format: ResponseFormat(&req.output),
    };
    // Serializing borrowed strings and values cannot fail.
    serde_json::to_vec(&body).unwrap_or_default()
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Messages<'a>,
    stream: bool,
    stream_options: StreamOptions,
    /// The `tools` array, spliced in as rendered.
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "ResponseFormat::is_text")]
    response_format: ResponseFormat<'a>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

struct Messages<'a>(&'a [ChatMessage]);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(Msg))
    }
}

struct Msg<'a>(&'a ChatMessage);

impl Serialize for Msg<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        match self.0 {
            ChatMessage::System { content } => {
                m.serialize_entry("role", "system")?;
                m.serialize_entry("content", content)?;
            }
            ChatMessage::User { content } => {
                m.serialize_entry("role", "user")?;
                m.serialize_entry("content", content)?;
            }
            ChatMessage::UserImages { content, images } => {
                m.serialize_entry("role", "user")?;
                m.serialize_entry(
                    "content",
                    &Parts {
                        text: content,
                        images,
                    },
                )?;
            }
            ChatMessage::Assistant {
                content,
                tool_calls,
            } if tool_calls.is_empty() => {
                m.serialize_entry("role", "assistant")?;
                m.serialize_entry("content", content)?;
            }
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                m.serialize_entry("role", "assistant")?;
                m.serialize_entry("content", &Some(content).filter(|c| !c.is_empty()))?;
                m.serialize_entry("tool_calls", &Calls(tool_calls))?;
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => {
                m.serialize_entry("role", "tool")?;
                m.serialize_entry("tool_call_id", tool_call_id)?;
                m.serialize_entry("content", content)?;
            }
        }
        m.end()
    }
}

/// A user message's content parts: its text, then each image as a data
/// URL (`image_url`, the form every OpenAI-compatible vision model reads).
struct Parts<'a> {
    text: &'a str,
    images: &'a [rtc_core::llm::MessageImage],
}

impl Serialize for Parts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Part<'a> {
            Text { text: &'a str },
            ImageUrl { image_url: Url },
        }
        #[derive(Serialize)]
        struct Url {
            url: String,
        }
        let text = std::iter::once(Part::Text { text: self.text });
        let images = self.images.iter().map(|i| Part::ImageUrl {
            image_url: Url {
                url: format!("data:{};base64,{}", i.mime_type, i.data),
            },
        });
        s.collect_seq(text.chain(images))
    }
}

struct Calls<'a>(&'a [ToolCall]);

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Call<'a> {
            id: &'a str,
            r#type: &'static str,
            function: CallFunction<'a>,
        }
        #[derive(Serialize)]
        struct CallFunction<'a> {
            name: &'a str,
            arguments: &'a str,
        }
        s.collect_seq(self.0.iter().map(|c| Call {
            id: &c.id,
            r#type: "function",
            function: CallFunction {
                name: &c.name,
                arguments: &c.arguments,
            },
        }))
    }
}

/// `response_format`, left out for plain text.
struct ResponseFormat<'a>(&'a OutputFormat);

impl ResponseFormat<'_> {
    fn is_text(&self) -> bool {
        matches!(self.0, OutputFormat::Text)
    }
}

impl Serialize for ResponseFormat<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Schema<'a> {
            name: &'a str,
            strict: bool,
            schema: &'a Value,
        }
        let mut m = s.serialize_map(None)?;
        match self.0 {
            OutputFormat::Text => {}
            OutputFormat::JsonObject => m.serialize_entry("type", "json_object")?,
            OutputFormat::JsonSchema { name, schema } => {
                m.serialize_entry("type", "json_schema")?;
                m.serialize_entry(
                    "json_schema",
                    &Schema {
                        name,
                        strict: true,
                        schema,
                    },
                )?;
            }
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use rtc_core::llm::{FunctionList, ToolCall, ToolSpec};
    use rtc_core::model_caps::model_caps;
    use serde_json::json;

    use super::*;

    /// Images go as content parts with data URLs.
    #[test]
    fn images_are_content_parts() {
        let req = ChatRequest {
            model: "gpt-4o".into(),
            messages: vec![ChatMessage::UserImages {
                content: "From the tool:".into(),
                images: vec![rtc_core::llm::MessageImage {
                    mime_type: "image/png".into(),
                    data: "iVBOR".into(),
                }],
            }],
            ..ChatRequest::default()
        };
        let body: Value =
            serde_json::from_slice(&request_body(&req, model_caps("gpt-4o"))).unwrap();
        assert_eq!(
            body["messages"][0],
            json!({"role": "user", "content": [
                {"type": "text", "text": "From the tool:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}}]})
        );
    }

    /// Reasoning models get `max_completion_tokens` and no `temperature`
    /// (the API answers 400 otherwise); the rest keep `max_tokens`.
    #[test]
    fn parameters_follow_the_model() {
        let req = |model: &str| ChatRequest {
            model: model.into(),
            temperature: Some(0.0),
            max_tokens: Some(64),
            ..ChatRequest::default()
        };
        let body = |model: &str| -> Value {
            serde_json::from_slice(&request_body(&req(model), model_caps(model))).unwrap()
        };
        let o3 = body("o3-mini");
        assert_eq!(o3["max_completion_tokens"], 64);
        assert!(o3.get("max_tokens").is_none() && o3.get("temperature").is_none());
        let gpt5 = body("gpt-5-mini");
        assert!(gpt5.get("temperature").is_none() && gpt5.get("max_tokens").is_none());
        let classic = body("gpt-4o-mini");
        assert_eq!(classic["max_tokens"], 64);
        assert_eq!(classic["temperature"], 0.0);
        assert!(classic.get("max_completion_tokens").is_none());
    }

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
            tools: FunctionList::new(vec![std::sync::Arc::new(ToolSpec {
                name: "f".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            })]),
            temperature: Some(0.2),
            max_tokens: None,
            output: OutputFormat::Text,
        };
        let body: Value =
            serde_json::from_slice(&request_body(&req, model_caps(&req.model))).unwrap();
        assert_eq!(body["model"], "m");
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "s"})
        );
        assert_eq!(
            body["tools"][0],
            json!({"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}})
        );
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

    /// A JSON-schema answer format and a plain assistant message are written
    /// as OpenAI expects them.
    #[test]
    fn writes_response_format_and_plain_answers() {
        let req = ChatRequest {
            model: "m".into(),
            messages: vec![ChatMessage::Assistant {
                content: "hi".into(),
                tool_calls: vec![],
            }],
            output: OutputFormat::JsonSchema {
                name: "out".into(),
                schema: serde_json::json!({"type": "object"}),
            },
            ..ChatRequest::default()
        };
        let body: Value =
            serde_json::from_slice(&request_body(&req, model_caps(&req.model))).unwrap();
        assert_eq!(
            body["response_format"],
            serde_json::json!({"type": "json_schema", "json_schema": {"name": "out", "strict": true, "schema": {"type": "object"}}})
        );
        assert_eq!(
            body["messages"][0],
            serde_json::json!({"role": "assistant", "content": "hi"})
        );
        assert!(body.get("tools").is_none() && body.get("temperature").is_none());
        let json_object = ChatRequest {
            output: OutputFormat::JsonObject,
            ..ChatRequest::default()
        };
        let body: Value =
            serde_json::from_slice(&request_body(&json_object, model_caps("m"))).unwrap();
        assert_eq!(
            body["response_format"],
            serde_json::json!({"type": "json_object"})
        );
    }

    /// The functions spliced in as their list rendered them give the body
    /// a request had when each spec was serialized into it: the same JSON,
    /// and the same text for the `tools` array.
    #[test]
    fn spliced_functions_are_the_serialized_ones() {
        /// How a request wrote each function before they were spliced.
        struct Serialized<'a>(&'a ToolSpec);
        impl Serialize for Serialized<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                #[derive(Serialize)]
                struct Inner<'a> {
                    name: &'a str,
                    description: &'a str,
                    parameters: &'a Value,
                }
                let mut m = s.serialize_map(Some(2))?;
                m.serialize_entry("type", "function")?;
                let f = self.0;
                m.serialize_entry(
                    "function",
                    &Inner {
                        name: &f.name,
                        description: &f.description,
                        parameters: &f.parameters,
                    },
                )?;
                m.end()
            }
        }
        let specs: Vec<_> = ["lookup", "updateState", "web_search"]
            .iter()
            .map(|name| {
                std::sync::Arc::new(ToolSpec {
                    name: (*name).into(),
                    description: format!("{name}: \"quoted\", tab\t, ünïcode ✓, <html> & \\ back"),
                    parameters: json!({"type": "object",
                        "properties": {"z": {"type": "number", "minimum": 0.5, "maximum": 1e21},
                            "a": {"type": "array", "items": {"enum": ["x", null, true, -3]}}},
                        "required": ["z"], "additionalProperties": false}),
                })
            })
            .collect();
        let req = ChatRequest {
            model: "gpt-4o".into(),
            messages: vec![ChatMessage::User {
                content: "hi".into(),
            }],
            tools: FunctionList::new(specs.clone()),
            temperature: Some(0.3),
            max_tokens: Some(100),
            output: OutputFormat::Text,
        };
        let bytes = request_body(&req, model_caps(&req.model));
        let text = String::from_utf8(bytes.clone()).unwrap();
        let before: Vec<Serialized<'_>> = specs.iter().map(|s| Serialized(s)).collect();
        let before_text = serde_json::to_string(&before).unwrap();
        assert!(text.contains(&format!("\"tools\":{before_text}")), "{text}");
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        let mut expected: Value = serde_json::from_slice(&request_body(
            &ChatRequest {
                tools: FunctionList::default(),
                ..req.clone()
            },
            model_caps(&req.model),
        ))
        .unwrap();
        expected["tools"] = serde_json::from_str(&before_text).unwrap();
        assert_eq!(body, expected);
        // The same list again: the same text, not rendered anew.
        let again = request_body(&req.clone(), model_caps(&req.model));
        assert_eq!(again, bytes);
    }
}
