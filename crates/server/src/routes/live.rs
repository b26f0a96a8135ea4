//! Live events: SSE (`/events?after=SEQ`) and the WebSocket (`/ws`), both
//! resumable from a sequence number (R-API-5, R-API-6).

use std::convert::Infallible;
use std::time::Duration;

use axum::Router;
use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::{SinkExt, Stream, StreamExt};
use rtc_protocol::SessionEvent;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::extract::SessionAccess;
use crate::{ApiResult, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/sessions/{id}/events", get(events))
        .route("/v1/sessions/{id}/ws", get(ws))
}

#[derive(Debug, Default, Deserialize)]
pub struct AfterQuery {
    after: Option<i64>,
}

/// Server-sent events from `after` (or `Last-Event-ID`), then live.
#[utoipa::path(get, path = "/v1/sessions/{id}/events", tag = "sessions", security(("bearer" = [])),
    params(("after" = Option<i64>, Query, description = "resume after this sequence number")),
    responses((status = 200, description = "text/event-stream of session events", content_type = "text/event-stream")))]
pub async fn events(
    access: SessionAccess,
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<AfterQuery>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let last_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let after = q.after.or(last_id).unwrap_or(0);
    let stream = s
        .runtime
        .subscribe(&access.workspace, &access.session, after)
        .await?;
    let sse = stream.map(|ev| {
        let data = serde_json::to_string(&ev).unwrap_or_default();
        Ok(Event::default()
            .id(ev.seq.to_string())
            .event(ev.kind)
            .data(data))
    });
    Ok(Sse::new(sse).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// The live WebSocket of a session.
#[utoipa::path(get, path = "/v1/sessions/{id}/ws", tag = "sessions", security(("bearer" = [])),
    params(("after" = Option<i64>, Query, description = "resume after this sequence number"), ("token" = Option<String>, Query, description = "key or client token")),
    responses((status = 101, description = "WebSocket upgrade")))]
pub async fn ws(
    access: SessionAccess,
    State(s): State<AppState>,
    Query(q): Query<AfterQuery>,
    upgrade: WebSocketUpgrade,
) -> ApiResult<Response> {
    // Check the session exists before upgrading.
    s.runtime
        .session(&access.workspace, &access.session)
        .await?;
    let after = q.after.unwrap_or(0);
    Ok(upgrade
        .max_message_size(1024 * 1024)
        .on_upgrade(move |socket| serve_socket(socket, s, access, after))
        .into_response())
}

fn frame(ev: &SessionEvent) -> WsMessage {
    WsMessage::Text(serde_json::to_string(ev).unwrap_or_default().into())
}

fn error_frame(code: &str, message: &str) -> WsMessage {
    WsMessage::Text(
        json!({"type": "error", "code": code, "message": message})
            .to_string()
            .into(),
    )
}

async fn serve_socket(socket: WebSocket, s: AppState, access: SessionAccess, after: i64) {
    let Ok(conn) = s
        .runtime
        .connect_client(&access.workspace, &access.session)
        .await
    else {
        return;
    };
    let Ok(mut events) = s
        .runtime
        .subscribe(&access.workspace, &access.session, after)
        .await
        .map(|e| e.boxed())
    else {
        return;
    };
    let (mut tx, mut rx) = socket.split();
    loop {
        tokio::select! {
            ev = events.next() => {
                let Some(ev) = ev else { break };
                if tx.send(frame(&ev)).await.is_err() {
                    break;
                }
            }
            incoming = rx.next() => {
                let Some(Ok(msg)) = incoming else { break };
                let text = match msg {
                    WsMessage::Text(t) => t.to_string(),
                    WsMessage::Close(_) => break,
                    _ => continue,
                };
                let reply = match serde_json::from_str::<Value>(&text) {
                    Err(_) => Some(error_frame("invalid_json", "frames must be JSON objects with a `type`")),
                    Ok(v) => handle_frame(&s, &access, &conn, &v, &mut events).await,
                };
                if let Some(r) = reply
                    && tx.send(r).await.is_err() {
                        break;
                    }
            }
        }
    }
}

/// One entry of `clientTools`: a name, or `{name, schemaHash}`.
fn declared_tool(t: &Value) -> Option<(String, Option<String>)> {
    match t {
        Value::String(name) => Some((name.clone(), None)),
        Value::Object(o) => {
            let name = o.get("name")?.as_str()?.to_owned();
            Some((
                name,
                o.get("schemaHash")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            ))
        }
        _ => None,
    }
}

/// One client frame; returns an error frame to send back, if any.
async fn handle_frame(
    s: &AppState,
    access: &SessionAccess,
    conn: &rtc_runtime::ClientConnection,
    v: &Value,
    events: &mut futures::stream::BoxStream<'static, SessionEvent>,
) -> Option<WsMessage> {
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "client.hello" => {
            // `clientTools`: names, or `{name, schemaHash}` objects (R-BX-9).
            let tools = v
                .get("clientTools")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(declared_tool).collect())
                .unwrap_or_default();
            conn.declare(tools);
            None
        }
        "user.message" => {
            let text = v.get("text").and_then(Value::as_str).unwrap_or("");
            match s
                .runtime
                .send_user_message(&access.workspace, &access.session, text)
                .await
            {
                Ok(_) => None,
                Err(e) => Some(error_frame("user_message_rejected", &e.to_string())),
            }
        }
        "client_tool.result" => {
            let Some(call_id) = v.get("callId").and_then(Value::as_str) else {
                return Some(error_frame("invalid_frame", "`callId` is required"));
            };
            let reply = match v.get("error") {
                Some(e) if !e.is_null() => {
                    Err(e.as_str().map_or_else(|| e.to_string(), str::to_owned))
                }
                _ => Ok(v.get("result").cloned().unwrap_or(Value::Null)),
            };
            if conn.resolve(call_id, reply) {
                None
            } else {
                Some(error_frame(
                    "unknown_call",
                    "no call waits under that `callId`",
                ))
            }
        }
        "ask_user.answer" => {
            let params = match serde_json::from_value::<rtc_protocol::AnswerParams>(
                serde_json::json!({"callId": v.get("callId"), "answers": v.get("answers")}),
            ) {
                Ok(p) => p,
                Err(e) => return Some(error_frame("invalid_frame", &format!("`answers`: {e}"))),
            };
            match s
                .runtime
                .answer(&access.workspace, &access.session, params)
                .await
            {
                Ok(_) => None,
                Err(e) => Some(error_frame("answer_rejected", &e.to_string())),
            }
        }
        "resume" => {
            let after = v.get("afterSeq").and_then(Value::as_i64).unwrap_or(0);
            match s
                .runtime
                .subscribe(&access.workspace, &access.session, after)
                .await
            {
                Ok(stream) => {
                    *events = stream.boxed();
                    None
                }
                Err(e) => Some(error_frame("resume_failed", &e.to_string())),
            }
        }
        other => Some(error_frame(
            "unsupported_frame",
            &format!("unknown frame type `{other}`"),
        )),
    }
}
