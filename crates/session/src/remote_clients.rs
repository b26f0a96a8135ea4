//! Client tools across instances (R-ST-2, R-CT-1..4). On PostgreSQL the
//! host's WebSocket may be on another instance than the turn calling its
//! function:
//!
//! - each connection's declaration is a row (`client_connections`) naming
//!   the instance holding the socket, written in order by one writer task
//!   and heartbeated every [`HEARTBEAT`]; a row unseen for [`FRESH`] is a
//!   dead instance's;
//! - a turn finding no local client looks the rows up: none anywhere is
//!   the same immediate error as on one instance; otherwise the call is
//!   recorded (`client_calls`, naming the waiting instance) and its
//!   `client_tool.call` event reaches the host through the other
//!   instance's live subscription;
//! - the host's `client_tool.result` arrives where the socket is: the reply
//!   is written into the call's row and the waiting instance is notified
//!   ([`ControlOp::ClientReply`]); a closed connection is announced to all
//!   ([`ControlOp::ClientGone`]) and fails its waiting calls at once, as
//!   does a connection whose instance stopped heartbeating.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rtc_store::{ClientConnectionRow, ControlOp, DeclaredFunctions, now_millis};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use rtc_store::Store;

use crate::RuntimeError;
use crate::broker::{ClientCall, ClientError, ClientOutcome, ClientReply, REMOTE};
use crate::cluster::millis;
use crate::context::SessionCtx;
use crate::kernel::{Contexts, Host};

/// How often an instance tells its connections are open.
const HEARTBEAT: Duration = Duration::from_secs(2);
/// A connection row older than this belongs to an instance that stopped.
const FRESH: Duration = Duration::from_secs(6);
/// What a waiting call answers when its client is gone.
const DISCONNECTED: &str = "the client disconnected before answering";

/// A call waiting for a client on another instance, by (session, call
/// id): the connection it was sent to.
type RemoteCalls = HashMap<(String, String), String>;

/// One change of this instance's connection rows.
enum RowOp {
    Put(ClientConnectionRow),
    Remove(String),
}

/// This instance's connection rows and the calls it routed elsewhere.
pub struct RemoteClients {
    store: Store,
    /// The kernel's live contexts, where a waiting call's session is.
    contexts: Arc<Contexts>,
    /// This instance's id.
    me: String,
    /// The writer of connection rows (shared stores only).
    rows: std::sync::OnceLock<mpsc::UnboundedSender<RowOp>>,
    calls: parking_lot::Mutex<RemoteCalls>,
}

impl RemoteClients {
    pub(crate) fn new(store: Store, contexts: Arc<Contexts>, me: String) -> Self {
        Self {
            store,
            contexts,
            me,
            rows: std::sync::OnceLock::new(),
            calls: parking_lot::Mutex::default(),
        }
    }

    /// Connection `key` of `session` declared `functions`; `hosts_turns`
    /// when the session's turns must run where it is (a voice host).
    pub fn declared(
        &self,
        key: &str,
        session: &str,
        functions: DeclaredFunctions,
        hosts_turns: bool,
    ) {
        if let Some(rows) = self.rows.get() {
            let _ = rows.send(RowOp::Put(ClientConnectionRow {
                id: key.to_owned(),
                session_id: session.to_owned(),
                instance: self.me.clone(),
                functions,
                seen_at: now_millis(),
                hosts_turns,
            }));
        }
    }

    /// The other instance the turns of `session` must run on: where a
    /// connection that hosts them is (shared stores only).
    pub async fn turn_host_elsewhere(&self, session: &str) -> Result<Option<String>, RuntimeError> {
        if !self.store.allows_several_instances() {
            return Ok(None);
        }
        let rows = self
            .store
            .client_connections(session, fresh_since())
            .await?;
        if rows.iter().any(|r| r.hosts_turns && r.instance == self.me) {
            return Ok(None);
        }
        Ok(rows.into_iter().find(|r| r.hosts_turns).map(|r| r.instance))
    }

    /// Connection `key` closed.
    pub fn closed(&self, key: &str) {
        if let Some(rows) = self.rows.get() {
            let _ = rows.send(RowOp::Remove(key.to_owned()));
        }
    }

    /// The waiting calls (all, or those sent to `connection`).
    fn waiting(&self, connection: Option<&str>) -> Vec<((String, String), String)> {
        self.calls
            .lock()
            .iter()
            .filter(|(_, c)| connection.is_none_or(|k| *c == k))
            .map(|(key, c)| (key.clone(), c.clone()))
            .collect()
    }

    /// Run a client function for `ctx`'s turn: on a client connected here,
    /// else (shared stores) on one connected to another instance.
    pub async fn call(&self, ctx: &SessionCtx, call: ClientCall<'_>) -> ClientOutcome {
        if !self.store.allows_several_instances() || ctx.broker.supports(call.function) {
            return ctx.broker.call(&ctx.events, call).await;
        }
        let me = self.me.as_str();
        let rows = match self.store.client_connections(&ctx.id, fresh_since()).await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(session = %ctx.id, error = %e, "looking up client connections failed");
                return ClientOutcome::Error("the call could not be delivered".to_owned());
            }
        };
        let found = rows.into_iter().find_map(|r| {
            let declared = r.functions.get(call.function).cloned()?;
            (r.instance != me).then_some((r, declared))
        });
        let Some((row, declared)) = found else {
            // No client anywhere: the usual immediate error.
            return ctx.broker.call(&ctx.events, call).await;
        };
        let call_id = call.call_id.to_owned();
        if call.wait {
            if let Err(e) = self
                .store
                .insert_client_call(&call_id, &ctx.id, me, &row.id, now_millis())
                .await
            {
                tracing::warn!(session = %ctx.id, error = %e, "recording a client call failed");
                return ClientOutcome::Error("the call could not be delivered".to_owned());
            }
            self.calls
                .lock()
                .insert((ctx.id.clone(), call_id.clone()), row.id.clone());
        }
        let wait = call.wait;
        let outcome = ctx
            .broker
            .call_via(&ctx.events, call, REMOTE, declared)
            .await;
        if wait {
            self.calls.lock().remove(&(ctx.id.clone(), call_id.clone()));
            if let Err(e) = self.store.remove_client_call(&ctx.id, &call_id).await {
                tracing::warn!(call_id, error = %e, "removing a client call failed");
            }
        }
        outcome
    }

    /// A host's reply to a call no turn of this process waits for: on a
    /// shared store, stored for the instance waiting for it, which is
    /// told. `false` when no call of `session` waits under that id.
    pub async fn forward_reply(
        &self,
        session: &str,
        call_id: &str,
        reply: ClientReply,
    ) -> Result<bool, RuntimeError> {
        if !self.store.allows_several_instances() {
            return Ok(false);
        }
        let stored = match reply {
            Ok(v) => json!({"result": v}),
            Err(ClientError(e)) => json!({"error": e}),
        };
        let Some(waiter) = self
            .store
            .answer_client_call(call_id, session, &stored)
            .await?
        else {
            return Ok(false);
        };
        self.store
            .send_control(
                &waiter,
                ControlOp::ClientReply,
                &format!("{session} {call_id}"),
            )
            .await?;
        Ok(true)
    }

    /// The reply to a call this process routed elsewhere arrived
    /// (`argument`: "<session> <call id>"), or may have (a notification
    /// lost while the listener reconnected).
    pub async fn reply_arrived(&self, argument: &str) {
        let Some((session, call_id)) = argument.split_once(' ') else {
            return;
        };
        let key = (session.to_owned(), call_id.to_owned());
        if !self.calls.lock().contains_key(&key) {
            return;
        }
        let stored = match self.store.take_client_reply(session, call_id).await {
            Ok(Some(stored)) => stored,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(call_id, error = %e, "reading a client reply failed");
                return;
            }
        };
        let reply = match stored.get("error").and_then(Value::as_str) {
            Some(e) => Err(ClientError(e.to_owned())),
            None => Ok(stored.get("result").cloned().unwrap_or(Value::Null)),
        };
        self.resolve_remote(session, call_id, reply);
    }

    /// Connection `key` (on some instance) closed, or its instance
    /// stopped: the calls waiting on it fail at once (R-CT-4).
    pub fn gone(&self, key: &str) {
        for ((session, call_id), _) in self.waiting(Some(key)) {
            self.resolve_remote(
                &session,
                &call_id,
                Err(ClientError(DISCONNECTED.to_owned())),
            );
        }
    }

    fn resolve_remote(&self, session: &str, call_id: &str, reply: ClientReply) {
        let ctx = self.contexts.lock().get(session).cloned();
        if let Some(ctx) = ctx
            && ctx.broker.waits_remotely(call_id)
        {
            ctx.broker.resolve(call_id, reply);
        }
    }

    /// At startup: rows left by this instance's earlier run, and by
    /// instances long gone, are removed.
    pub async fn forget_stale(&self) -> Result<(), RuntimeError> {
        self.store
            .remove_stale_client_connections(&self.me, now_millis() - millis(FRESH) * 10)
            .await?;
        Ok(())
    }
}

fn fresh_since() -> i64 {
    now_millis() - millis(FRESH)
}

/// On a shared store: the writer of this instance's connection rows (in
/// the order connections declare and close) and their heartbeat, which
/// also fails calls waiting on a connection whose instance stopped.
pub(crate) fn spawn_client_rows<H: Host>(inner: &Arc<H>) {
    if !inner.store.allows_several_instances() {
        return;
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    if inner.remote_clients.rows.set(tx).is_err() {
        return;
    }
    let store = inner.store.clone();
    inner.background.spawn(async move {
        while let Some(op) = rx.recv().await {
            let done = match &op {
                RowOp::Put(row) => store.put_client_connection(row).await,
                RowOp::Remove(key) => match store.remove_client_connection(key).await {
                    Ok(()) => store.send_control("*", ControlOp::ClientGone, key).await,
                    Err(e) => Err(e),
                },
            };
            if let Err(e) = done {
                tracing::warn!(error = %e, "writing a client connection row failed");
            }
        }
    });
    crate::background::spawn_every(inner, HEARTBEAT, |inner| async move {
        let clients = &inner.remote_clients;
        if let Err(e) = clients
            .store
            .heartbeat_client_connections(&clients.me, now_millis())
            .await
        {
            tracing::warn!(error = %e, "heartbeating client connections failed");
        }
        let waiting = clients.waiting(None);
        let mut connections: Vec<&String> = waiting.iter().map(|(_, c)| c).collect();
        connections.sort_unstable();
        connections.dedup();
        for key in connections {
            if let Ok(false) = clients
                .store
                .client_connection_open(key, fresh_since())
                .await
            {
                clients.gone(key);
            }
        }
        // A reply whose notification was lost is found here.
        for ((session, call_id), _) in &waiting {
            clients.reply_arrived(&format!("{session} {call_id}")).await;
        }
    });
}
