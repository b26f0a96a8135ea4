//! What other instances ask of this one (on PostgreSQL, R-ST-2): cancel a
//! turn a request elsewhere replaces, deliver inbox items posted
//! elsewhere, take a client's reply that arrived elsewhere, fail calls
//! waiting on a connection that closed elsewhere, run the turn of a
//! message posted elsewhere for a session whose host is here. See
//! `rtc_store::ControlOp`; the listener reconnects when its connection
//! fails.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;
use rtc_store::ControlOp;

use crate::kernel::Host;

pub(crate) fn spawn_control_listener<H: Host>(inner: &Arc<H>) {
    if !inner.store.allows_several_instances() {
        return;
    }
    let weak: Weak<H> = Arc::downgrade(inner);
    let store = inner.store.clone();
    let me = inner.settings.cluster.instance.clone();
    inner.background.spawn(async move {
        loop {
            match store.controls().await {
                Ok(None) => return,
                Ok(Some(stream)) => {
                    let mut stream = std::pin::pin!(stream);
                    while let Some(control) = stream.next().await {
                        if control.to != me && control.to != "*" {
                            continue;
                        }
                        let Some(inner) = weak.upgrade() else { return };
                        let argument = control.argument;
                        let rt = Arc::clone(&inner);
                        match control.op {
                            ControlOp::Cancel => inner.background.spawn(async move {
                                rt.cluster().cancel_for_other(&argument).await;
                            }),
                            ControlOp::Kick => inner.background.spawn(async move {
                                let poked = async {
                                    let ctx = rt.session(&argument).await?;
                                    rt.refresh_if_stale(&ctx).await?;
                                    for feature in &rt.features {
                                        feature.poked(&rt, &ctx).await?;
                                    }
                                    Ok::<_, crate::RuntimeError>(())
                                };
                                if let Err(e) = poked.await {
                                    tracing::warn!(session = %argument, error = %e, "looking at a session another instance posted to failed");
                                }
                            }),
                            ControlOp::ClientReply => inner.background.spawn(async move {
                                rt.remote_clients.reply_arrived(&argument).await;
                            }),
                            ControlOp::ClientGone => inner.remote_clients.gone(&argument),
                            ControlOp::StartTurn => inner.background.spawn(async move {
                                if let Err(e) = rt.cluster().start_handed_turn(&argument).await {
                                    tracing::warn!(session = %argument, error = %e, "running a turn another instance handed over failed");
                                }
                            }),
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "listening for other instances' requests failed")
                }
            }
            if weak.strong_count() == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
}
