//! Tasks as the API shows them: a stored row, and a reasoner's
//! transcript message by message.

use rtc_core::time::rfc3339_from_millis;
use rtc_protocol::{Task, TaskBackendType, TaskMessage, TaskStatus, TaskToolCall};
use rtc_store::TaskRecord;

/// The API view of a task row.
pub(crate) fn task_view(t: &TaskRecord, with_transcript: bool) -> Task {
    // The row holds what `TaskBackendType::as_str` wrote when the task was
    // delegated; a type this build does not know (a newer version's row)
    // shows as the platform's own kind.
    let backend_type = TaskBackendType::parse(&t.backend_type).unwrap_or(TaskBackendType::Reasoner);
    let transcript = with_transcript.then(|| {
        serde_json::from_str::<Vec<rtc_core::llm::ChatMessage>>(&t.transcript)
            .unwrap_or_default()
            .into_iter()
            .map(transcript_message)
            .collect()
    });
    Task {
        id: t.id.clone(),
        session_id: t.session_id.clone(),
        backend_id: t.backend_id.clone(),
        backend_type,
        title: t.title.clone(),
        instruction: t.instruction.clone(),
        status: TaskStatus::parse(&t.status).unwrap_or(TaskStatus::Failed),
        result: t.result.clone(),
        error: t.error.clone(),
        detail: t.detail.clone(),
        external_id: t.external_id.clone(),
        steps: u32::try_from(t.steps).unwrap_or(u32::MAX),
        started_at: rfc3339_from_millis(t.created_at),
        updated_at: rfc3339_from_millis(t.updated_at),
        finished_at: t.finished_at.map(rfc3339_from_millis),
        transcript,
    }
}

fn transcript_message(m: rtc_core::llm::ChatMessage) -> TaskMessage {
    use rtc_core::llm::ChatMessage as M;
    let plain = |role: &str, content: String| TaskMessage {
        role: role.to_owned(),
        content,
        tool_calls: Vec::new(),
        tool_call_id: None,
        name: None,
    };
    match m {
        M::System { content } => plain("system", content),
        M::User { content } | M::UserImages { content, .. } => plain("user", content),
        M::Assistant {
            content,
            tool_calls,
        } => TaskMessage {
            tool_calls: tool_calls
                .into_iter()
                .map(|c| TaskToolCall {
                    id: c.id,
                    name: c.name,
                    arguments: c.arguments,
                })
                .collect(),
            ..plain("assistant", content)
        },
        M::Tool {
            tool_call_id,
            content,
        } => TaskMessage {
            tool_call_id: Some(tool_call_id),
            ..plain("tool", content)
        },
    }
}
