//! Text the platform refuses to store: the NUL character (U+0000).
//! PostgreSQL cannot keep it in a text column, so a NUL from a client or a
//! model would otherwise fail a write deep inside a turn; it is refused
//! where the text comes in, naming the field.

use serde_json::Value;

/// The path of the first string (object key or value) holding a NUL
/// character, as the API names fields (`toolBindings[0].toolId`; empty for
/// the value itself), or `None`.
pub fn nul_field(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => s.contains('\0').then(String::new),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| nul_field(v).map(|rest| format!("[{i}]{}", dotted(&rest)))),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            if k.contains('\0') {
                return Some(k.replace('\0', "\\u0000"));
            }
            nul_field(v).map(|rest| format!("{k}{}", dotted(&rest)))
        }),
        _ => None,
    }
}

/// [`nul_field`] of a JSON text. JSON can only write a NUL as the escape
/// `\u0000`, so a text without it is not parsed at all (this runs on every
/// tool call and WebSocket frame).
pub fn nul_field_in_json(text: &str) -> Option<String> {
    if !text.contains("\\u0000") {
        return None;
    }
    let value: Value = serde_json::from_str(text).ok()?;
    nul_field(&value)
}

fn dotted(rest: &str) -> String {
    if rest.is_empty() || rest.starts_with('[') {
        rest.to_owned()
    } else {
        format!(".{rest}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_the_field_holding_a_nul() {
        assert_eq!(
            nul_field(&json!({"a": "ok", "b": [1, {"c": "x\u{0}"}]})).as_deref(),
            Some("b[1].c")
        );
        assert_eq!(nul_field(&json!("\u{0}")).as_deref(), Some(""));
        assert_eq!(
            nul_field(&json!({"k\u{0}": 1})).as_deref(),
            Some("k\\u0000")
        );
        assert_eq!(nul_field(&json!({"a": ["fine"], "n": null})), None);
        assert_eq!(
            nul_field_in_json(r#"{"a": "x\u0000"}"#).as_deref(),
            Some("a")
        );
        assert_eq!(nul_field_in_json(r#"{"a": "x"}"#), None);
    }
}
