//! Realtime sessions in the lifecycle: the provider holds the
//! conversation, so the bridge says the first message once connected and
//! takes the user's messages; a session that ends stops its bridge.

use std::sync::Arc;

use futures::future::BoxFuture;
use rtc_protocol::{Message, RunMode};

use crate::extensions::Extensions;
use crate::feature::Feature;
use crate::features::realtime::Bridges;
use crate::features::realtime::RealtimeService;
use crate::session::SessionCtx;
use crate::{Inner, RuntimeConfig, RuntimeError};

pub(crate) struct Realtime;

/// Whether `ctx` runs a realtime assistant's bridge.
pub(super) fn bridged(ctx: &SessionCtx) -> bool {
    crate::features::workflow::snapshot::of(ctx).is_none()
        && ctx.config.assistant.run_mode == RunMode::Realtime
}

impl Feature<Inner> for Realtime {
    fn name(&self) -> &'static str {
        "realtime"
    }

    fn services(&self, config: &RuntimeConfig, services: &mut Extensions) {
        services.insert(Bridges::new(
            config.feature_limits.realtime_connects_per_minute,
        ));
    }

    fn shutdown_begins(&self, rt: &Inner) {
        // Bridges end with their sockets, which are closing.
        rt.service::<Bridges>().detach_all();
    }

    fn says_fixed_lines(&self, ctx: &SessionCtx) -> bool {
        bridged(ctx)
    }

    fn take_user_message<'a>(
        &'a self,
        rt: &'a Arc<Inner>,
        ctx: &'a Arc<SessionCtx>,
        text: &'a str,
    ) -> BoxFuture<'a, Option<Result<Message, RuntimeError>>> {
        Box::pin(async move {
            if !bridged(ctx) {
                return None;
            }
            Some(RealtimeService::of(rt).realtime_text(&ctx.id, text).await.unwrap_or_else(|| {
                Err(RuntimeError::Conflict {
                    code: "realtime_not_connected",
                    message: "a realtime session takes messages while its WebSocket is connected: open `/v1/sessions/{id}/ws` first".into(),
                })
            }))
        })
    }

    fn session_ending<'a>(&'a self, rt: &'a Arc<Inner>, ctx: &'a SessionCtx) -> BoxFuture<'a, ()> {
        rt.service::<Bridges>().detach(&ctx.id);
        Box::pin(async {})
    }
}
