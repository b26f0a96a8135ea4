//! Workflow sessions (design §3): entering nodes, running the
//! deterministic ones at once (actions, state updates), routing over
//! their edges, the limits, transfers and ends. `walk.rs` decides where
//! an agent stage goes after its turn (with one small-model judge call
//! for the `llm` edges); `setup.rs` opens workflow sessions and holds the
//! hooks the lifecycle calls (after a turn, after a release, recovery).
//!
//! The position (`currentNodeId`, visits, path) is written with the
//! `workflow.node_entered` event of every entry, so it is durable in the
//! same commit as what the session was told. An action marks itself
//! running, durably, before its call: after a crash it is not run again
//! and counts as failed.

mod feature;
mod setup;
pub(crate) mod snapshot;
mod walk;

pub(crate) use feature::Workflows;

use std::collections::BTreeMap;
use std::sync::Arc;

use rtc_core::model_tools::{
    complete_arguments, missing_result_paths, model_view, render_variables,
};
use rtc_expr::{NoLlm, evaluate};
use rtc_protocol::{
    ActionNode, EdgeCondition, EndNode, EventBody, HandoffRequested, SessionEnded, SessionStatus,
    ToolCalled, ToolCompleted, TransferHistory, TransferNode, TransferTarget, UpdateStateNode,
    Workflow, WorkflowEvaluated, WorkflowNode, WorkflowNodeEntered, WorkflowPosition,
};
use rtc_store::SessionUpdate;
use serde_json::{Value, json};

use crate::events::Durability;
use crate::features::tasks::TaskService;
use crate::session::SessionCtx;
use crate::{RuntimeError, variables};

/// The workflow feature's operations on its host.
pub(crate) type WorkflowService<'a> = crate::feature::Service<'a, feature::Workflows>;

/// `origin` of the tool events of an action node.
const ORIGIN: &str = "workflow";
/// `endedBy` of a session a workflow ended.
const ENDED_BY: &str = "workflow";

/// The position of a workflow session and the walk under way, kept in
/// its extensions (the position is also stored on the session's row).
#[derive(Debug, Default, Clone)]
pub(crate) struct WorkflowState {
    pub position: Option<WorkflowPosition>,
    /// The walk under way (since the last outside input).
    pub walk: Walk,
}

/// What the workflow walk under way has done (R-SEC-7): node entries,
/// where its events start, whether a failing edge condition was reported.
/// A walk starts with each outside input (a user message, a release, a
/// loop tick or goal continuation).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Walk {
    pub entries: u32,
    /// [`EventLog::emitted`] when the walk started.
    pub events_from: u64,
    /// Bytes of the variable snapshots its updates recorded (each
    /// `state.updated` and the session row carry every variable).
    pub state_bytes: usize,
    pub condition_error_reported: bool,
}

impl Walk {
    /// A new walk, starting at `events_now` events.
    pub fn start(events_now: u64) -> Self {
        Self {
            events_from: events_now,
            ..Self::default()
        }
    }
}

/// What the session does once a chain of entries stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Wait for the user (or a human agent).
    Idle,
    /// Run a model turn now (an agent stage entered with `respond`).
    Turn,
    /// The session ended.
    Ended,
}

/// Which bound refuses entering a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// The workflow's own limits (`maxVisitsPerNode`, `maxHopsPerTurn`).
    LoopLimit,
    /// The server's bound on a walk.
    WalkLimit,
}

/// What entering one node leads to.
enum Step {
    /// Go on to `node` over `edge`.
    Go {
        node: String,
        edge: String,
    },
    Stop(Next),
}

/// The workflow a session runs.
fn graph(ctx: &SessionCtx) -> Option<&Workflow> {
    snapshot::of(ctx).map(|w| &w.config.workflow)
}

impl WorkflowService<'_> {
    /// Enter `node` over `edge` and go on through the deterministic nodes
    /// until one waits (an agent stage, a transfer) or the session ends.
    pub(crate) async fn enter_chain(
        self,
        ctx: &Arc<SessionCtx>,
        node: String,
        edge: Option<String>,
    ) -> Result<Next, RuntimeError> {
        let (mut node, mut edge) = (node, edge);
        let mut failed = false;
        loop {
            let step = match self.enter(ctx, &node, edge.as_deref(), false).await {
                Ok(step) => step,
                // Not left stranded on a deterministic node: the error
                // route (or the end) takes over, once.
                Err(e) if failed => return Err(e),
                Err(e) => {
                    failed = true;
                    tracing::error!(session = %ctx.id, node = %node, error = %e, "a workflow node failed");
                    let message = format!("node `{node}` failed; see the server log");
                    self.fail(ctx, "workflow_failed", message).await?
                }
            };
            match step {
                Step::Go { node: n, edge: e } => (node, edge) = (n, Some(e)),
                Step::Stop(next) => return Ok(next),
            }
        }
    }

    /// Enter one node: count the visit (a limit passed goes to
    /// `onErrorNodeId` or ends the session), record the position, then do
    /// what the node does.
    async fn enter(
        self,
        ctx: &Arc<SessionCtx>,
        node_id: &str,
        edge: Option<&str>,
        past_limits: bool,
    ) -> Result<Step, RuntimeError> {
        let Some(wf) = graph(ctx) else {
            return Ok(Step::Stop(Next::Idle));
        };
        let Some(node) = wf.node(node_id) else {
            let message = format!("the workflow has no node `{node_id}`");
            return self.fail(ctx, "workflow_node_missing", message).await;
        };
        let entered = {
            let state = ctx.state.lock().await;
            // Ended meanwhile (by the host): nothing more runs.
            if state.status == SessionStatus::Ended {
                return Ok(Step::Stop(Next::Idle));
            }
            let mut extensions = ctx.extensions.lock();
            let WorkflowState { position, walk } = extensions.get_or_default::<WorkflowState>();
            // The server's own bound on a walk, whatever the workflow's
            // limits say: entries of any node (agent stages too) and the
            // events recorded since the walk's input.
            let limits = &self.config.feature_limits;
            let walked = walk.entries >= limits.max_walk_hops
                || ctx.events.emitted().saturating_sub(walk.events_from)
                    >= limits.max_walk_events as u64
                || walk.state_bytes >= limits.max_walk_state_bytes;
            let position = position.get_or_insert_with(WorkflowPosition::default);
            let visit = position.visits.get(node_id).copied().unwrap_or(0) + 1;
            // maxHopsPerTurn counts the deterministic hops (action and
            // updateState entries) between two user messages.
            let hops = position.hops + u32::from(node.kind().is_deterministic());
            let looped = visit > wf.max_visits_per_node() || hops > wf.max_hops_per_turn();
            if !past_limits && walked {
                Err(Entry::WalkLimit)
            } else if !past_limits && looped {
                Err(Entry::LoopLimit)
            } else {
                position.visits.insert(node_id.to_owned(), visit);
                position.hops = hops;
                position.record_entry(node_id);
                let position = position.clone();
                walk.entries += 1;
                Ok((visit, position))
            }
        };
        let (visit, position) = match entered {
            Ok(entered) => entered,
            Err(Entry::WalkLimit) => return self.walk_limit(ctx, wf).await,
            Err(_) => return self.loop_limit(ctx, wf, node_id).await,
        };
        let event = WorkflowNodeEntered {
            node_id: node_id.to_owned(),
            node_type: node.kind().as_str().to_owned(),
            edge_id: edge.map(str::to_owned),
            visit,
        };
        let update = SessionUpdate {
            workflow: Some(position),
            ..SessionUpdate::default()
        };
        ctx.events.emit_with(vec![event.into()], update).await?;
        match node {
            WorkflowNode::Agent(agent) => {
                let next = match agent.entry() {
                    rtc_protocol::EntryBehavior::Say => {
                        if let Some(first) = &agent.first_message {
                            self.say_rendered(ctx, first).await?;
                        }
                        Next::Idle
                    }
                    rtc_protocol::EntryBehavior::Respond => Next::Turn,
                    rtc_protocol::EntryBehavior::Wait => Next::Idle,
                };
                Ok(Step::Stop(next))
            }
            WorkflowNode::Action(action) => {
                let ok = self.run_action(ctx, action, visit).await?;
                self.route(ctx, wf, node_id, Some(ok)).await
            }
            WorkflowNode::UpdateState(update) => {
                self.apply_rules(ctx, update).await?;
                self.route(ctx, wf, node_id, None).await
            }
            WorkflowNode::Transfer(transfer) => self.transfer(ctx, transfer).await,
            WorkflowNode::End(end) => self.end_node(ctx, end).await,
        }
    }

    /// A limit was passed before entering `node_id`: `workflow_loop_limit`,
    /// then `onErrorNodeId` (entered past the limits) or the end.
    async fn loop_limit(
        self,
        ctx: &Arc<SessionCtx>,
        wf: &Workflow,
        node_id: &str,
    ) -> Result<Step, RuntimeError> {
        let message = format!(
            "entering `{node_id}` would pass the workflow's limits ({} visits per node, {} hops between user messages)",
            wf.max_visits_per_node(),
            wf.max_hops_per_turn()
        );
        ctx.events
            .emit(EventBody::error("workflow_loop_limit", message))
            .await?;
        match &wf.on_error_node_id {
            Some(target) if target != node_id => {
                Box::pin(self.enter(ctx, target, None, true)).await
            }
            _ => {
                self.end_by_workflow(ctx, "workflow_loop_limit").await?;
                Ok(Step::Stop(Next::Ended))
            }
        }
    }

    /// The walk passed the server's bound (`max_walk_hops` entries or
    /// `max_walk_events` events since its input): `workflow_walk_limit`,
    /// then `onErrorNodeId` (entered past the limits) or the end.
    async fn walk_limit(self, ctx: &Arc<SessionCtx>, wf: &Workflow) -> Result<Step, RuntimeError> {
        let limits = &self.config.feature_limits;
        let message = format!(
            "this walk through the workflow passed the server's bound ({} node entries, {} events or {} bytes of variable updates between two inputs; RTC_MAX_WALK_HOPS, RTC_MAX_WALK_EVENTS, RTC_MAX_WALK_STATE_BYTES)",
            limits.max_walk_hops, limits.max_walk_events, limits.max_walk_state_bytes
        );
        ctx.events
            .emit(EventBody::error("workflow_walk_limit", message))
            .await?;
        match &wf.on_error_node_id {
            Some(target) => Box::pin(self.enter(ctx, target, None, true)).await,
            None => {
                self.end_by_workflow(ctx, "workflow_walk_limit").await?;
                Ok(Step::Stop(Next::Ended))
            }
        }
    }

    /// Something the workflow cannot go on from: an `error` event, then
    /// `onErrorNodeId` or the end (reason = the code).
    async fn fail(
        self,
        ctx: &Arc<SessionCtx>,
        code: &str,
        message: String,
    ) -> Result<Step, RuntimeError> {
        ctx.events.emit(EventBody::error(code, message)).await?;
        let target = graph(ctx).and_then(|w| w.on_error_node_id.clone());
        let current = ctx
            .peek(|w: &WorkflowState| w.position.as_ref().map(|p| p.current_node_id.clone()))
            .flatten();
        match target {
            Some(t) if Some(&t) != current.as_ref() => {
                Box::pin(self.enter(ctx, &t, None, true)).await
            }
            _ => {
                self.end_by_workflow(ctx, code).await?;
                Ok(Step::Stop(Next::Ended))
            }
        }
    }

    /// Go on over the first edge leaving a deterministic node whose
    /// condition holds (`result`: the action's success); none is
    /// `workflow_no_route`.
    async fn route(
        self,
        ctx: &Arc<SessionCtx>,
        wf: &Workflow,
        node_id: &str,
        result: Option<bool>,
    ) -> Result<Step, RuntimeError> {
        match self.first_edge(ctx, wf, node_id, result).await? {
            Some((node, edge)) => Ok(Step::Go { node, edge }),
            None => {
                let message = format!("no edge leaving `{node_id}` holds");
                self.fail(ctx, "workflow_no_route", message).await
            }
        }
    }

    /// The first edge leaving `node_id` whose condition holds, as `(to,
    /// edge id)`, without the judge (`llm` edges leave agent nodes only);
    /// emits `workflow.evaluated`.
    async fn first_edge(
        self,
        ctx: &SessionCtx,
        wf: &Workflow,
        node_id: &str,
        result: Option<bool>,
    ) -> Result<Option<(String, String)>, RuntimeError> {
        let vars = self.variables_now(ctx).await;
        let mut taken = None;
        for edge in wf.edges_from(node_id) {
            let holds = match &edge.condition {
                EdgeCondition::Always => true,
                EdgeCondition::Result { success } => result == Some(*success),
                EdgeCondition::Expression { expression } => {
                    self.edge_holds(ctx, &edge.id, expression, &vars).await?
                }
                EdgeCondition::Llm { .. } => false,
            };
            if holds {
                taken = Some(edge);
                break;
            }
        }
        let evaluated = WorkflowEvaluated {
            node_id: node_id.to_owned(),
            taken: taken.map(|e| e.id.clone()),
            llm: None,
        };
        ctx.events.emit(evaluated.into()).await?;
        Ok(taken.map(|e| (e.to.clone(), e.id.clone())))
    }

    /// Whether an expression edge holds; an evaluation error counts as
    /// false and is reported, once per walk (a cycle over a failing
    /// condition would otherwise write an error per hop).
    async fn edge_holds(
        self,
        ctx: &SessionCtx,
        edge_id: &str,
        expression: &rtc_protocol::Expr,
        vars: &BTreeMap<String, Value>,
    ) -> Result<bool, RuntimeError> {
        match evaluate(expression, vars, &NoLlm, &self.settings.limits.eval()).await {
            Ok(v) => Ok(v == Value::Bool(true)),
            Err(e) => {
                let first = ctx.ext(|w: &mut WorkflowState| {
                    !std::mem::replace(&mut w.walk.condition_error_reported, true)
                });
                if first {
                    let message = format!(
                        "edge `{edge_id}`: {e}; it counts as false (further failing conditions of this walk are not reported)"
                    );
                    ctx.events
                        .emit(EventBody::error("workflow_condition_failed", message))
                        .await?;
                }
                Ok(false)
            }
        }
    }

    async fn variables_now(self, ctx: &SessionCtx) -> BTreeMap<String, Value> {
        let state = ctx.state.lock().await;
        state
            .variables
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Run an action node's tool once: marked running (durably) before
    /// the call, the usual tool events with `origin: "workflow"`; success
    /// is the tool returning without error.
    async fn run_action(
        self,
        ctx: &SessionCtx,
        action: &ActionNode,
        visit: u32,
    ) -> Result<bool, RuntimeError> {
        let binding = &action.binding;
        let call_id = action_call_id(&action.id, visit);
        let name = tool_name(ctx, &binding.tool_id);
        let position = ctx.ext(|w: &mut WorkflowState| {
            let position = w.position.get_or_insert_with(WorkflowPosition::default);
            position.running_action = Some(action.id.clone());
            position.clone()
        });
        // The arguments as the binding fills them (variables, literals,
        // templates: never a secret, which only headers carry).
        let arguments = {
            let vars = ctx.state.lock().await.variables.clone();
            ctx.config
                .tools
                .get(&binding.tool_id)
                .and_then(|tool| complete_arguments(tool, binding, "{}", &vars).ok())
                .map_or_else(|| "{}".to_owned(), |args| Value::Object(args).to_string())
        };
        let called = ToolCalled {
            call_id: call_id.clone(),
            name: name.clone(),
            arguments,
            startup: false,
            origin: Some(ORIGIN.to_owned()),
        };
        let update = SessionUpdate {
            workflow: Some(position),
            ..SessionUpdate::default()
        };
        ctx.events
            .record(None, vec![called.into()], update, Durability::Committed)
            .await?;
        // A fault of the platform (the store, a secret that cannot be
        // opened) fails the action like a tool error: the mark is cleared
        // and the session routes on.
        let outcome = self
            .run_binding(ctx, binding, &call_id, "{}")
            .await
            .map_err(|e| {
                e.for_model().unwrap_or_else(|e| {
                    tracing::error!(session = %ctx.id, error = %e, "a workflow action failed");
                    "the action could not run; see the server log".to_owned()
                })
            });
        let (ok, mut completed) = match outcome {
            Ok(output) => {
                let v = output.value;
                let mut c = ToolCompleted::new(&call_id, &name, false, model_view(binding, &v));
                c.assignment_errors = missing_result_paths(binding, &v);
                (true, c)
            }
            Err(e) => (
                false,
                ToolCompleted::new(&call_id, &name, true, json!({"error": e})),
            ),
        };
        completed = completed.capped(self.settings.limits.max_event_result_bytes);
        completed.origin = Some(ORIGIN.to_owned());
        self.action_done(ctx, completed).await?;
        Ok(ok)
    }

    /// Record an action's end and clear its running mark.
    async fn action_done(
        self,
        ctx: &SessionCtx,
        completed: ToolCompleted,
    ) -> Result<(), RuntimeError> {
        let position = ctx.ext(|w: &mut WorkflowState| {
            let position = w.position.get_or_insert_with(WorkflowPosition::default);
            position.running_action = None;
            position.clone()
        });
        let update = SessionUpdate {
            workflow: Some(position),
            ..SessionUpdate::default()
        };
        ctx.events.emit_with(vec![completed.into()], update).await
    }

    /// An updateState node: its rules in order, without `llm` leaves.
    async fn apply_rules(
        self,
        ctx: &SessionCtx,
        node: &UpdateStateNode,
    ) -> Result<(), RuntimeError> {
        let source = format!("workflow:{}", node.id);
        let applied =
            variables::apply_rules(ctx, &self.settings.limits, &node.rules, &NoLlm, &source)
                .await?;
        // What the update recorded: the whole snapshot, in its event and
        // in the session row.
        let mut extensions = ctx.extensions.lock();
        let state = extensions.get_or_default::<WorkflowState>();
        state.walk.state_bytes = state
            .walk
            .state_bytes
            .saturating_add(2 * applied.snapshot_bytes);
        Ok(())
    }

    /// A transfer node: to a human (status `handoff`; on release its
    /// deterministic edges are walked) or to an assistant, which runs the
    /// rest of the session.
    async fn transfer(self, ctx: &SessionCtx, node: &TransferNode) -> Result<Step, RuntimeError> {
        if let Some(message) = &node.message {
            self.say_rendered(ctx, message).await?;
        }
        match &node.target {
            TransferTarget::Human => {
                // What led here is committed before the status changes.
                self.journal.flush().await;
                ctx.state.lock().await.status = SessionStatus::Handoff;
                self.store
                    .set_session_status(&ctx.id, SessionStatus::Handoff, None, None)
                    .await?;
                let requested = HandoffRequested {
                    reason: node.reason.clone(),
                };
                ctx.events.emit(requested.into()).await?;
            }
            TransferTarget::Assistant {
                assistant_id,
                history,
            } => {
                let start = match history.unwrap_or_default() {
                    TransferHistory::Full => None,
                    TransferHistory::None => Some(self.with_history(ctx, <[_]>::len).await?),
                };
                let position = ctx.ext(|w: &mut WorkflowState| {
                    let position = w.position.get_or_insert_with(WorkflowPosition::default);
                    position.transferred_to = Some(assistant_id.clone());
                    position.history_from = start;
                    position.clone()
                });
                let update = SessionUpdate {
                    workflow: Some(position),
                    ..SessionUpdate::default()
                };
                ctx.events
                    .record(None, Vec::new(), update, Durability::Committed)
                    .await?;
                let first = snapshot::of(ctx)
                    .and_then(|w| w.config.assistants.get(assistant_id))
                    .and_then(|a| a.first_message.clone());
                if let Some(first) = first {
                    self.say_rendered(ctx, &first).await?;
                }
            }
        }
        Ok(Step::Stop(Next::Idle))
    }

    /// An end node: its message, then the end with its reason.
    async fn end_node(self, ctx: &SessionCtx, node: &EndNode) -> Result<Step, RuntimeError> {
        if let Some(message) = &node.message {
            self.say_rendered(ctx, message).await?;
        }
        self.end_by_workflow(ctx, &node.reason).await?;
        Ok(Step::Stop(Next::Ended))
    }

    /// End the session from inside its own flow (no turn to cancel: the
    /// caller is the turn's task or the session's creation).
    pub(crate) async fn end_by_workflow(
        self,
        ctx: &SessionCtx,
        reason: &str,
    ) -> Result<(), RuntimeError> {
        // What led here is committed before the status changes.
        self.journal.flush().await;
        ctx.state.lock().await.status = SessionStatus::Ended;
        self.store
            .set_session_status(&ctx.id, SessionStatus::Ended, Some(reason), Some(ENDED_BY))
            .await?;
        TaskService::of(self.rt)
            .cancel_session_tasks_logged(&ctx.id)
            .await;
        let ended = SessionEnded {
            reason: Some(reason.to_owned()),
            ended_by: ENDED_BY.to_owned(),
        };
        ctx.events.emit(ended.into()).await
    }

    /// Say `template` with the current variables filled in.
    async fn say_rendered(self, ctx: &SessionCtx, template: &str) -> Result<(), RuntimeError> {
        let vars = ctx.state.lock().await.variables.clone();
        self.say(ctx, &render_variables(template, &vars)).await
    }
}

/// The call id of an action's `visit`-th run (unique in the session).
fn action_call_id(node: &str, visit: u32) -> String {
    format!("wf_{node}_{visit}")
}

fn tool_name(ctx: &SessionCtx, tool_id: &str) -> String {
    ctx.config
        .tools
        .get(tool_id)
        .map(|t| t.name.clone())
        .unwrap_or_else(|| tool_id.to_owned())
}
