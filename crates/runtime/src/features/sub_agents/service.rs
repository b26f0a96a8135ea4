//! The sub-agent tools (R-SA-2..7): `subAgent` starts a child session
//! (blank context, the parent's assistant, its first input the
//! instruction), `listSubAgent`, `getSubAgentMessage`, `stopSubAgent` and
//! `sendMessageToSubAgent` follow and steer the caller's descendants.
//! Reports travel back through the inbox (see `boundary`).

use std::sync::Arc;

use crate::features::sub_agents::tools::sub_agent::Mode;
use crate::features::sub_agents::tools::{SubAgentOp, send_message, sub_agent};
use rtc_core::time::rfc3339_from_millis;
use rtc_protocol::{
    EventBody, MessageRole, SessionStarted, SessionStatus, SubAgentStarted, ToolCompleted,
};
use rtc_store::{
    InboxItem, InboxKind, NewSession, Store, SubAgentRecord, new_id, new_token, now_millis,
};
use serde_json::{Map, Value, json};

use super::SubAgentService;
use crate::RuntimeError;
use crate::events::Durability;
use crate::features::inbox::InboxService;
use crate::history::message;
use crate::session::SessionCtx;
use crate::tool::{CallOutcome, Interrupt, parsed};

/// Limits of sub-agent trees (R-SA-7).
#[derive(Debug, Clone, Copy)]
pub struct SubAgentLimits {
    /// Deepest level below the root (a child of the root is at depth 1).
    pub max_depth: i64,
    /// Most children at work one session may have (one that reported
    /// no longer counts).
    pub max_children: usize,
    /// Most sessions at work in one tree, the root included.
    pub max_sessions: usize,
    /// Most sessions one tree may ever create, working or not.
    pub max_tree_total: usize,
}

impl Default for SubAgentLimits {
    fn default() -> Self {
        Self {
            max_depth: 3,
            max_children: 8,
            max_sessions: 32,
            max_tree_total: 100,
        }
    }
}

/// The `subAgent` calls in `sync` mode a session waits on for their
/// sub-agent's report (by call id), kept in its extensions.
#[derive(Debug, Default)]
pub(crate) struct Awaited(pub std::collections::BTreeSet<String>);

impl Awaited {
    /// The sync calls `session` waits on, as the store has them.
    pub(crate) async fn stored(store: &Store, session: &str) -> Result<Awaited, RuntimeError> {
        Ok(Awaited(
            store
                .awaited_sub_agents(session)
                .await?
                .into_iter()
                .filter_map(|a| a.call_id)
                .collect(),
        ))
    }
}

/// A sub-agent's report for its parent's inbox: the awaited call's result
/// when a sync call waits for it, else a notification.
pub(crate) fn report_item(
    parent: &str,
    child: &str,
    title: Option<&str>,
    status: &str,
    report: &str,
    call_id: Option<String>,
) -> InboxItem {
    let kind = if call_id.is_some() {
        InboxKind::CallResult
    } else {
        InboxKind::Report
    };
    let content =
        json!({"sub_session_id": child, "title": title, "status": status, "report": report});
    InboxItem::new(parent, kind, child, call_id, content.to_string())
}

/// A sub-agent's variables: its parent's, with its own identity.
async fn child_variables(parent: &SessionCtx, id: &str) -> Map<String, Value> {
    let mut vars = parent.state.lock().await.variables.clone();
    vars.insert("system__session_id".into(), json!(id));
    vars.insert("system__parent_session_id".into(), json!(parent.id));
    vars.insert("system__root_session_id".into(), json!(parent.root_id));
    vars.insert("system__turn_count".into(), json!(0));
    vars
}

/// The text a sub-agent's first input carries around the instruction.
fn briefing(title: &str, instruction: &str) -> String {
    format!(
        "[Task from your parent agent: \"{title}\"]\n{instruction}\n\nYou are a sub-agent: work on this task with your tools. Your final answer is sent to the parent agent as your report, so make it complete and self-contained."
    )
}

impl SubAgentService<'_> {
    pub(crate) async fn sub_agent_tool(
        self,
        ctx: &Arc<SessionCtx>,
        op: SubAgentOp,
        call_id: &str,
    ) -> Result<CallOutcome, RuntimeError> {
        match op {
            SubAgentOp::Start(args) => self.start_sub_agent(ctx, args, call_id).await,
            SubAgentOp::List => {
                let tree = self.tree(&ctx.root_id).await?;
                let entries: Vec<Value> = tree
                    .descendants(&ctx.id)
                    .into_iter()
                    .filter(|n| n.working())
                    .map(|n| {
                        json!({"sub_session_id": n.session.id, "title": n.session.title,
                            "status": n.session.status.as_str(),
                            "running": n.agent.as_ref().is_some_and(|a| a.running),
                            "created_at": rfc3339_from_millis(n.session.created_at),
                            "updated_at": rfc3339_from_millis(n.session.updated_at)})
                    })
                    .collect();
                Ok(CallOutcome::ok(Value::Array(entries)))
            }
            SubAgentOp::GetMessage(target) => self.latest_message(ctx, target).await,
            SubAgentOp::Stop(target) => {
                let tree = self.tree(&ctx.root_id).await?;
                parsed!(tree.descendant(&ctx.id, &target));
                let stopped = self
                    .stop_subtree(&tree, &target, "stopped by its parent agent", "parent")
                    .await?;
                let list: Vec<Value> = stopped
                    .iter()
                    .map(|(id, title)| json!({"sub_session_id": id, "title": title}))
                    .collect();
                Ok(CallOutcome::ok(
                    json!({"stopped_sessions": list, "total_stopped": stopped.len()}),
                ))
            }
            SubAgentOp::SendMessage(args) => self.send_to_sub_agent(ctx, args).await,
        }
    }

    /// `subAgent`: check the limits, create the child with its briefing in
    /// its inbox, start it; `sync` leaves the call waiting for the report.
    async fn start_sub_agent(
        self,
        ctx: &Arc<SessionCtx>,
        args: sub_agent::SubAgent,
        call_id: &str,
    ) -> Result<CallOutcome, RuntimeError> {
        let depth = match &ctx.parent {
            Some(_) => self.store.sub_agent(&ctx.id).await?.map_or(1, |a| a.depth),
            None => 0,
        } + 1;
        if let Some(problem) = self.sub_agent_limit(ctx, depth).await? {
            return Ok(CallOutcome::error(problem));
        }
        let id = new_id("sess");
        let vars = child_variables(ctx, &id).await;
        // A sub-agent runs the assistant of the turn that started it (a
        // workflow's stage runs no sub-agents, but the assistant a
        // workflow transferred to may), never the workflow itself.
        let child_config = crate::session::SessionConfig {
            assistant: self.turn_assistant(ctx).as_ref().clone(),
            tools: ctx.config.tools.clone(),
            features: serde_json::Map::new(),
            test: ctx.config.test.clone(),
        };
        let config = serde_json::to_string(&child_config)
            .map_err(|e| RuntimeError::Internal(e.to_string()))?;
        let now = now_millis();
        let record = SubAgentRecord {
            session_id: id.clone(),
            parent_id: ctx.id.clone(),
            root_id: ctx.root_id.clone(),
            mode: args.mode.as_str().to_owned(),
            call_id: (args.mode == Mode::Sync).then(|| call_id.to_owned()),
            depth,
            running: true,
            created_at: now,
            updated_at: now,
        };
        let first = InboxItem::new(
            &id,
            InboxKind::ParentMessage,
            &ctx.id,
            None,
            briefing(&args.title, &args.instruction),
        );
        let assistant_id = ctx.config.assistant.id.clone().unwrap_or_default();
        self.store
            .create_sub_agent(
                NewSession {
                    id: &id,
                    workspace_id: &ctx.workspace,
                    assistant_id: &assistant_id,
                    parent_id: Some(&ctx.id),
                    root_id: &ctx.root_id,
                    user_id: ctx.user_id.as_deref(),
                    title: Some(&args.title),
                    variables: &vars,
                    config: &config,
                    client_token: &new_token("rtc_ct"),
                    workflow_id: None,
                    owner: Some(&self.settings.cluster.instance),
                },
                &record,
                &first,
            )
            .await?;
        if args.mode == Mode::Sync {
            ctx.ext(|a: &mut Awaited| a.0.insert(call_id.to_owned()));
        }
        let started = SubAgentStarted {
            sub_session_id: id.clone(),
            title: args.title.clone(),
            mode: args.mode.as_str().to_owned(),
            parent_session_id: ctx.id.clone(),
            depth,
        };
        self.tree_event(ctx, started.into()).await?;
        let child = self.session(&id).await?;
        let child_started = SessionStarted {
            assistant_id,
            variables: vars,
            parent_session_id: Some(ctx.id.clone()),
            title: Some(args.title.clone()),
        };
        child.events.emit(child_started.into()).await?;
        InboxService::of(self.rt).kick(&child).await?;
        if args.mode == Mode::Sync {
            let mut outcome =
                CallOutcome::ok(json!({"waiting": "the sub-agent's report", "sub_session_id": id}));
            outcome.deferred = true;
            return Ok(outcome.interrupt(Interrupt::Wait));
        }
        Ok(CallOutcome::ok(
            json!({"sub_session_id": id, "title": args.title, "mode": "async",
            "status": "running",
            "note": "The sub-agent works on its own; its report will arrive as a message starting with [Sub-agent report]."}),
        ))
    }

    /// `getSubAgentMessage`: the latest message of a descendant.
    async fn latest_message(
        self,
        ctx: &SessionCtx,
        target: String,
    ) -> Result<CallOutcome, RuntimeError> {
        let tree = self.tree(&ctx.root_id).await?;
        let node = parsed!(tree.descendant(&ctx.id, &target));
        self.journal.flush().await;
        let latest = self
            .store
            .recent_messages(&target, 50)
            .await?
            .into_iter()
            .find(|m| !m.content.is_empty());
        let mut out = json!({"sub_session_id": target,
            "sub_session_title": node.session.title,
            "sub_session_status": node.session.status.as_str(),
            "message_id": null, "role": null, "content": "", "created_at": null});
        if let Some(m) = latest {
            out["message_id"] = json!(m.id);
            out["role"] = json!(m.role.as_str());
            out["content"] = json!(m.content);
            out["created_at"] = json!(m.created_at);
        }
        Ok(CallOutcome::ok(out))
    }

    /// `sendMessageToSubAgent`: into a working async descendant's inbox.
    async fn send_to_sub_agent(
        self,
        ctx: &SessionCtx,
        args: send_message::SendMessage,
    ) -> Result<CallOutcome, RuntimeError> {
        let tree = self.tree(&ctx.root_id).await?;
        let node = parsed!(tree.descendant(&ctx.id, &args.sub_session_id));
        if node.session.status != SessionStatus::Active {
            return Ok(CallOutcome::error(format!(
                "sub-agent `{}` has {}; start a new one with subAgent",
                args.sub_session_id,
                if node.session.status == SessionStatus::Ended {
                    "ended"
                } else {
                    "been handed to a human"
                }
            )));
        }
        if node.agent.as_ref().is_some_and(|a| a.call_id.is_some()) {
            return Ok(CallOutcome::error(format!(
                "sub-agent `{}` runs in sync mode and its report is awaited; messages go to async sub-agents",
                args.sub_session_id
            )));
        }
        let content = format!("[Message from your parent agent]\n{}", args.message);
        let item = InboxItem::new(
            &args.sub_session_id,
            InboxKind::ParentMessage,
            &ctx.id,
            None,
            content,
        );
        InboxService::of(self.rt).post(&item).await?;
        Ok(CallOutcome::ok(
            json!({"sub_session_id": args.sub_session_id, "delivered": "at the sub-agent's next turn boundary"}),
        ))
    }

    /// Which limit of R-SA-7 a new sub-agent at `depth` would break.
    async fn sub_agent_limit(
        self,
        ctx: &SessionCtx,
        depth: i64,
    ) -> Result<Option<String>, RuntimeError> {
        let limits = self.config.sub_agents;
        if depth > limits.max_depth {
            return Ok(Some(format!(
                "sub-agents may nest {} levels deep and this one would be at level {depth}; do the work yourself",
                limits.max_depth
            )));
        }
        let tree = self.tree(&ctx.root_id).await?;
        let children = tree.active_children(&ctx.id);
        if children >= limits.max_children {
            return Ok(Some(format!(
                "you already have {children} active sub-agents (the limit is {}); wait for their reports or stop one",
                limits.max_children
            )));
        }
        let in_tree = tree.active_sessions();
        if in_tree >= limits.max_sessions {
            return Ok(Some(format!(
                "this session tree already has {in_tree} active sessions (the limit is {}); wait for reports or stop sub-agents",
                limits.max_sessions
            )));
        }
        let ever = tree.all_sessions();
        if ever >= limits.max_tree_total {
            return Ok(Some(format!(
                "this session tree has made {ever} sessions, the most one tree may (the limit is {}); give your existing sub-agents more work (sendMessageToSubAgent) or do it yourself",
                limits.max_tree_total
            )));
        }
        Ok(None)
    }

    /// A user message while sync sub-agents are awaited: the calls get a
    /// result now and the reports will come as messages.
    pub(crate) async fn stop_awaiting(self, ctx: &SessionCtx) -> Result<(), RuntimeError> {
        let awaited = ctx
            .extensions
            .lock()
            .remove::<Awaited>()
            .map(|a| a.0)
            .unwrap_or_default();
        if awaited.is_empty() {
            return Ok(());
        }
        for agent in self.store.awaited_sub_agents(&ctx.id).await? {
            self.store.detach_sub_agent_call(&agent.session_id).await?;
        }
        for call_id in awaited {
            let text = "The user wrote while you waited. The sub-agent keeps working; its report will arrive as a message starting with [Sub-agent report].";
            let mut m = message(MessageRole::Tool, text);
            m.tool_call_id = Some(call_id.clone());
            m.name = Some(sub_agent::NAME.to_owned());
            let event = ToolCompleted::new(&call_id, sub_agent::NAME, false, json!(text));
            self.append(ctx, m, vec![event.into()], Durability::Committed)
                .await?;
        }
        Ok(())
    }

    /// Post an event about `ctx`'s sub-agents on `ctx` itself and, when it
    /// is not the root, on the root too (the root's user follows the tree).
    pub(crate) async fn tree_event(
        self,
        ctx: &SessionCtx,
        event: EventBody,
    ) -> Result<(), RuntimeError> {
        if ctx.root_id == ctx.id {
            return ctx.events.emit(event).await;
        }
        ctx.events.emit(event.clone()).await?;
        let root = self.session(&ctx.root_id).await?;
        root.events.emit(event).await
    }

    /// The report a sub-agent's run ends with: its last words.
    pub(crate) async fn final_words(self, ctx: &SessionCtx) -> Result<String, RuntimeError> {
        self.with_history(ctx, |h| {
            h.iter()
                .rev()
                .find(|m| m.role == MessageRole::Assistant && !m.content.trim().is_empty())
                .map_or_else(
                    || "(the sub-agent finished without a final message)".to_owned(),
                    |m| m.content.clone(),
                )
        })
        .await
    }
}

impl SubAgentService<'_> {
    /// A working sub-agent whose last input has no answer yet goes on.
    pub(crate) async fn resume_sub_agent(self, ctx: &Arc<SessionCtx>) -> Result<(), RuntimeError> {
        if ctx.parent.is_none()
            || !self
                .store
                .sub_agent(&ctx.id)
                .await?
                .is_some_and(|a| a.running)
        {
            return Ok(());
        }
        let unanswered = self
            .with_history(ctx, |h| {
                h.last()
                    .is_some_and(|m| m.role != MessageRole::Assistant || !m.tool_calls.is_empty())
            })
            .await?;
        if unanswered && self.may_continue(ctx).await {
            self.start_turn(ctx).await;
        }
        Ok(())
    }
}
