//! What other instances ask of this one (on PostgreSQL, R-ST-2): cancel a
//! turn a request elsewhere replaces, deliver inbox items posted
//! elsewhere, take a client's reply that arrived elsewhere, fail calls
//! waiting on a connection that closed elsewhere. See
//! `rtc_store::ControlOp`; the listener reconnects when its connection
//! fails.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;
use rtc_store::ControlOp;

use crate::Inner;

pub(crate) fn spawn_control_listener(inner: &Arc<Inner>) {
    if !inner.store.allows_several_instances() {
        return;
    }
    let weak: Weak<Inner> = Arc::downgrade(inner);
    let store = inner.store.clone();
    let me = inner.config.cluster.instance.clone();
    tokio::spawn(async move {
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
                        match control.op {
                            ControlOp::Cancel => {
                                tokio::spawn(
                                    async move { inner.cancel_for_other(&argument).await },
                                );
                            }
                            ControlOp::Kick => {
                                tokio::spawn(async move {
                                    let kicked = async {
                                        let ctx = inner.session(&argument).await?;
                                        inner.refresh_if_stale(&ctx).await?;
                                        inner.kick(&ctx).await
                                    };
                                    if let Err(e) = kicked.await {
                                        tracing::warn!(session = %argument, error = %e, "delivering inbox items another instance posted failed");
                                    }
                                });
                            }
                            ControlOp::ClientReply => {
                                tokio::spawn(
                                    async move { inner.client_reply_arrived(&argument).await },
                                );
                            }
                            ControlOp::ClientGone => inner.client_gone(&argument),
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
