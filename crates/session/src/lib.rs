//! The session kernel of rtc-agent (issue 36, ARCHITECTURE-GUIDE §5):
//! what every feature of the runtime builds on and none of them owns. It
//! depends on no feature crate (`rtc-runtime`, `rtc-tools`,
//! `rtc-realtime`) and its code names no feature; features plug in from
//! `rtc-runtime` through the kernel's [`feature::Feature`] trait and keep their
//! state in [`extensions::Extensions`].
//!
//! Its central type is [`Kernel`] (`kernel.rs`), which a host embeds
//! (see [`Host`]). Around it: the session context ([`context`]) and the
//! live contexts ([`contexts`]), the snapshots contexts share
//! ([`config_cache`]); a session's history ([`history`]) and event log
//! ([`events`]) over the group-committing [`journal`] and the bounded
//! [`live`] channel; the turn lifecycle ([`lifecycle`]) and model loop
//! ([`turn`]); the [`feature::Feature`] hooks; the tool registry
//! ([`registry`], [`tool`]) with the client-tool [`broker`] and test
//! mode's answers ([`mocks`]); variables and their bounds ([`variables`],
//! [`limits`]); the cluster layer ([`cluster`], [`ownership`],
//! [`remote_clients`], `control.rs`); the background work
//! ([`background`], `scheduler.rs`); the small model ([`small_model`]),
//! telemetry ([`telemetry`]) and the typed map features keep their state
//! in ([`extensions`]).

pub mod answer;
pub mod background;
pub mod broker;
pub mod chat_history;
pub mod cluster;
pub mod compaction;
pub mod config_cache;
pub mod context;
pub mod contexts;
mod control;
pub mod error;
pub mod events;
pub mod extensions;
pub mod feature;
pub mod history;
pub mod journal;
mod kernel;
pub mod lifecycle;
pub mod limits;
pub mod live;
pub mod mocks;
pub mod ownership;
pub mod quota;
pub mod registry;
pub mod remote_clients;
mod scheduler;
pub mod small_model;
pub mod step_tap;
#[cfg(test)]
mod store_tests;
pub mod telemetry;
pub mod test_mode;
pub mod tool;
pub mod turn;
pub mod usage;
pub mod variables;

pub use cluster::ClusterSettings;
pub use error::RuntimeError;
pub use kernel::{
    Contexts, DEFAULT_MAX_TOOLS, Host, Kernel, KernelConfig, KernelParts, Provider, ShutdownReport,
};
