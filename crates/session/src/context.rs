//! The in-memory side of a session: its configuration snapshot, current
//! variables and status, event log, client broker, history and running
//! turn, and the state features keep for it ([`Extensions`]). The runtime
//! loads, holds and evicts contexts; features reach their state through
//! [`SessionCtx::ext`] and [`SessionCtx::peek`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64};

use rtc_protocol::{Assistant, SessionStatus, Tool};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::broker::Broker;
use crate::events::EventLog;
use crate::extensions::Extensions;

/// What a session runs with, fixed when it starts: later edits of the
/// assistant or its tools apply to new sessions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionConfig {
    /// The assistant; for a workflow session, the workflow's globals
    /// (`rtc_core::workflow_stage::base_assistant`).
    pub assistant: Assistant,
    /// Every tool the session may call, by id.
    pub tools: BTreeMap<String, Tool>,
    /// Set for a test-mode session (R-BX-10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<crate::test_mode::TestMode>,
    /// What features keep in the snapshot, under their own keys (a
    /// workflow's graph under `workflow`); each reads its own when the
    /// snapshot is parsed (`Feature::config_parsed`).
    #[serde(flatten)]
    pub features: Map<String, Value>,
}

/// Mutable state of a session.
pub struct SessionState {
    pub variables: Map<String, Value>,
    pub status: SessionStatus,
    /// Set by `endConversation`: `(reason, allow interruption)`; the
    /// session ends when the turn completes.
    pub ending: Option<(Option<String>, bool)>,
    /// Test mode: calls per tool name so far, for scripted results.
    pub scripted_calls: BTreeMap<String, usize>,
}

impl SessionState {
    /// Active and not ending: a turn may follow (see
    /// the runtime's `can_continue` for one it starts by itself).
    pub fn is_open(&self) -> bool {
        self.status == SessionStatus::Active && self.ending.is_none()
    }
}

/// Where a session started by another sits in its tree (R-SA-1).
#[derive(Debug, Clone)]
pub struct ParentLink {
    pub parent_id: String,
    pub title: String,
}

pub struct RunningTurn {
    /// Tells a finishing turn whether the slot is still its own.
    pub id: u64,
    pub cancel: CancellationToken,
    pub handle: JoinHandle<()>,
}

/// A session while it is used.
///
/// Lock order: `turn` (the turn slot) before `history` before `state`;
/// a holder of `history` or `state` never waits for a turn's task (only
/// [`Self::cancel_turn`] and [`Self::wait_turn`] do, after releasing
/// `turn`). The std mutexes (`extensions`, the broker's, the runtime's
/// session map) are never held across an `.await`; `extensions` may be
/// taken while `state` is held, never the other way round.
pub struct SessionCtx {
    pub id: String,
    pub workspace: String,
    /// The root of the session's tree (itself for a root session).
    pub root_id: String,
    /// Set for a sub-agent session.
    pub parent: Option<ParentLink>,
    /// The assistant the session was started with (usage is counted
    /// under it).
    pub assistant_id: String,
    /// The end user (`userId` at start), who owns memories (R-MM).
    pub user_id: Option<String>,
    /// Shared with the contexts of the same snapshot (`config_cache`).
    pub config: Arc<SessionConfig>,
    /// The session's assistant, shared like `config`.
    pub assistant: Arc<Assistant>,
    /// What features read from `config` (`Feature::config_parsed`),
    /// shared like it.
    pub derived: Arc<Extensions>,
    pub state: tokio::sync::Mutex<SessionState>,
    pub events: EventLog,
    pub broker: Broker,
    pub turn: tokio::sync::Mutex<Option<RunningTurn>>,
    /// The message history, loaded on first use and appended in step
    /// with the store; a large one is dropped after each turn and read
    /// again when needed (`SessionLimits::history_memory_bytes`).
    pub history: tokio::sync::Mutex<Option<Vec<rtc_protocol::Message>>>,
    /// About how many bytes the stored history holds
    /// ([`crate::history::message_size`] per message), or
    /// [`crate::history::UNKNOWN_SIZE`] until it is needed.
    pub history_bytes: std::sync::atomic::AtomicU64,
    /// When the context was last looked up (epoch ms), for eviction.
    pub last_used: AtomicI64,
    /// Tokens the model used in the running turn (for goal budgets).
    pub turn_tokens: AtomicI64,
    /// The highest id of a turn whose task has ended, after-turn work
    /// included (a loop tick waits for its own turn's). Turns of a session
    /// never overlap and ids only grow, so `>= id` means turn `id` ended.
    pub turns_finished: tokio::sync::watch::Sender<u64>,
    /// User messages recorded whose turn is not in the slot yet: a loop
    /// tick meanwhile is skipped, as if that turn were running (else the
    /// tick's turn would start between the message and its own turn).
    pub user_turns_pending: std::sync::atomic::AtomicUsize,
    /// Another instance wrote the session since its state was read (on
    /// PostgreSQL): the next use reloads it (`Kernel::refresh_if_stale`).
    pub stale: AtomicBool,
    /// The state features keep per session (`crate::extensions`).
    pub extensions: parking_lot::Mutex<crate::extensions::Extensions>,
}

impl SessionCtx {
    /// What a feature read from the session's configuration, if anything.
    pub fn derived<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.derived.get::<T>()
    }

    /// The feature state of type `T`, if the session has one, for `f`
    /// (reading puts nothing in: most sessions keep nothing for most
    /// features).
    pub fn peek<T: Send + Sync + 'static, R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        self.extensions.lock().get::<T>().map(f)
    }

    /// The feature state of type `T` (its default until set), for `f`.
    pub fn ext<T: Default + Send + Sync + 'static, R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(self.extensions.lock().get_or_default::<T>())
    }

    /// Cancel the running turn, if any, and wait until it has recorded its
    /// consistent end; whether a turn was still running. The cancelled turn
    /// stays in the slot until its task has ended, so nothing else (an
    /// inbox delivery, a loop tick, a claim on a shared store) starts a turn
    /// while it is still finishing.
    pub async fn cancel_turn(&self) -> bool {
        // Cancelled under the lock: a turn that starts its own continuation
        // (a goal) checks its token under the same lock.
        let running = {
            let slot = self.turn.lock().await;
            slot.as_ref().map(|t| {
                t.cancel.cancel();
                (t.id, !t.handle.is_finished())
            })
        };
        let Some((id, was_running)) = running else {
            return false;
        };
        self.wait_turn_ended(id).await;
        let ended = {
            let mut slot = self.turn.lock().await;
            if slot.as_ref().is_some_and(|t| t.id == id) {
                slot.take()
            } else {
                None
            }
        };
        if let Some(t) = ended {
            let _ = t.handle.await;
        }
        was_running
    }

    /// Wait until turn `id`'s task has ended.
    pub async fn wait_turn_ended(&self, id: u64) {
        let mut ended = self.turns_finished.subscribe();
        let _ = ended.wait_for(|last| *last >= id).await;
    }

    /// Wait for the running turn to finish by itself.
    pub async fn wait_turn(&self) {
        let running = self.turn.lock().await.take();
        if let Some(t) = running {
            let _ = t.handle.await;
        }
    }
}
