//! What changed between the parameter schema an MCP tool was pinned with
//! and the one its server offers now (R-BX-7), in words an operator can
//! act on: parameters added, removed or retyped, required ones changed.

use serde_json::Value;

/// The changes from `pinned` to `current`, most telling first; empty when
/// they are equal. Beyond parameters and requirements: "other details".
pub fn schema_changes(pinned: &Value, current: &Value) -> Vec<String> {
    if pinned == current {
        return Vec::new();
    }
    let props = |s: &Value| {
        s.get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let required = |s: &Value| -> Vec<String> {
        s.get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    let (old, new) = (props(pinned), props(current));
    let (old_req, new_req) = (required(pinned), required(current));
    let mut changes = Vec::new();
    for (name, schema) in &new {
        match old.get(name) {
            None if new_req.contains(name) => {
                changes.push(format!("parameter `{name}` added (required)"))
            }
            None => changes.push(format!("parameter `{name}` added")),
            Some(before) if before.get("type") != schema.get("type") => changes.push(format!(
                "parameter `{name}` changed type from {} to {}",
                type_name(before),
                type_name(schema)
            )),
            Some(before) if before != schema => changes.push(format!("parameter `{name}` changed")),
            Some(_) => {}
        }
    }
    for name in old.keys().filter(|n| !new.contains_key(*n)) {
        changes.push(format!("parameter `{name}` removed"));
    }
    for name in new_req
        .iter()
        .filter(|n| old.contains_key(*n) && !old_req.contains(n))
    {
        changes.push(format!("parameter `{name}` became required"));
    }
    for name in old_req
        .iter()
        .filter(|n| new.contains_key(*n) && !new_req.contains(n))
    {
        changes.push(format!("parameter `{name}` became optional"));
    }
    if changes.is_empty() {
        changes.push("other details of the schema changed".to_owned());
    }
    changes
}

fn type_name(schema: &Value) -> String {
    match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(other) => other.to_string(),
        None => "any".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn changes_are_named() {
        let pinned = json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}, "c": {"type": "string"}}, "required": ["a"]});
        let current = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}, "d": {"type": "number"}}, "required": ["a", "b", "d"]});
        assert_eq!(
            schema_changes(&pinned, &current),
            [
                "parameter `a` changed type from number to string",
                "parameter `d` added (required)",
                "parameter `c` removed",
                "parameter `b` became required",
            ]
        );
        assert!(schema_changes(&pinned, &pinned).is_empty());
        let described = json!({"type": "object", "description": "new", "properties": pinned["properties"], "required": ["a"]});
        assert_eq!(
            schema_changes(&pinned, &described),
            ["other details of the schema changed"]
        );
    }
}
