//! Progress of MCP tool calls (`notifications/progress`). rmcp gives every
//! request a progress token; a call that wants progress sends its request
//! itself ([`call_with_progress`]) to learn that token, and the
//! connection's client handler ([`Client`]) hands each notification to
//! that call's sink at once (a caller keeps what it wants in a bounded
//! queue, so a server that floods notifications loses some, never the
//! platform's memory). A notification that arrives before its call is
//! registered waits in a short queue. Messages are cut to
//! [`MAX_MESSAGE_CHARS`]. A call given up (dropped) before its answer is
//! cancelled on the server when the connection is next used.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientConfig, ClientNotification, ClientRequest, NumberOrString,
    ProgressNotificationParam, ProgressToken, RequestId, ServerResult,
};
use rmcp::service::{MaybeSendFuture, NotificationContext, PeerRequestOptions};
use rmcp::{ClientHandler, RoleClient, ServiceError};

use super::McpService;

/// Notifications kept for calls not registered yet.
const EARLY: usize = 64;

/// The longest progress message passed on, in characters.
pub const MAX_MESSAGE_CHARS: usize = 500;

/// One progress notification of a running call.
#[derive(Debug, Clone, PartialEq)]
pub struct McpProgress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// What a call does with each progress notification (at once, without
/// waiting: it runs on the connection's reader).
pub type ProgressSink = Arc<dyn Fn(McpProgress) + Send + Sync>;

#[derive(Default)]
struct Routing {
    sinks: HashMap<String, ProgressSink>,
    /// Notifications whose call is not registered yet (or is gone).
    early: VecDeque<(String, McpProgress)>,
}

/// Where the progress of each running call goes, by token.
#[derive(Clone, Default)]
pub(crate) struct ProgressRoutes(Arc<Mutex<Routing>>);

/// A call's registration; dropping it stops the routing.
pub(crate) struct Route {
    routes: ProgressRoutes,
    token: String,
}

impl Drop for Route {
    fn drop(&mut self) {
        self.routes.0.lock().sinks.remove(&self.token);
    }
}

fn token_text(token: &ProgressToken) -> String {
    match &token.0 {
        NumberOrString::String(s) => s.to_string(),
        NumberOrString::Number(n) => n.to_string(),
    }
}

impl ProgressRoutes {
    /// Send the progress of the call with `token` to `sink` (what arrived
    /// for it already first).
    fn open(&self, token: &ProgressToken, sink: ProgressSink) -> Route {
        let token = token_text(token);
        let early: Vec<McpProgress> = {
            let mut routing = self.0.lock();
            routing.sinks.insert(token.clone(), sink.clone());
            let (mine, rest) = std::mem::take(&mut routing.early)
                .into_iter()
                .partition(|(t, _)| *t == token);
            routing.early = rest;
            mine.into_iter().map(|(_, p)| p).collect()
        };
        for p in early {
            sink(p);
        }
        Route {
            routes: self.clone(),
            token,
        }
    }

    fn deliver(&self, params: ProgressNotificationParam) {
        let token = token_text(&params.progress_token);
        let progress = McpProgress {
            progress: params.progress,
            total: params.total,
            message: params
                .message
                .map(|m| m.chars().take(MAX_MESSAGE_CHARS).collect()),
        };
        let sink = {
            let mut routing = self.0.lock();
            match routing.sinks.get(&token) {
                Some(sink) => sink.clone(),
                None => {
                    if routing.early.len() >= EARLY {
                        routing.early.pop_front();
                    }
                    routing.early.push_back((token, progress));
                    return;
                }
            }
        };
        sink(progress);
    }
}

/// The platform's side of an MCP connection: who it says it is, and where
/// progress notifications go.
#[derive(Clone)]
pub struct Client {
    pub(crate) info: ClientConfig,
    pub(crate) routes: ProgressRoutes,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.routes.deliver(params);
        std::future::ready(())
    }
}

/// Requests of one connection given up before their answer, to cancel on
/// the server when the connection is next used.
pub(crate) type Abandoned = Mutex<Vec<RequestId>>;

/// Marks a request abandoned unless disarmed.
struct Abandon<'a> {
    list: &'a Abandoned,
    id: Option<RequestId>,
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.list.lock().push(id);
        }
    }
}

/// Call a tool on `service`, its progress going to `sink`, within
/// `timeout` (`None` when it passed: rmcp then tells the server the
/// request is cancelled).
pub(crate) async fn call_with_progress(
    service: &McpService,
    abandoned: &Abandoned,
    params: CallToolRequestParams,
    timeout: Duration,
    sink: ProgressSink,
) -> Option<Result<CallToolResult, ServiceError>> {
    let peer = service.peer();
    let earlier: Vec<RequestId> = std::mem::take(&mut *abandoned.lock());
    for id in earlier {
        let cancelled = CancelledNotification::new(CancelledNotificationParam::new(
            Some(id),
            Some("the caller gave up on the call".to_owned()),
        ));
        let _ = peer
            .send_notification(ClientNotification::CancelledNotification(cancelled))
            .await;
    }
    let mut options = PeerRequestOptions::no_options();
    options.timeout = Some(timeout);
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = match peer.send_request_with_option(request, options).await {
        Ok(handle) => handle,
        Err(e) => return Some(Err(e)),
    };
    let _route = service.service().routes.open(&handle.progress_token, sink);
    let mut abandon = Abandon {
        list: abandoned,
        id: Some(handle.id.clone()),
    };
    let answer = handle.await_response().await;
    abandon.id = None;
    match answer {
        Err(ServiceError::Timeout { .. }) => None,
        Err(e) => Some(Err(e)),
        Ok(ServerResult::CallToolResult(result)) => Some(Ok(result)),
        Ok(_) => Some(Err(ServiceError::UnexpectedResponse)),
    }
}
