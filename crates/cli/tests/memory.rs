//! Memory across sessions (R-MM-1..2): saved in one session, found by
//! relevance in the next one of the same user, invisible to another user
//! and another workspace, listed and forgotten over REST.

use rtc_testkit::{MockLlm, MockReply};
use serde_json::{Value, json};

use crate::conversation::{assistant, events_until, open, server, turn_done};

async fn turn(
    srv: &crate::harness::Server,
    ws: &crate::harness::Api,
    session: &(String, String),
    text: &str,
) -> anyhow::Result<Vec<Value>> {
    let (sid, token) = session;
    ws.post(
        &format!("/v1/sessions/{sid}/messages"),
        json!({"text": text}),
    )
    .await?
    .assert_status(202);
    events_until(srv, token, sid, 0, turn_done).await
}

fn tool_results(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["type"] == "tool.completed")
        .map(|e| e["result"].clone())
        .collect()
}

async fn memories(engine: rtc_testkit::Engine) -> anyhow::Result<()> {
    let mock = MockLlm::start(vec![
        MockReply::call(
            "saveMemory",
            json!({"content": "Ann's dog is called Biscuit", "tags": ["pets"]}),
        ),
        MockReply::call(
            "saveMemory",
            json!({"content": "Ann prefers oat milk in her coffee"}),
        ),
        MockReply::text("I'll remember."),
        MockReply::call("searchMemory", json!({"query": "what is the dog's name"})),
        MockReply::text("Your dog is Biscuit."),
        MockReply::call("searchMemory", json!({"query": "dog"})),
        MockReply::text("I don't know your dog."),
        MockReply::call("saveMemory", json!({"content": "Anonymous likes tea"})),
        MockReply::text("Sorry, I cannot remember things for you."),
    ])
    .await?;
    let Some(srv) = server(engine, &mock).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("A").await?;
    let id = assistant(
        &ws,
        json!({"name": "Pal", "systemPrompt": "Be a pal.", "features": {"memory": true}}),
    )
    .await?;

    let first = open(&ws, json!({"assistantId": id, "userId": "ann"})).await?;
    let ev = turn(&srv, &ws, &first, "my dog is Biscuit and I like oat milk").await?;
    assert_eq!(
        ev.iter()
            .filter(|e| e["type"] == "memory.updated" && e["action"] == "saved")
            .count(),
        2
    );

    let second = open(&ws, json!({"assistantId": id, "userId": "ann"})).await?;
    let ev = turn(&srv, &ws, &second, "what's my dog called?").await?;
    let found = &tool_results(&ev)[0];
    assert_eq!(
        found["results"][0]["content"], "Ann's dog is called Biscuit",
        "{found}"
    );
    assert_eq!(found["result_count"], 1);

    let bob = open(&ws, json!({"assistantId": id, "userId": "bob"})).await?;
    let ev = turn(&srv, &ws, &bob, "what's my dog called?").await?;
    assert_eq!(
        tool_results(&ev)[0]["result_count"],
        0,
        "Bob sees none of Ann's memories"
    );

    // A session without a user is not offered memory tools at all.
    let anonymous = open(&ws, json!({"assistantId": id})).await?;
    let ev = turn(&srv, &ws, &anonymous, "remember I like tea").await?;
    let offered = &mock.requests()[mock.requests().len() - 2]["tools"];
    assert!(
        !offered.to_string().contains("saveMemory"),
        "no memory tools without a userId: {offered}"
    );
    assert!(
        tool_results(&ev)[0]["error"]
            .as_str()
            .unwrap()
            .contains("no tool named `saveMemory`")
    );

    let listed = ws.get("/v1/memories?userId=ann").await?;
    let body = listed.assert_status(200);
    assert_eq!(body["total"], 2);
    assert_eq!(
        body["data"][0]["content"], "Ann prefers oat milk in her coffee",
        "newest first"
    );
    assert_eq!(body["data"][1]["tags"], json!(["pets"]));
    let dog = body["data"][1]["id"].as_str().unwrap().to_owned();
    ws.get("/v1/memories")
        .await?
        .assert_error(422, "missing_user", Some("userId"));
    ws.get("/v1/memories?userId=ann&limit=0")
        .await?
        .assert_error(422, "invalid_limit", Some("limit"));
    ws.get("/v1/memories?userId=ann&bogus=1")
        .await?
        .assert_error(400, "invalid_query", None);

    let (_, other) = srv.workspace("B").await?;
    assert_eq!(
        other
            .get("/v1/memories?userId=ann")
            .await?
            .assert_status(200)["total"],
        0
    );
    other
        .delete(&format!("/v1/memories/{dog}"))
        .await?
        .assert_error(404, "not_found", None);

    ws.delete(&format!("/v1/memories/{dog}"))
        .await?
        .assert_status(204);
    ws.delete(&format!("/v1/memories/{dog}"))
        .await?
        .assert_error(404, "not_found", None);
    let gone = ws.delete("/v1/memories?userId=ann").await?;
    assert_eq!(gone.assert_status(200)["deleted"], 1);
    assert_eq!(
        ws.get("/v1/memories?userId=ann").await?.assert_status(200)["total"],
        0
    );
    Ok(())
}

#[tokio::test]
async fn memories_sqlite() -> anyhow::Result<()> {
    memories(rtc_testkit::Engine::Sqlite).await
}

#[tokio::test]
async fn memories_postgres() -> anyhow::Result<()> {
    memories(rtc_testkit::Engine::Postgres).await
}

// A missing `userId` is named in a whole sentence; forgetting a user checks
// `limit` and `offset` like listing does.
crate::harness::on_both!(memory_queries_are_checked, |srv| {
    let (_, ws) = srv.workspace("A").await?;
    for r in [
        ws.get("/v1/memories").await?,
        ws.delete("/v1/memories").await?,
    ] {
        r.assert_error(422, "missing_user", Some("userId"));
        let message = r.body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("`userId`") && message.contains("required"),
            "{message}"
        );
    }
    for (query, code, field) in [
        ("limit=0", "invalid_limit", "limit"),
        ("limit=201", "invalid_limit", "limit"),
        ("offset=-1", "invalid_offset", "offset"),
    ] {
        let path = format!("/v1/memories?userId=ann&{query}");
        ws.get(&path).await?.assert_error(422, code, Some(field));
        ws.delete(&path).await?.assert_error(422, code, Some(field));
    }
    let gone = ws.delete("/v1/memories?userId=ann&limit=10").await?;
    assert_eq!(gone.assert_status(200)["deleted"], 0);
    Ok(())
});
