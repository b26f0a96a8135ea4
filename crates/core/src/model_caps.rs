//! What a chat model accepts (R-RN-6): which token-limit parameter, and
//! whether it takes sampling parameters. A documented table of well-known
//! families decides by the model's name; a provider's configuration may
//! override it for all its models and per model (`[providers.NAME]`
//! `token_parameter`, `sampling`, `[providers.NAME.models.MODEL]`).
//!
//! | models | token limit | `temperature` |
//! |---|---|---|
//! | `o1`, `o3`, `o4-mini` and their dated or sized variants | `max_completion_tokens` | never sent |
//! | `gpt-5`, `gpt-5-mini`, `gpt-5-nano`, `gpt-5.1`, … | `max_completion_tokens` | never sent |
//! | `gpt-5-chat-latest` and other `gpt-5*-chat*` | `max_completion_tokens` | sent |
//! | anything else | `max_tokens` | sent |
//!
//! Images (tool results' images as content parts) go to models whose name
//! says they see them: `gpt-4o`, `gpt-4.1`, `gpt-4-turbo`, `gpt-5`, `o1`
//! (not `o1-mini`), `o3`, `o4`, `claude`, `gemini`, `pixtral`, `llava`,
//! and names with `-vl` or `vision`; others read a description.
//!
//! Context windows (input and output tokens together, R-RN-8):
//!
//! | models | window |
//! |---|---|
//! | `gpt-4.1*` | 1,047,576 |
//! | `gpt-5*` (not `-chat`) | 400,000 |
//! | `o1`, `o3`, `o4-mini`, `claude*` | 200,000 |
//! | `gemini*` | 1,048,576 |
//! | `gpt-4o*`, `chatgpt-4o*`, `gpt-4-turbo*`, `gpt-5*-chat*`, `o1-mini`, `llama-3.1`…`3.3`, `deepseek*` | 128,000 |
//! | `gpt-4-32k*` | 32,768 |
//! | `gpt-4` and its dated variants | 8,192 |
//! | `gpt-3.5-turbo*` | 16,385 |
//! | `qwen*`, `mistral*`, `mixtral*` | 32,768 |
//! | anything else | 128,000 (set `context_window` for a smaller local model) |
//!
//! A gateway's prefix (`openai/o3-mini`) is ignored; the name is matched
//! without regard to case.

use serde::{Deserialize, Serialize};

/// The request field that bounds an answer's tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenParameter {
    MaxTokens,
    MaxCompletionTokens,
}

impl TokenParameter {
    /// Its name in a request.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MaxTokens => "max_tokens",
            Self::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

/// What one model accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelCaps {
    pub token_parameter: TokenParameter,
    /// Whether it takes `temperature` (reasoning models answer 400 to any
    /// value but the default).
    pub sampling: bool,
    /// Whether it reads images.
    pub vision: bool,
    /// Its context window in tokens (input and output together).
    pub context_window: u32,
}

/// What a configuration says of a model, each unset field left to the
/// table (or to a broader override).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapsOverride {
    #[serde(default)]
    pub token_parameter: Option<TokenParameter>,
    #[serde(default)]
    pub sampling: Option<bool>,
    #[serde(default)]
    pub vision: Option<bool>,
    #[serde(default, alias = "contextWindow")]
    pub context_window: Option<u32>,
}

impl CapsOverride {
    /// `caps` with what this override sets.
    pub fn apply(&self, caps: ModelCaps) -> ModelCaps {
        ModelCaps {
            token_parameter: self.token_parameter.unwrap_or(caps.token_parameter),
            sampling: self.sampling.unwrap_or(caps.sampling),
            vision: self.vision.unwrap_or(caps.vision),
            context_window: self.context_window.unwrap_or(caps.context_window),
        }
    }
}

/// The table's answer for `model`.
pub fn model_caps(model: &str) -> ModelCaps {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let reasoning = ["o1", "o3", "o4"].iter().any(|family| {
        name.strip_prefix(family)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
    });
    let gpt5 = name.starts_with("gpt-5");
    let vision = sees_images(&name);
    let context_window = window_of(&name);
    if reasoning || gpt5 {
        return ModelCaps {
            token_parameter: TokenParameter::MaxCompletionTokens,
            sampling: gpt5 && name.contains("-chat"),
            vision,
            context_window,
        };
    }
    ModelCaps {
        token_parameter: TokenParameter::MaxTokens,
        sampling: true,
        vision,
        context_window,
    }
}

/// The window a model of this (lower-case) name has (the table above).
fn window_of(name: &str) -> u32 {
    let starts = |prefixes: &[&str]| prefixes.iter().any(|p| name.starts_with(p));
    let family = |f: &str| {
        name.strip_prefix(f)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
    };
    if starts(&["gpt-4.1"]) {
        1_047_576
    } else if starts(&["gemini"]) {
        1_048_576
    } else if starts(&["gpt-5"]) && !name.contains("-chat") {
        400_000
    } else if name.starts_with("o1-mini") {
        128_000
    } else if family("o1") || family("o3") || family("o4") || starts(&["o4-mini", "claude"]) {
        200_000
    } else if starts(&["gpt-4-32k"]) {
        32_768
    } else if starts(&["gpt-4o", "chatgpt-4o", "gpt-4-turbo", "gpt-5"]) {
        128_000
    } else if name == "gpt-4" || name.starts_with("gpt-4-0") {
        8_192
    } else if starts(&["gpt-3.5-turbo"]) {
        16_385
    } else if starts(&["qwen", "mistral", "mixtral"]) {
        32_768
    } else {
        128_000
    }
}

/// Whether a model of this (lower-case) name reads images.
fn sees_images(name: &str) -> bool {
    if name.starts_with("o1-mini") {
        return false;
    }
    let families = [
        "gpt-4o",
        "gpt-4.1",
        "gpt-4-turbo",
        "gpt-5",
        "chatgpt-4o",
        "claude",
        "gemini",
        "pixtral",
        "llava",
    ];
    families.iter().any(|f| name.starts_with(f))
        || ["o1", "o3", "o4"].iter().any(|f| {
            name.strip_prefix(f)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
        })
        || name.contains("-vl")
        || name.contains("vision")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(model: &str) -> (&'static str, bool) {
        let c = model_caps(model);
        (c.token_parameter.as_str(), c.sampling)
    }

    #[test]
    fn the_table() {
        for m in [
            "o1",
            "o1-mini",
            "o3",
            "o3-mini-2025-01-31",
            "o4-mini",
            "openai/o3-mini",
            "O3",
        ] {
            assert_eq!(caps(m), ("max_completion_tokens", false), "{m}");
        }
        for m in [
            "gpt-5",
            "gpt-5-mini",
            "gpt-5-nano",
            "gpt-5.1",
            "openai/gpt-5-mini",
        ] {
            assert_eq!(caps(m), ("max_completion_tokens", false), "{m}");
        }
        assert_eq!(caps("gpt-5-chat-latest"), ("max_completion_tokens", true));
        for m in [
            "gpt-4o-mini",
            "gpt-4.1",
            "o1x",
            "llama-3.1-70b",
            "mock",
            "orca",
        ] {
            assert_eq!(caps(m), ("max_tokens", true), "{m}");
        }
    }

    #[test]
    fn who_sees_images() {
        for m in [
            "gpt-4o-mini",
            "gpt-4.1",
            "gpt-5-mini",
            "o3",
            "claude-3-5-sonnet",
            "gemini-2.5-flash",
            "qwen2.5-vl-72b",
            "openai/gpt-4o",
        ] {
            assert!(model_caps(m).vision, "{m}");
        }
        for m in [
            "o1-mini",
            "gpt-3.5-turbo",
            "llama-3.1-70b",
            "mock",
            "deepseek-r1",
        ] {
            assert!(!model_caps(m).vision, "{m}");
        }
    }

    #[test]
    fn context_windows() {
        for (m, w) in [
            ("gpt-4.1-mini", 1_047_576),
            ("gpt-4o-mini", 128_000),
            ("openai/gpt-5-mini", 400_000),
            ("gpt-5-chat-latest", 128_000),
            ("o3-mini", 200_000),
            ("o1-mini", 128_000),
            ("claude-3-5-sonnet", 200_000),
            ("gpt-4", 8_192),
            ("gpt-4-0613", 8_192),
            ("gpt-4-32k", 32_768),
            ("gpt-4-turbo", 128_000),
            ("gpt-3.5-turbo", 16_385),
            ("qwen2.5-7b", 32_768),
            ("mock", 128_000),
        ] {
            assert_eq!(model_caps(m).context_window, w, "{m}");
        }
        let small = CapsOverride {
            context_window: Some(4_096),
            ..CapsOverride::default()
        };
        assert_eq!(small.apply(model_caps("gpt-4o")).context_window, 4_096);
    }

    #[test]
    fn overrides_set_only_what_they_name() {
        let base = model_caps("my-reasoner");
        let o = CapsOverride {
            sampling: Some(false),
            ..CapsOverride::default()
        };
        assert_eq!(
            o.apply(base),
            ModelCaps {
                token_parameter: TokenParameter::MaxTokens,
                sampling: false,
                vision: false,
                context_window: 128_000,
            }
        );
    }
}
