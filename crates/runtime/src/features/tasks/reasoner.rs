//! The built-in reasoner (design §0.1): a background agent with its own
//! prompt and model (the delegating assistant's where the backend sets
//! none), its own transcript (the instruction as the first user message; no
//! access to the conversation or its built-ins), and only the HTTP/MCP
//! tools bound to the backend, run exactly like a conversation's (guard,
//! secrets in headers only, scrubbing, result caps). At most `maxSteps`
//! model calls within the task's deadline; the final text is the result.
//! The transcript is stored a message per row (`task_messages`) after
//! every step, so a takeover or restart resumes where it stopped: a step
//! appends the messages it added and rewrites only those it changed, never
//! the whole transcript (a task saved before the rows existed resumes from
//! its `tasks.transcript` column, and its first save writes every message
//! as a row). It is bounded (R-SEC-7, `max_task_transcript_bytes`): past
//! the bound the oldest tool results give way to a note (rewriting their
//! rows), and a task whose transcript still does not fit fails
//! (`task_transcript_full`).

use futures::StreamExt;
use rtc_core::llm::{ChatMessage, ChatRequest, LlmEvent, OutputFormat, ToolCall};
use rtc_core::model_tools::{ToolTarget, model_tools, model_view, render_variables};
use rtc_protocol::{Assistant, BuiltInTools, LlmConfig, ReasonerSettings, RunMode, ToolBinding};
use rtc_session::usage::{CallKind, UsageTag};
use rtc_store::{TaskRecord, now_millis};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::TaskService;
use super::{Ending, TaskConfig};
use crate::RuntimeError;
use crate::registry::bound::{BoundCall, CallMode};
use crate::small_model::AnswerError;

/// The system prompt of a reasoner whose backend sets none.
const DEFAULT_PROMPT: &str = "You work on a task in the background for an assistant that is talking with a user. Nobody can answer questions: use your tools, then answer with the complete, self-contained result of the task.";

/// What a call cut off by a crash or takeover is told.
const CUT_OFF: &str =
    "Error: this call was cut off (the server restarted); it may or may not have run.";

/// What a tool result dropped to keep the transcript within its bound reads.
const DROPPED: &str = "[result dropped: the task's transcript reached its size limit]";

/// Fit `transcript` within `max` bytes (as JSON) by dropping the oldest
/// tool results (never the last step's): the indices of the results it
/// dropped, or `None` when it does not fit even so.
fn fit_transcript(transcript: &mut [ChatMessage], max: usize) -> Option<Vec<usize>> {
    let size = |m: &ChatMessage| serde_json::to_vec(m).map_or(0, |v| v.len() + 1);
    let mut total: usize = 1 + transcript.iter().map(size).sum::<usize>();
    let mut dropped = Vec::new();
    if total <= max {
        return Some(dropped);
    }
    // The last step: the results after the last assistant message.
    let last_step = transcript
        .iter()
        .rposition(|m| matches!(m, ChatMessage::Assistant { .. }))
        .unwrap_or(transcript.len());
    for (at, m) in transcript[..last_step].iter_mut().enumerate() {
        if total <= max {
            break;
        }
        if let ChatMessage::Tool { content, .. } = m
            && content.len() > DROPPED.len()
        {
            total -= content.len().saturating_sub(DROPPED.len());
            DROPPED.clone_into(content);
            dropped.push(at);
        }
    }
    (total <= max).then_some(dropped)
}

/// What of the in-memory transcript is stored: its first `rows` messages
/// (one row each, `seq` their index), some changed since they were saved.
#[derive(Debug, Default)]
struct Stored {
    rows: usize,
    changed: std::collections::BTreeSet<usize>,
}

/// What one save writes: the messages added and the stored messages
/// changed since the last save, as `(seq, JSON)`.
type Delta = (Vec<(i64, String)>, Vec<(i64, String)>);

impl Stored {
    /// Stored messages `at` were changed in memory.
    fn changed(&mut self, at: impl IntoIterator<Item = usize>) {
        let rows = self.rows;
        self.changed.extend(at.into_iter().filter(|&i| i < rows));
    }

    /// What saving `transcript` now writes.
    fn delta(&self, transcript: &[ChatMessage]) -> Result<Delta, RuntimeError> {
        let row = |at: usize| -> Result<(i64, String), RuntimeError> {
            let body = serde_json::to_string(&transcript[at])
                .map_err(|e| RuntimeError::Internal(e.to_string()))?;
            Ok((i64::try_from(at).unwrap_or(i64::MAX), body))
        };
        let appended = (self.rows..transcript.len())
            .map(row)
            .collect::<Result<_, _>>()?;
        let rewritten = self
            .changed
            .iter()
            .copied()
            .filter(|&at| at < transcript.len())
            .map(row)
            .collect::<Result<_, _>>()?;
        Ok((appended, rewritten))
    }

    /// The save of `transcript` (`len` messages) went through.
    fn saved(&mut self, len: usize) {
        self.rows = len;
        self.changed.clear();
    }
}

/// The reasoner's own model settings over the delegating assistant's.
fn model_settings(own: &LlmConfig, assistant: &LlmConfig) -> LlmConfig {
    LlmConfig {
        provider: own.provider.clone().or_else(|| assistant.provider.clone()),
        model: own.model.clone().or_else(|| {
            // The assistant's model belongs to the assistant's provider.
            own.provider
                .is_none()
                .then(|| assistant.model.clone())
                .flatten()
        }),
        temperature: own.temperature.or(assistant.temperature),
        max_tokens: own.max_tokens.or(assistant.max_tokens),
    }
}

/// An assistant that offers exactly the reasoner's bindings.
fn reasoner_assistant(settings: &ReasonerSettings, llm: LlmConfig) -> Assistant {
    Assistant {
        id: None,
        name: "reasoner".to_owned(),
        description: String::new(),
        run_mode: RunMode::Pipeline,
        realtime_interface_id: None,
        speech: None,
        llm,
        system_prompt: settings.system_prompt.clone(),
        first_message: None,
        dynamic_variables: Vec::new(),
        built_in_tools: BuiltInTools::default(),
        tool_bindings: settings.tool_bindings.clone(),
        startup_actions: Vec::new(),
        task_backend_id: None,
        features: rtc_protocol::Features::default(),
        created_at: None,
        updated_at: None,
    }
}

/// The first messages of a new transcript, or the stored one (its `rows`,
/// else, for a task saved before the rows existed, the legacy column) with
/// a result for every call a crash left without one; and what of it is
/// stored as rows. An unreadable row is an error.
fn start_transcript(
    task: &TaskRecord,
    rows: &[String],
    settings: &ReasonerSettings,
    config: &TaskConfig,
) -> Result<(Vec<ChatMessage>, Stored), serde_json::Error> {
    let (mut transcript, stored) = if rows.is_empty() {
        let legacy: Vec<ChatMessage> = serde_json::from_str(&task.transcript).unwrap_or_default();
        (legacy, Stored::default())
    } else {
        let messages = rows
            .iter()
            .map(|r| serde_json::from_str(r))
            .collect::<Result<Vec<ChatMessage>, _>>()?;
        let stored = Stored {
            rows: messages.len(),
            ..Stored::default()
        };
        (messages, stored)
    };
    if transcript.is_empty() {
        let prompt = if settings.system_prompt.trim().is_empty() {
            DEFAULT_PROMPT.to_owned()
        } else {
            render_variables(&settings.system_prompt, &config.variables)
        };
        let fresh = vec![
            ChatMessage::System { content: prompt },
            ChatMessage::User {
                content: task.instruction.clone(),
            },
        ];
        return Ok((fresh, stored));
    }
    let last_calls = transcript
        .iter()
        .enumerate()
        .rev()
        .find_map(|(at, m)| match m {
            ChatMessage::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
                Some((at, tool_calls.clone()))
            }
            _ => None,
        });
    let pending: Vec<String> = match last_calls {
        Some((at, calls)) => {
            let answered: Vec<&str> = transcript[at + 1..]
                .iter()
                .filter_map(|m| match m {
                    ChatMessage::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
                    _ => None,
                })
                .collect();
            calls
                .into_iter()
                .filter(|c| !answered.contains(&c.id.as_str()))
                .map(|c| c.id)
                .collect()
        }
        None => Vec::new(),
    };
    for id in pending {
        transcript.push(ChatMessage::Tool {
            tool_call_id: id,
            content: CUT_OFF.to_owned(),
        });
    }
    Ok((transcript, stored))
}

impl TaskService<'_> {
    /// Who a reasoner task's model calls are counted for: its session's
    /// tree and assistant, the task.
    async fn task_usage_tag(self, task: &TaskRecord) -> UsageTag {
        let mut tag = match self.session(&task.session_id).await {
            Ok(ctx) => UsageTag::of(&ctx, CallKind::Task),
            Err(_) => UsageTag {
                workspace_id: task.workspace_id.clone(),
                session_id: task.session_id.clone(),
                root_session_id: task.session_id.clone(),
                assistant_id: String::new(),
                task_id: None,
                kind: CallKind::Task,
            },
        };
        tag.task_id = Some(task.id.clone());
        tag
    }

    /// Run (or resume) a reasoner task to its end; `None` when the task
    /// stopped being this instance's (taken over, or ended elsewhere).
    pub(super) async fn run_reasoner(
        self,
        task: &TaskRecord,
        config: &TaskConfig,
        cancel: &CancellationToken,
    ) -> Result<Option<Ending>, RuntimeError> {
        let Some(settings) = &config.backend.reasoner else {
            return Ok(Some(Ending::Failed(
                "the task backend has no reasoner settings".into(),
            )));
        };
        let assistant = reasoner_assistant(
            settings,
            model_settings(&settings.llm, &config.assistant_llm),
        );
        let provider = self.provider_for(&assistant);
        let model = assistant
            .llm
            .model
            .clone()
            .unwrap_or_else(|| provider.default_model.clone());
        let offered: Vec<(rtc_core::llm::ToolSpec, &ToolBinding)> =
            model_tools(&assistant, &config.tools)
                .into_iter()
                .filter_map(|(spec, target)| match target {
                    ToolTarget::Binding(i) => assistant.tool_bindings.get(i).map(|b| (spec, b)),
                    ToolTarget::BuiltIn(_) => None,
                })
                .collect();
        // Rendered once for all the task's requests.
        let specs = rtc_core::llm::FunctionList::new(
            offered
                .iter()
                .map(|(s, _)| std::sync::Arc::new(s.clone()))
                .collect(),
        );
        let tag = self.task_usage_tag(task).await;
        let provider_name = self.provider_name(&assistant);
        let rows = self.store.task_transcript(&task.id).await?;
        let started = start_transcript(task, &rows, settings, config);
        drop(rows);
        let (mut transcript, mut stored) = match started {
            Ok(started) => started,
            Err(e) => {
                return Ok(Some(Ending::Failed(format!(
                    "the task's stored transcript is unreadable: {e}"
                ))));
            }
        };
        // Resumed after its final answer was saved (the crash came before
        // the task was ended): that answer is the result.
        if let Some(answer) = saved_answer(&transcript) {
            return Ok(Some(Ending::Completed(answer)));
        }
        let mut steps = u32::try_from(task.steps).unwrap_or(u32::MAX);
        let remaining = u64::try_from(task.deadline_at - now_millis()).unwrap_or(0);
        let deadline = Instant::now() + std::time::Duration::from_millis(remaining);
        let timed_out = || {
            Ending::Failed(format!(
                "the task timed out after {} s",
                config.backend.timeout_seconds
            ))
        };
        loop {
            if cancel.is_cancelled() {
                return Ok(Some(Ending::Cancelled("cancelled".into())));
            }
            if Instant::now() >= deadline {
                return Ok(Some(timed_out()));
            }
            if steps >= settings.max_steps {
                return Ok(Some(Ending::Failed(format!(
                    "the reasoner reached its limit of {} model calls without a final answer",
                    settings.max_steps
                ))));
            }
            let request = ChatRequest {
                model: model.clone(),
                messages: transcript.clone(),
                tools: specs.clone(),
                temperature: assistant.llm.temperature,
                max_tokens: assistant.llm.max_tokens,
                output: OutputFormat::Text,
            };
            let answer = tokio::select! {
                () = cancel.cancelled() => return Ok(Some(Ending::Cancelled("cancelled".into()))),
                () = tokio::time::sleep_until(deadline) => return Ok(Some(timed_out())),
                answer = complete(provider, request) => answer,
            };
            steps += 1;
            let (content, calls) = match answer {
                Ok((content, calls, usage)) => {
                    self.meter(&tag, provider_name, &model, usage.as_ref());
                    (content, calls)
                }
                Err(e) => {
                    return Ok(Some(Ending::Failed(format!(
                        "the reasoner's model call failed: {e}"
                    ))));
                }
            };
            transcript.push(ChatMessage::Assistant {
                content: content.clone(),
                tool_calls: calls.clone(),
            });
            if calls.is_empty() {
                if !self
                    .save_transcript(task, &transcript, &mut stored, steps, "finished")
                    .await?
                {
                    return Ok(None);
                }
                return Ok(Some(Ending::Completed(final_result(content))));
            }
            for call in &calls {
                let result = tokio::select! {
                    () = cancel.cancelled() => return Ok(Some(Ending::Cancelled("cancelled".into()))),
                    () = tokio::time::sleep_until(deadline) => return Ok(Some(timed_out())),
                    r = self.reasoner_call(task, config, &offered, call) => r?,
                };
                transcript.push(ChatMessage::Tool {
                    tool_call_id: call.id.clone(),
                    content: result,
                });
            }
            let max = self.config.feature_limits.max_task_transcript_bytes;
            let Some(dropped) = fit_transcript(&mut transcript, max) else {
                return Ok(Some(Ending::Failed(format!(
                    "task_transcript_full: the task's transcript passed its limit of {max} bytes even without its older tool results"
                ))));
            };
            stored.changed(dropped);
            let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
            let detail = format!("step {steps}: called {}", names.join(", "));
            if !self
                .save_transcript(task, &transcript, &mut stored, steps, &detail)
                .await?
            {
                // Ended elsewhere (cancelled) or taken over: stop here.
                return Ok(None);
            }
        }
    }

    /// Save a step while this instance holds the task: the messages it
    /// added and those it changed (never the whole transcript), its steps
    /// and detail, in one transaction; then announce it. `false` when the
    /// task is no longer ours to drive (ended elsewhere or taken over).
    async fn save_transcript(
        self,
        task: &TaskRecord,
        transcript: &[ChatMessage],
        stored: &mut Stored,
        steps: u32,
        detail: &str,
    ) -> Result<bool, RuntimeError> {
        let (appended, rewritten) = stored.delta(transcript)?;
        let detail = detail.replace('\0', "");
        let held = self
            .store
            .save_task_step(
                &task.id,
                &self.settings.cluster.instance,
                &appended,
                &rewritten,
                i64::from(steps),
                Some(&detail),
            )
            .await?;
        if !held {
            return Ok(false);
        }
        stored.saved(transcript.len());
        self.tell_progress(task, detail, steps).await?;
        Ok(true)
    }

    /// One tool call of the reasoner's model, as the model reads its result.
    async fn reasoner_call(
        self,
        task: &TaskRecord,
        config: &TaskConfig,
        offered: &[(rtc_core::llm::ToolSpec, &ToolBinding)],
        call: &ToolCall,
    ) -> Result<String, RuntimeError> {
        let Some((_, binding)) = offered.iter().find(|(s, _)| s.name == call.name) else {
            return Ok(format!("Error: there is no tool named `{}`", call.name));
        };
        let Some(tool) = config.tools.get(&binding.tool_id) else {
            return Ok(format!(
                "Error: tool `{}` is not available",
                binding.tool_id
            ));
        };
        let bound = BoundCall {
            workspace: &task.workspace_id,
            tool,
            binding,
            model_args: &call.arguments,
            vars: &config.variables,
            client: None,
        };
        let mode = if config.test_mode {
            CallMode::Test(None)
        } else {
            CallMode::Live
        };
        Ok(match self.execute_bound(bound, mode).await {
            Ok(output) => match model_view(binding, &output.value) {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            },
            Err(e) => format!("Error: {}", e.for_model()?),
        })
    }
}

/// The final answer a resumed transcript already ends with.
fn saved_answer(transcript: &[ChatMessage]) -> Option<String> {
    match transcript.last() {
        Some(ChatMessage::Assistant {
            content,
            tool_calls,
        }) if tool_calls.is_empty() => Some(final_result(content.clone())),
        _ => None,
    }
}

/// The result a final answer gives.
fn final_result(content: String) -> String {
    if content.trim().is_empty() {
        "(the reasoner finished without an answer)".to_owned()
    } else {
        content
    }
}

/// The model's whole answer: its text and its tool calls.
async fn complete(
    provider: &crate::Provider,
    request: ChatRequest,
) -> Result<(String, Vec<ToolCall>, Option<rtc_core::llm::Usage>), AnswerError> {
    let mut stream = provider.client.stream(request);
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(LlmEvent::Done(r)) => return Ok((r.content, r.tool_calls, r.usage)),
            Ok(LlmEvent::TextDelta(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Err(AnswerError::NoAnswer)
}

#[cfg(test)]
#[path = "reasoner_tests.rs"]
mod tests;
