//! askUser and todoWrite in a session (R-AU, R-TD, R-BX-5). A question
//! stops the turn and is stored on the session, so it survives a restart;
//! the answers (REST or WebSocket) become the call's result, in the exact
//! words the model expects, and start the next turn. A user message sent
//! instead of answers dismisses the question.

use rtc_core::ValidationError;
use rtc_core::llm::ToolCall;
use std::sync::Arc;

use crate::features::interaction::ask_user;
use rtc_protocol::{
    AnswerParams, AnswerResponse, AskUserAnswered, AskUserQuestion, EventBody, MessageRole,
    PendingQuestion, SessionStatus, TodoItem, TodoUpdated, ToolCompleted,
};
use rtc_store::{SessionUpdate, now_millis};
use serde_json::json;

use super::InteractionService;
use crate::events::Durability;
use crate::history::message;
use crate::session::SessionCtx;
use crate::tool::{CallOutcome, Interrupt, parsed};
use crate::{Runtime, RuntimeError};

/// The session's askUser question and todo list (both also stored on the
/// session's row), kept in its extensions.
#[derive(Debug, Default, Clone)]
pub(crate) struct InteractionState {
    /// The question the session waits on (R-AU-2).
    pub question: Option<PendingQuestion>,
    /// The model's todo list (R-TD).
    pub todos: Vec<TodoItem>,
}

impl InteractionState {
    /// The state stored on a session's row.
    pub(crate) fn stored(record: &rtc_store::SessionRecord) -> Self {
        Self {
            question: record.pending_question.clone(),
            todos: record.todos.clone(),
        }
    }
}

/// The question `ctx` waits on, if any.
pub(crate) fn pending_question(ctx: &SessionCtx) -> Option<PendingQuestion> {
    ctx.peek(|s: &InteractionState| s.question.clone())
        .flatten()
}

/// `todoWrite` (R-TD): the whole list replaced, stored with the session
/// and announced; it needs nothing but the session.
pub(crate) async fn todo_write(ctx: &SessionCtx, todos: Vec<TodoItem>) -> Result<(), RuntimeError> {
    ctx.ext(|s: &mut InteractionState| s.todos = todos.clone());
    let update = SessionUpdate {
        todos: Some(todos.clone()),
        ..SessionUpdate::default()
    };
    ctx.events
        .emit_with(vec![TodoUpdated { todos }.into()], update)
        .await
}

/// The result a dismissed question gets.
const DISMISSED: &str =
    "The user did not answer your questions and wrote a message instead; read it and go on.";

impl InteractionService<'_> {
    pub(crate) async fn ask_user(
        self,
        ctx: &SessionCtx,
        call: &ToolCall,
    ) -> Result<CallOutcome, RuntimeError> {
        let questions = parsed!(ask_user::parse(&call.arguments));
        let pending = PendingQuestion {
            call_id: call.id.clone(),
            questions,
            asked_at: rtc_core::time::rfc3339_from_millis(now_millis()),
            sub_session_id: ctx.parent.as_ref().map(|_| ctx.id.clone()),
            sub_session_title: ctx.parent.as_ref().map(|s| s.title.clone()),
        };
        let asked = ctx.ext(|s: &mut InteractionState| {
            s.question.is_none() && {
                s.question = Some(pending.clone());
                true
            }
        });
        if !asked {
            return Ok(CallOutcome::error(
                "a question is already waiting for the user; ask one set of questions at a time",
            ));
        }
        // A voice host hears the first question now (design
        // voice-pipeline.md §4(f)); its transcripts answer them in turn.
        let item_id = crate::features::voice::hears(ctx).then(|| rtc_store::new_id("ask"));
        let event = AskUserQuestion {
            call_id: pending.call_id.clone(),
            questions: pending.questions.clone(),
            sub_session_id: pending.sub_session_id.clone(),
            sub_session_title: pending.sub_session_title.clone(),
            spoken: item_id.is_some(),
            item_id: item_id.clone(),
        };
        let update = SessionUpdate {
            pending_question: Some(Some(pending.clone())),
            ..SessionUpdate::default()
        };
        ctx.events
            .emit_with(vec![event.clone().into()], update)
            .await?;
        if ctx.parent.is_some() {
            self.to_root(ctx, event.into()).await?;
        }
        if let Some(item) = &item_id {
            crate::features::voice::ask(self.rt, ctx, item, &pending, 0);
        }
        let mut outcome = CallOutcome::ok(json!({"waiting": "the user's answers"}));
        outcome.deferred = true;
        Ok(outcome.interrupt(Interrupt::Wait))
    }

    /// Resolve the pending question, if any, with `result`: the call's
    /// result message and the cleared question are committed together.
    async fn settle_question(
        self,
        ctx: &SessionCtx,
        pending: &PendingQuestion,
        result: &str,
        event: AskUserAnswered,
    ) -> Result<(), RuntimeError> {
        let mut m = message(MessageRole::Tool, result);
        m.tool_call_id = Some(pending.call_id.clone());
        m.name = Some(ask_user::NAME.to_owned());
        let completed = ToolCompleted::new(&pending.call_id, ask_user::NAME, false, json!(result));
        let update = SessionUpdate {
            pending_question: Some(None),
            ..SessionUpdate::default()
        };
        self.append_with(
            ctx,
            m,
            vec![event.clone().into(), completed.into()],
            update,
            Durability::Committed,
        )
        .await?;
        let Some(info) = &ctx.parent else {
            return Ok(());
        };
        let forwarded = AskUserAnswered {
            sub_session_id: Some(ctx.id.clone()),
            sub_session_title: Some(info.title.clone()),
            ..event
        };
        self.to_root(ctx, forwarded.into()).await
    }

    /// A sub-agent's question and its answer also reach the root session's
    /// user (R-BX-4), labelled with the sub-agent.
    async fn to_root(self, ctx: &SessionCtx, event: EventBody) -> Result<(), RuntimeError> {
        self.session(&ctx.root_id).await?.events.emit(event).await
    }

    /// A user message instead of answers: the question is dismissed.
    pub(crate) async fn dismiss_question(self, ctx: &SessionCtx) -> Result<(), RuntimeError> {
        let taken = ctx
            .extensions
            .lock()
            .get_mut::<InteractionState>()
            .and_then(|s| s.question.take());
        let Some(pending) = taken else {
            return Ok(());
        };
        let event = AskUserAnswered {
            call_id: pending.call_id.clone(),
            answers: None,
            dismissed: true,
            sub_session_id: None,
            sub_session_title: None,
        };
        self.settle_question(ctx, &pending, DISMISSED, event).await
    }
}

impl Runtime {
    /// The session's todo list.
    pub async fn todos(&self, workspace: &str, id: &str) -> Result<Vec<TodoItem>, RuntimeError> {
        let ctx = self.inner.session_in(workspace, id).await?;
        Ok(ctx
            .peek(|s: &InteractionState| s.todos.clone())
            .unwrap_or_default())
    }
}

impl InteractionService<'_> {
    /// The user's answers to `ctx`'s pending question (R-AU-2/3, R-BX-5):
    /// matched to the options, committed as the call's result, then the
    /// next turn starts.
    pub(crate) async fn answer_question(
        self,
        ctx: &Arc<SessionCtx>,
        params: AnswerParams,
    ) -> Result<AnswerResponse, RuntimeError> {
        let inner = self;
        // The question may have been asked by a turn on another instance.
        inner.cluster().reload_shared(ctx).await?;
        if ctx.state.lock().await.status == SessionStatus::Ended {
            return Err(RuntimeError::session_ended());
        }
        // The turn that asked ends first, idle work included: a sub-agent
        // must not take the answered question for "nothing left to do" and
        // report before the answer's turn has run.
        if ctx.peek(|s: &InteractionState| s.question.is_some()) == Some(true) {
            ctx.wait_turn().await;
        }
        let (pending, answers) = ctx.ext(|s: &mut InteractionState| take_answered(s, &params))?;
        let result = ask_user::result_text(&pending.questions, &answers);
        let event = AskUserAnswered {
            call_id: pending.call_id.clone(),
            answers: Some(answers.clone()),
            dismissed: false,
            sub_session_id: None,
            sub_session_title: None,
        };
        inner.settle_question(ctx, &pending, &result, event).await?;
        // The turn that asked may still be ending on another instance.
        inner.cluster().start_turn_for_request(ctx, false).await?;
        Ok(AnswerResponse {
            call_id: pending.call_id,
            answers,
        })
    }
}

/// The pending question of `state` taken with `params`' answers matched to
/// its options; nothing is taken when they do not fit.
fn take_answered(
    state: &mut InteractionState,
    params: &AnswerParams,
) -> Result<(PendingQuestion, Vec<String>), RuntimeError> {
    let Some(pending) = state.question.as_ref() else {
        return Err(RuntimeError::Conflict {
            code: "no_pending_question",
            message: "the session is not waiting for answers".into(),
        });
    };
    if params
        .call_id
        .as_ref()
        .is_some_and(|c| *c != pending.call_id)
    {
        return Err(RuntimeError::Conflict {
            code: "stale_question",
            message: format!(
                "the session waits on question `{}`, not this one",
                pending.call_id
            ),
        });
    }
    let answers = ask_user::match_answers(&pending.questions, &params.answers).map_err(|e| {
        let field = e
            .index
            .map_or("answers".to_owned(), |i| format!("answers[{i}]"));
        ValidationError::new("invalid_answer", field, e.message)
    })?;
    let pending = state
        .question
        .take()
        .ok_or_else(|| RuntimeError::Internal("the pending question vanished".into()))?;
    Ok((pending, answers))
}
