//! The inbox in the lifecycle: items that arrived during a turn (sub-agent
//! reports, a parent's messages, task reports) are the next turn's input.

use std::sync::Arc;

use futures::future::BoxFuture;

use rtc_store::SessionRecord;

use crate::extensions::Extensions;
use crate::feature::{AfterTurn, Feature};
use crate::features::inbox::InboxService;
use crate::features::inbox::service::InboxHint;
use crate::session::SessionCtx;
use crate::{Inner, RuntimeError};

pub(crate) struct Inbox;

impl Feature<Inner> for Inbox {
    fn name(&self) -> &'static str {
        "inbox"
    }

    fn report_names(&self) -> &'static [&'static str] {
        &[
            super::service::SUB_AGENT_REPORT_NAME,
            super::service::TASK_REPORT_NAME,
        ]
    }

    fn load<'a>(
        &'a self,
        _rt: &'a Inner,
        _record: &'a SessionRecord,
        fresh: bool,
        ext: &'a mut Extensions,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        // Items left from before a restart are found at the first
        // boundary; a session just created has none (every later item
        // sets the hint).
        if !fresh {
            ext.insert(InboxHint(true));
        }
        Box::pin(async { Ok(()) })
    }

    fn adopted<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
        _record: &'a SessionRecord,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(InboxService::of(rt).kick(ctx))
    }

    fn poked<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        // Items another instance posted are delivered here, where the
        // session's turn runs.
        Box::pin(InboxService::of(rt).kick(ctx))
    }

    fn recover<'a>(&'a self, rt: &'a Arc<Inner>) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async move {
            // Every item not yet consumed is delivered (R-BX-3).
            for id in rt.store.sessions_with_pending_inbox().await? {
                let ctx = rt.session(&id).await?;
                InboxService::of(rt).kick(&ctx).await?;
            }
            Ok(())
        })
    }

    fn next_input<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<AfterTurn, RuntimeError>> {
        Box::pin(async move {
            Ok(AfterTurn::turn_if(
                InboxService::of(rt).deliver_inbox(ctx).await?,
            ))
        })
    }
}
