//! An OpenCode `baseUrl` is a server a tenant names: one that announces a
//! huge body, sends a body without end, never ends an event line or stays
//! silent must cost the platform a bounded amount of memory and time
//! (R-SEC-7), never what the server asks for.

use std::time::{Duration, Instant};

use rtc_protocol::OpencodeModel;
use rtc_testkit::{Hostile, hostile_http};
use rtc_tools::net_guard::AddressPolicy;
use rtc_tools::opencode::{EventHub, HubEvent, OpencodeClient};
use rtc_tools::upstream::UpstreamLimits;

fn client(url: &str, limits: UpstreamLimits) -> OpencodeClient {
    OpencodeClient::new(url, None, None, AddressPolicy::AllowPrivate)
        .unwrap()
        .with_limits(limits)
}

fn model() -> OpencodeModel {
    OpencodeModel {
        provider_id: "p".into(),
        model_id: "m".into(),
    }
}

#[tokio::test]
async fn an_announced_huge_body_is_refused_before_it_is_read() {
    let url = hostile_http(Hostile::HugeLength).await.unwrap();
    let started = Instant::now();
    let err = client(&url, UpstreamLimits::default())
        .create_session("t", &model())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("larger than"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_body_without_end_is_cut_at_the_bound() {
    let url = hostile_http(Hostile::EndlessBody).await.unwrap();
    let limits = UpstreamLimits {
        max_body_bytes: 256 * 1024,
        ..UpstreamLimits::default()
    };
    let err = client(&url, limits).status().await.unwrap_err();
    assert!(
        err.to_string().contains("larger than 262144 bytes"),
        "{err}"
    );
}

/// The first disconnection the hub reports.
async fn first_disconnect(url: &str, limits: UpstreamLimits) -> String {
    let hub = EventHub::new(client(url, limits));
    let mut events = hub.subscribe();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .expect("the hub reports within 20 s")
            .expect("the hub is open");
        if let HubEvent::Disconnected(reason) = event {
            return reason;
        }
    }
}

#[tokio::test]
async fn an_event_line_without_end_breaks_the_stream() {
    let url = hostile_http(Hostile::EndlessLine).await.unwrap();
    let limits = UpstreamLimits {
        max_line_bytes: 256 * 1024,
        ..UpstreamLimits::default()
    };
    let reason = first_disconnect(&url, limits).await;
    assert!(reason.contains("longer than 262144 bytes"), "{reason}");
}

#[tokio::test]
async fn a_silent_event_stream_is_dropped_after_the_idle_timeout() {
    let url = hostile_http(Hostile::Silent).await.unwrap();
    let limits = UpstreamLimits {
        idle_timeout: Duration::from_millis(500),
        ..UpstreamLimits::default()
    };
    let started = Instant::now();
    let reason = first_disconnect(&url, limits).await;
    assert!(reason.contains("silent"), "{reason}");
    assert!(started.elapsed() < Duration::from_secs(10));
}
