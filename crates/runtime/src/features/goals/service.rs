//! Goals (R-GL-1..3, R-BX-2): after every turn each active goal counts the
//! turn and its tokens, and a judge (the small model) decides whether its
//! condition holds; limits make it `exhausted`. While a goal is active and
//! nobody is asked anything, the runtime gives the model the next turn
//! itself with a continuation input (see `boundary`). The instance driving
//! a goal holds a lease on it; when that instance dies, another takes the
//! goal over once the lease ran out. Only the host raises limits and
//! resumes an exhausted goal.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::features::goals::tools::{GoalOp, MAX_TURNS_LIMIT};
use crate::features::loops::service::CurrentLoop;
use rtc_core::ValidationError;
use rtc_core::time::rfc3339_from_millis;
use rtc_protocol::{Goal, GoalStatus, GoalUpdated, ResumeGoalParams};
use rtc_store::{GoalRecord, Store, new_id, now_millis};
use serde_json::{Value, json};

use super::GoalService;
use crate::session::SessionCtx;
use crate::small_model::SmallModel;
use crate::tool::CallOutcome;
use crate::{ClusterSettings, Inner, Runtime, RuntimeError};
use rtc_session::context::RunningTurn;

/// The goals the running turn created (the session's extension).
#[derive(Debug, Default)]
pub(crate) struct CreatedThisTurn(pub Vec<String>);

/// Most goals active at once in a session.
const MAX_ACTIVE_GOALS: usize = 3;

pub(crate) fn view(g: &GoalRecord) -> Goal {
    Goal {
        id: g.id.clone(),
        condition: g.condition.clone(),
        status: g.status,
        max_turns: g.max_turns,
        completed_turns: g.completed_turns,
        token_budget: g.token_budget,
        tokens_used: g.tokens_used,
        deadline: g.deadline.map(rfc3339_from_millis),
        reason: g.reason.clone(),
        loop_id: g.loop_id.clone(),
        created_at: rfc3339_from_millis(g.created_at),
        updated_at: rfc3339_from_millis(g.updated_at),
    }
}

/// A goal as the model reads it.
fn for_model(g: &GoalRecord) -> Value {
    json!({"goal_id": g.id, "condition": g.condition, "status": g.status.as_str(),
        "completed_turns": g.completed_turns, "max_turns": g.max_turns})
}

/// What the goal tools work with: the store, the lease settings and the
/// calling session.
pub(crate) struct GoalCx<'a> {
    pub store: &'a Store,
    pub cluster: &'a ClusterSettings,
    pub session: &'a SessionCtx,
}

impl GoalCx<'_> {
    /// Run one goal tool call.
    pub async fn run(&self, op: GoalOp) -> Result<CallOutcome, RuntimeError> {
        let ctx = self.session;
        let goals = self.store.goals(&ctx.id).await?;
        let (target, status) = match op {
            GoalOp::Create(args) => {
                let active = goals
                    .iter()
                    .filter(|g| g.status == GoalStatus::Active)
                    .count();
                if active >= MAX_ACTIVE_GOALS {
                    return Ok(CallOutcome::error(format!(
                        "{active} goals are already active; complete or cancel one first"
                    )));
                }
                let now = now_millis();
                let goal = GoalRecord {
                    id: new_id("goal"),
                    session_id: ctx.id.clone(),
                    condition: args.condition.trim().to_owned(),
                    status: GoalStatus::Active,
                    max_turns: args.max_turns,
                    completed_turns: 0,
                    token_budget: args.token_budget,
                    tokens_used: 0,
                    deadline: args.deadline_minutes.map(|m| now + m * 60_000),
                    reason: None,
                    created_at: now,
                    updated_at: now,
                    lease_owner: Some(self.cluster.instance.clone()),
                    lease_until: Some(now + self.cluster.lease_millis()),
                    // Created by a loop's tick: that loop's periodic check.
                    loop_id: ctx.peek(|c: &CurrentLoop| c.0.clone()).flatten(),
                };
                save_goal(self.store, ctx, &goal).await?;
                ctx.ext(|c: &mut CreatedThisTurn| c.0.push(goal.id.clone()));
                return Ok(CallOutcome::ok(for_model(&goal)));
            }
            GoalOp::Complete(id) => (id, GoalStatus::Completed),
            GoalOp::Cancel(id) => (id, GoalStatus::Cancelled),
        };
        let Some(mut goal) = goals.into_iter().find(|g| g.id == target) else {
            return Ok(CallOutcome::error(format!(
                "there is no goal `{target}` in this session"
            )));
        };
        if goal.status != GoalStatus::Active {
            return Ok(CallOutcome::error(format!(
                "goal `{target}` is already {}",
                goal.status.as_str()
            )));
        }
        goal.status = status;
        goal.reason = Some(format!("{} by the model", status.as_str()));
        goal.updated_at = now_millis();
        save_goal(self.store, ctx, &goal).await?;
        Ok(CallOutcome::ok(for_model(&goal)))
    }
}

/// Store a goal and tell the session's clients.
pub(crate) async fn save_goal(
    store: &Store,
    ctx: &SessionCtx,
    goal: &GoalRecord,
) -> Result<(), RuntimeError> {
    store.save_goal(goal).await?;
    ctx.events
        .emit(GoalUpdated { goal: view(goal) }.into())
        .await
}

impl GoalService<'_> {
    /// After a turn: count it in every active goal, judge the conditions,
    /// apply the limits. Returns the goal to continue with, if any.
    pub(crate) async fn settle_goals(
        self,
        ctx: &SessionCtx,
    ) -> Result<Option<GoalRecord>, RuntimeError> {
        let tokens = ctx.turn_tokens.swap(0, Ordering::Relaxed);
        let created = ctx.ext(|c: &mut CreatedThisTurn| std::mem::take(&mut c.0));
        let tick_of = ctx.peek(|c: &CurrentLoop| c.0.clone()).flatten();
        let mut next = None;
        for mut goal in self.store.goals(&ctx.id).await? {
            if goal.status != GoalStatus::Active {
                continue;
            }
            // A periodic check (created by a loop's tick) is judged after
            // later turns: its loop's ticks and user turns, not the turn
            // that created it nor another loop's ticks.
            let periodic = goal.loop_id.is_some();
            if periodic
                && (created.contains(&goal.id)
                    || tick_of
                        .as_ref()
                        .is_some_and(|l| Some(l) != goal.loop_id.as_ref()))
            {
                continue;
            }
            goal.completed_turns += 1;
            goal.tokens_used += tokens;
            let (holds, why) = self.judge(ctx, &goal.condition).await;
            let now = now_millis();
            let exhausted = if goal.completed_turns >= goal.max_turns {
                Some(format!("max_turns ({}) reached", goal.max_turns))
            } else if goal.token_budget.is_some_and(|b| goal.tokens_used >= b) {
                Some("token budget used up".to_owned())
            } else if goal.deadline.is_some_and(|d| now >= d) {
                Some("deadline passed".to_owned())
            } else {
                None
            };
            if holds {
                goal.status = GoalStatus::Completed;
                goal.reason = Some(why);
            } else if let Some(limit) = exhausted {
                goal.status = GoalStatus::Exhausted;
                goal.reason = Some(limit);
            }
            goal.updated_at = now;
            save_goal(&self.store, ctx, &goal).await?;
            // A periodic check starts no turns of its own.
            if goal.status == GoalStatus::Active && !periodic && next.is_none() {
                next = Some(goal);
            }
        }
        Ok(next)
    }

    /// Whether the condition holds in the conversation, and why; a judge
    /// that fails counts as "not yet".
    async fn judge(self, ctx: &SessionCtx, condition: &str) -> (bool, String) {
        let transcript = match self.transcript(ctx).await {
            Ok(t) => t,
            Err(e) => {
                return (
                    false,
                    format!("the judge could not read the conversation: {e}"),
                );
            }
        };
        let system = "You judge whether a goal's condition holds, given a conversation between a user and an assistant. Be strict: the condition must clearly hold in what was said. Answer only JSON {\"satisfied\": true|false, \"reason\": \"one sentence\"}.";
        let user = format!("Condition: {condition}\n\nConversation:\n{transcript}");
        let judge = SmallModel::for_session::<Inner>(self.rt, ctx);
        match judge.ask(system, user, true).await {
            Ok(text) => match serde_json::from_str::<Value>(text.trim()) {
                Ok(v) => (
                    v["satisfied"].as_bool().unwrap_or(false),
                    v["reason"]
                        .as_str()
                        .unwrap_or("the judge gave no reason")
                        .to_owned(),
                ),
                Err(_) => (false, format!("the judge did not answer JSON: {text:.100}")),
            },
            Err(e) => {
                tracing::warn!(session = %ctx.id, error = %e, "goal judge failed");
                (false, format!("the judge failed: {e}"))
            }
        }
    }
}

impl Runtime {
    /// The session's goals, oldest first.
    pub async fn goals(&self, workspace: &str, id: &str) -> Result<Vec<Goal>, RuntimeError> {
        self.inner.session_in(workspace, id).await?;
        Ok(self.inner.store.goals(id).await?.iter().map(view).collect())
    }

    /// The host raises a goal's limits and makes it active again (R-BX-2).
    pub async fn resume_goal(
        &self,
        workspace: &str,
        id: &str,
        goal_id: &str,
        params: ResumeGoalParams,
    ) -> Result<Goal, RuntimeError> {
        let inner = &self.inner;
        let ctx = inner.session_in(workspace, id).await?;
        let mut goal = inner
            .store
            .goals(id)
            .await?
            .into_iter()
            .find(|g| g.id == goal_id)
            .ok_or_else(|| RuntimeError::not_found("goal", goal_id))?;
        if matches!(goal.status, GoalStatus::Completed | GoalStatus::Cancelled) {
            return Err(RuntimeError::Conflict {
                code: "goal_finished",
                message: format!("the goal is {}", goal.status.as_str()),
            });
        }
        let now = now_millis();
        raise_limits(&mut goal, &params, now)?;
        goal.status = GoalStatus::Active;
        goal.reason = None;
        goal.updated_at = now;
        save_goal(&inner.store, &ctx, &goal).await?;
        let mut slot = ctx.turn.lock().await;
        if slot.as_ref().is_none_or(|t| t.handle.is_finished()) {
            GoalService::of(inner)
                .continue_goal(&ctx, &goal, &mut slot)
                .await?;
        }
        Ok(view(&goal))
    }
}

/// The host's new limits for a goal (R-BX-2): each must be above what the
/// goal used, and together they must leave it room to go on.
fn raise_limits(
    goal: &mut GoalRecord,
    params: &ResumeGoalParams,
    now: i64,
) -> Result<(), ValidationError> {
    if let Some(max) = params.max_turns {
        if max <= goal.completed_turns || max > MAX_TURNS_LIMIT {
            return Err(ValidationError::new(
                "invalid_max_turns",
                "maxTurns",
                format!(
                    "`maxTurns` must be above the {} turns done and at most {MAX_TURNS_LIMIT}",
                    goal.completed_turns
                ),
            ));
        }
        goal.max_turns = max;
    }
    if let Some(budget) = params.token_budget {
        if budget <= goal.tokens_used {
            return Err(ValidationError::new(
                "invalid_token_budget",
                "tokenBudget",
                format!(
                    "`tokenBudget` must be above the {} tokens used",
                    goal.tokens_used
                ),
            ));
        }
        goal.token_budget = Some(budget);
    }
    if let Some(minutes) = params.deadline_minutes {
        if !(1..=10_080).contains(&minutes) {
            return Err(ValidationError::new(
                "invalid_deadline",
                "deadlineMinutes",
                "`deadlineMinutes` must be 1 to 10080",
            ));
        }
        goal.deadline = Some(now + minutes * 60_000);
    }
    let still_exhausted = goal.completed_turns >= goal.max_turns
        || goal.token_budget.is_some_and(|b| goal.tokens_used >= b)
        || goal.deadline.is_some_and(|d| now >= d);
    if still_exhausted {
        return Err(ValidationError::new(
            "limit_not_raised",
            "maxTurns",
            "raise the limit the goal ran out of",
        ));
    }
    Ok(())
}

impl GoalService<'_> {
    /// Record the continuation input and start the turn in `slot`, unless
    /// the session cannot go on by itself.
    pub(crate) async fn continue_goal(
        self,
        ctx: &Arc<SessionCtx>,
        goal: &GoalRecord,
        slot: &mut Option<RunningTurn>,
    ) -> Result<(), RuntimeError> {
        if self.goal_input(ctx, goal).await? {
            *slot = Some(self.spawn_turn(ctx));
        }
        Ok(())
    }

    /// Record a goal's continuation input (taking its lease); `false` when
    /// the session cannot go on by itself. A continuation the session's
    /// hold (`Feature::holds_turns`) keeps back waits for the next
    /// after-turn decision: the end of the next turn, which judges the goal
    /// again, or `Kernel::go_on` when the hold ends with no turn.
    pub(crate) async fn goal_input(
        self,
        ctx: &SessionCtx,
        goal: &GoalRecord,
    ) -> Result<bool, RuntimeError> {
        // A loop's periodic check never drives turns of its own.
        if goal.loop_id.is_some() {
            return Ok(false);
        }
        if !self.may_continue(ctx).await {
            ctx.extensions
                .lock()
                .insert(super::feature::ToContinue(goal.clone()));
            return Ok(false);
        }
        let text = format!(
            "[Goal {}] Continue working toward your goal: {}. This is turn {} of at most {}. If the condition now holds, call completeGoal.",
            goal.id,
            goal.condition,
            goal.completed_turns + 1,
            goal.max_turns
        );
        let until = now_millis() + self.settings.cluster.lease_millis();
        self.store
            .set_goal_lease(&goal.id, &self.settings.cluster.instance, until)
            .await?;
        self.runtime_input(ctx, &text, "goal", |e| e.goal_id = Some(goal.id.clone()))
            .await?;
        Ok(true)
    }

    /// Renew the leases of the goals this instance drives, and take over
    /// goals whose instance died (their lease ran out): each continues
    /// here if its session can go on (R-ST-2).
    pub(crate) async fn sweep_goals(self) -> Result<(), RuntimeError> {
        let me = &self.settings.cluster.instance;
        let now = now_millis();
        let until = now + self.settings.cluster.lease_millis();
        self.store.renew_goal_leases(me, until).await?;
        for goal in self.store.claim_orphan_goals(me, now, until, 100).await? {
            tracing::info!(goal = %goal.id, session = %goal.session_id, "taking over a goal whose instance stopped");
            let ctx = self.session(&goal.session_id).await?;
            self.refresh_if_stale(&ctx).await?;
            let mut slot = ctx.turn.lock().await;
            // A turn running here or elsewhere settles the goal when it ends.
            if slot.as_ref().is_none_or(|t| t.handle.is_finished())
                && self.cluster().claim(&ctx).await?
            {
                let continued = self.continue_goal(&ctx, &goal, &mut slot).await;
                if slot.as_ref().is_none_or(|t| t.handle.is_finished()) {
                    self.cluster().release(&ctx).await;
                }
                continued?;
            }
        }
        Ok(())
    }
}
