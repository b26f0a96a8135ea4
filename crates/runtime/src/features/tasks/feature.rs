//! Delegated tasks in the lifecycle: the feature's services are the task
//! drivers running here and the backend drivers; a session that ends
//! cancels its running tasks (without a report); the keeper's periodic
//! round keeps leases and takes over the tasks of stopped instances; at
//! shutdown the drivers stop (tasks go on in the store, resumed by the
//! next start or another instance).

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::Inner;
use crate::RuntimeConfig;
use crate::extensions::Extensions;
use crate::feature::{Feature, Periodic};
use crate::features::tasks::TaskDrivers;
use crate::features::tasks::TaskService;
use crate::features::tasks::backends::TaskBackends;
use crate::session::SessionCtx;
use crate::tool::ToolHandler;

pub(crate) struct Tasks;

impl Feature<Inner> for Tasks {
    fn name(&self) -> &'static str {
        "tasks"
    }

    fn tools(&self) -> Vec<Arc<dyn ToolHandler<Inner>>> {
        vec![
            Arc::new(crate::features::tasks::tools::delegate::DelegateTask),
            Arc::new(crate::features::tasks::tools::status::GetTaskStatus),
            Arc::new(crate::features::tasks::tools::cancel::CancelTask),
        ]
    }

    fn services(&self, config: &RuntimeConfig, services: &mut Extensions) {
        services.insert(TaskDrivers::default());
        services.insert(TaskBackends::new(config));
    }

    fn shutdown<'a>(&'a self, rt: &'a Inner) -> BoxFuture<'a, ()> {
        rt.service::<TaskDrivers>().abort_all();
        Box::pin(rt.service::<TaskBackends>().shutdown())
    }

    fn periodic(&self, config: &RuntimeConfig) -> Vec<Periodic> {
        vec![Periodic {
            what: "keeping tasks",
            every: (config.kernel.cluster.lease / 3).max(std::time::Duration::from_millis(200)),
            work: |rt| Box::pin(async move { TaskService::of(&rt).keep_tasks().await }),
        }]
    }

    fn session_ending<'a>(&'a self, rt: &'a Arc<Inner>, ctx: &'a SessionCtx) -> BoxFuture<'a, ()> {
        Box::pin(TaskService::of(rt).cancel_session_tasks_logged(&ctx.id))
    }
}
