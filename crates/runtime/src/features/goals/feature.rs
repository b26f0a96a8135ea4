//! Goals in the lifecycle: every turn that ended by itself counts in the
//! session's active goals and has their conditions judged; a goal still
//! open is continued when nothing else gives the next turn its input.

use std::sync::Arc;

use futures::future::BoxFuture;
use rtc_store::GoalRecord;

use crate::feature::{AfterTurn, Feature, Periodic, TurnEnd};
use crate::features::goals::GoalService;
use crate::session::SessionCtx;
use crate::tool::ToolHandler;
use crate::{Inner, RuntimeConfig, RuntimeError};

pub(crate) struct Goals;

/// The goal to continue after the turn that just ended (the session's
/// extension, set by `turn_ended`, taken by `next_input`), or one whose
/// continuation waits while the session is held (`goal_input`).
pub(super) struct ToContinue(pub(super) GoalRecord);

impl Feature<Inner> for Goals {
    fn name(&self) -> &'static str {
        "goals"
    }

    fn tools(&self) -> Vec<Arc<dyn ToolHandler<Inner>>> {
        vec![
            Arc::new(crate::features::goals::tools::create::CreateGoal),
            Arc::new(crate::features::goals::tools::complete::CompleteGoal),
            Arc::new(crate::features::goals::tools::cancel::CancelGoal),
        ]
    }

    fn context_note<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a SessionCtx,
    ) -> BoxFuture<'a, Result<Option<String>, RuntimeError>> {
        Box::pin(async move {
            let goals = rt.store.goals(&ctx.id).await?;
            let active: Vec<&GoalRecord> = goals
                .iter()
                .filter(|g| g.status == rtc_protocol::GoalStatus::Active)
                .collect();
            if active.is_empty() {
                return Ok(None);
            }
            let mut note = "Your active goals:".to_owned();
            for g in active {
                note.push_str(&format!(
                    "\n- goal_id {} ({} of at most {} turns): {}",
                    g.id, g.completed_turns, g.max_turns, g.condition
                ));
            }
            Ok(Some(note))
        })
    }

    fn periodic(&self, config: &RuntimeConfig) -> Vec<Periodic> {
        vec![Periodic {
            what: "renewing or taking over goals",
            every: config.kernel.cluster.lease / 3,
            work: |rt| Box::pin(async move { GoalService::of(&rt).sweep_goals().await }),
        }]
    }

    fn turn_ended<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
        _end: TurnEnd,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let goal = if rt.turn_assistant(ctx).features.goals {
                GoalService::of(rt)
                    .settle_goals(ctx)
                    .await
                    .unwrap_or_else(|e| {
                        tracing::error!(session = %ctx.id, error = %e, "settling goals failed");
                        None
                    })
            } else {
                None
            };
            let mut extensions = ctx.extensions.lock();
            match goal {
                Some(goal) => extensions.insert(ToContinue(goal)),
                None => extensions.remove::<ToContinue>(),
            };
        })
    }

    fn next_input<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
    ) -> BoxFuture<'a, Result<AfterTurn, RuntimeError>> {
        Box::pin(async move {
            let goal = ctx.extensions.lock().remove::<ToContinue>();
            let Some(ToContinue(goal)) = goal else {
                return Ok(AfterTurn::Pass);
            };
            Ok(AfterTurn::turn_if(
                GoalService::of(rt).goal_input(ctx, &goal).await?,
            ))
        })
    }
}
