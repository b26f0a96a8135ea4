//! Workflows (R-WF, `specVersion: 4`): a graph of agent stages,
//! deterministic tool actions, state updates, transfers and ends, joined
//! by directed edges with conditions. Optional fields keep whether they
//! were given, so a saved document reads back exactly as it was written.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

use crate::{
    DynamicVariable, EndConversationConfig, Expr, HumanHandoffConfig, LlmConfig, RunMode,
    SkipTurnConfig, ToolBinding, UpdateStateConfig, UpdateStateRule,
};

/// The only `specVersion` the API accepts.
pub const WORKFLOW_SPEC_VERSION: u32 = 4;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Workflow {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub id: Option<String>,
    /// Always 4; earlier formats go through `rtc-agent migrate`.
    #[schema(minimum = 4, maximum = 4)]
    pub spec_version: u32,
    #[schema(min_length = 1, max_length = 200, pattern = r"\S")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 4096)]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_mode: Option<RunMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realtime_interface_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmConfig>,
    /// Every agent stage's prompt starts with it (not an `independent` one's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200000)]
    pub system_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_variables: Option<Vec<DynamicVariable>>,
    /// The global platform built-ins; a stage patches them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_in_tools: Option<crate::BuiltInTools>,
    /// Tools every (non-independent) stage offers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_bindings: Option<Vec<ToolBinding>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<WorkflowLimits>,
    /// An end or transfer node the session goes to when a limit is hit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error_node_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_node_id: Option<String>,
    #[schema(max_items = 200)]
    pub nodes: Vec<WorkflowNode>,
    #[serde(default)]
    #[schema(max_items = 1000)]
    pub edges: Vec<WorkflowEdge>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub updated_at: Option<String>,
}

/// Defaults of [`WorkflowLimits`].
pub const DEFAULT_MAX_VISITS_PER_NODE: u32 = 10;
pub const DEFAULT_MAX_HOPS_PER_TURN: u32 = 25;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkflowLimits {
    /// Entries of one node per session (10 when absent), 1 to 1,000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1000)]
    pub max_visits_per_node: Option<u32>,
    /// Deterministic node entries (actions, state updates) between two
    /// user messages (25 when absent), 1 to 1,000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1, maximum = 1000)]
    pub max_hops_per_turn: Option<u32>,
}

impl Workflow {
    pub fn max_visits_per_node(&self) -> u32 {
        self.limits
            .and_then(|l| l.max_visits_per_node)
            .unwrap_or(DEFAULT_MAX_VISITS_PER_NODE)
    }

    pub fn max_hops_per_turn(&self) -> u32 {
        self.limits
            .and_then(|l| l.max_hops_per_turn)
            .unwrap_or(DEFAULT_MAX_HOPS_PER_TURN)
    }

    pub fn node(&self, id: &str) -> Option<&WorkflowNode> {
        self.nodes.iter().find(|n| n.id() == id)
    }

    pub fn variables(&self) -> &[DynamicVariable] {
        self.dynamic_variables.as_deref().unwrap_or_default()
    }

    pub fn bindings(&self) -> &[ToolBinding] {
        self.tool_bindings.as_deref().unwrap_or_default()
    }

    /// The edges leaving `node`, in declaration order.
    pub fn edges_from<'a>(&'a self, node: &'a str) -> impl Iterator<Item = &'a WorkflowEdge> {
        self.edges.iter().filter(move |e| e.from == node)
    }
}

/// A position in the console's drawing (no effect on the run).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodePosition {
    pub x: f64,
    pub y: f64,
}

/// One node, by `type`. Ids match `^[a-z][a-z0-9_]{0,63}$`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "camelCase")]
#[allow(
    clippy::large_enum_variant,
    reason = "a configuration document of at most 200 nodes, read far more than built"
)]
pub enum WorkflowNode {
    /// A conversation stage: the model talks with the user.
    Agent(AgentNode),
    /// A deterministic tool call (no `model` sources).
    Action(ActionNode),
    /// Deterministic variable updates (no `llm` leaves); `rules: []` routes only.
    UpdateState(UpdateStateNode),
    /// Hand the session to a human or to another assistant.
    Transfer(TransferNode),
    /// End the session.
    End(EndNode),
}

/// The kinds of node, for code that only needs the kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    Agent,
    Action,
    UpdateState,
    Transfer,
    End,
}

impl NodeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Action => "action",
            Self::UpdateState => "updateState",
            Self::Transfer => "transfer",
            Self::End => "end",
        }
    }

    /// Runs at once without the model (action, updateState).
    pub fn is_deterministic(self) -> bool {
        matches!(self, Self::Action | Self::UpdateState)
    }
}

impl WorkflowNode {
    pub fn id(&self) -> &str {
        match self {
            Self::Agent(n) => &n.id,
            Self::Action(n) => &n.id,
            Self::UpdateState(n) => &n.id,
            Self::Transfer(n) => &n.id,
            Self::End(n) => &n.id,
        }
    }

    pub fn kind(&self) -> NodeKind {
        match self {
            Self::Agent(_) => NodeKind::Agent,
            Self::Action(_) => NodeKind::Action,
            Self::UpdateState(_) => NodeKind::UpdateState,
            Self::Transfer(_) => NodeKind::Transfer,
            Self::End(_) => NodeKind::End,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum EntryBehavior {
    /// Say `firstMessage`, then wait for the user.
    Say,
    /// Run a model turn on entry.
    #[default]
    Respond,
    /// Do nothing until the user speaks.
    Wait,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentNode {
    #[schema(pattern = r"^[a-z][a-z0-9_]{0,63}$")]
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<NodePosition>,
    /// Added to the workflow's prompt (replaces it in an independent stage).
    #[serde(default)]
    #[schema(max_length = 200000)]
    pub prompt: String,
    /// Said on entry; requires `entryBehavior: say`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200000)]
    pub first_message: Option<String>,
    /// `respond` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_behavior: Option<EntryBehavior>,
    /// Falls back to the workflow's `llm`, field by field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmConfig>,
    /// Without the workflow's prompt, built-ins and bindings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub independent: Option<bool>,
    /// An RFC 7396 merge patch over the workflow's built-ins: an object
    /// sets a tool, `null` disables it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_in_tools: Option<BuiltInToolsPatch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_bindings: Option<Vec<ToolBinding>>,
    /// What this stage may change (updateState targets, result assignments);
    /// absent means every declared variable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writable_variables: Option<Vec<String>>,
}

impl AgentNode {
    pub fn entry(&self) -> EntryBehavior {
        self.entry_behavior.unwrap_or_default()
    }

    pub fn is_independent(&self) -> bool {
        self.independent.unwrap_or(false)
    }
}

/// `null` (disable), a value (set), or absent (keep) for one built-in.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Patch<T> {
    #[default]
    Keep,
    Disable,
    Set(T),
}

impl<T> Patch<T> {
    pub fn is_keep(&self) -> bool {
        matches!(self, Self::Keep)
    }

    /// `base` with this patch applied.
    pub fn apply(&self, base: Option<T>) -> Option<T>
    where
        T: Clone,
    {
        match self {
            Self::Keep => base,
            Self::Disable => None,
            Self::Set(v) => Some(v.clone()),
        }
    }
}

impl<T: Serialize> Serialize for Patch<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Set(v) => v.serialize(s),
            Self::Keep | Self::Disable => s.serialize_none(),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(d)? {
            Some(v) => Self::Set(v),
            None => Self::Disable,
        })
    }
}

/// Per-stage built-ins (R-BI-1): each key an object (set) or `null` (off).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BuiltInToolsPatch {
    #[serde(default, skip_serializing_if = "Patch::is_keep")]
    #[schema(value_type = Option<EndConversationConfig>)]
    pub end_conversation: Patch<EndConversationConfig>,
    #[serde(default, skip_serializing_if = "Patch::is_keep")]
    #[schema(value_type = Option<UpdateStateConfig>)]
    pub update_state: Patch<UpdateStateConfig>,
    #[serde(default, skip_serializing_if = "Patch::is_keep")]
    #[schema(value_type = Option<SkipTurnConfig>)]
    pub skip_turn: Patch<SkipTurnConfig>,
    #[serde(default, skip_serializing_if = "Patch::is_keep")]
    #[schema(value_type = Option<HumanHandoffConfig>)]
    pub request_human_handoff: Patch<HumanHandoffConfig>,
}

impl BuiltInToolsPatch {
    /// `base` patched (RFC 7396 at the level of whole tools).
    pub fn apply(&self, base: &crate::BuiltInTools) -> crate::BuiltInTools {
        crate::BuiltInTools {
            end_conversation: self.end_conversation.apply(base.end_conversation.clone()),
            update_state: self.update_state.apply(base.update_state.clone()),
            skip_turn: self.skip_turn.apply(base.skip_turn.clone()),
            request_human_handoff: self
                .request_human_handoff
                .apply(base.request_human_handoff.clone()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActionNode {
    #[schema(pattern = r"^[a-z][a-z0-9_]{0,63}$")]
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<NodePosition>,
    /// Every argument from a variable, literal or template (no `model`).
    pub binding: ToolBinding,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateStateNode {
    #[schema(pattern = r"^[a-z][a-z0-9_]{0,63}$")]
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<NodePosition>,
    /// Applied in order; no `llm` leaves.
    #[serde(default)]
    pub rules: Vec<UpdateStateRule>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TransferNode {
    #[schema(pattern = r"^[a-z][a-z0-9_]{0,63}$")]
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<NodePosition>,
    pub target: TransferTarget,
    /// Said before the transfer ({{variables}} are filled in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200000)]
    pub message: Option<String>,
    /// Recorded with the handoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 4096)]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
pub enum TransferTarget {
    /// A human agent takes over (status `handoff`).
    Human,
    /// Another assistant gets the rest of the session.
    #[serde(rename_all = "camelCase")]
    Assistant {
        assistant_id: String,
        /// `full` when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        history: Option<TransferHistory>,
    },
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum TransferHistory {
    /// The assistant sees the whole conversation.
    #[default]
    Full,
    /// The assistant sees what is said after the transfer.
    None,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndNode {
    #[schema(pattern = r"^[a-z][a-z0-9_]{0,63}$")]
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<NodePosition>,
    /// Said before the end ({{variables}} are filled in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 200000)]
    pub message: Option<String>,
    #[schema(min_length = 1, max_length = 1024)]
    pub reason: String,
}

/// `from: "*"` is a global edge, checked at every agent node after its own.
pub const GLOBAL_EDGE_SOURCE: &str = "*";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkflowEdge {
    #[schema(pattern = r"^[A-Za-z0-9_-]{1,64}$")]
    pub id: String,
    pub from: String,
    pub to: String,
    pub condition: EdgeCondition,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
pub enum EdgeCondition {
    Always,
    /// A boolean expression without `llm` leaves.
    Expression {
        #[schema(value_type = Object)]
        expression: Expr,
    },
    /// Judged by the small model after an agent turn.
    Llm {
        #[schema(min_length = 1, max_length = 4096)]
        condition: String,
    },
    /// Whether the action before succeeded.
    Result {
        success: bool,
    },
}

impl EdgeCondition {
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Always => "always",
            Self::Expression { .. } => "expression",
            Self::Llm { .. } => "llm",
            Self::Result { .. } => "result",
        }
    }
}

/// How many of the last nodes entered [`WorkflowPosition::path`] keeps.
pub const PATH_KEPT: usize = 50;

/// Where a workflow session is (`workflow` of `GET /v1/sessions/{id}`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowPosition {
    pub current_node_id: String,
    /// Entries per node so far.
    pub visits: BTreeMap<String, u32>,
    /// The last nodes entered, in order (at most [`PATH_KEPT`]; the
    /// oldest are dropped).
    pub path: Vec<String>,
    /// How many nodes were entered in all (`path` keeps the last ones).
    #[serde(default)]
    pub path_length: u64,
    /// Deterministic node entries since the last user message
    /// (`maxHopsPerTurn`).
    #[serde(default)]
    pub hops: u32,
    /// An action running now; found after a crash, it counts as failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_action: Option<String>,
    /// After a transfer to an assistant: its id; it runs the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transferred_to: Option<String>,
    /// History the transferred-to assistant sees starts at this message
    /// (`history: none`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_from: Option<usize>,
}

impl WorkflowPosition {
    /// Record an entry of `node`: the current node, the path (its last
    /// [`PATH_KEPT`] entries) and the count of entries.
    pub fn record_entry(&mut self, node: &str) {
        self.path_length = self.path_length.max(self.path.len() as u64) + 1;
        self.path.push(node.to_owned());
        if self.path.len() > PATH_KEPT {
            self.path.drain(..self.path.len() - PATH_KEPT);
        }
        self.current_node_id = node.to_owned();
    }
}
