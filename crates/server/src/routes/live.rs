//! Live events: SSE (`/events?after=SEQ`) and the WebSocket (`/ws`), both
//! resumable from a sequence number (R-API-5, R-API-6).

use std::convert::Infallible;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{
    CloseFrame, Message as WsMessage, WebSocket, WebSocketUpgrade, close_code,
};
use axum::http::HeaderMap;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::{SinkExt, Stream, StreamExt};
use rtc_protocol::{ClientFrame, DeclaredClientTool, ErrorFrame, ErrorResponse, SessionEvent};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::error::ApiError;
use crate::extract::{ApiQuery, SessionAccess};
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
#[utoipa::path(get, operation_id = "streamSessionEvents", path = "/v1/sessions/{id}/events", tag = "sessions", security(("bearer" = []), ("sessionToken" = [])),
    params(("after" = Option<i64>, Query, description = "resume after this sequence number")),
    responses((status = 200, description = "text/event-stream of session events: each `data:` is a SessionEvent, `id:` its seq, `event:` its type", body = SessionEvent, content_type = "text/event-stream"),
        (status = 429, body = ErrorResponse, description = "`too_many_subscribers`: the session has its most live subscribers")))]
pub async fn events(
    access: SessionAccess,
    State(s): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<AfterQuery>,
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
    let closing = s.shutdown.clone().cancelled_owned();
    let sse = stream.take_until(closing).map(|ev| {
        let data = serde_json::to_string(&ev).unwrap_or_default();
        Ok(Event::default()
            .id(ev.seq.to_string())
            .event(ev.kind())
            .data(data))
    });
    Ok(Sse::new(sse).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// The live WebSocket of a session.
#[utoipa::path(get, operation_id = "openSessionSocket", path = "/v1/sessions/{id}/ws", tag = "sessions", security(("bearer" = []), ("sessionToken" = [])),
    params(("after" = Option<i64>, Query, description = "resume after this sequence number")),
    responses((status = 101, description = "WebSocket upgrade: the client sends ClientFrame objects; the server sends SessionEvent objects and ErrorFrame objects"),
        (status = 400, body = ErrorResponse, description = "`websocket_upgrade_required` (not a WebSocket handshake), `invalid_query` or `invalid_path`"),
        (status = 429, body = ErrorResponse, description = "`too_many_subscribers`: the session has its most live subscribers")))]
pub async fn ws(
    access: SessionAccess,
    State(s): State<AppState>,
    ApiQuery(q): ApiQuery<AfterQuery>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> ApiResult<Response> {
    let upgrade = upgrade.map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "websocket_upgrade_required",
            format!("this endpoint speaks WebSocket only: {e}"),
        )
    })?;
    // The session exists and the socket's subscription has its place
    // (429 `too_many_subscribers` otherwise) before upgrading.
    let after = q.after.unwrap_or(0);
    let events = s
        .runtime
        .subscribe(&access.workspace, &access.session, after)
        .await?
        .boxed();
    Ok(upgrade
        .max_message_size(1024 * 1024)
        .on_upgrade(move |socket| serve_socket(socket, s, access, events))
        .into_response())
}

fn frame(ev: &SessionEvent) -> WsMessage {
    WsMessage::Text(serde_json::to_string(ev).unwrap_or_default().into())
}

/// An error frame with the code, message and field an HTTP error would
/// carry (a server fault's details stay in the log).
fn error_frame(e: ApiError) -> WsMessage {
    let frame = ErrorFrame::new(&e.code, e.message, e.field);
    WsMessage::Text(serde_json::to_string(&frame).unwrap_or_default().into())
}

fn invalid_frame(message: String) -> WsMessage {
    error_frame(ApiError::new(
        StatusCode::BAD_REQUEST,
        "invalid_frame",
        message,
    ))
}

async fn serve_socket(
    socket: WebSocket,
    s: AppState,
    access: SessionAccess,
    mut events: futures::stream::BoxStream<'static, SessionEvent>,
) {
    let Ok(conn) = s
        .runtime
        .connect_client(&access.workspace, &access.session)
        .await
    else {
        return;
    };
    // A realtime session's bridge starts with the socket: the provider
    // is connected lazily, now (design realtime.md §5).
    let mut realtime = match s
        .runtime
        .is_realtime_session(&access.workspace, &access.session)
        .await
    {
        Ok(true) => s
            .runtime
            .attach_realtime(&access.workspace, &access.session)
            .await
            .ok(),
        _ => None,
    };
    // A voice session's socket speaks once its hello asks for audio
    // (design voice-pipeline.md §4(b)).
    let mut voice = match s
        .runtime
        .is_voice_session(&access.workspace, &access.session)
        .await
    {
        Ok(true) => s
            .runtime
            .attach_voice(&access.workspace, &access.session)
            .await
            .ok(),
        _ => None,
    };
    let (mut tx, mut rx) = socket.split();
    let shutdown = s.shutdown.clone();
    // User messages are sent in order by a task of their own, so the
    // socket keeps reading (a client tool's result) and writing (events)
    // while one waits: a workflow's action runs to its end before the
    // message that came during it is taken.
    let (messages, mut refused) = spawn_message_sender(&s, &access);
    loop {
        // Biased: audio a bridge or speaker queued goes out before an
        // event that became ready meanwhile, so a host gets an answer's
        // audio before its `turn.completed` (the bridge queues the audio
        // before it records the event).
        tokio::select! {
            biased;
            Some(r) = refused.recv() => {
                if tx.send(r).await.is_err() {
                    break;
                }
            }
            () = shutdown.cancelled() => {
                let close = CloseFrame { code: close_code::AWAY, reason: "the server is shutting down".into() };
                let _ = tx.send(WsMessage::Close(Some(close))).await;
                break;
            }
            audio = next_audio(&mut realtime) => {
                let Some(audio) = audio else {
                    // The bridge stopped: the session ended, or another
                    // socket took it over; stored events still flow.
                    realtime = None;
                    continue;
                };
                let text = serde_json::to_string(&audio).unwrap_or_default();
                if tx.send(WsMessage::Text(text.into())).await.is_err() {
                    break;
                }
            }
            Some(audio) = next_voice_audio(&mut voice) => {
                let text = serde_json::to_string(&audio).unwrap_or_default();
                if tx.send(WsMessage::Text(text.into())).await.is_err() {
                    break;
                }
            }
            ev = events.next() => {
                let Some(ev) = ev else { break };
                if tx.send(frame(&ev)).await.is_err() {
                    break;
                }
            }
            incoming = rx.next() => {
                let Some(Ok(msg)) = incoming else { break };
                let text = match msg {
                    WsMessage::Text(t) => t,
                    WsMessage::Close(_) => break,
                    _ => continue,
                };
                let reply = match serde_json::from_str::<ClientFrame>(&text) {
                    Ok(_) if let Some(e) = crate::extract::refuse_nul(&text) => Some(error_frame(e)),
                    Ok(f) => {
                        let link = Socket { conn: &conn, messages: &messages, realtime: realtime.as_ref(), voice: voice.as_ref() };
                        handle_frame(&s, &access, link, f, &mut events).await.err().map(error_frame)
                    }
                    Err(e) => Some(frame_error(&text, &e)),
                };
                if let Some(r) = reply
                    && tx.send(r).await.is_err() {
                        break;
                    }
            }
        }
    }
}

/// The task that sends a socket's user messages one after another; what
/// it could not send comes back as error frames.
fn spawn_message_sender(
    s: &AppState,
    access: &SessionAccess,
) -> (mpsc::Sender<String>, mpsc::Receiver<WsMessage>) {
    let (messages, mut queued) = mpsc::channel::<String>(16);
    let (refusals, refused) = mpsc::channel::<WsMessage>(16);
    let (s, access) = (s.clone(), access.clone());
    tokio::spawn(async move {
        while let Some(text) = queued.recv().await {
            let sent = s
                .runtime
                .send_user_message(&access.workspace, &access.session, &text)
                .await;
            if let Err(e) = sent {
                // The socket may be gone; the refusal then has no reader.
                let _ = refusals.send(error_frame(e.into())).await;
            }
        }
    });
    (messages, refused)
}

/// Why a frame could not be read: not JSON, an unknown `type`, or a field
/// that does not fit its type.
fn frame_error(text: &str, e: &serde_json::Error) -> WsMessage {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return error_frame(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            "frames must be JSON objects with a `type`",
        ));
    };
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
    if !CLIENT_FRAME_TYPES.contains(&kind) {
        return error_frame(ApiError::new(
            StatusCode::BAD_REQUEST,
            "unsupported_frame",
            format!(
                "unknown frame type `{kind}`; one of: {}",
                CLIENT_FRAME_TYPES.join(", ")
            ),
        ));
    }
    invalid_frame(format!("`{kind}`: {e}"))
}

const CLIENT_FRAME_TYPES: &[&str] = &[
    "client.hello",
    "user.message",
    "client_tool.result",
    "ask_user.answer",
    "resume",
    "audio.append",
    "audio.commit",
    "playback.interrupted",
];

/// The next audio frame of a realtime bridge; never without one.
async fn next_audio(
    link: &mut Option<rtc_runtime::RealtimeLink>,
) -> Option<rtc_protocol::EphemeralFrame> {
    match link {
        Some(l) => l.frames.recv().await,
        None => std::future::pending().await,
    }
}

/// The next audio frame of a voice session's speaker; never without one.
async fn next_voice_audio(
    link: &mut Option<rtc_runtime::VoiceLink>,
) -> Option<rtc_protocol::EphemeralFrame> {
    match link {
        Some(l) => l.frames.recv().await,
        None => std::future::pending().await,
    }
}

/// What a socket's frames go to.
#[derive(Clone, Copy)]
struct Socket<'a> {
    conn: &'a rtc_runtime::ClientConnection,
    messages: &'a mpsc::Sender<String>,
    realtime: Option<&'a rtc_runtime::RealtimeLink>,
    voice: Option<&'a rtc_runtime::VoiceLink>,
}

/// Audio frames need a realtime session's bridge.
fn realtime_only<'a>(link: Socket<'a>) -> ApiResult<&'a rtc_runtime::RealtimeLink> {
    link.realtime.ok_or_else(|| {
        ApiError::conflict(
            "not_realtime",
            "audio frames are for sessions of a realtime assistant",
        )
    })
}

/// One client frame; an error becomes an error frame.
async fn handle_frame(
    s: &AppState,
    access: &SessionAccess,
    link: Socket<'_>,
    frame: ClientFrame,
    events: &mut futures::stream::BoxStream<'static, SessionEvent>,
) -> ApiResult<()> {
    let Socket { conn, messages, .. } = link;
    match frame {
        ClientFrame::Hello(hello) => {
            let tools = hello
                .client_tools
                .into_iter()
                .map(DeclaredClientTool::into_parts)
                .collect();
            // A voice host's session runs its turns on this instance.
            let voiced = match (hello.audio, link.voice) {
                (Some(audio), Some(voice)) => Some(voice.hello(audio).await),
                _ => None,
            };
            conn.declare(tools, matches!(voiced, Some(Ok(()))));
            if let Some(Err(e)) = voiced {
                return Err(e.into());
            }
            if let (Some(audio), Some(rt)) = (hello.audio, link.realtime) {
                rt.hello(audio).await?;
            }
        }
        ClientFrame::UserMessage(m) if link.realtime.is_some() => {
            s.runtime.check_message_text(&m.text)?;
            realtime_only(link)?.text(m.text).await?;
        }
        ClientFrame::UserMessage(m) => {
            // Checked here so a refusal names the frame at once; the
            // message is then queued in order.
            s.runtime.check_message_text(&m.text)?;
            if messages.send(m.text).await.is_err() {
                return Err(ApiError::internal(
                    "websocket",
                    &"the task sending user messages stopped",
                ));
            }
        }
        ClientFrame::ClientToolResult(r) => {
            let call_id = r.call_id.clone();
            if !conn
                .resolve(&call_id, r.into_reply().map_err(rtc_runtime::ClientError))
                .await
            {
                return Err(ApiError::new(
                    StatusCode::NOT_FOUND,
                    "unknown_call",
                    "no call waits under that `callId`",
                )
                .with_field("callId"));
            }
        }
        ClientFrame::AskUserAnswer(a) => {
            s.runtime
                .answer(&access.workspace, &access.session, a.into())
                .await?;
        }
        ClientFrame::Resume(r) => {
            // The old subscription gives its place to the new one.
            *events = futures::stream::empty().boxed();
            let stream = s
                .runtime
                .subscribe(&access.workspace, &access.session, r.after_seq)
                .await?;
            *events = stream.boxed();
        }
        ClientFrame::AudioAppend(a) if let Some(voice) = link.voice => voice.audio(&a.audio)?,
        ClientFrame::AudioCommit(_) if let Some(voice) = link.voice => voice.commit()?,
        ClientFrame::PlaybackInterrupted(p) if let Some(voice) = link.voice => {
            voice.playback_interrupted(p.item_id, u64::from(p.played_ms));
        }
        ClientFrame::AudioAppend(a) => realtime_only(link)?.audio(&a.audio).await?,
        ClientFrame::AudioCommit(_) => realtime_only(link)?.commit().await?,
        ClientFrame::PlaybackInterrupted(p) => {
            realtime_only(link)?
                .playback_interrupted(p.item_id, p.played_ms)
                .await?;
        }
    }
    Ok(())
}
