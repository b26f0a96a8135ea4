//! The hooks a feature plugs into a session's lifecycle (ARCHITECTURE-GUIDE
//! §5). The lifecycle (`lifecycle.rs`) calls every registered feature at
//! each point, in registration order, and never names one; a feature keeps
//! its per-session state in the session's [`crate::extensions::Extensions`].
//! The features and their order are set once, by the host that builds
//! the kernel (`rtc-runtime`'s composition root).
//!
//! After a turn that ended by itself, in this order:
//! 1. [`Feature::turn_ended`] on every feature (outside the turn slot):
//!    observe the turn (goals count it and judge their conditions);
//! 2. under the turn slot, [`Feature::walk`] until one answers other than
//!    [`AfterTurn::Pass`] (a workflow walks its edges);
//! 3. with the session claimed, [`Feature::next_input`] until one records
//!    the next turn's input (inbox items, then a goal's continuation);
//! 4. when nothing follows, [`Feature::idle`] on every feature (a
//!    sub-agent reports to its parent).
//!
//! When a session's context is built from its stored row, [`Feature::load`]
//! on every feature puts its per-session state in the context's
//! extensions; when another instance wrote the session, [`Feature::reload`]
//! takes it again. A turn the runtime would start by itself (a loop tick, a
//! goal's continuation, an inbox delivery, a sub-agent's report) waits
//! while any feature [`Feature::holds_turns`] (askUser's question, awaited
//! sub-agents, a voice host's user speaking); a feature whose hold ends
//! with no turn to follow calls `Kernel::go_on`, which runs steps 3 and 4.
//!
//! A session opens: once its start and startup actions are recorded (and
//! its first message said, unless a feature [`Feature::says_fixed_lines`]
//! itself), [`Feature::session_opening`] on every feature; once creation is
//! durable and about to be acknowledged, [`Feature::session_opened`] (a
//! workflow walks from its start node).
//!
//! A user message: [`Feature::take_user_message`] until one takes it (a
//! realtime bridge); else [`Feature::user_message_arriving`] on every
//! feature (a question is dismissed, awaited sub-agents are let go, a
//! workflow's hop count restarts) before it is recorded and answered. A
//! human agent's release of a handoff: [`Feature::handoff_released`].
//!
//! After a restart, [`Feature::recover`] (on SQLite) or, per session
//! adopted from a stopped instance, [`Feature::adopted`] (PostgreSQL) on every feature in order; then
//! the scheduler runs every feature's [`Feature::periodic`] work.
//!
//! When a session ends: [`Feature::session_ending`] once its end is
//! stored (its tasks are cancelled, its realtime bridge stops), then
//! [`Feature::session_ended`] once it is announced (its sub-agents stop,
//! a sub-agent reports).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use rtc_protocol::{Assistant, Message};
use rtc_store::SessionRecord;

use crate::RuntimeError;
use crate::context::{SessionConfig, SessionCtx};
use crate::extensions::Extensions;
use crate::kernel::Host;
use crate::tool::ToolHandler;

/// What a feature decides after a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterTurn {
    /// Nothing from this feature: ask the next one.
    Pass,
    /// Start a turn now (its input, if any, is recorded).
    Turn,
    /// The feature ended the session.
    Ended,
}

/// Work a feature does every so often, in the scheduler's rounds
/// (`scheduler.rs`), after recovery, in registration order.
pub struct Periodic<H> {
    /// What it is, for logs.
    pub what: &'static str,
    /// How often it runs (first in the scheduler's first round).
    pub every: Duration,
    pub work: fn(Arc<H>) -> BoxFuture<'static, Result<(), RuntimeError>>,
}

impl AfterTurn {
    /// [`AfterTurn::Turn`] when a feature recorded the next turn's input,
    /// else [`AfterTurn::Pass`].
    pub fn turn_if(recorded: bool) -> Self {
        if recorded { Self::Turn } else { Self::Pass }
    }
}

/// How the turn that just ended went.
#[derive(Debug, Clone, Copy)]
pub struct TurnEnd {
    /// It came to its end (a final answer or a tool that ends the turn),
    /// not cut off by a failed model call or the step limit.
    pub answered: bool,
}

/// One feature's part in the lifecycle. Every hook has a default that does
/// nothing, so a feature implements only what it needs.
pub trait Feature<H: Host>: Send + Sync {
    /// The feature's name, for logs.
    fn name(&self) -> &'static str;

    /// The built-in tools it offers the model, in the order the model
    /// sees them (after the tools of the features registered before it).
    fn tools(&self) -> Vec<Arc<dyn ToolHandler<H>>> {
        Vec::new()
    }

    /// The `name`s of the user messages the feature writes into a history
    /// as the platform's own reports: a report mark at their start is
    /// the platform's, where in anything else it reads as a quotation.
    fn report_names(&self) -> &'static [&'static str] {
        &[]
    }

    /// What the model must keep seeing of the feature's state once the
    /// session's older messages are summarized (open todos, an active
    /// goal): a few lines the compacted request carries verbatim.
    fn context_note<'a>(
        &'a self,
        _host: &'a Arc<H>,
        _ctx: &'a SessionCtx,
    ) -> BoxFuture<'a, Result<Option<String>, RuntimeError>> {
        Box::pin(async { Ok(None) })
    }

    /// Put the feature's services (what it keeps across sessions: drivers,
    /// bridges, queues) in the kernel's `services`, once at start.
    fn services(&self, _config: &H::Config, _services: &mut Extensions) {}

    /// Shutdown begins: nothing new starts; stop what would hold it up
    /// (a realtime bridge ends with its socket).
    fn shutdown_begins(&self, _rt: &H) {}

    /// Shutdown, once running turns are done or checkpointed: stop the
    /// feature's background work (its state stays in the store).
    fn shutdown<'a>(&'a self, _rt: &'a H) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// A session's configuration snapshot was parsed (once for every
    /// context sharing it): read the feature's part of it (under its key in
    /// `config.features`) into `derived`, which contexts reach with
    /// `SessionCtx::derived`.
    fn config_parsed(
        &self,
        _config: &SessionConfig,
        _derived: &mut Extensions,
    ) -> Result<(), RuntimeError> {
        Ok(())
    }

    /// A session's context is being built from its stored `record`
    /// (`fresh`: the session was just created, nothing but its row is
    /// stored): put the feature's per-session state in `ext`.
    fn load<'a>(
        &'a self,
        _rt: &'a H,
        _record: &'a SessionRecord,
        _fresh: bool,
        _ext: &'a mut Extensions,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async { Ok(()) })
    }

    /// Another instance wrote the session: take the feature's stored state
    /// from `record` again.
    fn reload(&self, _record: &SessionRecord, _ext: &mut Extensions) {}

    /// The runtime recorded the input of a turn it starts by itself (a
    /// loop tick's, a goal's continuation).
    fn input_recorded(&self, _ctx: &SessionCtx) {}

    /// The assistant a turn of `ctx` starting now runs, when the feature
    /// decides it (a workflow's stage); the first feature to answer wins.
    fn turn_assistant(&self, _ctx: &SessionCtx) -> Option<Arc<Assistant>> {
        None
    }

    /// Where the history the model sees starts, when the feature cuts it
    /// (a transfer with `history: none`).
    fn history_from(&self, _ctx: &SessionCtx) -> Option<usize> {
        None
    }

    /// Whether the session waits on someone for this feature, so the
    /// runtime starts no turn by itself.
    fn holds_turns(&self, _ctx: &SessionCtx) -> bool {
        false
    }

    /// Whether the feature says the assistant's fixed lines itself (the
    /// first message, a custom goodbye, the handoff message): a realtime
    /// bridge has its provider speak them.
    fn says_fixed_lines(&self, _ctx: &SessionCtx) -> bool {
        false
    }

    /// A new session's start is recorded (and its first message said):
    /// begin the feature's part before creation is acknowledged.
    fn session_opening<'a>(
        &'a self,
        _rt: &'a Arc<H>,
        _ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async { Ok(()) })
    }

    /// The new session's creation is durable: go on from what
    /// [`Self::session_opening`] began (its response shows the status from
    /// before).
    fn session_opened<'a>(
        &'a self,
        _rt: &'a Arc<H>,
        _ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async { Ok(()) })
    }

    /// A user message for an open session: `Some` when the feature takes it
    /// instead of the turn loop (with the message as recorded, or why not).
    fn take_user_message<'a>(
        &'a self,
        _rt: &'a Arc<H>,
        _ctx: &'a Arc<SessionCtx>,
        _text: &'a str,
    ) -> BoxFuture<'a, Option<Result<Message, RuntimeError>>> {
        Box::pin(async { None })
    }

    /// A user message is about to be recorded (no feature took it): settle
    /// what waited on the user, so it comes first in the history.
    fn user_message_arriving<'a>(
        &'a self,
        _rt: &'a Arc<H>,
        _ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async { Ok(()) })
    }

    /// A human agent handed a session in handoff back to the model.
    fn handoff_released<'a>(
        &'a self,
        _rt: &'a Arc<H>,
        _ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async { Ok(()) })
    }

    /// The work it does every so often (see [`Periodic`]).
    fn periodic(&self, _config: &H::Config) -> Vec<Periodic<H>> {
        Vec::new()
    }

    /// A turn ended by itself: observe it. Errors are the feature's own to
    /// report; the lifecycle goes on.
    fn turn_ended<'a>(
        &'a self,
        _rt: &'a Arc<H>,
        _ctx: &'a Arc<SessionCtx>,
        _end: TurnEnd,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// Under the turn slot, before the session is claimed for a next
    /// turn: move the session along its own structure.
    fn walk<'a>(
        &'a self,
        _rt: &'a Arc<H>,
        _ctx: &'a Arc<SessionCtx>,
        _end: TurnEnd,
    ) -> BoxFuture<'a, AfterTurn> {
        Box::pin(async { AfterTurn::Pass })
    }

    /// Under the turn slot, with the session claimed by this instance:
    /// record the input of a next turn, if this feature has one
    /// ([`AfterTurn::Turn`]).
    fn next_input<'a>(
        &'a self,
        _rt: &'a Arc<H>,
        _ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<AfterTurn, RuntimeError>> {
        Box::pin(async { Ok(AfterTurn::Pass) })
    }

    /// The session is ending (by its host, its model, a parent, a
    /// workflow): its end is stored and not yet announced. Stop what runs
    /// for it; errors are the feature's own to report.
    fn session_ending<'a>(&'a self, _rt: &'a Arc<H>, _ctx: &'a SessionCtx) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// The session ended and its end was announced.
    fn session_ended<'a>(
        &'a self,
        _rt: &'a Arc<H>,
        _ctx: &'a SessionCtx,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async { Ok(()) })
    }

    /// After a restart on a store of one instance (SQLite), once the turns
    /// a crash cut off are closed: resume the feature's cut-off work.
    fn recover<'a>(&'a self, _rt: &'a Arc<H>) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async { Ok(()) })
    }

    /// This instance adopted `ctx` from an instance that stopped (shared
    /// stores), its cut-off turn closed: go on with the feature's cut-off
    /// work (`record` is the session's row as adopted).
    fn adopted<'a>(
        &'a self,
        _rt: &'a Arc<H>,
        _ctx: &'a Arc<SessionCtx>,
        _record: &'a SessionRecord,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async { Ok(()) })
    }

    /// Another instance asks this one, which runs `ctx`, to look at it
    /// again (it posted to its inbox).
    fn poked<'a>(
        &'a self,
        _rt: &'a Arc<H>,
        _ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async { Ok(()) })
    }

    /// Nothing follows the turn: the session is idle.
    fn idle<'a>(
        &'a self,
        _rt: &'a Arc<H>,
        _ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async { Ok(()) })
    }
}
