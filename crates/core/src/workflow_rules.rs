//! Save-time rules of workflows (design §4, R-WF): the globals (variables,
//! prompt, model, built-ins, bindings, run mode), every node, and — in
//! `workflow_edge_rules.rs` — the graph: start, edges, conditions,
//! routing, cycles, reachability. Each failure is one [`ValidationError`]
//! naming the offending item's path (`nodes[1].binding.toolId`,
//! `edges[2].to`).
//!
//! An agent stage is validated as the assistant its turns run
//! ([`stage_assistant`]): the built-ins and bindings it effectively
//! offers, and whether what it may change lies within
//! `writableVariables`. Workflows are never checked against a realtime
//! interface's `realtimePromptTools` (R-RT-6).

use std::collections::{BTreeMap, BTreeSet};

use rtc_expr::{LlmLeaves, check_assignment};
use rtc_protocol::{
    ActionNode, AgentNode, BuiltInTools, DynamicVariable, RealtimeInterface, Tool, ToolBinding,
    TransferNode, TransferTarget, UpdateStateNode, ValueType, WORKFLOW_SPEC_VERSION, Workflow,
    WorkflowNode,
};

use crate::assistant_rules::{
    MAX_BINDINGS, MAX_PROMPT, check_built_ins, check_llm, check_model_bindings,
    check_realtime_interface, check_variables, declared_variable_types,
};
use crate::binding_rules::{BindingUse, VariableScope, check_variable_template, validate_binding};
use crate::bounds::UpdateBounds;
use crate::error::{Rule, ValidationError};
use crate::names::{SYSTEM_PREFIX, check_display_name, check_max_chars};
use crate::workflow_edge_rules::check_graph;
use crate::workflow_stage::stage_assistant;

/// Most nodes one workflow may have.
pub const MAX_NODES: usize = 200;
/// Most edges one workflow may have.
pub const MAX_EDGES: usize = 1_000;
/// Largest value of a `limits` field (the smallest is 1).
pub const MAX_LIMIT: u32 = 1_000;

/// What workflow validation needs from the rest of the workspace.
pub struct WorkflowContext<'a> {
    /// The tools the workflow references that exist, by id.
    pub tools: &'a BTreeMap<String, Tool>,
    /// Ids of the assistants the workflow transfers to that exist.
    pub assistants: &'a BTreeSet<String>,
    /// The realtime interface named by `realtimeInterfaceId`, if it exists.
    pub realtime_interface: Option<&'a RealtimeInterface>,
    /// Names of the configured LLM providers.
    pub providers: &'a BTreeSet<String>,
    /// What one `updateState` (node or built-in) may hold.
    pub update_bounds: UpdateBounds,
}

/// The variables of a workflow, as its rules see them.
pub(crate) struct Vars<'a> {
    pub declared: &'a [DynamicVariable],
    /// Declared and `system__` ones, with their types.
    pub types: BTreeMap<String, ValueType>,
}

/// Validate a workflow; the first broken rule is the answer.
pub fn validate_workflow(w: &Workflow, ctx: &WorkflowContext<'_>) -> Rule {
    if w.spec_version != WORKFLOW_SPEC_VERSION {
        return Err(ValidationError::new(
            "unsupported_spec_version",
            "specVersion",
            format!(
                "only `specVersion: {WORKFLOW_SPEC_VERSION}` is accepted; {}",
                crate::workflow_parse::MIGRATION_HINT
            ),
        ));
    }
    check_display_name(&w.name, "name", 200)?;
    if let Some(d) = &w.description {
        check_max_chars(d, "description", 4_096)?;
    }
    check_sizes(w)?;
    check_variables(w.variables())?;
    ctx.update_bounds.check_defaults(w.variables())?;
    let vars = Vars {
        declared: w.variables(),
        types: declared_variable_types(w.variables()),
    };
    if let Some(prompt) = &w.system_prompt {
        check_text(prompt, "systemPrompt", MAX_PROMPT, &vars)?;
    }
    if let Some(llm) = &w.llm {
        check_llm(llm, "llm", ctx.providers)?;
    }
    if let Some(b) = &w.built_in_tools {
        check_rule_targets(b, "builtInTools", &vars)?;
        check_built_ins(
            b,
            "builtInTools",
            vars.declared,
            &vars.types,
            &ctx.update_bounds,
        )?;
    }
    check_realtime_interface(
        w.run_mode.unwrap_or_default(),
        w.realtime_interface_id.as_deref(),
        ctx.realtime_interface,
    )?;
    let globals = indexed("toolBindings", w.bindings());
    check_model_binding_list(&globals, "toolBindings", ctx, &vars)?;
    for (i, node) in w.nodes.iter().enumerate() {
        let field = format!("nodes[{i}]");
        match node {
            WorkflowNode::Agent(a) => check_agent(w, a, &field, ctx, &vars)?,
            WorkflowNode::Action(a) => check_action(a, &field, ctx, &vars)?,
            WorkflowNode::UpdateState(u) => check_update_state(u, &field, ctx, &vars)?,
            WorkflowNode::Transfer(t) => check_transfer(t, &field, ctx, &vars)?,
            WorkflowNode::End(e) => {
                if e.reason.trim().is_empty() {
                    return Err(ValidationError::new(
                        "missing_field",
                        format!("{field}.reason"),
                        "an end node needs a `reason` (it is the session's end reason)",
                    ));
                }
                check_max_chars(&e.reason, &format!("{field}.reason"), 1_024)?;
                if let Some(m) = &e.message {
                    check_text(m, &format!("{field}.message"), MAX_PROMPT, &vars)?;
                }
            }
        }
    }
    check_graph(w, &vars)
}

fn check_sizes(w: &Workflow) -> Rule {
    if w.nodes.len() > MAX_NODES {
        return Err(ValidationError::new(
            "too_many",
            "nodes",
            format!("a workflow has at most {MAX_NODES} nodes"),
        ));
    }
    if w.edges.len() > MAX_EDGES {
        return Err(ValidationError::new(
            "too_many",
            "edges",
            format!("a workflow has at most {MAX_EDGES} edges"),
        ));
    }
    let Some(limits) = w.limits else {
        return Ok(());
    };
    for (value, name) in [
        (limits.max_visits_per_node, "maxVisitsPerNode"),
        (limits.max_hops_per_turn, "maxHopsPerTurn"),
    ] {
        if value.is_some_and(|v| !(1..=MAX_LIMIT).contains(&v)) {
            return Err(ValidationError::new(
                "out_of_range",
                format!("limits.{name}"),
                format!("`limits.{name}` must be 1 to {MAX_LIMIT}"),
            ));
        }
    }
    Ok(())
}

/// A text with `{{variables}}`: not too long, placeholders declared.
fn check_text(text: &str, field: &str, max: usize, vars: &Vars<'_>) -> Rule {
    check_max_chars(text, field, max)?;
    check_variable_template(text, field, &vars.types)
}

/// A variable something assigns: declared, and not a read-only `system__`
/// one.
pub(crate) fn check_target(name: &str, field: &str, vars: &Vars<'_>) -> Rule {
    if name.starts_with(SYSTEM_PREFIX) {
        return Err(ValidationError::new(
            "read_only_variable",
            field,
            format!("`{name}` is a system variable; system variables are read-only"),
        ));
    }
    if !vars.declared.iter().any(|v| v.name == name) {
        return Err(ValidationError::new(
            "unknown_variable",
            field,
            format!("`{name}` is not a declared dynamic variable"),
        ));
    }
    Ok(())
}

/// The targets of the `updateState` rules of built-ins at `field`:
/// declared, and `system__` ones named read-only.
fn check_rule_targets(b: &BuiltInTools, field: &str, vars: &Vars<'_>) -> Rule {
    for (i, rule) in b.update_state.iter().flat_map(|u| &u.rules).enumerate() {
        check_target(
            &rule.variable,
            &format!("{field}.updateState.rules[{i}].variable"),
            vars,
        )?;
    }
    Ok(())
}

fn indexed<'b>(prefix: &str, bindings: &'b [ToolBinding]) -> Vec<(String, &'b ToolBinding)> {
    bindings
        .iter()
        .enumerate()
        .map(|(i, b)| (format!("{prefix}[{i}]"), b))
        .collect()
}

/// Bindings the model calls, listed at `field`: the tools exist, result
/// assignments target writable variables, then the binding rules (R-TB)
/// and one name per tool over the whole list.
fn check_model_binding_list(
    bindings: &[(String, &ToolBinding)],
    field: &str,
    ctx: &WorkflowContext<'_>,
    vars: &Vars<'_>,
) -> Rule {
    if bindings.len() > MAX_BINDINGS {
        return Err(ValidationError::new(
            "too_many",
            field,
            format!("at most {MAX_BINDINGS} tool bindings"),
        ));
    }
    for (f, b) in bindings {
        check_binding_targets(b, f, ctx, vars)?;
    }
    let scope = VariableScope { all: &vars.types };
    check_model_bindings(
        bindings.iter().map(|(f, b)| (f.as_str(), *b)),
        ctx.tools,
        &scope,
    )
}

/// What a binding needs before the binding rules: its tool exists
/// (`tool_not_found`) and its result assignments target declared,
/// non-system variables.
fn check_binding_targets(
    b: &ToolBinding,
    field: &str,
    ctx: &WorkflowContext<'_>,
    vars: &Vars<'_>,
) -> Rule {
    if !ctx.tools.contains_key(&b.tool_id) {
        return Err(ValidationError::new(
            "tool_not_found",
            format!("{field}.toolId"),
            format!("tool `{}` does not exist in this workspace", b.tool_id),
        ));
    }
    for variable in b.result_assignments.keys() {
        check_target(
            variable,
            &format!("{field}.resultAssignments.{variable}"),
            vars,
        )?;
    }
    Ok(())
}

fn check_agent(
    w: &Workflow,
    a: &AgentNode,
    field: &str,
    ctx: &WorkflowContext<'_>,
    vars: &Vars<'_>,
) -> Rule {
    check_text(&a.prompt, &format!("{field}.prompt"), MAX_PROMPT, vars)?;
    let says = a.entry() == rtc_protocol::EntryBehavior::Say;
    match &a.first_message {
        Some(_) if !says => {
            return Err(ValidationError::new(
                "entry_behavior",
                format!("{field}.entryBehavior"),
                format!(
                    "`firstMessage` is said only with `entryBehavior: say` (this stage has `{}`)",
                    entry_name(a)
                ),
            ));
        }
        Some(m) if m.trim().is_empty() => {
            return Err(ValidationError::new(
                "entry_behavior",
                format!("{field}.firstMessage"),
                "`entryBehavior: say` needs a non-empty `firstMessage`",
            ));
        }
        Some(m) => check_text(m, &format!("{field}.firstMessage"), MAX_PROMPT, vars)?,
        None if says => {
            return Err(ValidationError::new(
                "entry_behavior",
                format!("{field}.firstMessage"),
                "`entryBehavior: say` needs a `firstMessage` to say",
            ));
        }
        None => {}
    }
    if let Some(llm) = &a.llm {
        check_llm(llm, &format!("{field}.llm"), ctx.providers)?;
    }
    let patch = a.built_in_tools.clone().unwrap_or_default();
    // What the stage sets itself (kept and disabled tools are not its own).
    let own_built_ins = patch.apply(&BuiltInTools::default());
    let built_ins_field = format!("{field}.builtInTools");
    check_rule_targets(&own_built_ins, &built_ins_field, vars)?;
    for (j, v) in a.writable_variables.iter().flatten().enumerate() {
        check_target(v, &format!("{field}.writableVariables[{j}]"), vars)?;
    }
    // The bindings the stage offers: the global ones (unless independent),
    // then its own.
    let own = indexed(
        &format!("{field}.toolBindings"),
        a.tool_bindings.as_deref().unwrap_or_default(),
    );
    let mut offered = if a.is_independent() {
        Vec::new()
    } else {
        indexed("toolBindings", w.bindings())
    };
    offered.extend(own.iter().cloned());
    for (f, b) in &own {
        check_binding_targets(b, f, ctx, vars)?;
    }
    if let Some(writable) = &a.writable_variables {
        let stage = stage_assistant(w, a);
        let own_rules = !patch.update_state.is_keep();
        check_writable(
            &stage.built_in_tools,
            own_rules,
            &offered,
            own.len(),
            writable,
            field,
        )?;
    }
    check_built_ins(
        &own_built_ins,
        &built_ins_field,
        vars.declared,
        &vars.types,
        &ctx.update_bounds,
    )?;
    check_model_binding_list(&offered, &format!("{field}.toolBindings"), ctx, vars)
}

fn entry_name(a: &AgentNode) -> &'static str {
    match a.entry() {
        rtc_protocol::EntryBehavior::Say => "say",
        rtc_protocol::EntryBehavior::Respond => "respond",
        rtc_protocol::EntryBehavior::Wait => "wait",
    }
}

/// A stage with `writableVariables` changes nothing else: the targets of
/// its effective `updateState` rules and of its bindings' result
/// assignments. What it inherits is named at `writableVariables`.
fn check_writable(
    built_ins: &BuiltInTools,
    own_rules: bool,
    offered: &[(String, &ToolBinding)],
    own_count: usize,
    writable: &[String],
    field: &str,
) -> Rule {
    let allowed = |v: &str| writable.iter().any(|w| w == v);
    let not_writable = |variable: &str, at: String, what: &str| {
        ValidationError::new(
            "variable_not_writable",
            at,
            format!(
                "{what} assigns `{variable}`, which is not in this stage's `writableVariables`"
            ),
        )
    };
    if let Some(update) = &built_ins.update_state {
        for (k, rule) in update.rules.iter().enumerate() {
            if allowed(&rule.variable) {
                continue;
            }
            let (at, what) = if own_rules {
                (
                    format!("{field}.builtInTools.updateState.rules[{k}].variable"),
                    format!("`updateState` rule {k}"),
                )
            } else {
                (
                    format!("{field}.writableVariables"),
                    format!("the workflow's `builtInTools.updateState.rules[{k}]`"),
                )
            };
            return Err(not_writable(&rule.variable, at, &what));
        }
    }
    let inherited = offered.len() - own_count;
    for (n, (f, b)) in offered.iter().enumerate() {
        for variable in b.result_assignments.keys() {
            if allowed(variable) {
                continue;
            }
            let (at, what) = if n < inherited {
                (format!("{field}.writableVariables"), format!("`{f}`"))
            } else {
                (
                    format!("{f}.resultAssignments.{variable}"),
                    "this binding".to_owned(),
                )
            };
            return Err(not_writable(variable, at, &what));
        }
    }
    Ok(())
}

fn check_action(a: &ActionNode, field: &str, ctx: &WorkflowContext<'_>, vars: &Vars<'_>) -> Rule {
    let f = format!("{field}.binding");
    check_binding_targets(&a.binding, &f, ctx, vars)?;
    let scope = VariableScope { all: &vars.types };
    validate_binding(
        &a.binding,
        &f,
        ctx.tools.get(&a.binding.tool_id),
        &scope,
        BindingUse::Deterministic,
    )
    .map_err(|mut e| {
        // The argument is the offending item, not its `source` key.
        if e.code == "model_source_not_allowed"
            && let Some(arg) = e.field.strip_suffix(".source")
        {
            e.field = arg.to_owned();
            e.message = format!(
                "`{}`: a workflow action runs without the model, so no argument may have the `model` source (R-TB-3); bind a variable, a literal or a template",
                e.field
            );
        }
        e
    })
}

fn check_update_state(
    u: &UpdateStateNode,
    field: &str,
    ctx: &WorkflowContext<'_>,
    vars: &Vars<'_>,
) -> Rule {
    ctx.update_bounds.check(&u.rules, field)?;
    for (k, rule) in u.rules.iter().enumerate() {
        let f = format!("{field}.rules[{k}]");
        check_target(&rule.variable, &format!("{f}.variable"), vars)?;
        let target = vars
            .types
            .get(&rule.variable)
            .copied()
            .unwrap_or(ValueType::Json);
        check_assignment(&rule.expression, target, &vars.types, LlmLeaves::Rejected)
            .map_err(|e| expression_error(e, &format!("{f}.expression")))?;
    }
    Ok(())
}

/// An expression's error at `field` plus the path inside the expression.
pub(crate) fn expression_error(e: rtc_expr::CheckError, field: &str) -> ValidationError {
    let message = if e.code == "llm_leaf_not_allowed" {
        format!(
            "{}: `llm` leaves are not allowed in updateState nodes and edge expressions (R-EX-4); use an `llm` edge, or an agent stage's `updateState`",
            e.message
        )
    } else {
        e.message
    };
    ValidationError::new(e.code, format!("{field}{}", e.path), message)
}

fn check_transfer(
    t: &TransferNode,
    field: &str,
    ctx: &WorkflowContext<'_>,
    vars: &Vars<'_>,
) -> Rule {
    if let TransferTarget::Assistant { assistant_id, .. } = &t.target
        && !ctx.assistants.contains(assistant_id)
    {
        return Err(ValidationError::new(
            "assistant_not_found",
            format!("{field}.target.assistantId"),
            format!("assistant `{assistant_id}` does not exist in this workspace"),
        ));
    }
    if let Some(m) = &t.message {
        check_text(m, &format!("{field}.message"), MAX_PROMPT, vars)?;
    }
    if let Some(r) = &t.reason {
        check_max_chars(r, &format!("{field}.reason"), 4_096)?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "workflow_rules_tests.rs"]
mod tests;
