//! The runtime driven in-process, on SQLite, against the scripted model:
//! turns, tools, loops, endings, shutdown. No binary, no PostgreSQL, no
//! Node; tests wait on events, not on time.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "integration tests fail loudly"
)]

mod harness;

mod amplifiers;
mod builtins;
mod context;
mod conversation;
mod ending;
mod eviction;
mod features;
mod limits;
mod loops;
mod providers;
mod secrets;
mod shutdown;
mod small_model;
mod tasks;
mod test_mode;
mod web;
mod workflows;
