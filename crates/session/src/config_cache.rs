//! Sessions opened on the same assistant share one copy of its
//! configuration: a session's snapshot is stored as JSON text with the
//! session, and contexts whose snapshots are the same text share the
//! parsed [`SessionConfig`], its assistant and what the features read from
//! it, instead of each holding its own (~16 KiB each for a one-tool
//! assistant, R-PF-5).
//!
//! The cache holds weak references: a configuration lives as long as a
//! context uses it. Keys are the whole snapshot text, compared exactly,
//! so two sessions share only what is identical.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use rtc_protocol::Assistant;

use crate::context::SessionConfig;
use crate::extensions::Extensions;

/// A session's configuration, its assistant, and what features read from
/// it (`Feature::config_parsed`).
pub struct SharedConfig {
    pub config: Arc<SessionConfig>,
    pub assistant: Arc<Assistant>,
    pub derived: Arc<Extensions>,
}

type Entry = (Weak<SessionConfig>, Weak<Assistant>, Weak<Extensions>);

#[derive(Default)]
pub struct ConfigCache {
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    by_text: HashMap<String, Entry>,
    /// Dead entries are dropped when the map reaches this size.
    prune_at: usize,
}

/// Below this many entries the map is not pruned.
const MIN_PRUNE_AT: usize = 64;

impl ConfigCache {
    /// The shared configuration of the snapshot `text`, parsed by `parse`
    /// when no live context uses it yet.
    pub fn get_or_parse<E>(
        &self,
        text: String,
        parse: impl FnOnce(&str) -> Result<(SessionConfig, Extensions), E>,
    ) -> Result<SharedConfig, E> {
        if let Some(shared) = self.lookup(&text) {
            return Ok(shared);
        }
        let (config, derived) = parse(&text)?;
        let assistant = Arc::new(config.assistant.clone());
        let (config, derived) = (Arc::new(config), Arc::new(derived));
        let mut entries = self.entries.lock();
        // Another caller may have parsed the same text meanwhile: keep one.
        if let Some(shared) = entries.by_text.get(&text).and_then(upgrade) {
            return Ok(shared);
        }
        if entries.by_text.len() >= entries.prune_at {
            entries.by_text.retain(|_, (c, _, _)| c.strong_count() > 0);
            entries.prune_at = (entries.by_text.len() * 2).max(MIN_PRUNE_AT);
        }
        entries.by_text.insert(
            text,
            (
                Arc::downgrade(&config),
                Arc::downgrade(&assistant),
                Arc::downgrade(&derived),
            ),
        );
        Ok(SharedConfig {
            config,
            assistant,
            derived,
        })
    }

    fn lookup(&self, text: &str) -> Option<SharedConfig> {
        self.entries.lock().by_text.get(text).and_then(upgrade)
    }

    /// Entries in the map, dead ones included (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().by_text.len()
    }
}

fn upgrade((config, assistant, derived): &Entry) -> Option<SharedConfig> {
    Some(SharedConfig {
        config: config.upgrade()?,
        assistant: assistant.upgrade()?,
        derived: derived.upgrade()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(prompt: &str) -> String {
        serde_json::json!({
            "assistant": {"id": "a1", "name": "A", "systemPrompt": prompt},
            "tools": {}
        })
        .to_string()
    }

    fn parse(text: &str) -> Result<(SessionConfig, Extensions), serde_json::Error> {
        Ok((serde_json::from_str(text)?, Extensions::default()))
    }

    #[test]
    fn same_text_shares_one_copy_and_other_text_does_not() {
        let cache = ConfigCache::default();
        let a = cache.get_or_parse(snapshot("one"), parse).unwrap();
        let b = cache.get_or_parse(snapshot("one"), parse).unwrap();
        let c = cache.get_or_parse(snapshot("two"), parse).unwrap();
        assert!(Arc::ptr_eq(&a.config, &b.config));
        assert!(Arc::ptr_eq(&a.assistant, &b.assistant));
        assert!(Arc::ptr_eq(&a.derived, &b.derived));
        assert!(!Arc::ptr_eq(&a.config, &c.config));
        assert_eq!(c.config.assistant.system_prompt, "two");
    }

    #[test]
    fn a_configuration_no_context_uses_is_parsed_again_and_dead_entries_are_pruned() {
        let cache = ConfigCache::default();
        let mut parsed = 0;
        for i in 0..200 {
            let shared = cache
                .get_or_parse(snapshot(&i.to_string()), |t| {
                    parsed += 1;
                    parse(t)
                })
                .unwrap();
            drop(shared);
        }
        assert_eq!(parsed, 200);
        assert!(cache.len() <= MIN_PRUNE_AT, "{} entries", cache.len());
        let kept = cache.get_or_parse(snapshot("kept"), parse).unwrap();
        let again = cache
            .get_or_parse(snapshot("kept"), |_| -> Result<_, serde_json::Error> {
                panic!("parsed again")
            })
            .unwrap();
        assert!(Arc::ptr_eq(&kept.config, &again.config));
    }

    #[test]
    fn a_parse_error_is_returned_and_not_cached() {
        let cache = ConfigCache::default();
        assert!(cache.get_or_parse("{".to_owned(), parse).is_err());
        assert_eq!(cache.len(), 0);
    }
}
