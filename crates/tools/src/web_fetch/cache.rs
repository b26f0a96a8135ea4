//! The webFetch cache (R-WFF-3): answers kept for a while (30 minutes by
//! default), keyed by workspace and URL, so one tenant never sees another's
//! pages or learns from a cache hit what another fetched. Bounded in bytes
//! across all workspaces (moka weighs each entry by the text it holds);
//! an answer larger than the whole budget is not kept.

use std::time::Duration;

use super::Fetched;

/// Fixed cost counted per entry on top of its text.
const ENTRY_OVERHEAD: usize = 128;

pub(crate) struct PageCache {
    entries: moka::sync::Cache<(String, String), Fetched>,
    max_bytes: u64,
}

impl PageCache {
    pub fn new(ttl: Duration, max_bytes: u64) -> Self {
        let entries = moka::sync::Cache::builder()
            .max_capacity(max_bytes)
            .weigher(|(workspace, url): &(String, String), value: &Fetched| {
                u32::try_from(weight(workspace, url, value)).unwrap_or(u32::MAX)
            })
            .time_to_live(ttl)
            .build();
        Self { entries, max_bytes }
    }

    /// The answer stored for `url` in `workspace`, if it has not expired.
    pub fn get(&self, workspace: &str, url: &str) -> Option<Fetched> {
        self.entries.get(&(workspace.to_owned(), url.to_owned()))
    }

    pub fn insert(&self, workspace: &str, url: &str, value: Fetched) {
        if weight(workspace, url, &value) as u64 > self.max_bytes {
            return;
        }
        self.entries
            .insert((workspace.to_owned(), url.to_owned()), value);
        // Evict now, so the budget holds at every moment rather than at
        // the cache's next housekeeping.
        self.entries.run_pending_tasks();
    }

    /// Bytes held (after pending evictions).
    #[cfg(test)]
    pub fn weighted_size(&self) -> u64 {
        self.entries.run_pending_tasks();
        self.entries.weighted_size()
    }
}

/// What an entry costs: its key and every text it holds.
fn weight(workspace: &str, url: &str, value: &Fetched) -> usize {
    let held = match value {
        Fetched::Page(p) => {
            p.url.len()
                + p.content_type.len()
                + p.title.as_ref().map_or(0, String::len)
                + p.content.len()
        }
        Fetched::Redirect { from, to, .. } => from.len() + to.len(),
    };
    ENTRY_OVERHEAD + workspace.len() + url.len() + held
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
