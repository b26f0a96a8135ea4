//! The turn lifecycle, in one place: every turn of a session starts,
//! runs, ends and is followed through here.
//!
//! - start: [`Kernel::start_turn`] puts a new turn in the session's turn
//!   slot (the caller holds no other lock; see `SessionCtx` for the order);
//! - run: [`Kernel::run_turn`] is the turn's task: the model loop
//!   (`crate::turn`), then the end;
//! - end: the task records `turn.completed` and, for an ended session,
//!   forgets its context and stops its sub-agents ([`Kernel::end_session`]
//!   ends a session from outside);
//! - next: [`Kernel::after_turn`] asks the registered features
//!   (`crate::feature`), under the slot's lock and
//!   only while the slot is still its own, what comes after a turn that
//!   ended by itself;
//! - triggers from outside a turn: [`Kernel::recover`] (after a restart,
//!   with every feature's `recover`; the scheduler waits for it), the
//!   features' own (an inbox item arrived, a loop tick, a goal taken over
//!   from a dead instance), which start their turn in the slot the same
//!   way, and [`Kernel::go_on`] (what a feature's hold kept back, once it
//!   lets go with no turn running: the next-input step of `after_turn`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rtc_protocol::{EventBody, SessionEnded, SessionStatus, TurnCompleted};
use rtc_store::{SessionUpdate, new_id};
use tokio_util::sync::CancellationToken;

use crate::RuntimeError;
use crate::context::{RunningTurn, SessionCtx};
use crate::feature::{AfterTurn, TurnEnd};
use crate::kernel::{Host, Kernel};
use crate::turn::TurnOutcome;

/// Tells the session, when the turn's task ends (a panic included), that
/// everything the turn does, what comes after it included, is done.
struct TurnFinished(Arc<SessionCtx>, u64);

impl Drop for TurnFinished {
    fn drop(&mut self) {
        let id = self.1;
        self.0
            .turns_finished
            .send_modify(|last| *last = (*last).max(id));
    }
}

impl<H: Host> Kernel<H> {
    /// Start a turn in the session's slot; returns its id, or `None` when
    /// another instance runs the session's turn (see `ownership.rs`).
    pub async fn start_turn(&self, ctx: &Arc<SessionCtx>) -> Option<u64> {
        let mut slot = ctx.turn.lock().await;
        let local = slot.as_ref().is_some_and(|t| !t.handle.is_finished());
        if !local {
            match self.cluster().claim(ctx).await {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    tracing::error!(session = %ctx.id, error = %e, "claiming the turn failed");
                    return None;
                }
            }
        }
        let turn = self.spawn_turn(ctx);
        let id = turn.id;
        *slot = Some(turn);
        Some(id)
    }

    /// Spawn a turn; the caller puts it in the session's turn slot.
    pub fn spawn_turn(&self, ctx: &Arc<SessionCtx>) -> RunningTurn {
        static NEXT_TURN: AtomicU64 = AtomicU64::new(1);
        let id = NEXT_TURN.fetch_add(1, Ordering::Relaxed);
        let cancel = CancellationToken::new();
        let host = self.host();
        let (session, token) = (ctx.clone(), cancel.clone());
        let finished = TurnFinished(ctx.clone(), id);
        let handle = self.tasks.spawn(async move {
            let _finished = finished;
            host.run_turn(session, token, id).await;
        });
        RunningTurn { id, cancel, handle }
    }

    /// Run one turn to its end. Errors are reported as `error` events; the
    /// session stays usable.
    pub async fn run_turn(&self, ctx: Arc<SessionCtx>, cancel: CancellationToken, turn: u64) {
        let turn_id = new_id("turn");
        let outcome = match self.turn_inner(&ctx, &cancel, &turn_id).await {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::error!(session = %ctx.id, error = %e, "turn failed");
                let _ = ctx
                    .events
                    .emit(EventBody::error(
                        "turn_failed",
                        "the turn failed; see the server log",
                    ))
                    .await;
                TurnOutcome::default()
            }
        };
        // What runs after the model loop is boxed, so a turn waiting on its
        // model holds only the loop's state (R-PF-5).
        if let Err(e) = Box::pin(self.finish_ending(&ctx)).await {
            tracing::error!(session = %ctx.id, error = %e, "ending the session failed");
        }
        let interrupted = cancel.is_cancelled();
        let note = match crate::step_tap::tap_of(&ctx) {
            Some(tap) => tap.turn_ending().await,
            None => crate::step_tap::TurnNote::default(),
        };
        let completed = TurnCompleted {
            turn_id: Some(turn_id),
            interrupted: interrupted || outcome.cut || note.reason.is_some(),
            reason: note
                .reason
                .or_else(|| outcome.cut.then(|| "stream_cut".to_owned())),
            status: None,
            finish_reason: outcome.finish_reason,
            latency: note.latency,
        };
        let not_running = SessionUpdate {
            turn_running: Some(false),
            ..SessionUpdate::default()
        };
        if let Err(e) = ctx
            .events
            .emit_with(vec![completed.into()], not_running)
            .await
        {
            tracing::error!(session = %ctx.id, error = %e, "recording the end of a turn failed");
        }
        self.release_large_history(&ctx).await;
        if ctx.state.lock().await.status == SessionStatus::Ended {
            self.forget(&ctx.id);
            if let Err(e) = Box::pin(self.after_end(&ctx)).await {
                tracing::error!(session = %ctx.id, error = %e, "stopping the sub-agents of an ended session failed");
            }
        } else if !interrupted {
            Box::pin(self.after_turn(&ctx, &cancel, turn, outcome.answered)).await;
        }
    }

    /// End the session if `endConversation` asked for it.
    pub async fn finish_ending(&self, ctx: &SessionCtx) -> Result<(), RuntimeError> {
        let ending = {
            let mut state = ctx.state.lock().await;
            let Some((reason, _)) = state.ending.take() else {
                return Ok(());
            };
            state.status = SessionStatus::Ended;
            reason
        };
        self.store
            .set_session_status(
                &ctx.id,
                SessionStatus::Ended,
                ending.as_deref(),
                Some("model"),
            )
            .await?;
        self.session_ending(ctx).await;
        ctx.events
            .emit(
                SessionEnded {
                    reason: ending,
                    ended_by: "model".to_owned(),
                }
                .into(),
            )
            .await?;
        Ok(())
    }

    /// At the end of turn `turn` (not interrupted; `answered`: it came to
    /// its end): the features observe it, then decide under the turn
    /// slot what follows (see `crate::feature` for the order): a walk, a
    /// next turn's input, else idle.
    pub async fn after_turn(
        &self,
        ctx: &Arc<SessionCtx>,
        cancel: &CancellationToken,
        turn: u64,
        answered: bool,
    ) {
        let end = TurnEnd { answered };
        let host = self.host();
        let host = &host;
        for feature in &self.features {
            feature.turn_ended(host, ctx, end).await;
        }
        let mut slot = ctx.turn.lock().await;
        // Cancelled, or someone took the slot: they decide what comes next.
        if cancel.is_cancelled() || slot.as_ref().map(|t| t.id) != Some(turn) {
            return;
        }
        // The walk runs under the slot's lock: a user message waits for
        // the deterministic steps it leads through.
        for feature in &self.features {
            match feature.walk(host, ctx, end).await {
                AfterTurn::Pass => continue,
                AfterTurn::Turn if !self.tasks.is_closed() => {
                    if self.cluster().claim(ctx).await.unwrap_or_else(|e| {
                        tracing::error!(session = %ctx.id, error = %e, "claiming the turn failed");
                        false
                    }) {
                        *slot = Some(self.spawn_turn(ctx));
                    } else {
                        *slot = None;
                    }
                    return;
                }
                AfterTurn::Ended => {
                    *slot = None;
                    drop(slot);
                    self.forget(&ctx.id);
                    if let Err(e) = self.after_end(ctx).await {
                        tracing::error!(session = %ctx.id, error = %e, "stopping the sub-agents of an ended session failed");
                    }
                    return;
                }
                // A turn not started while shutting down: the session
                // answers its next message.
                AfterTurn::Turn => break,
            }
        }
        self.follow_up(ctx, &mut slot).await;
    }

    /// Go on by itself, when no turn runs, with the work that waited while
    /// a feature held the session's turns (`Feature::holds_turns`) and
    /// nothing follows from elsewhere: the next input a feature records
    /// (inbox items, a goal's continuation), else the idle work. No turn
    /// ended, so nothing walks.
    pub async fn go_on(&self, ctx: &Arc<SessionCtx>) {
        let mut slot = ctx.turn.lock().await;
        // A running turn decides what follows it when it ends.
        if slot.as_ref().is_some_and(|t| !t.handle.is_finished()) {
            return;
        }
        self.follow_up(ctx, &mut slot).await;
    }

    /// Under the turn slot, after a turn's walk or when no turn runs: the
    /// first feature's next input starts a turn in `slot`, else every
    /// feature's idle work runs and the slot is left empty.
    async fn follow_up(&self, ctx: &Arc<SessionCtx>, slot: &mut Option<RunningTurn>) {
        // Shutting down: what would come next stays in the store (inbox,
        // goals) and goes on after the next start.
        if self.tasks.is_closed() {
            *slot = None;
            return;
        }
        let host = self.host();
        let host = &host;
        let before = slot.as_ref().map(|t| t.id);
        let started = async {
            if !self.cluster().claim(ctx).await? {
                // A request on another instance took the session's turn:
                // that instance goes on from here.
                return Ok(None);
            }
            for feature in &self.features {
                match feature.next_input(host, ctx).await? {
                    AfterTurn::Pass => continue,
                    AfterTurn::Turn => {
                        *slot = Some(self.spawn_turn(ctx));
                        break;
                    }
                    AfterTurn::Ended => break,
                }
            }
            let started = slot.as_ref().map(|t| t.id) != before;
            if !started {
                self.cluster().release(ctx).await;
            }
            Ok::<_, RuntimeError>(Some(started))
        };
        match started.await {
            Ok(Some(true)) => return,
            Ok(None) => {
                *slot = None;
                return;
            }
            Ok(Some(false)) => {}
            Err(e) => {
                tracing::error!(session = %ctx.id, error = %e, "starting the next turn failed");
                if slot.as_ref().map(|t| t.id) == before {
                    self.cluster().release(ctx).await;
                }
            }
        }
        for feature in &self.features {
            if let Err(e) = feature.idle(host, ctx).await {
                tracing::error!(session = %ctx.id, feature = feature.name(), error = %e, "the idle work of a feature failed");
            }
        }
        *slot = None;
    }

    /// End a session (host, model, or a stopping parent): its turn stops,
    /// the end is recorded and announced, its sub-agents stop with it.
    pub async fn end_session(
        &self,
        ctx: &SessionCtx,
        reason: Option<&str>,
        by: &str,
    ) -> Result<(), RuntimeError> {
        ctx.cancel_turn().await;
        ctx.state.lock().await.status = SessionStatus::Ended;
        self.store
            .set_session_status(&ctx.id, SessionStatus::Ended, reason, Some(by))
            .await?;
        self.session_ending(ctx).await;
        self.cluster().cancel_remote_turn(ctx).await;
        let ended = SessionEnded {
            reason: reason.map(str::to_owned),
            ended_by: by.to_owned(),
        };
        ctx.events.emit(ended.into()).await?;
        self.forget(&ctx.id);
        Ok(())
    }

    /// After a session's end was announced: every feature's
    /// [`crate::feature::Feature::session_ended`] (its sub-agents stop, a sub-agent
    /// reports its end to its parent).
    pub async fn after_end(&self, ctx: &SessionCtx) -> Result<(), RuntimeError> {
        let host = self.host();
        for feature in &self.features {
            feature.session_ended(&host, ctx).await?;
        }
        Ok(())
    }

    /// Every feature's [`crate::feature::Feature::session_ending`] for `ctx`.
    async fn session_ending(&self, ctx: &SessionCtx) {
        let host = self.host();
        for feature in &self.features {
            feature.session_ending(&host, ctx).await;
        }
    }

    /// Recovery after a restart, once (see `Runtime::recover`).
    pub async fn recover(&self) -> Result<usize, RuntimeError> {
        self.recovered
            .get_or_try_init(|| self.recover_now())
            .await
            .copied()
    }

    /// Close the turns a crash cut off, then resume the trees. On a shared
    /// store only the work of this instance's earlier run and of dead
    /// instances is touched (see `ownership.rs`).
    async fn recover_now(&self) -> Result<usize, RuntimeError> {
        if self.store.allows_several_instances() {
            self.remote_clients.forget_stale().await?;
            return self.cluster().adopt_orphans(true).await;
        }
        let ids = self.store.sessions_with_running_turn().await?;
        for id in &ids {
            let ctx = self.session(id).await?;
            let event = TurnCompleted {
                turn_id: None,
                interrupted: true,
                reason: Some("the server restarted during the turn".to_owned()),
                status: None,
                finish_reason: None,
                latency: None,
            };
            let update = SessionUpdate {
                turn_running: Some(false),
                ..SessionUpdate::default()
            };
            ctx.events.emit_with(vec![event.into()], update).await?;
        }
        let host = self.host();
        for feature in &self.features {
            feature.recover(&host).await?;
        }
        // What recovery recorded is durable before the server serves.
        self.journal.flush().await;
        Ok(ids.len())
    }
}
