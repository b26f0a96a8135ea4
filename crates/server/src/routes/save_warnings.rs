//! What a save says about a URL the outbound guard would refuse. HTTP
//! tools and operator-run OpenCode servers are saved with a warning (never
//! stored), so an operator can finish the setup (say, list the address in
//! `RTC_OUTBOUND_ALLOW`) but learns now what the first call would
//! otherwise tell them; MCP servers and realtime and speech interfaces,
//! which are connected to at once, are refused (422 `private_address`).

use rtc_protocol::{SaveWarning, TaskBackend, Tool};

use crate::{ApiError, ApiResult, AppState};

/// Refuse (422 `private_address` naming `field`) a URL the guard would
/// refuse; a WebSocket URL is judged as the HTTP URL it upgrades from. An
/// unparsable URL is left to the resource's own rules.
pub(crate) fn refuse_private_url(s: &AppState, field: &str, raw: &str) -> ApiResult<()> {
    let as_http = raw
        .replacen("wss://", "https://", 1)
        .replacen("ws://", "http://", 1);
    let Ok(parsed) = url::Url::parse(&as_http) else {
        return Ok(());
    };
    rtc_tools::net_guard::check_url_at_save(&parsed, s.runtime.address_policy()).map_err(|e| {
        ApiError::unprocessable(
            "private_address",
            field,
            format!("`{field}`: {e}; this server does not reach private networks"),
        )
    })
}

/// A URL template as the guard would see it: `None` when a placeholder
/// sits in the scheme or host (only a call knows where it goes), else the
/// URL with every placeholder in its path and query filled in.
fn fixed_url(template: &str) -> Option<url::Url> {
    let (scheme, rest) = template.split_once("://")?;
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    if scheme.contains("{{") || rest[..authority_end].contains("{{") {
        return None;
    }
    let mut filled = String::with_capacity(template.len());
    let mut tail = template;
    while let Some(start) = tail.find("{{") {
        filled.push_str(&tail[..start]);
        match tail[start..].find("}}") {
            Some(end) => {
                filled.push('x');
                tail = &tail[start + end + 2..];
            }
            None => {
                tail = &tail[start..];
                break;
            }
        }
    }
    filled.push_str(tail);
    url::Url::parse(&filled).ok()
}

/// The warning for `field`'s URL, when the guard would refuse its calls.
async fn guarded_url(s: &AppState, field: &str, template: &str, what: &str) -> Option<SaveWarning> {
    let url = fixed_url(template)?;
    let refusal = rtc_tools::net_guard::refusal_at_save(&url, s.runtime.address_policy()).await?;
    Some(SaveWarning {
        code: "private_address".to_owned(),
        field: field.to_owned(),
        message: format!("`{field}`: {refusal}; until then every {what} fails"),
    })
}

/// What saving `tool` should warn about.
pub(crate) async fn for_tool(s: &AppState, tool: &Tool) -> Vec<SaveWarning> {
    let Some(http) = &tool.http else {
        return Vec::new();
    };
    guarded_url(s, "http.url", &http.url, "call of this tool")
        .await
        .into_iter()
        .collect()
}

/// What saving `backend` should warn about.
pub(crate) async fn for_task_backend(s: &AppState, backend: &TaskBackend) -> Vec<SaveWarning> {
    let Some(base_url) = backend
        .opencode
        .as_ref()
        .and_then(|o| o.base_url.as_deref())
    else {
        return Vec::new();
    };
    guarded_url(s, "opencode.baseUrl", base_url, "task of this backend")
        .await
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::fixed_url;

    #[test]
    fn placeholders_in_the_path_are_filled_and_in_the_host_skip_the_check() {
        let url = fixed_url("http://10.0.0.7:8080/items/{{id}}?q={{input__q}}").unwrap();
        assert_eq!(url.as_str(), "http://10.0.0.7:8080/items/x?q=x");
        assert_eq!(fixed_url("https://{{input__host}}/x"), None);
        assert_eq!(fixed_url("{{input__base}}/x"), None);
        assert_eq!(
            fixed_url("http://127.0.0.1/a{{b").unwrap().as_str(),
            "http://127.0.0.1/a%7B%7Bb"
        );
    }
}
