//! A session's history: messages recorded with their events (one
//! transaction through the journal) and kept in step in memory, and the
//! inputs and words the runtime adds by itself.

use rtc_protocol::{Assistant, EventBody, Message, MessageCompleted, MessageRole};
use rtc_store::{SessionUpdate, new_id, now_millis};

use crate::RuntimeError;
use crate::context::SessionCtx;
use crate::events::Durability;
use crate::kernel::{Host, Kernel, Provider};

/// [`SessionCtx::history_bytes`] before the size is known.
pub const UNKNOWN_SIZE: u64 = u64::MAX;

/// About how many bytes a message adds to the stored history (its text,
/// its tool calls and a little for the rest).
pub fn message_size(m: &Message) -> u64 {
    let calls: usize = m
        .tool_calls
        .iter()
        .map(|c| c.id.len() + c.name.len() + c.arguments.len() + 40)
        .sum();
    let images: usize = m.images.iter().map(|i| i.data.len() + 40).sum();
    (m.content.len() + calls + images + 120) as u64
}

/// A new message of `role`, stamped now.
pub fn message(role: MessageRole, content: &str) -> Message {
    Message {
        id: new_id("msg"),
        role,
        content: content.to_owned(),
        tool_calls: Vec::new(),
        tool_call_id: None,
        name: None,
        source: None,
        interrupted: false,
        images: Vec::new(),
        created_at: rtc_core::time::rfc3339_from_millis(now_millis()),
    }
}

impl<H: Host> Kernel<H> {
    /// Record a message with its events (one transaction) and keep the
    /// in-memory history in step.
    pub async fn append(
        &self,
        ctx: &SessionCtx,
        m: Message,
        events: Vec<EventBody>,
        durability: Durability,
    ) -> Result<(), RuntimeError> {
        self.append_with(ctx, m, events, SessionUpdate::default(), durability)
            .await
    }

    /// [`Self::append`] with a change of the session row in the same
    /// transaction.
    pub async fn append_with(
        &self,
        ctx: &SessionCtx,
        m: Message,
        events: Vec<EventBody>,
        update: SessionUpdate,
        durability: Durability,
    ) -> Result<(), RuntimeError> {
        let mut history = ctx.history.lock().await;
        let kept = history.is_some().then(|| m.clone());
        let size = message_size(&m);
        ctx.events
            .record(Some(m), events, update, durability)
            .await?;
        // Unknown stays unknown: it is read from the store when needed.
        let _ = ctx.history_bytes.fetch_update(
            std::sync::atomic::Ordering::SeqCst,
            std::sync::atomic::Ordering::SeqCst,
            |n| (n != UNKNOWN_SIZE).then(|| n + size),
        );
        if let (Some(h), Some(m)) = (history.as_mut(), kept) {
            h.push(m);
        }
        Ok(())
    }

    /// Change stored message `id` of the session in place with `f` (an
    /// answer the user cut in on after it was stored): what is queued is
    /// committed first, then the message is replaced in the store and in
    /// memory. `None` when the session has no such message (yet).
    pub async fn amend_message(
        &self,
        ctx: &SessionCtx,
        id: &str,
        f: impl FnOnce(&mut Message),
    ) -> Result<Option<Message>, RuntimeError> {
        let mut history = ctx.history.lock().await;
        self.journal.flush().await;
        let kept = history
            .as_ref()
            .map(|h| h.iter().find(|m| m.id == id).cloned());
        let mut m = match kept {
            Some(Some(m)) => m,
            Some(None) => return Ok(None),
            None => match self
                .store
                .messages(&ctx.id)
                .await?
                .into_iter()
                .find(|m| m.id == id)
            {
                Some(m) => m,
                None => return Ok(None),
            },
        };
        let before = message_size(&m);
        f(&mut m);
        if !self.store.replace_message(&ctx.id, &m).await? {
            return Ok(None);
        }
        let after = message_size(&m);
        let _ = ctx.history_bytes.fetch_update(
            std::sync::atomic::Ordering::SeqCst,
            std::sync::atomic::Ordering::SeqCst,
            |n| (n != UNKNOWN_SIZE).then(|| (n + after).saturating_sub(before)),
        );
        if let Some(kept) = history
            .as_mut()
            .and_then(|h| h.iter_mut().find(|k| k.id == id))
        {
            *kept = m.clone();
        }
        Ok(Some(m))
    }

    /// Run `f` over the session's history, from memory after the first
    /// read (no copy of the whole history per model call).
    pub async fn with_history<T>(
        &self,
        ctx: &SessionCtx,
        f: impl FnOnce(&[Message]) -> T,
    ) -> Result<T, RuntimeError> {
        let mut history = ctx.history.lock().await;
        if history.is_none() {
            self.journal.flush().await;
            let loaded = self.store.messages(&ctx.id).await?;
            let size = loaded.iter().map(message_size).sum();
            ctx.history_bytes
                .store(size, std::sync::atomic::Ordering::SeqCst);
            *history = Some(loaded);
        }
        Ok(f(history.as_deref().unwrap_or_default()))
    }

    /// About how many bytes the session's stored history holds (read from
    /// the store the first time it is asked).
    pub async fn history_size(&self, ctx: &SessionCtx) -> Result<u64, RuntimeError> {
        let known = ctx.history_bytes.load(std::sync::atomic::Ordering::SeqCst);
        if known != UNKNOWN_SIZE {
            return Ok(known);
        }
        // Under the history lock, as appends are, so none is counted twice.
        let _history = ctx.history.lock().await;
        self.journal.flush().await;
        let size = self.store.message_bytes(&ctx.id).await?;
        ctx.history_bytes
            .store(size, std::sync::atomic::Ordering::SeqCst);
        Ok(size)
    }

    /// Refuse `text` for a session whose history it would take past its
    /// bound (R-SEC-7, `history_full`); with no text, refuse a turn of a
    /// session already past it.
    pub async fn check_history_room(
        &self,
        ctx: &SessionCtx,
        text: Option<&str>,
    ) -> Result<(), RuntimeError> {
        let max = self.settings.limits.max_history_bytes;
        let size = self.history_size(ctx).await?;
        let adding = text.map_or(0, |t| message_size(&message(MessageRole::User, t)));
        if size.saturating_add(adding) > max {
            return Err(RuntimeError::Conflict {
                code: "history_full",
                message: format!(
                    "the session's history holds about {size} bytes and may hold {max} (RTC_MAX_HISTORY_BYTES); start a new session"
                ),
            });
        }
        Ok(())
    }

    /// After a turn: a history larger than `history_memory_bytes` is not
    /// kept in memory until the next one (it is read again then).
    pub async fn release_large_history(&self, ctx: &SessionCtx) {
        let size = ctx.history_bytes.load(std::sync::atomic::Ordering::SeqCst);
        if size != UNKNOWN_SIZE && size > self.settings.limits.history_memory_bytes {
            *ctx.history.lock().await = None;
        }
    }

    /// An input the runtime gives the model by itself (a goal's
    /// continuation, a loop's tick), stored as a user message named after
    /// its `source` (the feature); `mark` names what sent it on the event
    /// (`goalId`, `loopId`).
    pub async fn runtime_input(
        &self,
        ctx: &SessionCtx,
        text: &str,
        source: &str,
        mark: impl FnOnce(&mut MessageCompleted),
    ) -> Result<(), RuntimeError> {
        for feature in &self.features {
            feature.input_recorded(ctx);
        }
        let mut m = message(MessageRole::User, text);
        m.name = Some(source.to_owned());
        let mut event = MessageCompleted::of(&m);
        mark(&mut event);
        self.append(ctx, m, vec![event.into()], Durability::Queued)
            .await
    }

    /// Whether a feature says the assistant's fixed lines itself
    /// ([`crate::feature::Feature::says_fixed_lines`]).
    pub fn says_fixed_lines(&self, ctx: &SessionCtx) -> bool {
        self.features.iter().any(|f| f.says_fixed_lines(ctx))
    }

    /// The assistant says `text` outside the model (first message, custom goodbye).
    pub async fn say(&self, ctx: &SessionCtx, text: &str) -> Result<(), RuntimeError> {
        let mut m = message(MessageRole::Assistant, text);
        // A feature that speaks the session's text says it first.
        let told = match crate::step_tap::tap_of(ctx) {
            Some(tap) => tap.say(&m.id, text).await,
            None => crate::step_tap::StepStored::default(),
        };
        if let Some(content) = told.content {
            m.content = content;
        }
        m.source = told.source;
        m.interrupted = told.interrupted;
        let mut event = MessageCompleted::of(&m);
        event.item_id = told.item_id;
        self.append(ctx, m, vec![event.into()], Durability::Queued)
            .await
    }

    /// The recent conversation as text, for extraction and judges.
    pub async fn transcript(&self, ctx: &SessionCtx) -> Result<String, RuntimeError> {
        self.with_history(ctx, |history| {
            let recent = history
                .iter()
                .rev()
                .filter(|m| {
                    matches!(
                        m.role,
                        MessageRole::User | MessageRole::Assistant | MessageRole::HumanAgent
                    ) && !m.content.is_empty()
                })
                .take(20);
            let mut lines: Vec<String> = recent
                .map(|m| format!("{}: {}", m.role.as_str(), m.content))
                .collect();
            lines.reverse();
            lines.join("\n")
        })
        .await
    }

    pub fn provider_for(&self, assistant: &Assistant) -> &Provider {
        assistant
            .llm
            .provider
            .as_ref()
            .and_then(|p| self.settings.providers.get(p))
            .unwrap_or(&self.settings.default_provider)
    }

    /// The name usage is recorded under for [`Self::provider_for`]'s
    /// provider: the assistant's, else `default`.
    pub fn provider_name<'a>(&self, assistant: &'a Assistant) -> &'a str {
        assistant
            .llm
            .provider
            .as_deref()
            .filter(|p| self.settings.providers.contains_key(*p))
            .unwrap_or("default")
    }
}
