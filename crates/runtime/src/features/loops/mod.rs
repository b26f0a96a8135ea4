//! Loops (R-LP, R-BX-1): recurring turns on a schedule, claimed by one
//! instance per tick.
//!
//! `feature`: its hooks in the lifecycle; `service`: what its tools and the API do; `tick_finisher`: finished ticks, committed in groups; `tools`: its built-in tools, one per file.

mod feature;
pub(crate) mod service;
pub(crate) mod tick_finisher;
pub(crate) mod tools;

pub(crate) use feature::Loops;

/// The loops feature's operations on its host.
pub(crate) type LoopService<'a> = crate::feature::Service<'a, feature::Loops>;
