//! What the crashing server talks to: a model that answers every user
//! message through the HTTP tool (and checks each request it gets), the
//! HTTP tool's service (which knows how many calls are in flight), and a
//! small seeded random number generator.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rtc_testkit::MockReply;
use serde_json::{Value, json};

/// The first message of a loop session.
pub const START_LOOP: &str = "start the loop";
/// What every tick of the loop asks.
pub const TICK_PROMPT: &str = "tick";
/// The HTTP tool's name.
pub const TOOL: &str = "lookup";

/// splitmix64: small, seedable, good enough to place kills.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// Uniform in `lo..hi` (`hi > lo`).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The answer the model gives to a user message `text` (after its tool calls).
pub fn answer_to(text: &str) -> String {
    format!("answer: {text}")
}

/// The model: a user message gets one or two `lookup` calls, then an
/// answer naming the message; [`START_LOOP`] creates the loop. Every
/// request is checked for a history the provider would refuse (a tool
/// call without its result, a result without its call); what is wrong is
/// pushed to `violations`.
pub fn model(
    violations: Arc<Mutex<Vec<String>>>,
) -> impl Fn(&Value) -> MockReply + Send + Sync + 'static {
    let counter = AtomicU64::new(0);
    move |req| {
        let n = counter.fetch_add(1, Ordering::Relaxed);
        let messages = req["messages"].as_array().cloned().unwrap_or_default();
        if let Some(v) = pairing_violation(&messages)
            && let Ok(mut all) = violations.lock()
        {
            all.push(v);
        }
        let delay = Duration::from_millis(10 + mix(n) % 60);
        let last_user = messages.iter().rposition(|m| m["role"] == "user");
        let text = last_user
            .and_then(|i| messages[i]["content"].as_str())
            .unwrap_or("")
            .to_owned();
        let answered =
            last_user.is_some_and(|i| messages[i + 1..].iter().any(|m| m["role"] == "tool"));
        let reply = if answered {
            if text == START_LOOP {
                MockReply::text("loop started")
            } else {
                MockReply::text(&answer_to(&text))
            }
        } else if text == START_LOOP {
            MockReply::call(
                "createLoop",
                json!({"prompt": TICK_PROMPT, "interval_seconds": 1, "max_turns": 1000}),
            )
        } else {
            let q: String = text
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .take(40)
                .collect();
            let calls = if mix(n ^ 0xA5A5).is_multiple_of(3) {
                2
            } else {
                1
            };
            MockReply::ToolCalls(
                (0..calls)
                    .map(|i| (TOOL.to_owned(), json!({"q": format!("{q}-{i}")})))
                    .collect(),
            )
        };
        // A tick's first model call takes a while, so kills land in ticks.
        let delay = if text.starts_with("[Loop") && !answered {
            delay + Duration::from_millis(150 + mix(n ^ 0x1007) % 250)
        } else {
            delay
        };
        MockReply::Delayed(delay, Box::new(reply))
    }
}

/// Why the provider would refuse this history, if it would.
fn pairing_violation(messages: &[Value]) -> Option<String> {
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        if m["role"] == "tool" {
            return Some(format!(
                "a tool result without its call at message {i}: {m}"
            ));
        }
        let calls = m["tool_calls"].as_array().filter(|c| !c.is_empty());
        let Some(calls) = calls.filter(|_| m["role"] == "assistant") else {
            i += 1;
            continue;
        };
        let mut open: BTreeSet<&str> = calls.iter().filter_map(|c| c["id"].as_str()).collect();
        let mut j = i + 1;
        while j < messages.len() && messages[j]["role"] == "tool" {
            let id = messages[j]["tool_call_id"].as_str().unwrap_or("");
            if !open.remove(id) {
                return Some(format!(
                    "an unexpected tool result at message {j}: {}",
                    messages[j]
                ));
            }
            j += 1;
        }
        if !open.is_empty() {
            return Some(format!(
                "tool calls {open:?} of message {i} have no result before the next message"
            ));
        }
        i = j;
    }
    None
}

/// The HTTP tool's service: `GET /lookup/{q}` answers after 50–400 ms.
pub struct ToolService {
    pub base: String,
    in_flight: Arc<AtomicUsize>,
    calls: Arc<AtomicU64>,
}

/// Counts a call as in flight while it lives.
struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ToolService {
    pub async fn start() -> anyhow::Result<Self> {
        use axum::extract::Path;
        let in_flight = Arc::new(AtomicUsize::new(0));
        let calls = Arc::new(AtomicU64::new(0));
        let (flying, counted) = (in_flight.clone(), calls.clone());
        let app = axum::Router::new().route(
            "/lookup/{q}",
            axum::routing::get(move |Path(q): Path<String>| {
                let (flying, counted) = (flying.clone(), counted.clone());
                async move {
                    flying.fetch_add(1, Ordering::SeqCst);
                    let _guard = InFlight(flying);
                    let n = counted.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(50 + mix(n ^ 0x5EED) % 350)).await;
                    axum::Json(json!({"q": q, "found": true}))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Self {
            base: format!("http://{addr}"),
            in_flight,
            calls,
        })
    }

    /// Calls being answered right now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Calls received so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }
}

#[test]
fn the_pairing_check_finds_calls_without_results() {
    let call = json!({"role": "assistant", "tool_calls": [{"id": "a"}, {"id": "b"}]});
    let result = |id: &str| json!({"role": "tool", "tool_call_id": id});
    let user = json!({"role": "user", "content": "hi"});
    assert_eq!(
        pairing_violation(&[
            user.clone(),
            call.clone(),
            result("b"),
            result("a"),
            user.clone()
        ]),
        None
    );
    assert!(pairing_violation(&[call.clone(), result("a"), user.clone()]).is_some());
    assert!(pairing_violation(&[user.clone(), result("a")]).is_some());
    assert!(pairing_violation(&[call, result("a"), result("c")]).is_some());
}
