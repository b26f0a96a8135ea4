//! What a test-mode session runs with (R-BX-10), carried in its
//! configuration snapshot so the sessions and tasks it starts inherit it.

use std::collections::BTreeMap;

use rtc_protocol::ScriptedResult;
use serde::{Deserialize, Serialize};

/// What a test-mode session runs with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TestMode {
    /// A conversation test's results per tool name, in call order; they
    /// come before the tool's `mockResponse`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scripted: BTreeMap<String, Vec<ScriptedResult>>,
}
