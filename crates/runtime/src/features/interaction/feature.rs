//! Talking with the user beyond answers: `askUser` questions and the
//! `todoWrite` list. Both live on the session's row and in its
//! extensions ([`InteractionState`]); an open question holds back the
//! turns the runtime would start by itself.

use std::sync::Arc;

use futures::future::BoxFuture;
use rtc_store::SessionRecord;

use crate::extensions::Extensions;
use crate::feature::Feature;
use crate::features::interaction::InteractionService;
use crate::features::interaction::service::InteractionState;
use crate::session::SessionCtx;
use crate::tool::ToolHandler;
use crate::{Inner, RuntimeError};

pub(crate) struct Interaction;

impl Feature<Inner> for Interaction {
    fn name(&self) -> &'static str {
        "interaction"
    }

    fn tools(&self) -> Vec<Arc<dyn ToolHandler<Inner>>> {
        vec![
            Arc::new(crate::features::interaction::ask_user::AskUser),
            Arc::new(crate::features::interaction::todo_write::TodoWrite),
        ]
    }

    fn load<'a>(
        &'a self,
        _rt: &'a Inner,
        record: &'a SessionRecord,
        _fresh: bool,
        ext: &'a mut Extensions,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        // Nothing is kept for a session that asked nothing and has no
        // todos (most).
        if record.pending_question.is_some() || !record.todos.is_empty() {
            ext.insert(InteractionState::stored(record));
        }
        Box::pin(async { Ok(()) })
    }

    fn context_note<'a>(
        &'a self,
        _rt: &'a Arc<Inner>,
        ctx: &'a SessionCtx,
    ) -> BoxFuture<'a, Result<Option<String>, RuntimeError>> {
        let note = ctx
            .peek(|s: &InteractionState| open_todos(&s.todos))
            .flatten();
        Box::pin(async move { Ok(note) })
    }

    fn reload(&self, record: &SessionRecord, ext: &mut Extensions) {
        if record.pending_question.is_some() || !record.todos.is_empty() {
            ext.insert(InteractionState::stored(record));
        } else {
            ext.remove::<InteractionState>();
        }
    }

    fn user_message_arriving<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        // A user message instead of answers dismisses the question.
        Box::pin(InteractionService::of(rt).dismiss_question(ctx))
    }

    fn holds_turns(&self, ctx: &SessionCtx) -> bool {
        ctx.peek(|s: &InteractionState| s.question.is_some())
            .unwrap_or(false)
    }
}

/// The todo list as a compacted request carries it, when any is open.
fn open_todos(todos: &[rtc_protocol::TodoItem]) -> Option<String> {
    use rtc_protocol::TodoStatus;
    if todos.iter().all(|t| t.status == TodoStatus::Completed) {
        return None;
    }
    let mut note = "Your todo list (todoWrite) as it stands:".to_owned();
    for t in todos {
        let status = match t.status {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in progress",
            TodoStatus::Completed => "completed",
        };
        note.push_str(&format!("\n- [{status}] {}", t.content));
    }
    Some(note)
}
