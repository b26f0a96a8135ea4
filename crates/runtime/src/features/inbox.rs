//! The inbox in the lifecycle: items that arrived during a turn (sub-agent
//! reports, a parent's messages, task reports) are the next turn's input.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::feature::{AfterTurn, Feature};
use crate::session::SessionCtx;
use crate::{Inner, RuntimeError};

pub(crate) struct Inbox;

impl Feature for Inbox {
    fn name(&self) -> &'static str {
        "inbox"
    }

    fn recover<'a>(&'a self, rt: &'a Arc<Inner>) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async move {
            // Every item not yet consumed is delivered (R-BX-3).
            for id in rt.store.sessions_with_pending_inbox().await? {
                let ctx = rt.session(&id).await?;
                rt.kick(&ctx).await?;
            }
            Ok(())
        })
    }

    fn next_input<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<AfterTurn, RuntimeError>> {
        Box::pin(async move { Ok(AfterTurn::turn_if(rt.deliver_inbox(ctx).await?)) })
    }
}
