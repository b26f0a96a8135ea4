//! Talking with the user beyond answers (R-AU, R-TD): askUser questions
//! and the todo list.
//!
//! `ask_user`: the askUser tool; `feature`: its hooks in the lifecycle; `service`: what its tools and the API do; `todo_write`: the todoWrite tool.

pub(crate) mod ask_user;
mod feature;
pub(crate) mod service;
pub(crate) mod todo_write;

pub(crate) use feature::Interaction;

/// The interaction feature's operations on its host.
pub(crate) type InteractionService<'a> = crate::feature::Service<'a, feature::Interaction>;
