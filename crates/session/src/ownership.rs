//! Who runs a session's turns when several instances share one
//! PostgreSQL (R-ST-2; the rows are `rtc_store::instances`). On SQLite
//! there is one instance and none of this does any IO.
//!
//! - Every turn starts through [`Cluster::claim`]: the session's row names
//!   this instance as the turn's owner unless a live instance runs one.
//! - An instance heartbeats its row; one not seen for a lease is dead and
//!   the work it owned (a running turn, a working sub-agent, inbox items,
//!   a workflow action) is adopted by exactly one live instance
//!   ([`Cluster::adopt_orphans`], at startup and every lease/3).
//! - A request that needs a session's turn while another live instance
//!   runs it asks that instance to cancel it, or waits for its end
//!   ([`Cluster::await_remote_turn`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rtc_protocol::TurnCompleted;
use rtc_store::{ControlOp, SessionUpdate, TurnClaim, now_millis};

use crate::RuntimeError;
use crate::context::SessionCtx;
use crate::kernel::{Host, Kernel};

/// Why a cut-off turn ended, as its `turn.completed` says.
const OWNER_STOPPED: &str = "the server running the turn stopped during it";

/// How often a request waiting for another instance's turn asks again.
const RE_ASK: Duration = Duration::from_millis(250);

/// Sessions adopted per query.
const ADOPT_BATCH: i64 = 200;

/// The cluster layer's view of a kernel (`Kernel::cluster`): who runs a
/// session's turns.
pub struct Cluster<'a, H>(pub(crate) &'a Kernel<H>);

impl<H> std::ops::Deref for Cluster<'_, H> {
    type Target = Kernel<H>;

    fn deref(&self) -> &Kernel<H> {
        self.0
    }
}

impl<H: Host> Cluster<'_, H> {
    fn shared(&self) -> bool {
        self.store.allows_several_instances()
    }

    fn me(&self) -> &str {
        &self.settings.cluster.instance
    }

    /// Instances seen since then are alive.
    pub fn live_since(&self) -> i64 {
        now_millis() - self.settings.cluster.lease_millis()
    }

    /// Write this instance's heartbeat (before its first claim, then every
    /// lease/3 from the scheduler).
    pub async fn heartbeat(&self) -> Result<(), RuntimeError> {
        if self.shared() {
            let host = this_host();
            let pid = i64::from(std::process::id());
            self.store
                .heartbeat_instance(self.me(), host.as_deref(), pid, now_millis())
                .await?;
            self.registered.store(true, Ordering::SeqCst);
        }
        Ok(())
    }

    /// At startup: earlier instances on this host whose process is gone
    /// (a crash, then this restart) are dead now, not a lease from now.
    async fn forget_dead_local_instances(&self) -> Result<(), RuntimeError> {
        let Some(host) = this_host() else {
            return Ok(());
        };
        for (id, pid) in self.store.instances_on(&host, self.me()).await? {
            if !process_alive(pid) {
                tracing::info!(instance = %id, pid, "an earlier server on this host is gone");
                self.store.remove_instance(&id).await?;
            }
        }
        Ok(())
    }

    /// Whether this instance may start a turn of `ctx` now; the caller
    /// holds the turn slot and no turn of this process runs in it. A turn
    /// cut off by a dead owner (or by this instance's crash) is recorded
    /// as interrupted first.
    pub async fn claim(&self, ctx: &SessionCtx) -> Result<bool, RuntimeError> {
        Ok(self.claim_closing(ctx).await?.is_some())
    }

    /// [`Self::claim`]: `None` when another instance runs the turn, else
    /// whether a cut-off turn was closed.
    async fn claim_closing(&self, ctx: &SessionCtx) -> Result<Option<bool>, RuntimeError> {
        if !self.shared() {
            return Ok(Some(false));
        }
        self.heartbeat_if_new().await?;
        // This process's last turn end is committed before the row is read.
        self.journal.flush().await;
        match self
            .store
            .claim_turn(&ctx.id, self.me(), self.live_since())
            .await?
        {
            TurnClaim::Claimed { cut_off } => {
                if cut_off && let Err(e) = self.record_cut_off(ctx).await {
                    self.release(ctx).await;
                    return Err(e);
                }
                Ok(Some(cut_off))
            }
            TurnClaim::Busy { owner } => {
                tracing::debug!(session = %ctx.id, %owner, "the session's turn runs on another instance");
                Ok(None)
            }
            TurnClaim::Ended => Ok(None),
        }
    }

    /// A claim that started no turn.
    pub async fn release(&self, ctx: &SessionCtx) {
        if self.shared()
            && let Err(e) = self.store.release_turn(&ctx.id, self.me()).await
        {
            tracing::warn!(session = %ctx.id, error = %e, "releasing a turn claim failed");
        }
    }

    /// Record the end of a turn its owner did not finish (the session
    /// stays claimed by this instance).
    async fn record_cut_off(&self, ctx: &SessionCtx) -> Result<(), RuntimeError> {
        let event = TurnCompleted {
            turn_id: None,
            interrupted: true,
            reason: Some(OWNER_STOPPED.to_owned()),
            status: None,
            finish_reason: None,
            latency: None,
        };
        ctx.events
            .emit_with(vec![event.into()], SessionUpdate::default())
            .await
    }

    /// Before this instance runs `ctx`'s next turn for a request (a user
    /// message, an answer): while another live instance runs the session's
    /// turn, ask it to cancel it (`cancel`) or let it finish, and wait
    /// until it has ended (or its owner died) — within a lease.
    pub async fn await_remote_turn(
        &self,
        ctx: &SessionCtx,
        cancel: bool,
    ) -> Result<(), RuntimeError> {
        if !self.shared() {
            return Ok(());
        }
        let deadline = tokio::time::Instant::now() + self.settings.cluster.lease;
        // Asked again now and then: the owner may have started another
        // turn (a goal's continuation) after the first cancel.
        let mut asked_at = None::<tokio::time::Instant>;
        let mut waited = false;
        loop {
            self.journal.flush().await;
            let owner = self
                .store
                .live_turn_owner(&ctx.id, self.live_since())
                .await?;
            let Some(owner) = owner.filter(|o| o != self.me()) else {
                break;
            };
            waited = true;
            if cancel && asked_at.is_none_or(|at| at.elapsed() >= RE_ASK) {
                self.store
                    .send_control(&owner, ControlOp::Cancel, &ctx.id)
                    .await?;
                asked_at = Some(tokio::time::Instant::now());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(busy());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if waited {
            // What the other instance's turn recorded is read again.
            ctx.stale.store(true, Ordering::SeqCst);
            self.refresh_if_stale(ctx).await?;
        }
        Ok(())
    }

    /// Start the session's next turn for a request (a user message, an
    /// answer): after [`Self::await_remote_turn`], claimed here; a claim
    /// another instance won in between (its turn's end looking for what
    /// comes next) is waited out again, within a lease.
    pub async fn start_turn_for_request(
        &self,
        ctx: &Arc<SessionCtx>,
        cancel: bool,
    ) -> Result<(), RuntimeError> {
        let deadline = tokio::time::Instant::now() + self.settings.cluster.lease;
        loop {
            self.await_remote_turn(ctx, cancel).await?;
            if ctx.state.lock().await.status != rtc_protocol::SessionStatus::Active
                || self.start_turn(ctx).await.is_some()
            {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(busy());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Another instance stored a message for `session`, whose turns run
    /// here (its voice host is here): the running turn gives way to the
    /// turn that answers it.
    pub async fn start_handed_turn(&self, session: &str) -> Result<(), RuntimeError> {
        let ctx = self.session(session).await?;
        self.reload_shared(&ctx).await?;
        ctx.cancel_turn().await;
        self.start_turn_for_request(&ctx, true).await
    }

    /// Make this instance the owner of `ctx`'s work done outside a turn (a
    /// workflow walk after a release), so no instance adopts it meanwhile.
    pub async fn own(&self, ctx: &SessionCtx) -> Result<(), RuntimeError> {
        if self.shared() {
            self.heartbeat_if_new().await?;
            self.store.own_session(&ctx.id, self.me()).await?;
        }
        Ok(())
    }

    async fn heartbeat_if_new(&self) -> Result<(), RuntimeError> {
        if !self.registered.load(Ordering::SeqCst) {
            self.heartbeat().await?;
        }
        Ok(())
    }

    /// Reload what another instance may have changed (shared stores): a
    /// request that may follow one answered elsewhere reads the store.
    pub async fn reload_shared(&self, ctx: &SessionCtx) -> Result<(), RuntimeError> {
        if self.shared() {
            self.refresh(ctx, true).await?;
        }
        Ok(())
    }

    /// The session ended here: a turn another live instance runs for it
    /// is cancelled there.
    pub async fn cancel_remote_turn(&self, ctx: &SessionCtx) {
        if !self.shared() {
            return;
        }
        let asked = async {
            self.journal.flush().await;
            if let Some(owner) = self
                .store
                .live_turn_owner(&ctx.id, self.live_since())
                .await?
                .filter(|o| o != self.me())
            {
                self.store
                    .send_control(&owner, ControlOp::Cancel, &ctx.id)
                    .await?;
            }
            Ok::<_, RuntimeError>(())
        };
        if let Err(e) = asked.await {
            tracing::warn!(session = %ctx.id, error = %e, "asking another instance to stop the turn failed");
        }
    }

    /// Another instance asked to cancel `session`'s turn (see
    /// [`Self::await_remote_turn`]).
    pub async fn cancel_for_other(&self, session: &str) {
        let ctx = self.sessions.lock().get(session).cloned();
        if let Some(ctx) = &ctx {
            ctx.stale.store(true, Ordering::SeqCst);
            ctx.cancel_turn().await;
        }
        // No turn runs here now: a mark left by a claim that started none
        // (or by a turn this process lost) must not hold the session.
        // Under the slot's lock, so no turn starts here meanwhile.
        let slot = match &ctx {
            Some(ctx) => Some(ctx.turn.lock().await),
            None => None,
        };
        if slot
            .as_ref()
            .is_none_or(|s| s.as_ref().is_none_or(|t| t.handle.is_finished()))
        {
            self.journal.flush().await;
            if let Err(e) = self.store.release_turn(session, self.me()).await {
                tracing::warn!(session, error = %e, "releasing a turn claim failed");
            }
        }
    }

    /// Adopt the work of dead instances (`startup`: this instance's earlier
    /// run's too) and go on with it: cut-off turns are recorded as
    /// interrupted, cut-off workflow actions as failed, working sub-agents
    /// with an unanswered input run again, inbox items are delivered.
    /// Returns how many cut-off turns were closed.
    pub async fn adopt_orphans(&self, startup: bool) -> Result<usize, RuntimeError> {
        self.heartbeat().await?;
        if startup {
            self.forget_dead_local_instances().await?;
        }
        let me = self.me().to_owned();
        let mut closed = 0;
        let mut after = String::new();
        loop {
            let orphans = self
                .store
                .orphaned_sessions(
                    startup.then_some(me.as_str()),
                    self.live_since(),
                    &after,
                    ADOPT_BATCH,
                )
                .await?;
            let full = orphans.len() == usize::try_from(ADOPT_BATCH).unwrap_or(usize::MAX);
            if let Some(last) = orphans.last() {
                after.clone_from(&last.id);
            }
            for orphan in orphans {
                // Never its own: a late heartbeat of this instance makes its
                // live work look orphaned (startup adopts its earlier run's).
                if !startup && orphan.owner.as_deref() == Some(me.as_str()) {
                    continue;
                }
                if !self
                    .store
                    .adopt_session(&orphan.id, orphan.owner.as_deref(), &me)
                    .await?
                {
                    continue; // another instance adopted it first
                }
                tracing::info!(session = %orphan.id, owner = ?orphan.owner, "adopting a session whose server stopped");
                match self.resume_adopted(&orphan.id).await {
                    Ok(true) => closed += 1,
                    Ok(false) => {}
                    Err(e) => {
                        tracing::error!(session = %orphan.id, error = %e, "resuming an adopted session failed")
                    }
                }
            }
            if !full {
                break;
            }
        }
        self.journal.flush().await;
        Ok(closed)
    }

    /// Go on with one adopted session; whether a cut-off turn was closed.
    async fn resume_adopted(&self, id: &str) -> Result<bool, RuntimeError> {
        let Some(record) = self.store.session_by_id(id).await? else {
            return Ok(false);
        };
        let ctx = self.session(id).await?;
        ctx.stale.store(true, Ordering::SeqCst);
        self.refresh_if_stale(&ctx).await?;
        // A turn marked running is closed (if it had begun) through a
        // claim, which is then released for what follows.
        let mut cut_off = false;
        if record.turn_running {
            let slot = ctx.turn.lock().await;
            if slot.as_ref().is_none_or(|t| t.handle.is_finished())
                && let Some(closed) = self.claim_closing(&ctx).await?
            {
                cut_off = closed;
                self.release(&ctx).await;
            }
        }
        let host = self.host();
        for feature in &self.features {
            feature.adopted(&host, &ctx, &record).await?;
        }
        Ok(cut_off)
    }
}

/// This host's name, where the system tells it (Linux); `None` elsewhere,
/// where a crashed instance's work waits for its lease.
fn this_host() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim();
    // The PID namespace is part of it: containers sharing a hostname but
    // not their processes are different hosts here.
    let pids = std::fs::read_link("/proc/self/ns/pid").ok()?;
    (!name.is_empty()).then(|| format!("{name} {}", pids.display()))
}

fn busy() -> RuntimeError {
    RuntimeError::Conflict {
        code: "turn_busy",
        message: "another server runs this session's turn and did not end it in time; try again"
            .into(),
    }
}

/// On a shared store: this instance's heartbeat, every lease/3 on a task
/// of its own (a busy scheduler must not make a live instance look dead).
pub(crate) fn spawn_heartbeat<H: Host>(inner: &Arc<H>) {
    if !inner.store.allows_several_instances() {
        return;
    }
    let period = (inner.settings.cluster.lease / 3).max(Duration::from_millis(100));
    crate::background::spawn_every(inner, period, |inner| async move {
        if let Err(e) = inner.cluster().heartbeat().await {
            tracing::warn!(error = %e, "writing this instance's heartbeat failed");
        }
    });
}

/// Whether process `pid` of this host still runs: it exists and is not a
/// zombie (killed, not yet reaped by its parent).
fn process_alive(pid: i64) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the command name, which is in parentheses.
    let state = stat
        .rsplit(')')
        .next()
        .and_then(|rest| rest.split_whitespace().next());
    !matches!(state, Some("Z" | "X"))
}
