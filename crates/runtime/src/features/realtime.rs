//! Realtime sessions in the lifecycle: a session that ends stops its
//! bridge to the provider.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::Inner;
use crate::feature::Feature;
use crate::session::SessionCtx;

pub(crate) struct Realtime;

impl Feature for Realtime {
    fn name(&self) -> &'static str {
        "realtime"
    }

    fn session_ending<'a>(&'a self, rt: &'a Arc<Inner>, ctx: &'a SessionCtx) -> BoxFuture<'a, ()> {
        rt.realtime.detach(&ctx.id);
        Box::pin(async {})
    }
}
