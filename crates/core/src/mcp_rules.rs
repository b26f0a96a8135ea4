//! Save-time rules of MCP server resources (R-TR-2, R-SEC-4).

use rtc_protocol::{McpServer, McpTransport};

use crate::error::{Rule, ValidationError};
use crate::names::{check_display_name, check_header_name, check_max_chars, is_identifier};
use crate::placeholders::{self, Placeholder};
use crate::tool_rules::check_plain_url;

/// Who is saving: only the instance operator may start local processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    Admin,
    Workspace,
}

/// Why an MCP server config is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpServerRejection {
    #[error("only the admin token may register stdio MCP servers")]
    StdioRequiresAdmin,
    #[error(transparent)]
    Invalid(#[from] ValidationError),
}

/// The longest per-call timeout an MCP server may set.
pub const MAX_CALL_TIMEOUT_SECS: u32 = 600;

/// Validate an MCP server resource.
pub fn validate_mcp_server(
    server: &McpServer,
    caller: Caller,
    secret_exists: &dyn Fn(&str) -> bool,
) -> Result<(), McpServerRejection> {
    check_display_name(&server.name, "name", 200)?;
    check_max_chars(&server.description, "description", 4_096)?;
    if let Some(t) = server.timeout_seconds
        && !(1..=MAX_CALL_TIMEOUT_SECS).contains(&t)
    {
        return Err(ValidationError::new(
            "invalid_timeout",
            "timeoutSeconds",
            format!("`timeoutSeconds` must be 1 to {MAX_CALL_TIMEOUT_SECS} seconds"),
        )
        .into());
    }
    match &server.transport {
        McpTransport::Stdio { command, args, env } => {
            if caller != Caller::Admin {
                return Err(McpServerRejection::StdioRequiresAdmin);
            }
            check_display_name(command, "transport.command", 1_024)?;
            if args.len() > 64 {
                return Err(ValidationError::new(
                    "too_many",
                    "transport.args",
                    "at most 64 arguments",
                )
                .into());
            }
            for key in env.keys() {
                if !is_identifier(key) {
                    return Err(ValidationError::new(
                        "invalid_name",
                        format!("transport.env.{key}"),
                        format!("{key:?} is not a valid environment variable name"),
                    )
                    .into());
                }
            }
        }
        McpTransport::StreamableHttp { url, headers } => {
            check_plain_url(url, "transport.url")?;
            for (name, value) in headers {
                let field = format!("transport.headers.{name}");
                check_header_name(name, &field)?;
                check_header_secrets(value, &field, secret_exists)?;
            }
        }
    }
    Ok(())
}

/// Header values of MCP servers may only reference existing secrets.
fn check_header_secrets(value: &str, field: &str, secret_exists: &dyn Fn(&str) -> bool) -> Rule {
    for p in placeholders::parse(value, field)? {
        match p {
            Placeholder::Secret(s) if secret_exists(s) => {}
            Placeholder::Secret(s) => {
                return Err(ValidationError::new(
                    "unknown_secret",
                    field,
                    format!("secret `{s}` does not exist in this workspace"),
                ));
            }
            _ => {
                return Err(ValidationError::new(
                    "invalid_placeholder",
                    field,
                    "MCP server headers may only use `{{secret__name}}` placeholders",
                ));
            }
        }
    }
    Ok(())
}

/// What API answers show instead of a stdio server's environment values
/// (they are write-only, like secrets).
pub const MASKED_ENV_VALUE: &str = "***";

/// The server as the API shows it: a stdio server's `env` values masked.
pub fn masked(mut server: McpServer) -> McpServer {
    if let McpTransport::Stdio { env, .. } = &mut server.transport {
        for value in env.values_mut() {
            MASKED_ENV_VALUE.clone_into(value);
        }
    }
    server
}

/// Before saving: an `env` value sent back as [`MASKED_ENV_VALUE`] keeps
/// the stored value of that variable (of `existing`, the server being
/// replaced); one with no stored value is refused.
pub fn keep_masked_env(server: &mut McpServer, existing: Option<&McpServer>) -> Rule {
    let McpTransport::Stdio { env, .. } = &mut server.transport else {
        return Ok(());
    };
    let stored = match existing.map(|e| &e.transport) {
        Some(McpTransport::Stdio { env, .. }) => Some(env),
        _ => None,
    };
    for (key, value) in env.iter_mut() {
        if value != MASKED_ENV_VALUE {
            continue;
        }
        match stored.and_then(|s| s.get(key)) {
            Some(kept) => kept.clone_into(value),
            None => {
                return Err(ValidationError::new(
                    "invalid_value",
                    format!("transport.env.{key}"),
                    format!(
                        "`{MASKED_ENV_VALUE}` keeps a stored value, and `{key}` has none; send the value itself"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Secrets referenced by a server's headers.
pub fn referenced_secrets(server: &McpServer) -> Vec<String> {
    let McpTransport::StreamableHttp { headers, .. } = &server.transport else {
        return Vec::new();
    };
    placeholders::secrets_in(headers.values())
}

#[cfg(test)]
#[path = "mcp_rules_tests.rs"]
mod tests;
