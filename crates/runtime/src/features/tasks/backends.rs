//! Task backends behind one interface (R-TK, design `task-backends.md`):
//! a [`TaskBackendDriver`] starts a task delegated to its kind of backend,
//! runs or follows it to its end, and owns what it keeps while doing so
//! (the OpenCode driver its servers, clients and event hubs). The task
//! service (`service.rs`, `mod.rs`) asks [`TaskBackends`] for the driver
//! of a backend's type and never matches on the type itself; a new kind of
//! backend is one more driver registered in [`TaskBackends::new`].

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rtc_protocol::{TaskBackend, TaskBackendType};
use rtc_store::{TaskRecord, now_millis};
use tokio_util::sync::CancellationToken;

use super::opencode::{self, BackendError, OpencodeServers};
use super::{Ending, TaskConfig};
use crate::features::tasks::TaskService;
use crate::{Inner, RuntimeConfig, RuntimeError};

/// One kind of task backend.
pub(crate) trait TaskBackendDriver: Send + Sync {
    /// The type of backend it drives.
    fn backend_type(&self) -> TaskBackendType;

    /// A task was recorded (its delegating call still waits): start it on
    /// the backend. `Ok(Some(id))`: the backend's own id of the task;
    /// `Err`: why it could not start, for the model to read.
    fn start<'a>(
        &'a self,
        _rt: &'a Arc<Inner>,
        _task: &'a TaskRecord,
        _backend: &'a TaskBackend,
    ) -> BoxFuture<'a, Result<Option<String>, BackendError>> {
        Box::pin(async { Ok(None) })
    }

    /// Run (or resume, after a restart or takeover) `task` to its end;
    /// `None` when it stopped being this instance's (taken over, or ended
    /// elsewhere).
    fn run<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        task: &'a TaskRecord,
        config: &'a TaskConfig,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<Option<Ending>, RuntimeError>>;

    /// A backend of this type was deleted: what was kept for it goes.
    fn backend_deleted<'a>(
        &'a self,
        _workspace: &'a str,
        _backend_id: &'a str,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// The runtime shuts down (tasks go on in the store).
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// The drivers of this process, one per backend type.
pub(crate) struct TaskBackends {
    drivers: Vec<Arc<dyn TaskBackendDriver>>,
}

impl TaskBackends {
    /// Every driver, configured from the runtime's configuration.
    pub(crate) fn new(config: &RuntimeConfig) -> Self {
        Self {
            drivers: vec![
                Arc::new(Reasoner),
                Arc::new(Opencode {
                    servers: OpencodeServers::new(
                        config.mcp.policy,
                        config.upstream,
                        config.data_dir.clone(),
                    ),
                }),
            ],
        }
    }

    /// The driver of `backend_type`.
    pub(crate) fn driver(
        &self,
        backend_type: TaskBackendType,
    ) -> Option<&Arc<dyn TaskBackendDriver>> {
        self.drivers
            .iter()
            .find(|d| d.backend_type() == backend_type)
    }

    /// Tell every driver that backend `backend_id` was deleted.
    pub(crate) async fn backend_deleted(&self, workspace: &str, backend_id: &str) {
        for driver in &self.drivers {
            driver.backend_deleted(workspace, backend_id).await;
        }
    }

    /// Stop what every driver runs.
    pub(crate) async fn shutdown(&self) {
        for driver in &self.drivers {
            driver.shutdown().await;
        }
    }
}

/// A background agent of the platform over the task's stored transcript
/// (`reasoner.rs`); it keeps nothing but the transcript in the store.
struct Reasoner;

impl TaskBackendDriver for Reasoner {
    fn backend_type(&self) -> TaskBackendType {
        TaskBackendType::Reasoner
    }

    fn run<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        task: &'a TaskRecord,
        config: &'a TaskConfig,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<Option<Ending>, RuntimeError>> {
        Box::pin(async move {
            TaskService::of(rt)
                .run_reasoner(task, config, &cancel)
                .await
        })
    }
}

/// An OpenCode server driven over its HTTP API (`opencode.rs`): the
/// driver owns the servers of every backend in use.
struct Opencode {
    servers: OpencodeServers,
}

impl TaskBackendDriver for Opencode {
    fn backend_type(&self) -> TaskBackendType {
        TaskBackendType::Opencode
    }

    fn start<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        task: &'a TaskRecord,
        backend: &'a TaskBackend,
    ) -> BoxFuture<'a, Result<Option<String>, BackendError>> {
        Box::pin(async move {
            self.servers
                .start_task(
                    &rt.store,
                    &task.workspace_id,
                    backend,
                    &task.title,
                    &task.instruction,
                )
                .await
                .map(Some)
        })
    }

    fn run<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        task: &'a TaskRecord,
        config: &'a TaskConfig,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<Option<Ending>, RuntimeError>> {
        Box::pin(async move {
            if config.test_mode {
                return Ok(Some(Ending::Completed(mock_result(task))));
            }
            Ok(Some(self.follow(rt, task, config, cancel).await))
        })
    }

    fn backend_deleted<'a>(&'a self, workspace: &'a str, backend_id: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(self.servers.forget(workspace, backend_id))
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.servers.shutdown())
    }
}

/// What an OpenCode task of a test-mode session answers: it is not started.
fn mock_result(task: &TaskRecord) -> String {
    format!(
        "[test mode] OpenCode was not started for \"{}\"; this mock result stands for its answer.",
        task.title
    )
}

impl Opencode {
    /// Follow a started task (started at delegation, or re-attached by its
    /// OpenCode session id after a restart or takeover).
    async fn follow(
        &self,
        rt: &Arc<Inner>,
        task: &TaskRecord,
        config: &TaskConfig,
        cancel: CancellationToken,
    ) -> Ending {
        let Some(external) = task.external_id.as_deref() else {
            return Ending::Failed(
                "the server restarted before the task reached the OpenCode server".into(),
            );
        };
        let remaining = u64::try_from(task.deadline_at - now_millis()).unwrap_or(0);
        let deadline = tokio::time::Instant::now() + Duration::from_millis(remaining);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let recorder = rt.clone();
        let updated = task.clone();
        let forward = tokio::spawn(async move {
            while let Some(detail) = rx.recv().await {
                if let Err(e) = TaskService::of(&recorder)
                    .task_progress(&updated, "[]", 0, &detail)
                    .await
                {
                    tracing::warn!(task = %updated.id, error = %e, "recording task progress failed");
                }
            }
        });
        let progress = move |detail: String| {
            let _ = tx.send(detail);
        };
        // Followed with the backend as it is now (an edit moves every task
        // of it to the new connection settings; a started server is not
        // kept twice), or as it was when the backend is gone.
        let current = match &config.backend.id {
            Some(id) => rt
                .store
                .get::<TaskBackend>(&task.workspace_id, id)
                .await
                .ok()
                .flatten()
                .filter(|b| b.backend_type == TaskBackendType::Opencode),
            None => None,
        };
        let backend = current.as_ref().unwrap_or(&config.backend);
        let end = self
            .servers
            .follow_task(
                opencode::Followed {
                    store: &rt.store,
                    workspace: &task.workspace_id,
                    backend,
                    external_id: external,
                    deadline,
                    progress: &progress,
                },
                cancel,
            )
            .await;
        drop(progress);
        let _ = forward.await;
        match end {
            opencode::TaskEnd::Completed(result) => Ending::Completed(result),
            opencode::TaskEnd::Failed(error) => Ending::Failed(error),
            opencode::TaskEnd::Cancelled => Ending::Cancelled("cancelled".into()),
        }
    }
}
