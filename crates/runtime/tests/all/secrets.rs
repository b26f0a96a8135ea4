//! Secrets revealed for a call never come back: a service that echoes a
//! secret raw, in base64 and percent-encoded reaches neither the
//! `tool.completed` event nor the model (R-SEC).

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rtc_testkit::MockReply;
use serde_json::{Value, json};

use crate::harness::{Harness, WS};

const SECRET: &str = "sk-live/canary+42?";

/// The forms of [`SECRET`] an echoing service might send back.
fn forms() -> Vec<String> {
    vec![
        SECRET.to_owned(),
        STANDARD.encode(SECRET),
        URL_SAFE_NO_PAD.encode(SECRET),
        url::form_urlencoded::byte_serialize(SECRET.as_bytes()).collect(),
    ]
}

/// `/echo` answers with the request's `x-api-key` in three forms; `/fail`
/// answers 500 with them in the body.
async fn echo_server() -> String {
    fn echoed(headers: &axum::http::HeaderMap) -> Value {
        let key = headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        json!({
            "raw": key,
            "base64": STANDARD.encode(&key),
            "basic": STANDARD.encode(format!("user:{key}")),
            "urlsafe": URL_SAFE_NO_PAD.encode(&key),
            "urlencoded": url::form_urlencoded::byte_serialize(key.as_bytes()).collect::<String>(),
        })
    }
    let app = axum::Router::new()
        .route(
            "/echo",
            axum::routing::post(|headers: axum::http::HeaderMap| async move {
                axum::Json(echoed(&headers))
            }),
        )
        .route(
            "/fail",
            axum::routing::post(|headers: axum::http::HeaderMap| async move {
                (
                    axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    echoed(&headers).to_string(),
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

async fn run(path: &str) -> (Value, String) {
    let h = Harness::start(vec![
        MockReply::call("leak", json!({})),
        MockReply::text("done"),
    ])
    .await;
    h.store.put_secret(WS, "secret__k", SECRET).await.unwrap();
    let base = echo_server().await;
    let tool: rtc_protocol::Tool = serde_json::from_value(json!({"name": "leak",
        "type": "http", "description": "Echo.",
        "parameters": {"type": "object", "properties": {}},
        "http": {"method": "POST", "url": format!("{base}{path}"),
            "headers": {"X-Api-Key": "{{secret__k}}"}, "body": {}}}))
    .unwrap();
    h.store.insert(WS, Some("t1".into()), tool).await.unwrap();
    h.assistant(
        "a",
        json!({"name": "a", "systemPrompt": "Help.",
            "toolBindings": [{"toolId": "t1"}]}),
    )
    .await;
    let s = h.session("a").await;
    let mut events = h.events(&s).await;
    h.rt.send_user_message(WS, &s, "go").await.unwrap();
    let done = events
        .until("tool.completed", |v| v["name"] == "leak")
        .await;
    events.next_of("turn.completed").await;
    let done = serde_json::to_value(done).unwrap();
    let second = serde_json::to_string(&h.mock.requests()[1]).unwrap();
    (done, second)
}

fn assert_scrubbed(what: &str, text: &str) {
    for form in forms() {
        assert!(!text.contains(&form), "{what} holds {form}: {text}");
    }
    assert!(!text.contains(&STANDARD.encode(format!("user:{SECRET}"))));
    assert!(text.contains("[redacted]"), "{what}: {text}");
}

#[tokio::test]
async fn an_echoed_secret_reaches_neither_the_event_nor_the_model() {
    let (done, model_request) = run("/echo").await;
    assert_eq!(done["isError"], false, "{done}");
    assert_scrubbed("tool.completed", &done.to_string());
    assert_scrubbed("the model's request", &model_request);
    assert_eq!(done["result"]["raw"], "[redacted]");
}

#[tokio::test]
async fn an_error_echoing_a_secret_is_scrubbed_too() {
    let (done, model_request) = run("/fail").await;
    assert_eq!(done["isError"], true, "{done}");
    assert_scrubbed("tool.completed", &done.to_string());
    assert_scrubbed("the model's request", &model_request);
}
