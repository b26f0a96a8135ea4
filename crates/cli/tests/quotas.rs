//! Workspace quotas through the binary (R-RN-10): a token budget refuses
//! new sessions and messages with 429 `token_quota_exceeded` and
//! `Retry-After`, and stops a running turn with an error naming the
//! quota; a request rate counts the workspace key and its sessions'
//! client tokens together, across two instances on PostgreSQL; other
//! workspaces go on untouched.

use std::collections::HashMap;
use std::time::Duration;

use rtc_testkit::{Engine, MockLlm, MockReply};
use serde_json::{Value, json};

use crate::conversation::{assistant, events_until, open, server, turn_done};
use crate::harness::Api;

/// A raw call, for the status and `Retry-After` of a refusal.
async fn raw(
    api: &Api,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Option<u64>, Value) {
    let mut req = reqwest::Client::new()
        .request(method, format!("{}{path}", api.base))
        .bearer_auth(api.token.clone().unwrap_or_default());
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let retry = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    (status, retry, resp.json().await.unwrap_or(Value::Null))
}

async fn a_token_budget_holds(engine: Engine) -> anyhow::Result<()> {
    // A tool call, then (if the budget allowed) an answer.
    let mock = MockLlm::start(vec![
        MockReply::call(
            "todoWrite",
            json!({"todos": [{"content": "Plan", "status": "in_progress"}]}),
        ),
        MockReply::text("Planned."),
        MockReply::text("Hello from B."),
        MockReply::text("Back again."),
    ])
    .await?;
    let Some(srv) = server(engine, &mock).await? else {
        return Ok(());
    };
    let admin = srv.admin();
    let made = admin
        .create(
            "/v1/workspaces",
            json!({"name": "Metered", "quota": {"tokensPerPeriod": 1000}}),
        )
        .await?;
    assert_eq!(
        made["quota"],
        json!({"tokensPerPeriod": 1000, "period": "month"})
    );
    let ws_id = made["id"].as_str().unwrap().to_owned();
    let ws = Api {
        token: Some(made["apiKey"].as_str().unwrap().to_owned()),
        ..srv.anonymous()
    };
    let (_, other) = srv.workspace("Free").await?;
    let a = assistant(&ws, json!({"name": "Planner", "systemPrompt": "Plan."})).await?;
    let (sid, token) = open(&ws, json!({"assistantId": a})).await?;
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "plan my week"}),
    )
    .await?
    .assert_status(202);
    let events = events_until(&srv, &token, &sid, 0, turn_done).await?;
    // The first call spent the budget: the turn stops before the second.
    let error = events
        .iter()
        .find(|e| e["type"] == "error")
        .expect("an error");
    assert_eq!(error["code"], "token_quota_exceeded", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("of its 1000 tokens this month")
    );
    assert_eq!(mock.requests().len(), 1);
    // New messages and sessions are refused until the next month.
    let (status, retry, body) = raw(
        &ws,
        reqwest::Method::POST,
        &format!("/v1/sessions/{sid}/messages"),
        Some(json!({"text": "and?"})),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (429, Some("token_quota_exceeded"))
    );
    assert!(
        retry.is_some_and(|s| s > 0 && s <= 31 * 86_400),
        "{retry:?}"
    );
    let (status, _, _) = raw(
        &ws,
        reqwest::Method::POST,
        "/v1/sessions",
        Some(json!({"assistantId": a})),
    )
    .await;
    assert_eq!(status, 429);
    // Reading still works; another workspace is untouched.
    ws.get(&format!("/v1/sessions/{sid}"))
        .await?
        .assert_status(200);
    let b = assistant(&other, json!({"name": "Free", "systemPrompt": "Talk."})).await?;
    let (other_sid, other_token) = open(&other, json!({"assistantId": b})).await?;
    other
        .post(
            &format!("/v1/sessions/{other_sid}/messages"),
            json!({"text": "hi"}),
        )
        .await?
        .assert_status(202);
    let done = events_until(&srv, &other_token, &other_sid, 0, turn_done).await?;
    assert!(done.iter().all(|e| e["type"] != "error"), "{done:?}");
    // The admin reads, checks and lifts the quota.
    let shown = admin.get(&format!("/v1/workspaces/{ws_id}")).await?;
    assert_eq!(shown.assert_status(200)["quota"]["tokensPerPeriod"], 1000);
    admin
        .put(
            &format!("/v1/workspaces/{ws_id}/quota"),
            json!({"tokensPerPeriod": 0}),
        )
        .await?
        .assert_error(422, "invalid_quota", Some("tokensPerPeriod"));
    ws.put(&format!("/v1/workspaces/{ws_id}/quota"), json!({}))
        .await?
        .assert_status(403);
    let lifted = admin
        .put(&format!("/v1/workspaces/{ws_id}/quota"), json!({}))
        .await?;
    assert!(lifted.assert_status(200).get("quota").is_none());
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": "and now?"}),
    )
    .await?
    .assert_status(202);
    Ok(())
}

#[tokio::test]
async fn a_token_budget_holds_sqlite() -> anyhow::Result<()> {
    a_token_budget_holds(Engine::Sqlite).await
}

#[tokio::test]
async fn a_token_budget_holds_postgres() -> anyhow::Result<()> {
    a_token_budget_holds(Engine::Postgres).await
}

/// The id of the first workspace (the pair's "A").
async fn first_workspace(admin: &Api) -> anyhow::Result<String> {
    let all = admin.get("/v1/workspaces").await?;
    Ok(all.assert_status(200)["data"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

/// Wait for a minute with room for a few requests (not its last 10 s).
async fn fresh_minute() {
    let second = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        % 60;
    if second >= 50 {
        tokio::time::sleep(Duration::from_secs(61 - second)).await;
    }
}

/// Six requests a minute, through `one` and `two` (the same server, or
/// two instances), by key and by client token.
async fn six_a_minute(
    admin: &Api,
    ws_id: &str,
    one: &Api,
    two: &Api,
    other: &Api,
) -> anyhow::Result<()> {
    let a = assistant(one, json!({"name": "R", "systemPrompt": "Hi."})).await?;
    let (sid, token) = open(two, json!({"assistantId": a})).await?;
    admin
        .put(
            &format!("/v1/workspaces/{ws_id}/quota"),
            json!({"requestsPerMinute": 6}),
        )
        .await?
        .assert_status(200);
    // Another instance reads a changed quota within a second.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    fresh_minute().await;
    let by_token = |api: &Api| Api {
        token: Some(token.clone()),
        ..api.clone()
    };
    let session = format!("/v1/sessions/{sid}");
    for (api, path) in [
        (one, "/v1/assistants"),
        (&by_token(two), session.as_str()),
        (two, "/v1/assistants"),
        (&by_token(one), session.as_str()),
        (one, "/v1/assistants"),
        (two, session.as_str()),
    ] {
        api.get(path).await?.assert_status(200);
    }
    for api in [one, &by_token(two)] {
        let (status, retry, body) = raw(api, reqwest::Method::GET, &session, None).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (429, Some("rate_limited")),
            "{body}"
        );
        assert!(retry.is_some_and(|s| (1..=60).contains(&s)), "{retry:?}");
    }
    // Another workspace, and the admin, are not counted with it.
    other.get("/v1/assistants").await?.assert_status(200);
    admin
        .get(&format!("/v1/workspaces/{ws_id}"))
        .await?
        .assert_status(200);
    Ok(())
}

#[tokio::test]
async fn a_request_rate_holds_sqlite() -> anyhow::Result<()> {
    let mock = MockLlm::start(vec![]).await?;
    let Some(srv) = server(Engine::Sqlite, &mock).await? else {
        return Ok(());
    };
    let (ws_id, ws) = srv.workspace("Busy").await?;
    let (_, other) = srv.workspace("Quiet").await?;
    six_a_minute(&srv.admin(), &ws_id, &ws, &ws, &other).await
}

#[tokio::test]
async fn a_request_rate_holds_across_two_instances() -> anyhow::Result<()> {
    let mock = MockLlm::start(vec![]).await?;
    let env = HashMap::from([("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone())]);
    let Some(pair) = crate::instances::two_instances(env, &[], &[]).await? else {
        return Ok(());
    };
    let admin = pair.a.admin();
    let ws_id = first_workspace(&admin).await?;
    let (_, other) = pair.a.workspace("Quiet").await?;
    six_a_minute(&admin, &ws_id, &pair.ws_a, &pair.ws_b, &other).await
}

#[tokio::test]
async fn a_token_budget_holds_across_two_instances() -> anyhow::Result<()> {
    let mock = MockLlm::with_recorded_responder(|_| MockReply::text("Done.")).await?;
    let env = HashMap::from([("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone())]);
    let Some(pair) = crate::instances::two_instances(env, &[], &[]).await? else {
        return Ok(());
    };
    let admin = pair.a.admin();
    let ws_id = first_workspace(&admin).await?;
    admin
        .put(
            &format!("/v1/workspaces/{ws_id}/quota"),
            json!({"tokensPerPeriod": 1000, "period": "day"}),
        )
        .await?
        .assert_status(200);
    let a = assistant(&pair.ws_a, json!({"name": "T", "systemPrompt": "Talk."})).await?;
    let (sid, token) = open(&pair.ws_a, json!({"assistantId": a})).await?;
    pair.ws_a
        .post(
            &format!("/v1/sessions/{sid}/messages"),
            json!({"text": "hi"}),
        )
        .await?
        .assert_status(202);
    events_until(&pair.a, &token, &sid, 0, turn_done).await?;
    // Instance A writes the usage within a second; B reads it within one more.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let (status, retry, body) = raw(
        &pair.ws_b,
        reqwest::Method::POST,
        &format!("/v1/sessions/{sid}/messages"),
        Some(json!({"text": "more"})),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (429, Some("token_quota_exceeded")),
        "{body}"
    );
    assert!(
        retry.is_some_and(|s| (1..=86_400).contains(&s)),
        "{retry:?}"
    );
    Ok(())
}
