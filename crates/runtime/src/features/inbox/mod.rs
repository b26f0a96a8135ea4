//! The inbox (R-BX-3): items that arrive for a session outside its turns
//! (sub-agent and task reports, a parent's messages) and become its next
//! turn's input, exactly once.
//!
//! `feature`: its hooks in the lifecycle; `service`: what its tools and the API do.

mod feature;
pub(crate) mod service;

pub(crate) use feature::Inbox;

/// The inbox feature's operations on its host.
pub(crate) type InboxService<'a> = crate::feature::Service<'a, feature::Inbox>;

#[cfg(test)]
mod service_tests;
