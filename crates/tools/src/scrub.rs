//! Scrubbing secret values out of what a tool call brings back (R-SEC):
//! every tool result and error, of every family, passes through a
//! [`Scrubber`] built from the secrets revealed for that call before it
//! reaches the model, an event or a log. A secret is found as written, in
//! base64 (standard and URL-safe, with or without padding, also inside a
//! longer base64 text such as `Basic` credentials) and percent-encoded.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use serde_json::Value;

/// What a scrubbed secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Shorter secrets cannot be told apart from ordinary text and are not
/// scrubbed (they are refused at save time, see `MIN_SECRET_LEN`).
const MIN_SCRUB_LEN: usize = 4;

/// A base64 fragment shorter than this is too likely to occur by chance.
const MIN_FRAGMENT_LEN: usize = 8;

/// The forms of a call's secret values to remove. Its `Debug` shows only
/// how many forms it holds.
#[derive(Default, Clone)]
pub struct Scrubber {
    /// Longest first, so a form containing another is replaced whole.
    needles: Vec<String>,
}

impl Scrubber {
    /// The scrubber for these secret values (empty and very short values
    /// are ignored).
    pub fn new<I, S>(values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut needles = Vec::new();
        for value in values {
            let value = value.as_ref();
            if value.len() >= MIN_SCRUB_LEN {
                forms(value, &mut needles);
            }
        }
        needles.retain(|n| n.len() >= MIN_SCRUB_LEN);
        needles.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        needles.dedup();
        Self { needles }
    }

    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every form of every secret replaced by [`REDACTED`].
    pub fn scrub_str(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for needle in &self.needles {
            if out.contains(needle.as_str()) {
                out = out.replace(needle.as_str(), REDACTED);
            }
        }
        out
    }

    /// [`Self::scrub_str`] over every string and object key of `value`.
    pub fn scrub_value(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => {
                let scrubbed = self.scrub_str(s);
                *s = scrubbed;
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub_value(v)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (k, mut v) in entries {
                    self.scrub_value(&mut v);
                    map.insert(self.scrub_str(&k), v);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

impl std::fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scrubber")
            .field("forms", &self.needles.len())
            .finish()
    }
}

/// The forms of one secret value.
fn forms(value: &str, out: &mut Vec<String>) {
    out.push(value.to_owned());
    let bytes = value.as_bytes();
    for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        out.push(engine.encode(bytes));
    }
    // Inside a longer base64 text the secret starts at one of three byte
    // offsets of a 3-byte group; the characters that depend on its bytes
    // only are the same whatever surrounds it.
    for offset in 0..3 {
        let fragment = base64_fragment(bytes, offset);
        if fragment.len() >= MIN_FRAGMENT_LEN {
            out.push(fragment.replace('+', "-").replace('/', "_"));
            out.push(fragment);
        }
    }
    // Percent-encoded: every byte but the unreserved ones, in upper- and
    // lower-case hex, and as a form value (space as `+`).
    let upper = percent_encode(bytes, false);
    out.push(upper.clone());
    out.push(percent_encode(bytes, true));
    out.push(url::form_urlencoded::byte_serialize(bytes).collect());
    // Encoders that leave some reserved characters alone.
    out.push(upper.replace("%2F", "/").replace("%3A", ":"));
}

/// The base64 characters that encode `bytes` placed `offset` bytes into a
/// 3-byte group and depend on no byte around them.
fn base64_fragment(bytes: &[u8], offset: usize) -> String {
    let mut padded = vec![0u8; offset];
    padded.extend_from_slice(bytes);
    let encoded = STANDARD_NO_PAD.encode(&padded);
    // Characters 6-bit aligned: character i covers bits 6i..6i+6.
    let first_bit = offset * 8;
    let end_bit = padded.len() * 8;
    let start = first_bit.div_ceil(6);
    let end = end_bit / 6; // the last character may mix in what follows
    if start >= end {
        return String::new();
    }
    encoded.get(start..end).unwrap_or_default().to_owned()
}

fn percent_encode(bytes: &[u8], lower: bool) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for &b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else if lower {
            out.push_str(&format!("%{b:02x}"));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
#[path = "scrub_tests.rs"]
mod tests;
