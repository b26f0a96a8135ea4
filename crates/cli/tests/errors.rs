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
            "invalid_field",
        ),
        (
            b"null".to_vec(),
            Some("application/json"),
            422,
            "invalid_field",
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
