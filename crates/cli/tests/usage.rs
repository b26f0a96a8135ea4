//! Model usage through the binary (R-RN-9): a session's totals on
//! `GET /v1/sessions/{id}` and the workspace's on `GET /v1/usage` match
//! what the provider reported, call for call; another workspace sees
//! none of it; bad dates get a 422 naming the field.

use rtc_testkit::{Engine, MockLlm, MockReply, request_tokens};
use serde_json::{Value, json};

use crate::conversation::{assistant, events_until, open, turn_done};

/// What the mock reports for a request (see `rtc_testkit::mock_llm`):
/// the request's tokens, half of them cached in blocks of 128, and a
/// quarter token per byte of the answer.
fn reported(req: &Value, answer_bytes: u64) -> (i64, i64, i64) {
    let prompt = i64::from(request_tokens(req));
    (
        prompt,
        answer_bytes.div_ceil(4).max(1) as i64,
        prompt / 2 / 128 * 128,
    )
}

async fn usage_adds_up(engine: Engine) -> anyhow::Result<()> {
    const ANSWER: &str = "Here is what I found for you today.";
    let mock = MockLlm::start(vec![
        MockReply::text(ANSWER),
        MockReply::text(ANSWER),
        MockReply::text(ANSWER),
    ])
    .await?;
    // Workspace ids reach /metrics only when it needs a token.
    let env = std::collections::HashMap::from([
        ("RTC_LLM_BASE_URL".to_owned(), mock.base_url.clone()),
        (
            "RTC_METRICS_TOKEN".to_owned(),
            "metrics-token-usage".to_owned(),
        ),
    ]);
    let Some(srv) = crate::harness::start(engine, env).await? else {
        return Ok(());
    };
    let (ws_id, ws) = srv.workspace("A").await?;
    let (_, other) = srv.workspace("B").await?;
    let id = assistant(&ws, json!({"name": "Helper", "systemPrompt": "Help."})).await?;
    let (sid, token) = open(&ws, json!({"assistantId": id})).await?;
    for (n, text) in ["hello", "and then?", "thanks"].into_iter().enumerate() {
        ws.post(
            &format!("/v1/sessions/{sid}/messages"),
            json!({"text": text}),
        )
        .await?
        .assert_status(202);
        let done = std::cell::Cell::new(0);
        events_until(&srv, &token, &sid, 0, |e| {
            done.set(done.get() + usize::from(turn_done(e)));
            done.get() == n + 1
        })
        .await?;
    }
    let (mut input, mut output, mut cached) = (0, 0, 0);
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    for r in &requests {
        let (i, o, c) = reported(r, ANSWER.len() as u64);
        input += i;
        output += o;
        cached += c;
    }
    let expected =
        json!({"calls": 3, "inputTokens": input, "outputTokens": output, "cachedTokens": cached});
    let session = ws.get(&format!("/v1/sessions/{sid}")).await?;
    assert_eq!(session.assert_status(200)["usage"], expected);
    let report = ws.get("/v1/usage").await?;
    let report = report.assert_status(200);
    assert_eq!(report["total"], expected, "{report}");
    assert_eq!(report["byAssistant"][0]["assistantId"], id.as_str());
    assert_eq!(report["byAssistant"][0]["usage"], expected);
    assert_eq!(report["byDay"].as_array().unwrap().len(), 1);
    assert_eq!(report["byDay"][0]["usage"], expected);
    // Prometheus counts the workspace's tokens under its id.
    let metrics = crate::harness::Api {
        token: Some("metrics-token-usage".into()),
        ..srv.anonymous()
    }
    .get("/metrics")
    .await?;
    let line =
        format!("rtc_llm_tokens_total{{workspace=\"{ws_id}\",direction=\"output\"}} {output}");
    assert!(metrics.text.contains(&line), "{line} in\n{}", metrics.text);
    // Another workspace sees none of it.
    let theirs = other.get("/v1/usage").await?;
    assert_eq!(theirs.assert_status(200)["total"]["calls"], 0);
    // Dates are checked.
    ws.get("/v1/usage?from=2026-02-30")
        .await?
        .assert_error(422, "invalid_date", Some("from"));
    ws.get("/v1/usage?from=2026-12-05&to=2026-12-01")
        .await?
        .assert_error(422, "invalid_period", Some("from"));
    Ok(())
}

#[tokio::test]
async fn usage_adds_up_sqlite() -> anyhow::Result<()> {
    usage_adds_up(Engine::Sqlite).await
}

#[tokio::test]
async fn usage_adds_up_postgres() -> anyhow::Result<()> {
    usage_adds_up(Engine::Postgres).await
}
