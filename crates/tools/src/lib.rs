//! Everything that reaches outside the process: the outbound-address guard
//! every HTTP client of the platform is built with (R-SEC-2), the HTTP tool
//! executor, the MCP client and connection pool (R-TR-2), and the web
//! built-ins: webSearch over four engines and webFetch with Markdown
//! conversion (R-WS, R-WFF), and the OpenCode task backend's client, event
//! stream and server supervisor (R-TK). What the model sees of those
//! built-ins lives with the runtime's tool registry.

pub mod http_exec;
pub mod mcp;
pub mod net_guard;
pub mod opencode;
pub mod outbound_allow;
pub mod scrub;
pub mod upstream;
pub mod web_fetch;
pub mod web_search;

/// Install the process-wide TLS crypto provider (ring). Idempotent; called
/// before any HTTP client is built.
pub fn init_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
