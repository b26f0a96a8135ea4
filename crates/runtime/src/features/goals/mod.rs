//! Goals (R-GL, R-BX-2): conditions the model works toward over several
//! turns, judged after each turn and continued by the runtime itself.
//!
//! `feature`: its hooks in the lifecycle; `service`: what its tools and the API do; `tools`: its built-in tools, one per file.

mod feature;
pub(crate) mod service;
pub(crate) mod tools;

pub(crate) use feature::Goals;

/// The goals feature's operations on its host.
pub(crate) type GoalService<'a> = crate::feature::Service<'a, feature::Goals>;
