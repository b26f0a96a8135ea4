//! Wire and configuration types of rtc-agent: every JSON shape the REST API
//! accepts or returns. Pure data with serde and OpenAPI schema derives; no IO,
//! no validation (that lives in `rtc-core`).
//!
//! Resource configuration is camelCase. Read-only
//! fields (`id`, `createdAt`, `updatedAt`) are accepted and ignored on write so
//! that a client can send back what it read.

pub mod assistant;
pub mod binding;
pub mod builtin;
pub mod error;
pub mod events;
pub mod expr;
pub mod interaction;
pub mod mcp;
pub mod provider;
pub mod realtime;
pub mod secret;
pub mod session;
pub mod speech;
pub mod subagent;
pub mod task;
pub mod testing;
pub mod tool;
pub mod usage;
pub mod voice;
pub mod workflow;
pub mod workspace;

pub use assistant::*;
pub use binding::*;
pub use builtin::*;
pub use error::*;
pub use events::*;
pub use expr::*;
pub use interaction::*;
pub use mcp::*;
pub use provider::*;
pub use realtime::*;
pub use secret::*;
pub use session::*;
pub use speech::*;
pub use subagent::*;
pub use task::*;
pub use testing::*;
pub use tool::*;
pub use usage::*;
pub use voice::*;
pub use workflow::*;
pub use workspace::*;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A list response: `{"data": [...]}`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ListResponse<T> {
    pub data: Vec<T>,
}

impl<T> ListResponse<T> {
    pub fn new(data: Vec<T>) -> Self {
        Self { data }
    }
}

/// The type of a dynamic variable or of an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum ValueType {
    String,
    Number,
    Boolean,
    Json,
}

impl ValueType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Number => "number",
            Self::Boolean => "boolean",
            Self::Json => "json",
        }
    }
}

impl std::fmt::Display for ValueType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
