//! The task that records a voice host's transcripts as user messages
//! (`source: "audio"`), one after another: each waits for started tools to
//! finish, and a question that waits (askUser, design `voice-pipeline.md`
//! §4(f)) takes the transcript as its answer instead.

use std::sync::Arc;
use std::time::Instant;

use rtc_protocol::{AnswerParams, AnswerValue, Answers, EventBody};
use rtc_speech::voice_ask::match_answer;
use tokio::sync::mpsc;

use super::item::Floor;
use super::user_speech::TranscriptHold;
use crate::features::interaction::InteractionService;
use crate::features::interaction::service::pending_question;
use crate::session::SessionCtx;
use crate::{Inner, Runtime};

/// The longest a transcript waits for running tools before it is sent.
const TOOLS_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// The task that records transcripts as user messages, one after another
/// (each may wait for the running turn to end).
pub(super) fn spawn_sender(
    inner: &Arc<Inner>,
    ctx: &Arc<SessionCtx>,
    floor: Floor,
) -> mpsc::UnboundedSender<(String, TranscriptHold)> {
    let (tx, mut rx) = mpsc::unbounded_channel::<(String, TranscriptHold)>();
    let rt = Runtime {
        inner: inner.clone(),
    };
    let (workspace, session) = (ctx.workspace.clone(), ctx.id.clone());
    let events = ctx.clone();
    let asker = inner.clone();
    inner.tasks.spawn(async move {
        // Answers heard so far to the question that waits (its call id).
        let mut heard: (String, Vec<AnswerValue>) = (String::new(), Vec::new());
        // Each transcript holds the runtime's own turns until it is
        // recorded (`user_speech.rs`).
        while let Some((text, _held)) = rx.recv().await {
            // A waiting question takes the transcript as its answer.
            if let Some(pending) = pending_question(&events) {
                if heard.0 != pending.call_id {
                    heard = (pending.call_id.clone(), Vec::new());
                }
                if let Some(q) = pending.questions.get(heard.1.len()) {
                    let labels: Vec<&str> = q.options.iter().map(|o| o.label.as_str()).collect();
                    let chosen = match_answer(&text, &labels, q.multi_select).to_labels(&labels);
                    heard.1.push(match chosen.as_slice() {
                        [one] => AnswerValue::One(one.clone()),
                        _ => AnswerValue::Many(chosen),
                    });
                }
                if heard.1.len() < pending.questions.len() {
                    let item = rtc_store::new_id("ask");
                    super::ask(&asker, &events, &item, &pending, heard.1.len());
                    continue;
                }
                let params = AnswerParams {
                    call_id: Some(pending.call_id.clone()),
                    answers: Answers::InOrder(std::mem::take(&mut heard.1)),
                };
                if let Err(e) = InteractionService::of(&asker)
                    .answer_question(&events, params)
                    .await
                {
                    let _ = events
                        .events
                        .emit(EventBody::error("voice_answer_failed", e.to_string()))
                        .await;
                }
                continue;
            }
            // A new message cancels the running turn: started tools finish
            // first (their outputs are stored; §4(d) barge-in, step 3).
            let deadline = Instant::now() + TOOLS_WAIT;
            while floor.lock().tools_running && Instant::now() < deadline {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            let sent = rt
                .user_message_from(&workspace, &session, &text, Some("audio"))
                .await;
            if let Err(e) = sent {
                let (code, message) = match &e {
                    crate::RuntimeError::Limited { code, message, .. }
                    | crate::RuntimeError::Conflict { code, message } => (*code, message.clone()),
                    other => ("voice_message_failed", other.to_string()),
                };
                let _ = events.events.emit(EventBody::error(code, message)).await;
            }
        }
    });
    tx
}
