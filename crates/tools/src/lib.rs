//! Executors that reach outside the process. For now: the outbound-address
//! guard every HTTP client of the platform is built with (R-SEC-2), and the
//! MCP client used to discover a server's tools (R-TR-2). The tool registry,
//! the HTTP and client-tool executors and the LLM's built-in tools join it
//! with the conversation runtime.

pub mod http_exec;
pub mod mcp;
pub mod net_guard;
pub mod web_fetch;
pub mod web_search;

/// Install the process-wide TLS crypto provider (ring). Idempotent; called
/// before any HTTP client is built.
pub fn init_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
