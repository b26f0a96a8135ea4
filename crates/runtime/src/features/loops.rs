//! Loops: the model's tools to schedule, list, pause, resume, complete
//! and cancel recurring turns (the scheduler runs their ticks).

use std::sync::Arc;

use crate::builtins;
use crate::feature::Feature;
use crate::tool::ToolHandler;

pub(crate) struct Loops;

impl Feature for Loops {
    fn name(&self) -> &'static str {
        "loops"
    }

    fn tools(&self) -> Vec<Arc<dyn ToolHandler>> {
        vec![
            Arc::new(builtins::loops::create::CreateLoop),
            Arc::new(builtins::loops::cancel::CancelLoop),
            Arc::new(builtins::loops::complete::CompleteLoop),
            Arc::new(builtins::loops::list::ListLoops),
            Arc::new(builtins::loops::pause::PauseLoop),
            Arc::new(builtins::loops::resume::ResumeLoop),
        ]
    }
}
