//! Loops (R-LP-1..4, R-BX-1): the loop tools, and the scheduler that runs
//! due ticks. Every instance polls the schedule table and claims due ticks
//! with a lease (see `rtc_store::loops`); a claimed tick runs the loop's
//! prompt as a turn of its session, or is skipped and counted when a turn
//! is still running, then schedules the next tick at
//! `max(now, due + interval)` and releases the lease. The holder
//! heartbeats the lease while the turn runs; if it dies, the lease expires
//! and another instance takes the next tick.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::features::loops::tools::{Create, LoopOp};
use rtc_core::time::rfc3339_from_millis;
use rtc_protocol::{Loop, LoopStatus, LoopUpdated, SessionStatus};
use rtc_store::{ClaimedTick, LoopRecord, Store, TickOutcome, new_id, now_millis};

use crate::cluster::millis;
use serde_json::{Value, json};

use super::LoopService;
use crate::features::loops::tick_finisher::TickFinisher;
use crate::session::SessionCtx;
use crate::tool::CallOutcome;
use crate::{Runtime, RuntimeError};

/// Most loops active or paused at once in a session.
const MAX_OPEN_LOOPS: usize = 5;
/// Most ticks claimed in one poll.
const CLAIM_BATCH: i64 = 500;
/// Why a loop ended at its expiry (R-LP-4).
pub(crate) const EXPIRED: &str = "the loop expired";
/// How often loops past their expiry that no tick settles (paused ones)
/// are looked for.
pub(crate) const EXPIRY_SWEEP: Duration = Duration::from_secs(1);

/// The loop whose tick's turn runs in a session (for `completeLoop`),
/// kept in its extensions.
#[derive(Debug, Default)]
pub(crate) struct CurrentLoop(pub Option<String>);

/// How the scheduler runs.
#[derive(Debug, Clone)]
pub struct LoopSettings {
    /// How often due ticks are looked for.
    pub poll: Duration,
    /// How long a loop lives at most (R-LP-4).
    pub max_lifetime: Duration,
}

impl Default for LoopSettings {
    fn default() -> Self {
        Self {
            poll: Duration::from_millis(100),
            max_lifetime: Duration::from_secs(24 * 3600),
        }
    }
}

pub(crate) fn view(l: &LoopRecord) -> Loop {
    Loop {
        id: l.id.clone(),
        prompt: l.prompt.clone(),
        interval_seconds: l.interval_ms / 1000,
        max_turns: l.max_turns,
        turns_done: l.turns_done,
        skipped_ticks: l.skipped_ticks,
        status: l.status,
        reason: l.reason.clone(),
        next_tick_at: rfc3339_from_millis(l.next_tick_at),
        expires_at: rfc3339_from_millis(l.expires_at),
        created_at: rfc3339_from_millis(l.created_at),
        updated_at: rfc3339_from_millis(l.updated_at),
    }
}

fn for_model(l: &LoopRecord) -> Value {
    json!({"loop_id": l.id, "prompt": l.prompt, "status": l.status.as_str(), "interval_seconds": l.interval_ms / 1000,
        "turns_done": l.turns_done, "max_turns": l.max_turns, "skipped_ticks": l.skipped_ticks,
        "next_tick_at": rfc3339_from_millis(l.next_tick_at)})
}

/// What the loop tools work with: the store, the loop settings and the
/// calling session.
pub(crate) struct LoopCx<'a> {
    pub store: &'a Store,
    pub settings: &'a LoopSettings,
    pub session: &'a SessionCtx,
}

impl LoopCx<'_> {
    /// Run one loop tool call.
    pub async fn run(&self, op: LoopOp) -> Result<CallOutcome, RuntimeError> {
        let ctx = self.session;
        let now = now_millis();
        let (id, from, to, reason) = match op {
            LoopOp::Create(args) => return self.create(args, now).await,
            LoopOp::List => {
                let loops: Vec<Value> = self
                    .store
                    .loops(&ctx.id)
                    .await?
                    .iter()
                    .map(for_model)
                    .collect();
                return Ok(CallOutcome::ok(json!({"loops": loops})));
            }
            LoopOp::Complete(args) => {
                let current = ctx.peek(|c: &CurrentLoop| c.0.clone()).flatten();
                let Some(id) = current else {
                    return Ok(CallOutcome::error(
                        "completeLoop only works inside a loop's own turn; use cancelLoop to stop a loop",
                    ));
                };
                let reason = args
                    .reason
                    .unwrap_or_else(|| "completed by the model".into());
                (
                    id,
                    vec![LoopStatus::Active, LoopStatus::Paused],
                    LoopStatus::Completed,
                    Some(reason),
                )
            }
            LoopOp::Cancel(id) => (
                id,
                vec![LoopStatus::Active, LoopStatus::Paused],
                LoopStatus::Cancelled,
                Some("cancelled by the model".into()),
            ),
            LoopOp::Pause(id) => (id, vec![LoopStatus::Active], LoopStatus::Paused, None),
            LoopOp::Resume(id) => (id, vec![LoopStatus::Paused], LoopStatus::Active, None),
        };
        let Some(l) = self
            .store
            .loop_by_id(&id)
            .await?
            .filter(|l| l.session_id == ctx.id)
        else {
            return Ok(CallOutcome::error(format!(
                "there is no loop `{id}` in this session"
            )));
        };
        let next = (to == LoopStatus::Active).then_some(now + l.interval_ms);
        if !self
            .store
            .set_loop_status(&id, &from, to, reason.as_deref(), next, now)
            .await?
        {
            return Ok(CallOutcome::error(format!(
                "loop `{id}` is {}, so it cannot become {}",
                l.status.as_str(),
                to.as_str()
            )));
        }
        loop_event(self.store, ctx, &id).await?;
        let l = self.store.loop_by_id(&id).await?.unwrap_or(l);
        Ok(CallOutcome::ok(for_model(&l)))
    }

    /// `createLoop`: at most [`MAX_OPEN_LOOPS`] open loops per session.
    async fn create(&self, args: Create, now: i64) -> Result<CallOutcome, RuntimeError> {
        let ctx = self.session;
        let open = self
            .store
            .loops(&ctx.id)
            .await?
            .iter()
            .filter(|l| !l.status.is_final())
            .count();
        if open >= MAX_OPEN_LOOPS {
            return Ok(CallOutcome::error(format!(
                "{open} loops are already running or paused; cancel one first"
            )));
        }
        let interval = args.interval_seconds * 1000;
        let l = LoopRecord {
            id: new_id("loop"),
            session_id: ctx.id.clone(),
            prompt: args.prompt.trim().to_owned(),
            interval_ms: interval,
            max_turns: args.max_turns,
            turns_done: 0,
            skipped_ticks: 0,
            status: LoopStatus::Active,
            reason: None,
            expires_at: now + millis(self.settings.max_lifetime),
            next_tick_at: now + interval,
            created_at: now,
            updated_at: now,
        };
        self.store.insert_loop(&l).await?;
        loop_event(self.store, ctx, &l.id).await?;
        Ok(CallOutcome::ok(for_model(&l)))
    }
}

/// Tell the session's clients about a loop's state.
async fn loop_event(store: &Store, ctx: &SessionCtx, id: &str) -> Result<(), RuntimeError> {
    if let Some(l) = store.loop_by_id(id).await? {
        ctx.events
            .emit(LoopUpdated { loop_: view(&l) }.into())
            .await?;
    }
    Ok(())
}

impl LoopService<'_> {
    /// Loops past their expiry that no tick settles (paused, or between
    /// ticks) become exhausted (R-LP-4); one instance wins each.
    pub(crate) async fn expire_loops(self) -> Result<(), RuntimeError> {
        let now = now_millis();
        for l in self.store.expired_loops(now, CLAIM_BATCH).await? {
            let from = [LoopStatus::Active, LoopStatus::Paused];
            if self
                .store
                .set_loop_status(
                    &l.id,
                    &from,
                    LoopStatus::Exhausted,
                    Some(EXPIRED),
                    None,
                    now,
                )
                .await?
                && let Ok(ctx) = self.session(&l.session_id).await
            {
                loop_event(&self.store, &ctx, &l.id).await?;
            }
        }
        Ok(())
    }

    /// Run one claimed tick to its end and record it.
    async fn run_tick(self, tick: ClaimedTick) {
        let settings = &self.config.loops;
        let instance = self.settings.cluster.instance.clone();
        let outcome = match self.tick_turn(&tick).await {
            Ok(o) => o,
            Err(e) => {
                tracing::error!(loop_id = %tick.loop_id, error = %e, "loop tick failed");
                TickOutcome {
                    ran: false,
                    next_tick_at: now_millis() + millis(settings.poll) * 10,
                    status: None,
                }
            }
        };
        let session_id = tick.session_id.clone();
        let loop_id = tick.loop_id.clone();
        let finished = match self
            .service::<TickFinisher>()
            .finish(&self.store, &instance, tick, outcome)
            .await
        {
            Ok(Some(l)) => l,
            Ok(None) => {
                tracing::warn!(loop_id = %loop_id, "a loop tick ended after its lease was lost");
                return;
            }
            Err(e) => {
                tracing::error!(loop_id = %loop_id, error = %e, "recording a loop tick failed");
                return;
            }
        };
        if let Ok(ctx) = self.session(&session_id).await {
            let _ = ctx
                .events
                .emit(
                    LoopUpdated {
                        loop_: view(&finished),
                    }
                    .into(),
                )
                .await;
        }
    }
}

impl LoopService<'_> {
    /// The tick itself: a turn with the loop's prompt, or a skip.
    pub(crate) async fn tick_turn(self, tick: &ClaimedTick) -> Result<TickOutcome, RuntimeError> {
        let now = now_millis();
        let l = &tick.record;
        let next = |now: i64| now.max(tick.due_at + l.interval_ms);
        let ctx = match self.session(&tick.session_id).await {
            Ok(c) => c,
            Err(RuntimeError::NotFound { .. }) => {
                return Ok(TickOutcome {
                    ran: false,
                    next_tick_at: now,
                    status: Some((LoopStatus::Cancelled, "the session is gone".into())),
                });
            }
            Err(e) => return Err(e),
        };
        // Looking at the slot, recording the input and starting the turn
        // happen under the slot's lock, so no other turn (a user message's)
        // starts in between and runs beside the tick's.
        let mut slot = ctx.turn.lock().await;
        let (status, waiting) = {
            let s = ctx.state.lock().await;
            (s.status, !self.can_continue(&ctx, &s))
        };
        if status == SessionStatus::Ended {
            return Ok(TickOutcome {
                ran: false,
                next_tick_at: now,
                status: Some((LoopStatus::Cancelled, "the session ended".into())),
            });
        }
        let busy = slot.as_ref().is_some_and(|t| !t.handle.is_finished())
            || ctx.user_turns_pending.load(Ordering::SeqCst) > 0;
        // The turn may also run on another instance: then the tick is
        // skipped as for a turn running here.
        let busy = busy
            || (!waiting && status == SessionStatus::Active && !self.cluster().claim(&ctx).await?);
        if busy || waiting || status == SessionStatus::Handoff {
            // A loop whose ticks are always skipped expires all the same.
            return Ok(TickOutcome {
                ran: false,
                next_tick_at: next(now),
                status: (now >= l.expires_at).then(|| (LoopStatus::Exhausted, EXPIRED.to_owned())),
            });
        }
        let text = format!(
            "[Loop {}, turn {} of {}] {}",
            l.id,
            l.turns_done + 1,
            l.max_turns,
            l.prompt
        );
        if let Err(e) = self
            .runtime_input(&ctx, &text, "loop", |e| e.loop_id = Some(l.id.clone()))
            .await
        {
            self.cluster().release(&ctx).await;
            return Err(e);
        }
        // Set once nothing can fail before the turn runs (it is cleared
        // when the turn is over).
        ctx.ext(|c: &mut CurrentLoop| c.0 = Some(l.id.clone()));
        let running = self.spawn_turn(&ctx);
        let turn = running.id;
        *slot = Some(running);
        drop(slot);
        self.await_turn_with_heartbeat(&ctx, &l.id, turn).await;
        ctx.extensions.lock().remove::<CurrentLoop>();
        let now = now_millis();
        let status = if l.turns_done + 1 >= l.max_turns {
            Some((
                LoopStatus::Exhausted,
                format!("max_turns ({}) reached", l.max_turns),
            ))
        } else if now >= l.expires_at {
            Some((LoopStatus::Exhausted, EXPIRED.to_owned()))
        } else {
            None
        };
        Ok(TickOutcome {
            ran: true,
            next_tick_at: next(now),
            status,
        })
    }

    /// Wait for the tick's turn, extending the lease meanwhile.
    pub(crate) async fn await_turn_with_heartbeat(
        self,
        ctx: &SessionCtx,
        loop_id: &str,
        turn: u64,
    ) {
        let lease = self.settings.cluster.lease;
        let ended = ctx.wait_turn_ended(turn);
        tokio::pin!(ended);
        loop {
            tokio::select! {
                () = &mut ended => return,
                () = tokio::time::sleep(lease / 3) => {
                    let until = now_millis() + millis(lease);
                    if !self.store.heartbeat_tick(loop_id, &self.settings.cluster.instance, until).await.unwrap_or(false) {
                        tracing::warn!(loop_id, "lost the lease of a running loop tick");
                    }
                }
            }
        }
    }

    /// Claim the loop ticks that are due and run each in a task.
    pub(crate) async fn claim_ticks(self) -> Result<(), RuntimeError> {
        let cluster = &self.settings.cluster;
        let claimed = self
            .store
            .claim_due_ticks(
                &cluster.instance,
                now_millis(),
                cluster.lease_millis(),
                CLAIM_BATCH,
            )
            .await?;
        for t in claimed {
            let rt = self.rt.clone();
            self.tasks
                .spawn(async move { LoopService::of(&rt).run_tick(t).await });
        }
        Ok(())
    }
}

impl Runtime {
    /// The session's loops, oldest first.
    pub async fn loops(&self, workspace: &str, id: &str) -> Result<Vec<Loop>, RuntimeError> {
        self.inner.session_in(workspace, id).await?;
        Ok(self.inner.store.loops(id).await?.iter().map(view).collect())
    }
}
