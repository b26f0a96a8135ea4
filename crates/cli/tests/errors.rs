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
        (
            vec![b' '; 2 * 1024 * 1024],
            Some("application/json"),
            413,
            "payload_too_large",
        ),
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
