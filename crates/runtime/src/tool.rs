//! The kernel's tool types (`rtc_session::tool`) for the runtime's host:
//! what a feature's tool implements and runs with.

pub(crate) use rtc_session::parsed;
pub(crate) use rtc_session::tool::{CallOutcome, Interrupt, ToolHandler};

/// What a call of a feature's tool runs with.
pub(crate) type ToolCx<'a> = rtc_session::tool::ToolCx<'a, crate::Inner>;

/// What decides whether a session offers a feature's tool.
pub(crate) type Offer<'a> = rtc_session::tool::Offer<'a, crate::Inner>;
