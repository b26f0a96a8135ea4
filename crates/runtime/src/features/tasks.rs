//! Delegated tasks in the lifecycle: a session that ends cancels its
//! running tasks (without a report).

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::Inner;
use crate::builtins;
use crate::feature::Feature;
use crate::session::SessionCtx;
use crate::tool::ToolHandler;

pub(crate) struct Tasks;

impl Feature for Tasks {
    fn name(&self) -> &'static str {
        "tasks"
    }

    fn tools(&self) -> Vec<Arc<dyn ToolHandler>> {
        vec![
            Arc::new(builtins::tasks::delegate::DelegateTask),
            Arc::new(builtins::tasks::status::GetTaskStatus),
            Arc::new(builtins::tasks::cancel::CancelTask),
        ]
    }

    fn session_ending<'a>(&'a self, rt: &'a Arc<Inner>, ctx: &'a SessionCtx) -> BoxFuture<'a, ()> {
        Box::pin(rt.cancel_session_tasks_logged(&ctx.id))
    }
}
