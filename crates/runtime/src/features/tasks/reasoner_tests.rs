//! Unit tests of the reasoner's transcript: fitting, resuming, and what
//! each step writes.
use super::*;

#[test]
fn a_transcript_ending_in_an_answer_is_the_result() {
    let user = ChatMessage::User {
        content: "task".into(),
    };
    let call = ChatMessage::Assistant {
        content: String::new(),
        tool_calls: vec![ToolCall {
            id: "c1".into(),
            name: "t".into(),
            arguments: "{}".into(),
        }],
    };
    let answer = ChatMessage::Assistant {
        content: "42".into(),
        tool_calls: Vec::new(),
    };
    assert_eq!(saved_answer(std::slice::from_ref(&user)), None);
    assert_eq!(saved_answer(&[user.clone(), call.clone()]), None);
    assert_eq!(saved_answer(&[user, call, answer]), Some("42".into()));
}

#[test]
fn a_transcript_past_its_bound_drops_its_oldest_results() {
    let call = |id: &str| ChatMessage::Assistant {
        content: String::new(),
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: "{}".into(),
        }],
    };
    let result = |id: &str| ChatMessage::Tool {
        tool_call_id: id.into(),
        content: "r".repeat(10_000),
    };
    let mut transcript = vec![
        ChatMessage::User {
            content: "task".into(),
        },
        call("1"),
        result("1"),
        call("2"),
        result("2"),
        call("3"),
        result("3"),
    ];
    assert_eq!(
        fit_transcript(&mut transcript, 100_000),
        Some(Vec::new()),
        "fits as it is"
    );
    assert_eq!(fit_transcript(&mut transcript, 25_000), Some(vec![2]));
    let dropped: Vec<bool> = transcript
        .iter()
        .filter_map(|m| match m {
            ChatMessage::Tool { content, .. } => Some(content == DROPPED),
            _ => None,
        })
        .collect();
    assert_eq!(dropped, [true, false, false], "the oldest gave way");
    assert!(
        serde_json::to_vec(&transcript).unwrap().len() <= 25_000,
        "within the bound"
    );
    // The last step's result never goes: it cannot fit in 5 kB.
    assert_eq!(fit_transcript(&mut transcript, 5_000), None);
    assert!(matches!(&transcript[6], ChatMessage::Tool { content, .. } if content != DROPPED));
}

fn call(id: &str) -> ChatMessage {
    ChatMessage::Assistant {
        content: String::new(),
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: "{}".into(),
        }],
    }
}

fn result(id: &str, bytes: usize) -> ChatMessage {
    ChatMessage::Tool {
        tool_call_id: id.into(),
        content: "r".repeat(bytes),
    }
}

fn rows_of(transcript: &[ChatMessage]) -> Vec<String> {
    transcript
        .iter()
        .map(|m| serde_json::to_string(m).unwrap())
        .collect()
}

/// What a save writes, applied to `rows` as the store applies it; the
/// bytes written.
fn save(stored: &mut Stored, transcript: &[ChatMessage], rows: &mut Vec<String>) -> usize {
    let (appended, rewritten) = stored.delta(transcript).unwrap();
    let bytes = appended
        .iter()
        .chain(&rewritten)
        .map(|(_, body)| body.len())
        .sum();
    for (seq, body) in appended {
        assert_eq!(
            usize::try_from(seq).unwrap(),
            rows.len(),
            "appended in order"
        );
        rows.push(body);
    }
    for (seq, body) in rewritten {
        rows[usize::try_from(seq).unwrap()] = body;
    }
    stored.saved(transcript.len());
    bytes
}

/// A task of 40 steps with a 20 kB tool result each, saved within
/// `max` bytes: the bytes each step wrote as the whole transcript
/// (before) and as its rows (now), checking the rows are the
/// transcript after every step.
fn forty_steps(max: usize) -> (Vec<usize>, Vec<usize>) {
    let mut transcript = vec![
        ChatMessage::System {
            content: "prompt".into(),
        },
        ChatMessage::User {
            content: "task".into(),
        },
    ];
    let mut stored = Stored::default();
    let mut rows = Vec::new();
    let (mut whole, mut step_rows) = (Vec::new(), Vec::new());
    for step in 0..40 {
        let id = format!("c{step}");
        transcript.push(call(&id));
        transcript.push(result(&id, 20_000));
        let dropped = fit_transcript(&mut transcript, max).unwrap();
        stored.changed(dropped);
        step_rows.push(save(&mut stored, &transcript, &mut rows));
        whole.push(serde_json::to_string(&transcript).unwrap().len());
        assert_eq!(rows, rows_of(&transcript), "step {step}");
    }
    (whole, step_rows)
}

/// Issue 35: a step writes the messages it added and the results it
/// dropped, not the whole transcript again.
#[test]
fn a_step_writes_only_what_it_changed() {
    let (whole, rows) = forty_steps(4 * 1024 * 1024);
    let (sum_whole, sum_rows): (usize, usize) = (whole.iter().sum(), rows.iter().sum());
    eprintln!(
        "40 steps of 20 kB within 4 MiB: whole transcript per step {}..{} B (total {sum_whole} B), rows per step {}..{} B (total {sum_rows} B)",
        whole[0],
        whole[39],
        rows[1..].iter().min().unwrap(),
        rows.iter().max().unwrap(),
    );
    assert!(rows[1..].iter().all(|&b| (20_000..20_200).contains(&b)));
    assert!(whole[39] > 800_000 && sum_whole > 16_000_000);
    assert!(sum_rows < 810_000);

    // Past the bound a step also rewrites the results it dropped, and
    // only those.
    let (_, rows) = forty_steps(200_000);
    assert!(
        rows.iter().all(|&b| b < 2 * 20_200),
        "its own messages and a dropped note or two: {rows:?}"
    );
}

fn task_with(transcript: &str) -> TaskRecord {
    TaskRecord {
        id: "task_1".into(),
        workspace_id: "ws".into(),
        session_id: "sess".into(),
        backend_id: "tb".into(),
        backend_type: "reasoner".into(),
        config: "{}".into(),
        title: "t".into(),
        instruction: "task".into(),
        status: "running".into(),
        result: None,
        error: None,
        detail: None,
        external_id: None,
        transcript: transcript.into(),
        steps: 1,
        lease_owner: None,
        lease_until: None,
        deadline_at: 0,
        created_at: 0,
        updated_at: 0,
        finished_at: None,
    }
}

/// A task resumes from its rows (a call left without a result gets
/// one, saved with the next step), else from the legacy column, whose
/// first save writes every message as a row.
#[test]
fn a_resumed_task_goes_on_from_its_rows_or_its_legacy_transcript() {
    let settings: ReasonerSettings =
        serde_json::from_value(serde_json::json!({"systemPrompt": "S"})).unwrap();
    let config: TaskConfig = serde_json::from_value(serde_json::json!({
        "backend": {"name": "R", "type": "reasoner", "reasoner": {"systemPrompt": "S"}}
    }))
    .unwrap();
    let saved = vec![
        ChatMessage::System {
            content: "S".into(),
        },
        ChatMessage::User {
            content: "task".into(),
        },
        call("c1"),
        result("c1", 10),
        call("c2"),
    ];
    let cut_off = ChatMessage::Tool {
        tool_call_id: "c2".into(),
        content: CUT_OFF.into(),
    };
    let mut rows = rows_of(&saved);

    // From the rows; the legacy column is not read.
    let (transcript, mut stored) =
        start_transcript(&task_with("[]"), &rows, &settings, &config).unwrap();
    assert_eq!(transcript[..5], saved[..]);
    assert_eq!(transcript[5], cut_off);
    assert_eq!(stored.rows, 5);
    save(&mut stored, &transcript, &mut rows);
    assert_eq!(rows, rows_of(&transcript));

    // From the legacy column: every message is written.
    let legacy = serde_json::to_string(&saved).unwrap();
    let (transcript, mut stored) =
        start_transcript(&task_with(&legacy), &[], &settings, &config).unwrap();
    assert_eq!(stored.rows, 0);
    let mut rows = Vec::new();
    save(&mut stored, &transcript, &mut rows);
    assert_eq!(rows, rows_of(&transcript));
    assert_eq!(rows.len(), 6);

    // Neither: a new transcript. An unreadable row is an error.
    let (fresh, _) = start_transcript(&task_with("[]"), &[], &settings, &config).unwrap();
    assert_eq!(fresh.len(), 2);
    assert!(start_transcript(&task_with("[]"), &["{".into()], &settings, &config).is_err());
}

#[test]
fn the_reasoners_model_falls_back_to_the_assistants() {
    let own = LlmConfig::default();
    let assistant = LlmConfig {
        provider: Some("p".into()),
        model: Some("m".into()),
        temperature: Some(0.3),
        max_tokens: None,
    };
    assert_eq!(model_settings(&own, &assistant), assistant);
    let other_provider = LlmConfig {
        provider: Some("q".into()),
        ..LlmConfig::default()
    };
    let merged = model_settings(&other_provider, &assistant);
    assert_eq!(merged.provider.as_deref(), Some("q"));
    assert_eq!(merged.model, None, "q's default model, not p's model");
}
