//! What the task end-to-end tests share: reading the scripted model's
//! requests, a session's history and its task reports, saying something.

use serde_json::{Value, json};

use crate::harness::Api;

/// The messages of a chat request.
pub fn messages(req: &Value) -> Vec<Value> {
    req["messages"].as_array().cloned().unwrap_or_default()
}

/// How many answers the model gave in a request's conversation so far.
pub fn answers(req: &Value) -> usize {
    messages(req)
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count()
}

/// Every stored message of a session.
pub async fn history(ws: &Api, sid: &str) -> anyhow::Result<Vec<Value>> {
    let body = ws.get(&format!("/v1/sessions/{sid}/messages")).await?.body;
    Ok(body["data"].as_array().cloned().unwrap_or_default())
}

/// The `[Task report]` messages of a history.
pub fn reports(history: &[Value]) -> Vec<String> {
    history
        .iter()
        .filter_map(|m| m["content"].as_str())
        .filter(|c| c.starts_with("[Task report]"))
        .map(str::to_owned)
        .collect()
}

/// Post a user message (202).
pub async fn say(ws: &Api, sid: &str, text: &str) -> anyhow::Result<()> {
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": text}),
    )
    .await?
    .assert_status(202);
    Ok(())
}
