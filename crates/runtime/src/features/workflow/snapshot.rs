//! What a workflow session keeps in its configuration snapshot: the graph
//! and the assistants its transfers hand the session to, under the
//! snapshot's `workflow` key; and what is built from it once per snapshot
//! (the assistant of each agent stage), shared by the contexts using it.

use std::collections::BTreeMap;
use std::sync::Arc;

use rtc_protocol::{Assistant, Workflow, WorkflowNode, WorkflowPosition};
use serde::{Deserialize, Serialize};

use crate::RuntimeError;
use crate::extensions::Extensions;
use crate::session::{SessionConfig, SessionCtx};

/// The snapshot's key for a workflow session's part.
const KEY: &str = "workflow";

/// A workflow session's graph, and the assistants its transfers hand
/// the session to (their tools are in [`SessionConfig::tools`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkflowConfig {
    pub workflow: Workflow,
    #[serde(default)]
    pub assistants: BTreeMap<String, Assistant>,
}

impl WorkflowConfig {
    /// Put it in a session's configuration snapshot.
    pub(crate) fn store_in(&self, config: &mut SessionConfig) -> Result<(), RuntimeError> {
        let value =
            serde_json::to_value(self).map_err(|e| RuntimeError::Internal(e.to_string()))?;
        config.features.insert(KEY.to_owned(), value);
        Ok(())
    }
}

/// A workflow session's part of its snapshot, parsed, with the assistant
/// of every agent stage and transfer target built once.
pub(crate) struct WorkflowSnapshot {
    pub config: WorkflowConfig,
    stages: BTreeMap<String, Arc<Assistant>>,
    transfers: BTreeMap<String, Arc<Assistant>>,
}

impl WorkflowSnapshot {
    /// Read a snapshot's workflow part, if it has one, into `derived`.
    pub(crate) fn parse(
        config: &SessionConfig,
        derived: &mut Extensions,
    ) -> Result<(), RuntimeError> {
        let Some(value) = config.features.get(KEY) else {
            return Ok(());
        };
        let config: WorkflowConfig = serde_json::from_value(value.clone())
            .map_err(|e| RuntimeError::Internal(format!("session config: workflow: {e}")))?;
        let mut stages = BTreeMap::new();
        for node in &config.workflow.nodes {
            if let WorkflowNode::Agent(agent) = node {
                let stage = rtc_core::workflow_stage::stage_assistant(&config.workflow, agent);
                stages.insert(agent.id.clone(), Arc::new(stage));
            }
        }
        let transfers = config
            .assistants
            .iter()
            .map(|(id, a)| (id.clone(), Arc::new(a.clone())))
            .collect();
        derived.insert(Self {
            config,
            stages,
            transfers,
        });
        Ok(())
    }

    /// Who runs a turn at `position`: the assistant it was transferred to,
    /// or the current agent stage's (none: the session's own).
    pub(crate) fn assistant_at(&self, position: &WorkflowPosition) -> Option<Arc<Assistant>> {
        if let Some(a) = position
            .transferred_to
            .as_ref()
            .and_then(|id| self.transfers.get(id))
        {
            return Some(a.clone());
        }
        self.stages.get(&position.current_node_id).cloned()
    }
}

/// The workflow part of `ctx`'s configuration (none: not a workflow
/// session).
pub(crate) fn of(ctx: &SessionCtx) -> Option<&WorkflowSnapshot> {
    ctx.derived::<WorkflowSnapshot>()
}
