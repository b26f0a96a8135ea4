//! The task drivers running in this process: one per task this instance
//! holds (or reserves while it is being delegated), each with the token
//! that cancels the backend's work and the handle that drops the driver.
//! Only these tasks' leases are renewed.

use parking_lot::Mutex;
use std::collections::HashMap;

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
    /// Whether this process's own earlier tasks are still to be taken
    /// back (the first round of the keeper that works does it).
    pub(super) taking_back: std::sync::atomic::AtomicBool,
}

impl Default for TaskDrivers {
    fn default() -> Self {
        Self {
            map: Mutex::default(),
            since: now_millis(),
            taking_back: std::sync::atomic::AtomicBool::new(true),
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
        self.drivers.map.lock().remove(&self.id);
    }
}

impl TaskDrivers {
    pub(super) fn ids(&self) -> Vec<String> {
        self.map.lock().keys().cloned().collect()
    }

    /// The tasks whose driver runs (not those reserved while starting).
    pub(super) fn driven_ids(&self) -> Vec<String> {
        self.map
            .lock()
            .iter()
            .filter(|(_, d)| d.handle.is_some())
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Hold `id` for a task being delegated: its lease is renewed and a
    /// cancellation meanwhile reaches its driver once it starts.
    pub(crate) fn reserve(&self, id: &str) -> CancellationToken {
        let cancel = CancellationToken::new();
        {
            let mut m = self.map.lock();
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
        let mut m = self.map.lock();
        if m.get(id).is_some_and(|d| d.handle.is_none()) {
            m.remove(id);
        }
    }

    pub(super) fn cancel(&self, id: &str) -> bool {
        let driver = self.map.lock().get(id).map(|d| d.cancel.clone());
        driver.is_some_and(|c| {
            c.cancel();
            true
        })
    }

    pub(super) fn drop_driver(&self, id: &str) {
        let removed = self.map.lock().remove(id);
        if let Some(d) = removed
            && let Some(h) = d.handle
        {
            h.abort();
        }
    }

    /// Drop every driver (shutdown): the tasks stay running in the store
    /// and are resumed by the next start (or another instance).
    pub(crate) fn abort_all(&self) {
        let drained: Vec<Driver> = self.map.lock().drain().map(|(_, d)| d).collect();
        for h in drained.into_iter().filter_map(|d| d.handle) {
            h.abort();
        }
    }
}
