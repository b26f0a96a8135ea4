//! Voice sessions in the lifecycle (design `voice-pipeline.md` §4(b)): a
//! pipeline assistant with a `speech` block is a voice session; its turns
//! run as text turns whose step text the voice engine speaks. The engine
//! lives with its host socket; a session that ends, or a server that shuts
//! down, stops it. While the user speaks, the runtime starts no turn by
//! itself (`user_speech.rs`).

use std::sync::Arc;

use futures::future::BoxFuture;
use rtc_protocol::RunMode;

use crate::extensions::Extensions;
use crate::feature::Feature;
use crate::features::voice::Voices;
use crate::session::SessionCtx;
use crate::{Inner, RuntimeConfig};

pub(crate) struct Voice;

/// Whether `ctx` is a voice session: a pipeline assistant (not a
/// workflow) with a `speech` block.
pub(crate) fn voiced(ctx: &SessionCtx) -> bool {
    crate::features::workflow::snapshot::of(ctx).is_none()
        && ctx.config.assistant.run_mode == RunMode::Pipeline
        && ctx.config.assistant.speech.is_some()
}

impl Feature<Inner> for Voice {
    fn name(&self) -> &'static str {
        "voice"
    }

    fn services(&self, config: &RuntimeConfig, services: &mut Extensions) {
        services.insert(Voices::new(config.feature_limits.voice_max_sessions));
    }

    fn shutdown_begins(&self, rt: &Inner) {
        rt.service::<Voices>().stop_all();
    }

    /// The user speaks: the runtime's own turns wait (`user_speech.rs`).
    fn holds_turns(&self, ctx: &SessionCtx) -> bool {
        super::user_speech::user_speaking(ctx)
    }

    fn session_ending<'a>(&'a self, rt: &'a Arc<Inner>, ctx: &'a SessionCtx) -> BoxFuture<'a, ()> {
        rt.service::<Voices>().stop(&ctx.id);
        Box::pin(async {})
    }
}
