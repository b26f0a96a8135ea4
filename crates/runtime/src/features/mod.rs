//! The features registered with the lifecycle, in one place. Their order
//! states the product's rule for what follows a turn once: a workflow's
//! walk, then inbox items (sub-agent reports, parent messages, task
//! reports), then an active goal's continuation, else idle (and a
//! sub-agent reports to its parent). It is also the order of the
//! built-in tools in a request. See `crate::feature` for the hooks.
//!
//! Each feature lives in its own folder here: `feature.rs` (its hooks),
//! its service, its per-session state (an extension type) and its tools.

pub(crate) mod goals;
pub(crate) mod inbox;
pub(crate) mod interaction;
pub(crate) mod loops;
pub(crate) mod memory;
pub(crate) mod realtime;
pub(crate) mod sub_agents;
pub(crate) mod tasks;
pub(crate) mod web;
pub(crate) mod workflow;

use std::sync::Arc;

use crate::feature::Feature;

/// Every feature, in the order of their hooks (and of their tools in a
/// request): the workflow walks first, then the inbox gives the next turn
/// its input before a goal does; after a restart (or when adopting a dead
/// instance's session) cut-off workflow actions are settled first, then
/// cut-off sub-agents resume, then inboxes are delivered.
pub(crate) fn registered() -> Vec<Arc<dyn Feature>> {
    vec![
        Arc::new(workflow::Workflows),
        Arc::new(sub_agents::SubAgents),
        Arc::new(inbox::Inbox),
        Arc::new(interaction::Interaction),
        Arc::new(web::Web),
        Arc::new(goals::Goals),
        Arc::new(loops::Loops),
        Arc::new(memory::Memory),
        Arc::new(tasks::Tasks),
        Arc::new(realtime::Realtime),
    ]
}
