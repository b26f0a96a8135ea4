//! The floor under a run: what a bare HTTP client needs for the same model
//! calls and tool calls against the same mock model and tool servers. The
//! client replays the request bodies the mock received from rtc-agent for
//! the configuration under test (its function list included), so what the
//! mock spends reading them is in the floor too.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Host;
use super::measure::median;

/// A message ending so has the mock keep the run's requests.
pub const CAPTURE: &str = " capture";

/// The requests of the capturing run, as the mock read them.
static CAPTURED: Mutex<Vec<Value>> = Mutex::new(Vec::new());

/// Keep a request of the capturing run (called by the mock).
pub fn record(req: &Value) {
    CAPTURED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(req.clone());
}

fn take() -> Vec<Value> {
    std::mem::take(
        &mut *CAPTURED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
}

/// A captured request as bytes to replay, without the capture mark (so
/// replaying it is not captured again). Leaked: a handful per run.
fn replayable(mut req: Value) -> anyhow::Result<&'static [u8]> {
    if let Some(msgs) = req["messages"].as_array_mut() {
        for m in msgs.iter_mut().filter(|m| m["role"] == "user") {
            if let Some(text) = m["content"].as_str().and_then(|t| t.strip_suffix(CAPTURE)) {
                m["content"] = Value::from(text.to_owned());
            }
        }
    }
    Ok(Vec::leak(serde_json::to_vec(&req)?))
}

/// The model requests rtc-agent sends for one configuration.
#[derive(Clone, Copy)]
pub struct Floor {
    /// The K + 1 requests of a K = 5 run.
    run: &'static [&'static [u8]],
    /// A K = 20 run's request after 10 tool results.
    mid: &'static [u8],
    /// Functions offered per request.
    pub functions: usize,
}

impl Floor {
    /// Capture the requests of one K = 5 and one K = 20 run.
    pub async fn capture(host: &Host) -> anyhow::Result<Self> {
        take();
        host.turn(&format!("K=5{CAPTURE}")).await?;
        let run = take();
        host.turn(&format!("K=20{CAPTURE}")).await?;
        let mut long = take();
        anyhow::ensure!(
            run.len() == 6 && long.len() == 21,
            "captured {} and {} model requests, not 6 and 21",
            run.len(),
            long.len()
        );
        let mid = long.swap_remove(10);
        let functions = mid["tools"].as_array().map_or(0, Vec::len);
        let run = run
            .into_iter()
            .map(replayable)
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Self {
            run: Vec::leak(run),
            mid: replayable(mid)?,
            functions,
        })
    }

    /// The size of a mid-run request, in KB.
    pub fn request_kb(&self) -> f64 {
        self.mid.len() as f64 / 1e3
    }

    /// The median time of one model call (a K = 20 run's request after
    /// 10 tool results) and one tool call, one at a time.
    pub async fn round_trip(&self, host: &Host, runs: usize) -> anyhow::Result<Duration> {
        for _ in 0..5 {
            model_call(host, self.mid).await?;
        }
        let mut times = Vec::with_capacity(runs.max(20));
        for _ in 0..runs.max(20) {
            let started = Instant::now();
            model_call(host, self.mid).await?;
            tool_call(host).await?;
            times.push(started.elapsed());
        }
        Ok(median(&mut times))
    }

    /// Bare runs per second at K = 5 (the 6 model calls and 5 tool calls
    /// of a run), with 100 clients for `seconds`.
    pub async fn runs_per_s(&self, host: &Host, seconds: usize) -> anyhow::Result<f64> {
        let done = std::sync::Arc::new(AtomicUsize::new(0));
        let deadline = Instant::now() + Duration::from_secs(seconds as u64);
        let started = Instant::now();
        let clients: Vec<_> = (0..100)
            .map(|_| {
                let (host, done, run) = (host.clone(), done.clone(), self.run);
                tokio::spawn(async move {
                    while Instant::now() < deadline {
                        for (i, body) in run.iter().enumerate() {
                            model_call(&host, body).await?;
                            if i + 1 < run.len() {
                                tool_call(&host).await?;
                            }
                        }
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                    anyhow::Ok(())
                })
            })
            .collect();
        for c in clients {
            c.await??;
        }
        Ok(done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64())
    }
}

async fn model_call(host: &Host, body: &'static [u8]) -> anyhow::Result<()> {
    let answer = host
        .http
        .post(format!("{}/chat/completions", host.model))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await?
        .bytes()
        .await?;
    anyhow::ensure!(!answer.is_empty(), "the mock model answered nothing");
    Ok(())
}

async fn tool_call(host: &Host) -> anyhow::Result<()> {
    let tool = host
        .http
        .get(format!("{}/orders/o1", host.tools))
        .send()
        .await?
        .bytes()
        .await?;
    anyhow::ensure!(!tool.is_empty(), "the tool answered nothing");
    Ok(())
}
