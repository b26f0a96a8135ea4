//! The realtime adapters of every dialect against the mock realtime
//! provider over real WebSockets.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod connect;
mod support;
mod tools;
mod turns;
