//! The domain rules of rtc-agent, free of IO: validation of every resource
//! at save time (names, placeholders, bindings, variables, expressions,
//! realtime gating, speech interfaces), the compatibility report and its cleanup, and small
//! pure helpers (result paths, timestamps) shared by the adapters.
//!
//! Callers load whatever a rule needs (the bound tools, the realtime
//! interface, which secrets exist) and pass it in; nothing here reads a
//! database or the network.

pub mod assistant_rules;
pub mod binding_rules;
pub mod bounds;
pub mod error;
pub mod function_list;
pub mod llm;
pub mod mcp_rules;
pub mod mock_rules;
pub mod model_caps;
pub mod model_tools;
pub mod names;
pub mod placeholders;
pub mod realtime;
pub mod report_marks;
pub mod result_path;
pub mod schema_changes;
pub mod speech_rules;
pub mod system_vars;
pub mod task_backend_rules;
pub mod test_rules;
pub mod text;
pub mod time;
pub mod tokens;
pub mod tool_rules;
pub mod v3_mapping;
mod workflow_edge_rules;
pub mod workflow_parse;
pub mod workflow_rules;
pub mod workflow_stage;

pub use error::ValidationError;

#[cfg(test)]
mod test_support {
    /// Set (or, with `null`, remove) the value at a JSON pointer, creating the
    /// last key if needed.
    pub(crate) fn put(
        mut v: serde_json::Value,
        pointer: &str,
        value: serde_json::Value,
    ) -> serde_json::Value {
        let (parent, key) = pointer.rsplit_once('/').expect("pointer");
        let target = v.pointer_mut(parent).unwrap_or_else(|| panic!("{pointer}"));
        match target {
            serde_json::Value::Object(map) if value.is_null() => {
                map.remove(key);
            }
            serde_json::Value::Object(map) => {
                map.insert(key.to_owned(), value);
            }
            serde_json::Value::Array(items) => items[key.parse::<usize>().expect("index")] = value,
            _ => panic!("{pointer}"),
        }
        v
    }
}
