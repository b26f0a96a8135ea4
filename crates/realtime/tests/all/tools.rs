//! Tool calls: split argument deltas give one `ToolCall`, results go back
//! as `function_call_output` and the host creates the next response.

use rtc_realtime::{Dialect, RespStatus, ResponseOpts, RtEvent, Vad};
use serde_json::json;

use crate::support::{next, session, until};

async fn tool_round_trip(dialect: Dialect) {
    let script = json!({"responses": [
        {"steps": [{"transcript": {"text": "Let me check."}},
                   {"tool_call": {"name": "lookup_order", "args": {"id": "A-17"}, "split": 3}}]},
        {"steps": [{"transcript": {"text": "It shipped."}}]}
    ]});
    let mut s = session(dialect, script, Vad::None).await;
    s.adapter
        .create_response(ResponseOpts::default())
        .await
        .unwrap();
    let events = until(&mut s.events, |e| matches!(e, RtEvent::ResponseDone { .. })).await;
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            RtEvent::ToolCall {
                call_id,
                name,
                arguments,
                response_id,
            } => Some((
                call_id.clone(),
                name.clone(),
                arguments.clone(),
                response_id.clone(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 1, "{events:?}");
    let (call_id, name, arguments, response_id) = calls[0].clone();
    assert_eq!(name, "lookup_order");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&arguments).unwrap(),
        json!({"id": "A-17"})
    );
    assert_eq!(
        events.last(),
        Some(&RtEvent::ResponseDone {
            response_id,
            status: RespStatus::Completed,
            call_ids: vec![call_id.clone()]
        })
    );
    s.adapter
        .submit_tool_result(&call_id, "{\"status\":\"shipped\"}")
        .await
        .unwrap();
    s.adapter
        .create_response(ResponseOpts::default())
        .await
        .unwrap();
    let events = until(&mut s.events, |e| matches!(e, RtEvent::ResponseDone { .. })).await;
    assert!(
        !events.iter().any(|e| matches!(e, RtEvent::Error { .. })),
        "{events:?}"
    );
    assert!(events.iter().any(|e| matches!(e, RtEvent::AssistantTranscript { delta, is_final: true, .. } if delta == "It shipped.")));
    let outputs = s.mock.frames_of_type("conversation.item.create");
    assert_eq!(
        outputs,
        vec![json!({"type": "conversation.item.create",
                    "item": {"type": "function_call_output", "call_id": call_id, "output": "{\"status\":\"shipped\"}"}})]
    );
    assert_eq!(
        s.mock.frames_of_type("response.create"),
        vec![json!({"type": "response.create"}); 2]
    );
    // The output came before the second response.create.
    let log = s.mock.log();
    let output_at = log
        .iter()
        .position(|f| f.frame["type"] == "conversation.item.create");
    let second_create = log
        .iter()
        .rposition(|f| f.frame["type"] == "response.create");
    assert!(output_at < second_create);
}

#[tokio::test]
async fn ga_tool_round_trip() {
    tool_round_trip(Dialect::Openai).await;
}

#[tokio::test]
async fn qwen_tool_round_trip() {
    tool_round_trip(Dialect::Qwen).await;
}

#[tokio::test]
async fn stepfun_tool_round_trip() {
    tool_round_trip(Dialect::Stepfun).await;
}

#[tokio::test]
async fn an_unknown_call_id_is_an_error_event() {
    let mut s = session(Dialect::Openai, json!({}), Vad::None).await;
    s.adapter
        .submit_tool_result("call_nope", "{}")
        .await
        .unwrap();
    let error = next(&mut s.events, |e| matches!(e, RtEvent::Error { .. })).await;
    assert!(
        matches!(&error, RtEvent::Error { code, message, fatal: false } if code == "invalid_tool_call_id" && message.contains("call_nope")),
        "{error:?}"
    );
}
