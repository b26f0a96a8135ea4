//! Turns: speech → transcripts → audio → done in every dialect, manual
//! commits, barge-in, truncation, the one-active-response rule and a
//! provider dropping the socket mid-response.

use rtc_realtime::{Dialect, RespStatus, ResponseOpts, RtEvent, Vad};
use serde_json::json;

use crate::support::{bytes_per_ms, next, server_vad, session, speak, until};

fn greeting_script() -> serde_json::Value {
    json!({
        "userTranscripts": ["hello there"],
        "responses": [{"steps": [{"transcript": {"text": "Hi, how can I help?"}}, {"audio": {"ms": 250}}]}]
    })
}

async fn audio_turn(dialect: Dialect) {
    let mut s = session(dialect, greeting_script(), server_vad()).await;
    speak(&mut s.adapter, 600).await;
    let events = until(&mut s.events, |e| matches!(e, RtEvent::ResponseDone { .. })).await;
    let started = events
        .iter()
        .position(|e| matches!(e, RtEvent::SpeechStarted { .. }));
    let stopped = events
        .iter()
        .position(|e| matches!(e, RtEvent::SpeechStopped { .. }));
    let user = events.iter().position(
        |e| matches!(e, RtEvent::UserTranscript { text, is_final: true, .. } if text == "hello there"),
    );
    let response = events
        .iter()
        .position(|e| matches!(e, RtEvent::ResponseStarted { .. }));
    assert!(
        started < stopped && stopped < user && user < response && started.is_some(),
        "{events:?}"
    );
    let Some(RtEvent::SpeechStopped { audio_end_ms }) = stopped.map(|i| &events[i]) else {
        unreachable!()
    };
    assert!(
        (900..=1000).contains(audio_end_ms),
        "speech ended at {audio_end_ms} ms of audio time"
    );
    let audio: usize = events
        .iter()
        .filter_map(|e| match e {
            RtEvent::Audio { pcm, .. } => Some(pcm.len()),
            _ => None,
        })
        .sum();
    assert_eq!(audio, 250 * bytes_per_ms(s.adapter.caps().output.rate));
    let deltas: String = events
        .iter()
        .filter_map(|e| match e {
            RtEvent::AssistantTranscript {
                delta,
                is_final: false,
                ..
            } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, "Hi, how can I help?");
    assert!(events.iter().any(
        |e| matches!(e, RtEvent::AssistantTranscript { delta, is_final: true, .. } if delta == "Hi, how can I help?")
    ));
    assert!(matches!(
        events.last(),
        Some(RtEvent::ResponseDone { status: RespStatus::Completed, call_ids, .. }) if call_ids.is_empty()
    ));
    assert_eq!(s.mock.audio_ms_received(), 1000);
}

#[tokio::test]
async fn ga_audio_turn() {
    audio_turn(Dialect::Openai).await;
}

#[tokio::test]
async fn qwen_audio_turn() {
    audio_turn(Dialect::Qwen).await;
}

#[tokio::test]
async fn stepfun_audio_turn() {
    audio_turn(Dialect::Stepfun).await;
}

#[tokio::test]
async fn without_vad_the_host_commits_and_creates_the_response() {
    let mut s = session(Dialect::Stepfun, greeting_script(), Vad::None).await;
    speak(&mut s.adapter, 300).await;
    s.adapter.commit_audio().await.unwrap();
    let user = next(&mut s.events, |e| {
        matches!(e, RtEvent::UserTranscript { .. })
    })
    .await;
    assert!(
        matches!(user, RtEvent::UserTranscript { text, is_final: true, .. } if text == "hello there")
    );
    s.adapter
        .create_response(ResponseOpts {
            instructions: Some("Say exactly: Hi".into()),
        })
        .await
        .unwrap();
    let events = until(&mut s.events, |e| matches!(e, RtEvent::ResponseDone { .. })).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, RtEvent::SpeechStarted { .. })),
        "{events:?}"
    );
    let creates = s.mock.frames_of_type("response.create");
    assert_eq!(
        creates,
        vec![json!({"type": "response.create", "response": {"instructions": "Say exactly: Hi"}})]
    );
}

#[tokio::test]
async fn ga_truncates_within_the_item_and_the_mock_refuses_beyond_it() {
    let script = json!({"responses": [{"steps": [{"audio": {"ms": 1000}}]}]});
    let mut s = session(Dialect::Openai, script, Vad::None).await;
    s.adapter.send_text("tell me").await.unwrap();
    s.adapter
        .create_response(ResponseOpts::default())
        .await
        .unwrap();
    let events = until(&mut s.events, |e| matches!(e, RtEvent::ResponseDone { .. })).await;
    let item = events
        .iter()
        .find_map(|e| match e {
            RtEvent::Audio { item_id, .. } => Some(item_id.clone()),
            _ => None,
        })
        .unwrap();
    s.adapter.truncate(&item, 500).await.unwrap();
    let truncated = next(&mut s.events, |e| {
        matches!(e, RtEvent::Truncated { .. } | RtEvent::Error { .. })
    })
    .await;
    assert_eq!(
        truncated,
        RtEvent::Truncated {
            item_id: item.clone(),
            audio_end_ms: 500
        }
    );
    s.adapter.truncate(&item, 1500).await.unwrap();
    let error = next(&mut s.events, |e| matches!(e, RtEvent::Error { .. })).await;
    assert!(
        matches!(&error, RtEvent::Error { message, fatal: false, .. }
            if message == "Audio content of 1000ms is already shorter than 1500ms"),
        "{error:?}"
    );
    let sent = s.mock.frames_of_type("conversation.item.truncate");
    assert_eq!(
        sent[0],
        json!({"type": "conversation.item.truncate", "item_id": item, "content_index": 0, "audio_end_ms": 500})
    );
}

#[tokio::test]
async fn qwen_never_sends_truncate() {
    let script = json!({"responses": [{"steps": [{"audio": {"ms": 100}}]}]});
    let mut s = session(Dialect::Qwen, script, Vad::None).await;
    s.adapter
        .create_response(ResponseOpts::default())
        .await
        .unwrap();
    let events = until(&mut s.events, |e| matches!(e, RtEvent::ResponseDone { .. })).await;
    let item = events
        .iter()
        .find_map(|e| match e {
            RtEvent::Audio { item_id, .. } => Some(item_id.clone()),
            _ => None,
        })
        .unwrap();
    s.adapter.truncate(&item, 50).await.unwrap();
    s.adapter.cancel().await.unwrap();
    // The cancel (nothing active) is answered; the truncate never went out.
    let error = next(&mut s.events, |e| matches!(e, RtEvent::Error { .. })).await;
    assert!(
        matches!(&error, RtEvent::Error { code, .. } if code == "response_cancel_not_active"),
        "{error:?}"
    );
    assert!(
        s.mock
            .frames_of_type("conversation.item.truncate")
            .is_empty()
    );
}

#[tokio::test]
async fn a_second_response_create_is_surfaced_as_an_error_and_cancel_ends_the_first() {
    let script = json!({"responses": [{"steps": [{"audio": {"ms": 2000, "pace": 1}}]}]});
    let mut s = session(Dialect::Openai, script, Vad::None).await;
    s.adapter
        .create_response(ResponseOpts::default())
        .await
        .unwrap();
    next(&mut s.events, |e| {
        matches!(e, RtEvent::ResponseStarted { .. })
    })
    .await;
    s.adapter
        .create_response(ResponseOpts::default())
        .await
        .unwrap();
    let error = next(&mut s.events, |e| matches!(e, RtEvent::Error { .. })).await;
    assert!(
        matches!(&error, RtEvent::Error { code, fatal: false, .. } if code == "conversation_already_has_active_response"),
        "{error:?}"
    );
    s.adapter.cancel().await.unwrap();
    let done = next(&mut s.events, |e| matches!(e, RtEvent::ResponseDone { .. })).await;
    assert!(
        matches!(
            done,
            RtEvent::ResponseDone {
                status: RespStatus::Cancelled,
                ..
            }
        ),
        "{done:?}"
    );
}

#[tokio::test]
async fn speech_during_a_response_cancels_it() {
    let script = json!({
        "userTranscripts": ["first", "second"],
        "responses": [{"steps": [{"audio": {"ms": 3000, "pace": 1}}]}, {"steps": [{"audio": {"ms": 40}}]}]
    });
    let mut s = session(Dialect::Openai, script, server_vad()).await;
    speak(&mut s.adapter, 300).await;
    let first = next(&mut s.events, |e| matches!(e, RtEvent::Audio { .. })).await;
    let RtEvent::Audio {
        response_id: first_id,
        ..
    } = first
    else {
        unreachable!()
    };
    speak(&mut s.adapter, 300).await;
    let events = until(&mut s.events, |e| matches!(e, RtEvent::ResponseDone { .. })).await;
    assert!(
        matches!(events.last(), Some(RtEvent::ResponseDone { response_id, status: RespStatus::Cancelled, .. }) if *response_id == first_id),
        "{events:?}"
    );
    // The next turn is answered by the second response.
    let events = until(&mut s.events, |e| matches!(e, RtEvent::ResponseDone { .. })).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RtEvent::UserTranscript { text, .. } if text == "second"))
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, RtEvent::Audio { response_id, .. } if *response_id == first_id))
    );
    assert!(matches!(
        events.last(),
        Some(RtEvent::ResponseDone {
            status: RespStatus::Completed,
            ..
        })
    ));
}

#[tokio::test]
async fn a_socket_dropped_mid_response_ends_with_closed() {
    let script = json!({"responses": [{"steps": [{"audio": {"ms": 100}}, "close", {"audio": {"ms": 100}}]}]});
    let mut s = session(Dialect::Qwen, script, Vad::None).await;
    s.adapter
        .create_response(ResponseOpts::default())
        .await
        .unwrap();
    let events = until(&mut s.events, |e| matches!(e, RtEvent::Closed { .. })).await;
    assert!(events.iter().any(|e| matches!(e, RtEvent::Audio { .. })));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, RtEvent::ResponseDone { .. })),
        "{events:?}"
    );
    assert!(
        tokio::time::timeout(crate::support::WAIT, s.events.recv())
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        s.adapter
            .create_response(ResponseOpts::default())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_beta_mock_answers_truncate_as_an_unknown_event() {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;

    let mock = rtc_testkit::RealtimeMock::start(
        rtc_testkit::RealtimeFlavor::Qwen,
        crate::support::KEY,
        json!({}),
    )
    .await
    .unwrap();
    let mut request = mock.url().into_client_request().unwrap();
    request.headers_mut().insert(
        "authorization",
        format!("Bearer {}", crate::support::KEY).parse().unwrap(),
    );
    let tcp = tokio::net::TcpStream::connect(mock.addr()).await.unwrap();
    let (mut ws, _) = tokio_tungstenite::client_async(request, tcp).await.unwrap();
    let first = next_text(&mut ws).await;
    assert_eq!(first["type"], "session.created");
    let truncate = json!({"type": "conversation.item.truncate", "item_id": "x", "content_index": 0, "audio_end_ms": 1});
    ws.send(Message::text(truncate.to_string())).await.unwrap();
    let error = next_text(&mut ws).await;
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["code"], "unknown_event");
    assert_eq!(
        error["error"]["message"],
        "Unknown event type: conversation.item.truncate"
    );
}

async fn next_text<S>(ws: &mut S) -> serde_json::Value
where
    S: futures::Stream<
            Item = Result<
                tokio_tungstenite::tungstenite::Message,
                tokio_tungstenite::tungstenite::Error,
            >,
        > + Unpin,
{
    use futures::StreamExt;
    loop {
        match ws.next().await {
            Some(Ok(tokio_tungstenite::tungstenite::Message::Text(t))) => {
                return serde_json::from_str(&t).unwrap();
            }
            Some(Ok(_)) => {}
            other => panic!("the mock ended the connection: {other:?}"),
        }
    }
}
