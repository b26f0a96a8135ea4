//! Workspace isolation (issue 12's campaign, R-API-3): workspace A gets one
//! of everything the API has; then every operation of `/openapi.json` is
//! called with workspace B's key on A's real ids. By-id calls answer 404
//! with the JSON error shape, exactly as for an id that does not exist
//! (no oracle); lists hold nothing of A; writes change nothing of A (A's
//! view is read before and after); admin-only operations answer 403. A
//! session's client token opens neither another session of A nor one of
//! B. The operations come from the document, so a new endpoint is probed
//! without editing this file, and one this file cannot classify fails it.
//! The secret canary campaign is in `isolation/canary.rs`.

mod canary;
mod echo;
mod fixture;
mod probe;

use std::collections::BTreeMap;

use reqwest::Method;
use rtc_testkit::{Engine, MockLlm};
use serde_json::{Value, json};

use crate::conversation::server;
use crate::harness::Server;
use fixture::{Fixture, fixture, id, model};
use probe::{Tally, expand, has_params, kind_of, send};

/// Operations no workspace data can reach: the probes of a load balancer
/// and the metrics endpoint, public by design. They are still called (with
/// no token) and must hold nothing of A.
const PUBLIC: &[&str] = &["/healthz", "/readyz", "/metrics"];

/// Paths under which every operation needs the admin token: B's key gets
/// 403 `admin_required`.
const ADMIN_ONLY: &[&str] = &["/v1/workspaces"];

/// Server-wide operations any workspace key may call (the model
/// providers): B gets an answer, which must hold nothing of A's.
const SERVER_WIDE: &[&str] = &["/v1/providers", "/v1/providers/{name}/check"];

/// A by-id write needs a body the server would accept for an id of B's
/// own, so that the answer is about the id, not the body. A new write
/// operation gets `{}` until a body is added here (the test then fails with
/// the 4xx the body earned, naming the operation).
fn body_for(method: &Method, path: &str) -> Option<Value> {
    let body = match (method.as_str(), path) {
        ("GET" | "DELETE", _) => return None,
        ("PUT" | "POST", p) if p.contains("/tests") && !p.ends_with("/run") => {
            json!({"name": "b test", "turns": ["hi"]})
        }
        ("PUT", p) if p.starts_with("/v1/tools/") => {
            json!({"name": "b_tool", "type": "client", "client": {"functionName": "g"}})
        }
        ("PUT", p) if p.starts_with("/v1/mcp-servers/") => {
            json!({"name": "b", "transport": {"type": "streamableHttp", "url": "https://mcp.example.com/mcp"}})
        }
        ("PUT", p) if p.starts_with("/v1/secrets/") => json!({"value": "b-value-0123456789"}),
        ("PUT", p) if p.starts_with("/v1/workflows/") => b_workflow(),
        ("PUT", p) if p.starts_with("/v1/speech-interfaces/") => b_speech_interface(),
        ("PUT", p) if p.starts_with("/v1/task-backends/") => {
            json!({"name": "b", "type": "reasoner", "reasoner": {}})
        }
        ("PUT", _) => json!({"name": "b"}),
        ("POST", p) if p.ends_with("/messages") => json!({"text": "hello from B"}),
        ("POST", p) if p.ends_with("/end") => json!({"reason": "B was here"}),
        ("POST", p) if p.ends_with("/answers") => json!({"answers": ["1"]}),
        ("POST", p) if p.ends_with("/resume") => json!({"maxTurns": 9}),
        _ => json!({}),
    };
    Some(body)
}

/// A speech interface any workspace may save: no key.
fn b_speech_interface() -> Value {
    json!({"name": "b", "kind": "stt", "connection": {"dialect": "openai",
        "url": "https://api.openai.com/v1", "model": "whisper-1"}})
}

/// A workflow any workspace may save: one agent stage.
fn b_workflow() -> Value {
    json!({"specVersion": 4, "name": "b", "startNodeId": "talk",
        "nodes": [{"id": "talk", "type": "agent", "prompt": "Talk"}]})
}

/// The operations of the document: `(path, method)`.
async fn operations(srv: &Server) -> anyhow::Result<Vec<(String, Method)>> {
    let doc: Value = srv
        .client
        .get(format!("{}/openapi.json", srv.process.base_url))
        .send()
        .await?
        .json()
        .await?;
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        for (method, _) in item.as_object().into_iter().flatten() {
            if let Ok(m) = Method::from_bytes(method.to_ascii_uppercase().as_bytes())
                && ["GET", "PUT", "POST", "DELETE", "PATCH"].contains(&m.as_str())
            {
                out.push((path.clone(), m));
            }
        }
    }
    anyhow::ensure!(
        out.len() > 40,
        "the document lists {} operations",
        out.len()
    );
    Ok(out)
}

/// A's view of itself: every GET of the document on A's ids (streams
/// left out), and every list.
async fn snapshot(
    srv: &Server,
    fx: &Fixture,
    ops: &[(String, Method)],
) -> anyhow::Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let key = fx.a.token.clone().unwrap_or_default();
    for (template, method) in ops {
        if *method != Method::GET
            || PUBLIC.contains(&template.as_str())
            || ADMIN_ONLY.iter().any(|p| template.starts_with(p))
            || template.ends_with("/events")
            || template.ends_with("/ws")
        {
            continue;
        }
        for path in expand(template, &|k| fx.ids.get(k).cloned().unwrap_or_default()) {
            let path = with_query(&path, fx);
            let r = send(srv, method, &path, Some(&key), false, None).await?;
            out.insert(path, format!("{} {}", r.status, r.text));
        }
    }
    Ok(out)
}

/// Collection reads that answer a report rather than a `data` list (the
/// workspace's own figures, nothing of another's).
const REPORTS: &[&str] = &["/v1/usage", "/v1/me"];

/// Query parameters some lists require.
fn with_query(path: &str, fx: &Fixture) -> String {
    if path == "/v1/memories" {
        format!("{path}?userId={}", fx.user)
    } else {
        path.to_owned()
    }
}

/// Made-up ids of each kind, for the "no oracle" comparison.
fn fake(kind: &str) -> String {
    match kind {
        "secrets" => "secret__does_not_exist".to_owned(),
        other => format!("nope-{}", other.trim_end_matches('s')),
    }
}

/// B's key on one by-id operation: 404 with the JSON error shape, nothing
/// of A in the body, and the same answer as for made-up ids.
async fn probe_by_id(
    srv: &Server,
    fx: &Fixture,
    t: &mut Tally,
    template: &str,
    method: &Method,
) -> anyhow::Result<()> {
    let key = fx.b.token.clone().unwrap_or_default();
    let body = body_for(method, template);
    // PUT on a secret's name stores B's own secret of that name (a name is
    // not an id: each workspace has its own namespace); A's stays as it was.
    let upsert = *method == Method::PUT && template.starts_with("/v1/secrets/");
    let faked = expand(template, &|k| vec![fake(k)]).remove(0);
    let control = if upsert {
        None
    } else {
        Some(
            t.probe(srv, method, &faked, Some(&key), false, body.as_ref())
                .await?,
        )
    };
    // Every combination of A's ids (compared with the made-up ones); and,
    // where B has a session, B's own session with A's ids below it
    // (`/v1/sessions/{B}/goals/{A's goal}`: B knows its session exists, so
    // only the 404 counts).
    let mut paths: Vec<(String, bool)> =
        expand(template, &|k| fx.ids.get(k).cloned().unwrap_or_default())
            .into_iter()
            .map(|p| (p, true))
            .collect();
    if template.starts_with("/v1/sessions/{") && template.matches('{').count() > 1 {
        paths.extend(
            expand(template, &|k| match k {
                "sessions" => vec![fx.b_session.clone()],
                other => fx.ids.get(other).cloned().unwrap_or_default(),
            })
            .into_iter()
            .map(|p| (p, false)),
        );
    }
    for (path, compare) in paths {
        let r = t
            .probe(srv, method, &path, Some(&key), false, body.as_ref())
            .await?;
        let what = || format!("B {method} {path} (A's ids) → {} {}", r.status, r.text);
        if upsert {
            t.check(r.status == 201, what);
            let gone = fx.b.delete(&path).await?;
            t.check(gone.status == 204, || {
                format!("B deletes its own {path} → {} {}", gone.status, gone.text)
            });
            continue;
        }
        t.check(r.status == 404 && r.is_json_error("not_found"), what);
        t.check(fx.holds_a(&r.text, false).is_none(), || {
            format!("B {method} {path}: the error shows A's data: {}", r.text)
        });
        let Some(control) = control.as_ref().filter(|_| compare) else {
            continue;
        };
        // Indistinguishable from ids that do not exist.
        let mut msg = r.body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        for (kind, ids) in &fx.ids {
            for real in ids {
                msg = msg.replace(real.as_str(), &fake(kind));
            }
        }
        msg = msg.replace(&fx.b_session, &fake("sessions"));
        t.check(
            control.status == r.status
                && control.body["error"]["code"] == r.body["error"]["code"]
                && control.body["error"]["message"].as_str() == Some(msg.as_str()),
            || {
                format!(
                    "B {method} {path} answers unlike made-up ids: {} {} vs {} {}",
                    r.status, r.text, control.status, control.text
                )
            },
        );
    }
    Ok(())
}

/// Collection writes of B that name A's resources: `(body, status)`; a 201
/// is B's own resource (ids chosen by clients are per workspace, so A's id
/// is free in B: no oracle) and is deleted again at once.
fn collection_writes(fx: &Fixture, method: &Method, template: &str) -> Option<Vec<(Value, u16)>> {
    let first = |k: &str| {
        fx.ids
            .get(k)
            .and_then(|v| v.first())
            .cloned()
            .unwrap_or_default()
    };
    let writes = match (method.as_str(), template) {
        ("POST", "/v1/mcp-servers") => vec![(
            json!({"name": "b-mcp", "transport": {"type": "streamableHttp", "url": "https://mcp.example.com/mcp", "headers": {"A": "{{secret__a_only}}"}}}),
            422,
        )],
        ("POST", "/v1/tools") => vec![
            (
                json!({"name": "b", "type": "mcp", "mcp": {"serverId": first("mcp-servers"), "remoteToolName": "echo_headers"}}),
                422,
            ),
            (
                json!({"name": "b", "type": "http", "http": {"method": "GET", "url": "https://x.example.com", "headers": {"K": "{{secret__a_only}}"}}}),
                422,
            ),
            (
                json!({"id": first("tools"), "name": "b", "type": "client", "client": {"functionName": "b"}}),
                201,
            ),
        ],
        ("POST", "/v1/task-backends") => vec![
            (
                json!({"name": "b", "type": "reasoner", "reasoner": {"toolBindings": [{"toolId": first("tools")}]}}),
                422,
            ),
            (
                json!({"name": "b", "type": "opencode", "opencode": {"baseUrl": "http://127.0.0.1:9", "password": "{{secret__a_only}}", "model": {"providerID": "p", "modelID": "m"}}}),
                422,
            ),
            (
                json!({"id": first("task-backends"), "name": "b", "type": "reasoner", "reasoner": {}}),
                201,
            ),
        ],
        ("POST", "/v1/realtime-interfaces") => {
            vec![(
                json!({"id": first("realtime-interfaces"), "name": "b"}),
                201,
            )]
        }
        ("POST", "/v1/speech-interfaces") => {
            let mut with_key = b_speech_interface();
            with_key["connection"]["apiKey"] = json!("{{secret__a_only}}");
            let mut own_id = b_speech_interface();
            own_id["id"] = json!(first("speech-interfaces"));
            vec![(with_key, 422), (own_id, 201)]
        }
        ("POST", "/v1/assistants") => vec![
            (
                json!({"name": "b", "speech": {"sttInterfaceId": first("speech-interfaces"),
                    "ttsInterfaceId": first("speech-interfaces")}}),
                422,
            ),
            (
                json!({"name": "b", "toolBindings": [{"toolId": first("tools")}]}),
                422,
            ),
            (
                json!({"name": "b", "runMode": "realtime", "realtimeInterfaceId": first("realtime-interfaces")}),
                422,
            ),
            (
                json!({"name": "b", "taskBackendId": first("task-backends")}),
                422,
            ),
            (json!({"id": first("assistants"), "name": "b"}), 201),
        ],
        ("POST", "/v1/workflows") => {
            let with = |pointer: &str, value: Value| {
                let mut w = b_workflow();
                if let Some(slot) = w.pointer_mut(pointer) {
                    *slot = value;
                }
                w
            };
            let mut realtime = b_workflow();
            realtime["runMode"] = json!("realtime");
            realtime["realtimeInterfaceId"] = json!(first("realtime-interfaces"));
            let mut own_id = b_workflow();
            own_id["id"] = json!(first("workflows"));
            vec![
                (
                    with(
                        "/nodes/0",
                        json!({"id": "talk", "type": "agent", "prompt": "Talk", "toolBindings": [{"toolId": first("tools")}]}),
                    ),
                    400,
                ),
                (
                    with(
                        "/nodes/0",
                        json!({"id": "talk", "type": "transfer", "target": {"type": "assistant", "assistantId": first("assistants")}}),
                    ),
                    400,
                ),
                (realtime, 400),
                (own_id, 201),
            ]
        }
        ("POST", "/v1/sessions") => vec![(json!({"assistantId": first("assistants")}), 422)],
        // Forgets B's memories of that user id (B has none); A's stay.
        ("DELETE", "/v1/memories") => vec![(Value::Null, 0)],
        _ => return None,
    };
    Some(writes)
}

/// The client token of A's first session: its own session opens; no other
/// session (A's second, B's) and nothing outside sessions does, whether
/// the token comes as a bearer header or as `?token=`.
async fn client_token_probes(
    srv: &Server,
    fx: &Fixture,
    ops: &[(String, Method)],
    t: &mut Tally,
) -> anyhow::Result<()> {
    let own = fx.ids["sessions"][0].clone();
    let r = t
        .probe(
            srv,
            &Method::GET,
            &format!("/v1/sessions/{own}"),
            Some(&fx.client_token),
            true,
            None,
        )
        .await?;
    t.check(r.status == 200, || {
        format!(
            "the client token on its own session → {} {}",
            r.status, r.text
        )
    });
    for (template, method) in ops {
        let in_session = template.starts_with("/v1/sessions/{");
        if !(in_session || (*method == Method::GET && !PUBLIC.contains(&template.as_str()))) {
            continue;
        }
        let others = [fx.ids["sessions"][1].clone(), fx.b_session.clone()];
        let mut paths = Vec::new();
        for other in &others {
            paths.extend(expand(template, &|k| match k {
                "sessions" => vec![other.clone()],
                k => fx.ids.get(k).cloned().unwrap_or_else(|| vec![fake(k)]),
            }));
        }
        paths.sort();
        paths.dedup();
        for path in paths {
            let path = with_query(&path, fx);
            let body = body_for(method, &path);
            for query in [true, false] {
                let r = t
                    .probe(
                        srv,
                        method,
                        &path,
                        Some(&fx.client_token),
                        query,
                        body.as_ref(),
                    )
                    .await?;
                t.check(
                    matches!(r.status, 401 | 404)
                        && (r.is_json_error("unauthorized") || r.is_json_error("not_found")),
                    || {
                        format!(
                            "A's client token ({}) {method} {path} → {} {}",
                            if query { "?token=" } else { "bearer" },
                            r.status,
                            r.text
                        )
                    },
                );
            }
        }
    }
    Ok(())
}

#[expect(
    clippy::print_stdout,
    reason = "the campaign prints its numbers (shown with --no-capture)"
)]
async fn every_endpoint(engine: Engine) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let echo = echo::Echo::start().await?;
    let mock = MockLlm::with_recorded_responder(model).await?;
    let Some(srv) = server(engine, &mock).await? else {
        return Ok(());
    };
    let fx = fixture(&srv, &echo).await?;
    let ops = operations(&srv).await?;
    let before = snapshot(&srv, &fx, &ops).await?;
    let key = fx.b.token.clone().unwrap_or_default();
    let mut t = Tally {
        sent: 0,
        probes: 0,
        failures: Vec::new(),
    };
    let mut unclassified = Vec::new();
    let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for (template, method) in &ops {
        let path = template.as_str();
        let kind = if PUBLIC.contains(&path) {
            let r = t.probe(&srv, method, path, None, false, None).await?;
            t.check(
                r.status == 200 && fx.holds_a(&r.text, true).is_none(),
                || {
                    format!(
                        "{method} {path} (public) → {} shows A: {:?}",
                        r.status,
                        fx.holds_a(&r.text, true)
                    )
                },
            );
            "public"
        } else if SERVER_WIDE.contains(&path) {
            let p = path.replace("{name}", "default");
            let r = t.probe(&srv, method, &p, Some(&key), false, None).await?;
            t.check(
                r.status == 200 && fx.holds_a(&r.text, true).is_none(),
                || format!("B {method} {p} (server-wide) → {} {}", r.status, r.text),
            );
            "server-wide"
        } else if ADMIN_ONLY.iter().any(|p| path.starts_with(p)) {
            for p in expand(path, &|k| {
                fx.ids.get(k).cloned().unwrap_or_else(|| vec![fake(k)])
            }) {
                let body = body_for(method, &p);
                let r = t
                    .probe(&srv, method, &p, Some(&key), false, body.as_ref())
                    .await?;
                t.check(r.status == 403 && r.is_json_error("admin_required"), || {
                    format!("B {method} {p} (admin only) → {} {}", r.status, r.text)
                });
            }
            "admin-only"
        } else if has_params(path) {
            let segments: Vec<&str> = path.split('/').collect();
            let unknown: Vec<String> = (0..segments.len())
                .filter(|&i| segments[i].starts_with('{'))
                .map(|i| kind_of(&segments, i))
                .filter(|k| !fx.ids.contains_key(k))
                .collect();
            if !unknown.is_empty() {
                // A new kind of resource: the fixture must create one in A.
                unclassified.push(format!("{method} {path} (no id of A for {unknown:?})"));
                continue;
            }
            probe_by_id(&srv, &fx, &mut t, path, method).await?;
            "by id"
        } else if *method == Method::GET {
            let p = with_query(path, &fx);
            let r = t.probe(&srv, method, &p, Some(&key), false, None).await?;
            t.check(
                r.status == 200
                    && (r.body["data"].is_array() || REPORTS.contains(&path))
                    && fx.holds_a(&r.text, true).is_none(),
                || {
                    format!(
                        "B {method} {p} (list) → {} holds {:?}: {}",
                        r.status,
                        fx.holds_a(&r.text, true),
                        r.text
                    )
                },
            );
            "list"
        } else if let Some(writes) = collection_writes(&fx, method, path) {
            for (body, status) in writes {
                let p = with_query(path, &fx);
                let b = (!body.is_null()).then_some(&body);
                let r = t.probe(&srv, method, &p, Some(&key), false, b).await?;
                let ok = match status {
                    0 => r.status / 100 == 2,
                    s => r.status == s,
                };
                t.check(ok, || {
                    format!("B {method} {p} {body} → {} {}", r.status, r.text)
                });
                if r.status == 201 {
                    let own = format!("{path}/{}", id(&r.body));
                    let gone = fx.b.delete(&own).await?;
                    t.check(gone.status == 204, || {
                        format!("B deletes its own {own} → {} {}", gone.status, gone.text)
                    });
                }
            }
            "collection write"
        } else {
            unclassified.push(format!("{method} {path}"));
            continue;
        };
        *by_kind.entry(kind).or_default() += 1;
    }

    client_token_probes(&srv, &fx, &ops, &mut t).await?;

    let after = snapshot(&srv, &fx, &ops).await?;
    for (path, was) in &before {
        let now = after.get(path).cloned().unwrap_or_default();
        t.check(&now == was, || {
            format!("A's {path} changed during B's probes:\n before {was}\n after  {now}")
        });
    }
    // The question still waits, the session is still active, the goal
    // was not resumed.
    let s =
        fx.a.get(&format!("/v1/sessions/{}", fx.ids["sessions"][0]))
            .await?;
    t.check(s.body["status"] == "active", || {
        format!("A's session: {}", s.text)
    });

    println!(
        "isolation campaign ({engine:?}): {} operations in the document ({}), {} probe requests, {} checks, {} failures, {:.1} s",
        ops.len(),
        by_kind
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", "),
        t.sent,
        t.probes,
        t.failures.len(),
        started.elapsed().as_secs_f64(),
    );
    assert!(
        unclassified.is_empty(),
        "operations this campaign does not know how to probe (add them to a rule or a skip list): {unclassified:?}"
    );
    assert!(
        t.failures.is_empty(),
        "{} isolation failures:\n{}",
        t.failures.len(),
        t.failures.join("\n")
    );
    Ok(())
}

#[tokio::test]
async fn every_endpoint_from_another_workspace_sqlite() -> anyhow::Result<()> {
    every_endpoint(Engine::Sqlite).await
}

#[tokio::test]
async fn every_endpoint_from_another_workspace_postgres() -> anyhow::Result<()> {
    every_endpoint(Engine::Postgres).await
}
