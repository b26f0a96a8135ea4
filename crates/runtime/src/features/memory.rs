//! Memory: the model's tools to save, update, delete, list and search
//! what it keeps about a user across sessions.

use std::sync::Arc;

use crate::builtins;
use crate::feature::Feature;
use crate::tool::ToolHandler;

pub(crate) struct Memory;

impl Feature for Memory {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn tools(&self) -> Vec<Arc<dyn ToolHandler>> {
        vec![
            Arc::new(builtins::memory::save::SaveMemory),
            Arc::new(builtins::memory::update::UpdateMemory),
            Arc::new(builtins::memory::delete::DeleteMemory),
            Arc::new(builtins::memory::list::ListMemories),
            Arc::new(builtins::memory::search::SearchMemory),
        ]
    }
}
