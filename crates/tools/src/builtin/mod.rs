//! The LLM's built-in tools of seed 000 that reach outside (the others
//! live with the runtime that owns their state): one tool per file, each
//! with its name, its description and schema written for the model, and
//! the checking of the model's arguments against that schema.

pub mod ask_user;
pub mod goals;
pub mod loops;
pub mod memory;
pub mod subagents;
pub mod todo_write;
pub mod web_fetch;
pub mod web_search;

use rtc_core::model_tools::schema_problems;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The model's arguments, validated against `schema`, then typed. The
/// message names what is wrong so the model can correct its call.
pub(crate) fn parse_arguments<T: DeserializeOwned>(
    schema: &Value,
    arguments: &str,
) -> Result<T, String> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("the arguments are not JSON: {e}"))?;
    let problems = schema_problems(schema, &value);
    if !problems.is_empty() {
        return Err(format!("invalid arguments: {}", problems.join("; ")));
    }
    serde_json::from_value(value).map_err(|e| format!("invalid arguments: {e}"))
}
