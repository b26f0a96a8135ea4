//! Save-time rules of task backend resources (R-TK-1, R-TK-5; design
//! `task-backends.md` §0): the `reasoner` (its model, prompt, limits and
//! HTTP/MCP tool bindings) and the `opencode` server (where it is, or how
//! it is started, and the model it runs tasks with).
//!
//! A reasoner's `variable` and `template` sources read the *delegating*
//! session's variables, which are not known when the backend is saved: here
//! only their names are checked ([`backend_variables`] lists them), and an
//! assistant naming the backend must declare each one
//! (`assistant_rules`).

use std::collections::{BTreeMap, BTreeSet};

use rtc_protocol::{
    ArgumentSource, OpencodeSettings, ReasonerSettings, TaskBackend, TaskBackendType, Tool,
    ToolBinding, ToolKind, ValueType,
};
use serde_json::Value;

use crate::assistant_rules::{MAX_BINDINGS, MAX_PROMPT, check_llm, check_model_bindings};
use crate::binding_rules::{BindingUse, VariableScope, validate_binding};
use crate::error::{Rule, ValidationError};
use crate::names::{
    INPUT_PREFIX, SECRET_PREFIX, SYSTEM_PREFIX, check_display_name, check_identifier,
    check_max_chars,
};
use crate::placeholders::{self, Placeholder};
use crate::system_vars::SYSTEM_VARIABLES;
use crate::tool_rules::check_plain_url;

/// Longest task a backend may allow, in seconds (one day).
pub const MAX_TIMEOUT_SECONDS: u32 = 86_400;
/// Most tasks of one backend running at once.
pub const MAX_CONCURRENT_TASKS: u32 = 64;
/// Most model calls of one reasoner task.
pub const MAX_STEPS: u32 = 200;

/// What task backend validation needs from the rest of the workspace.
pub struct TaskBackendContext<'a> {
    /// The tools the backend binds that exist, by id.
    pub tools: &'a BTreeMap<String, Tool>,
    /// Names of the configured LLM providers.
    pub providers: &'a BTreeSet<String>,
    /// Whether a secret of that name exists in the workspace.
    pub secret_exists: &'a dyn Fn(&str) -> bool,
}

/// Validate a task backend. Who may save one with `opencode.command` (the
/// admin token only: it starts a local process) is the server's to check.
pub fn validate_task_backend(backend: &TaskBackend, ctx: &TaskBackendContext<'_>) -> Rule {
    check_display_name(&backend.name, "name", 200)?;
    check_max_chars(&backend.description, "description", 4_096)?;
    check_sections(backend)?;
    check_range(
        backend.timeout_seconds,
        "timeoutSeconds",
        MAX_TIMEOUT_SECONDS,
    )?;
    check_range(
        backend.max_concurrent_tasks,
        "maxConcurrentTasks",
        MAX_CONCURRENT_TASKS,
    )?;
    if let Some(reasoner) = &backend.reasoner {
        check_reasoner(reasoner, ctx)?;
    }
    if let Some(opencode) = &backend.opencode {
        check_opencode(opencode, ctx.secret_exists)?;
    }
    Ok(())
}

/// Exactly the section matching `type` is present.
fn check_sections(backend: &TaskBackend) -> Rule {
    let present = [
        (TaskBackendType::Reasoner, backend.reasoner.is_some()),
        (TaskBackendType::Opencode, backend.opencode.is_some()),
    ];
    for (kind, is_present) in present {
        let name = kind.as_str();
        if kind == backend.backend_type && !is_present {
            return Err(ValidationError::new(
                "missing_field",
                name,
                format!("a `{name}` task backend needs the `{name}` section"),
            ));
        }
        if kind != backend.backend_type && is_present {
            return Err(ValidationError::new(
                "unexpected_field",
                name,
                format!(
                    "a `{}` task backend cannot have a `{name}` section",
                    backend.backend_type.as_str()
                ),
            ));
        }
    }
    Ok(())
}

fn check_range(value: u32, field: &str, max: u32) -> Rule {
    if (1..=max).contains(&value) {
        Ok(())
    } else {
        Err(ValidationError::new(
            "out_of_range",
            field,
            format!("`{field}` must be between 1 and {max}"),
        ))
    }
}

fn check_reasoner(r: &ReasonerSettings, ctx: &TaskBackendContext<'_>) -> Rule {
    check_llm(&r.llm, "reasoner.llm", ctx.providers)?;
    check_max_chars(&r.system_prompt, "reasoner.systemPrompt", MAX_PROMPT)?;
    if let Some(secret) = placeholders::secrets_in([&r.system_prompt]).first() {
        return Err(ValidationError::new(
            "secret_not_allowed",
            "reasoner.systemPrompt",
            format!("`{{{{{secret}}}}}`: secrets are only injected into HTTP tool headers"),
        ));
    }
    check_range(r.max_steps, "reasoner.maxSteps", MAX_STEPS)?;
    if r.tool_bindings.len() > MAX_BINDINGS {
        return Err(ValidationError::new(
            "too_many",
            "reasoner.toolBindings",
            format!("at most {MAX_BINDINGS} tool bindings"),
        ));
    }
    let fields: Vec<String> = (0..r.tool_bindings.len())
        .map(|i| format!("reasoner.toolBindings[{i}]"))
        .collect();
    // The delegating session's variables are not known yet: every name a
    // source reads is in scope once it is a possible variable name (its
    // type is the delegating assistant's).
    let mut read_by_all = BTreeMap::new();
    for (field, b) in fields.iter().zip(&r.tool_bindings) {
        check_reasoner_binding(b, field, ctx.tools)?;
        let mut read = BTreeMap::new();
        for (name, name_field) in binding_variables(b, field)? {
            check_variable_name(name, &name_field)?;
            read.insert(name.to_owned(), ValueType::String);
        }
        let scope = VariableScope { all: &read };
        validate_binding(
            b,
            field,
            ctx.tools.get(&b.tool_id),
            &scope,
            BindingUse::ModelTool,
        )?;
        read_by_all.append(&mut read);
    }
    // No two tools of one name (every binding is valid by now).
    let scope = VariableScope { all: &read_by_all };
    check_model_bindings(
        fields.iter().map(String::as_str).zip(&r.tool_bindings),
        ctx.tools,
        &scope,
    )
}

/// What sets a reasoner binding apart: HTTP and MCP tools only (a client
/// tool would need the conversation's client), and no `resultAssignments`
/// (a task cannot write the conversation's state).
fn check_reasoner_binding(b: &ToolBinding, field: &str, tools: &BTreeMap<String, Tool>) -> Rule {
    if let Some(tool) = tools.get(&b.tool_id)
        && tool.kind == ToolKind::Client
    {
        return Err(ValidationError::new(
            "tool_type_unsupported",
            format!("{field}.toolId"),
            format!(
                "the reasoner runs only HTTP and MCP tools; `{}` is a client tool",
                tool.name
            ),
        ));
    }
    if !b.result_assignments.is_empty() {
        return Err(ValidationError::new(
            "result_assignments_not_allowed",
            format!("{field}.resultAssignments"),
            "a task cannot write the conversation's variables: the reasoner's bindings have no `resultAssignments`",
        ));
    }
    Ok(())
}

/// The variables a binding's sources read, each with the field that names
/// it (`….variableName`, or the `….template` it appears in).
fn binding_variables<'b>(b: &'b ToolBinding, field: &str) -> Rule<Vec<(&'b str, String)>> {
    let mut out = Vec::new();
    let sources = b
        .argument_bindings
        .iter()
        .map(|(k, s)| (format!("{field}.argumentBindings.{k}"), s))
        .chain(
            b.template_bindings
                .iter()
                .map(|(k, s)| (format!("{field}.templateBindings.{k}"), s)),
        );
    for (f, source) in sources {
        match source {
            ArgumentSource::Variable { variable_name } => {
                out.push((variable_name.as_str(), format!("{f}.variableName")));
            }
            ArgumentSource::Template { template } => {
                let f = format!("{f}.template");
                for p in placeholders::parse(template, &f)? {
                    if let Placeholder::Plain(name) = p {
                        out.push((name, f.clone()));
                    }
                }
            }
            ArgumentSource::Model | ArgumentSource::Literal { .. } => {}
        }
    }
    Ok(out)
}

/// A name some delegating assistant could declare (or a `system__` one).
fn check_variable_name(name: &str, field: &str) -> Rule {
    check_identifier(name, field)?;
    let reserved = [SECRET_PREFIX, INPUT_PREFIX]
        .iter()
        .any(|p| name.starts_with(p));
    let unknown_system =
        name.starts_with(SYSTEM_PREFIX) && !SYSTEM_VARIABLES.iter().any(|(n, _)| *n == name);
    if reserved || unknown_system {
        return Err(ValidationError::new(
            "unknown_variable",
            field,
            format!(
                "`{name}` can be neither a declared dynamic variable nor a `system__` variable"
            ),
        ));
    }
    Ok(())
}

fn check_opencode(o: &OpencodeSettings, secret_exists: &dyn Fn(&str) -> bool) -> Rule {
    match (&o.base_url, &o.command) {
        (Some(_), Some(_)) => {
            return Err(ValidationError::new(
                "unexpected_field",
                "opencode.command",
                "give either `opencode.baseUrl` (a server you run) or `opencode.command` (a server the platform starts), not both",
            ));
        }
        (None, None) => {
            return Err(ValidationError::new(
                "missing_field",
                "opencode.baseUrl",
                "an `opencode` task backend needs `opencode.baseUrl` (a server you run) or `opencode.command` (a server the platform starts)",
            ));
        }
        (Some(url), None) => check_base_url(url)?,
        (None, Some(command)) => check_display_name(command, "opencode.command", 1_024)?,
    }
    if let Some(password) = &o.password {
        if o.base_url.is_none() {
            return Err(ValidationError::new(
                "unexpected_field",
                "opencode.password",
                "`opencode.password` goes with `opencode.baseUrl`; a server the platform starts gets a random password",
            ));
        }
        check_password(password, secret_exists)?;
    }
    if let Some(config) = &o.config {
        if o.command.is_none() {
            return Err(ValidationError::new(
                "unexpected_field",
                "opencode.config",
                "`opencode.config` goes with `opencode.command`: it configures a server the platform starts",
            ));
        }
        check_config(config, secret_exists)?;
    }
    if let Some(dir) = &o.directory {
        check_max_chars(dir, "opencode.directory", 1_024)?;
        if !dir.starts_with('/') || dir.contains('\0') {
            return Err(ValidationError::new(
                "invalid_value",
                "opencode.directory",
                format!("`opencode.directory` must be an absolute path; got {dir:?}"),
            ));
        }
    }
    check_display_name(&o.model.provider_id, "opencode.model.providerID", 200)?;
    check_display_name(&o.model.model_id, "opencode.model.modelID", 200)?;
    if let Some(agent) = &o.agent {
        check_display_name(agent, "opencode.agent", 200)?;
    }
    Ok(())
}

/// An absolute http(s) URL without user info (the password is a secret of
/// its own). Where it points is the outbound guard's to judge at call time.
fn check_base_url(url: &str) -> Rule {
    let field = "opencode.baseUrl";
    check_max_chars(url, field, 2_048)?;
    check_plain_url(url, field)?;
    if let Ok(u) = url::Url::parse(url)
        && (!u.username().is_empty() || u.password().is_some())
    {
        return Err(ValidationError::new(
            "invalid_url",
            field,
            "`opencode.baseUrl` may not carry user info; give the password as `opencode.password` (a secret reference)",
        ));
    }
    Ok(())
}

/// Exactly one `{{secret__name}}` reference to an existing secret, written
/// as just that (the whole value is the secret's). The
/// value itself is never quoted: it may be a password typed in by mistake.
fn check_password(password: &str, secret_exists: &dyn Fn(&str) -> bool) -> Rule {
    let field = "opencode.password";
    let found = placeholders::parse(password, field).map_err(|_| not_a_reference())?;
    let [Placeholder::Secret(name)] = found.as_slice() else {
        return Err(not_a_reference());
    };
    if password != format!("{{{{{name}}}}}") {
        return Err(not_a_reference());
    }
    if !secret_exists(name) {
        return Err(ValidationError::new(
            "unknown_secret",
            field,
            format!("secret `{name}` does not exist in this workspace"),
        ));
    }
    Ok(())
}

fn not_a_reference() -> ValidationError {
    ValidationError::new(
        "invalid_placeholder",
        "opencode.password",
        "`opencode.password` must be one `{{secret__name}}` reference: store the password as a workspace secret",
    )
}

/// A JSON object whose strings reference only existing secrets.
fn check_config(config: &Value, secret_exists: &dyn Fn(&str) -> bool) -> Rule {
    if !config.is_object() {
        return Err(ValidationError::new(
            "invalid_value",
            "opencode.config",
            "`opencode.config` must be a JSON object (an OpenCode configuration)",
        ));
    }
    for (field, p) in placeholders::parse_json(config, "opencode.config")? {
        match p {
            Placeholder::Secret(s) if secret_exists(s) => {}
            Placeholder::Secret(s) => {
                return Err(ValidationError::new(
                    "unknown_secret",
                    field,
                    format!("secret `{s}` does not exist in this workspace"),
                ));
            }
            Placeholder::Input(_) | Placeholder::Plain(_) => {
                return Err(ValidationError::new(
                    "invalid_placeholder",
                    field,
                    "`opencode.config` may only use `{{secret__name}}` placeholders",
                ));
            }
        }
    }
    Ok(())
}

/// Ids of the tools a backend binds.
pub fn referenced_tools(backend: &TaskBackend) -> BTreeSet<String> {
    backend
        .reasoner
        .iter()
        .flat_map(|r| &r.tool_bindings)
        .map(|b| b.tool_id.clone())
        .collect()
}

/// Secrets a backend references (an OpenCode password, its config's
/// strings).
pub fn referenced_secrets(backend: &TaskBackend) -> Vec<String> {
    let Some(o) = &backend.opencode else {
        return Vec::new();
    };
    let mut out = placeholders::secrets_in(o.password.iter());
    if let Some(config) = &o.config {
        out.extend(
            placeholders::parse_json(config, "")
                .unwrap_or_default()
                .into_iter()
                .filter_map(|(_, p)| match p {
                    Placeholder::Secret(s) => Some(s.to_owned()),
                    _ => None,
                }),
        );
    }
    out
}

/// The variables a reasoner's bindings read from the delegating session
/// (`variable` sources and template placeholders), which every assistant
/// naming the backend must declare.
pub fn backend_variables(backend: &TaskBackend) -> BTreeSet<String> {
    let Some(r) = &backend.reasoner else {
        return BTreeSet::new();
    };
    r.tool_bindings
        .iter()
        .flat_map(|b| binding_variables(b, "").unwrap_or_default())
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// Whether a backend starts a local process (`opencode.command`), which
/// only the admin token may create, change or delete.
pub fn starts_process(backend: &TaskBackend) -> bool {
    backend
        .opencode
        .as_ref()
        .is_some_and(|o| o.command.is_some())
}

#[cfg(test)]
#[path = "task_backend_rules_tests.rs"]
mod tests;
