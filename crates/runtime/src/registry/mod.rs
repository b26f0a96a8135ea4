//! The tool registry: one door for every function a model may call.
//! Bound tool resources (HTTP, MCP, client; `bound`), the platform
//! built-ins (`endConversation`, `updateState`, `skipTurn`,
//! `requestHumanHandoff`; `platform`) and the LLM's built-ins
//! (`crate::builtins`) all implement [`ToolHandler`](crate::tool::ToolHandler).
//! [`SessionTools`] is what one session offers; reserved names come from
//! here, so no tool resource can take a built-in's name.

pub(crate) mod bound;
pub(crate) mod platform;

pub(crate) use bound::{mcp_pool_key, mcp_pool_key_prefix};

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, LazyLock};

use rtc_core::llm::ToolSpec;
use rtc_core::model_tools::{ToolTarget, model_tools};
use rtc_protocol::{Assistant, BuiltInToolName, Tool};

use crate::RuntimeConfig;
use crate::tool::{Offer, ToolHandler};

/// A built-in's spec, shared by every session that offers it, with its handler.
type BuiltIn = (Arc<ToolSpec>, Arc<dyn ToolHandler>);

/// The LLM's built-ins with their specs, built once.
static BUILT_INS: LazyLock<Vec<BuiltIn>> = LazyLock::new(|| {
    crate::features::registered()
        .iter()
        .flat_map(|f| f.tools())
        .map(|h| (Arc::new(h.spec()), h))
        .collect()
});

/// Every reserved tool name, gathered once.
static RESERVED: LazyLock<BTreeSet<&'static str>> = LazyLock::new(|| {
    BUILT_INS
        .iter()
        .map(|(s, _)| s.name.as_str())
        .chain(BuiltInToolName::ALL.iter().map(|b| b.as_str()))
        .collect()
});

/// Whether `name` belongs to the platform (R-TR-1).
pub(crate) fn is_reserved(name: &str) -> bool {
    RESERVED.contains(name)
}

/// The functions one session offers, each with its handler.
pub(crate) struct SessionTools {
    tools: Vec<(Arc<ToolSpec>, Arc<dyn ToolHandler>)>,
}

impl SessionTools {
    /// The assistant's platform built-ins and bindings (see
    /// `rtc_core::model_tools`) over the session's tools, then the LLM
    /// built-ins it offers.
    pub fn for_session(
        config: &RuntimeConfig,
        assistant: &Assistant,
        session_tools: &BTreeMap<String, Tool>,
    ) -> Self {
        let offer = Offer { assistant, config };
        let mut tools: Vec<(Arc<ToolSpec>, Arc<dyn ToolHandler>)> = Vec::new();
        for (spec, target) in model_tools(assistant, session_tools) {
            let spec = Arc::new(spec);
            let handler: Arc<dyn ToolHandler> = match target {
                ToolTarget::BuiltIn(name) => Arc::new(platform::PlatformTool {
                    name,
                    spec: spec.clone(),
                }),
                // Saved tools never carry a reserved name; a stored one
                // that does (from before a name was reserved) is not offered.
                ToolTarget::Binding(_) if is_reserved(&spec.name) => continue,
                ToolTarget::Binding(index) => Arc::new(bound::BoundTool {
                    index,
                    spec: spec.clone(),
                }),
            };
            tools.push((spec, handler));
        }
        for (spec, handler) in BUILT_INS.iter() {
            if handler.offered(&offer) {
                tools.push((spec.clone(), handler.clone()));
            }
        }
        Self { tools }
    }

    /// What a realtime model is offered (design `realtime.md` §5c): the
    /// bindings whose tool type and the platform built-ins the interface
    /// declares, never `skipTurn` and none of the LLM built-ins; each with
    /// the client function it runs, if it is a client tool.
    pub fn for_realtime(
        assistant: &Assistant,
        session_tools: &BTreeMap<String, Tool>,
        caps: &rtc_protocol::RealtimePromptTools,
    ) -> (Self, BTreeMap<String, String>) {
        let mut tools: Vec<(Arc<ToolSpec>, Arc<dyn ToolHandler>)> = Vec::new();
        let mut client_functions = BTreeMap::new();
        for (spec, target) in model_tools(assistant, session_tools) {
            let spec = Arc::new(spec);
            let handler: Arc<dyn ToolHandler> = match target {
                ToolTarget::BuiltIn(BuiltInToolName::SkipTurn) => continue,
                ToolTarget::BuiltIn(name) if !caps.built_in_tools.contains(&name) => continue,
                ToolTarget::BuiltIn(name) => Arc::new(platform::PlatformTool {
                    name,
                    spec: spec.clone(),
                }),
                ToolTarget::Binding(_) if is_reserved(&spec.name) => continue,
                ToolTarget::Binding(index) => {
                    let Some(tool) = assistant
                        .tool_bindings
                        .get(index)
                        .and_then(|b| session_tools.get(&b.tool_id))
                    else {
                        continue;
                    };
                    if !caps.tool_types.contains(&tool.kind) {
                        continue;
                    }
                    if let Some(client) = &tool.client {
                        client_functions.insert(spec.name.clone(), client.function_name.clone());
                    }
                    Arc::new(bound::BoundTool {
                        index,
                        spec: spec.clone(),
                    })
                }
            };
            tools.push((spec, handler));
        }
        (Self { tools }, client_functions)
    }

    /// What the model is offered (shared, not copied).
    pub fn specs(&self) -> Vec<Arc<ToolSpec>> {
        self.tools.iter().map(|(s, _)| s.clone()).collect()
    }

    /// The handler of the function named `name`.
    pub fn find(&self, name: &str) -> Option<&Arc<dyn ToolHandler>> {
        self.tools
            .iter()
            .find(|(s, _)| s.name == name)
            .map(|(_, h)| h)
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
