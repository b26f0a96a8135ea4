//! The campaign's traffic: user messages posted while the server may die,
//! the event replay over SSE, and polling for what should happen.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{PATIENCE, Posted};
use crate::conversation::read_events;
use crate::harness::Api;

/// Post the planned user messages until `stop`; what became of each.
pub(super) async fn post_messages(
    api: Api,
    key: String,
    plan: Vec<(u64, usize, String)>,
    trial: usize,
    stop: Arc<AtomicBool>,
) -> Vec<(usize, String, Posted)> {
    let mut out = Vec::new();
    for (n, (pause, idx, sid)) in plan.into_iter().enumerate() {
        tokio::time::sleep(Duration::from_millis(pause)).await;
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let text = format!("t{trial}-m{n}");
        let sent = api
            .client
            .post(format!("{}/v1/sessions/{sid}/messages", api.base))
            .bearer_auth(&key)
            .json(&json!({"text": text}))
            .send()
            .await;
        let outcome = match sent {
            Ok(r) if r.status().is_success() => Posted::Acked,
            Ok(r) => Posted::Refused(format!(
                "{} {}",
                r.status(),
                r.text().await.unwrap_or_default()
            )),
            Err(_) => Posted::Unacked,
        };
        out.push((idx, text, outcome));
    }
    out
}

/// The session's events over SSE, from the first up to `upto`.
pub(super) async fn replay(api: &Api, session: &str, upto: i64) -> anyhow::Result<Vec<Value>> {
    if upto == 0 {
        return Ok(Vec::new());
    }
    let request = api
        .client
        .get(format!("{}/v1/sessions/{session}/events?after=0", api.base))
        .bearer_auth(api.token.as_deref().unwrap_or_default());
    read_events(request, PATIENCE, |ev| {
        ev["seq"].as_i64().unwrap_or(0) >= upto
    })
    .await
    .map_err(|e| e.context(format!("the event stream of {session} up to seq {upto}")))
}

/// Ask `f` until it gives something, for at most [`PATIENCE`].
pub(super) async fn poll<T, F, Fut>(what: &str, f: F) -> anyhow::Result<T>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(v) = f().await? {
            return Ok(v);
        }
        anyhow::ensure!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
