//! The task drivers running in this process: one per task this instance
//! holds (or reserves while it is being delegated), each with the token
//! that cancels the backend's work and the handle that drops the driver.
//! Only these tasks' leases are renewed.

use std::collections::HashMap;
use std::sync::Mutex;

use rtc_store::now_millis;
use tokio_util::sync::CancellationToken;

/// A driver running in this process (or reserved for a task being
/// delegated, before its driver starts).
pub(super) struct Driver {
    /// Asks the driver to stop the backend's work (a cancellation).
    pub(super) cancel: CancellationToken,
    /// Drops the driver without touching the backend (shutdown, or the
    /// task was lost to another instance); `None` while reserved.
    pub(super) handle: Option<tokio::task::AbortHandle>,
}

/// The drivers of this process, by task id. Only their tasks' leases are
/// renewed: a task whose driver is gone (it failed, panicked, or never
/// started) runs out of lease and is taken over.
pub(crate) struct TaskDrivers {
    pub(super) map: Mutex<HashMap<String, Driver>>,
    /// When this process started: its own tasks created earlier belong to
    /// an earlier life (a restart under the same instance name).
    pub(super) since: i64,
}

impl Default for TaskDrivers {
    fn default() -> Self {
        Self {
            map: Mutex::default(),
            since: now_millis(),
        }
    }
}

/// Removes a driver's entry when its task ends, however it ends (a panic
/// included), so the task is not held without a driver.
pub(super) struct DriverEntry<'a> {
    pub(super) drivers: &'a TaskDrivers,
    pub(super) id: String,
}

impl Drop for DriverEntry<'_> {
    fn drop(&mut self) {
        if let Ok(mut m) = self.drivers.map.lock() {
            m.remove(&self.id);
        }
    }
}

impl TaskDrivers {
    pub(super) fn ids(&self) -> Vec<String> {
        self.map
            .lock()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The tasks whose driver runs (not those reserved while starting).
    pub(super) fn driven_ids(&self) -> Vec<String> {
        self.map
            .lock()
            .map(|m| {
                m.iter()
                    .filter(|(_, d)| d.handle.is_some())
                    .map(|(id, _)| id.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Hold `id` for a task being delegated: its lease is renewed and a
    /// cancellation meanwhile reaches its driver once it starts.
    pub(crate) fn reserve(&self, id: &str) -> CancellationToken {
        let cancel = CancellationToken::new();
        if let Ok(mut m) = self.map.lock() {
            m.insert(
                id.to_owned(),
                Driver {
                    cancel: cancel.clone(),
                    handle: None,
                },
            );
        }
        cancel
    }

    /// Give up a reservation whose task never started.
    pub(crate) fn release(&self, id: &str) {
        if let Ok(mut m) = self.map.lock()
            && m.get(id).is_some_and(|d| d.handle.is_none())
        {
            m.remove(id);
        }
    }

    pub(super) fn cancel(&self, id: &str) -> bool {
        let driver = self
            .map
            .lock()
            .ok()
            .and_then(|m| m.get(id).map(|d| d.cancel.clone()));
        driver.is_some_and(|c| {
            c.cancel();
            true
        })
    }

    pub(super) fn drop_driver(&self, id: &str) {
        if let Some(d) = self.map.lock().ok().and_then(|mut m| m.remove(id))
            && let Some(h) = d.handle
        {
            h.abort();
        }
    }

    /// Drop every driver (shutdown): the tasks stay running in the store
    /// and are resumed by the next start (or another instance).
    pub(crate) fn abort_all(&self) {
        let drained: Vec<Driver> = self
            .map
            .lock()
            .map(|mut m| m.drain().map(|(_, d)| d).collect())
            .unwrap_or_default();
        for h in drained.into_iter().filter_map(|d| d.handle) {
            h.abort();
        }
    }
}
