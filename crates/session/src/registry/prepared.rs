//! What a session offers its model, prepared once per configuration
//! snapshot (issue 41): the functions, their handlers, the request JSON
//! of the list and its token count are built on a snapshot's first turn
//! and shared by every session on it, so a turn's steps copy a pointer
//! instead of rebuilding the list.
//!
//! What a session offers is decided by three things, and the cache key
//! holds all three: the turn's assistant (the snapshot's, or a workflow
//! stage's), the snapshot's tools (both shared `Arc`s, compared by
//! address), and which of the features' built-ins the session is given
//! (asked of each built-in at every turn, so a session never gets another
//! one's list). An entry keeps weak references to the two `Arc`s: while
//! one lives, its address cannot be taken by another value, and a snapshot
//! that changes (a session reloaded with a new configuration) is a new
//! `Arc`, so the next step's list is built from it.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use rtc_protocol::Assistant;

use super::{Selection, SessionTools};
use crate::context::{SessionConfig, SessionCtx};
use crate::kernel::{Host, Kernel};
use crate::tool::Offer;

/// The prepared offerings of a kernel's sessions.
pub struct PreparedTools<H> {
    entries: Mutex<Entries<H>>,
}

impl<H> Default for PreparedTools<H> {
    fn default() -> Self {
        Self {
            entries: Mutex::new(Entries {
                by_key: HashMap::new(),
                prune_at: MIN_PRUNE_AT,
            }),
        }
    }
}

struct Entries<H> {
    by_key: HashMap<Key, Entry<H>>,
    /// Dead entries are dropped when the map reaches this size.
    prune_at: usize,
}

/// Below this many entries the map is not pruned.
const MIN_PRUNE_AT: usize = 64;

#[derive(PartialEq, Eq, Hash)]
struct Key {
    assistant: usize,
    config: usize,
    built_ins: Selection,
}

struct Entry<H> {
    assistant: Weak<Assistant>,
    config: Weak<SessionConfig>,
    tools: SessionTools<H>,
}

impl<H> Entry<H> {
    /// Whether the assistant and snapshot it was built from still live
    /// (then the key's addresses are still theirs).
    fn is_live(&self) -> bool {
        self.assistant.strong_count() > 0 && self.config.strong_count() > 0
    }
}

impl<H> PreparedTools<H> {
    /// The offering keyed by `assistant`, `config` and `built_ins`, built
    /// by `build` if there is none yet.
    fn get_or_build(
        &self,
        assistant: &Arc<Assistant>,
        config: &Arc<SessionConfig>,
        built_ins: Selection,
        build: impl FnOnce(&Selection) -> SessionTools<H>,
    ) -> SessionTools<H> {
        let key = Key {
            assistant: Arc::as_ptr(assistant) as usize,
            config: Arc::as_ptr(config) as usize,
            built_ins,
        };
        let known = |entries: &Entries<H>| {
            entries
                .by_key
                .get(&key)
                .filter(|e| e.is_live())
                .map(|e| e.tools.clone())
        };
        if let Some(tools) = known(&self.entries.lock()) {
            return tools;
        }
        // Built outside the lock; another turn may have built it meanwhile.
        let tools = build(&key.built_ins);
        let mut entries = self.entries.lock();
        if let Some(tools) = known(&entries) {
            return tools;
        }
        if entries.by_key.len() >= entries.prune_at {
            entries.by_key.retain(|_, e| e.is_live());
            entries.prune_at = (entries.by_key.len() * 2).max(MIN_PRUNE_AT);
        }
        let entry = Entry {
            assistant: Arc::downgrade(assistant),
            config: Arc::downgrade(config),
            tools: tools.clone(),
        };
        entries.by_key.insert(key, entry);
        tools
    }

    /// Entries in the map, dead ones included (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().by_key.len()
    }
}

impl<H: Host> Kernel<H> {
    /// What `ctx` offers its model in a turn of `assistant` (its own, or
    /// a workflow stage's): prepared once per configuration snapshot and
    /// selection of built-ins, shared by the sessions that have the same.
    pub fn session_tools(&self, ctx: &SessionCtx, assistant: &Arc<Assistant>) -> SessionTools<H> {
        let host = self.host();
        let offer = Offer {
            assistant,
            host: &*host,
            session: Some(ctx),
        };
        let built_ins = self.built_ins.selected(&offer);
        self.prepared_tools
            .get_or_build(assistant, &ctx.config, built_ins, |selected| {
                SessionTools::assemble(self, assistant, &ctx.config.tools, selected)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in host: the cache never calls it.
    struct NoHost;

    fn config(prompt: &str) -> Arc<SessionConfig> {
        let text = serde_json::json!({
            "assistant": {"id": "a1", "name": "A", "systemPrompt": prompt},
            "tools": {}
        });
        Arc::new(serde_json::from_value(text).unwrap())
    }

    fn offering(built: &std::cell::Cell<usize>) -> impl FnOnce(&Selection) -> SessionTools<NoHost> {
        move |_| {
            built.set(built.get() + 1);
            SessionTools::new(Vec::new())
        }
    }

    fn selection(bits: u64) -> Selection {
        Selection(vec![bits])
    }

    /// One offering per snapshot, assistant and selection; another of any
    /// of the three is built anew.
    #[test]
    fn shares_only_what_has_the_same_key() {
        let cache = PreparedTools::<NoHost>::default();
        let built = std::cell::Cell::new(0);
        let (one, two) = (config("one"), config("two"));
        let assistant = Arc::new(one.assistant.clone());
        let stage = Arc::new(one.assistant.clone());
        let a = cache.get_or_build(&assistant, &one, selection(1), offering(&built));
        let b = cache.get_or_build(&assistant, &one, selection(1), offering(&built));
        assert!(Arc::ptr_eq(&a.offering, &b.offering));
        assert_eq!(built.get(), 1);
        let _ = cache.get_or_build(&assistant, &one, selection(3), offering(&built));
        let _ = cache.get_or_build(&stage, &one, selection(1), offering(&built));
        let _ = cache.get_or_build(&assistant, &two, selection(1), offering(&built));
        assert_eq!(built.get(), 4);
    }

    /// An entry whose snapshot is gone is not used, and dead entries are
    /// pruned as the map grows.
    #[test]
    fn a_snapshot_no_one_holds_is_built_again_and_pruned() {
        let cache = PreparedTools::<NoHost>::default();
        let built = std::cell::Cell::new(0);
        for i in 0..200 {
            let c = config(&i.to_string());
            let assistant = Arc::new(c.assistant.clone());
            let _ = cache.get_or_build(&assistant, &c, selection(0), offering(&built));
        }
        assert_eq!(built.get(), 200);
        assert!(cache.len() <= MIN_PRUNE_AT, "{} entries", cache.len());
        let c = config("kept");
        let assistant = Arc::new(c.assistant.clone());
        let _ = cache.get_or_build(&assistant, &c, selection(0), offering(&built));
        drop(assistant);
        let assistant = Arc::new(c.assistant.clone());
        let _ = cache.get_or_build(&assistant, &c, selection(0), offering(&built));
        assert_eq!(built.get(), 202);
    }
}
