//! Sub-agents in the lifecycle: a sub-agent with nothing left to do
//! reports its last words to its parent.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::feature::Feature;
use crate::session::SessionCtx;
use crate::{Inner, RuntimeError};

pub(crate) struct SubAgents;

impl Feature for SubAgents {
    fn name(&self) -> &'static str {
        "sub-agents"
    }

    fn idle<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(rt.report_if_done(ctx))
    }
}
