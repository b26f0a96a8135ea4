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
pub(crate) mod voice;
pub(crate) mod web;
pub(crate) mod workflow;

use std::sync::Arc;

use crate::Inner;
use crate::feature::Feature;

/// Every feature, in the order of their hooks (and of their tools in a
/// request): the workflow walks first, then the inbox gives the next turn
/// its input before a goal does; after a restart (or when adopting a dead
/// instance's session) cut-off workflow actions are settled first, then
/// cut-off sub-agents resume, then inboxes are delivered.
pub(crate) fn registered() -> Vec<Arc<dyn Feature<Inner>>> {
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
        Arc::new(voice::Voice),
    ]
}

/// The features' own bounds (R-SEC-7), each configurable (README
/// "Limits"); the kernel's are `SessionLimits`.
#[derive(Debug, Clone, Copy)]
pub struct FeatureLimits {
    /// Most node entries of one workflow walk (between two user
    /// messages), agent stages included, whatever the workflow's own
    /// `maxHopsPerTurn` says (`workflow_walk_limit`).
    pub max_walk_hops: u32,
    /// Most events one workflow walk records (`workflow_walk_limit`).
    pub max_walk_events: usize,
    /// Most bytes of variable snapshots one workflow walk's updates
    /// record (each `state.updated` and the session row carry every
    /// variable): a cycle of updates is cut (`workflow_walk_limit`).
    pub max_walk_state_bytes: usize,
    /// Most new realtime provider connections of one session per minute
    /// (after a burst of 3); a socket opened past it is refused
    /// (`realtime_connect_limited`).
    pub realtime_connects_per_minute: u32,
    /// Most bytes of a reasoner task's saved transcript; the oldest steps
    /// give way first.
    pub max_task_transcript_bytes: usize,
    /// Most voice hosts attached at once per workspace (design
    /// `voice-pipeline.md` §4(g)); a `client.hello{audio}` past it is
    /// refused (`voice_sessions_limited`).
    pub voice_max_sessions: usize,
}

impl Default for FeatureLimits {
    fn default() -> Self {
        Self {
            max_walk_hops: 200,
            max_walk_events: 2_000,
            max_walk_state_bytes: 2 * 1024 * 1024,
            realtime_connects_per_minute: 6,
            max_task_transcript_bytes: 4 * 1024 * 1024,
            voice_max_sessions: 50,
        }
    }
}
