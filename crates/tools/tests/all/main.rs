//! Integration tests of the outbound executors against real local servers.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod hostile_opencode;
mod mcp;
mod mcp_pool;
mod opencode;
mod redirects;
mod web_fetch;
mod web_search;
