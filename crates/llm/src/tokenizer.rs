//! Real tokenizers for OpenAI-family models (R-RN-8): `o200k_base` for
//! GPT-4o, GPT-4.1, GPT-5 and the o-series, `cl100k_base` for GPT-4 and
//! GPT-3.5; any other model is counted with the documented estimate
//! (`rtc_core::tokens::estimate`). The encodings load once, on first use.

use tiktoken_rs::CoreBPE;

/// The encoding of `model`, when it is an OpenAI-family model.
fn encoding(model: &str) -> Option<&'static CoreBPE> {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let o_series = ["o1", "o3", "o4"].iter().any(|f| {
        name.strip_prefix(f)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
    });
    let o200k = ["gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5"];
    if o_series || o200k.iter().any(|p| name.starts_with(p)) {
        Some(tiktoken_rs::o200k_base_singleton())
    } else if name.starts_with("gpt-4") || name.starts_with("gpt-3.5") {
        Some(tiktoken_rs::cl100k_base_singleton())
    } else {
        None
    }
}

/// `text`'s tokens for `model`.
pub fn count(model: &str, text: &str) -> u32 {
    match encoding(model) {
        Some(bpe) => u32::try_from(bpe.encode_ordinary(text).len()).unwrap_or(u32::MAX),
        None => rtc_core::tokens::estimate(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_models_use_their_encoding() {
        // Known counts of the real encodings.
        assert_eq!(count("gpt-4o-mini", "hello world"), 2);
        assert_eq!(count("gpt-4", "hello world"), 2);
        assert_eq!(count("openai/o3-mini", "tiktoken is great!"), 6);
        assert_eq!(count("gpt-3.5-turbo", "tiktoken is great!"), 6);
        // Anything else: the estimate.
        assert_eq!(count("llama-3.1-8b", "hello world"), 3);
    }
}
