//! The client-tool broker (R-CT-1..4): which connected clients support
//! which functions, and the calls waiting for their results.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::events::EventLog;

/// A client's answer to a call: its result, or its error.
pub type ClientReply = Result<Value, ClientError>;

/// A client tool's error, as the client worded it (or the broker, for a
/// client that left before answering).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ClientError(pub String);

/// The connection of calls sent to a client on another instance (local
/// connections are numbered from 1).
pub const REMOTE: u64 = 0;

struct Pending {
    connection: u64,
    reply: oneshot::Sender<ClientReply>,
}

#[derive(Default)]
pub struct Broker {
    next_id: AtomicU64,
    clients: Mutex<HashMap<u64, HashMap<String, Option<String>>>>,
    pending: Mutex<HashMap<String, Pending>>,
}

/// One call of a client function (R-CT-3, R-BX-9).
pub struct ClientCall<'a> {
    pub call_id: &'a str,
    pub function: &'a str,
    pub arguments: Value,
    pub wait: bool,
    pub timeout: Duration,
    /// Hash of the tool's parameter schema, compared with the client's.
    pub schema_hash: &'a str,
}

/// The hash a client declares for a function (R-BX-9): SHA-256, hex, of
/// the parameter schema as compact JSON with object keys sorted.
pub fn schema_hash(schema: &Value) -> String {
    use sha2::{Digest, Sha256};
    fn canonical(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), canonical(&m[k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
            other => other.clone(),
        }
    }
    Sha256::digest(canonical(schema).to_string().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// How a client call ended.
pub enum ClientOutcome {
    Result(Value),
    Error(String),
}

impl Broker {
    /// A new connection with no declared functions yet.
    pub fn connect(&self) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        self.clients.lock().insert(id, HashMap::new());
        id
    }

    /// The functions a connection supports, each with an optional schema
    /// hash (replaces earlier declarations).
    pub fn declare(&self, connection: u64, functions: Vec<(String, Option<String>)>) {
        self.clients
            .lock()
            .insert(connection, functions.into_iter().collect());
    }

    /// The connection is gone: its waiting calls fail at once (R-CT-4).
    pub fn disconnect(&self, connection: u64) {
        self.clients.lock().remove(&connection);
        let failed: Vec<Pending> = {
            let mut p = self.pending.lock();
            let ids: Vec<String> = p
                .iter()
                .filter(|(_, v)| v.connection == connection)
                .map(|(k, _)| k.clone())
                .collect();
            ids.into_iter().filter_map(|id| p.remove(&id)).collect()
        };
        for f in failed {
            let _ = f.reply.send(Err(ClientError(
                "the client disconnected before answering".to_owned(),
            )));
        }
    }

    /// A result from the client; `false` if no call waits under that id.
    pub fn resolve(&self, call_id: &str, reply: ClientReply) -> bool {
        let pending = self.pending.lock().remove(call_id);
        match pending {
            Some(p) => p.reply.send(reply).is_ok(),
            None => false,
        }
    }

    /// Whether some client connected to this process declared `function`.
    pub fn supports(&self, function: &str) -> bool {
        self.connection_for(function).is_some()
    }

    /// Whether the waiting call `call_id` is sent through another
    /// instance (see `remote_clients.rs`).
    pub fn waits_remotely(&self, call_id: &str) -> bool {
        self.pending
            .lock()
            .get(call_id)
            .is_some_and(|c| c.connection == REMOTE)
    }

    /// The first connection declaring `function`, with the hash it declared.
    fn connection_for(&self, function: &str) -> Option<(u64, Option<String>)> {
        let clients = self.clients.lock();
        clients
            .iter()
            .filter_map(|(id, f)| f.get(function).map(|h| (*id, h.clone())))
            .min_by_key(|(id, _)| *id)
    }

    /// Ask a client connected to this process to run `function`. Fails at
    /// once when none declared it (R-CT-2).
    pub async fn call(&self, events: &EventLog, call: ClientCall<'_>) -> ClientOutcome {
        let Some((connection, declared)) = self.connection_for(call.function) else {
            return ClientOutcome::Error(format!(
                "no connected client supports `{}`; the user's app cannot do this right now",
                call.function
            ));
        };
        self.call_via(events, call, connection, declared).await
    }

    /// [`Self::call`] through `connection` ([`REMOTE`]: a client on
    /// another instance, whose reply is resolved here by call id), which
    /// declared the function with hash `declared`.
    pub async fn call_via(
        &self,
        events: &EventLog,
        call: ClientCall<'_>,
        connection: u64,
        declared: Option<String>,
    ) -> ClientOutcome {
        let ClientCall {
            call_id,
            function,
            arguments,
            wait,
            timeout,
            schema_hash,
        } = call;
        if let Some(declared) = declared.filter(|d| d != schema_hash) {
            return ClientOutcome::Error(format!(
                "the connected client implements `{function}` with another parameter schema (hash {declared}, expected {schema_hash}); update the app or the tool"
            ));
        }
        let rx = if wait {
            let (tx, rx) = oneshot::channel();
            {
                let mut p = self.pending.lock();
                p.insert(
                    call_id.to_owned(),
                    Pending {
                        connection,
                        reply: tx,
                    },
                );
            }
            Some(rx)
        } else {
            None
        };
        let event = rtc_protocol::ClientToolCall {
            call_id: call_id.to_owned(),
            function_name: function.to_owned(),
            arguments,
            wait_for_response: wait,
        };
        if let Err(e) = events.emit(event.into()).await {
            self.resolve(call_id, Err(ClientError(String::new())));
            return ClientOutcome::Error(format!("the call could not be delivered: {e}"));
        }
        let Some(rx) = rx else {
            return ClientOutcome::Result(
                json!({"status": "sent", "note": "the client does not report a result for this function"}),
            );
        };
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Ok(v))) => ClientOutcome::Result(v),
            Ok(Ok(Err(ClientError(e)))) => ClientOutcome::Error(e),
            Ok(Err(_)) => ClientOutcome::Error("the call was abandoned".to_owned()),
            Err(_) => {
                self.pending.lock().remove(call_id);
                ClientOutcome::Error(format!(
                    "the client did not answer within {} ms",
                    timeout.as_millis()
                ))
            }
        }
    }
}

#[cfg(test)]
mod hash_tests {
    /// The same vector is asserted by the JS SDK's tests (`sdk/js/test`).
    #[test]
    fn the_schema_hash_is_sha256_of_sorted_compact_json() {
        let schema = serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}, "zoom": {"type": "integer", "minimum": 1}}, "required": ["city"]});
        assert_eq!(
            super::schema_hash(&schema),
            "fc83dbab2f49fe0aedde8461e43882aa13f86c0974ba48c1587d26d4e70b8094"
        );
    }
}
