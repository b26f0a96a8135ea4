//! Loops run by themselves (R-LP-1..4, R-BX-1): ticks become turns of the
//! session, completeLoop ends the loop from inside its own turn, max_turns
//! exhausts it, and every tick is recorded once.

use rtc_testkit::{MockLlm, MockReply};
use serde_json::{Value, json};

use crate::conversation::{assistant, events_until, open, server};

fn loop_is(status: &'static str) -> impl Fn(&Value) -> bool {
    move |e| e["type"] == "loop.updated" && e["loop"]["status"] == status
}

async fn loops(engine: rtc_testkit::Engine) -> anyhow::Result<()> {
    let mock = MockLlm::start(vec![
        MockReply::call(
            "createLoop",
            json!({"prompt": "check the build", "interval_seconds": 1, "max_turns": 3}),
        ),
        MockReply::text("Watching the build."),
        MockReply::text("Build is green."),
        MockReply::call("completeLoop", json!({"reason": "the build is stable"})),
        MockReply::text("Done watching."),
        MockReply::call("completeLoop", json!({})),
        MockReply::call(
            "createLoop",
            json!({"prompt": "ping", "interval_seconds": 1, "max_turns": 1}),
        ),
        MockReply::text("Pinging."),
        MockReply::text("pong"),
    ])
    .await?;
    let Some(srv) = server(engine, &mock).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("A").await?;
    let id = assistant(
        &ws,
        json!({"name": "Watcher", "systemPrompt": "Watch.", "features": {"loops": true}}),
    )
    .await?;
    let (sid, token) = open(&ws, json!({"assistantId": id})).await?;
    let msgs = format!("/v1/sessions/{sid}/messages");
    ws.post(&msgs, json!({"text": "watch the build"}))
        .await?
        .assert_status(202);
    // completeLoop ends it at once; the tick's own record follows.
    let ev = events_until(&srv, &token, &sid, 0, |e| {
        loop_is("completed")(e) && e["loop"]["turnsDone"] == 2
    })
    .await?;
    let ticks: Vec<&Value> = ev
        .iter()
        .filter(|e| e["type"] == "message.completed" && e["loopId"].is_string())
        .collect();
    assert_eq!(ticks.len(), 2, "two ticks ran");
    assert!(
        ticks[0]["content"]
            .as_str()
            .unwrap()
            .ends_with("check the build")
    );
    let done = &ev.last().unwrap()["loop"];
    assert_eq!(
        (done["turnsDone"].clone(), done["reason"].clone()),
        (json!(2), json!("the build is stable"))
    );

    let last = ev.last().unwrap()["seq"].as_i64().unwrap();
    ws.post(&msgs, json!({"text": "stop it and ping once"}))
        .await?
        .assert_status(202);
    let ev = events_until(&srv, &token, &sid, last, loop_is("exhausted")).await?;
    let refused = ev
        .iter()
        .find(|e| e["type"] == "tool.completed" && e["name"] == "completeLoop")
        .expect("completeLoop outside a loop");
    assert!(
        refused["result"]["error"]
            .as_str()
            .unwrap()
            .contains("only works inside")
    );
    assert!(
        ev.iter()
            .any(|e| e["type"] == "message.completed" && e["content"] == "pong")
    );
    let listed = ws.get(&format!("/v1/sessions/{sid}/loops")).await?;
    let loops = listed.assert_status(200)["data"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(loops.len(), 2);
    assert_eq!(
        (loops[1]["status"].clone(), loops[1]["reason"].clone()),
        (json!("exhausted"), json!("max_turns (1) reached"))
    );
    Ok(())
}

#[tokio::test]
async fn loops_sqlite() -> anyhow::Result<()> {
    loops(rtc_testkit::Engine::Sqlite).await
}

#[tokio::test]
async fn loops_postgres() -> anyhow::Result<()> {
    loops(rtc_testkit::Engine::Postgres).await
}
