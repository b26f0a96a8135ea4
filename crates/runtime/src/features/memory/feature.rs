//! Memory: the model's tools to save, update, delete, list and search
//! what it keeps about a user across sessions.

use std::sync::Arc;

use crate::Inner;
use crate::feature::Feature;
use crate::tool::ToolHandler;

pub(crate) struct Memory;

impl Feature<Inner> for Memory {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn tools(&self) -> Vec<Arc<dyn ToolHandler<Inner>>> {
        vec![
            Arc::new(crate::features::memory::tools::save::SaveMemory),
            Arc::new(crate::features::memory::tools::update::UpdateMemory),
            Arc::new(crate::features::memory::tools::delete::DeleteMemory),
            Arc::new(crate::features::memory::tools::list::ListMemories),
            Arc::new(crate::features::memory::tools::search::SearchMemory),
        ]
    }
}
