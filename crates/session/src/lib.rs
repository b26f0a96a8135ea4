//! The session kernel of rtc-agent (issue 36, ARCHITECTURE-GUIDE §5):
//! what every feature of the runtime builds on and none of them owns. It
//! depends on no feature crate (`rtc-runtime`, `rtc-tools`,
//! `rtc-realtime`) and its code names no feature; features plug in from
//! `rtc-runtime` through the runtime's `Feature` trait and keep their
//! state in [`extensions::Extensions`].
//!
//! So far: the session context ([`context`]: configuration snapshot,
//! state, history, turn slot, feature state) and the snapshots contexts
//! share ([`config_cache`]) and test mode's settings
//! ([`test_mode`]); a session's event log ([`events`]: numbering, durability,
//! subscriptions) over the group-committing [`journal`] and the bounded
//! [`live`] channel; the client-tool [`broker`]; the cluster identity
//! ([`cluster`]); the typed map features keep their state in
//! ([`extensions`]); the errors of kernel operations ([`error`]). The
//! session contexts, the turn lifecycle, the tool registry and the
//! cluster's ownership move here next (see ARCHITECTURE.md).

pub mod broker;
pub mod cluster;
pub mod config_cache;
pub mod context;
pub mod error;
pub mod events;
pub mod extensions;
pub mod journal;
pub mod live;
#[cfg(test)]
mod store_tests;
pub mod test_mode;

pub use cluster::ClusterSettings;
pub use error::RuntimeError;
