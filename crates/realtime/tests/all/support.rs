//! Shared helpers: a mock and a connected adapter, session specs, test
//! audio, and waiting for events.

use std::time::Duration;

use rtc_realtime::{
    Dialect, ProviderCfg, RealtimeAdapter, RtEvent, SessionSpec, ToolChoice, ToolDecl, Vad,
};
use rtc_testkit::{RealtimeFlavor, RealtimeMock};
use rtc_tools::net_guard::AddressPolicy;
use serde_json::{Value, json};
use tokio::sync::mpsc::Receiver;

pub const KEY: &str = "sk-test-realtime";
pub const WAIT: Duration = Duration::from_secs(10);

pub fn flavor(dialect: Dialect) -> RealtimeFlavor {
    match dialect {
        Dialect::Openai => RealtimeFlavor::OpenaiGa,
        Dialect::Qwen => RealtimeFlavor::Qwen,
        Dialect::Stepfun => RealtimeFlavor::Stepfun,
    }
}

pub fn cfg(dialect: Dialect, mock: &RealtimeMock) -> ProviderCfg {
    let (input_rate, output_rate) = dialect.default_rates();
    ProviderCfg {
        dialect,
        url: mock.url(),
        model: format!("{}-model", dialect.as_str()),
        api_key: KEY.into(),
        input_rate,
        output_rate,
        policy: AddressPolicy::AllowPrivate,
        timeout: Duration::from_secs(5),
        max_message_bytes: 1024 * 1024,
    }
}

pub fn lookup_tool() -> ToolDecl {
    ToolDecl {
        name: "lookup_order".into(),
        description: "Find an order by id".into(),
        parameters: json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}),
    }
}

pub fn spec(vad: Vad) -> SessionSpec {
    SessionSpec {
        instructions: "You are a helpful agent.".into(),
        voice: None,
        tools: vec![lookup_tool()],
        tool_choice: ToolChoice::Auto,
        vad,
        transcribe_input: true,
        transcription_model: None,
    }
}

pub fn server_vad() -> Vad {
    Vad::Server {
        threshold: Some(0.5),
        prefix_padding_ms: Some(300),
        silence_duration_ms: Some(300),
    }
}

pub struct Session {
    pub mock: RealtimeMock,
    pub adapter: Box<dyn RealtimeAdapter>,
    pub events: Receiver<RtEvent>,
}

/// A mock of the dialect, connected and configured with `vad`.
pub async fn session(dialect: Dialect, script: Value, vad: Vad) -> Session {
    let mock = RealtimeMock::start(flavor(dialect), KEY, script)
        .await
        .unwrap();
    let (mut adapter, mut events) = rtc_realtime::connect(&cfg(dialect, &mock)).await.unwrap();
    adapter.update_session(&spec(vad)).await.unwrap();
    let ready = next(&mut events, |e| matches!(e, RtEvent::Ready { .. })).await;
    assert!(matches!(ready, RtEvent::Ready { .. }));
    Session {
        mock,
        adapter,
        events,
    }
}

/// Events up to and including the first that matches.
pub async fn until(
    events: &mut Receiver<RtEvent>,
    pred: impl Fn(&RtEvent) -> bool,
) -> Vec<RtEvent> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(WAIT, events.recv())
            .await
            .unwrap_or_else(|_| panic!("no matching event within {WAIT:?}; saw {seen:?}"))
            .unwrap_or_else(|| panic!("the event channel closed; saw {seen:?}"));
        let done = pred(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

/// The first event that matches.
pub async fn next(events: &mut Receiver<RtEvent>, pred: impl Fn(&RtEvent) -> bool) -> RtEvent {
    until(events, pred).await.pop().unwrap()
}

/// `ms` of a 300 Hz tone (speech) at `rate`, PCM16 LE.
pub fn speech(rate: u32, ms: u32) -> Vec<u8> {
    let samples = rate * ms / 1000;
    (0..samples)
        .flat_map(|n| {
            let t = f64::from(n) / f64::from(rate);
            (((2.0 * std::f64::consts::PI * 300.0 * t).sin() * 6000.0) as i16).to_le_bytes()
        })
        .collect()
}

pub fn silence(rate: u32, ms: u32) -> Vec<u8> {
    vec![0; (rate * ms / 1000 * 2) as usize]
}

/// Send `pcm` in 20 ms chunks.
pub async fn send_audio(adapter: &mut Box<dyn RealtimeAdapter>, pcm: &[u8]) {
    let chunk = (adapter.caps().input.rate / 50 * 2) as usize;
    for piece in pcm.chunks(chunk) {
        adapter.send_audio(piece).await.unwrap();
    }
}

/// One spoken user turn: speech then enough silence to end it.
pub async fn speak(adapter: &mut Box<dyn RealtimeAdapter>, ms: u32) {
    let rate = adapter.caps().input.rate;
    send_audio(adapter, &speech(rate, ms)).await;
    send_audio(adapter, &silence(rate, 400)).await;
}

/// Bytes of audio per millisecond at `rate`.
pub fn bytes_per_ms(rate: u32) -> usize {
    (rate / 1000 * 2) as usize
}
