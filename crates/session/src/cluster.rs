//! The cluster's settings (R-PF-4): this process's name in leases and
//! turn ownership, how long a lease holds without a heartbeat, and whether
//! other instances may share the database. Owners of cross-instance work
//! (ownership, control messages, remote clients, loop ticks, goal and task
//! leases) read them here, not from any one feature's settings.

use std::time::Duration;

use rtc_store::new_id;

/// Who this instance is among the others.
#[derive(Debug, Clone)]
pub struct ClusterSettings {
    /// This process's name in leases and turn ownership; distinct per
    /// instance.
    pub instance: String,
    /// How long a lease (an instance's liveness, a claimed tick, a goal or
    /// task driver) holds without a heartbeat.
    pub lease: Duration,
}

impl Default for ClusterSettings {
    fn default() -> Self {
        Self {
            instance: new_id("inst"),
            lease: Duration::from_secs(30),
        }
    }
}

impl ClusterSettings {
    /// The lease in milliseconds (the store's clock).
    pub fn lease_millis(&self) -> i64 {
        millis(self.lease)
    }
}

/// A duration in whole milliseconds, saturating.
pub fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
