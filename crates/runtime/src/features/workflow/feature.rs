//! Workflows in the lifecycle: after an agent stage's turn that came to
//! its end, the walk follows the stage's edges (`super`).

use std::sync::Arc;

use futures::future::BoxFuture;
use rtc_protocol::EventBody;

use crate::feature::{AfterTurn, Feature, TurnEnd};
use crate::session::SessionCtx;
use rtc_protocol::Assistant;
use rtc_store::SessionRecord;

use super::snapshot::{self, WorkflowSnapshot};
use super::{Next, Walk, WorkflowState};
use crate::extensions::Extensions;
use crate::features::workflow::WorkflowService;
use crate::session::SessionConfig;
use crate::{Inner, RuntimeError};

pub(crate) struct Workflows;

/// Where a new workflow session's walk goes once its creation is durable
/// (kept in its extensions between the two opening hooks).
#[derive(Default)]
struct Opening(Option<Next>);

impl Feature<Inner> for Workflows {
    fn name(&self) -> &'static str {
        "workflow"
    }

    fn session_opening<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async move {
            if snapshot::of(ctx).is_some() {
                let next = WorkflowService::of(rt).workflow_begin(ctx).await?;
                ctx.ext(|o: &mut Opening| o.0 = Some(next));
            }
            Ok(())
        })
    }

    fn session_opened<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async move {
            let next = ctx.extensions.lock().remove::<Opening>().and_then(|o| o.0);
            match next {
                Some(next) => WorkflowService::of(rt).follow(ctx, next).await,
                None => Ok(()),
            }
        })
    }

    fn user_message_arriving<'a>(
        &'a self,
        _rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        if let Some(w) = ctx.extensions.lock().get_mut::<WorkflowState>()
            && let Some(position) = w.position.as_mut()
        {
            // maxHopsPerTurn counts the hops between user messages.
            position.hops = 0;
            w.walk = Walk::start(ctx.events.emitted());
        }
        Box::pin(async { Ok(()) })
    }

    fn handoff_released<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(WorkflowService::of(rt).workflow_after_release(ctx))
    }

    fn config_parsed(
        &self,
        config: &SessionConfig,
        derived: &mut Extensions,
    ) -> Result<(), RuntimeError> {
        WorkflowSnapshot::parse(config, derived)
    }

    fn load<'a>(
        &'a self,
        _rt: &'a Inner,
        record: &'a SessionRecord,
        _fresh: bool,
        ext: &'a mut Extensions,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        // Nothing is kept for a session without a position (most).
        if record.workflow.is_some() {
            ext.get_or_default::<WorkflowState>().position = record.workflow.clone();
        }
        Box::pin(async { Ok(()) })
    }

    fn reload(&self, record: &SessionRecord, ext: &mut Extensions) {
        if record.workflow.is_some() || ext.get::<WorkflowState>().is_some() {
            ext.get_or_default::<WorkflowState>().position = record.workflow.clone();
        }
    }

    fn input_recorded(&self, ctx: &SessionCtx) {
        // A loop tick's or goal's input starts a new walk.
        if snapshot::of(ctx).is_some() {
            ctx.ext(|w: &mut WorkflowState| w.walk = Walk::start(ctx.events.emitted()));
        }
    }

    fn turn_assistant(&self, ctx: &SessionCtx) -> Option<Arc<Assistant>> {
        let position = ctx.peek(|w: &WorkflowState| w.position.clone()).flatten()?;
        snapshot::of(ctx)?.assistant_at(&position)
    }

    fn history_from(&self, ctx: &SessionCtx) -> Option<usize> {
        ctx.peek(|w: &WorkflowState| w.position.as_ref().and_then(|p| p.history_from))
            .flatten()
    }

    fn adopted<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
        record: &'a SessionRecord,
    ) -> BoxFuture<'a, Result<(), RuntimeError>> {
        Box::pin(async move {
            // An action the stopped instance was running counts as failed.
            if record
                .workflow
                .as_ref()
                .is_some_and(|p| p.running_action.is_some())
            {
                WorkflowService::of(rt).recover_action(&ctx.id).await?;
            }
            Ok(())
        })
    }

    fn recover<'a>(&'a self, rt: &'a Arc<Inner>) -> BoxFuture<'a, Result<(), RuntimeError>> {
        // An action the server stopped during counts as failed.
        Box::pin(async move { WorkflowService::of(rt).recover_actions().await.map(drop) })
    }

    fn walk<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
        end: TurnEnd,
    ) -> BoxFuture<'a, AfterTurn> {
        Box::pin(async move {
            // A turn whose model failed is not walked: the stage answers
            // again.
            if !end.answered || snapshot::of(ctx).is_none() {
                return AfterTurn::Pass;
            }
            match WorkflowService::of(rt).workflow_after_turn(ctx).await {
                Ok(Next::Turn) => AfterTurn::Turn,
                Ok(Next::Ended) => AfterTurn::Ended,
                Ok(Next::Idle) => AfterTurn::Pass,
                Err(e) => {
                    tracing::error!(session = %ctx.id, error = %e, "walking the workflow failed");
                    let _ = ctx
                        .events
                        .emit(EventBody::error(
                            "workflow_failed",
                            "walking the workflow failed; see the server log",
                        ))
                        .await;
                    AfterTurn::Pass
                }
            }
        })
    }
}
