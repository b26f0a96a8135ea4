//! The MCP connection pool: one connection per server configuration
//! (key), reused across calls.
//!
//! A call is sent at most once: it is retried on a new connection only
//! when the old one was found closed before sending, or when the request
//! provably never left (the connection could not be opened). A call that
//! may have reached the server is never re-sent, whatever happened after.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rtc_protocol::{McpToolInfo, McpTransport};
use serde_json::Value;

use super::{
    McpConnector, McpError, McpService, ResolvedHeaders, describe, never_sent, tool_infos,
};

struct Pooled {
    service: McpService,
    tools: Vec<McpToolInfo>,
}

/// Open MCP connections, one per server configuration.
#[derive(Default)]
pub struct McpPool {
    connections: tokio::sync::Mutex<HashMap<String, Arc<Pooled>>>,
}

impl std::fmt::Debug for McpPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("McpPool")
    }
}

/// One call of a remote tool.
pub struct McpCall<'a> {
    /// Identifies the server configuration (e.g. workspace, id and update time).
    pub key: &'a str,
    pub transport: &'a McpTransport,
    pub headers: &'a ResolvedHeaders,
    pub tool: &'a str,
    /// The schema the operator accepted when saving the tool (R-BX-7).
    pub pinned_schema: &'a Value,
    pub arguments: serde_json::Map<String, Value>,
    /// Bounds the call once connected (connecting is bounded by the
    /// connector's timeout).
    pub timeout: Duration,
}

impl McpPool {
    /// The key's connection, opened if it has none, the one it has is
    /// `stale`, or that one's transport has closed.
    async fn connection(
        &self,
        connector: &McpConnector,
        call: &McpCall<'_>,
        stale: Option<&Arc<Pooled>>,
    ) -> Result<Arc<Pooled>, McpError> {
        let mut conns = self.connections.lock().await;
        if let Some(c) = conns.get(call.key)
            && !stale.is_some_and(|s| Arc::ptr_eq(s, c))
            && !c.service.is_transport_closed()
        {
            return Ok(c.clone());
        }
        conns.remove(call.key);
        let pooled = tokio::time::timeout(connector.timeout, open(connector, call))
            .await
            .unwrap_or(Err(McpError::Timeout(connector.timeout)))?;
        let pooled = Arc::new(pooled);
        conns.insert(call.key.to_owned(), pooled.clone());
        Ok(pooled)
    }

    /// Drop `conn` if it is still the key's connection.
    async fn forget(&self, key: &str, conn: &Arc<Pooled>) {
        let mut conns = self.connections.lock().await;
        if conns.get(key).is_some_and(|c| Arc::ptr_eq(c, conn)) {
            conns.remove(key);
        }
    }

    /// Call a remote tool; refuses when its schema changed since it was
    /// pinned. Sent at most once (see the module's notes).
    pub async fn call(
        &self,
        connector: &McpConnector,
        call: McpCall<'_>,
    ) -> Result<Value, McpError> {
        let mut stale: Option<Arc<Pooled>> = None;
        loop {
            let conn = self.connection(connector, &call, stale.as_ref()).await?;
            let Some(remote) = conn.tools.iter().find(|t| t.name == call.tool) else {
                return Err(McpError::ToolGone(call.tool.to_owned()));
            };
            if &remote.input_schema != call.pinned_schema {
                return Err(McpError::SchemaChanged(call.tool.to_owned()));
            }
            let params = rmcp::model::CallToolRequestParams::new(call.tool.to_owned())
                .with_arguments(call.arguments.clone());
            // Dropping the call at the deadline sends the server a
            // cancellation (rmcp's guard).
            let outcome = tokio::time::timeout(call.timeout, conn.service.call_tool(params)).await;
            match outcome {
                Err(_) => {
                    // The connection may be dead (e.g. the server
                    // restarted): the next call opens a new one. This call
                    // is not retried, as the tool may have run.
                    self.forget(call.key, &conn).await;
                    return Err(McpError::Timeout(call.timeout));
                }
                Ok(Ok(result)) => return tool_result(&result),
                Ok(Err(e)) if stale.is_none() && never_sent(&e) => {
                    tracing::warn!(error = %describe(&e), "MCP request not sent; reconnecting");
                    stale = Some(conn);
                }
                Ok(Err(e)) => {
                    if !matches!(e, rmcp::ServiceError::McpError(_)) {
                        self.forget(call.key, &conn).await;
                    }
                    return Err(match e {
                        rmcp::ServiceError::McpError(data) => {
                            McpError::Protocol(data.message.to_string())
                        }
                        other => McpError::CallFailed(describe(&other)),
                    });
                }
            }
        }
    }
}

/// Connect and list the tools.
async fn open(connector: &McpConnector, call: &McpCall<'_>) -> Result<Pooled, McpError> {
    let service = connector.connect(call.transport, call.headers).await?;
    let tools = service
        .list_all_tools()
        .await
        .map(tool_infos)
        .map_err(|e| McpError::Protocol(describe(&e)))?;
    Ok(Pooled { service, tools })
}

/// A tool result as JSON: the structured content if given, else the text.
fn tool_result(result: &rmcp::model::CallToolResult) -> Result<Value, McpError> {
    let value = serde_json::to_value(result).map_err(|e| McpError::Protocol(e.to_string()))?;
    let text: Vec<&str> = value
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect();
    let text = text.join("\n");
    if value
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false)
    {
        return Err(McpError::ToolFailed(text));
    }
    if let Some(structured) = value.get("structuredContent").filter(|v| !v.is_null()) {
        return Ok(structured.clone());
    }
    Ok(serde_json::from_str(&text).unwrap_or(Value::String(text)))
}
