//! Sub-agents (R-SA, R-BX-3/4): sessions a session starts to work beside
//! it, in trees with limits, reporting back through the inbox.
//!
//! `feature`: its hooks in the lifecycle; `service`: what its tools and the API do; `tools`: its built-in tools, one per file; `tree`: the session tree the sub-agents form.

mod feature;
pub(crate) mod service;
pub(crate) mod tools;
pub(crate) mod tree;

pub(crate) use feature::SubAgents;

/// The sub agents feature's operations on its host.
pub(crate) type SubAgentService<'a> = crate::feature::Service<'a, feature::SubAgents>;
