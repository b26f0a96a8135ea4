//! The features registered with the lifecycle, in one place. Their order
//! states the product's rule for what follows a turn once: a workflow's
//! walk, then inbox items (sub-agent reports, parent messages, task
//! reports), then an active goal's continuation, else idle (and a
//! sub-agent reports to its parent). See `crate::feature` for the hooks.

mod goals;
mod inbox;
mod realtime;
mod sub_agents;
mod tasks;
mod workflow;

use std::sync::Arc;

use crate::feature::Feature;

/// Every feature, in the order of their hooks.
pub(crate) fn registered() -> Vec<Arc<dyn Feature>> {
    vec![
        Arc::new(workflow::Workflows),
        Arc::new(inbox::Inbox),
        Arc::new(goals::Goals),
        Arc::new(sub_agents::SubAgents),
        Arc::new(tasks::Tasks),
        Arc::new(realtime::Realtime),
    ]
}
