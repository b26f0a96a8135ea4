//! Scrubbing: every encoding of a secret, also inside longer text.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::json;

use super::*;

const SECRET: &str = "s3cr3t/Key+with?odd&chars=~";

#[test]
fn raw_base64_and_percent_encoded_forms_are_removed() {
    let scrubber = Scrubber::new([SECRET]);
    let echoes = [
        SECRET.to_owned(),
        STANDARD.encode(SECRET),
        STANDARD.encode(SECRET).trim_end_matches('=').to_owned(),
        URL_SAFE_NO_PAD.encode(SECRET),
        base64::engine::general_purpose::URL_SAFE.encode(SECRET),
        url::form_urlencoded::byte_serialize(SECRET.as_bytes()).collect(),
        percent_encode(SECRET.as_bytes(), false),
        percent_encode(SECRET.as_bytes(), true),
        // Inside longer base64, at each of the three alignments.
        STANDARD.encode(format!("user:{SECRET}")),
        STANDARD.encode(format!("ab:{SECRET}")),
        STANDARD.encode(format!("a:{SECRET}")),
        URL_SAFE_NO_PAD.encode(format!("Bearer {SECRET} and more")),
    ];
    for echo in echoes {
        let text = format!("the service said <{echo}> back");
        let scrubbed = scrubber.scrub_str(&text);
        assert!(scrubbed.contains(REDACTED), "{echo} -> {scrubbed}");
        assert!(!scrubbed.contains(&echo), "{echo} -> {scrubbed}");
        assert!(scrubbed.starts_with("the service said <"), "{scrubbed}");
    }
}

#[test]
fn json_values_are_scrubbed_in_strings_and_keys() {
    let scrubber = Scrubber::new(["token-12345678", "other-secret-value"]);
    let mut value = json!({
        "headers": {"x-api-key": "token-12345678"},
        "token-12345678": [1, true, null, STANDARD.encode("other-secret-value")],
        "ok": "nothing here"
    });
    scrubber.scrub_value(&mut value);
    let text = value.to_string();
    assert!(!text.contains("token-12345678"), "{text}");
    assert!(
        !text.contains(&STANDARD.encode("other-secret-value")),
        "{text}"
    );
    assert_eq!(value["ok"], "nothing here");
    assert_eq!(value["headers"]["x-api-key"], REDACTED);
}

#[test]
fn nothing_to_scrub_leaves_text_alone() {
    let scrubber = Scrubber::new(["", "abc"]);
    assert!(scrubber.is_empty());
    assert_eq!(scrubber.scrub_str("abc abc"), "abc abc");
    assert!(!format!("{:?}", Scrubber::new([SECRET])).contains("s3cr3t"));
}
