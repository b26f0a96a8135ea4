//! The kernel's session types (`rtc_session::context`) under the path the
//! runtime's features use, and the client connection hosts open.

pub use rtc_session::context::SessionConfig;
pub(crate) use rtc_session::context::SessionCtx;
pub use rtc_session::contexts::ClientConnection;
