//! The kernel's live session contexts (the types are in `context.rs`):
//! loading a context from its row with every feature's state, holding and
//! evicting them, reloading what another instance wrote, and the client
//! connections hosts open.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use rtc_protocol::Assistant;
use rtc_store::{SessionRecord, now_millis};

use crate::RuntimeError;
use crate::broker::Broker;
use crate::context::{ParentLink, SessionConfig, SessionCtx, SessionState};
use crate::events::EventLog;
use crate::extensions::Extensions;
use crate::kernel::{Host, Kernel};
use crate::remote_clients::RemoteClients;

impl<H: Host> Kernel<H> {
    /// Whether the runtime may give the model a turn by itself (a goal, a
    /// loop tick, an inbox delivery): the session is open and no feature
    /// waits on someone (an askUser question, awaited sub-agents).
    pub fn can_continue(&self, ctx: &SessionCtx, state: &SessionState) -> bool {
        state.is_open() && !self.features.iter().any(|f| f.holds_turns(ctx))
    }

    /// The assistant a turn of `ctx` starting now runs: a feature's (a
    /// workflow's current stage, or the assistant it transferred to), else
    /// the session's.
    pub fn turn_assistant(&self, ctx: &SessionCtx) -> Arc<Assistant> {
        self.features
            .iter()
            .find_map(|f| f.turn_assistant(ctx))
            .unwrap_or_else(|| ctx.assistant.clone())
    }

    /// Where the history the model sees starts: a feature may cut it (a
    /// transfer with `history: none`), else at the beginning.
    pub fn history_from(&self, ctx: &SessionCtx) -> usize {
        self.features
            .iter()
            .find_map(|f| f.history_from(ctx))
            .unwrap_or(0)
    }

    /// [`Self::can_continue`], reading the session's state.
    pub async fn may_continue(&self, ctx: &SessionCtx) -> bool {
        let state = ctx.state.lock().await;
        self.can_continue(ctx, &state)
    }

    /// The live context of a session, loaded from the store on first use.
    pub async fn session(&self, id: &str) -> Result<Arc<SessionCtx>, RuntimeError> {
        let known = self.sessions.lock().get(id).cloned();
        if let Some(ctx) = known {
            ctx.last_used.store(now_millis(), Ordering::Relaxed);
            return Ok(ctx);
        }
        let record = self
            .store
            .session_by_id(id)
            .await?
            .ok_or_else(|| RuntimeError::not_found("session", id))?;
        let parent = record.parent_id.as_ref().map(|parent_id| ParentLink {
            parent_id: parent_id.clone(),
            title: record.title.clone().unwrap_or_default(),
        });
        let extensions = self.load_features(&record, false).await?;
        self.hold(record, parent, extensions, false)
    }

    /// Every feature's per-session state for a context built from `record`.
    async fn load_features(
        &self,
        record: &SessionRecord,
        fresh: bool,
    ) -> Result<Extensions, RuntimeError> {
        let mut extensions = Extensions::default();
        let host = self.host();
        for feature in &self.features {
            feature.load(&host, record, fresh, &mut extensions).await?;
        }
        Ok(extensions)
    }

    /// The context of a top-level session just created from `record`
    /// (nothing to read: it has no parent and awaits nothing yet).
    pub async fn hold_created(
        &self,
        record: SessionRecord,
    ) -> Result<Arc<SessionCtx>, RuntimeError> {
        let extensions = self.load_features(&record, true).await?;
        self.hold(record, None, extensions, true)
    }

    /// Build the context of a stored session and keep it in the map (or
    /// give the one another caller put there first). `created`: this
    /// instance has just created it, so nothing but its row is stored.
    fn hold(
        &self,
        record: SessionRecord,
        parent: Option<ParentLink>,
        extensions: Extensions,
        created: bool,
    ) -> Result<Arc<SessionCtx>, RuntimeError> {
        let id = record.id.as_str();
        let shared = self.configs.get_or_parse(record.config, |text| {
            let config: SessionConfig = serde_json::from_str(text)
                .map_err(|e| RuntimeError::Internal(format!("session config: {e}")))?;
            let mut derived = Extensions::default();
            for feature in &self.features {
                feature.config_parsed(&config, &mut derived)?;
            }
            Ok::<_, RuntimeError>((config, derived))
        })?;
        let test_mode = shared.config.test.is_some();
        let ctx = Arc::new(SessionCtx {
            id: record.id.clone(),
            workspace: record.workspace_id.clone(),
            root_id: record.root_id.clone(),
            parent,
            user_id: record.user_id.clone(),
            assistant_id: record.assistant_id.clone(),
            assistant: shared.assistant,
            derived: shared.derived,
            config: shared.config,
            state: tokio::sync::Mutex::new(SessionState {
                variables: record.variables.clone(),
                status: record.status,
                ending: None,
                scripted_calls: BTreeMap::new(),
            }),
            events: EventLog::new(id, test_mode, self.store.clone(), self.journal.clone()),
            broker: Broker::default(),
            turn: tokio::sync::Mutex::new(None),
            // A session just created has no stored messages: its history
            // starts empty in memory instead of being read at its first turn.
            history: tokio::sync::Mutex::new(created.then(Vec::new)),
            history_bytes: std::sync::atomic::AtomicU64::new(if created {
                0
            } else {
                crate::history::UNKNOWN_SIZE
            }),
            last_used: AtomicI64::new(now_millis()),
            turn_tokens: AtomicI64::new(0),
            turns_finished: tokio::sync::watch::Sender::new(0),
            user_turns_pending: std::sync::atomic::AtomicUsize::new(0),
            stale: AtomicBool::new(false),
            extensions: parking_lot::Mutex::new(extensions),
        });
        let mut map = self.sessions.lock();
        Ok(map.entry(id.to_owned()).or_insert(ctx).clone())
    }

    /// Drop the in-memory context of an ended session; it is loaded again
    /// from the store if needed.
    pub fn forget(&self, id: &str) {
        self.sessions.lock().remove(id);
    }

    /// Drop contexts unused since `now - ttl` that nothing holds: no
    /// running turn, no client connection, no request in flight (only the
    /// map holds the `Arc`; new holders need the map's lock) and no live
    /// subscriber (it would miss the events of a reloaded context).
    pub fn evict_idle(&self, now: i64) -> usize {
        let ttl = i64::try_from(self.settings.idle_session_ttl.as_millis()).unwrap_or(i64::MAX);
        let mut map = self.sessions.lock();
        let before = map.len();
        map.retain(|_, ctx| {
            let idle = now.saturating_sub(ctx.last_used.load(Ordering::Relaxed)) >= ttl;
            !(idle && Arc::strong_count(ctx) == 1 && ctx.events.subscribers() == 0)
        });
        before - map.len()
    }

    /// On PostgreSQL another instance may have written this session (a
    /// request that reached it, a loop tick it claimed): when it was
    /// notified of such a write, or the store holds another number of
    /// messages than memory, the cached history is dropped and the
    /// session's state reloaded.
    pub async fn refresh_if_stale(&self, ctx: &SessionCtx) -> Result<(), RuntimeError> {
        self.refresh(ctx, false).await
    }

    /// [`Self::refresh_if_stale`]; `state` reloads the session's state
    /// (status, pending question, variables…, one row) even when nothing
    /// says it changed.
    pub async fn refresh(&self, ctx: &SessionCtx, state: bool) -> Result<(), RuntimeError> {
        if !self.store.allows_several_instances() {
            return Ok(());
        }
        // Under the history lock, so no local append falls between the
        // flush and the count (which would look like another instance's).
        let mut history = ctx.history.lock().await;
        self.journal.flush().await;
        let notified = ctx.stale.swap(false, Ordering::SeqCst);
        let stored = self.store.message_count(&ctx.id).await?;
        let cached = history
            .as_ref()
            .map(|h| i64::try_from(h.len()).unwrap_or(i64::MAX));
        let moved = notified || cached.is_some_and(|n| n != stored);
        // Asked to reload the state: only when another instance may have
        // changed it (it ran the session last), since this instance's own
        // state can be ahead of what its journal has written.
        let foreign = state
            && !moved
            && self
                .store
                .turn_owner(&ctx.id)
                .await?
                .is_some_and(|o| o != self.settings.cluster.instance);
        if !moved && !foreign {
            return Ok(());
        }
        if moved {
            *history = None;
            ctx.history_bytes
                .store(crate::history::UNKNOWN_SIZE, Ordering::SeqCst);
            // Another instance may have compacted the context meanwhile.
            ctx.ext(crate::compaction::ContextMemory::forget_summary);
        }
        if let Some(record) = self.store.session_by_id(&ctx.id).await? {
            let mut state = ctx.state.lock().await;
            {
                let mut extensions = ctx.extensions.lock();
                for feature in &self.features {
                    feature.reload(&record, &mut extensions);
                }
            }
            state.variables = record.variables;
            state.status = record.status;
        }
        Ok(())
    }

    /// A client connection for client tools (R-CT-1) to `ctx`.
    pub fn connect_client(&self, ctx: Arc<SessionCtx>) -> ClientConnection {
        ClientConnection {
            id: ctx.broker.connect(),
            ctx,
            key: rtc_store::new_id("conn"),
            clients: self.remote_clients.clone(),
        }
    }

    /// A session of `workspace` (404 for another workspace's).
    pub async fn session_in(
        &self,
        workspace: &str,
        id: &str,
    ) -> Result<Arc<SessionCtx>, RuntimeError> {
        let ctx = self.session(id).await?;
        if ctx.workspace != workspace {
            return Err(RuntimeError::not_found("session", id));
        }
        // A request may follow one another instance answered.
        self.refresh_if_stale(&ctx).await?;
        Ok(ctx)
    }
}

/// Evict idle contexts every so often, until the host is dropped.
pub(crate) fn spawn_sweeper<H: Host>(inner: &Arc<H>) {
    let period = (inner.settings.idle_session_ttl / 2)
        .clamp(Duration::from_secs(1), Duration::from_secs(60));
    crate::background::spawn_every(inner, period, |inner| async move {
        let dropped = inner.evict_idle(now_millis());
        if dropped > 0 {
            tracing::debug!(dropped, "evicted idle session contexts");
        }
    });
}

/// On PostgreSQL: when another instance commits events of a session this
/// instance holds, its live subscribers re-read them from the store
/// (R-ST-2). Reconnects when the listening connection fails.
pub(crate) fn spawn_listener<H: Host>(inner: &Arc<H>) {
    let weak: Weak<H> = Arc::downgrade(inner);
    let store = inner.store.clone();
    let me = inner.settings.cluster.instance.clone();
    inner.background.spawn(async move {
        use futures::StreamExt;
        loop {
            match store.session_writes().await {
                Ok(None) => return,
                Ok(Some(stream)) => {
                    let mut stream = std::pin::pin!(stream);
                    while let Some(write) = stream.next().await {
                        if write.instance == me {
                            continue;
                        }
                        let Some(inner) = weak.upgrade() else { return };
                        let ctx = inner.sessions.lock().get(&write.session).cloned();
                        if let Some(ctx) = ctx {
                            ctx.stale.store(true, Ordering::SeqCst);
                            ctx.events.poke();
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "listening for other instances' events failed")
                }
            }
            if weak.strong_count() == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
}

/// One client connection (a WebSocket) to a session: declares functions,
/// answers calls; dropping it disconnects.
pub struct ClientConnection {
    ctx: Arc<SessionCtx>,
    id: u64,
    /// Its id across instances (see `remote_clients.rs`).
    key: String,
    clients: Arc<RemoteClients>,
}

impl ClientConnection {
    /// `client.hello`: the functions this client runs, each with an
    /// optional schema hash (see [`crate::broker::schema_hash`]);
    /// `hosts_turns` when the session's turns must run where this
    /// connection is (a voice host: its turns are spoken here).
    pub fn declare(&self, functions: Vec<(String, Option<String>)>, hosts_turns: bool) {
        self.clients.declared(
            &self.key,
            &self.ctx.id,
            functions.iter().cloned().collect(),
            hosts_turns,
        );
        self.ctx.broker.declare(self.id, functions);
    }

    /// `client_tool.result`: `Ok(result)` or `Err(error message)`, for a
    /// call of a turn of this process or (on a shared store) of another
    /// instance; `false` if no call waits under that id.
    pub async fn resolve(&self, call_id: &str, reply: crate::broker::ClientReply) -> bool {
        if self.ctx.broker.resolve(call_id, reply.clone()) {
            return true;
        }
        self.clients
            .forward_reply(&self.ctx.id, call_id, reply)
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(call_id, error = %e, "forwarding a client reply failed");
                false
            })
    }

    pub fn session_id(&self) -> &str {
        &self.ctx.id
    }
}

impl Drop for ClientConnection {
    fn drop(&mut self) {
        self.ctx.broker.disconnect(self.id);
        self.clients.closed(&self.key);
    }
}
