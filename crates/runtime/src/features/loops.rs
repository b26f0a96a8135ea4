//! Loops: the model's tools to schedule, list, pause, resume, complete
//! and cancel recurring turns, and their periodic work: expiring loops
//! and running their due ticks.

use std::sync::Arc;

use crate::RuntimeConfig;
use crate::builtins;
use crate::extensions::Extensions;
use crate::feature::{Feature, Periodic};
use crate::tick_finisher::TickFinisher;
use crate::tool::ToolHandler;

pub(crate) struct Loops;

impl Feature for Loops {
    fn name(&self) -> &'static str {
        "loops"
    }

    fn services(&self, _config: &RuntimeConfig, services: &mut Extensions) {
        // Finished ticks, committed in groups.
        services.insert(TickFinisher::default());
    }

    fn periodic(&self, config: &RuntimeConfig) -> Vec<Periodic> {
        vec![
            Periodic {
                what: "expiring loops",
                every: crate::loops::EXPIRY_SWEEP,
                work: |rt| Box::pin(async move { rt.expire_loops().await }),
            },
            Periodic {
                what: "claiming loop ticks",
                every: config.loops.poll,
                work: |rt| Box::pin(rt.claim_ticks()),
            },
        ]
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
