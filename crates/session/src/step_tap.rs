//! A feature's hold on the text of a turn's model steps (a voice engine
//! speaks it, design `voice-pipeline.md` §4(b), §4(f)). A session whose
//! extensions hold a [`StepTapSlot`] has each step's text deltas given to
//! its tap instead of being sent as `message.delta` events: the tap
//! releases (or holds back) them itself, decides at the step's end how its
//! answer is stored, and adds to the turn's `turn.completed`. Sessions
//! without a tap stream text as always.

use std::sync::Arc;

use futures::future::BoxFuture;
use rtc_protocol::TurnLatency;

use crate::context::SessionCtx;

/// How a step's answer is stored, as the tap decided at its end.
#[derive(Debug, Clone, Default)]
pub struct StepStored {
    /// The stored message's `source` (`audio` for spoken text).
    pub source: Option<String>,
    /// The `itemId` its `message.completed` names.
    pub item_id: Option<String>,
    /// The text stored instead of the model's (nothing spoken: empty).
    pub content: Option<String>,
    /// Only part of it was delivered (the user cut in).
    pub interrupted: bool,
}

/// What a turn's `turn.completed` carries of the tap's.
#[derive(Debug, Clone, Default)]
pub struct TurnNote {
    pub latency: Option<TurnLatency>,
    /// Why the turn was interrupted, when the tap interrupted it
    /// (`barge_in`).
    pub reason: Option<String>,
}

/// What takes a turn's step text; every method is called from the turn's
/// task, in order.
pub trait StepTap: Send + Sync {
    /// A model step whose answer will be `message_id` is about to be
    /// requested.
    fn step_started(&self, message_id: &str);
    /// A piece of the step's text, as the model streams it.
    fn delta(&self, message_id: &str, text: &str);
    /// The step's stream ended with `content` and calls of the tools named
    /// `calls`: release or drop what is held; the answer is stored as the
    /// returned value says once this resolves.
    fn step_ended<'a>(
        &'a self,
        message_id: &'a str,
        content: &'a str,
        calls: &'a [String],
    ) -> BoxFuture<'a, StepStored>;
    /// The step ended without an answer (cancelled, failed or cut): what
    /// it held is dropped; what it delivered of it, if anything, is stored
    /// as the returned value says (its `content`).
    fn step_abandoned<'a>(&'a self, message_id: &'a str) -> BoxFuture<'a, Option<StepStored>>;
    /// The assistant says a fixed line `text` (a custom goodbye, the
    /// handoff message) as message `message_id`: resolves once it was
    /// delivered, with how it is stored.
    fn say<'a>(&'a self, message_id: &'a str, text: &'a str) -> BoxFuture<'a, StepStored>;
    /// The turn is about to be recorded as completed: what its
    /// `turn.completed` carries of the tap's.
    fn turn_ending(&self) -> BoxFuture<'_, TurnNote>;
}

/// The session's tap, kept in its extensions by the feature that owns it.
#[derive(Clone)]
pub struct StepTapSlot(pub Arc<dyn StepTap>);

/// The tap of `ctx`, if one is installed.
pub fn tap_of(ctx: &SessionCtx) -> Option<Arc<dyn StepTap>> {
    ctx.peek::<StepTapSlot, _>(|s| s.0.clone())
}
