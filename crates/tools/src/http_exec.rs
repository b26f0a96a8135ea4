//! Executes HTTP tool resources (R-TR-1): fills `{{param}}`,
//! `{{input__name}}` and (in headers only) `{{secret__name}}`, sends the
//! request through the guarded client, and caps time and response size.
//! Values go into the URL's path, query and fragment only, encoded so that
//! they cannot change its shape: a path value stays inside its segment.
//! A request with configured headers (where secrets and template inputs
//! go) follows redirects only within its origin: a redirect elsewhere is
//! reported to the model, never followed with those headers.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rtc_core::tool_rules::url_origin_len;
use rtc_protocol::{HttpMethod, HttpToolConfig};
use serde_json::{Map, Value};

use crate::net_guard::{
    AddressPolicy, blocked_host, check_url, cross_origin_redirect, guarded_client,
    guarded_client_same_origin,
};
use crate::scrub::Scrubber;

/// Upper bound of any HTTP tool call (tools set their own, lower, limit).
const MAX_TIMEOUT_SECS: u64 = 300;

/// Largest response body read from an HTTP tool by default.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// Secret values for one call, keyed by their `secret__` name. Its `Debug`
/// shows names only.
#[derive(Default)]
pub struct CallSecrets(pub BTreeMap<String, String>);

impl CallSecrets {
    /// The scrubber of these values (see [`crate::scrub`]).
    pub fn scrubber(&self) -> Scrubber {
        Scrubber::new(self.0.values())
    }
}

impl std::fmt::Debug for CallSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

/// Why an HTTP tool call failed; every message is safe to show the model
/// (no secret values, no header values).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpToolError {
    #[error("the request URL is not allowed: {0}")]
    Blocked(String),
    #[error("the request could not be built: {0}")]
    Build(String),
    #[error("the request failed: {0}")]
    Send(String),
    #[error("the request timed out after {0:?}")]
    Timeout(Duration),
    #[error("the response is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the service answered HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error(
        "the service redirected (HTTP {status}) to another origin, {location}; the redirect is not followed because the request carries configured headers"
    )]
    CrossOriginRedirect { status: u16, location: String },
}

/// Sends HTTP tool requests.
#[derive(Clone, Debug)]
pub struct HttpExecutor {
    policy: AddressPolicy,
    max_response_bytes: usize,
    /// Guarded clients shared by every call (connection reuse); each
    /// request carries its own timeout. `client` follows redirects anywhere
    /// and serves requests without configured headers; `same_origin`
    /// serves the others.
    client: reqwest::Client,
    same_origin: reqwest::Client,
}

impl HttpExecutor {
    pub fn new(policy: AddressPolicy, max_response_bytes: usize) -> Result<Self, HttpToolError> {
        let timeout = Duration::from_secs(MAX_TIMEOUT_SECS);
        let build = |e: reqwest::Error| HttpToolError::Build(e.to_string());
        Ok(Self {
            policy,
            max_response_bytes,
            client: guarded_client(policy, timeout).map_err(build)?,
            same_origin: guarded_client_same_origin(policy, timeout).map_err(build)?,
        })
    }

    /// Run one call. `args` are the complete arguments, `inputs` the
    /// template inputs of the binding.
    pub async fn execute(
        &self,
        config: &HttpToolConfig,
        args: &Map<String, Value>,
        inputs: &BTreeMap<String, String>,
        secrets: &CallSecrets,
    ) -> Result<Value, HttpToolError> {
        let timeout = Duration::from_millis(config.timeout_ms);
        let url = render_url(&config.url, |name| lookup(name, args, inputs, None))?;
        let parsed =
            url::Url::parse(&url).map_err(|e| HttpToolError::Build(format!("invalid URL: {e}")))?;
        check_url(&parsed, self.policy).map_err(|e| HttpToolError::Blocked(e.to_string()))?;
        let method = match config.method {
            HttpMethod::Get => reqwest::Method::GET,
            HttpMethod::Post => reqwest::Method::POST,
            HttpMethod::Put => reqwest::Method::PUT,
            HttpMethod::Patch => reqwest::Method::PATCH,
            HttpMethod::Delete => reqwest::Method::DELETE,
        };
        let client = if config.headers.is_empty() {
            &self.client
        } else {
            &self.same_origin
        };
        let mut req = client.request(method, parsed).timeout(timeout);
        for (name, template) in &config.headers {
            let value = render(template, |n| lookup(n, args, inputs, Some(secrets)));
            let n = HeaderName::try_from(name.as_str())
                .map_err(|_| HttpToolError::Build(format!("invalid header name `{name}`")))?;
            let mut v = HeaderValue::try_from(value).map_err(|_| {
                HttpToolError::Build(format!("header `{name}` has an invalid value"))
            })?;
            v.set_sensitive(true);
            req = req.header(n, v);
        }
        if let Some(body) = &config.body {
            req = req.json(&render_json(body, args, inputs));
        }
        let scrubber = secrets.scrubber();
        let resp = req.send().await.map_err(|e| {
            if e.is_timeout() {
                HttpToolError::Timeout(timeout)
            } else {
                HttpToolError::Send(describe(&e))
            }
        })?;
        let status = resp.status();
        if !config.headers.is_empty()
            && let Some(target) = cross_origin_redirect(&resp)
        {
            return Err(HttpToolError::CrossOriginRedirect {
                status: status.as_u16(),
                location: scrubber.scrub_str(target.as_str()),
            });
        }
        let bytes = read_capped(resp, self.max_response_bytes, timeout).await?;
        let text = String::from_utf8_lossy(&bytes);
        let value =
            serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(text.to_string()));
        if !status.is_success() {
            let body: String = scrubber.scrub_str(&text).chars().take(1_000).collect();
            return Err(HttpToolError::Status {
                status: status.as_u16(),
                body,
            });
        }
        let mut value = value;
        scrubber.scrub_value(&mut value);
        Ok(value)
    }
}

/// The error chain of a reqwest error, without the URL (it may carry arguments).
fn describe(e: &reqwest::Error) -> String {
    if let Some(blocked) = blocked_host(e) {
        return blocked.to_string();
    }
    let mut out = String::from("connection failed");
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        out = s.to_string();
        source = s.source();
    }
    out
}

async fn read_capped(
    resp: reqwest::Response,
    max: usize,
    timeout: Duration,
) -> Result<Vec<u8>, HttpToolError> {
    use crate::upstream::{BodyError, read_at_most};
    match tokio::time::timeout(timeout, read_at_most(resp, max)).await {
        Err(_) => Err(HttpToolError::Timeout(timeout)),
        Ok(Ok(body)) => Ok(body),
        Ok(Err(BodyError::TooLarge(max))) => Err(HttpToolError::TooLarge(max)),
        Ok(Err(BodyError::Transport(e))) => Err(HttpToolError::Send(describe(&e))),
    }
}

/// The text of a placeholder: arguments, template inputs, and secrets where
/// allowed.
fn lookup(
    name: &str,
    args: &Map<String, Value>,
    inputs: &BTreeMap<String, String>,
    secrets: Option<&CallSecrets>,
) -> Option<String> {
    if let Some(input) = name.strip_prefix("input__") {
        inputs.get(input).cloned()
    } else if name.starts_with("secret__") {
        secrets.and_then(|s| s.0.get(name).cloned())
    } else {
        args.get(name).map(|v| match v {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        })
    }
}

/// The URL of a call. Its scheme and authority are the template's own (a
/// placeholder there, refused at save time since, is refused here too). A
/// value in the path is percent-encoded as the text of one segment, so a
/// `/`, `\`, `?` or `#` in it cannot add a segment, a query or a fragment,
/// and a segment that would become `.` or `..` is refused (no encoding
/// survives URL parsing there). Values in the query and fragment are
/// encoded as query components.
fn render_url(
    template: &str,
    fill: impl Fn(&str) -> Option<String>,
) -> Result<String, HttpToolError> {
    let (origin, rest) = template.split_at(url_origin_len(template));
    if origin.contains("{{") {
        return Err(HttpToolError::Build(
            "the URL has a placeholder in its scheme or host, which is not allowed".into(),
        ));
    }
    let (path, tail) = rest.split_at(rest.find(['?', '#']).unwrap_or(rest.len()));
    let mut out = origin.to_owned();
    for (i, segment) in path.split(['/', '\\']).enumerate() {
        if i > 0 {
            out.push('/');
        }
        let rendered = render(segment, |n| fill(n).map(|v| encode_path_segment(&v)));
        if segment.contains("{{") && is_dot_segment(&rendered) {
            return Err(HttpToolError::Build(format!(
                "the value filling the URL path segment `{segment}` may not be `.` or `..`"
            )));
        }
        out.push_str(&rendered);
    }
    out.push_str(&render(tail, |n| {
        fill(n).map(|v| url::form_urlencoded::byte_serialize(v.as_bytes()).collect())
    }));
    Ok(out)
}

/// Every byte but the unreserved ones (`A-Z a-z 0-9 - . _ ~`) as `%XX`.
fn encode_path_segment(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A segment URL parsing removes or turns into "go up one".
fn is_dot_segment(segment: &str) -> bool {
    matches!(
        segment.to_ascii_lowercase().as_str(),
        "." | ".." | "%2e" | ".%2e" | "%2e." | "%2e%2e"
    )
}

fn render(template: &str, f: impl Fn(&str) -> Option<String>) -> String {
    rtc_core::placeholders::render(template, f)
}

/// Fill a JSON body: a string that is exactly one `{{param}}` becomes the
/// argument's JSON value (keeping numbers numbers); other strings interpolate.
fn render_json(
    body: &Value,
    args: &Map<String, Value>,
    inputs: &BTreeMap<String, String>,
) -> Value {
    match body {
        Value::String(s) => {
            let trimmed = s.trim();
            if let Some(name) = trimmed
                .strip_prefix("{{")
                .and_then(|r| r.strip_suffix("}}"))
                .map(str::trim)
                && !name.contains("{{")
                && !name.starts_with("input__")
                && let Some(v) = args.get(name)
            {
                return v.clone();
            }
            Value::String(render(s, |n| lookup(n, args, inputs, None)))
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| render_json(v, args, inputs)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    (
                        render(k, |n| lookup(n, args, inputs, None)),
                        render_json(v, args, inputs),
                    )
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
#[path = "http_exec_tests.rs"]
mod tests;
