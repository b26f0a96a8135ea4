//! Model usage (R-RN-9): every model call's tokens (input, output, cached)
//! as its provider reports them, per session, task, day, provider, model
//! and kind of call. Calls are added up in memory and written about once
//! a second (and at shutdown, and before usage is read), one transaction
//! per batch; Prometheus counters carry each workspace's tokens as they
//! come when `/metrics` is not public (a public endpoint shows totals
//! only, so no tenant's ids reach anyone else).

use std::collections::HashMap;

use rtc_core::llm::Usage;
use rtc_store::{UsageCounts, UsageKey};

use crate::RuntimeError;
use crate::context::SessionCtx;
use crate::kernel::{Host, Kernel};

/// What a model call was made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// A step of the session's own turn.
    Turn,
    /// The small model: a judge, `llm` leaves, extraction, a summary.
    Small,
    /// A step of a reasoner task.
    Task,
}

impl CallKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Turn => "turn",
            Self::Small => "small",
            Self::Task => "task",
        }
    }
}

/// Who a model call is counted for.
#[derive(Debug, Clone)]
pub struct UsageTag {
    pub workspace_id: String,
    pub session_id: String,
    pub root_session_id: String,
    pub assistant_id: String,
    pub task_id: Option<String>,
    pub kind: CallKind,
}

impl UsageTag {
    /// A call of `ctx`'s.
    pub fn of(ctx: &SessionCtx, kind: CallKind) -> Self {
        Self {
            workspace_id: ctx.workspace.clone(),
            session_id: ctx.id.clone(),
            root_session_id: ctx.root_id.clone(),
            assistant_id: ctx.assistant_id.clone(),
            task_id: None,
            kind,
        }
    }
}

/// Calls not yet written, added up per key.
#[derive(Default)]
pub struct UsageLedger {
    pending: parking_lot::Mutex<HashMap<UsageKey, UsageCounts>>,
    /// Label the Prometheus counters with the workspace.
    by_workspace: bool,
}

impl UsageLedger {
    /// A ledger whose counters carry the workspace when `by_workspace`.
    pub fn new(by_workspace: bool) -> Self {
        Self {
            pending: parking_lot::Mutex::default(),
            by_workspace,
        }
    }

    /// Count one call of `provider`'s `model` for `tag`.
    pub fn record(&self, tag: &UsageTag, provider: &str, model: &str, usage: &Usage) {
        let wide = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let counts = UsageCounts {
            calls: 1,
            input_tokens: wide(usage.prompt_tokens),
            output_tokens: wide(usage.completion_tokens),
            cached_tokens: wide(usage.cached_tokens),
        };
        let key = UsageKey {
            workspace_id: tag.workspace_id.clone(),
            session_id: tag.session_id.clone(),
            root_session_id: tag.root_session_id.clone(),
            assistant_id: tag.assistant_id.clone(),
            task_id: tag.task_id.clone().unwrap_or_default(),
            day: today(),
            provider: provider.to_owned(),
            model: model.to_owned(),
            kind: tag.kind.as_str().to_owned(),
        };
        let directions = [
            ("input", usage.prompt_tokens),
            ("output", usage.completion_tokens),
            ("cached", usage.cached_tokens),
        ];
        if self.by_workspace {
            let workspace = tag.workspace_id.clone();
            metrics::counter!("rtc_llm_calls_total", "workspace" => workspace.clone()).increment(1);
            for (direction, n) in directions {
                metrics::counter!("rtc_llm_tokens_total", "workspace" => workspace.clone(), "direction" => direction)
                    .increment(n);
            }
        } else {
            metrics::counter!("rtc_llm_calls_total").increment(1);
            for (direction, n) in directions {
                metrics::counter!("rtc_llm_tokens_total", "direction" => direction).increment(n);
            }
        }
        self.pending.lock().entry(key).or_default().add(&counts);
    }

    /// A workspace's tokens (input and output) not yet written.
    pub fn pending_tokens(&self, workspace: &str) -> i64 {
        self.pending
            .lock()
            .iter()
            .filter(|(k, _)| k.workspace_id == workspace)
            .map(|(_, c)| c.input_tokens + c.output_tokens)
            .sum()
    }

    fn take(&self) -> Vec<(UsageKey, UsageCounts)> {
        self.pending.lock().drain().collect()
    }

    /// Put back what could not be written.
    fn restore(&self, rows: Vec<(UsageKey, UsageCounts)>) {
        let mut pending = self.pending.lock();
        for (k, c) in rows {
            pending.entry(k).or_default().add(&c);
        }
    }
}

/// Today's UTC date, `YYYY-MM-DD`.
pub fn today() -> String {
    rtc_core::time::rfc3339_from_millis(rtc_store::now_millis())[..10].to_owned()
}

impl<H: Host> Kernel<H> {
    /// Write the usage counted so far (kept for the next try if the store
    /// fails).
    pub async fn flush_usage(&self) -> Result<(), RuntimeError> {
        let rows = self.usage.take();
        if rows.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.store.add_usage(&rows).await {
            self.usage.restore(rows);
            return Err(e.into());
        }
        Ok(())
    }

    /// Count one model call.
    pub fn meter(&self, tag: &UsageTag, provider: &str, model: &str, usage: Option<&Usage>) {
        if let Some(u) = usage {
            self.usage.record(tag, provider, model, u);
        }
    }
}
