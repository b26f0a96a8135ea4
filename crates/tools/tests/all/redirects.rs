//! Requests that carry configured headers (where secrets go) never follow
//! a redirect to another origin, for HTTP tools, MCP streamable HTTP and
//! web search; within the origin, redirects are still followed. Two local
//! servers on different ports are two origins.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::any;
use rtc_protocol::{HttpToolConfig, McpTransport};
use rtc_tools::http_exec::{CallSecrets, HttpExecutor, HttpToolError};
use rtc_tools::mcp::{McpConnector, ResolvedHeaders};
use rtc_tools::net_guard::AddressPolicy;
use rtc_tools::web_search::{EngineConfig, EngineKind, SearchQuery, WebSearch};
use serde_json::{Map, Value, json};

const CODES: [u16; 5] = [301, 302, 303, 307, 308];
const SECRET: &str = "sk-redirect-canary";

/// One request a server saw: its path, its key header (`x-api-key`, or
/// Bing's `ocp-apim-subscription-key`), its body.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    key: Option<String>,
    body: String,
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// A server that records every request. `/to/{code}/{rest}` answers `code`
/// with `Location: {target}/{rest}` (`target` defaults to the server
/// itself); anything else answers `{"key": <x-api-key or null>}`.
async fn server(target: Option<&str>) -> (String, Log) {
    let log = Log::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let target = target.map_or_else(|| base.clone(), str::to_owned);
    let app = axum::Router::new()
        .route(
            "/{*path}",
            any(
                |State((log, target)): State<(Log, String)>,
                 Path(path): Path<String>,
                 headers: HeaderMap,
                 body: String| async move {
                    let key = ["x-api-key", "ocp-apim-subscription-key"]
                        .iter()
                        .find_map(|name| headers.get(*name))
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    log.lock().unwrap().push(Seen {
                        path: path.clone(),
                        key: key.clone(),
                        body,
                    });
                    let mut parts = path.splitn(3, '/');
                    if let (Some("to"), Some(code), Some(rest)) =
                        (parts.next(), parts.next(), parts.next())
                    {
                        let code = StatusCode::from_u16(code.parse().unwrap()).unwrap();
                        return (code, [(header::LOCATION, format!("{target}/{rest}"))])
                            .into_response();
                    }
                    axum::Json(json!({"key": key})).into_response()
                },
            ),
        )
        .with_state((log.clone(), target));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, log)
}

fn tool(url: String, headers: &[(&str, &str)]) -> HttpToolConfig {
    let headers: BTreeMap<&str, &str> = headers.iter().copied().collect();
    serde_json::from_value(json!({
        "method": "POST",
        "url": url,
        "headers": headers,
        "body": {"order": "{{order}}"},
        "timeoutMs": 5_000
    }))
    .unwrap()
}

async fn run(exec: &HttpExecutor, cfg: &HttpToolConfig) -> Result<Value, HttpToolError> {
    let args: Map<String, Value> = json!({"order": "A-1"}).as_object().unwrap().clone();
    let secrets = CallSecrets(BTreeMap::from([(
        "secret__k".to_owned(),
        SECRET.to_owned(),
    )]));
    exec.execute(cfg, &args, &BTreeMap::new(), &secrets).await
}

#[tokio::test]
async fn http_tools_with_headers_do_not_follow_cross_origin_redirects() {
    let (other, other_log) = server(None).await;
    let (origin, origin_log) = server(Some(&other)).await;
    let exec = HttpExecutor::new(AddressPolicy::AllowPrivate, 1 << 20).unwrap();
    let with_key = [("X-Api-Key", "{{secret__k}}")];
    for code in CODES {
        let cfg = tool(format!("{origin}/to/{code}/landing"), &with_key);
        let err = run(&exec, &cfg).await.unwrap_err();
        assert_eq!(
            err,
            HttpToolError::CrossOriginRedirect {
                status: code,
                location: format!("{other}/landing"),
            }
        );
        assert!(
            err.to_string().contains(&format!("{other}/landing")),
            "{err}"
        );
    }
    assert_eq!(origin_log.lock().unwrap().len(), CODES.len());
    let leaked = other_log.lock().unwrap().clone();
    assert!(
        leaked.is_empty(),
        "the other origin was contacted: {leaked:?}"
    );

    // Without configured headers there is nothing to leak: followed.
    let cfg = tool(format!("{origin}/to/307/landing"), &[]);
    assert_eq!(run(&exec, &cfg).await.unwrap(), json!({"key": null}));
    assert_eq!(other_log.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn http_tools_follow_redirects_within_the_origin() {
    let (origin, log) = server(None).await;
    let exec = HttpExecutor::new(AddressPolicy::AllowPrivate, 1 << 20).unwrap();
    for code in CODES {
        let cfg = tool(
            format!("{origin}/to/{code}/to/{code}/final"),
            &[("X-Api-Key", "{{secret__k}}")],
        );
        // The echoed key is scrubbed from the result.
        assert_eq!(
            run(&exec, &cfg).await.unwrap(),
            json!({"key": "[redacted]"}),
            "HTTP {code}"
        );
        let seen = log.lock().unwrap().drain(..).collect::<Vec<_>>();
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert_eq!(seen[2].path, "final");
        assert!(seen.iter().all(|s| s.key.as_deref() == Some(SECRET)));
        let body_kept = seen[2].body.contains("A-1");
        assert_eq!(
            body_kept,
            code == 307 || code == 308,
            "HTTP {code}: {seen:?}"
        );
    }
}

#[tokio::test]
async fn mcp_servers_are_not_followed_to_another_origin() {
    let (other, other_log) = server(None).await;
    let (origin, origin_log) = server(Some(&other)).await;
    let connector = McpConnector {
        policy: AddressPolicy::AllowPrivate,
        timeout: Duration::from_secs(5),
    };
    let headers = ResolvedHeaders(BTreeMap::from([(
        "X-Api-Key".to_owned(),
        SECRET.to_owned(),
    )]));
    for code in [307, 308] {
        let transport = McpTransport::StreamableHttp {
            url: format!("{origin}/to/{code}/mcp"),
            headers: BTreeMap::new(),
        };
        let result = connector.list_tools(&transport, &headers).await;
        assert!(result.is_err(), "HTTP {code}: {result:?}");
    }
    assert!(!origin_log.lock().unwrap().is_empty());
    let leaked = other_log.lock().unwrap().clone();
    assert!(
        leaked.is_empty(),
        "the other origin was contacted: {leaked:?}"
    );
}

#[tokio::test]
async fn search_engine_keys_are_not_followed_to_another_origin() {
    let (other, other_log) = server(None).await;
    let (origin, _) = server(Some(&other)).await;
    rtc_tools::init_tls();
    let engines: Vec<EngineConfig> = CODES
        .iter()
        .map(|code| EngineConfig {
            kind: EngineKind::Bing,
            base_url: Some(format!("{origin}/to/{code}/bing")),
            api_key: Some(SECRET.to_owned()),
        })
        .collect();
    let search = WebSearch::new(
        &engines,
        AddressPolicy::AllowPrivate,
        Duration::from_secs(5),
    )
    .unwrap();
    let query = SearchQuery {
        query: "tides".into(),
        max_results: 5,
        time_range: None,
    };
    assert!(search.search(&query).await.is_err());
    let leaked = other_log.lock().unwrap().clone();
    assert!(
        leaked.is_empty(),
        "the other origin was contacted: {leaked:?}"
    );

    // An engine without a key follows the redirect as before.
    let keyless = WebSearch::new(
        &[EngineConfig {
            kind: EngineKind::Searxng,
            base_url: Some(format!("{origin}/to/302/searx")),
            api_key: None,
        }],
        AddressPolicy::AllowPrivate,
        Duration::from_secs(5),
    )
    .unwrap();
    let _ = keyless.search(&query).await;
    let followed = other_log.lock().unwrap().clone();
    assert_eq!(followed.len(), 1, "{followed:?}");
    assert_eq!(followed[0].path, "searx");
}
