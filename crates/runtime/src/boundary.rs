//! What happens between turns. When a turn ends by itself, the session
//! may go on without the user: items waiting in its inbox (a sub-agent's
//! report, a parent's message; R-BX-3) are delivered first, then an active
//! goal continues (R-GL-2). A sub-agent that has nothing left to do (no
//! question open, no sub-agent of its own working) reports to its parent. Only the turn that still owns the session's turn
//! slot decides, under the slot's lock, so two turns never run at once
//! and nothing posted meanwhile is missed.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::builtins::subagents::sub_agent;
use rtc_protocol::{
    MessageCompleted, MessageRole, SessionEnded, SessionStatus, SubAgentCompleted, ToolCompleted,
};
use rtc_store::{InboxItem, InboxKind};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::events::Durability;
use crate::session::SessionCtx;
use crate::subagents::report_item;
use crate::turn::message;
use crate::{Inner, RuntimeError};

impl Inner {
    /// At the end of turn `turn` (not interrupted): settle the goals, then
    /// start the next turn by itself if there is input for one; otherwise
    /// the session is idle (and a sub-agent reports).
    pub(crate) async fn after_turn(
        self: &Arc<Self>,
        ctx: &Arc<SessionCtx>,
        cancel: &CancellationToken,
        turn: u64,
    ) {
        let goal = if ctx.config.assistant.features.goals {
            self.settle_goals(ctx).await.unwrap_or_else(|e| {
                tracing::error!(session = %ctx.id, error = %e, "settling goals failed");
                None
            })
        } else {
            None
        };
        let mut slot = ctx.turn.lock().await;
        // Cancelled, or someone took the slot: they decide what comes next.
        if cancel.is_cancelled() || slot.as_ref().map(|t| t.id) != Some(turn) {
            return;
        }
        // Shutting down: what would come next stays in the store (inbox,
        // goals) and goes on after the next start.
        if self.tasks.is_closed() {
            *slot = None;
            return;
        }
        let started = async {
            if self.deliver_inbox(ctx).await? {
                *slot = Some(self.spawn_turn(ctx));
            } else if let Some(goal) = &goal {
                self.continue_goal(ctx, goal, &mut slot).await?;
            }
            Ok::<_, RuntimeError>(slot.as_ref().is_some_and(|t| t.id != turn))
        };
        match started.await {
            Ok(true) => return,
            Ok(false) => {}
            Err(e) => {
                tracing::error!(session = %ctx.id, error = %e, "starting the next turn failed")
            }
        }
        if let Err(e) = self.report_if_done(ctx).await {
            tracing::error!(session = %ctx.id, error = %e, "reporting to the parent failed");
        }
        *slot = None;
    }

    /// Put `item` in its session's inbox and deliver it now if the session
    /// is idle and free to go on.
    pub(crate) async fn post(self: &Arc<Self>, item: &InboxItem) -> Result<(), RuntimeError> {
        self.store.post_inbox(item).await?;
        let ctx = self.session(&item.session_id).await?;
        self.kick(&ctx).await
    }

    /// Deliver waiting inbox items unless a turn is running (it delivers
    /// them when it ends).
    pub(crate) async fn kick(self: &Arc<Self>, ctx: &Arc<SessionCtx>) -> Result<(), RuntimeError> {
        ctx.inbox_hint.store(true, Ordering::SeqCst);
        let mut slot = ctx.turn.lock().await;
        if slot.as_ref().is_some_and(|t| !t.handle.is_finished()) || self.tasks.is_closed() {
            return Ok(());
        }
        if self.deliver_inbox(ctx).await? {
            *slot = Some(self.spawn_turn(ctx));
        }
        Ok(())
    }

    /// Turn the session's unconsumed inbox items into messages, when it can
    /// take them: active, nobody asked, and every awaited sync report
    /// among them. Returns whether anything was delivered.
    async fn deliver_inbox(&self, ctx: &SessionCtx) -> Result<bool, RuntimeError> {
        if !ctx.inbox_hint.swap(false, Ordering::SeqCst) {
            return Ok(false);
        }
        let items = self.store.pending_inbox(&ctx.id).await?;
        if items.is_empty() {
            return Ok(false);
        }
        {
            let mut state = ctx.state.lock().await;
            let ready = state.asks_nobody()
                && state.awaited.iter().all(|call| {
                    items.iter().any(|i| {
                        i.kind == InboxKind::CallResult && i.call_id.as_ref() == Some(call)
                    })
                });
            if !ready {
                ctx.inbox_hint.store(true, Ordering::SeqCst);
                return Ok(false);
            }
            state.awaited.clear();
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
        &self,
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
                if ctx.sub_agent.is_some() {
                    self.store.set_sub_agent_running(&ctx.id).await?;
                }
                ("parent", item.content)
            }
            // A report, or a sync result nobody waits for any more.
            InboxKind::Report | InboxKind::CallResult => ("subagent", report_text(&item.content)),
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
    async fn report_if_done(self: &Arc<Self>, ctx: &SessionCtx) -> Result<(), RuntimeError> {
        let Some(info) = &ctx.sub_agent else {
            return Ok(());
        };
        let status = {
            let state = ctx.state.lock().await;
            if state.status == SessionStatus::Active && !state.can_continue() {
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
        let report = self.final_words(ctx).await?;
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
        self.tree_event(&parent, event.into()).await?;
        self.kick(&parent).await
    }

    /// End a session (host, model, or a stopping parent): its turn stops,
    /// the end is recorded and announced, its sub-agents stop with it.
    pub(crate) async fn end_session(
        &self,
        ctx: &SessionCtx,
        reason: Option<&str>,
        by: &str,
    ) -> Result<(), RuntimeError> {
        ctx.cancel_turn().await;
        ctx.state.lock().await.status = SessionStatus::Ended;
        self.store
            .set_session_status(&ctx.id, SessionStatus::Ended, reason, Some(by))
            .await?;
        let ended = SessionEnded {
            reason: reason.map(str::to_owned),
            ended_by: by.to_owned(),
        };
        ctx.events.emit(ended.into()).await?;
        self.forget(&ctx.id);
        Ok(())
    }

    /// After a session ended by itself (`endConversation`): its sub-agents
    /// stop, and a sub-agent reports its end to its parent.
    pub(crate) async fn after_end(self: &Arc<Self>, ctx: &SessionCtx) -> Result<(), RuntimeError> {
        self.stop_descendants(&ctx.id, &ctx.root_id).await?;
        self.report_if_done(ctx).await
    }

    /// After a restart: sub-agents whose run was cut off (their last
    /// input has no answer yet) go on working, and every inbox item not yet
    /// consumed is delivered (R-BX-3).
    pub(crate) async fn resume_trees(self: &Arc<Self>) -> Result<(), RuntimeError> {
        for id in self.store.working_sub_agents().await? {
            let ctx = self.session(&id).await?;
            let unanswered = self
                .with_history(&ctx, |h| {
                    h.last().is_some_and(|m| {
                        m.role != MessageRole::Assistant || !m.tool_calls.is_empty()
                    })
                })
                .await?;
            if unanswered && ctx.state.lock().await.can_continue() {
                self.start_turn(&ctx).await;
            }
        }
        for id in self.store.sessions_with_pending_inbox().await? {
            let ctx = self.session(&id).await?;
            self.kick(&ctx).await?;
        }
        Ok(())
    }
}

/// A report as the parent reads it.
fn report_text(content: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(content).unwrap_or(json!({"report": content}));
    format!(
        "[Sub-agent report] \"{}\" ({}) {}:\n\n{}",
        v["title"].as_str().unwrap_or("sub-agent"),
        v["sub_session_id"].as_str().unwrap_or("?"),
        v["status"].as_str().unwrap_or("completed"),
        v["report"].as_str().unwrap_or(content)
    )
}
