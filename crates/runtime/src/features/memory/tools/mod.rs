//! The memory tools (R-MM-1..2): what the model remembers about the end
//! user across sessions. One tool per file; the runtime stores them per
//! workspace and user.

use crate::builtins::ArgumentError;

/// Memories belong to an end user: the tools are offered only to sessions
/// that have a `userId` (counted for any session when an assistant is
/// saved).
pub(crate) fn offered(offer: &crate::tool::Offer<'_>) -> bool {
    offer.assistant.features.memory && offer.session.is_none_or(|s| s.user_id.is_some())
}

pub mod delete;
pub mod list;
pub mod save;
pub mod search;
pub mod update;

/// A memory tool's call, parsed, for the memory service (`super::super::service`).
pub(crate) enum MemoryOp {
    Save(save::Save),
    Update(update::Update),
    Delete(delete::Delete),
    List(list::List),
    Search(search::Search),
}

/// Longest memory, in characters.
pub const MAX_CONTENT_CHARS: usize = 2_000;
/// Most tags on a memory.
pub const MAX_TAGS: usize = 10;

fn content_schema() -> serde_json::Value {
    serde_json::json!({"type": "string", "minLength": 1, "maxLength": MAX_CONTENT_CHARS,
        "description": "One self-contained fact, written so it makes sense later without this conversation."})
}

fn tags_schema() -> serde_json::Value {
    serde_json::json!({"type": "array", "maxItems": MAX_TAGS, "items": {"type": "string", "minLength": 1, "maxLength": 40},
        "description": "Optional keywords that help find it again."})
}

/// Content must say something.
fn check_content(content: &str) -> Result<(), ArgumentError> {
    if content.trim().is_empty() {
        Err("`content` must not be blank".into())
    } else {
        Ok(())
    }
}
