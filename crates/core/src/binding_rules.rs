//! Save-time rules of tool bindings and startup actions (R-TB-1..6, R-BX-6).

use std::collections::BTreeMap;

use rtc_protocol::{ArgumentSource, Tool, ToolBinding, ValueType};

use crate::error::{Rule, ValidationError};
use crate::names::SYSTEM_PREFIX;
use crate::placeholders::{self, Placeholder};
use crate::result_path::ResultPath;
use crate::tool_rules::{empty_parameters, schema_properties, schema_required};

/// Where a binding is used: the model calls tool bindings; startup and
/// workflow actions are deterministic and may not ask the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingUse {
    ModelTool,
    Deterministic,
}

/// The variables visible to a binding: declared ones and `system__*`.
pub struct VariableScope<'a> {
    pub all: &'a BTreeMap<String, ValueType>,
}

impl VariableScope<'_> {
    fn readable(&self, name: &str) -> bool {
        self.all.contains_key(name)
    }

    fn writable(&self, name: &str) -> bool {
        !name.starts_with(SYSTEM_PREFIX) && self.all.contains_key(name)
    }
}

/// Validate one binding at `field` (e.g. `toolBindings[0]`) against its tool.
pub fn validate_binding(
    binding: &ToolBinding,
    field: &str,
    tool: Option<&Tool>,
    vars: &VariableScope<'_>,
    usage: BindingUse,
) -> Rule {
    let Some(tool) = tool else {
        return Err(ValidationError::new(
            "unknown_tool",
            format!("{field}.toolId"),
            format!(
                "tool `{}` does not exist in this workspace",
                binding.tool_id
            ),
        ));
    };
    let fallback = empty_parameters();
    let schema = tool.parameters.as_ref().unwrap_or(&fallback);
    let properties: BTreeMap<&str, &serde_json::Value> =
        schema_properties(schema).into_iter().collect();
    for (arg, source) in &binding.argument_bindings {
        let f = format!("{field}.argumentBindings.{arg}");
        let Some(prop_schema) = properties.get(arg.as_str()) else {
            return Err(ValidationError::new(
                "unknown_argument",
                f,
                format!("tool `{}` has no parameter `{arg}`", tool.name),
            ));
        };
        check_source(source, &f, vars, usage)?;
        if let ArgumentSource::Literal { value } = source {
            check_literal(value, prop_schema, &format!("{f}.value"))?;
        }
    }
    for required in schema_required(schema) {
        if !binding.argument_bindings.contains_key(required) {
            return Err(ValidationError::new(
                "missing_argument",
                format!("{field}.argumentBindings.{required}"),
                format!(
                    "required parameter `{required}` of tool `{}` is not bound",
                    tool.name
                ),
            ));
        }
    }
    for (name, source) in &binding.template_bindings {
        let f = format!("{field}.templateBindings.{name}");
        if !tool.template_inputs.iter().any(|i| &i.name == name) {
            return Err(ValidationError::new(
                "unknown_template_input",
                f,
                format!("tool `{}` declares no template input `{name}`", tool.name),
            ));
        }
        check_source(source, &f, vars, BindingUse::Deterministic)?;
    }
    for input in tool.template_inputs.iter().filter(|i| i.required) {
        if !binding.template_bindings.contains_key(&input.name) {
            return Err(ValidationError::new(
                "missing_template_input",
                format!("{field}.templateBindings.{}", input.name),
                format!(
                    "tool `{}` requires template input `{}`",
                    tool.name, input.name
                ),
            ));
        }
    }
    let waits = tool.client.as_ref().is_none_or(|c| c.wait_for_response);
    if !waits && !binding.result_assignments.is_empty() {
        return Err(ValidationError::new(
            "assignments_without_response",
            format!("{field}.resultAssignments"),
            format!(
                "client tool `{}` does not wait for a response, so it cannot have `resultAssignments`",
                tool.name
            ),
        ));
    }
    for (variable, path) in &binding.result_assignments {
        let f = format!("{field}.resultAssignments.{variable}");
        if !vars.writable(variable) {
            return Err(ValidationError::new(
                "unknown_variable",
                f,
                format!("`{variable}` is not a declared dynamic variable"),
            ));
        }
        ResultPath::parse(path).map_err(|m| ValidationError::new("invalid_path", f, m))?;
    }
    for (i, path) in binding.model_result_filter.iter().flatten().enumerate() {
        ResultPath::parse(path).map_err(|m| {
            ValidationError::new("invalid_path", format!("{field}.modelResultFilter[{i}]"), m)
        })?;
    }
    Ok(())
}

fn check_source(
    source: &ArgumentSource,
    field: &str,
    vars: &VariableScope<'_>,
    usage: BindingUse,
) -> Rule {
    match source {
        ArgumentSource::Model if usage == BindingUse::Deterministic => Err(ValidationError::new(
            "model_source_not_allowed",
            format!("{field}.source"),
            "the `model` source is not allowed here: startup actions, workflow actions and template inputs are filled without the model",
        )),
        ArgumentSource::Model | ArgumentSource::Literal { .. } => Ok(()),
        ArgumentSource::Variable { variable_name } => {
            if vars.readable(variable_name) {
                Ok(())
            } else {
                Err(ValidationError::new(
                    "unknown_variable",
                    format!("{field}.variableName"),
                    format!(
                        "`{variable_name}` is neither a declared dynamic variable nor a `system__` variable"
                    ),
                ))
            }
        }
        ArgumentSource::Template { template } => {
            check_variable_template(template, &format!("{field}.template"), vars.all)
        }
    }
}

/// A text whose placeholders name only known variables, never secrets or
/// template inputs (binding templates, system prompt, first message).
pub fn check_variable_template(
    text: &str,
    field: &str,
    vars: &BTreeMap<String, ValueType>,
) -> Rule {
    for p in placeholders::parse(text, field)? {
        match p {
            Placeholder::Secret(s) => {
                return Err(ValidationError::new(
                    "secret_not_allowed",
                    field,
                    format!("`{{{{{s}}}}}`: secrets are only injected into HTTP tool headers"),
                ));
            }
            Placeholder::Input(name) => {
                return Err(ValidationError::new(
                    "unknown_variable",
                    field,
                    format!("`{{{{input__{name}}}}}` is a template input, not a variable"),
                ));
            }
            Placeholder::Plain(name) if !vars.contains_key(name) => {
                return Err(ValidationError::new(
                    "unknown_variable",
                    field,
                    format!(
                        "`{{{{{name}}}}}` is neither a declared dynamic variable nor a `system__` variable"
                    ),
                ));
            }
            Placeholder::Plain(_) => {}
        }
    }
    Ok(())
}

fn check_literal(value: &serde_json::Value, schema: &serde_json::Value, field: &str) -> Rule {
    // A property schema that refers elsewhere in the document cannot be
    // compiled alone; the runtime validates the assembled arguments anyway.
    let Ok(validator) = jsonschema::validator_for(schema) else {
        return Ok(());
    };
    match validator.validate(value) {
        Ok(()) => Ok(()),
        Err(e) => Err(ValidationError::new(
            "invalid_literal",
            field,
            format!("literal does not match the parameter's schema: {e}"),
        )),
    }
}
