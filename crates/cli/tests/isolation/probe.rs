//! Sending one probe and keeping count: the answer's status and JSON,
//! WebSocket paths opened as WebSockets, path templates expanded with ids.

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;

use crate::harness::Server;
/// The resource a path parameter names, from the path segment before it
/// (`/v1/tools/{id}` → `tools`), so renaming a parameter changes nothing.
pub(super) fn kind_of(segments: &[&str], at: usize) -> String {
    at.checked_sub(1)
        .and_then(|i| segments.get(i))
        .map(|s| (*s).to_owned())
        .unwrap_or_default()
}

/// One answer: status, body text, JSON (`Null` when not JSON).
#[derive(Debug, Clone)]
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) text: String,
    pub(super) body: Value,
}

impl Answer {
    pub(super) fn is_json_error(&self, code: &str) -> bool {
        self.body["error"]["code"] == code
            && self.body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
    }
}

/// Call `path` with `token` as a bearer header (or, with `query_token`,
/// as `?token=`). A WebSocket path is opened as a WebSocket; an event
/// stream that opens is not read (its status says enough).
pub(super) async fn send(
    srv: &Server,
    method: &Method,
    path: &str,
    token: Option<&str>,
    query_token: bool,
    body: Option<&Value>,
) -> anyhow::Result<Answer> {
    let mut url = format!("{}{path}", srv.process.base_url);
    if let (Some(t), true) = (token, query_token) {
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str("token=");
        url.push_str(t);
    }
    if path.split('?').next().is_some_and(|p| p.ends_with("/ws")) {
        let mut req =
            tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
                url.replace("http://", "ws://"),
            )?;
        if let (Some(t), false) = (token, query_token) {
            req.headers_mut()
                .insert("authorization", format!("Bearer {t}").parse()?);
        }
        return Ok(match tokio_tungstenite::connect_async(req).await {
            Ok(_) => Answer {
                status: 101,
                text: "<WebSocket opened>".into(),
                body: Value::Null,
            },
            Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
                let text = String::from_utf8_lossy(resp.body().as_deref().unwrap_or_default())
                    .into_owned();
                Answer {
                    status: resp.status().as_u16(),
                    body: serde_json::from_str(&text).unwrap_or(Value::Null),
                    text,
                }
            }
            Err(e) => anyhow::bail!("WebSocket {path}: {e}"),
        });
    }
    let mut req = srv
        .client
        .request(method.clone(), url)
        .timeout(Duration::from_secs(10));
    if let (Some(t), false) = (token, query_token) {
        req = req.bearer_auth(t);
    }
    if let Some(b) = body {
        req = req.json(b);
    }
    let resp = req.send().await?;
    let status = resp.status().as_u16();
    let stream = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/event-stream"));
    let text = if stream {
        "<event stream opened>".to_owned()
    } else {
        resp.text().await?
    };
    Ok(Answer {
        status,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
        text,
    })
}

/// `template` with each `{param}` replaced by one of `pick(kind)`: every
/// combination, with the kinds in order.
pub(super) fn expand(template: &str, pick: &dyn Fn(&str) -> Vec<String>) -> Vec<String> {
    let segments: Vec<&str> = template.split('/').collect();
    let mut paths = vec![String::new()];
    for (i, seg) in segments.iter().enumerate() {
        let options = if seg.starts_with('{') && seg.ends_with('}') {
            pick(&kind_of(&segments, i))
        } else {
            vec![(*seg).to_owned()]
        };
        paths = paths
            .iter()
            .flat_map(|p| {
                options.iter().map(move |o| {
                    if i == 0 {
                        o.clone()
                    } else {
                        format!("{p}/{o}")
                    }
                })
            })
            .collect();
    }
    paths
}

pub(super) fn has_params(path: &str) -> bool {
    path.contains('{')
}

pub(super) struct Tally {
    /// Requests sent as B (or with A's client token).
    pub(super) sent: usize,
    /// Checks made on their answers.
    pub(super) probes: usize,
    pub(super) failures: Vec<String>,
}

impl Tally {
    pub(super) async fn probe(
        &mut self,
        srv: &Server,
        method: &Method,
        path: &str,
        token: Option<&str>,
        query_token: bool,
        body: Option<&Value>,
    ) -> anyhow::Result<Answer> {
        self.sent += 1;
        send(srv, method, path, token, query_token, body).await
    }

    pub(super) fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        self.probes += 1;
        if !ok {
            self.failures.push(what());
        }
    }
}
