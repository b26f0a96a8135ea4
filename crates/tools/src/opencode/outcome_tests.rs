use serde_json::json;

use super::*;
use crate::opencode::events::{LineTooLong, SseLines};

fn user(text: &str) -> Value {
    json!({"info": {"id": "msg_u", "role": "user", "time": {"created": 1}},
           "parts": [{"type": "text", "text": text}]})
}

/// The blocking prompt's answer of design §2.1 (tools-0), as listed.
fn assistant_done(text: &str) -> Value {
    json!({"info": {"id": "msg_22cc99d37001uJ7ChFM3gFpqV8", "sessionID": "ses_dd33", "role": "assistant",
                     "mode": "build", "agent": "build", "providerID": "mock", "modelID": "tools-0",
                     "time": {"created": 1_796_047_740_216_u64, "completed": 1_796_047_741_397_u64}, "finish": "stop"},
           "parts": [{"type": "step-start", "snapshot": "4b825dc6"},
                     {"type": "text", "text": text, "id": "prt_1"},
                     {"type": "step-finish", "reason": "stop", "cost": 0}]})
}

#[test]
fn the_last_assistant_message_text_is_the_result() {
    let messages = [user("Say done."), assistant_done("done")];
    assert_eq!(
        task_outcome(&messages),
        TaskOutcome::Completed("done".into())
    );
}

#[test]
fn a_multi_step_task_takes_the_last_assistant_message() {
    // tools-1: a tool step (finish "tool-calls"), then the final answer.
    let step = json!({"info": {"role": "assistant", "time": {"created": 1, "completed": 2}, "finish": "tool-calls"},
                      "parts": [{"type": "text", "text": "let me look"},
                                {"type": "tool", "tool": "bash", "state": {"status": "error"}}]});
    assert_eq!(
        task_outcome(&[user("go"), step.clone()]),
        TaskOutcome::Working
    );
    let messages = [user("go"), step, assistant_done("done")];
    assert_eq!(
        task_outcome(&messages),
        TaskOutcome::Completed("done".into())
    );
}

#[test]
fn text_parts_are_concatenated_and_other_parts_ignored() {
    let mut message = assistant_done("word0 ");
    message["parts"]
        .as_array_mut()
        .unwrap()
        .insert(2, json!({"type": "text", "text": "word1"}));
    message["parts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "reasoning", "text": "secret thoughts"}));
    assert_eq!(
        task_outcome(&[user("x"), message]),
        TaskOutcome::Completed("word0 word1".into())
    );
}

#[test]
fn an_aborted_message_is_aborted_and_an_error_is_a_failure() {
    let aborted = json!({"info": {"role": "assistant", "time": {"created": 1, "completed": 2},
                        "error": {"name": "MessageAbortedError", "data": {"message": "Aborted"}}}, "parts": []});
    assert_eq!(task_outcome(&[user("x"), aborted]), TaskOutcome::Aborted);
    let failed = json!({"info": {"role": "assistant", "time": {"created": 1, "completed": 2},
                       "error": {"name": "APIError", "data": {"message": "Cannot connect to API"}}}, "parts": []});
    assert_eq!(
        task_outcome(&[user("x"), failed]),
        TaskOutcome::Failed("Cannot connect to API".into())
    );
}

#[test]
fn an_unfinished_or_missing_reply_is_not_an_outcome() {
    let streaming = json!({"info": {"role": "assistant", "time": {"created": 1}}, "parts": [{"type": "text", "text": "wor"}]});
    assert_eq!(task_outcome(&[user("x"), streaming]), TaskOutcome::Working);
    // The unknown-model case: only the user message exists.
    assert_eq!(task_outcome(&[user("x")]), TaskOutcome::NoReply);
    assert_eq!(task_outcome(&[]), TaskOutcome::NoReply);
    // An answer to an earlier prompt does not answer the latest one.
    let messages = [user("a"), assistant_done("old"), user("b")];
    assert_eq!(task_outcome(&messages), TaskOutcome::NoReply);
}

#[test]
fn status_maps_list_busy_and_retrying_sessions() {
    let body = json!({"ses_a": {"type": "busy"},
                      "ses_b": {"type": "retry", "attempt": 3, "message": "Cannot connect to API: Unable to connect.", "next": 1_796_047_745_000_u64},
                      "ses_c": {"type": "compacting"}});
    let status = parse_status(&body).unwrap();
    assert_eq!(status["ses_a"], SessionState::Busy);
    assert_eq!(
        status["ses_b"],
        SessionState::Retry {
            attempt: 3,
            message: "Cannot connect to API: Unable to connect.".into()
        }
    );
    assert_eq!(status["ses_c"], SessionState::Other("compacting".into()));
    assert!(parse_status(&json!({})).unwrap().is_empty());
    assert!(parse_status(&json!([])).is_none());
}

#[test]
fn events_of_interest_are_parsed_and_others_ignored() {
    let idle = r#"{"id":"evt_1","type":"session.idle","properties":{"sessionID":"ses_dcb2"}}"#;
    assert_eq!(
        parse_event(idle),
        Some(OpencodeEvent::Idle {
            session: "ses_dcb2".into()
        })
    );
    let error = r#"{"id":"evt_2","type":"session.error","properties":{"sessionID":"ses_dcb2","error":{"name":"UnknownError","data":{"message":"Model not found: mock/nope."}}}}"#;
    assert_eq!(
        parse_event(error),
        Some(OpencodeEvent::Error {
            session: Some("ses_dcb2".into()),
            name: "UnknownError".into(),
            message: "Model not found: mock/nope.".into()
        })
    );
    let status = r#"{"id":"evt_3","type":"session.status","properties":{"sessionID":"ses_dcb2","status":{"type":"busy"}}}"#;
    assert_eq!(
        parse_event(status),
        Some(OpencodeEvent::Status {
            session: "ses_dcb2".into(),
            state: SessionState::Busy
        })
    );
    let connected = r#"{"id":"evt_0","type":"server.connected","properties":{}}"#;
    assert_eq!(parse_event(connected), Some(OpencodeEvent::Connected));
    for ignored in [
        r#"{"id":"evt_4","type":"message.part.delta","properties":{"sessionID":"ses_dcb2","field":"text","delta":"word0"}}"#,
        r#"{"id":"evt_5","type":"server.heartbeat","properties":{}}"#,
        r#"{"type":"session.idle","properties":{}}"#,
        "not json",
    ] {
        assert_eq!(parse_event(ignored), None, "{ignored}");
    }
}

#[test]
fn error_messages_fall_back_to_the_name() {
    assert_eq!(
        error_message(
            &json!({"name": "NotFoundError", "data": {"message": "Session not found: ses_nope"}})
        ),
        Some("Session not found: ses_nope".into())
    );
    assert_eq!(
        error_message(&json!({"name": "ProviderAuthError", "data": {}})),
        Some("ProviderAuthError".into())
    );
    assert_eq!(error_message(&json!({})), None);
}

#[test]
fn sse_payloads_are_split_across_chunks() {
    let mut lines = SseLines::new(1024);
    assert!(lines.push(b"data: {\"a\":").unwrap().is_empty());
    assert_eq!(
        lines.push(b"1}\n\ndata: x\r\n").unwrap(),
        vec!["{\"a\":1}".to_owned()]
    );
    assert_eq!(
        lines.push(b"data: y\n: comment\n\n").unwrap(),
        vec!["x\ny".to_owned()]
    );
}

/// A stream that never ends its line is cut at the bound instead of held
/// (the review buffered 150 MB in 25 s); so is one event's data spread
/// over many lines. Lines up to the bound pass.
#[test]
fn sse_lines_and_event_data_are_bounded() {
    let mut lines = SseLines::new(100);
    for _ in 0..10 {
        assert!(lines.push(&[b'x'; 10]).unwrap().is_empty());
    }
    assert_eq!(lines.push(b"x"), Err(LineTooLong(100)));
    let mut lines = SseLines::new(100);
    for _ in 0..10 {
        assert!(lines.push(b"data: 0123456789\n").unwrap().is_empty());
    }
    assert_eq!(lines.push(b"data: 0123456789\n"), Err(LineTooLong(100)));
    let mut lines = SseLines::new(100);
    let full = format!("data: {}\n\n", "y".repeat(90));
    assert_eq!(lines.push(full.as_bytes()).unwrap(), vec!["y".repeat(90)]);
}
