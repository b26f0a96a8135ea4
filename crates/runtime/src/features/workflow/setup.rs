//! Opening workflow sessions and the hooks the lifecycle calls: the
//! configuration a session on a workflow runs with (the workflow, its
//! tools, the assistants it transfers to), the start, the walk after a
//! completed turn, the walk after a human agent releases a transfer, and
//! recovery of actions a crash cut off.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rtc_core::ValidationError;
use rtc_core::workflow_rules::{WorkflowContext, validate_workflow};
use rtc_core::workflow_stage::{base_assistant, referenced_assistants, referenced_tools};
use rtc_protocol::{
    Assistant, SessionStatus, Tool, ToolCompleted, TransferTarget, Workflow, WorkflowNode,
};
use serde_json::json;

use super::WorkflowService;
use super::snapshot::WorkflowConfig;
use super::{Next, ORIGIN, Step, Walk, WorkflowState, action_call_id, graph, tool_name};
use crate::composition::{assistant_context, find_interface};
use crate::session::{SessionConfig, SessionCtx};
use crate::{Runtime, RuntimeError};

/// Reason of a session whose human transfer was released with no edge to
/// go on over.
const HANDOFF_COMPLETED: &str = "handoff_completed";

impl Runtime {
    /// What a session on workflow `id` runs with, fixed at its start: the
    /// workflow, every tool it binds and the assistants it transfers to
    /// (checked again, with their tools).
    pub(crate) async fn workflow_session_config(
        &self,
        workspace: &str,
        id: &str,
    ) -> Result<SessionConfig, RuntimeError> {
        let store = &self.inner.store;
        let workflow: Workflow = store.get(workspace, id).await?.ok_or_else(|| {
            RuntimeError::Invalid(ValidationError::new(
                "unknown_workflow",
                "workflowId",
                format!("workflow `{id}` does not exist"),
            ))
        })?;
        let mut tools: BTreeMap<String, Tool> = store
            .get_many(workspace, referenced_tools(&workflow))
            .await?;
        self.check_workflow(workspace, &workflow, &tools).await?;
        let mut assistants = BTreeMap::new();
        for assistant_id in referenced_assistants(&workflow) {
            let assistant: Assistant =
                store.get(workspace, &assistant_id).await?.ok_or_else(|| {
                    RuntimeError::Invalid(ValidationError::new(
                        "unknown_assistant",
                        "workflowId",
                        format!("the workflow transfers to assistant `{assistant_id}`, which does not exist"),
                    ))
                })?;
            let deps = assistant_context(store, workspace, &assistant, None).await?;
            self.check_assistant(&assistant, &deps)?;
            tools.extend(deps.tools);
            assistants.insert(assistant_id, assistant);
        }
        // The assistants it may transfer to run on the session's variables:
        // theirs are declared too (with their defaults), the workflow's
        // winning a name both declare.
        let mut base = base_assistant(&workflow);
        for assistant in assistants.values() {
            for v in &assistant.dynamic_variables {
                if !base.dynamic_variables.iter().any(|d| d.name == v.name) {
                    base.dynamic_variables.push(v.clone());
                }
            }
        }
        let mut config = SessionConfig {
            assistant: base,
            tools,
            test: None,
            features: serde_json::Map::new(),
        };
        WorkflowConfig {
            workflow,
            assistants,
        }
        .store_in(&mut config)?;
        Ok(config)
    }
}

impl Runtime {
    /// Check a stored workflow again before a session runs it (its tools
    /// may have changed, a provider may have gone). Workflows are never
    /// held to a realtime interface's tool capabilities (R-RT-6).
    async fn check_workflow(
        &self,
        workspace: &str,
        workflow: &Workflow,
        tools: &BTreeMap<String, Tool>,
    ) -> Result<(), RuntimeError> {
        let store = &self.inner.store;
        let assistants: BTreeSet<String> = store
            .get_many::<Assistant>(workspace, referenced_assistants(workflow))
            .await?
            .into_keys()
            .collect();
        let iface = match &workflow.realtime_interface_id {
            Some(id) => find_interface(store, workspace, id).await?,
            None => None,
        };
        let providers = self.provider_names();
        let ctx = WorkflowContext {
            tools,
            assistants: &assistants,
            realtime_interface: iface.as_ref(),
            providers: &providers,
            update_bounds: self.inner.settings.limits.update,
        };
        validate_workflow(workflow, &ctx).map_err(|e| {
            RuntimeError::Invalid(ValidationError::new(
                e.code,
                "workflowId",
                format!(
                    "the workflow is no longer valid at `{}`: {}",
                    e.field, e.message
                ),
            ))
        })
    }
}

impl WorkflowService<'_> {
    /// A new workflow session enters its start node.
    pub(crate) async fn workflow_begin(self, ctx: &Arc<SessionCtx>) -> Result<Next, RuntimeError> {
        let Some(start) = graph(ctx).and_then(|w| w.start_node_id.clone()) else {
            return Ok(Next::Idle);
        };
        self.enter_chain(ctx, start, None).await
    }

    /// After a completed turn (not interrupted, not ended) at an agent
    /// stage: walk its edges and go where they lead.
    pub(crate) async fn workflow_after_turn(
        self,
        ctx: &Arc<SessionCtx>,
    ) -> Result<Next, RuntimeError> {
        let Some((wf, WorkflowNode::Agent(node))) = current(ctx).await else {
            return Ok(Next::Idle);
        };
        match self.walk_agent(ctx, wf, &node.id).await? {
            Some((to, edge)) => self.enter_chain(ctx, to, Some(edge)).await,
            None => Ok(Next::Idle),
        }
    }

    /// A human agent released the session: at a transfer node its
    /// deterministic edges are walked, and with none holding the session
    /// ends (`handoff_completed`); at an agent stage (`requestHumanHandoff`)
    /// it resumes there.
    pub(crate) async fn workflow_after_release(
        self,
        ctx: &Arc<SessionCtx>,
    ) -> Result<(), RuntimeError> {
        // Under the turn slot, as after a turn: a user message meanwhile
        // waits for the walk and then takes the slot.
        let mut slot = ctx.turn.lock().await;
        self.cluster().own(ctx).await?;
        match self.release_walk(ctx).await? {
            Next::Idle => Ok(()),
            Next::Turn => {
                if self.cluster().claim(ctx).await? {
                    *slot = Some(self.spawn_turn(ctx));
                }
                Ok(())
            }
            Next::Ended => {
                drop(slot);
                self.forget(&ctx.id);
                self.after_end(ctx).await
            }
        }
    }

    async fn release_walk(self, ctx: &Arc<SessionCtx>) -> Result<Next, RuntimeError> {
        let Some((wf, WorkflowNode::Transfer(t))) = current(ctx).await else {
            return Ok(Next::Idle);
        };
        if t.target != TransferTarget::Human {
            return Ok(Next::Idle);
        }
        let node = &t.id;
        // A new stretch of the conversation: hops count afresh.
        ctx.ext(|w: &mut WorkflowState| {
            if let Some(p) = w.position.as_mut() {
                p.hops = 0;
            }
            w.walk = Walk::start(ctx.events.emitted());
        });
        match self.first_edge(ctx, wf, node, None).await? {
            Some((to, edge)) => self.enter_chain(ctx, to, Some(edge)).await,
            None => {
                self.end_by_workflow(ctx, HANDOFF_COMPLETED).await?;
                Ok(Next::Ended)
            }
        }
    }

    /// After a restart: an action the server stopped during is not run
    /// again; it counts as failed and the session routes on from it.
    pub(crate) async fn recover_actions(self) -> Result<usize, RuntimeError> {
        let ids = self.store.sessions_with_running_action().await?;
        for id in &ids {
            // One session's trouble does not keep the server from serving.
            if let Err(e) = self.recover_action(id).await {
                tracing::error!(session = %id, error = %e, "recovering a cut-off action failed");
            }
        }
        Ok(ids.len())
    }

    pub(crate) async fn recover_action(self, id: &str) -> Result<(), RuntimeError> {
        {
            let ctx = self.session(id).await?;
            let Some(wf) = graph(&ctx) else {
                return Ok(());
            };
            let Some((node, visit)) = ctx
                .peek(|w: &WorkflowState| {
                    w.position.as_ref().and_then(|p| {
                        let node = p.running_action.clone()?;
                        let visit = p.visits.get(&node).copied().unwrap_or(1);
                        Some((node, visit))
                    })
                })
                .flatten()
            else {
                return Ok(());
            };
            tracing::info!(session = %id, node = %node, "an action was cut off by a restart; it counts as failed");
            let name = match wf.node(&node) {
                Some(WorkflowNode::Action(a)) => tool_name(&ctx, &a.binding.tool_id),
                _ => node.clone(),
            };
            let mut completed = ToolCompleted::new(
                &action_call_id(&node, visit),
                &name,
                true,
                json!({"error": "the server stopped during this action; it was not run again"}),
            );
            completed.origin = Some(ORIGIN.to_owned());
            self.action_done(&ctx, completed).await?;
            let next = match self.route(&ctx, wf, &node, Some(false)).await? {
                Step::Go { node, edge } => self.enter_chain(&ctx, node, Some(edge)).await?,
                Step::Stop(next) => next,
            };
            self.follow(&ctx, next).await
        }
    }

    /// Do what a chain of entries outside a turn led to: start the turn,
    /// or wind up an ended session.
    pub(crate) async fn follow(
        self,
        ctx: &Arc<SessionCtx>,
        next: Next,
    ) -> Result<(), RuntimeError> {
        match next {
            Next::Idle => Ok(()),
            Next::Turn => {
                self.start_turn(ctx).await;
                Ok(())
            }
            Next::Ended => {
                self.forget(&ctx.id);
                self.after_end(ctx).await
            }
        }
    }
}

/// The workflow and the node a session is at, while it is active and runs
/// the workflow (not an assistant it was transferred to) with no action
/// in flight.
async fn current(ctx: &SessionCtx) -> Option<(&Workflow, &WorkflowNode)> {
    let wf = graph(ctx)?;
    let active = ctx.state.lock().await.status == SessionStatus::Active;
    let position = ctx.peek(|w: &WorkflowState| w.position.clone()).flatten()?;
    let free = active && position.transferred_to.is_none() && position.running_action.is_none();
    let node = wf.node(&position.current_node_id)?;
    free.then_some((wf, node))
}
