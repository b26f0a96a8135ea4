//! Memory (R-MM): what the model keeps about an end user across sessions.
//!
//! `feature`: its hooks in the lifecycle; `service`: what its tools and the API do; `tools`: its built-in tools, one per file.

mod feature;
pub(crate) mod service;
pub(crate) mod tools;

pub(crate) use feature::Memory;
