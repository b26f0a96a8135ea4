//! The webFetch cache (R-WFF-3): answers kept for a while (30 minutes by
//! default) keyed by URL. It cleans itself: expired entries go on every
//! insert, and past its capacity the oldest entries go first.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub(crate) struct TtlCache<V> {
    ttl: Duration,
    capacity: usize,
    entries: Mutex<HashMap<String, (Instant, V)>>,
}

impl<V: Clone> TtlCache<V> {
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            ttl,
            capacity: capacity.max(1),
            entries: Mutex::default(),
        }
    }

    /// The value stored for `key` if it has not expired.
    pub fn get(&self, key: &str) -> Option<V> {
        let entries = self.entries.lock().ok()?;
        let (at, value) = entries.get(key)?;
        (at.elapsed() < self.ttl).then(|| value.clone())
    }

    pub fn insert(&self, key: String, value: V) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        let ttl = self.ttl;
        entries.retain(|_, (at, _)| at.elapsed() < ttl);
        while entries.len() >= self.capacity {
            let oldest = entries
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => entries.remove(&k),
                None => break,
            };
        }
        entries.insert(key, (Instant::now(), value));
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_clean_themselves() {
        let cache = TtlCache::new(Duration::from_millis(30), 10);
        cache.insert("a".into(), 1);
        assert_eq!(cache.get("a"), Some(1));
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(cache.get("a"), None, "expired");
        cache.insert("b".into(), 2);
        assert_eq!(cache.len(), 1, "the expired entry was dropped on insert");
    }

    #[test]
    fn the_oldest_entry_goes_past_capacity() {
        let cache = TtlCache::new(Duration::from_secs(60), 2);
        cache.insert("a".into(), 1);
        std::thread::sleep(Duration::from_millis(2));
        cache.insert("b".into(), 2);
        cache.insert("c".into(), 3);
        assert_eq!(
            (cache.get("a"), cache.get("b"), cache.get("c")),
            (None, Some(2), Some(3))
        );
    }
}
