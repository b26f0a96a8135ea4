//! A client of one OpenCode server's V1 HTTP API: the calls a task needs
//! (design §2), each bounded by [`CONNECT_TIMEOUT`] to connect and its own
//! request timeout, with errors that tell "down" from "wrong password" from
//! "answered an error".

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use rtc_protocol::OpencodeModel;
use serde_json::{Value, json};

use super::outcome::{SessionState, error_message, parse_status};
use super::{CONNECT_TIMEOUT, OpencodeError};
use crate::net_guard::{self, AddressPolicy};
use crate::scrub::Scrubber;
use crate::upstream::{BodyError, UpstreamLimits, read_at_most};

/// How long an ordinary API call may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Most characters of a server's error text quoted in an error.
const MAX_QUOTED: usize = 300;

/// The HTTP Basic user OpenCode expects.
const USER: &str = "opencode";

/// A server password; its `Debug` hides it.
#[derive(Clone)]
pub struct Password(String);

impl Password {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The plaintext, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password([redacted])")
    }
}

/// What `prompt_async` sends: the instruction, the model and optionally
/// the OpenCode agent.
#[derive(Debug, Clone)]
pub struct TaskPrompt<'a> {
    pub text: &'a str,
    pub model: &'a OpencodeModel,
    pub agent: Option<&'a str>,
}

/// A client of one server (and optionally one project directory on it).
/// Its `Debug` shows the address only.
#[derive(Clone)]
pub struct OpencodeClient {
    base: String,
    http: reqwest::Client,
    authorization: Option<HeaderValue>,
    scrubber: Scrubber,
    directory: Option<String>,
    limits: UpstreamLimits,
}

impl std::fmt::Debug for OpencodeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpencodeClient")
            .field("base", &self.base)
            .field("directory", &self.directory)
            .finish_non_exhaustive()
    }
}

impl OpencodeClient {
    /// A client of the server at `base_url`, its address checked against
    /// `policy` now and at every connection (R-SEC-2). `directory` selects
    /// the project (`?directory=`) of every session call.
    pub fn new(
        base_url: &str,
        password: Option<&Password>,
        directory: Option<String>,
        policy: AddressPolicy,
    ) -> Result<Self, OpencodeError> {
        let base = base_url.trim_end_matches('/').to_owned();
        let url = url::Url::parse(&base).map_err(|e| OpencodeError::InvalidUrl {
            url: base_url.to_owned(),
            reason: e.to_string(),
        })?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err(OpencodeError::InvalidUrl {
                url: "(a URL with credentials)".to_owned(),
                reason: "credentials belong in the password field".to_owned(),
            });
        }
        net_guard::check_url(&url, policy).map_err(|e| OpencodeError::Blocked {
            url: base.clone(),
            reason: e.to_string(),
        })?;
        let http = net_guard::guarded_client_same_origin_connecting_within(policy, CONNECT_TIMEOUT)
            .map_err(|e| OpencodeError::Start(format!("building the HTTP client: {e}")))?;
        let (authorization, scrubber) = match password {
            Some(p) => {
                let token = base64::engine::general_purpose::STANDARD
                    .encode(format!("{USER}:{}", p.expose()));
                let mut value = HeaderValue::from_str(&format!("Basic {token}")).map_err(|_| {
                    OpencodeError::InvalidUrl {
                        url: base.clone(),
                        reason: "the password holds characters a header cannot carry".to_owned(),
                    }
                })?;
                value.set_sensitive(true);
                (Some(value), Scrubber::new([p.expose()]))
            }
            None => (None, Scrubber::default()),
        };
        Ok(Self {
            base,
            http,
            authorization,
            scrubber,
            directory,
            limits: UpstreamLimits::default(),
        })
    }

    /// The same client, reading within `limits` (R-SEC-7).
    pub fn with_limits(mut self, limits: UpstreamLimits) -> Self {
        self.limits = limits;
        self
    }

    /// What this client reads at most.
    pub fn limits(&self) -> UpstreamLimits {
        self.limits
    }

    /// The server's address as configured (no trailing slash).
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// `GET /global/health`, within `timeout`: the server's version.
    pub async fn health(&self, timeout: Duration) -> Result<String, OpencodeError> {
        let body = self
            .send_json(
                self.request(reqwest::Method::GET, "/global/health", false),
                timeout,
            )
            .await?;
        if body.get("healthy").and_then(Value::as_bool) != Some(true) {
            return Err(self.bad_answer(format!("health is {body}")));
        }
        Ok(body
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned())
    }

    /// `POST /session`: a task session titled `title` running `model`, whose
    /// permission rules allow everything but `question` (an unattended
    /// task must never wait for a human). Its id (`ses_…`).
    pub async fn create_session(
        &self,
        title: &str,
        model: &OpencodeModel,
    ) -> Result<String, OpencodeError> {
        let body = json!({
            "title": title,
            "model": {"providerID": model.provider_id, "id": model.model_id},
            "permission": [
                {"permission": "*", "pattern": "*", "action": "allow"},
                {"permission": "question", "pattern": "*", "action": "deny"},
            ],
        });
        let answer = self
            .send_json(
                self.request(reqwest::Method::POST, "/session", true)
                    .json(&body),
                REQUEST_TIMEOUT,
            )
            .await?;
        answer
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| self.bad_answer("the created session has no id".to_owned()))
    }

    /// `POST /session/{id}/prompt_async`: start the task (answers at once).
    pub async fn prompt_async(
        &self,
        session: &str,
        prompt: &TaskPrompt<'_>,
    ) -> Result<(), OpencodeError> {
        let mut body = json!({
            "parts": [{"type": "text", "text": prompt.text}],
            "model": {"providerID": prompt.model.provider_id, "modelID": prompt.model.model_id},
        });
        if let Some(agent) = prompt.agent {
            body["agent"] = json!(agent);
        }
        let path = format!("/session/{}/prompt_async", segment(session));
        self.send(
            self.request(reqwest::Method::POST, &path, true).json(&body),
            REQUEST_TIMEOUT,
        )
        .await?;
        Ok(())
    }

    /// `GET /session/status`: the sessions that are not idle (idle ones
    /// are absent).
    pub async fn status(&self) -> Result<BTreeMap<String, SessionState>, OpencodeError> {
        let body = self
            .send_json(
                self.request(reqwest::Method::GET, "/session/status", true),
                REQUEST_TIMEOUT,
            )
            .await?;
        parse_status(&body).ok_or_else(|| self.bad_answer(format!("the status is {body}")))
    }

    /// `GET /session/{id}/message`: the session's messages, oldest first.
    pub async fn messages(&self, session: &str) -> Result<Vec<Value>, OpencodeError> {
        let path = format!("/session/{}/message", segment(session));
        match self
            .send_json(
                self.request(reqwest::Method::GET, &path, true),
                REQUEST_TIMEOUT,
            )
            .await?
        {
            Value::Array(messages) => Ok(messages),
            other => Err(self.bad_answer(format!("the messages are {other}"))),
        }
    }

    /// `POST /session/{id}/abort`: stop whatever the session is doing.
    pub async fn abort(&self, session: &str) -> Result<bool, OpencodeError> {
        let path = format!("/session/{}/abort", segment(session));
        let body = self
            .send_json(
                self.request(reqwest::Method::POST, &path, true),
                REQUEST_TIMEOUT,
            )
            .await?;
        Ok(body.as_bool().unwrap_or(false))
    }

    /// `GET /event`: the server's event stream (no overall timeout; the
    /// caller reads it as long as it lives). A non-success status is an
    /// error.
    pub async fn open_events(&self) -> Result<reqwest::Response, OpencodeError> {
        let request = self
            .request(reqwest::Method::GET, "/event", true)
            .header(reqwest::header::ACCEPT, "text/event-stream");
        let response = request.send().await.map_err(|e| self.classify(&e))?;
        self.check(response).await
    }

    /// An error's text with every form of the password removed.
    pub fn scrub(&self, text: &str) -> String {
        self.scrubber.scrub_str(text)
    }

    fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        scoped: bool,
    ) -> reqwest::RequestBuilder {
        let mut url = format!("{}{path}", self.base);
        if scoped && let Some(dir) = &self.directory {
            url.push_str("?directory=");
            url.extend(url::form_urlencoded::byte_serialize(dir.as_bytes()));
        }
        let mut request = self.http.request(method, url);
        if let Some(auth) = &self.authorization {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        request
    }

    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        timeout: Duration,
    ) -> Result<reqwest::Response, OpencodeError> {
        let response = request
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| self.classify(&e))?;
        self.check(response).await
    }

    async fn send_json(
        &self,
        request: reqwest::RequestBuilder,
        timeout: Duration,
    ) -> Result<Value, OpencodeError> {
        let response = self.send(request, timeout).await?;
        let bytes = match read_at_most(response, self.limits.max_body_bytes).await {
            Ok(bytes) => bytes,
            Err(BodyError::TooLarge(max)) => {
                return Err(self.bad_answer(format!(
                    "the answer is larger than {max} bytes (RTC_MAX_UPSTREAM_BODY_BYTES)"
                )));
            }
            Err(BodyError::Transport(e)) => return Err(self.classify(&e)),
        };
        serde_json::from_slice(&bytes).map_err(|e| self.bad_answer(format!("not JSON ({e})")))
    }

    /// The response, or the error its status means.
    async fn check(&self, response: reqwest::Response) -> Result<reqwest::Response, OpencodeError> {
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let url = self.base.clone();
        if status == reqwest::StatusCode::UNAUTHORIZED {
            return Err(OpencodeError::AuthenticationFailed { url });
        }
        // An error's text is quoted in part only: read a little of it.
        let body = read_at_most(response, 64 * 1024).await.unwrap_or_default();
        let text = String::from_utf8_lossy(&body).into_owned();
        let message = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| error_message(&v))
            .unwrap_or(text);
        let message = self.scrub(&truncate(message.trim()));
        if status == reqwest::StatusCode::NOT_FOUND {
            return Err(OpencodeError::NotFound { url, message });
        }
        Err(OpencodeError::Http {
            url,
            status: status.as_u16(),
            message,
        })
    }

    /// What a failed request means: blocked, unreachable, or a broken answer.
    fn classify(&self, e: &reqwest::Error) -> OpencodeError {
        let url = self.base.clone();
        if let Some(blocked) = net_guard::blocked_host(e) {
            return OpencodeError::Blocked {
                url,
                reason: blocked.to_string(),
            };
        }
        if e.is_connect() || e.is_timeout() {
            return OpencodeError::Unreachable {
                url,
                reason: self.scrub(&unreachable_reason(e)),
            };
        }
        if e.is_decode() || e.is_body() {
            return self.bad_answer(format!("the answer broke off ({})", root_cause(e)));
        }
        OpencodeError::Unreachable {
            url,
            reason: self.scrub(&root_cause(e)),
        }
    }

    fn bad_answer(&self, detail: String) -> OpencodeError {
        OpencodeError::BadAnswer {
            url: self.base.clone(),
            detail: self.scrub(&truncate(&detail)),
        }
    }
}

/// A session id as one path segment (ids are `ses_…`, but a stored id is
/// never trusted to be one).
fn segment(id: &str) -> String {
    url::form_urlencoded::byte_serialize(id.as_bytes()).collect()
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// "connection refused", "connection timed out", … from an error's chain.
fn unreachable_reason(e: &reqwest::Error) -> String {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = current {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
                std::io::ErrorKind::TimedOut => "connection timed out".to_owned(),
                std::io::ErrorKind::ConnectionReset => "connection reset".to_owned(),
                _ => io.to_string(),
            };
        }
        current = err.source();
    }
    if e.is_timeout() {
        if e.is_connect() {
            return "connection timed out".to_owned();
        }
        return "no answer in time".to_owned();
    }
    root_cause(e)
}

/// The innermost error's text (reqwest's own text repeats the URL).
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last = e;
    while let Some(next) = last.source() {
        last = next;
    }
    last.to_string()
}
