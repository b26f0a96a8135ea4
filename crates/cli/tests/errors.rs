//! Bad requests get clear 4xx answers, never a 5xx (R-API-2).

use reqwest::header::CONTENT_TYPE;
use serde_json::json;

use crate::harness::on_both;

on_both!(malformed_requests_get_4xx, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    let token = ws.token.clone().unwrap();
    let url = format!("{}/v1/tools", srv.process.base_url);
    let send = |body: Vec<u8>, ct: Option<&'static str>| {
        let mut req = srv.client.post(&url).bearer_auth(&token).body(body);
        if let Some(ct) = ct {
            req = req.header(CONTENT_TYPE, ct);
        }
        req.send()
    };
    let cases: Vec<(Vec<u8>, Option<&str>, u16, &str)> = vec![
        (
            b"{\"name\": ".to_vec(),
            Some("application/json"),
            400,
            "invalid_json",
        ),
        (
            b"[1, 2]".to_vec(),
            Some("application/json"),
            422,
            "invalid_body",
        ),
        (
            b"null".to_vec(),
            Some("application/json"),
            422,
            "invalid_body",
        ),
        (
            b"\xff\xfe".to_vec(),
            Some("application/json"),
            400,
            "invalid_json",
        ),
        (
            b"{}".to_vec(),
            Some("text/plain"),
            415,
            "unsupported_media_type",
        ),
        (b"{}".to_vec(), None, 415, "unsupported_media_type"),
    ];
    for (body, ct, status, code) in cases {
        let r = send(body, ct).await?;
        assert_eq!(r.status().as_u16(), status, "{code}");
        let v: serde_json::Value = r.json().await?;
        assert_eq!(v["error"]["code"], code);
    }
    // Deeply nested JSON is refused without crashing.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let r = send(deep.into_bytes(), Some("application/json")).await?;
    assert_eq!(r.status().as_u16(), 400);
    ws.post("/v1/tools", json!({"name": "x"}))
        .await?
        .assert_error(422, "invalid_field", Some("type"));
    ws.post("/v1/tools", json!({"name": 5, "type": "client"}))
        .await?
        .assert_error(422, "invalid_field", Some("name"));
    ws.get("/v1/nothing-here")
        .await?
        .assert_error(404, "not_found", None);
    ws.delete("/v1/tools")
        .await?
        .assert_error(405, "method_not_allowed", None);
    ws.get("/v1/tools/%FF%FE")
        .await?
        .assert_error(400, "invalid_path", None);
    Ok(())
});

/// A body over `RTC_MAX_BODY_BYTES` is refused with 413. The limit is small
/// here so the whole body is on the wire before the server answers.
async fn oversized(engine: rtc_testkit::Engine) -> anyhow::Result<()> {
    let env =
        std::collections::HashMap::from([("RTC_MAX_BODY_BYTES".to_owned(), "16384".to_owned())]);
    crate::harness::with_server(engine, env, |srv| async move {
        let (_, ws) = srv.workspace("A").await?;
        let big = json!({"name": "x".repeat(20_000), "type": "client", "client": {"functionName": "f"}});
        ws.post("/v1/tools", big).await?.assert_error(413, "payload_too_large", None);
        let fits = json!({"name": "x", "description": "d".repeat(4_000), "type": "client", "client": {"functionName": "f"}});
        ws.post("/v1/tools", fits).await?.assert_status(201);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn oversized_bodies_get_413_sqlite() -> anyhow::Result<()> {
    oversized(rtc_testkit::Engine::Sqlite).await
}

#[tokio::test]
async fn oversized_bodies_get_413_postgres() -> anyhow::Result<()> {
    oversized(rtc_testkit::Engine::Postgres).await
}

// Every body is a JSON object: an array is never read as a struct's fields
// in order, and the message names no internal type. Where the body is
// optional (`end`, `cleanup`), `null` is the same as no body.
on_both!(bodies_must_be_json_objects, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    let r = ws.post("/v1/assistants", json!(["x"])).await?;
    r.assert_error(422, "invalid_body", None);
    assert_eq!(
        r.body["error"]["message"], "the body must be a JSON object",
        "{}",
        r.text
    );
    ws.post("/v1/tools", json!("x"))
        .await?
        .assert_error(422, "invalid_body", None);
    let a = ws
        .create(
            "/v1/assistants",
            json!({"name": "Support", "systemPrompt": "Help."}),
        )
        .await?;
    let aid = a["id"].as_str().unwrap();
    let cleanup = format!("/v1/assistants/{aid}/compatibility/cleanup");
    ws.post(&cleanup, json!([]))
        .await?
        .assert_error(422, "invalid_body", None);
    ws.post(&cleanup, json!(null)).await?.assert_status(200);
    let s = ws
        .create("/v1/sessions", json!({"assistantId": aid}))
        .await?;
    let sid = s["id"].as_str().unwrap();
    let end = format!("/v1/sessions/{sid}/end");
    ws.post(&end, json!(["x"]))
        .await?
        .assert_error(422, "invalid_body", None);
    let session = ws.get(&format!("/v1/sessions/{sid}")).await?;
    assert_ne!(session.body["status"], "ended", "{}", session.text);
    ws.post(&end, json!(null)).await?.assert_status(204);
    let session = ws.get(&format!("/v1/sessions/{sid}")).await?;
    assert_eq!(session.body["status"], "ended", "{}", session.text);
    assert!(session.body["endReason"] != "x", "{}", session.text);
    Ok(())
});

// A NUL character (which PostgreSQL cannot store as text) is refused where
// it comes in, naming the field, instead of failing the write with a 500:
// in a body or a query parameter (422 naming it); no id holds one (404).
on_both!(nul_characters_are_refused_where_they_come_in, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    let a = ws
        .create("/v1/assistants", json!({"name": "Support"}))
        .await?;
    let aid = a["id"].as_str().unwrap();
    let s = ws
        .create("/v1/sessions", json!({"assistantId": aid}))
        .await?;
    let sid = s["id"].as_str().unwrap();
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "hi\u{0}there"}),
    )
    .await?
    .assert_error(422, "invalid_field", Some("text"));
    ws.post(
        "/v1/sessions",
        json!({"assistantId": aid, "userId": "u\u{0}"}),
    )
    .await?
    .assert_error(422, "invalid_field", Some("userId"));
    ws.get("/v1/memories?userId=%00Uq&offset=20")
        .await?
        .assert_error(422, "invalid_field", Some("userId"));
    ws.get("/v1/tools/a%00b")
        .await?
        .assert_error(404, "not_found", None);
    ws.get(&format!("/v1/sessions/{sid}%00"))
        .await?
        .assert_error(404, "not_found", None);
    // Still usable afterwards.
    ws.get("/v1/memories?userId=Uq").await?.assert_status(200);
    Ok(())
});

/// R-SEC-6 over HTTP: a workspace's active sessions (here at most 2,
/// `RTC_MAX_SESSIONS_PER_WORKSPACE`) answer 429 `too_many_sessions`; an end
/// reason over 1,000 characters and a human agent's text over 100,000
/// bytes are 422 naming their field.
async fn bounds(engine: rtc_testkit::Engine) -> anyhow::Result<()> {
    let env = std::collections::HashMap::from([(
        "RTC_MAX_SESSIONS_PER_WORKSPACE".to_owned(),
        "2".to_owned(),
    )]);
    crate::harness::with_server(engine, env, |srv| async move {
        let (_, ws) = srv.workspace("A").await?;
        let a = ws
            .create(
                "/v1/assistants",
                json!({"name": "Support", "systemPrompt": "Help."}),
            )
            .await?;
        let open = json!({"assistantId": a["id"]});
        let first = ws.create("/v1/sessions", open.clone()).await?;
        let sid = first["id"].as_str().unwrap();
        ws.create("/v1/sessions", open.clone()).await?;
        ws.post("/v1/sessions", open.clone())
            .await?
            .assert_error(429, "too_many_sessions", None);
        ws.post(
            &format!("/v1/sessions/{sid}/handoff/messages"),
            json!({"text": "a".repeat(100_001)}),
        )
        .await?
        .assert_error(422, "invalid_text", Some("text"));
        let end = format!("/v1/sessions/{sid}/end");
        ws.post(&end, json!({"reason": "r".repeat(1_001)}))
            .await?
            .assert_error(422, "invalid_reason", Some("reason"));
        ws.post(&end, json!({"reason": "r".repeat(1_000)}))
            .await?
            .assert_status(204);
        ws.create("/v1/sessions", open).await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn session_bounds_sqlite() -> anyhow::Result<()> {
    bounds(rtc_testkit::Engine::Sqlite).await
}

#[tokio::test]
async fn session_bounds_postgres() -> anyhow::Result<()> {
    bounds(rtc_testkit::Engine::Postgres).await
}
