//! What the model sees (R-TB-2): the built-in tools the assistant enables
//! and one function per binding whose schema holds only `model`-sourced
//! arguments; and how a call's arguments are completed from the binding
//! (R-TB-1, R-SEC-5) and its result mapped back (R-TB-4, R-BX-6).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use rtc_protocol::{ArgumentSource, Assistant, BuiltInToolName, EndMessageType, Tool, ToolBinding};
use serde_json::{Map, Value, json};

use crate::llm::ToolSpec;
use crate::placeholders;
use crate::result_path::{ResultPath, filter};
use crate::tool_rules::empty_parameters;

/// What a model-visible function runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolTarget {
    BuiltIn(BuiltInToolName),
    /// Index into `toolBindings`.
    Binding(usize),
}

/// The functions offered to the model, with what each runs.
pub fn model_tools(
    assistant: &Assistant,
    tools: &BTreeMap<String, Tool>,
) -> Vec<(ToolSpec, ToolTarget)> {
    let mut out = Vec::new();
    let b = &assistant.built_in_tools;
    if let Some(end) = &b.end_conversation {
        let mut params = json!({"type": "object", "properties": {}, "additionalProperties": false});
        if end.capture_reason {
            params["properties"]["reason"] = json!({"type": "string", "description": "Why the conversation ends, in a few words."});
            params["required"] = json!(["reason"]);
        }
        let default = match end.message_type {
            EndMessageType::Generated => {
                "End the conversation when the user says goodbye or the task is complete. After calling it, say a short goodbye."
            }
            _ => "End the conversation when the user says goodbye or the task is complete.",
        };
        out.push((
            spec("endConversation", &end.description, default, params),
            ToolTarget::BuiltIn(BuiltInToolName::EndConversation),
        ));
    }
    if let Some(update) = &b.update_state {
        let params = json!({"type": "object", "properties": {}, "additionalProperties": false});
        let default = "Update the conversation state from what the user said.";
        out.push((
            spec("updateState", &update.description, default, params),
            ToolTarget::BuiltIn(BuiltInToolName::UpdateState),
        ));
    }
    if let Some(skip) = &b.skip_turn {
        let params = json!({"type": "object", "properties": {}, "additionalProperties": false});
        let default = "Stay silent this turn, e.g. when the user asks you to wait or is talking to someone else.";
        out.push((
            spec("skipTurn", &skip.description, default, params),
            ToolTarget::BuiltIn(BuiltInToolName::SkipTurn),
        ));
    }
    if let Some(handoff) = &b.request_human_handoff {
        let params = json!({"type": "object", "properties": {"reason": {"type": "string"}}, "additionalProperties": false});
        let default =
            "Hand the conversation to a human agent when the user asks for one or you cannot help.";
        out.push((
            spec("requestHumanHandoff", &handoff.description, default, params),
            ToolTarget::BuiltIn(BuiltInToolName::RequestHumanHandoff),
        ));
    }
    for (i, binding) in assistant.tool_bindings.iter().enumerate() {
        let Some(tool) = tools.get(&binding.tool_id) else {
            continue;
        };
        let description = if tool.description.is_empty() {
            format!("Call {}.", tool.name)
        } else {
            tool.description.clone()
        };
        out.push((
            ToolSpec {
                name: tool.name.clone(),
                description,
                parameters: model_schema(tool, binding),
            },
            ToolTarget::Binding(i),
        ));
    }
    out
}

fn spec(name: &str, description: &str, default: &str, parameters: Value) -> ToolSpec {
    let description = if description.trim().is_empty() {
        default
    } else {
        description
    };
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters,
    }
}

/// What is wrong with `value` under `schema` (at most five problems, each
/// with the path of the offending value); empty when it conforms. An
/// invalid schema (refused when tools are saved) reports nothing.
pub fn schema_problems(schema: &Value, value: &Value) -> Vec<String> {
    let Some(validator) = compiled(schema) else {
        return Vec::new();
    };
    validator
        .iter_errors(value)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .take(5)
        .collect()
}

/// The most compiled schemas kept; a full cache starts over.
const MAX_COMPILED: usize = 1024;

/// The validator of `schema`, compiled once per distinct schema text (a
/// session's tools call with the same few schemas over and over); `None`
/// for an invalid schema.
fn compiled(schema: &Value) -> Option<Arc<jsonschema::Validator>> {
    static CACHE: LazyLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> =
        LazyLock::new(Mutex::default);
    let key = schema.to_string();
    if let Some(v) = CACHE.lock().get(&key) {
        return Some(v.clone());
    }
    let validator = Arc::new(jsonschema::validator_for(schema).ok()?);
    let mut cache = CACHE.lock();
    if cache.len() >= MAX_COMPILED {
        cache.clear();
    }
    cache.insert(key, validator.clone());
    Some(validator)
}

/// The tool's schema reduced to the arguments the model fills.
pub fn model_schema(tool: &Tool, binding: &ToolBinding) -> Value {
    let fallback = empty_parameters();
    let schema = tool.parameters.as_ref().unwrap_or(&fallback);
    let is_model = |name: &str| {
        matches!(
            binding.argument_bindings.get(name),
            Some(ArgumentSource::Model)
        )
    };
    let mut out = schema.clone();
    if let Some(props) = out.get_mut("properties").and_then(Value::as_object_mut) {
        props.retain(|k, _| is_model(k));
    }
    if let Some(req) = out.get_mut("required").and_then(Value::as_array_mut) {
        req.retain(|v| v.as_str().is_some_and(is_model));
    }
    out
}

/// Why a call's arguments were refused; told to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentError {
    #[error("the arguments are not a JSON object: {0}")]
    NotJson(String),
    #[error("the arguments do not match the schema: {0}")]
    Schema(String),
}

/// The complete arguments of a bound call: the model's, checked against the
/// model-facing schema, then the binding's own sources, which the model
/// cannot override.
pub fn complete_arguments(
    tool: &Tool,
    binding: &ToolBinding,
    model_arguments: &str,
    variables: &Map<String, Value>,
) -> Result<Map<String, Value>, ArgumentError> {
    let text = if model_arguments.trim().is_empty() {
        "{}"
    } else {
        model_arguments
    };
    let parsed: Value =
        serde_json::from_str(text).map_err(|e| ArgumentError::NotJson(e.to_string()))?;
    let Value::Object(mut args) = parsed else {
        return Err(ArgumentError::NotJson("expected an object".into()));
    };
    args.retain(|k, _| {
        matches!(
            binding.argument_bindings.get(k),
            Some(ArgumentSource::Model)
        )
    });
    let schema = model_schema(tool, binding);
    let value = Value::Object(args);
    let problems = schema_problems(&schema, &value);
    if !problems.is_empty() {
        return Err(ArgumentError::Schema(problems.join("; ")));
    }
    let Value::Object(mut args) = value else {
        return Err(ArgumentError::NotJson("expected an object".into()));
    };
    for (name, source) in &binding.argument_bindings {
        if let Some(v) = bound_value(source, variables) {
            args.insert(name.clone(), v);
        }
    }
    Ok(args)
}

/// The value of a non-model source.
pub fn bound_value(source: &ArgumentSource, variables: &Map<String, Value>) -> Option<Value> {
    match source {
        ArgumentSource::Model => None,
        ArgumentSource::Variable { variable_name } => {
            Some(variables.get(variable_name).cloned().unwrap_or(Value::Null))
        }
        ArgumentSource::Literal { value } => Some(value.clone()),
        ArgumentSource::Template { template } => {
            Some(Value::String(render_variables(template, variables)))
        }
    }
}

/// Render `{{name}}` with variable values (strings as is, others as JSON).
pub fn render_variables(template: &str, variables: &Map<String, Value>) -> String {
    placeholders::render(template, |name| {
        variables.get(name).map(|v| match v {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        })
    })
}

/// The template inputs of a binding, rendered as text.
pub fn template_inputs(
    binding: &ToolBinding,
    variables: &Map<String, Value>,
) -> BTreeMap<String, String> {
    binding
        .template_bindings
        .iter()
        .filter_map(|(name, source)| {
            let v = bound_value(source, variables)?;
            Some((
                name.clone(),
                match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                },
            ))
        })
        .collect()
}

/// The variable changes a result produces: `(variable, value)` for each
/// assignment whose path exists in the result.
pub fn result_assignments(binding: &ToolBinding, result: &Value) -> Vec<(String, Value)> {
    binding
        .result_assignments
        .iter()
        .filter_map(|(var, path)| {
            let v = ResultPath::parse(path).ok()?.get(result)?.clone();
            Some((var.clone(), v))
        })
        .collect()
}

/// The result assignments whose path holds no value in `result`, as
/// readable problems (the variable keeps its value).
pub fn missing_result_paths(binding: &ToolBinding, result: &Value) -> Vec<String> {
    binding
        .result_assignments
        .iter()
        .filter(|(_, path)| {
            ResultPath::parse(path)
                .ok()
                .and_then(|p| p.get(result).cloned())
                .is_none()
        })
        .map(|(var, path)| format!("`{var}` unchanged: the result has no value at `{path}`"))
        .collect()
}

/// What the model may see of a result (R-BX-6).
pub fn model_view(binding: &ToolBinding, result: &Value) -> Value {
    match &binding.model_result_filter {
        None => result.clone(),
        Some(paths) => {
            let parsed: Vec<ResultPath> = paths
                .iter()
                .filter_map(|p| ResultPath::parse(p).ok())
                .collect();
            filter(result, &parsed)
        }
    }
}

#[cfg(test)]
#[path = "model_tools_tests.rs"]
mod tests;
