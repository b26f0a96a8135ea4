//! The MCP connection pool: one connection per server configuration
//! (key), reused across calls and workspaces' sessions.
//!
//! Locks: the pool's map lock (a `std` mutex) is held only to find or add
//! a key's slot, never across an await; each slot has its own async lock,
//! held while that key connects, so a slow or dead server delays only
//! calls to itself. A failed connection attempt is remembered with a
//! backoff (5 s, doubling to 60 s): calls in that window fail at once,
//! saying so, instead of each trying again. Slots unused for the idle TTL
//! are dropped (with their connection: a stdio server's process is killed
//! with it), and [`McpPool::evict`] drops those of a key prefix at once.
//!
//! Discovery ([`McpPool::tools`]) lists a server's tools on its pooled
//! connection (a stdio server is not started again for it), at most once
//! per [`DISCOVERY_INTERVAL`] per key: requests in between, and those that
//! arrive while a listing runs, get the last answer.
//!
//! A call is sent at most once: it is retried on a new connection only
//! when the old one was found closed before sending, or when the request
//! provably never left (the connection could not be opened). A call that
//! may have reached the server is never re-sent, whatever happened after.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::{Duration, Instant};

use rtc_protocol::{McpToolInfo, McpTransport};
use serde_json::Value;

use super::{
    MAX_RESULT_BYTES, McpConnector, McpError, McpService, ResolvedHeaders, describe, never_sent,
    tool_infos,
};

/// First wait after a failed connection attempt; it doubles per failure.
pub const BACKOFF_FIRST: Duration = Duration::from_secs(5);
/// Longest wait between connection attempts.
pub const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// The shortest time between two fresh tool listings of one key.
pub const DISCOVERY_INTERVAL: Duration = Duration::from_secs(5);
/// How long an unused slot (and its connection) is kept by default.
pub const DEFAULT_IDLE_TTL: Duration = Duration::from_secs(10 * 60);

/// The wait after a failed attempt, given the wait before it.
pub(crate) fn next_backoff(previous: Option<Duration>) -> Duration {
    previous.map_or(BACKOFF_FIRST, |p| (p * 2).min(BACKOFF_MAX))
}

struct Pooled {
    service: McpService,
    tools: Vec<McpToolInfo>,
    /// Calls with progress given up before their answer, cancelled on the
    /// server at the next call (see `progress.rs`).
    abandoned: super::progress::Abandoned,
}

enum State {
    Empty,
    Ready(Arc<Pooled>),
    Failed {
        reason: String,
        until: Instant,
        backoff: Duration,
    },
}

/// One key's connection and when it was last asked for.
struct Slot {
    state: tokio::sync::Mutex<State>,
    last_used: Mutex<Instant>,
    /// The last discovery and when it was made; held while one runs.
    discovered: tokio::sync::Mutex<Option<(Instant, Vec<McpToolInfo>)>>,
}

impl Slot {
    fn touch(&self) {
        *self.last_used.lock() = Instant::now();
    }

    fn idle_for(&self) -> Duration {
        self.last_used.lock().elapsed()
    }

    /// Drop `conn` if it is still this slot's connection (the next call
    /// opens a new one).
    async fn forget(&self, conn: &Arc<Pooled>) {
        let mut state = self.state.lock().await;
        if matches!(&*state, State::Ready(c) if Arc::ptr_eq(c, conn)) {
            *state = State::Empty;
        }
    }
}

struct Slots {
    by_key: HashMap<String, Arc<Slot>>,
    last_sweep: Instant,
}

/// Open MCP connections, one per server configuration.
pub struct McpPool {
    slots: Mutex<Slots>,
    idle_ttl: Duration,
}

impl Default for McpPool {
    fn default() -> Self {
        Self::new(DEFAULT_IDLE_TTL)
    }
}

impl std::fmt::Debug for McpPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpPool")
            .field("idle_ttl", &self.idle_ttl)
            .finish_non_exhaustive()
    }
}

/// One call of a remote tool.
pub struct McpCall<'a> {
    /// Identifies the server configuration (e.g. workspace, id and update
    /// time); [`McpPool::evict`] matches its prefix.
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
    /// Where the server's progress notifications of this call go, if the
    /// caller wants them.
    pub progress: Option<super::ProgressSink>,
}

impl McpPool {
    /// A pool dropping slots unused for `idle_ttl`.
    pub fn new(idle_ttl: Duration) -> Self {
        Self {
            slots: Mutex::new(Slots {
                by_key: HashMap::new(),
                last_sweep: Instant::now(),
            }),
            idle_ttl,
        }
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, Slots> {
        self.slots.lock()
    }

    /// The slot of `key`, created if missing; drops idle slots now and then.
    fn slot(&self, key: &str) -> Arc<Slot> {
        let mut slots = self.lock();
        if slots.last_sweep.elapsed() >= self.idle_ttl / 4 {
            slots.last_sweep = Instant::now();
            let ttl = self.idle_ttl;
            slots
                .by_key
                .retain(|k, s| k == key || Arc::strong_count(s) > 1 || s.idle_for() < ttl);
        }
        let slot = slots
            .by_key
            .entry(key.to_owned())
            .or_insert_with(|| {
                Arc::new(Slot {
                    state: tokio::sync::Mutex::new(State::Empty),
                    last_used: Mutex::new(Instant::now()),
                    discovered: tokio::sync::Mutex::new(None),
                })
            })
            .clone();
        slot.touch();
        slot
    }

    /// Drop the slots (and connections) of every key starting with
    /// `prefix`, e.g. `"{workspace}/{server id}/"` when a server is changed
    /// or deleted. Calls in flight finish on the connection they hold.
    pub fn evict(&self, prefix: &str) {
        self.lock().by_key.retain(|k, _| !k.starts_with(prefix));
    }

    /// Drop slots unused for the idle TTL now (the pool also does it as it
    /// is used).
    pub fn sweep_idle(&self) {
        let ttl = self.idle_ttl;
        let mut slots = self.lock();
        slots.last_sweep = Instant::now();
        slots
            .by_key
            .retain(|_, s| Arc::strong_count(s) > 1 || s.idle_for() < ttl);
    }

    /// The keys that have a slot, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.lock().by_key.keys().cloned().collect();
        keys.sort();
        keys
    }

    /// The tools of the server behind `key`, listed on its pooled
    /// connection (opened if needed); a listing younger than
    /// [`DISCOVERY_INTERVAL`] is answered again instead.
    pub async fn tools(
        &self,
        connector: &McpConnector,
        key: &str,
        transport: &McpTransport,
        headers: &ResolvedHeaders,
    ) -> Result<Vec<McpToolInfo>, McpError> {
        let slot = self.slot(key);
        let mut discovered = slot.discovered.lock().await;
        if let Some((at, tools)) = &*discovered
            && at.elapsed() < DISCOVERY_INTERVAL
        {
            return Ok(tools.clone());
        }
        let conn = self
            .connection(&slot, connector, transport, headers, None)
            .await?;
        let listed = tokio::time::timeout(connector.timeout, conn.service.list_all_tools()).await;
        slot.touch();
        let tools = match listed {
            Ok(Ok(tools)) => tool_infos(tools),
            Ok(Err(e)) => {
                slot.forget(&conn).await;
                return Err(McpError::Protocol(describe(&e)));
            }
            Err(_) => {
                slot.forget(&conn).await;
                return Err(McpError::Timeout(connector.timeout));
            }
        };
        *discovered = Some((Instant::now(), tools.clone()));
        Ok(tools)
    }

    /// The slot's connection, opened if it has none, the one it has is
    /// `stale`, or that one's transport has closed. Only this key waits.
    async fn connection(
        &self,
        slot: &Slot,
        connector: &McpConnector,
        transport: &McpTransport,
        headers: &ResolvedHeaders,
        stale: Option<&Arc<Pooled>>,
    ) -> Result<Arc<Pooled>, McpError> {
        let mut state = slot.state.lock().await;
        let previous_backoff = match &*state {
            State::Ready(c)
                if !stale.is_some_and(|s| Arc::ptr_eq(s, c))
                    && !c.service.is_transport_closed() =>
            {
                return Ok(c.clone());
            }
            State::Failed {
                reason,
                until,
                backoff,
            } => {
                let now = Instant::now();
                if now < *until {
                    return Err(McpError::BackingOff {
                        reason: reason.clone(),
                        retry_in: *until - now,
                    });
                }
                Some(*backoff)
            }
            _ => None,
        };
        *state = State::Empty;
        let opened = tokio::time::timeout(connector.timeout, open(connector, transport, headers))
            .await
            .unwrap_or(Err(McpError::Timeout(connector.timeout)));
        match opened {
            Ok(pooled) => {
                let pooled = Arc::new(pooled);
                *state = State::Ready(pooled.clone());
                Ok(pooled)
            }
            Err(e) => {
                let backoff = next_backoff(previous_backoff);
                *state = State::Failed {
                    reason: e.to_string(),
                    until: Instant::now() + backoff,
                    backoff,
                };
                Err(e)
            }
        }
    }

    /// Call a remote tool; refuses when its schema changed since it was
    /// pinned. Sent at most once (see the module's notes).
    pub async fn call(
        &self,
        connector: &McpConnector,
        call: McpCall<'_>,
    ) -> Result<Value, McpError> {
        self.call_with_images(connector, call)
            .await
            .map(|o| o.value)
    }

    /// [`Self::call`], with the images the result carries.
    pub async fn call_with_images(
        &self,
        connector: &McpConnector,
        call: McpCall<'_>,
    ) -> Result<McpOutput, McpError> {
        let slot = self.slot(call.key);
        let mut stale: Option<Arc<Pooled>> = None;
        loop {
            let conn = self
                .connection(
                    &slot,
                    connector,
                    call.transport,
                    call.headers,
                    stale.as_ref(),
                )
                .await?;
            let Some(remote) = conn.tools.iter().find(|t| t.name == call.tool) else {
                return Err(McpError::ToolGone(call.tool.to_owned()));
            };
            if &remote.input_schema != call.pinned_schema {
                return Err(McpError::SchemaChanged {
                    tool: call.tool.to_owned(),
                    changes: rtc_core::schema_changes::schema_changes(
                        call.pinned_schema,
                        &remote.input_schema,
                    ),
                });
            }
            let params = rmcp::model::CallToolRequestParams::new(call.tool.to_owned())
                .with_arguments(call.arguments.clone());
            // At the deadline the server is told the call is cancelled
            // (rmcp's guard, or its request timeout with progress).
            let outcome = match call.progress.clone() {
                None => tokio::time::timeout(call.timeout, conn.service.call_tool(params))
                    .await
                    .ok(),
                Some(sink) => {
                    super::progress::call_with_progress(
                        &conn.service,
                        &conn.abandoned,
                        params,
                        call.timeout,
                        sink,
                    )
                    .await
                }
            };
            slot.touch();
            match outcome {
                None => {
                    // The connection may be dead (e.g. the server
                    // restarted): the next call opens a new one. This call
                    // is not retried, as the tool may have run.
                    slot.forget(&conn).await;
                    return Err(McpError::Timeout(call.timeout));
                }
                Some(Ok(result)) => {
                    return tool_result(&result, MAX_RESULT_BYTES, remote.output_schema.as_ref());
                }
                Some(Err(e)) if stale.is_none() && never_sent(&e) => {
                    tracing::warn!(error = %describe(&e), "MCP request not sent; reconnecting");
                    stale = Some(conn);
                }
                Some(Err(e)) => {
                    if !matches!(e, rmcp::ServiceError::McpError(_)) {
                        slot.forget(&conn).await;
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
async fn open(
    connector: &McpConnector,
    transport: &McpTransport,
    headers: &ResolvedHeaders,
) -> Result<Pooled, McpError> {
    let service = connector.connect(transport, headers).await?;
    let tools = service
        .list_all_tools()
        .await
        .map(tool_infos)
        .map_err(|e| McpError::Protocol(describe(&e)))?;
    Ok(Pooled {
        service,
        tools,
        abandoned: Mutex::default(),
    })
}

/// A tool result as JSON: the structured content if given (checked
/// against the tool's `outputSchema`, if it declares one), else its content
/// as text (see [`content_text`]); refused when its JSON is over `limit`
/// bytes.
fn tool_result(
    result: &rmcp::model::CallToolResult,
    limit: usize,
    output_schema: Option<&Value>,
) -> Result<McpOutput, McpError> {
    let value = serde_json::to_value(result).map_err(|e| McpError::Protocol(e.to_string()))?;
    let size = json_len(&value);
    if size > limit {
        return Err(McpError::TooLarge { size, limit });
    }
    let parts: Vec<String> = value
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(content_text)
        .collect();
    let text = parts.join("\n");
    let images = content_images(&value);
    if value
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false)
    {
        return Err(McpError::ToolFailed(text));
    }
    if let Some(structured) = value.get("structuredContent").filter(|v| !v.is_null()) {
        if let Some(schema) = output_schema {
            check_output(schema, structured)?;
        }
        return Ok(McpOutput {
            value: structured.clone(),
            images,
        });
    }
    // One text item may be JSON; several items read as text.
    let value = match parts.as_slice() {
        [only] => serde_json::from_str(only).unwrap_or(Value::String(text)),
        _ => Value::String(text),
    };
    Ok(McpOutput { value, images })
}

/// What a tool call gave: its result, and the images among its content
/// (at most [`MAX_IMAGES`], as `(media type, base64 data)`), for models
/// that see images.
#[derive(Debug, Clone, PartialEq)]
pub struct McpOutput {
    pub value: Value,
    pub images: Vec<(String, String)>,
}

/// Images of one result passed on; the rest are only described.
pub const MAX_IMAGES: usize = 4;

fn content_images(value: &Value) -> Vec<(String, String)> {
    value
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c.get("type").and_then(Value::as_str) == Some("image"))
        .filter_map(|c| {
            let mime = c.get("mimeType").and_then(Value::as_str)?;
            let data = c.get("data").and_then(Value::as_str)?;
            Some((mime.to_owned(), data.to_owned()))
        })
        .take(MAX_IMAGES)
        .collect()
}

/// A structured result against the tool's `outputSchema`: what the MCP
/// specification asks of clients. A schema that does not compile is not
/// held against the result.
fn check_output(schema: &Value, structured: &Value) -> Result<(), McpError> {
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(error = %e, "an MCP tool's outputSchema does not compile");
            return Ok(());
        }
    };
    match validator.iter_errors(structured).next() {
        None => Ok(()),
        Some(e) => Err(McpError::Protocol(format!(
            "the tool's structured result does not match its outputSchema at `{}`: {e}",
            e.instance_path()
        ))),
    }
}

/// One content item as the model reads it: text as it is; a text resource
/// inlined under its URI; an image, audio or binary resource described by
/// its type and size (its base64 would only fill the context); a resource
/// link by its name and URI. `None` for an item of an unknown type.
pub(crate) fn content_text(item: &Value) -> Option<String> {
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let kind = item.get("type").and_then(Value::as_str)?;
    match kind {
        "text" => field(item, "text"),
        "image" | "audio" => {
            let mime = field(item, "mimeType").unwrap_or_else(|| "unknown type".to_owned());
            let size = field(item, "data").map_or(0, |d| base64_bytes(&d));
            Some(format!("[{kind}: {mime}, {}]", human_size(size)))
        }
        "resource" => {
            let r = item.get("resource")?;
            let uri = field(r, "uri").unwrap_or_default();
            match field(r, "text") {
                Some(text) => Some(format!("[resource {uri}]\n{text}")),
                None => {
                    let mime = field(r, "mimeType").unwrap_or_else(|| "unknown type".to_owned());
                    let size = field(r, "blob").map_or(0, |b| base64_bytes(&b));
                    Some(format!("[resource {uri}: {mime}, {}]", human_size(size)))
                }
            }
        }
        "resource_link" => {
            let uri = field(item, "uri").unwrap_or_default();
            let name = field(item, "name").unwrap_or_else(|| uri.clone());
            Some(format!("[resource link: {name} <{uri}>]"))
        }
        _ => None,
    }
}

/// How many bytes a base64 text decodes to.
fn base64_bytes(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

/// `812 bytes`, `12.3 KB`, `4.0 MB`.
fn human_size(bytes: usize) -> String {
    match bytes {
        0..1024 => format!("{bytes} bytes"),
        1024..1_048_576 => format!("{:.1} KB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MB", bytes as f64 / 1_048_576.0),
    }
}

/// The length of `value` as compact JSON, counted without building it.
fn json_len(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing to a counter cannot fail.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

#[cfg(test)]
#[path = "pool_tests.rs"]
mod tests;
