//! Tasks delegated to task backends (R-TK, design `task-backends.md`).
//!
//! A task is a durable row (`rtc_store::TaskRecord`) driven by the
//! instance holding its lease: `service.rs` answers the three task tools
//! and the API, `reasoner.rs` runs a reasoner task (a background agent over
//! its stored transcript), `opencode.rs` drives a task on an OpenCode
//! server, `backends.rs` puts both behind the `TaskBackendDriver` trait,
//! `drivers.rs` holds the tasks running in this process, `view.rs` shows a
//! task to the API. Here: what a task runs with ([`TaskConfig`], taken at
//! delegation), the drivers running in this process, how a task ends (once,
//! with its report in the session's inbox, so the conversation hears of it
//! exactly once), and the keeper that renews leases, notices tasks ended
//! elsewhere and takes over the tasks of instances that died.

pub(crate) mod backends;
mod drivers;
mod feature;
mod opencode;
mod reasoner;
mod service;
pub(crate) mod tools;
mod view;

pub(crate) use feature::Tasks;

pub(crate) use drivers::TaskDrivers;
use drivers::{Driver, DriverEntry};
use rtc_core::report_marks::{TASK_REPORT, quote_marks};
pub(crate) use view::task_view;

use std::collections::BTreeMap;
use std::sync::Arc;

use rtc_protocol::{LlmConfig, TaskBackend, TaskCompleted, TaskStatus, TaskUpdated, Tool};
use rtc_store::{InboxItem, InboxKind, TaskEnding, TaskRecord, now_millis};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::RuntimeError;
use crate::features::inbox::InboxService;
use backends::TaskBackends;

/// The tasks feature's operations on its host.
pub(crate) type TaskService<'a> = crate::feature::Service<'a, feature::Tasks>;

/// Longest result or error a report carries, in characters.
const MAX_REPORT_CHARS: usize = 100_000;
/// Most orphaned tasks taken over in one round of the keeper.
const CLAIM_BATCH: i64 = 50;

/// What a task runs with, taken when it was delegated: a running task is
/// not changed by later edits, and a takeover resumes it the same way.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskConfig {
    pub backend: TaskBackend,
    /// The reasoner's bound tools, by id.
    #[serde(default)]
    pub tools: BTreeMap<String, Tool>,
    /// The delegating session's variables (for `variable` sources).
    #[serde(default)]
    pub variables: Map<String, Value>,
    /// The delegating assistant's model settings (the reasoner's defaults).
    #[serde(default)]
    pub assistant_llm: LlmConfig,
    /// Delegated by a test-mode session (R-BX-10): the reasoner's tools
    /// answer their mocks; an OpenCode task is not started.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub test_mode: bool,
}

/// How a task ended, as its driver saw it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ending {
    Completed(String),
    Failed(String),
    Cancelled(String),
}

impl Ending {
    fn status(&self) -> TaskStatus {
        match self {
            Self::Completed(_) => TaskStatus::Completed,
            Self::Failed(_) => TaskStatus::Failed,
            Self::Cancelled(_) => TaskStatus::Cancelled,
        }
    }
}

/// `text` without NUL characters (PostgreSQL text cannot hold them) and
/// cut to the report's limit.
fn capped(text: &str) -> String {
    let text = text.replace('\0', "");
    match text.char_indices().nth(MAX_REPORT_CHARS) {
        Some((at, _)) => format!("{}\n[… cut at {MAX_REPORT_CHARS} characters]", &text[..at]),
        None => text.to_owned(),
    }
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn cut_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut at = max;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    format!("{}…", &text[..at])
}

/// The message a finished task becomes in its conversation: the report
/// mark, then text the backend wrote with any mark in it quoted (a result
/// cannot forge another report).
fn report_text(task: &TaskRecord, ending: &Ending) -> String {
    let head = format!(
        "{TASK_REPORT} \"{}\" ({})",
        quote_marks(&task.title),
        task.id
    );
    match ending {
        Ending::Completed(result) => format!("{head} completed:\n{}", quote_marks(result)),
        Ending::Failed(error) => format!("{head} failed: {}", quote_marks(error)),
        Ending::Cancelled(why) => format!("{head} cancelled: {}", quote_marks(why)),
    }
}

impl TaskService<'_> {
    /// Run `task`'s driver in this process (the lease is ours); a
    /// reservation made at delegation keeps its cancellation token.
    pub(crate) fn spawn_driver(self, task: TaskRecord) {
        let id = task.id.clone();
        let mut map = self.service::<TaskDrivers>().map.lock();
        let cancel = match map.get(&id) {
            Some(d) if d.handle.is_some() => return,
            Some(d) => d.cancel.clone(),
            None => CancellationToken::new(),
        };
        let rt = self.rt.clone();
        let token = cancel.clone();
        let handle = tokio::spawn(async move {
            let _entry = DriverEntry {
                drivers: rt.service::<TaskDrivers>(),
                id: task.id.clone(),
            };
            let task_id = task.id.clone();
            if let Err(e) = TaskService::of(&rt).drive(task, token).await {
                // Not ended: its lease runs out and it is taken over.
                tracing::error!(task = %task_id, error = %e, "driving a task failed; it will be resumed");
            }
        });
        map.insert(
            id,
            Driver {
                cancel,
                handle: Some(handle.abort_handle()),
            },
        );
    }

    /// Drive a task to its end and record it (while this instance still
    /// holds it).
    async fn drive(self, task: TaskRecord, cancel: CancellationToken) -> Result<(), RuntimeError> {
        let ending = match serde_json::from_str::<TaskConfig>(&task.config) {
            Err(e) => Some(Ending::Failed(format!(
                "the task's stored configuration is unreadable: {e}"
            ))),
            Ok(config) => match self
                .service::<TaskBackends>()
                .driver(config.backend.backend_type)
            {
                None => Some(Ending::Failed(format!(
                    "no driver runs `{}` task backends here",
                    config.backend.backend_type.as_str()
                ))),
                Some(driver) => driver.run(self.rt, &task, &config, cancel).await?,
            },
        };
        // `None`: the task is no longer ours (taken over, or ended
        // elsewhere); a task ended elsewhere is not ended twice either.
        let Some(ending) = ending else {
            return Ok(());
        };
        // The end and its report are written to the end even if the
        // driver is dropped meanwhile (a keeper round sees the task ended,
        // no longer running here, and drops its driver; so does
        // shutdown): the driver stays in the map, its lease renewed, until
        // the end is written.
        let rt = self.rt.clone();
        self.to_the_end("ending a task", async move {
            TaskService::of(&rt).end_task(&task, ending).await
        })
        .await?
    }

    /// Record the end of `task` (once) and tell its conversation: the
    /// report waits in the session's inbox, written with the status, and
    /// is delivered now if the session is idle.
    pub(crate) async fn end_task(
        self,
        task: &TaskRecord,
        ending: Ending,
    ) -> Result<(), RuntimeError> {
        let me = self.settings.cluster.instance.clone();
        self.end_task_reported(task, ending, Some(&me))
            .await
            .map(|_| ())
    }

    /// [`Self::end_task`] for `holder` (`None`: a cancellation any
    /// instance may write); whether this write ended the task.
    pub(crate) async fn end_task_reported(
        self,
        task: &TaskRecord,
        ending: Ending,
        holder: Option<&str>,
    ) -> Result<bool, RuntimeError> {
        let ending = match ending {
            Ending::Completed(r) => Ending::Completed(capped(&r)),
            Ending::Failed(e) => Ending::Failed(capped(&e)),
            other => other,
        };
        let session = self
            .store
            .session(&task.workspace_id, &task.session_id)
            .await?;
        let active = session
            .as_ref()
            .is_some_and(|s| s.status != rtc_protocol::SessionStatus::Ended);
        let report = active.then(|| {
            let mut item = InboxItem::new(
                &task.session_id,
                InboxKind::TaskReport,
                &task.id,
                None,
                report_text(task, &ending),
            );
            item.from_session_id = None;
            item
        });
        self.finish_recorded(task, &ending, report.as_ref(), holder)
            .await
    }

    /// Write the end of `task` with `report` (if any) and announce it; a
    /// report is delivered now if the session is idle. `holder`: the
    /// driver's instance, which must still hold the lease (`None` for a
    /// cancellation). Returns whether this write ended the task.
    pub(crate) async fn finish_recorded(
        self,
        task: &TaskRecord,
        ending: &Ending,
        report: Option<&InboxItem>,
        holder: Option<&str>,
    ) -> Result<bool, RuntimeError> {
        let Some(ctx) = self.write_ending(task, ending, report, holder).await? else {
            return Ok(false);
        };
        if report.is_some() {
            InboxService::of(self.rt).kick(&ctx).await?;
        }
        Ok(true)
    }

    /// Write the end of `task` (only over `running`) with its report and
    /// emit `task.completed`; the session's context when it was written.
    async fn write_ending(
        self,
        task: &TaskRecord,
        ending: &Ending,
        report: Option<&InboxItem>,
        holder: Option<&str>,
    ) -> Result<Option<Arc<crate::session::SessionCtx>>, RuntimeError> {
        let (result, error) = match ending {
            Ending::Completed(r) => (Some(r.as_str()), None),
            Ending::Failed(e) | Ending::Cancelled(e) => (None, Some(e.as_str())),
        };
        let status = ending.status();
        let won = self
            .store
            .finish_task(
                &task.id,
                &TaskEnding {
                    status: status.as_str(),
                    result,
                    error,
                    report,
                    holder,
                },
            )
            .await?;
        if !won {
            return Ok(None);
        }
        let Ok(ctx) = self.session(&task.session_id).await else {
            return Ok(None);
        };
        // The event carries the result within the event bound; the report
        // and the task carry it whole.
        let max = self.settings.limits.max_event_result_bytes;
        let event = TaskCompleted {
            task_id: task.id.clone(),
            title: task.title.clone(),
            status,
            result: result.map(|r| cut_bytes(r, max)),
            error: error.map(|e| cut_bytes(e, max)),
        };
        ctx.events.emit(event.into()).await?;
        Ok(Some(ctx))
    }

    /// Save a running task's progress and announce it; `false` when the
    /// task is no longer ours to drive (ended elsewhere or taken over).
    pub(crate) async fn task_progress(
        self,
        task: &TaskRecord,
        transcript: &str,
        steps: u32,
        detail: &str,
    ) -> Result<bool, RuntimeError> {
        let detail = detail.replace('\0', "");
        let held = self
            .store
            .save_task_progress(
                &task.id,
                &self.settings.cluster.instance,
                transcript,
                i64::from(steps),
                Some(&detail),
            )
            .await?;
        if held {
            self.tell_progress(task, detail, steps).await?;
        }
        Ok(held)
    }

    /// Tell the task's conversation (if it is still there) how far the
    /// task got: `task.updated`.
    pub(crate) async fn tell_progress(
        self,
        task: &TaskRecord,
        detail: String,
        steps: u32,
    ) -> Result<(), RuntimeError> {
        if let Ok(ctx) = self.session(&task.session_id).await {
            let event = TaskUpdated {
                task_id: task.id.clone(),
                detail,
                steps,
            };
            ctx.events.emit(event.into()).await?;
        }
        Ok(())
    }

    /// The running tasks of a session that ends stop with it (no report:
    /// nobody is left to read it); called before the end is announced, so
    /// their `task.completed` comes before `session.ended`.
    pub(crate) async fn cancel_session_tasks(self, session: &str) -> Result<(), RuntimeError> {
        for task in self.store.running_session_tasks(session).await? {
            let ending = Ending::Cancelled("the session ended".into());
            self.write_ending(&task, &ending, None, None).await?;
            self.service::<TaskDrivers>().cancel(&task.id);
        }
        Ok(())
    }

    /// [`Self::cancel_session_tasks`], whose failure is logged: the
    /// session's end is announced anyway (a task left running is ended by
    /// its driver, which finds the session ended).
    pub(crate) async fn cancel_session_tasks_logged(self, session: &str) {
        if let Err(e) = self.cancel_session_tasks(session).await {
            tracing::error!(session = %session, error = %e, "cancelling the tasks of an ended session failed");
        }
    }

    /// One round of the keeper: renew our leases, stop drivers of tasks
    /// that ended elsewhere or were taken over, and take over orphaned
    /// tasks (`first`: also those this instance's name held before a
    /// restart).
    /// The keeper's round (every third of a lease): renew this instance's
    /// task leases, stop following tasks it lost, and take over tasks
    /// whose instance stopped (its own earlier tasks too, in its first
    /// round that works).
    pub(crate) async fn keep_tasks(self) -> Result<(), RuntimeError> {
        let first = self
            .service::<TaskDrivers>()
            .taking_back
            .load(std::sync::atomic::Ordering::SeqCst);
        let me = &self.settings.cluster.instance;
        let lease = self.settings.cluster.lease_millis();
        let now = now_millis();
        let mine = self.service::<TaskDrivers>().ids();
        self.store.renew_task_leases(me, &mine, now + lease).await?;
        let driven = self.service::<TaskDrivers>().driven_ids();
        if !driven.is_empty() {
            for (lost, status) in self.store.tasks_lost_by(me, &driven).await? {
                // Cancelled (or gone): the backend's work stops too; taken
                // over or ended otherwise: just stop following it.
                if status.is_none_or(|s| s == TaskStatus::Cancelled.as_str()) {
                    self.service::<TaskDrivers>().cancel(&lost);
                } else {
                    self.service::<TaskDrivers>().drop_driver(&lost);
                }
            }
        }
        if self.tasks.is_closed() {
            return Ok(());
        }
        let own_before = first.then_some(self.service::<TaskDrivers>().since);
        let claimed = self
            .store
            .claim_orphan_tasks(me, now, now + lease, CLAIM_BATCH, own_before)
            .await?;
        for task in claimed {
            tracing::info!(task = %task.id, "resuming a task");
            self.spawn_driver(task);
        }
        self.service::<TaskDrivers>()
            .taking_back
            .store(false, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}
