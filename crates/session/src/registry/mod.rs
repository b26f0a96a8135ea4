//! The tool registry: one door for every function a model may call.
//! Bound tool resources (HTTP, MCP, client; `bound`), the platform
//! built-ins (`endConversation`, `updateState`, `skipTurn`,
//! `requestHumanHandoff`; `platform`) and the features' built-ins
//! ([`crate::feature::Feature::tools`]) all implement
//! [`ToolHandler`](crate::tool::ToolHandler). [`SessionTools`] is what one
//! session offers, with the function list its requests carry, prepared
//! once per configuration snapshot (`prepared`); reserved names come from
//! here, so no tool resource can take a built-in's name.

pub mod bound;
pub mod platform;
pub mod prepared;

pub use bound::{
    BoundCall, BoundTool, CallMode, CallProgress, ProgressSink, RemoteCall, RemoteTools, ToolOutput,
};
pub use platform::PlatformTool;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rtc_core::llm::{FunctionList, ToolSpec};
use rtc_core::model_tools::{ToolTarget, model_tools};
use rtc_protocol::{Assistant, BuiltInToolName, Tool};

use crate::context::SessionCtx;
use crate::feature::Feature;
use crate::kernel::{Host, Kernel};
use crate::tool::{Offer, ToolHandler};

/// A tool's spec, shared by every session that offers it, with its handler.
pub type Offered<H> = (Arc<ToolSpec>, Arc<dyn ToolHandler<H>>);

/// Every name a tool resource may not take: the platform built-ins' and
/// the features' tools'.
pub fn reserved_names<H: Host>(features: &[Arc<dyn Feature<H>>]) -> BTreeSet<String> {
    features
        .iter()
        .flat_map(|f| f.tools())
        .map(|h| h.spec().name)
        .chain(BuiltInToolName::ALL.iter().map(|b| b.as_str().to_owned()))
        .collect()
}

/// The features' built-ins with their specs, built once per kernel, and
/// the reserved names.
pub struct BuiltIns<H> {
    tools: Vec<Offered<H>>,
    reserved: BTreeSet<String>,
}

impl<H: Host> BuiltIns<H> {
    pub(crate) fn of(features: &[Arc<dyn Feature<H>>]) -> Self {
        Self {
            tools: features
                .iter()
                .flat_map(|f| f.tools())
                .map(|h| (Arc::new(h.spec()), h))
                .collect(),
            reserved: reserved_names(features),
        }
    }

    /// Whether `name` belongs to the platform (R-TR-1).
    pub fn is_reserved(&self, name: &str) -> bool {
        self.reserved.contains(name)
    }

    /// Which of the features' built-ins `offer` is given.
    pub(crate) fn selected(&self, offer: &Offer<'_, H>) -> Selection {
        let mut words = vec![0u64; self.tools.len().div_ceil(64)];
        for (i, (_, handler)) in self.tools.iter().enumerate() {
            if handler.offered(offer) {
                words[i / 64] |= 1 << (i % 64);
            }
        }
        Selection(words)
    }
}

/// Which of the kernel's feature built-ins a session offers: one bit
/// each, in their order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Selection(Vec<u64>);

impl Selection {
    fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
}

/// The functions one session offers, each with its handler, and the list
/// the model is offered. Cloning copies a pointer.
pub struct SessionTools<H> {
    offering: Arc<Offering<H>>,
}

struct Offering<H> {
    tools: Vec<Offered<H>>,
    /// The specs of `tools`, prepared for requests.
    functions: FunctionList,
}

impl<H> Clone for SessionTools<H> {
    fn clone(&self) -> Self {
        Self {
            offering: self.offering.clone(),
        }
    }
}

impl<H: Host> SessionTools<H> {
    /// The assistant's platform built-ins and bindings (see
    /// `rtc_core::model_tools`) over the session's tools, then the
    /// features' built-ins it offers to `session` (`None`: what any of its
    /// sessions could be offered). Built anew: a turn takes the prepared
    /// one ([`Kernel::session_tools`]).
    pub fn for_session(
        kernel: &Kernel<H>,
        assistant: &Assistant,
        session_tools: &BTreeMap<String, Tool>,
        session: Option<&SessionCtx>,
    ) -> Self {
        let host = kernel.host();
        let offer = Offer {
            assistant,
            host: &*host,
            session,
        };
        let selected = kernel.built_ins.selected(&offer);
        Self::assemble(kernel, assistant, session_tools, &selected)
    }

    /// The assistant's platform built-ins and bindings over
    /// `session_tools`, then the features' built-ins `selected`.
    pub(crate) fn assemble(
        kernel: &Kernel<H>,
        assistant: &Assistant,
        session_tools: &BTreeMap<String, Tool>,
        selected: &Selection,
    ) -> Self {
        let mut tools: Vec<Offered<H>> = Vec::new();
        for (spec, target) in model_tools(assistant, session_tools) {
            let spec = Arc::new(spec);
            let handler: Arc<dyn ToolHandler<H>> = match target {
                ToolTarget::BuiltIn(name) => Arc::new(PlatformTool {
                    name,
                    spec: spec.clone(),
                }),
                // Saved tools never carry a reserved name; a stored one
                // that does (from before a name was reserved) is not offered.
                ToolTarget::Binding(_) if kernel.built_ins.is_reserved(&spec.name) => continue,
                ToolTarget::Binding(index) => Arc::new(BoundTool {
                    index,
                    spec: spec.clone(),
                }),
            };
            tools.push((spec, handler));
        }
        for (i, (spec, handler)) in kernel.built_ins.tools.iter().enumerate() {
            if selected.contains(i) {
                tools.push((spec.clone(), handler.clone()));
            }
        }
        Self::new(tools)
    }
}

impl<H> SessionTools<H> {
    /// Exactly these tools (a host's own selection, such as a realtime
    /// model's).
    pub fn new(tools: Vec<Offered<H>>) -> Self {
        let functions = FunctionList::new(tools.iter().map(|(s, _)| s.clone()).collect());
        Self {
            offering: Arc::new(Offering { tools, functions }),
        }
    }

    /// What the model is offered (shared, not copied).
    pub fn specs(&self) -> &[Arc<ToolSpec>] {
        self.offering.functions.specs()
    }

    /// The list a request carries: rendered to JSON and counted in tokens
    /// once, however many requests carry it.
    pub fn functions(&self) -> &FunctionList {
        &self.offering.functions
    }

    /// The handler of the function named `name`.
    pub fn find(&self, name: &str) -> Option<&Arc<dyn ToolHandler<H>>> {
        self.offering
            .tools
            .iter()
            .find(|(s, _)| s.name == name)
            .map(|(_, h)| h)
    }
}
