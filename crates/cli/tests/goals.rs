//! Goals drive a session by themselves (R-GL-1..3, R-BX-2): the judge
//! decides after every turn, continuation turns follow while the goal is
//! active, limits exhaust it, and only the host resumes it.

use rtc_testkit::{MockLlm, MockReply};
use serde_json::{Value, json};

use crate::conversation::{assistant, events_until, open, server};

fn goal_is(status: &'static str) -> impl Fn(&Value) -> bool {
    move |e| e["type"] == "goal.updated" && e["goal"]["status"] == status
}

fn judge(satisfied: bool) -> MockReply {
    MockReply::text(
        &json!({"satisfied": satisfied, "reason": if satisfied { "done" } else { "not yet" }})
            .to_string(),
    )
}

async fn goals(engine: rtc_testkit::Engine) -> anyhow::Result<()> {
    let mock = MockLlm::start(vec![
        MockReply::call(
            "createGoal",
            json!({"condition": "three laptops compared", "max_turns": 3}),
        ),
        MockReply::text("Working on it."),
        judge(false),
        MockReply::text("Laptops A, B and C compared."),
        judge(true),
        MockReply::call(
            "createGoal",
            json!({"condition": "the user says it is perfect", "max_turns": 2}),
        ),
        MockReply::text("Polishing."),
        judge(false),
        MockReply::text("Polished more."),
        judge(false),
        MockReply::text("Final polish."),
        judge(false),
    ])
    .await?;
    let Some(srv) = server(engine, &mock).await? else {
        return Ok(());
    };
    let (_, ws) = srv.workspace("A").await?;
    let id = assistant(
        &ws,
        json!({"name": "Worker", "systemPrompt": "Work.", "features": {"goals": true}}),
    )
    .await?;
    let (sid, token) = open(&ws, json!({"assistantId": id})).await?;
    let msgs = format!("/v1/sessions/{sid}/messages");
    ws.post(&msgs, json!({"text": "compare three laptops"}))
        .await?
        .assert_status(202);
    let ev = events_until(&srv, &token, &sid, 0, goal_is("completed")).await?;
    let continuation = ev
        .iter()
        .find(|e| e["type"] == "message.completed" && e["goalId"].is_string())
        .expect("a continuation input");
    assert!(
        continuation["content"]
            .as_str()
            .unwrap()
            .contains("three laptops compared")
    );
    let done = ev.last().unwrap();
    assert_eq!(done["goal"]["completedTurns"], 2);
    assert_eq!(done["goal"]["reason"], "done");
    let first_goal = done["goal"]["id"].as_str().unwrap().to_owned();
    let judge_request = &mock.requests()[2];
    assert_eq!(
        judge_request["response_format"],
        json!({"type": "json_object"})
    );
    assert!(
        judge_request["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("Condition: three laptops compared")
    );

    let last = ev.last().unwrap()["seq"].as_i64().unwrap();
    ws.post(&msgs, json!({"text": "now keep polishing"}))
        .await?
        .assert_status(202);
    let ev = events_until(&srv, &token, &sid, last, goal_is("exhausted")).await?;
    let exhausted = &ev.last().unwrap()["goal"];
    assert_eq!(
        (
            exhausted["completedTurns"].clone(),
            exhausted["reason"].clone()
        ),
        (json!(2), json!("max_turns (2) reached"))
    );
    assert!(
        exhausted["tokensUsed"].as_i64().unwrap() > 0,
        "token use counted: {exhausted}"
    );
    let second_goal = exhausted["id"].as_str().unwrap().to_owned();

    let resume = format!("/v1/sessions/{sid}/goals/{second_goal}/resume");
    ws.post(&resume, json!({"maxTurns": 2}))
        .await?
        .assert_error(422, "invalid_max_turns", Some("maxTurns"));
    ws.post(
        &format!("/v1/sessions/{sid}/goals/{first_goal}/resume"),
        json!({"maxTurns": 9}),
    )
    .await?
    .assert_error(409, "goal_finished", None);
    let as_client = crate::harness::Api {
        token: Some(token.clone()),
        ..ws.clone()
    };
    assert_eq!(
        as_client
            .post(&resume, json!({"maxTurns": 3}))
            .await?
            .status,
        401,
        "only the host resumes"
    );
    let last = ev.last().unwrap()["seq"].as_i64().unwrap();
    let resumed = ws.post(&resume, json!({"maxTurns": 3})).await?;
    assert_eq!(resumed.assert_status(200)["status"], "active");
    let ev = events_until(&srv, &token, &sid, last, goal_is("exhausted")).await?;
    assert!(
        ev.iter()
            .any(|e| e["type"] == "message.completed" && e["content"] == "Final polish.")
    );
    let listed = ws.get(&format!("/v1/sessions/{sid}/goals")).await?;
    let statuses: Vec<&str> = listed.assert_status(200)["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["completed", "exhausted"]);
    Ok(())
}

#[tokio::test]
async fn goals_sqlite() -> anyhow::Result<()> {
    goals(rtc_testkit::Engine::Sqlite).await
}

#[tokio::test]
async fn goals_postgres() -> anyhow::Result<()> {
    goals(rtc_testkit::Engine::Postgres).await
}
