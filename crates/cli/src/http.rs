//! The HTTP/1.1 server loop: axum's router on hyper connections with a
//! header-read timeout (a client that sends a request's headers too slowly
//! is disconnected, so idle half-open connections cannot pile up), and
//! graceful shutdown: once `signal` completes no connection is accepted,
//! each open one finishes its request in flight and closes, and `serve`
//! returns when all are gone. WebSocket upgrades are served.
//!
//! hyper starts the header-read timer whenever a connection waits for a
//! request, so the same timeout also closes an idle keep-alive connection.
//! Every response says so (`Keep-Alive: timeout=N`), and a client that
//! reuses a connection must let it go sooner: a request sent just as the
//! server closes fails with "connection closed before message completed".
//! [`api_client`], the CLI's own, keeps no idle connection at all.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use axum::http::{HeaderName, HeaderValue};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower_http::set_header::SetResponseHeaderLayer;

/// An HTTP client for talking to a server: it keeps no idle connection
/// (see the module doc), whatever the server's timeout; the CLI's
/// commands send a request now and then, not a stream of them.
pub fn api_client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap_or_default()
}

/// `timeout=N`: the whole seconds an idle connection stays open.
fn keep_alive_value(idle: Duration) -> HeaderValue {
    HeaderValue::from_str(&format!("timeout={}", idle.as_secs()))
        .unwrap_or(HeaderValue::from_static("timeout=1"))
}

/// Serve `router` on `listener` until `signal`, then drain.
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    header_read_timeout: Duration,
    signal: impl Future<Output = ()> + Send + 'static,
) {
    // Dropping `stop_rx` tells every connection to shut down gracefully;
    // every connection holds a `done_rx` until it has closed.
    let (stop_tx, stop_rx) = watch::channel(());
    tokio::spawn(async move {
        signal.await;
        drop(stop_rx);
    });
    let (done_tx, done_rx) = watch::channel(());
    let router = router.layer(SetResponseHeaderLayer::if_not_present(
        HeaderName::from_static("keep-alive"),
        keep_alive_value(header_read_timeout),
    ));
    loop {
        let (stream, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors and the like: wait, go on.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stop_tx.closed() => break,
        };
        // Small responses (an SSE event, a 202) go out at once rather
        // than waiting for the peer's delayed ACK (Nagle).
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "setting TCP_NODELAY failed");
        }
        let service = TowerToHyperService::new(router.clone());
        let stop = stop_tx.clone();
        let done = done_rx.clone();
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_read_timeout);
            let mut conn = pin!(
                builder
                    .serve_connection(TokioIo::new(stream), service)
                    .with_upgrades()
            );
            let mut stopping = pin!(stop.closed());
            let mut draining = false;
            loop {
                tokio::select! {
                    result = conn.as_mut() => {
                        if let Err(e) = result {
                            tracing::debug!(error = %e, "connection ended with an error");
                        }
                        break;
                    }
                    () = &mut stopping, if !draining => {
                        draining = true;
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
            drop(done);
        });
    }
    drop(listener);
    drop(done_rx);
    done_tx.closed().await;
}
