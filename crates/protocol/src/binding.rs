//! Tool bindings (R-TB-1..7): how one assistant uses one tool resource.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolBinding {
    pub tool_id: String,
    /// Where each parameter's value comes from.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub argument_bindings: BTreeMap<String, ArgumentSource>,
    /// Values of the tool's `templateInputs`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub template_bindings: BTreeMap<String, ArgumentSource>,
    /// `{variable: path}`: copy a value of the tool's result into a declared variable.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub result_assignments: BTreeMap<String, String>,
    /// Paths of the result the model may see (R-BX-6); absent means all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_result_filter: Option<Vec<String>>,
}

/// The source of one argument or template input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "source", rename_all = "camelCase", deny_unknown_fields)]
pub enum ArgumentSource {
    /// Exposed to the model, filled at call time.
    Model,
    /// A declared dynamic variable or a `system__*` variable.
    #[serde(rename_all = "camelCase")]
    Variable { variable_name: String },
    /// A fixed value.
    Literal { value: Value },
    /// A string rendered with dynamic variables at execution time.
    Template { template: String },
}

impl ArgumentSource {
    pub fn label(&self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::Variable { .. } => "variable",
            Self::Literal { .. } => "literal",
            Self::Template { .. } => "template",
        }
    }
}
