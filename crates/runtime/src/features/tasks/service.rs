//! The task tools as the model calls them (`delegate_task`,
//! `get_task_status`, `cancel_task`) and the tasks of a session as the API
//! shows them. Tasks are per session: another session's id is "not found".

use std::collections::BTreeMap;
use std::sync::Arc;

use rtc_core::time::rfc3339_from_millis;
use rtc_protocol::{Assistant, Task, TaskBackend, TaskStarted, TaskStatus, Tool};
use rtc_store::{TaskRecord, new_id, now_millis};
use serde_json::{Value, json};

use super::TaskDrivers;
use super::TaskService;
use super::backends::TaskBackends;
use super::opencode::BackendError;
use super::{Ending, TaskConfig, task_view};
use crate::features::tasks::tools::delegate::Delegate;
use crate::session::SessionCtx;
use crate::tool::CallOutcome;
use crate::{Runtime, RuntimeError};

/// What the model reads for a task id it does not own.
fn not_found(id: &str) -> CallOutcome {
    CallOutcome::error(format!(
        "task `{id}` not found in this conversation; use the task_id delegate_task answered"
    ))
}

/// `get_task_status`'s answer.
fn status_of(t: &TaskRecord) -> Value {
    let mut out = json!({"task_id": t.id, "title": t.title, "status": t.status,
        "started_at": rfc3339_from_millis(t.created_at)});
    for (key, value) in [
        ("result", &t.result),
        ("error", &t.error),
        ("detail", &t.detail),
    ] {
        if let Some(v) = value {
            out[key] = json!(v);
        }
    }
    if let Some(f) = t.finished_at {
        out["finished_at"] = json!(rfc3339_from_millis(f));
    }
    out
}

impl TaskService<'_> {
    /// `delegate_task`: check the backend and its limit, record the task
    /// (leased to this instance), start it and answer at once.
    pub(crate) async fn delegate_task(
        self,
        ctx: &Arc<SessionCtx>,
        assistant: &Assistant,
        args: Delegate,
    ) -> Result<CallOutcome, RuntimeError> {
        let Some(backend_id) = assistant.task_backend_id.as_deref() else {
            return Ok(CallOutcome::error("this assistant has no task backend"));
        };
        let Some(backend) = self
            .store
            .get::<TaskBackend>(&ctx.workspace, backend_id)
            .await?
        else {
            return Ok(CallOutcome::error(format!(
                "task backend `{backend_id}` no longer exists"
            )));
        };
        let mut tools = BTreeMap::new();
        if let Some(reasoner) = &backend.reasoner {
            for b in &reasoner.tool_bindings {
                if let Some(tool) = self.store.get::<Tool>(&ctx.workspace, &b.tool_id).await? {
                    tools.insert(b.tool_id.clone(), tool);
                }
            }
        }
        let config = TaskConfig {
            backend: backend.clone(),
            tools,
            variables: ctx.state.lock().await.variables.clone(),
            assistant_llm: assistant.llm.clone(),
            test_mode: ctx.config.test.is_some(),
        };
        let now = now_millis();
        let lease = self.settings.cluster.lease_millis();
        let timeout = i64::from(backend.timeout_seconds) * 1000;
        let task = TaskRecord {
            id: new_id("task"),
            workspace_id: ctx.workspace.clone(),
            session_id: ctx.id.clone(),
            backend_id: backend_id.to_owned(),
            backend_type: backend.backend_type.as_str().to_owned(),
            config: serde_json::to_string(&config)
                .map_err(|e| RuntimeError::Internal(e.to_string()))?,
            title: args.title.trim().to_owned(),
            instruction: args.instruction,
            status: TaskStatus::Running.as_str().to_owned(),
            result: None,
            error: None,
            detail: None,
            external_id: None,
            transcript: "[]".to_owned(),
            steps: 0,
            lease_owner: Some(self.settings.cluster.instance.clone()),
            lease_until: Some(now + lease),
            deadline_at: now + timeout,
            created_at: now,
            updated_at: now,
            finished_at: None,
        };
        let limit = i64::from(backend.max_concurrent_tasks);
        // Held before it is recorded: its lease is renewed from the start,
        // and a cancellation while it starts reaches its driver.
        self.service::<TaskDrivers>().reserve(&task.id);
        if !self.store.insert_task_within(&task, limit).await? {
            self.service::<TaskDrivers>().release(&task.id);
            return Ok(CallOutcome::error(format!(
                "task backend \"{}\" already runs {limit} tasks (its limit); wait for a report or cancel a task",
                backend.name
            )));
        }
        // The rest runs to its end even if this call is dropped (a user
        // message cancels the turn): a recorded task is always started or
        // ended.
        let rt = self.rt.clone();
        let session = ctx.clone();
        tokio::spawn(async move {
            TaskService::of(&rt)
                .start_delegated(&session, task, &backend)
                .await
        })
        .await
        .map_err(|e| RuntimeError::Internal(format!("starting a task: {e}")))?
    }

    /// Start a recorded task: an OpenCode task's session is created and
    /// prompted now (so an unreachable server is the call's error), then
    /// its driver runs.
    async fn start_delegated(
        self,
        ctx: &SessionCtx,
        mut task: TaskRecord,
        backend: &TaskBackend,
    ) -> Result<CallOutcome, RuntimeError> {
        let mut still_running = true;
        let driver = self
            .service::<TaskBackends>()
            .driver(backend.backend_type)
            .cloned();
        // A test-mode session starts nothing outside (R-BX-10).
        if let Some(driver) = driver.filter(|_| ctx.config.test.is_none()) {
            match driver.start(self.rt, &task, backend).await {
                Ok(None) => {}
                Ok(Some(external)) => {
                    let me = &self.settings.cluster.instance;
                    still_running = self
                        .store
                        .set_task_external_id(&task.id, me, &external)
                        .await
                        .unwrap_or(false);
                    // Its driver runs even when the task was cancelled
                    // meanwhile: it aborts the OpenCode session.
                    task.external_id = Some(external);
                }
                Err(BackendError(message)) => {
                    self.service::<TaskDrivers>().release(&task.id);
                    self.finish_recorded(&task, &Ending::Failed(message.clone()), None, None)
                        .await?;
                    return Ok(CallOutcome::error(message));
                }
            }
        }
        let id = task.id.clone();
        let started = TaskStarted {
            task_id: task.id.clone(),
            title: task.title.clone(),
            backend_id: task.backend_id.clone(),
            backend_type: backend.backend_type,
        };
        self.spawn_driver(task);
        if !still_running {
            return Ok(CallOutcome::ok(
                json!({"task_id": id, "status": "cancelled"}),
            ));
        }
        ctx.events.emit(started.into()).await?;
        Ok(CallOutcome::ok(json!({"task_id": id, "status": "running",
            "note": "The task runs in the background; its result will arrive as a message starting with [Task report]."})))
    }

    /// `get_task_status`: one of this session's tasks.
    pub(crate) async fn task_status_tool(
        self,
        ctx: &SessionCtx,
        id: &str,
    ) -> Result<CallOutcome, RuntimeError> {
        Ok(match self.store.task(&ctx.workspace, &ctx.id, id).await? {
            Some(t) => CallOutcome::ok(status_of(&t)),
            None => not_found(id),
        })
    }

    /// `cancel_task`: the model stops one of its tasks; it needs no report
    /// (this answer tells it), and an ended task stays as it was.
    pub(crate) async fn cancel_task_tool(
        self,
        ctx: &SessionCtx,
        id: &str,
    ) -> Result<CallOutcome, RuntimeError> {
        let Some(task) = self.store.task(&ctx.workspace, &ctx.id, id).await? else {
            return Ok(not_found(id));
        };
        if task.status != TaskStatus::Running.as_str() {
            return Ok(CallOutcome::ok(
                json!({"task_id": id, "status": task.status,
                "note": format!("the task had already {}; nothing was cancelled", task.status)}),
            ));
        }
        let ending = Ending::Cancelled("cancelled by the assistant".into());
        if !self.cancel_running(&task, ending, false).await? {
            // It ended just before: say how.
            let status = match self.store.task(&ctx.workspace, &ctx.id, id).await? {
                Some(t) => t.status,
                None => return Ok(not_found(id)),
            };
            return Ok(CallOutcome::ok(json!({"task_id": id, "status": status,
                "note": format!("the task had already {status}; nothing was cancelled")})));
        }
        Ok(CallOutcome::ok(
            json!({"task_id": id, "status": "cancelled"}),
        ))
    }

    /// End a running task as cancelled, optionally telling the
    /// conversation, and stop its backend's work: at once when this
    /// instance drives it, else at its driver's next keeper round.
    async fn cancel_running(
        self,
        task: &TaskRecord,
        ending: Ending,
        report: bool,
    ) -> Result<bool, RuntimeError> {
        let won = if report {
            self.end_task_reported(task, ending, None).await?
        } else {
            self.finish_recorded(task, &ending, None, None).await?
        };
        if won {
            self.service::<TaskDrivers>().cancel(&task.id);
        }
        Ok(won)
    }
}

impl Runtime {
    /// A session's tasks, oldest first (`GET /v1/sessions/{id}/tasks`).
    pub async fn tasks(&self, workspace: &str, session: &str) -> Result<Vec<Task>, RuntimeError> {
        self.inner.session_in(workspace, session).await?;
        Ok(self
            .inner
            .store
            .session_tasks(workspace, session)
            .await?
            .iter()
            .map(|t| task_view(t, false))
            .collect())
    }

    /// One task with its transcript (`GET /v1/sessions/{id}/tasks/{taskId}`).
    pub async fn task(
        &self,
        workspace: &str,
        session: &str,
        id: &str,
    ) -> Result<Task, RuntimeError> {
        self.inner.session_in(workspace, session).await?;
        let mut task = self
            .inner
            .store
            .task(workspace, session, id)
            .await?
            .ok_or_else(|| RuntimeError::not_found("task", id))?;
        // A reasoner's messages, a row each (none for a task saved before
        // they were: its transcript is the column's).
        let rows = self.inner.store.task_transcript(id).await?;
        if !rows.is_empty() {
            task.transcript = format!("[{}]", rows.join(","));
        }
        Ok(task_view(&task, true))
    }

    /// The host cancels a task (`POST …/tasks/{taskId}/cancel`): the
    /// conversation gets a report saying so. An ended task is answered as
    /// it is.
    pub async fn cancel_task(
        &self,
        workspace: &str,
        session: &str,
        id: &str,
    ) -> Result<Task, RuntimeError> {
        self.inner.session_in(workspace, session).await?;
        let task = self
            .inner
            .store
            .task(workspace, session, id)
            .await?
            .ok_or_else(|| RuntimeError::not_found("task", id))?;
        if task.status == TaskStatus::Running.as_str() {
            let ending = Ending::Cancelled("cancelled by the host application".into());
            TaskService::of(&self.inner)
                .cancel_running(&task, ending, true)
                .await?;
        }
        self.task(workspace, session, id).await
    }
}
