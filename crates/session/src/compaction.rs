//! Context windows and compaction (R-RN-8). Before each model call the
//! request's tokens are counted (the model's tokenizer, through its
//! client); when they would pass the configured share of the model's
//! window (`context_compact_percent`, 80 by default) the older messages
//! are replaced *in the request* by a summary the small model writes. The
//! system prompt stays first and verbatim, the features' notes (open
//! todos, an active goal) follow the summary verbatim, the latest
//! messages are sent as stored, and a tool call is never cut from its
//! result. The stored history stays whole; the summary is stored
//! (`context_summaries`) so a restart or another instance goes on from
//! it, and each later compaction folds the previous summary into the new
//! one. A provider's `context_length_exceeded` makes the session learn a
//! smaller window and compact again (see `turn.rs`).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use rtc_core::llm::ChatMessage;
use rtc_core::tokens::{IMAGE_TOKENS, MESSAGE_OVERHEAD, REQUEST_OVERHEAD};
use rtc_protocol::{Assistant, ContextCompacted, EventBody, Message, MessageRole};
use rtc_store::ContextSummary;

use crate::RuntimeError;
use crate::chat_history::{RequestView, chat_history, replayed};
use crate::context::SessionCtx;
use crate::kernel::{Host, Kernel, Provider};
use crate::small_model::SmallModel;

/// What introduces the summary in the request's system message.
const SUMMARY_HEADER: &str = "## Earlier in this conversation\nThe older part of this conversation no longer fits the model's context; the platform summarized it here. The latest messages follow as they were.\n\n";

/// What the small model is told to write.
const SUMMARIZER: &str = "You summarize the older part of a conversation between a user and an AI assistant (with the assistant's tool calls and their results), so that the assistant can go on without it. Keep what the user wants and prefers, names, numbers and facts learned (the key data of tool results), decisions made, what was done, and what is still open. Leave out pleasantries and anything said twice. Write plain text in the conversation's language, at most 400 words. Invent nothing.";

/// Longest summary kept (bytes); a longer answer is cut.
const MAX_SUMMARY_BYTES: usize = 8 * 1024;

/// Bytes of one message the summarizer reads.
const TRANSCRIPT_LINE_BYTES: usize = 2_000;

/// Token counts remembered per session before they are dropped and
/// counted again.
const MAX_REMEMBERED_COUNTS: usize = 8_192;

/// Smallest window the kernel works with (a configuration below it is
/// taken as this).
const MIN_WINDOW: u32 = 1_024;

/// A session's compaction state in memory.
#[derive(Default)]
pub struct ContextMemory {
    /// Whether `summary` was read from the store.
    loaded: bool,
    summary: Option<Arc<ContextSummary>>,
    /// A window smaller than the table's, learned from the provider's
    /// refusal of a longer request.
    learned_window: Option<u32>,
    /// Token counts of stored messages by id (and whether cut as an
    /// earlier turn's result).
    counts: HashMap<u64, u32>,
}

impl ContextMemory {
    /// Read the summary again (another instance may have written one).
    pub fn forget_summary(&mut self) {
        self.loaded = false;
        self.summary = None;
    }
}

/// Why a request is compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pressure {
    /// It would pass the configured share of the window.
    Threshold,
    /// The provider refused it as too long.
    Refused,
}

impl Pressure {
    fn as_str(self) -> &'static str {
        match self {
            Self::Threshold => "threshold",
            Self::Refused => "context_length_exceeded",
        }
    }
}

/// What one turn's requests are built from.
pub struct StepContext<'a> {
    pub assistant: &'a Assistant,
    pub provider: &'a Provider,
    pub model: &'a str,
    /// Where the request's history starts (a workflow stage cuts it).
    pub history_from: usize,
    pub view: RequestView,
    /// Tokens of the functions offered.
    pub tools_tokens: u32,
}

/// A compaction to make: the messages `start..cut` go into the summary.
struct Plan {
    tokens_before: u32,
    from_message_id: String,
    transcript: String,
    summarized: usize,
}

/// What the history gave for a request.
enum Built {
    Ready(Vec<ChatMessage>),
    Compact(Plan),
    /// Nothing left to compact (one unit is all there is).
    Stuck,
}

impl<H: Host> Kernel<H> {
    /// The messages of a step's request: compacted first when they would
    /// pass the threshold, or when `pressure` asks; `None` when they
    /// cannot be made shorter.
    pub async fn step_messages(
        &self,
        ctx: &SessionCtx,
        step: &StepContext<'_>,
        system: &str,
        pressure: Option<Pressure>,
    ) -> Result<Option<Vec<ChatMessage>>, RuntimeError> {
        let summary = self.context_summary(ctx).await?;
        // The notes go with a summary only: asked for when there is one.
        let mut notes = match &summary {
            Some(_) => Some(self.context_notes(ctx).await?),
            None => None,
        };
        let window = self.window_of(ctx, step);
        let must = pressure.is_some();
        let built = self
            .with_history(ctx, |h| {
                let h = h.get(step.history_from..).unwrap_or_default();
                let notes = notes.as_deref().unwrap_or_default();
                self.build(
                    ctx,
                    step,
                    h,
                    system,
                    summary.as_deref(),
                    notes,
                    window,
                    must,
                )
            })
            .await?;
        let plan = match built {
            Built::Ready(messages) => return Ok(Some(messages)),
            Built::Stuck => return Ok(None),
            Built::Compact(plan) => plan,
        };
        let notes = match notes.take() {
            Some(n) => n,
            None => self.context_notes(ctx).await?,
        };
        let summarized = self
            .summarize(ctx, step.assistant, summary.as_deref(), plan.transcript)
            .await?;
        let before = summary.as_ref().map_or(0, |s| s.summarized_messages);
        let mut record = ContextSummary {
            session_id: ctx.id.clone(),
            from_message_id: plan.from_message_id,
            summary: summarized,
            summarized_messages: before + i64::try_from(plan.summarized).unwrap_or(i64::MAX),
            tokens_before: i64::from(plan.tokens_before),
            tokens_after: 0,
            created_at: rtc_store::now_millis(),
        };
        let after = self
            .with_history(ctx, |h| {
                let h = h.get(step.history_from..).unwrap_or_default();
                let start = summary_start(h, Some(&record));
                let counts = self.message_counts(ctx, step, h);
                let system = compacted_system(system, Some(&record), &notes);
                request_tokens(step, &system, &counts[start..])
            })
            .await?;
        record.tokens_after = i64::from(after);
        self.store.save_context_summary(&record).await?;
        let compacted = ContextCompacted {
            tokens_before: u64::from(plan.tokens_before),
            tokens_after: u64::from(after),
            context_window: u64::from(window),
            summarized_messages: u64::try_from(record.summarized_messages).unwrap_or(0),
            reason: pressure.unwrap_or(Pressure::Threshold).as_str().to_owned(),
        };
        let summary = Arc::new(record);
        ctx.ext(|m: &mut ContextMemory| {
            m.loaded = true;
            m.summary = Some(summary.clone());
        });
        ctx.events.emit(EventBody::from(compacted)).await?;
        let messages = self
            .with_history(ctx, |h| {
                let h = h.get(step.history_from..).unwrap_or_default();
                let start = summary_start(h, Some(&summary));
                let system = compacted_system(system, Some(&summary), &notes);
                self.request_from(step, h, start, system)
            })
            .await?;
        Ok(Some(messages))
    }

    /// A refused request counted `tokens` here: the session's window is
    /// taken from now on as the provider's message states it ("maximum
    /// context length is W tokens"), scaled by how much more the provider
    /// counted ("resulted in U tokens": W × tokens / U, so our own counts
    /// fit the provider's window), else as nine tenths of the request.
    pub fn learn_window(&self, ctx: &SessionCtx, tokens: u32, message: &str) {
        let learned = match (stated_window(message), stated_count(message)) {
            (Some(w), Some(u)) if u > tokens => {
                let scaled = u64::from(w) * u64::from(tokens) / u64::from(u);
                u32::try_from(scaled).unwrap_or(w)
            }
            (Some(w), _) => w,
            (None, _) => tokens / 10 * 9,
        }
        .max(MIN_WINDOW);
        ctx.ext(|m: &mut ContextMemory| {
            m.learned_window = Some(m.learned_window.map_or(learned, |w| w.min(learned)));
        });
    }

    /// The request's tokens as the next step would send them.
    pub async fn step_tokens(
        &self,
        ctx: &SessionCtx,
        step: &StepContext<'_>,
        system: &str,
    ) -> Result<u32, RuntimeError> {
        let summary = self.context_summary(ctx).await?;
        self.with_history(ctx, |h| {
            let h = h.get(step.history_from..).unwrap_or_default();
            let start = summary_start(h, summary.as_deref());
            let counts = self.message_counts(ctx, step, h);
            let system = compacted_system(system, summary.as_deref(), &[]);
            request_tokens(step, &system, &counts[start..])
        })
        .await
    }

    /// What the features ask a compacted request to carry verbatim.
    async fn context_notes(&self, ctx: &SessionCtx) -> Result<Vec<String>, RuntimeError> {
        let host = self.host();
        let mut notes = Vec::new();
        for feature in &self.features {
            if let Some(note) = feature.context_note(&host, ctx).await? {
                notes.push(note);
            }
        }
        Ok(notes)
    }

    /// The window the session's requests must fit.
    fn window_of(&self, ctx: &SessionCtx, step: &StepContext<'_>) -> u32 {
        let table = step
            .provider
            .client
            .caps(step.model)
            .context_window
            .max(MIN_WINDOW);
        let learned = ctx.ext(|m: &mut ContextMemory| m.learned_window);
        learned.map_or(table, |l| l.min(table))
    }

    /// The session's stored summary (read once, then kept in memory).
    async fn context_summary(
        &self,
        ctx: &SessionCtx,
    ) -> Result<Option<Arc<ContextSummary>>, RuntimeError> {
        if let Some(known) = ctx.ext(|m: &mut ContextMemory| m.loaded.then(|| m.summary.clone())) {
            return Ok(known);
        }
        let stored = self.store.context_summary(&ctx.id).await?.map(Arc::new);
        ctx.ext(|m: &mut ContextMemory| {
            m.loaded = true;
            m.summary.clone_from(&stored);
        });
        Ok(stored)
    }

    /// The request as it stands, or the compaction it needs.
    #[allow(
        clippy::too_many_arguments,
        reason = "one private step of step_messages"
    )]
    fn build(
        &self,
        ctx: &SessionCtx,
        step: &StepContext<'_>,
        h: &[Message],
        system: &str,
        summary: Option<&ContextSummary>,
        notes: &[String],
        window: u32,
        must: bool,
    ) -> Built {
        let start = summary_start(h, summary);
        let counts = self.message_counts(ctx, step, h);
        let full = compacted_system(system, summary, notes);
        let tokens = request_tokens(step, &full, &counts[start..]);
        let reserve = output_reserve(step.assistant, window);
        let percent = u32::from(self.settings.limits.context_compact_percent.clamp(10, 95));
        let threshold = window / 100 * percent;
        if !must && tokens.saturating_add(reserve) <= threshold {
            return Built::Ready(self.request_from(step, h, start, full));
        }
        // What the kept messages may take: half the room the threshold
        // leaves beside what every request carries (prompt, functions,
        // the answer's reserve) and the summary.
        let fixed = request_tokens(step, &full, &[])
            .saturating_add(reserve)
            .saturating_add((window / 16).min(1_024));
        let budget = threshold.saturating_sub(fixed) / 2;
        let Some(cut) = cut_point(h, &counts, start, budget) else {
            if must {
                return Built::Stuck;
            }
            // Nothing to summarize: the request goes as it is.
            return Built::Ready(self.request_from(step, h, start, full));
        };
        Built::Compact(Plan {
            tokens_before: tokens,
            from_message_id: h[cut].id.clone(),
            transcript: transcript(&h[start..cut]),
            summarized: cut - start,
        })
    }

    /// The request's messages: `system`, then `h` from `start` (the
    /// running turn's place shifted with it).
    fn request_from(
        &self,
        step: &StepContext<'_>,
        h: &[Message],
        start: usize,
        system: String,
    ) -> Vec<ChatMessage> {
        let view = RequestView {
            turn_from: step.view.turn_from.saturating_sub(start),
            ..step.view
        };
        chat_history(system, &h[start..], |m| self.is_report(m), view)
    }

    /// Each stored message's tokens as the request carries it (remembered
    /// per message).
    fn message_counts(&self, ctx: &SessionCtx, step: &StepContext<'_>, h: &[Message]) -> Vec<u32> {
        let client = &step.provider.client;
        let count = |t: &str| client.count_tokens(step.model, t);
        ctx.ext(|memory: &mut ContextMemory| {
            if memory.counts.len() > MAX_REMEMBERED_COUNTS {
                memory.counts.clear();
            }
            h.iter()
                .enumerate()
                .map(|(i, m)| {
                    let earlier = m.role == MessageRole::Tool && i < step.view.turn_from;
                    let mut key = DefaultHasher::new();
                    (m.id.as_str(), m.content.len(), earlier, step.model).hash(&mut key);
                    *memory
                        .counts
                        .entry(key.finish())
                        .or_insert_with(|| stored_tokens(m, earlier, step.view, &count))
                })
                .collect()
        })
    }

    /// The new summary: the previous one with `transcript` folded in,
    /// written by the small model. If it fails, the older messages are
    /// left out with a note saying so (the session goes on) and the host
    /// gets a `compaction_failed` error.
    async fn summarize(
        &self,
        ctx: &SessionCtx,
        assistant: &Assistant,
        previous: Option<&ContextSummary>,
        transcript: String,
    ) -> Result<String, RuntimeError> {
        let tag = crate::usage::UsageTag::of(ctx, crate::usage::CallKind::Small);
        let small = SmallModel::for_assistant(&self.settings, assistant).metered(&self.usage, tag);
        let window = small.provider.client.caps(small.model).context_window;
        // What the summarizer reads stays within half its window.
        let most = usize::try_from(window / 2)
            .unwrap_or(usize::MAX)
            .saturating_mul(3);
        let transcript = tail(&transcript, most);
        let user = match previous {
            Some(p) => format!(
                "The summary so far:\n{}\n\nThe conversation that follows it:\n{transcript}",
                p.summary
            ),
            None => format!("The conversation:\n{transcript}"),
        };
        match small.ask(SUMMARIZER, user, false).await {
            Ok(text) if !text.trim().is_empty() => Ok(head(text.trim(), MAX_SUMMARY_BYTES)),
            outcome => {
                let why = match outcome {
                    Err(e) => e.to_string(),
                    Ok(_) => "the small model answered nothing".to_owned(),
                };
                let message = format!(
                    "the conversation's older messages could not be summarized ({why}); they are left out of the model's requests"
                );
                ctx.events
                    .emit(EventBody::error("compaction_failed", message))
                    .await?;
                let kept = previous.map_or(String::new(), |p| format!("{}\n\n", p.summary));
                Ok(format!(
                    "{kept}(Some earlier messages are left out: their summary could not be written.)"
                ))
            }
        }
    }
}

/// The window a provider's refusal states ("This model's maximum context
/// length is 8192 tokens").
fn stated_window(message: &str) -> Option<u32> {
    number_after(message, "context length is ")
}

/// The request's tokens as a provider's refusal counts them ("your
/// messages resulted in 9000 tokens").
fn stated_count(message: &str) -> Option<u32> {
    number_after(message, "resulted in ")
}

/// The number (commas allowed) right after `words` in `message`.
fn number_after(message: &str, words: &str) -> Option<u32> {
    let lower = message.to_ascii_lowercase();
    let at = lower.find(words)? + words.len();
    let digits: String = lower[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Where the request's messages start after `summary`: the message it
/// names, or the beginning when it names none of these.
fn summary_start(h: &[Message], summary: Option<&ContextSummary>) -> usize {
    summary
        .and_then(|s| h.iter().position(|m| m.id == s.from_message_id))
        .unwrap_or(0)
}

/// The system message of a request: the prompt, then the summary and the
/// features' notes when there is a summary.
fn compacted_system(system: &str, summary: Option<&ContextSummary>, notes: &[String]) -> String {
    let Some(summary) = summary else {
        return system.to_owned();
    };
    let mut out = String::with_capacity(system.len() + summary.summary.len() + 256);
    if !system.trim().is_empty() {
        out.push_str(system);
        out.push_str("\n\n");
    }
    out.push_str(SUMMARY_HEADER);
    out.push_str(&summary.summary);
    for note in notes {
        out.push_str("\n\n");
        out.push_str(note);
    }
    out
}

/// The tokens of a request of `system`, messages of `counts` and the
/// step's functions.
fn request_tokens(step: &StepContext<'_>, system: &str, counts: &[u32]) -> u32 {
    let system = step.provider.client.count_tokens(step.model, system) + MESSAGE_OVERHEAD;
    counts
        .iter()
        .fold(REQUEST_OVERHEAD + system + step.tools_tokens, |sum, c| {
            sum.saturating_add(*c)
        })
}

/// Room kept for the answer: the assistant's `max_tokens`, else an
/// eighth of the window up to 4,096.
fn output_reserve(assistant: &Assistant, window: u32) -> u32 {
    assistant
        .llm
        .max_tokens
        .unwrap_or_else(|| (window / 8).min(4_096))
}

/// One stored message's tokens in a request.
fn stored_tokens(
    m: &Message,
    earlier: bool,
    view: RequestView,
    count: &dyn Fn(&str) -> u32,
) -> u32 {
    let text = if earlier {
        count(&replayed(&m.content, view.max_replayed_result_bytes))
    } else {
        count(&m.content)
    };
    let calls = m.tool_calls.iter().fold(0u32, |sum, c| {
        sum.saturating_add(count(&c.name))
            .saturating_add(count(&c.arguments))
            .saturating_add(MESSAGE_OVERHEAD)
    });
    let images = if view.vision {
        u32::try_from(m.images.len())
            .unwrap_or(u32::MAX)
            .saturating_mul(IMAGE_TOKENS)
    } else {
        0
    };
    text.saturating_add(calls)
        .saturating_add(images)
        .saturating_add(MESSAGE_OVERHEAD)
}

/// Where to cut `h` so that the messages from the cut on take at most
/// `budget` tokens: the earliest such place, else the last one there is;
/// never at a tool result, nor between a call and a result stored after
/// it. `None` when no place after `start` is allowed.
fn cut_point(h: &[Message], counts: &[u32], start: usize, budget: u32) -> Option<usize> {
    // A place p is barred when a call before it has its result at or after it.
    let mut barred = vec![false; h.len() + 1];
    let mut calls: HashMap<&str, usize> = HashMap::new();
    for (i, m) in h.iter().enumerate() {
        for c in &m.tool_calls {
            calls.insert(c.id.as_str(), i);
        }
        if let Some(at) = m.tool_call_id.as_deref().and_then(|id| calls.get(id)) {
            for b in &mut barred[at + 1..=i] {
                *b = true;
            }
        }
    }
    let mut suffix = vec![0u32; h.len() + 1];
    for i in (0..h.len()).rev() {
        suffix[i] = suffix[i + 1].saturating_add(counts[i]);
    }
    let allowed =
        |p: usize| p > start && p < h.len() && h[p].role != MessageRole::Tool && !barred[p];
    (start + 1..h.len())
        .find(|&p| allowed(p) && suffix[p] <= budget)
        .or_else(|| (start + 1..h.len()).rev().find(|&p| allowed(p)))
}

/// The messages as the summarizer reads them, each cut to
/// [`TRANSCRIPT_LINE_BYTES`].
fn transcript(h: &[Message]) -> String {
    let mut out = String::new();
    for m in h {
        let line = match m.role {
            MessageRole::User => format!("User: {}", head(&m.content, TRANSCRIPT_LINE_BYTES)),
            MessageRole::HumanAgent => {
                format!("Human agent: {}", head(&m.content, TRANSCRIPT_LINE_BYTES))
            }
            MessageRole::Assistant => {
                let mut line = String::new();
                if !m.content.is_empty() {
                    line = format!("Assistant: {}", head(&m.content, TRANSCRIPT_LINE_BYTES));
                }
                for c in &m.tool_calls {
                    if !line.is_empty() {
                        line.push('\n');
                    }
                    line.push_str(&format!(
                        "Assistant called {}({})",
                        c.name,
                        head(&c.arguments, 500)
                    ));
                }
                line
            }
            MessageRole::Tool => format!(
                "Result of {}: {}",
                m.name.as_deref().unwrap_or("the tool"),
                head(&m.content, TRANSCRIPT_LINE_BYTES)
            ),
        };
        if !line.is_empty() {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// The first `max` bytes of `text` (on a character boundary), marked when
/// cut.
fn head(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} […]", &text[..end])
}

/// The last `max` bytes of `text` (on a character boundary), marked when
/// cut.
fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("[…] {}", &text[start..])
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;
