//! Loops: the model's tools to schedule, list, pause, resume, complete
//! and cancel recurring turns, and their periodic work: expiring loops
//! and running their due ticks.

use std::sync::Arc;

use crate::Inner;
use crate::RuntimeConfig;
use crate::extensions::Extensions;
use crate::feature::{Feature, Periodic};
use crate::features::loops::LoopService;
use crate::features::loops::tick_finisher::TickFinisher;
use crate::tool::ToolHandler;

pub(crate) struct Loops;

impl Feature<Inner> for Loops {
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
                every: crate::features::loops::service::EXPIRY_SWEEP,
                work: |rt| Box::pin(async move { LoopService::of(&rt).expire_loops().await }),
            },
            Periodic {
                what: "claiming loop ticks",
                every: config.loops.poll,
                work: |rt| Box::pin(async move { LoopService::of(&rt).claim_ticks().await }),
            },
        ]
    }

    fn tools(&self) -> Vec<Arc<dyn ToolHandler<Inner>>> {
        vec![
            Arc::new(crate::features::loops::tools::create::CreateLoop),
            Arc::new(crate::features::loops::tools::cancel::CancelLoop),
            Arc::new(crate::features::loops::tools::complete::CompleteLoop),
            Arc::new(crate::features::loops::tools::list::ListLoops),
            Arc::new(crate::features::loops::tools::pause::PauseLoop),
            Arc::new(crate::features::loops::tools::resume::ResumeLoop),
        ]
    }
}
