//! Counting what a request costs in tokens (R-RN-8). A model's client
//! counts text with its real tokenizer where it has one (OpenAI-family
//! models, see `rtc-llm`); otherwise with [`estimate`]: each ASCII byte a
//! quarter token (English runs near four characters per token) and each
//! other character one token (CJK text runs near one per character), so
//! the estimate errs on the safe side. The message and function overheads
//! follow OpenAI's published counting.

use crate::llm::{ChatMessage, FunctionList};

/// Tokens each message costs beyond its text (role and separators).
pub const MESSAGE_OVERHEAD: u32 = 4;

/// Tokens a request costs beyond its messages (the answer's priming).
pub const REQUEST_OVERHEAD: u32 = 3;

/// Tokens counted for each image (a high-detail tile set's usual cost).
pub const IMAGE_TOKENS: u32 = 765;

/// The documented estimate of `text`'s tokens for a model without a
/// known tokenizer (see the module doc).
pub fn estimate(text: &str) -> u32 {
    let mut ascii = 0u64;
    let mut other = 0u64;
    for c in text.chars() {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
    }
    u32::try_from(ascii.div_ceil(4) + other).unwrap_or(u32::MAX)
}

/// The tokens of one message, its text counted by `count`.
pub fn message_tokens(m: &ChatMessage, count: &dyn Fn(&str) -> u32) -> u32 {
    let text = match m {
        ChatMessage::System { content } | ChatMessage::User { content } => count(content),
        ChatMessage::UserImages { content, images } => {
            let images = u32::try_from(images.len()).unwrap_or(u32::MAX);
            count(content).saturating_add(images.saturating_mul(IMAGE_TOKENS))
        }
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => tool_calls.iter().fold(count(content), |sum, c| {
            sum.saturating_add(count(&c.name))
                .saturating_add(count(&c.arguments))
                .saturating_add(MESSAGE_OVERHEAD)
        }),
        ChatMessage::Tool { content, .. } => count(content),
    };
    text.saturating_add(MESSAGE_OVERHEAD)
}

/// The tokens the functions offered cost: each function's JSON as the
/// request carries it (providers render about as much into the prompt).
/// [`FunctionList::tokens`] remembers it per model.
pub fn tools_tokens(tools: &FunctionList, count: &dyn Fn(&str) -> u32) -> u32 {
    tools.function_texts().fold(0u32, |sum, sent| {
        sum.saturating_add(count(sent))
            .saturating_add(MESSAGE_OVERHEAD)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_errs_on_the_safe_side() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("abcd"), 1);
        assert_eq!(estimate("hello world"), 3);
        // Three bytes of UTF-8 each, about one token each.
        assert_eq!(estimate("你好世界"), 4);
        assert_eq!(estimate("é"), 1);
    }

    #[test]
    fn messages_count_their_calls_and_images() {
        let count = |t: &str| estimate(t);
        let user = ChatMessage::User {
            content: "abcdefgh".into(),
        };
        assert_eq!(message_tokens(&user, &count), 2 + MESSAGE_OVERHEAD);
        let call = ChatMessage::Assistant {
            content: String::new(),
            tool_calls: vec![crate::llm::ToolCall {
                id: "c1".into(),
                name: "look".into(),
                arguments: "{\"q\":\"x\"}".into(),
            }],
        };
        assert_eq!(message_tokens(&call, &count), 1 + 3 + 2 * MESSAGE_OVERHEAD);
        let images = ChatMessage::UserImages {
            content: String::new(),
            images: vec![
                crate::llm::MessageImage {
                    mime_type: "image/png".into(),
                    data: String::new(),
                };
                2
            ],
        };
        assert_eq!(
            message_tokens(&images, &count),
            2 * IMAGE_TOKENS + MESSAGE_OVERHEAD
        );
    }
}
