//! Authentication and workspace isolation (R-API-3, R-SEC-1).

use serde_json::json;

use crate::harness::on_both;

on_both!(tokens_are_required_and_checked, |srv| {
    srv.anonymous()
        .get("/v1/tools")
        .await?
        .assert_error(401, "unauthorized", None);
    let mut wrong = srv.anonymous();
    wrong.token = Some("rtc_ws_not-a-key".into());
    wrong
        .get("/v1/tools")
        .await?
        .assert_error(401, "unauthorized", None);
    srv.anonymous()
        .post("/v1/workspaces", json!({"name": "x"}))
        .await?
        .assert_error(401, "unauthorized", None);
    let (_, ws) = srv.workspace("Acme").await?;
    ws.post("/v1/workspaces", json!({"name": "x"}))
        .await?
        .assert_error(403, "admin_required", None);
    ws.get("/v1/workspaces")
        .await?
        .assert_error(403, "admin_required", None);
    // The admin token acts in a workspace only when it names one.
    srv.admin().get("/v1/tools").await?.assert_error(
        400,
        "workspace_required",
        Some("x-rtc-workspace"),
    );
    srv.admin_in("ws_missing")
        .get("/v1/tools")
        .await?
        .assert_error(404, "not_found", None);
    srv.admin()
        .post("/v1/workspaces", json!({"name": " "}))
        .await?
        .assert_error(422, "invalid_name", Some("name"));
    Ok(())
});

on_both!(workspace_keys_are_shown_once_and_rotate, |srv| {
    let (id, ws) = srv.workspace("Acme").await?;
    ws.get("/v1/tools").await?.assert_status(200);
    let listed = srv.admin().get("/v1/workspaces").await?;
    let first = &listed.assert_status(200)["data"][0];
    assert_eq!(first["id"], id.as_str());
    assert!(
        first.get("apiKey").is_none(),
        "keys are shown only at creation"
    );
    let rotated = srv
        .admin()
        .post(&format!("/v1/workspaces/{id}/rotate-key"), json!({}))
        .await?;
    let new_key = rotated.assert_status(200)["apiKey"]
        .as_str()
        .unwrap()
        .to_owned();
    ws.get("/v1/tools")
        .await?
        .assert_error(401, "unauthorized", None);
    let mut fresh = ws.clone();
    fresh.token = Some(new_key);
    fresh.get("/v1/tools").await?.assert_status(200);
    srv.admin()
        .post("/v1/workspaces/ws_nope/rotate-key", json!({}))
        .await?
        .assert_error(404, "not_found", None);
    Ok(())
});

on_both!(workspaces_never_see_each_other, |srv| {
    let (_, a) = srv.workspace("A").await?;
    let (b_id, b) = srv.workspace("B").await?;
    a.put("/v1/secrets/secret__k", json!({"value": "v-secret-value"}))
        .await?
        .assert_status(201);
    let tool = a
        .create(
            "/v1/tools",
            json!({"name": "t", "type": "client", "client": {"functionName": "f"}}),
        )
        .await?;
    let tool_id = tool["id"].as_str().unwrap();
    let server = a
        .create("/v1/mcp-servers", json!({"name": "m", "transport": {"type": "streamableHttp", "url": "https://mcp.example.com/mcp"}}))
        .await?;
    let server_id = server["id"].as_str().unwrap();
    let iface = a
        .create("/v1/realtime-interfaces", json!({"name": "rt"}))
        .await?;
    let iface_id = iface["id"].as_str().unwrap();
    let asst = a
        .create(
            "/v1/assistants",
            json!({"name": "x", "toolBindings": [{"toolId": tool_id}]}),
        )
        .await?;
    let asst_id = asst["id"].as_str().unwrap();

    for path in [
        "/v1/secrets/secret__k".to_owned(),
        format!("/v1/tools/{tool_id}"),
        format!("/v1/mcp-servers/{server_id}"),
        format!("/v1/mcp-servers/{server_id}/tools"),
        format!("/v1/realtime-interfaces/{iface_id}"),
        format!("/v1/assistants/{asst_id}"),
        format!("/v1/assistants/{asst_id}/compatibility"),
    ] {
        b.get(&path).await?.assert_error(404, "not_found", None);
        srv.admin_in(&b_id)
            .get(&path)
            .await?
            .assert_error(404, "not_found", None);
    }
    for path in [
        format!("/v1/tools/{tool_id}"),
        format!("/v1/mcp-servers/{server_id}"),
        format!("/v1/realtime-interfaces/{iface_id}"),
        format!("/v1/assistants/{asst_id}"),
        "/v1/secrets/secret__k".to_owned(),
    ] {
        b.delete(&path).await?.assert_error(404, "not_found", None);
    }
    b.put(
        &format!("/v1/tools/{tool_id}"),
        json!({"name": "t", "type": "client", "client": {"functionName": "g"}}),
    )
    .await?
    .assert_error(404, "not_found", None);
    b.put(&format!("/v1/assistants/{asst_id}"), json!({"name": "y"}))
        .await?
        .assert_error(404, "not_found", None);
    b.put(
        &format!("/v1/realtime-interfaces/{iface_id}"),
        json!({"name": "y"}),
    )
    .await?
    .assert_error(404, "not_found", None);
    b.put(
        &format!("/v1/mcp-servers/{server_id}"),
        json!({"name": "m", "transport": {"type": "streamableHttp", "url": "https://x/mcp"}}),
    )
    .await?
    .assert_error(404, "not_found", None);
    b.post(
        &format!("/v1/assistants/{asst_id}/compatibility/cleanup"),
        json!({}),
    )
    .await?
    .assert_error(404, "not_found", None);
    // B cannot bind A's tool or use A's secret either.
    b.post(
        "/v1/assistants",
        json!({"name": "x", "toolBindings": [{"toolId": tool_id}]}),
    )
    .await?
    .assert_error(422, "unknown_tool", Some("toolBindings[0].toolId"));
    b.post("/v1/tools", json!({"name": "h", "type": "http", "http": {"method": "GET", "url": "https://x", "headers": {"K": "{{secret__k}}"}}}))
        .await?
        .assert_error(422, "unknown_secret", Some("http.headers.K"));
    for list in [
        "/v1/tools",
        "/v1/assistants",
        "/v1/mcp-servers",
        "/v1/secrets",
    ] {
        assert_eq!(
            b.get(list).await?.assert_status(200)["data"],
            json!([]),
            "{list}"
        );
    }
    // B sees only the shipped interfaces.
    assert_eq!(
        b.get("/v1/realtime-interfaces").await?.assert_status(200)["data"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    Ok(())
});

on_both!(me_says_who_the_token_is, |srv| {
    // This server has no search engine and no page fetching configured.
    let offers = json!({"webSearch": false, "webFetch": false});
    let me = srv.admin().get("/v1/me").await?;
    assert_eq!(
        me.assert_status(200),
        &json!({"kind": "admin", "server": offers})
    );
    let (id, ws) = srv.workspace("Acme support").await?;
    let me = ws.get("/v1/me").await?;
    assert_eq!(
        me.assert_status(200),
        &json!({"kind": "workspace", "workspace": {"id": id, "name": "Acme support"}, "server": offers})
    );
    srv.anonymous()
        .get("/v1/me")
        .await?
        .assert_error(401, "unauthorized", None);
    Ok(())
});
