//! Sub-agents in the lifecycle: a session awaiting sync sub-agents
//! ([`Awaited`]) starts no turn by itself; a sub-agent with nothing left to do
//! reports its last words to its parent; a session that ended stops its
//! sub-agents, and a sub-agent that ended reports its end.

use std::sync::Arc;

use futures::future::BoxFuture;

use rtc_store::SessionRecord;

use crate::extensions::Extensions;
use crate::feature::Feature;
use crate::features::inbox::InboxService;
use crate::features::sub_agents::SubAgentService;
use crate::features::sub_agents::service::Awaited;
use crate::session::SessionCtx;
use crate::tool::ToolHandler;
use crate::{Inner, RuntimeError};

pub(crate) struct SubAgents;

impl Feature<Inner> for SubAgents {
    fn name(&self) -> &'static str {
        "sub-agents"
    }

    fn tools(&self) -> Vec<Arc<dyn ToolHandler<Inner>>> {
        vec![
            Arc::new(crate::features::sub_agents::tools::sub_agent::StartSubAgent),
            Arc::new(crate::features::sub_agents::tools::list::ListSubAgent),
            Arc::new(crate::features::sub_agents::tools::get_message::GetSubAgentMessage),
            Arc::new(crate::features::sub_agents::tools::stop::StopSubAgent),
            Arc::new(crate::features::sub_agents::tools::send_message::SendMessageToSubAgent),
        ]
    }

    fn load<'a>(
        &'a self,
        rt: &'a Inner,
        record: &'a SessionRecord,
        fresh: bool,
        ext: &'a mut Extensions,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async move {
            // A session just created awaits nothing yet.
            if !fresh {
                let awaited = super::service::Awaited::stored(&rt.store, &record.id).await?;
                if !awaited.0.is_empty() {
                    ext.insert(awaited);
                }
            }
            Ok(())
        })
    }

    fn user_message_arriving<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        // The awaited calls get a result; the reports come as messages.
        Box::pin(SubAgentService::of(rt).stop_awaiting(ctx))
    }

    fn adopted<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
        _record: &'a SessionRecord,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(SubAgentService::of(rt).resume_sub_agent(ctx))
    }

    fn holds_turns(&self, ctx: &SessionCtx) -> bool {
        ctx.peek(|a: &Awaited| !a.0.is_empty()).unwrap_or(false)
    }

    fn session_ended<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a SessionCtx,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async move {
            SubAgentService::of(rt)
                .stop_descendants(&ctx.id, &ctx.root_id)
                .await?;
            InboxService::of(rt).report_if_done(ctx).await
        })
    }

    fn recover<'a>(&'a self, rt: &'a Arc<Inner>) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async move {
            // Sub-agents whose run was cut off (their last input has no
            // answer yet) go on working.
            for id in rt.store.working_sub_agents().await? {
                let ctx = rt.session(&id).await?;
                SubAgentService::of(rt).resume_sub_agent(&ctx).await?;
            }
            Ok(())
        })
    }

    fn idle<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(InboxService::of(rt).report_if_done(ctx))
    }
}
