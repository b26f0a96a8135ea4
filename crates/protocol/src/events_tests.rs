use serde_json::json;

use super::*;

/// Wire JSON of an event → the typed event → the same JSON.
fn round_trip(wire: Value) -> SessionEvent {
    let ev: SessionEvent = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(serde_json::to_value(&ev).unwrap(), wire, "round trip");
    ev
}

fn event(kind: &str, fields: Value) -> Value {
    let mut v =
        json!({"type": kind, "sessionId": "s", "seq": 3, "timestamp": "2026-12-01T00:00:00.000Z"});
    for (k, f) in fields.as_object().unwrap() {
        v[k] = f.clone();
    }
    v
}

#[test]
fn every_kind_has_one_shape_on_the_wire() {
    let goal = json!({"id": "g", "condition": "c", "status": "active", "maxTurns": 5, "completedTurns": 0,
        "tokensUsed": 0, "createdAt": "t", "updatedAt": "t"});
    let lp = json!({"id": "l", "prompt": "p", "intervalSeconds": 1, "maxTurns": 2, "turnsDone": 0,
        "skippedTicks": 0, "status": "active", "nextTickAt": "t", "expiresAt": "t", "createdAt": "t", "updatedAt": "t"});
    let question = json!({"question": "Which?", "header": "H", "options": [
        {"label": "A", "description": "a"}, {"label": "B", "description": "b"}], "multiSelect": false});
    let cases = [
        (
            "session.started",
            json!({"assistantId": "a", "variables": {"x": 1}}),
        ),
        (
            "session.started",
            json!({"assistantId": "a", "variables": {}, "parentSessionId": "p", "title": "t"}),
        ),
        ("session.ended", json!({"reason": null, "endedBy": "host"})),
        ("turn.started", json!({"turnId": "t"})),
        ("turn.skipped", json!({"turnId": "t"})),
        (
            "turn.completed",
            json!({"turnId": "t", "interrupted": false}),
        ),
        (
            "turn.completed",
            json!({"interrupted": true, "reason": "restart"}),
        ),
        ("message.delta", json!({"messageId": "m", "delta": "Hel"})),
        (
            "message.completed",
            json!({"messageId": "m", "role": "user", "content": "hi", "loopId": "l"}),
        ),
        (
            "tool.called",
            json!({"callId": "c", "name": "n", "arguments": "{}", "startup": true}),
        ),
        (
            "tool.completed",
            json!({"callId": "c", "name": "n", "isError": false, "result": {"ok": 1}}),
        ),
        (
            "tool.completed",
            json!({"callId": "c", "name": "n", "isError": true, "cancelled": true}),
        ),
        (
            "tool.progress",
            json!({"callId": "c", "name": "n", "progress": 2.0, "total": 5.0, "message": "step 2"}),
        ),
        (
            "client_tool.call",
            json!({"callId": "c", "functionName": "f", "arguments": {}, "waitForResponse": true}),
        ),
        (
            "todo.updated",
            json!({"todos": [{"content": "x", "status": "pending"}]}),
        ),
        (
            "state.updated",
            json!({"changes": {"a": 1}, "variables": {"a": 1}, "source": "system"}),
        ),
        (
            "ask_user.question",
            json!({"callId": "c", "questions": [question], "subSessionId": null, "subSessionTitle": null}),
        ),
        (
            "ask_user.answered",
            json!({"callId": "c", "answers": ["A"]}),
        ),
        (
            "ask_user.answered",
            json!({"callId": "c", "dismissed": true, "subSessionId": "s2", "subSessionTitle": "t"}),
        ),
        (
            "subagent.started",
            json!({"subSessionId": "s2", "title": "t", "mode": "async", "parentSessionId": "s", "depth": 1}),
        ),
        (
            "subagent.completed",
            json!({"subSessionId": "s2", "title": "t", "status": "completed", "report": "r"}),
        ),
        (
            "subagent.completed",
            json!({"subSessionId": "s2", "title": null, "status": "stopped", "reason": "r"}),
        ),
        ("goal.updated", json!({"goal": goal})),
        ("loop.updated", json!({"loop": lp})),
        (
            "memory.updated",
            json!({"action": "saved", "memoryId": "m"}),
        ),
        ("handoff.requested", json!({"reason": null})),
        ("handoff.released", json!({})),
        (
            "workflow.node_entered",
            json!({"nodeId": "greet", "nodeType": "agent", "edgeId": null, "visit": 1}),
        ),
        (
            "workflow.evaluated",
            json!({"nodeId": "greet", "taken": null, "llm": {"wants_human": false}}),
        ),
        (
            "task.started",
            json!({"taskId": "task_1", "title": "t", "backendId": "tb_1", "backendType": "reasoner"}),
        ),
        (
            "task.updated",
            json!({"taskId": "task_1", "detail": "step 2", "steps": 2}),
        ),
        (
            "task.completed",
            json!({"taskId": "task_1", "title": "t", "status": "failed", "error": "e"}),
        ),
        (
            "session.realtime_ready",
            json!({"inputRate": 16000, "outputRate": 24000, "dialect": "qwen"}),
        ),
        ("speech.started", json!({"audioStartMs": 1200})),
        (
            "session.speech_ready",
            json!({"inputRate": 16000, "outputRate": 24000,
                   "stt": {"dialect": "mock"}, "tts": {"dialect": "mock"}}),
        ),
        ("speech.stopped", json!({"audioEndMs": 2400})),
        (
            "speech.filler",
            json!({"itemId": "fill_1", "text": "One moment, please."}),
        ),
        (
            "message.truncated",
            json!({"messageId": "msg_1", "itemId": "msg_1", "playedMs": 1200,
                   "content": "It is sunny."}),
        ),
        (
            "context.compacted",
            json!({"tokensBefore": 3300, "tokensAfter": 900, "contextWindow": 4096,
                   "summarizedMessages": 12, "reason": "threshold"}),
        ),
        ("error", json!({"code": "llm_failed", "message": "m"})),
    ];
    let mut seen = std::collections::BTreeSet::new();
    for (kind, fields) in cases {
        let ev = round_trip(event(kind, fields));
        assert_eq!(ev.kind(), kind);
        seen.insert(kind);
    }
    assert_eq!(
        seen.len(),
        EventBody::KINDS.len(),
        "every kind is covered by a case"
    );
}

#[test]
fn unknown_kinds_and_missing_fields_are_refused() {
    assert!(serde_json::from_value::<SessionEvent>(event("nope", json!({}))).is_err());
    assert!(serde_json::from_value::<SessionEvent>(event("turn.started", json!({}))).is_err());
}

#[test]
fn client_frames_parse_by_type() {
    let hello: ClientFrame = serde_json::from_value(json!({"type": "client.hello",
        "clientTools": ["a", {"name": "b", "schemaHash": "h"}]}))
    .unwrap();
    let ClientFrame::Hello(h) = hello else {
        panic!("hello")
    };
    let parts: Vec<_> = h
        .client_tools
        .into_iter()
        .map(DeclaredClientTool::into_parts)
        .collect();
    assert_eq!(
        parts,
        [("a".into(), None), ("b".into(), Some("h".to_owned()))]
    );

    let result: ClientFrame = serde_json::from_value(
        json!({"type": "client_tool.result", "callId": "c", "error": "no camera"}),
    )
    .unwrap();
    let ClientFrame::ClientToolResult(r) = result else {
        panic!("result")
    };
    assert_eq!(r.into_reply(), Err("no camera".to_owned()));

    let answer: ClientFrame = serde_json::from_value(
        json!({"type": "ask_user.answer", "answers": {"Which?": "A"}, "extra": 1}),
    )
    .unwrap();
    assert!(matches!(answer, ClientFrame::AskUserAnswer(_)));

    let resume: ClientFrame =
        serde_json::from_value(json!({"type": "resume", "afterSeq": 7})).unwrap();
    assert_eq!(resume, ClientFrame::Resume(ResumeFrame { after_seq: 7 }));

    assert!(serde_json::from_value::<ClientFrame>(json!({"type": "user.message"})).is_err());
    assert!(serde_json::from_value::<ClientFrame>(json!({"type": "bogus"})).is_err());
}

#[test]
fn realtime_frames_and_turn_detection_have_their_wire_names() {
    let frame: ClientFrame = serde_json::from_value(
        json!({"type": "playback.interrupted", "itemId": "i", "playedMs": 500}),
    )
    .unwrap();
    assert_eq!(
        frame,
        ClientFrame::PlaybackInterrupted(crate::PlaybackInterruptedFrame {
            item_id: "i".into(),
            played_ms: 500
        })
    );
    let audio = crate::EphemeralFrame::AudioDelta(crate::AudioDelta {
        item_id: "i".into(),
        audio: "AAA=".into(),
        rate: 24_000,
    });
    assert_eq!(
        serde_json::to_value(&audio).unwrap(),
        json!({"type": "audio.delta", "itemId": "i", "audio": "AAA=", "rate": 24000})
    );
    let vad: crate::TurnDetection =
        serde_json::from_value(json!({"type": "server_vad", "silenceDurationMs": 400})).unwrap();
    assert_eq!(
        vad,
        crate::TurnDetection::ServerVad {
            threshold: None,
            prefix_padding_ms: None,
            silence_duration_ms: Some(400)
        }
    );
    assert!(serde_json::from_value::<crate::TurnDetection>(json!({"type": "none"})).is_ok());
}
