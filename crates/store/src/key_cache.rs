//! Workspace keys recently looked up, so a host's every request does not
//! read the workspaces table: a hit is kept for a short while, a miss is
//! never kept. A rotation or restore through this store clears it; another
//! instance's rotation is seen once the entry expires (PostgreSQL keeps
//! entries for a second only).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::workspaces::WorkspaceRecord;

/// The most keys kept; a full cache starts over.
const MAX_KEYS: usize = 4096;

#[derive(Debug)]
pub(crate) struct KeyCache {
    ttl: Duration,
    entries: Mutex<HashMap<String, (WorkspaceRecord, Instant)>>,
}

impl KeyCache {
    pub(crate) fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The workspace of a key hash, if looked up less than the TTL ago.
    pub(crate) fn get(&self, hash: &str) -> Option<WorkspaceRecord> {
        let entries = self.entries.lock();
        let (record, at) = entries.get(hash)?;
        (at.elapsed() < self.ttl).then(|| record.clone())
    }

    pub(crate) fn put(&self, hash: String, record: WorkspaceRecord) {
        {
            let mut entries = self.entries.lock();
            if entries.len() >= MAX_KEYS {
                entries.clear();
            }
            entries.insert(hash, (record, Instant::now()));
        }
    }

    /// Forget every key (a key changed, or the data was replaced).
    pub(crate) fn clear(&self) {
        self.entries.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(id: &str) -> WorkspaceRecord {
        WorkspaceRecord {
            id: id.to_owned(),
            name: id.to_owned(),
            created_at: String::new(),
        }
    }

    #[test]
    fn a_hit_is_kept_for_the_ttl_and_clear_forgets_it() {
        let cache = KeyCache::new(Duration::from_secs(60));
        assert_eq!(cache.get("h"), None);
        cache.put("h".into(), ws("a"));
        assert_eq!(cache.get("h").map(|w| w.id), Some("a".to_owned()));
        cache.clear();
        assert_eq!(cache.get("h"), None);
    }

    #[test]
    fn an_expired_entry_is_not_given() {
        let cache = KeyCache::new(Duration::ZERO);
        cache.put("h".into(), ws("a"));
        assert_eq!(cache.get("h"), None);
    }

    #[test]
    fn a_full_cache_starts_over() {
        let cache = KeyCache::new(Duration::from_secs(60));
        for i in 0..MAX_KEYS {
            cache.put(format!("h{i}"), ws("a"));
        }
        cache.put("last".into(), ws("b"));
        assert_eq!(cache.get("h0"), None);
        assert_eq!(cache.get("last").map(|w| w.id), Some("b".to_owned()));
    }
}
