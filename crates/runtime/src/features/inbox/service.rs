//! Delivery between turns (R-BX-3): items waiting in a session's inbox
//! (a sub-agent's report, a parent's message, a sync call's result)
//! become messages of its history, exactly once, when the session can
//! take them; a sub-agent with nothing left to do (no question open, no
//! sub-agent of its own working) reports to its parent. The lifecycle
//! (`crate::lifecycle`) decides when.

use rtc_core::report_marks::{SUB_AGENT_REPORT, quote_marks};
use std::sync::Arc;

use crate::features::sub_agents::tools::sub_agent;
use rtc_protocol::{
    MessageCompleted, MessageRole, SessionStatus, SubAgentCompleted, ToolCompleted,
};
use rtc_store::{InboxItem, InboxKind};
use serde_json::json;

use super::InboxService;
use crate::RuntimeError;
use crate::events::Durability;
use crate::features::sub_agents::SubAgentService;
use crate::features::sub_agents::service::{Awaited, report_item};
use crate::history::message;
use crate::session::SessionCtx;

/// The `name` of a sub-agent's report in its parent's history.
pub(crate) const SUB_AGENT_REPORT_NAME: &str = "subagent";
/// The `name` of a delegated task's report in its session's history.
pub(crate) const TASK_REPORT_NAME: &str = "task";

/// Whether something may wait in a session's inbox (R-BX-3), kept in its
/// extensions: looked at the next turn boundary.
#[derive(Debug, Default)]
pub(crate) struct InboxHint(pub bool);

impl InboxService<'_> {
    /// Deliver waiting inbox items unless a turn is running (it delivers
    /// them when it ends).
    ///
    /// It runs to its end on a task of its own even when the caller stops
    /// waiting (a task driver dropped while it reports, a request whose
    /// client went away): stopped between delivering an item and starting
    /// the turn that answers it, it would leave the item delivered and
    /// unanswered, or consumed and never delivered, with the session
    /// marked as running.
    pub(crate) async fn kick(self, ctx: &Arc<SessionCtx>) -> Result<(), RuntimeError> {
        let (rt, ctx) = (self.rt.clone(), ctx.clone());
        self.to_the_end("delivering the inbox", async move {
            InboxService::of(&rt).kick_now(&ctx).await
        })
        .await?
    }

    /// [`Self::kick`], in the caller's task.
    async fn kick_now(self, ctx: &Arc<SessionCtx>) -> Result<(), RuntimeError> {
        ctx.ext(|h: &mut InboxHint| h.0 = true);
        let mut slot = ctx.turn.lock().await;
        if slot.as_ref().is_some_and(|t| !t.handle.is_finished()) || self.tasks.is_closed() {
            return Ok(());
        }
        if !self.cluster().claim(ctx).await? {
            // The instance running the session's turn delivers them.
            if let Some(owner) = self
                .store
                .live_turn_owner(&ctx.id, self.cluster().live_since())
                .await?
            {
                self.store
                    .send_control(&owner, rtc_store::ControlOp::Kick, &ctx.id)
                    .await?;
            }
            return Ok(());
        }
        match self.deliver_inbox(ctx).await {
            Ok(true) => *slot = Some(self.spawn_turn(ctx)),
            Ok(false) => self.cluster().release(ctx).await,
            Err(e) => {
                self.cluster().release(ctx).await;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Put `item` in its session's inbox and deliver it now if the session
    /// is idle and free to go on.
    pub(crate) async fn post(self, item: &InboxItem) -> Result<(), RuntimeError> {
        self.store.post_inbox(item).await?;
        let ctx = self.session(&item.session_id).await?;
        self.kick(&ctx).await
    }

    /// Turn the session's unconsumed inbox items into messages, when it can
    /// take them: active, nobody asked, the user of a voice session not
    /// speaking, and every awaited sync report among them. Returns whether
    /// anything was delivered.
    pub(crate) async fn deliver_inbox(self, ctx: &SessionCtx) -> Result<bool, RuntimeError> {
        if !ctx
            .extensions
            .lock()
            .remove::<InboxHint>()
            .is_some_and(|h| h.0)
        {
            return Ok(false);
        }
        let items = self.store.pending_inbox(&ctx.id).await?;
        if items.is_empty() {
            return Ok(false);
        }
        {
            let state = ctx.state.lock().await;
            let ready = state.is_open()
                && crate::features::interaction::service::pending_question(ctx).is_none()
                && !crate::features::voice::user_speaking(ctx)
                && {
                    let mut extensions = ctx.extensions.lock();
                    let all_reported = extensions.get::<Awaited>().is_none_or(|awaited| {
                        awaited.0.iter().all(|call| {
                            items.iter().any(|i| {
                                i.kind == InboxKind::CallResult && i.call_id.as_ref() == Some(call)
                            })
                        })
                    });
                    if all_reported {
                        extensions.remove::<Awaited>();
                    }
                    all_reported
                };
            if !ready {
                ctx.ext(|h: &mut InboxHint| h.0 = true);
                return Ok(false);
            }
        }
        let answered: std::collections::HashSet<String> = self
            .with_history(ctx, |h| {
                h.iter().filter_map(|m| m.tool_call_id.clone()).collect()
            })
            .await?;
        for item in items {
            self.deliver(ctx, item, &answered).await?;
        }
        // Delivery is consumption: committed before anyone looks again.
        self.journal.flush().await;
        Ok(true)
    }

    async fn deliver(
        self,
        ctx: &SessionCtx,
        item: InboxItem,
        answered: &std::collections::HashSet<String>,
    ) -> Result<(), RuntimeError> {
        let from = item.from_session_id.clone();
        let call = item
            .call_id
            .clone()
            .filter(|c| item.kind == InboxKind::CallResult && !answered.contains(c));
        if let Some(call_id) = call {
            let mut m = message(MessageRole::Tool, &item.content);
            m.id = item.message_id;
            m.tool_call_id = Some(call_id.clone());
            m.name = Some(sub_agent::NAME.to_owned());
            let result: serde_json::Value =
                serde_json::from_str(&item.content).unwrap_or(json!(item.content));
            let event = ToolCompleted::new(&call_id, sub_agent::NAME, false, result).into();
            return self.append(ctx, m, vec![event], Durability::Queued).await;
        }
        let (name, content) = match item.kind {
            InboxKind::ParentMessage => {
                if ctx.parent.is_some() {
                    self.store.set_sub_agent_running(&ctx.id).await?;
                }
                ("parent", item.content)
            }
            // A report, or a sync result nobody waits for any more.
            InboxKind::Report | InboxKind::CallResult => {
                (SUB_AGENT_REPORT_NAME, report_text(&item.content))
            }
            // A delegated task's report, written when it ended.
            InboxKind::TaskReport => (TASK_REPORT_NAME, item.content),
        };
        let mut m = message(MessageRole::User, &content);
        m.id = item.message_id;
        m.name = Some(name.to_owned());
        let mut event = MessageCompleted::of(&m);
        event.from_session_id = from;
        self.append(ctx, m, vec![event.into()], Durability::Queued)
            .await
    }

    /// A sub-agent with nothing left to do reports its last words to its
    /// parent (the awaiting call's result in sync mode, else a message).
    pub(crate) async fn report_if_done(self, ctx: &SessionCtx) -> Result<(), RuntimeError> {
        let Some(info) = &ctx.parent else {
            return Ok(());
        };
        let status = {
            let state = ctx.state.lock().await;
            if state.status == SessionStatus::Active && !self.can_continue(ctx, &state) {
                return Ok(()); // it waits on the user or its own sub-agents
            }
            if state.status == SessionStatus::Ended {
                "ended"
            } else {
                "completed"
            }
        };
        let Some(agent) = self.store.sub_agent(&ctx.id).await? else {
            return Ok(());
        };
        // Done means its own sub-agents are done too (their reports start
        // its next turn); an ended sub-agent reports at once.
        if !agent.running
            || (status == "completed" && self.store.working_children(&ctx.id).await? > 0)
        {
            return Ok(());
        }
        let report = SubAgentService::of(self.rt).final_words(ctx).await?;
        let item = report_item(
            &info.parent_id,
            &ctx.id,
            Some(&info.title),
            status,
            &report,
            agent.call_id.clone(),
        );
        self.store.finish_sub_agent_run(&ctx.id, &item).await?;
        let parent = self.session(&info.parent_id).await?;
        let event = SubAgentCompleted {
            sub_session_id: ctx.id.clone(),
            title: Some(info.title.clone()),
            status: status.to_owned(),
            report: Some(report),
            reason: None,
        };
        SubAgentService::of(self.rt)
            .tree_event(&parent, event.into())
            .await?;
        self.kick(&parent).await
    }
}

/// A report as the parent reads it: the report mark, then the
/// sub-agent's words with any mark in them quoted.
fn report_text(content: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(content).unwrap_or(json!({"report": content}));
    format!(
        "{SUB_AGENT_REPORT} \"{}\" ({}) {}:\n\n{}",
        quote_marks(v["title"].as_str().unwrap_or("sub-agent")),
        quote_marks(v["sub_session_id"].as_str().unwrap_or("?")),
        quote_marks(v["status"].as_str().unwrap_or("completed")),
        quote_marks(v["report"].as_str().unwrap_or(content))
    )
}
