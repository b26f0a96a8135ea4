//! Save-time (and session-start) rules of prompt assistants: variables,
//! prompts, model settings, built-in tools, bindings, realtime gating and
//! the `speech` block of a voice pipeline.

use std::collections::{BTreeMap, BTreeSet};

use rtc_expr::{LlmLeaves, check_assignment, value_fits};
use rtc_protocol::{
    Assistant, BuiltInTools, DynamicVariable, EndMessageType, LlmConfig, RealtimeInterface,
    RunMode, SpeechInterface, TaskBackend, Tool, ToolBinding, ValueType,
};

use crate::binding_rules::{BindingUse, VariableScope, check_variable_template, validate_binding};
use crate::bounds::UpdateBounds;
use crate::error::{Rule, ValidationError};
use crate::names::{
    INPUT_PREFIX, SECRET_PREFIX, SYSTEM_PREFIX, check_display_name, check_identifier,
    check_max_chars,
};
use crate::realtime::compatibility;
use crate::system_vars::SYSTEM_VARIABLES;
use crate::task_backend_rules::backend_variables;

/// Most dynamic variables one assistant may declare.
pub const MAX_VARIABLES: usize = 256;
/// Most tool bindings (and startup actions) one assistant may have.
pub const MAX_BINDINGS: usize = 128;
pub(crate) const MAX_PROMPT: usize = 200_000;
/// Largest `llm.maxTokens` accepted.
const MAX_TOKENS_LIMIT: u32 = 1_000_000;

/// What assistant validation needs from the rest of the workspace.
pub struct AssistantContext<'a> {
    /// The tools the assistant references that exist, by id.
    pub tools: &'a BTreeMap<String, Tool>,
    /// The realtime interface named by `realtimeInterfaceId`, if it exists.
    pub realtime_interface: Option<&'a RealtimeInterface>,
    /// Names of the configured LLM providers.
    pub providers: &'a BTreeSet<String>,
    /// The task backend named by `taskBackendId`, if it exists.
    pub task_backend: Option<&'a TaskBackend>,
    /// The speech interfaces `speech` names that exist, by id.
    pub speech_interfaces: &'a BTreeMap<String, SpeechInterface>,
    /// What one `updateState` may hold.
    pub update_bounds: UpdateBounds,
}

/// The declared variables plus the `system__` ones, with their types.
pub fn variable_types(assistant: &Assistant) -> BTreeMap<String, ValueType> {
    declared_variable_types(&assistant.dynamic_variables)
}

/// `declared` plus the `system__` variables, with their types (an
/// assistant's or a workflow's).
pub fn declared_variable_types(declared: &[DynamicVariable]) -> BTreeMap<String, ValueType> {
    let mut all: BTreeMap<String, ValueType> = SYSTEM_VARIABLES
        .iter()
        .map(|(n, t)| ((*n).to_owned(), *t))
        .collect();
    for v in declared {
        all.insert(v.name.clone(), v.value_type);
    }
    all
}

/// Validate an assistant. Realtime incompatibilities are refused here too
/// (R-RT-5); the compatibility report lists them for cleanup.
pub fn validate_assistant(assistant: &Assistant, ctx: &AssistantContext<'_>) -> Rule {
    check_display_name(&assistant.name, "name", 200)?;
    check_max_chars(&assistant.description, "description", 4_096)?;
    check_variables(&assistant.dynamic_variables)?;
    ctx.update_bounds
        .check_defaults(&assistant.dynamic_variables)?;
    let vars = variable_types(assistant);
    check_max_chars(&assistant.system_prompt, "systemPrompt", MAX_PROMPT)?;
    check_variable_template(&assistant.system_prompt, "systemPrompt", &vars)?;
    if let Some(first) = &assistant.first_message {
        check_max_chars(first, "firstMessage", MAX_PROMPT)?;
        check_variable_template(first, "firstMessage", &vars)?;
    }
    check_llm(&assistant.llm, "llm", ctx.providers)?;
    check_built_ins(
        &assistant.built_in_tools,
        "builtInTools",
        &assistant.dynamic_variables,
        &vars,
        &ctx.update_bounds,
    )?;
    let scope = VariableScope { all: &vars };
    if assistant.tool_bindings.len() > MAX_BINDINGS {
        return Err(ValidationError::new(
            "too_many",
            "toolBindings",
            format!("at most {MAX_BINDINGS} tool bindings"),
        ));
    }
    if assistant.startup_actions.len() > MAX_BINDINGS {
        return Err(ValidationError::new(
            "too_many",
            "startupActions",
            format!("at most {MAX_BINDINGS} startup actions"),
        ));
    }
    let fields: Vec<String> = (0..assistant.tool_bindings.len())
        .map(|i| format!("toolBindings[{i}]"))
        .collect();
    check_model_bindings(
        fields
            .iter()
            .map(String::as_str)
            .zip(&assistant.tool_bindings),
        ctx.tools,
        &scope,
    )?;
    for (i, b) in assistant.startup_actions.iter().enumerate() {
        let field = format!("startupActions[{i}]");
        validate_binding(
            b,
            &field,
            ctx.tools.get(&b.tool_id),
            &scope,
            BindingUse::Deterministic,
        )?;
    }
    check_run_mode(assistant, ctx)?;
    crate::speech_rules::check_speech(
        assistant.run_mode,
        assistant.speech.as_ref(),
        ctx.speech_interfaces,
    )?;
    check_task_backend(assistant, ctx.task_backend, &vars)
}

/// A named task backend exists, serves a pipeline assistant only (a
/// realtime model speaks on its own and has no task tools), and finds
/// every variable its bindings read among the assistant's.
fn check_task_backend(
    assistant: &Assistant,
    backend: Option<&TaskBackend>,
    vars: &BTreeMap<String, ValueType>,
) -> Rule {
    let Some(id) = &assistant.task_backend_id else {
        return Ok(());
    };
    if assistant.run_mode == RunMode::Realtime {
        return Err(ValidationError::new(
            "task_backend_not_supported",
            "taskBackendId",
            "task backends serve pipeline assistants only; a realtime assistant cannot delegate tasks",
        ));
    }
    let Some(backend) = backend else {
        return Err(ValidationError::new(
            "unknown_task_backend",
            "taskBackendId",
            format!("task backend `{id}` does not exist in this workspace"),
        ));
    };
    let missing: Vec<String> = backend_variables(backend)
        .into_iter()
        .filter(|v| !vars.contains_key(v))
        .collect();
    if !missing.is_empty() {
        return Err(ValidationError::new(
            "unknown_variable",
            "taskBackendId",
            format!(
                "task backend `{id}` reads the variables {} of the delegating session; declare them in `dynamicVariables`",
                missing
                    .iter()
                    .map(|v| format!("`{v}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    Ok(())
}

/// The bindings the model calls, each at its field: valid against its tool,
/// and no two tools of the same name (the model tells them apart by name).
pub(crate) fn check_model_bindings<'b>(
    bindings: impl IntoIterator<Item = (&'b str, &'b ToolBinding)>,
    tools: &BTreeMap<String, Tool>,
    scope: &VariableScope<'_>,
) -> Rule {
    let mut names: BTreeMap<&str, &str> = BTreeMap::new();
    for (field, b) in bindings {
        let tool = tools.get(&b.tool_id);
        validate_binding(b, field, tool, scope, BindingUse::ModelTool)?;
        if let Some(tool) = tool
            && let Some(prev) = names.insert(tool.name.as_str(), field)
        {
            return Err(ValidationError::new(
                "duplicate_tool_name",
                format!("{field}.toolId"),
                format!(
                    "the model would see two tools named `{}` ({prev} and {field})",
                    tool.name
                ),
            ));
        }
    }
    Ok(())
}

/// Declared dynamic variables: identifiers, not reserved, once each, a
/// default of their type.
pub(crate) fn check_variables(declared: &[DynamicVariable]) -> Rule {
    if declared.len() > MAX_VARIABLES {
        return Err(ValidationError::new(
            "too_many",
            "dynamicVariables",
            format!("at most {MAX_VARIABLES} dynamic variables"),
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, v) in declared.iter().enumerate() {
        let field = format!("dynamicVariables[{i}].name");
        check_identifier(&v.name, &field)?;
        if [SYSTEM_PREFIX, SECRET_PREFIX, INPUT_PREFIX]
            .iter()
            .any(|p| v.name.starts_with(p))
        {
            return Err(ValidationError::new(
                "reserved_name",
                field,
                format!(
                    "`{}`: the prefixes `system__`, `secret__` and `input__` are reserved",
                    v.name
                ),
            ));
        }
        if !seen.insert(v.name.as_str()) {
            return Err(ValidationError::new(
                "duplicate_name",
                field,
                format!("variable `{}` is declared twice", v.name),
            ));
        }
        if let Some(default) = &v.default
            && !value_fits(default, v.value_type)
        {
            return Err(ValidationError::new(
                "invalid_default",
                format!("dynamicVariables[{i}].default"),
                format!("the default of `{}` must be a {}", v.name, v.value_type),
            ));
        }
        check_max_chars(
            &v.description,
            &format!("dynamicVariables[{i}].description"),
            4_096,
        )?;
    }
    Ok(())
}

/// Model settings at `field` (`llm`, `nodes[0].llm`).
pub(crate) fn check_llm(llm: &LlmConfig, field: &str, providers: &BTreeSet<String>) -> Rule {
    if let Some(t) = llm.temperature
        && !(0.0..=2.0).contains(&t)
    {
        return Err(ValidationError::new(
            "out_of_range",
            format!("{field}.temperature"),
            format!("`{field}.temperature` must be between 0 and 2"),
        ));
    }
    if let Some(model) = &llm.model {
        check_display_name(model, &format!("{field}.model"), 200)?;
    }
    if llm
        .max_tokens
        .is_some_and(|n| !(1..=MAX_TOKENS_LIMIT).contains(&n))
    {
        return Err(ValidationError::new(
            "out_of_range",
            format!("{field}.maxTokens"),
            format!("`{field}.maxTokens` must be 1 to {MAX_TOKENS_LIMIT}"),
        ));
    }
    if let Some(p) = &llm.provider
        && !providers.contains(p)
    {
        return Err(ValidationError::new(
            "unknown_provider",
            format!("{field}.provider"),
            format!("no LLM provider named `{p}` is configured"),
        ));
    }
    Ok(())
}

/// The platform built-ins at `field` (`builtInTools`,
/// `nodes[0].builtInTools`): `updateState` rules assign declared variables
/// (`llm` leaves allowed: the model's turn is there to answer them).
pub(crate) fn check_built_ins(
    b: &BuiltInTools,
    field: &str,
    declared: &[DynamicVariable],
    vars: &BTreeMap<String, ValueType>,
    bounds: &UpdateBounds,
) -> Rule {
    if let Some(end) = &b.end_conversation {
        check_max_chars(
            &end.description,
            &format!("{field}.endConversation.description"),
            4_096,
        )?;
        if end.message_type == EndMessageType::Custom && end.custom_message.trim().is_empty() {
            return Err(ValidationError::new(
                "missing_field",
                format!("{field}.endConversation.customMessage"),
                "`messageType: custom` needs a non-empty `customMessage`",
            ));
        }
    }
    if let Some(update) = &b.update_state {
        if update.rules.is_empty() {
            return Err(ValidationError::new(
                "missing_field",
                format!("{field}.updateState.rules"),
                "`updateState` needs at least one rule",
            ));
        }
        bounds.check(&update.rules, &format!("{field}.updateState"))?;
        for (i, rule) in update.rules.iter().enumerate() {
            let field = format!("{field}.updateState.rules[{i}]");
            let declared = declared.iter().find(|v| v.name == rule.variable);
            let Some(declared) = declared else {
                return Err(ValidationError::new(
                    "unknown_variable",
                    format!("{field}.variable"),
                    format!(
                        "`{}` is not a declared dynamic variable (system variables are read-only)",
                        rule.variable
                    ),
                ));
            };
            check_assignment(
                &rule.expression,
                declared.value_type,
                vars,
                LlmLeaves::Allowed,
            )
            .map_err(|e| {
                ValidationError::new(e.code, format!("{field}.expression{}", e.path), e.message)
            })?;
        }
    }
    Ok(())
}

/// The realtime run mode needs an interface, and a named interface must
/// exist (`realtime` is what `realtimeInterfaceId` was looked up to).
pub(crate) fn check_realtime_interface(
    run_mode: RunMode,
    id: Option<&str>,
    realtime: Option<&RealtimeInterface>,
) -> Rule {
    if let Some(id) = id {
        if realtime.is_none() {
            return Err(ValidationError::new(
                "unknown_realtime_interface",
                "realtimeInterfaceId",
                format!("realtime interface `{id}` does not exist"),
            ));
        }
    } else if run_mode == RunMode::Realtime {
        return Err(ValidationError::new(
            "missing_field",
            "realtimeInterfaceId",
            "the realtime run mode needs `realtimeInterfaceId`",
        ));
    }
    Ok(())
}

fn check_run_mode(assistant: &Assistant, ctx: &AssistantContext<'_>) -> Rule {
    check_realtime_interface(
        assistant.run_mode,
        assistant.realtime_interface_id.as_deref(),
        ctx.realtime_interface,
    )?;
    let issues = compatibility(assistant, ctx.tools, ctx.realtime_interface);
    if let Some(first) = issues.first() {
        let all: Vec<&str> = issues.iter().map(|i| i.path.as_str()).collect();
        return Err(ValidationError::new(
            "realtime_incompatible",
            first.path.clone(),
            format!(
                "{} (incompatible items: {}); change them or use the pipeline run mode",
                first.message,
                all.join(", ")
            ),
        ));
    }
    Ok(())
}

/// Ids of every tool an assistant references.
pub fn referenced_tools(assistant: &Assistant) -> BTreeSet<String> {
    assistant
        .tool_bindings
        .iter()
        .chain(&assistant.startup_actions)
        .map(|b| b.tool_id.clone())
        .collect()
}

#[cfg(test)]
#[path = "assistant_rules_tests.rs"]
mod tests;
