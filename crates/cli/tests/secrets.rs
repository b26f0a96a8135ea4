//! Write-only, encrypted secrets (R-TR-4, R-SEC-3).

use serde_json::json;

use crate::harness::on_both;

const VALUE: &str = "hunter2-very-secret-value";

on_both!(secrets_are_write_only, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    let created = ws
        .put("/v1/secrets/secret__api_key", json!({"value": VALUE}))
        .await?;
    created.assert_status(201);
    assert_eq!(created.body["name"], "secret__api_key");
    ws.put(
        "/v1/secrets/secret__api_key",
        json!({"value": format!("{VALUE}-2")}),
    )
    .await?
    .assert_status(200);
    for path in ["/v1/secrets", "/v1/secrets/secret__api_key"] {
        let r = ws.get(path).await?;
        r.assert_status(200);
        assert!(
            !r.text.contains(VALUE),
            "{path} leaked the value: {}",
            r.text
        );
    }
    assert_eq!(
        ws.get("/v1/secrets").await?.body["data"][0]["name"],
        "secret__api_key"
    );
    ws.put("/v1/secrets/api_key", json!({"value": "v"}))
        .await?
        .assert_error(422, "invalid_secret_name", Some("name"));
    for short in ["", "1234567", "éééé"] {
        ws.put("/v1/secrets/secret__x", json!({"value": short}))
            .await?
            .assert_error(422, "secret_too_short", Some("value"));
    }
    ws.put("/v1/secrets/secret__x", json!({"value": "12345678"}))
        .await?
        .assert_status(201);
    ws.put(
        "/v1/secrets/secret__x",
        json!({"value": "x".repeat(16 * 1024 + 1)}),
    )
    .await?
    .assert_error(422, "invalid_value", Some("value"));
    ws.put("/v1/secrets/secret__x", json!({"val": "v"}))
        .await?
        .assert_error(422, "invalid_field", Some("val"));
    ws.get("/v1/secrets/secret__missing")
        .await?
        .assert_error(404, "not_found", None);
    ws.delete("/v1/secrets/secret__api_key")
        .await?
        .assert_status(204);
    ws.delete("/v1/secrets/secret__api_key")
        .await?
        .assert_error(404, "not_found", None);
    Ok(())
});

on_both!(secrets_in_use_cannot_be_deleted, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    ws.put("/v1/secrets/secret__token", json!({"value": VALUE}))
        .await?
        .assert_status(201);
    let tool = ws
        .create("/v1/tools", json!({"name": "h", "type": "http", "http": {"method": "GET", "url": "https://api.example.com", "headers": {"Authorization": "Bearer {{secret__token}}"}}}))
        .await?;
    assert!(!tool.to_string().contains(VALUE));
    let r = ws.delete("/v1/secrets/secret__token").await?;
    r.assert_error(409, "in_use", None);
    assert!(r.text.contains(tool["id"].as_str().unwrap()));
    Ok(())
});

#[tokio::test]
async fn sqlite_file_holds_no_plaintext() -> anyhow::Result<()> {
    let srv = crate::harness::start(rtc_testkit::Engine::Sqlite, Default::default())
        .await?
        .unwrap();
    let (_, ws) = srv.workspace("A").await?;
    ws.put("/v1/secrets/secret__api_key", json!({"value": VALUE}))
        .await?
        .assert_status(201);
    let db_path = srv.db.url.trim_start_matches("sqlite://").to_owned();
    srv.process.kill().await;
    let mut bytes = std::fs::read(&db_path)?;
    if let Ok(wal) = std::fs::read(format!("{db_path}-wal")) {
        bytes.extend(wal);
    }
    let needle = VALUE.as_bytes();
    assert!(
        !bytes.windows(needle.len()).any(|w| w == needle),
        "plaintext secret found in the database file"
    );
    let key_file = srv.data_dir.path().join("master.key");
    assert!(!std::fs::read_to_string(&key_file)?.trim().is_empty());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&key_file)?.permissions().mode() & 0o777,
            0o600
        );
    }
    Ok(())
}
