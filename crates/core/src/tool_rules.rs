//! Save-time rules of tool resources (R-TR-1..5).

use std::collections::BTreeSet;

use rtc_protocol::{McpToolInfo, Tool, ToolKind};
use serde_json::{Value, json};

use crate::error::{Rule, ValidationError};
use crate::names::{
    check_display_name, check_header_name, check_identifier, check_max_chars, check_tool_name,
};
use crate::placeholders::{self, Placeholder};

/// Longest HTTP tool timeout an operator may set.
pub const MAX_HTTP_TIMEOUT_MS: u64 = 120_000;
/// Longest client tool wait an operator may set.
pub const MAX_CLIENT_TIMEOUT_MS: u64 = 600_000;
const MAX_DESCRIPTION: usize = 4_096;

/// What tool validation needs to know about the rest of the workspace.
pub struct ToolContext<'a> {
    /// Whether a secret of that name exists in the workspace.
    pub secret_exists: &'a dyn Fn(&str) -> bool,
    /// For `mcp` tools: the remote tool as discovered on its server, or
    /// `None` when the server does not offer `remoteToolName`.
    pub discovered: Option<&'a McpToolInfo>,
    /// Whether a name belongs to a platform tool (the runtime's registry).
    pub is_reserved: &'a dyn Fn(&str) -> bool,
}

/// The schema used when a tool declares no parameters.
pub fn empty_parameters() -> Value {
    json!({"type": "object", "properties": {}})
}

/// Validate a tool and fill what the platform owns: an `mcp` tool's
/// `parameters` become the discovered (pinned) input schema; a missing
/// schema becomes the empty object schema.
pub fn validate_tool(mut tool: Tool, ctx: &ToolContext<'_>) -> Rule<Tool> {
    check_tool_name(&tool.name, "name", ctx.is_reserved)?;
    check_max_chars(&tool.description, "description", MAX_DESCRIPTION)?;
    check_sections(&tool)?;
    if tool.kind == ToolKind::Mcp {
        let Some(remote) = ctx.discovered else {
            let name = tool
                .mcp
                .as_ref()
                .map(|m| m.remote_tool_name.as_str())
                .unwrap_or_default();
            return Err(ValidationError::new(
                "unknown_remote_tool",
                "mcp.remoteToolName",
                format!("the MCP server does not offer a tool named `{name}`"),
            ));
        };
        tool.parameters = Some(remote.input_schema.clone());
    }
    let parameters = tool.parameters.get_or_insert_with(empty_parameters);
    let params = check_parameter_schema(parameters)?;
    let inputs = check_template_inputs(&tool)?;
    let mut used_inputs = BTreeSet::new();
    if let Some(http) = &tool.http {
        check_fixed_origin(&http.url)?;
        check_http_url(&http.url)?;
        let mut found = Vec::new();
        for p in placeholders::parse(&http.url, "http.url")? {
            found.push(("http.url".to_owned(), p));
        }
        if let Some(body) = &http.body {
            found.extend(placeholders::parse_json(body, "http.body")?);
        }
        for (name, value) in &http.headers {
            let field = format!("http.headers.{name}");
            check_header_name(name, &field)?;
            for p in placeholders::parse(value, &field)? {
                if let Placeholder::Secret(secret) = p {
                    if !(ctx.secret_exists)(secret) {
                        return Err(ValidationError::new(
                            "unknown_secret",
                            field,
                            format!("secret `{secret}` does not exist in this workspace"),
                        ));
                    }
                } else {
                    found.push((field.clone(), p));
                }
            }
        }
        for (field, p) in found {
            match p {
                Placeholder::Secret(s) => {
                    return Err(ValidationError::new(
                        "secret_outside_headers",
                        field,
                        format!("`{{{{{s}}}}}` may only be used in HTTP header values"),
                    ));
                }
                Placeholder::Input(name) => {
                    if !inputs.contains(name) {
                        return Err(ValidationError::new(
                            "unknown_template_input",
                            field,
                            format!("`{{{{input__{name}}}}}` is not declared in `templateInputs`"),
                        ));
                    }
                    used_inputs.insert(name.to_owned());
                }
                Placeholder::Plain(name) => {
                    if !params.contains(name) {
                        return Err(ValidationError::new(
                            "unknown_parameter",
                            field,
                            format!("`{{{{{name}}}}}` is not a property of `parameters`"),
                        ));
                    }
                }
            }
        }
        if !(1..=MAX_HTTP_TIMEOUT_MS).contains(&http.timeout_ms) {
            return Err(out_of_range("http.timeoutMs", MAX_HTTP_TIMEOUT_MS));
        }
    }
    for (i, input) in tool.template_inputs.iter().enumerate() {
        if !used_inputs.contains(&input.name) {
            return Err(ValidationError::new(
                "unused_template_input",
                format!("templateInputs[{i}].name"),
                format!(
                    "template input `{}` is declared but `{{{{input__{}}}}}` appears nowhere in the request",
                    input.name, input.name
                ),
            ));
        }
    }
    if let Some(client) = &tool.client {
        let f = &client.function_name;
        let ok = (1..=64).contains(&f.len())
            && f.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && f.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
        if !ok {
            return Err(ValidationError::new(
                "invalid_name",
                "client.functionName",
                format!(
                    "`client.functionName` must be 1 to 64 letters, digits, `_`, `.` or `-`, starting with a letter or `_`; got {f:?}"
                ),
            ));
        }
        if !(1..=MAX_CLIENT_TIMEOUT_MS).contains(&client.timeout_ms) {
            return Err(out_of_range("client.timeoutMs", MAX_CLIENT_TIMEOUT_MS));
        }
    }
    if let Some(mcp) = &tool.mcp {
        check_display_name(&mcp.server_id, "mcp.serverId", 128)?;
        check_display_name(&mcp.remote_tool_name, "mcp.remoteToolName", 256)?;
    }
    crate::mock_rules::check_mock_response(&tool)?;
    Ok(tool)
}

fn out_of_range(field: &str, max: u64) -> ValidationError {
    ValidationError::new(
        "out_of_range",
        field,
        format!("`{field}` must be between 1 and {max}"),
    )
}

/// Exactly the section matching `type` is present.
fn check_sections(tool: &Tool) -> Rule {
    let present = [
        (ToolKind::Http, tool.http.is_some()),
        (ToolKind::Mcp, tool.mcp.is_some()),
        (ToolKind::Client, tool.client.is_some()),
    ];
    for (kind, is_present) in present {
        let name = kind.as_str();
        if kind == tool.kind && !is_present {
            return Err(ValidationError::new(
                "missing_field",
                name,
                format!("a `{name}` tool needs the `{name}` section"),
            ));
        }
        if kind != tool.kind && is_present {
            return Err(ValidationError::new(
                "unexpected_field",
                name,
                format!(
                    "a `{}` tool cannot have a `{name}` section",
                    tool.kind.as_str()
                ),
            ));
        }
    }
    Ok(())
}

/// The parameter schema compiles as JSON Schema and describes an object;
/// returns its property names.
pub fn check_parameter_schema(schema: &Value) -> Rule<BTreeSet<String>> {
    let field = "parameters";
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(ValidationError::new(
            "invalid_schema",
            field,
            "`parameters` must be a JSON Schema with `\"type\": \"object\"`",
        ));
    }
    if let Err(e) = jsonschema::validator_for(schema) {
        return Err(ValidationError::new(
            "invalid_schema",
            field,
            format!("`parameters` is not a valid JSON Schema: {e}"),
        ));
    }
    Ok(schema_properties(schema)
        .into_iter()
        .map(|(k, _)| k.to_owned())
        .collect())
}

/// The `properties` of an object schema.
pub fn schema_properties(schema: &Value) -> Vec<(&str, &Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.as_str(), v)).collect())
        .unwrap_or_default()
}

/// The `required` names of an object schema.
pub fn schema_required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn check_template_inputs(tool: &Tool) -> Rule<BTreeSet<&str>> {
    let mut names = BTreeSet::new();
    for (i, input) in tool.template_inputs.iter().enumerate() {
        let field = format!("templateInputs[{i}].name");
        check_identifier(&input.name, &field)?;
        if !names.insert(input.name.as_str()) {
            return Err(ValidationError::new(
                "duplicate_name",
                field,
                format!("template input `{}` is declared twice", input.name),
            ));
        }
    }
    Ok(names)
}

/// The length in bytes of a URL template's scheme and authority (user
/// info, host, port): up to the first `/`, `\`, `?` or `#` after the
/// scheme's `:` and the slashes that follow it, as a WHATWG parser reads
/// it. Only what follows may hold placeholders. A template without a `:`
/// has neither (it is not an absolute URL: `invalid_url`).
pub fn url_origin_len(template: &str) -> usize {
    let Some(colon) = template.find(':') else {
        return 0;
    };
    let after = &template[colon + 1..];
    let authority = after.trim_start_matches(['/', '\\']);
    let start = template.len() - authority.len();
    start
        + authority
            .find(['/', '\\', '?', '#'])
            .unwrap_or(authority.len())
}

/// No placeholder in the scheme or authority of `http.url`: a value there
/// (e.g. from the model) would choose where the request, and the secrets
/// in its headers, go.
fn check_fixed_origin(url: &str) -> Rule {
    if url[..url_origin_len(url)].contains("{{") {
        return Err(ValidationError::new(
            "placeholder_in_host",
            "http.url",
            format!(
                "`http.url` may hold placeholders only in its path, query and fragment; the scheme, host, port and user info must be written out; got {url:?}"
            ),
        ));
    }
    Ok(())
}

/// An absolute http(s) URL once placeholders are filled.
fn check_http_url(url: &str) -> Rule {
    let sample = placeholders::render(url, |_| Some("x".to_owned()));
    match url::Url::parse(&sample) {
        Ok(u) if (u.scheme() == "http" || u.scheme() == "https") && u.host().is_some() => Ok(()),
        _ => Err(ValidationError::new(
            "invalid_url",
            "http.url",
            format!("`http.url` must be an absolute http(s) URL; got {url:?}"),
        )),
    }
}

/// An absolute http(s) URL (for MCP servers).
pub fn check_plain_url(url: &str, field: &str) -> Rule {
    match url::Url::parse(url) {
        Ok(u) if (u.scheme() == "http" || u.scheme() == "https") && u.host().is_some() => Ok(()),
        _ => Err(ValidationError::new(
            "invalid_url",
            field,
            format!("`{field}` must be an absolute http(s) URL; got {url:?}"),
        )),
    }
}

/// Secrets referenced by a tool's HTTP headers.
pub fn referenced_secrets(tool: &Tool) -> Vec<String> {
    let Some(http) = &tool.http else {
        return Vec::new();
    };
    placeholders::secrets_in(http.headers.values())
}

#[cfg(test)]
#[path = "tool_rules_tests.rs"]
mod tests;
