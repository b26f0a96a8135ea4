//! The memory tools in a session (R-MM-1..2): stored per workspace and end
//! user (the session's `userId`), so they persist across sessions and no
//! other user sees them. Every change emits `memory.updated`.

use crate::features::memory::tools::MemoryOp;
use rtc_core::time::rfc3339_from_millis;
use rtc_protocol::{Memory, MemoryUpdated};
use rtc_store::{MemoryRecord, Store};
use serde_json::{Value, json};

use crate::session::SessionCtx;
use crate::tool::CallOutcome;
use crate::{Runtime, RuntimeError};

/// Most memories one user may have in a workspace.
pub const MAX_MEMORIES_PER_USER: i64 = 1_000;

/// A memory as the model reads it (snake_case, like the tools' own schemas).
fn for_model(m: &MemoryRecord) -> Value {
    json!({"memory_id": m.id, "content": m.content, "tags": m.tags, "updated_at": rfc3339_from_millis(m.updated_at)})
}

pub(crate) fn view(m: MemoryRecord) -> Memory {
    Memory {
        id: m.id,
        user_id: m.user_id,
        content: m.content,
        tags: m.tags,
        created_at: rfc3339_from_millis(m.created_at),
        updated_at: rfc3339_from_millis(m.updated_at),
    }
}

/// What the memory tools work with: the store and the calling session
/// (its workspace and user scope every query).
pub(crate) struct MemoryCx<'a> {
    pub store: &'a Store,
    pub session: &'a SessionCtx,
}

impl MemoryCx<'_> {
    /// Run one memory tool call.
    pub async fn run(&self, op: MemoryOp) -> Result<CallOutcome, RuntimeError> {
        let ctx = self.session;
        let Some(user) = ctx.user_id.as_deref() else {
            return Ok(CallOutcome::error(
                "memory is kept per user and this session has no userId; answer without it",
            ));
        };
        let ws = ctx.workspace.as_str();
        let store = self.store;
        let outcome = match op {
            MemoryOp::Save(args) => {
                if store.list_memories(ws, user, 1, 0).await?.1 >= MAX_MEMORIES_PER_USER {
                    return Ok(CallOutcome::error(format!(
                        "this user already has {MAX_MEMORIES_PER_USER} memories; update or delete old ones first"
                    )));
                }
                let m = store
                    .insert_memory(ws, user, args.content.trim(), &args.tags)
                    .await?;
                self.event("saved", &m.id).await?;
                CallOutcome::ok(json!({"memory_id": m.id, "saved": true}))
            }
            MemoryOp::Update(args) => {
                let content = args.content.as_deref().map(str::trim);
                match store
                    .update_memory(ws, user, &args.memory_id, content, args.tags.as_deref())
                    .await?
                {
                    Some(m) => {
                        self.event("updated", &m.id).await?;
                        CallOutcome::ok(for_model(&m))
                    }
                    None => CallOutcome::error(format!("there is no memory `{}`", args.memory_id)),
                }
            }
            MemoryOp::Delete(args) => {
                if store.delete_memory(ws, Some(user), &args.memory_id).await? {
                    self.event("deleted", &args.memory_id).await?;
                    CallOutcome::ok(json!({"memory_id": args.memory_id, "deleted": true}))
                } else {
                    CallOutcome::error(format!("there is no memory `{}`", args.memory_id))
                }
            }
            MemoryOp::List(args) => {
                let (page, total) = store
                    .list_memories(ws, user, args.limit, args.offset)
                    .await?;
                let memories: Vec<Value> = page.iter().map(for_model).collect();
                CallOutcome::ok(json!({"memories": memories, "total": total}))
            }
            MemoryOp::Search(args) => {
                let found = store
                    .search_memories(ws, user, &args.query, args.limit)
                    .await?;
                let results: Vec<Value> = found
                    .iter()
                    .map(|(m, score)| {
                        let mut v = for_model(m);
                        v["score"] = json!((score * 1000.0).round() / 1000.0);
                        v
                    })
                    .collect();
                CallOutcome::ok(
                    json!({"query": args.query, "result_count": results.len(), "results": results}),
                )
            }
        };
        Ok(outcome)
    }

    async fn event(&self, action: &str, id: &str) -> Result<(), RuntimeError> {
        self.session
            .events
            .emit(
                MemoryUpdated {
                    action: action.to_owned(),
                    memory_id: id.to_owned(),
                }
                .into(),
            )
            .await
    }
}

impl Runtime {
    /// A user's memories, newest first, and their total.
    pub async fn memories(
        &self,
        workspace: &str,
        user: &str,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<Memory>, i64), RuntimeError> {
        let (page, total) = self
            .inner
            .store
            .list_memories(workspace, user, limit, offset)
            .await?;
        Ok((page.into_iter().map(view).collect(), total))
    }

    /// Forget one memory of the workspace.
    pub async fn delete_memory(&self, workspace: &str, id: &str) -> Result<(), RuntimeError> {
        if self.inner.store.delete_memory(workspace, None, id).await? {
            Ok(())
        } else {
            Err(RuntimeError::not_found("memory", id))
        }
    }

    /// Forget everything about a user; how many memories there were.
    pub async fn delete_user_memories(
        &self,
        workspace: &str,
        user: &str,
    ) -> Result<u64, RuntimeError> {
        Ok(self
            .inner
            .store
            .delete_user_memories(workspace, user)
            .await?)
    }
}
