//! The R-SEC-7 bounds an operator can set: each an environment variable
//! `RTC_<NAME>` and a config-file key `<name>` (README "Limits" lists them
//! with their defaults and error codes).

use serde::{Deserialize, Serialize};

use crate::config::number;

/// The config file's keys of the bounds (all optional), as flat keys of
/// the file beside the others ([`LimitFile::take`]).
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LimitFile {
    pub max_value_bytes: Option<u64>,
    pub max_variables_bytes: Option<u64>,
    pub max_update_rules: Option<u64>,
    pub max_llm_leaves: Option<u64>,
    pub max_walk_hops: Option<u64>,
    pub max_walk_events: Option<u64>,
    pub max_walk_state_bytes: Option<u64>,
    pub max_history_bytes: Option<u64>,
    pub history_memory_bytes: Option<u64>,
    pub max_replayed_result_bytes: Option<u64>,
    pub context_compact_percent: Option<u64>,
    pub max_subscribers_per_session: Option<u64>,
    pub test_concurrency_per_workspace: Option<u64>,
    pub max_test_runs_per_workspace: Option<u64>,
    pub realtime_connects_per_minute: Option<u64>,
    pub voice_max_sessions: Option<u64>,
    pub max_upstream_body_bytes: Option<u64>,
    pub max_upstream_line_bytes: Option<u64>,
    pub max_task_transcript_bytes: Option<u64>,
    pub provider_checks_per_minute: Option<u64>,
    pub speech_checks_per_minute: Option<u64>,
}

/// The keys of [`LimitFile`] (a test holds them equal).
const KEYS: [&str; 21] = [
    "max_value_bytes",
    "max_variables_bytes",
    "max_update_rules",
    "max_llm_leaves",
    "max_walk_hops",
    "max_walk_events",
    "max_walk_state_bytes",
    "max_history_bytes",
    "history_memory_bytes",
    "max_replayed_result_bytes",
    "context_compact_percent",
    "max_subscribers_per_session",
    "test_concurrency_per_workspace",
    "max_test_runs_per_workspace",
    "realtime_connects_per_minute",
    "voice_max_sessions",
    "max_upstream_body_bytes",
    "max_upstream_line_bytes",
    "max_task_transcript_bytes",
    "provider_checks_per_minute",
    "speech_checks_per_minute",
];

impl LimitFile {
    /// Take the bounds' keys out of the file's table (the rest is the
    /// other settings').
    pub(crate) fn take(table: &mut toml::Table) -> anyhow::Result<Self> {
        let mut own = toml::Table::new();
        for key in KEYS {
            if let Some(value) = table.remove(key) {
                own.insert(key.to_owned(), value);
            }
        }
        Ok(own.try_into()?)
    }
}

/// The bounds in force.
#[derive(Debug, Clone)]
pub struct LimitSettings {
    /// Bytes of one variable value (and of a string an expression makes).
    pub max_value_bytes: u64,
    /// Bytes of all of a session's variables.
    pub max_variables_bytes: u64,
    /// Rules per `updateState`.
    pub max_update_rules: u64,
    /// `llm` leaves per `updateState`.
    pub max_llm_leaves: u64,
    /// Node entries of one workflow walk.
    pub max_walk_hops: u64,
    /// Events one workflow walk records.
    pub max_walk_events: u64,
    /// Bytes of variable snapshots one workflow walk's updates record.
    pub max_walk_state_bytes: u64,
    /// Bytes of a session's stored messages.
    pub max_history_bytes: u64,
    /// Bytes of a history kept in memory between turns.
    pub history_memory_bytes: u64,
    /// Bytes of a tool result later turns' requests carry again.
    pub max_replayed_result_bytes: u64,
    /// The share of a model's context window (percent) past which a
    /// request is compacted.
    pub context_compact_percent: u64,
    /// Live subscribers (SSE and WebSocket) of one session.
    pub max_subscribers_per_session: u64,
    /// Conversation test runs of one workspace at once.
    pub test_concurrency_per_workspace: u64,
    /// Conversation test runs of one workspace queued or running.
    pub max_test_runs_per_workspace: u64,
    /// New realtime provider connections of one session per minute.
    pub realtime_connects_per_minute: u64,
    /// Voice hosts attached at once per workspace.
    pub voice_max_sessions: u64,
    /// Bytes of one answer (or message) read from a server a tenant
    /// names: OpenCode's JSON, a realtime provider's messages.
    pub max_upstream_body_bytes: u64,
    /// Bytes of one line of an event stream such a server sends.
    pub max_upstream_line_bytes: u64,
    /// Bytes of a reasoner task's saved transcript.
    pub max_task_transcript_bytes: u64,
    /// Provider checks (`POST /v1/providers/{name}/check`) per minute,
    /// over the whole server.
    pub provider_checks_per_minute: u64,
    /// Speech interface checks (`POST /v1/speech-interfaces/{id}/check`)
    /// per minute, per workspace.
    pub speech_checks_per_minute: u64,
}

impl LimitSettings {
    /// Rules and `llm` leaves per `updateState`, and variable sizes.
    pub fn update_bounds(&self) -> rtc_core::bounds::UpdateBounds {
        let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        rtc_core::bounds::UpdateBounds {
            max_rules: size(self.max_update_rules),
            max_llm_leaves: size(self.max_llm_leaves),
            max_value_bytes: size(self.max_value_bytes),
            max_variables_bytes: size(self.max_variables_bytes),
        }
    }

    /// From the environment, else the file, else the defaults.
    pub(crate) fn load(file: &LimitFile, test_concurrency: u64) -> anyhow::Result<Self> {
        let runtime = rtc_runtime::SessionLimits::default();
        let features = rtc_runtime::FeatureLimits::default();
        let wide = |v: usize| u64::try_from(v).unwrap_or(u64::MAX);
        Ok(Self {
            max_value_bytes: number(
                "RTC_MAX_VALUE_BYTES",
                file.max_value_bytes,
                wide(runtime.update.max_value_bytes),
            )?,
            max_variables_bytes: number(
                "RTC_MAX_VARIABLES_BYTES",
                file.max_variables_bytes,
                wide(runtime.update.max_variables_bytes),
            )?,
            max_update_rules: number(
                "RTC_MAX_UPDATE_RULES",
                file.max_update_rules,
                wide(runtime.update.max_rules),
            )?,
            max_llm_leaves: number(
                "RTC_MAX_LLM_LEAVES",
                file.max_llm_leaves,
                wide(runtime.update.max_llm_leaves),
            )?,
            max_walk_hops: number(
                "RTC_MAX_WALK_HOPS",
                file.max_walk_hops,
                u64::from(features.max_walk_hops),
            )?,
            max_walk_events: number(
                "RTC_MAX_WALK_EVENTS",
                file.max_walk_events,
                wide(features.max_walk_events),
            )?,
            max_walk_state_bytes: number(
                "RTC_MAX_WALK_STATE_BYTES",
                file.max_walk_state_bytes,
                wide(features.max_walk_state_bytes),
            )?,
            max_history_bytes: number(
                "RTC_MAX_HISTORY_BYTES",
                file.max_history_bytes,
                runtime.max_history_bytes,
            )?,
            history_memory_bytes: number(
                "RTC_HISTORY_MEMORY_BYTES",
                file.history_memory_bytes,
                runtime.history_memory_bytes,
            )?,
            max_replayed_result_bytes: number(
                "RTC_MAX_REPLAYED_RESULT_BYTES",
                file.max_replayed_result_bytes,
                wide(runtime.max_replayed_result_bytes),
            )?,
            context_compact_percent: match number(
                "RTC_CONTEXT_COMPACT_PERCENT",
                file.context_compact_percent,
                u64::from(runtime.context_compact_percent),
            )? {
                p @ 10..=95 => p,
                p => anyhow::bail!("RTC_CONTEXT_COMPACT_PERCENT must be 10 to 95, not {p}"),
            },
            max_subscribers_per_session: number(
                "RTC_MAX_SUBSCRIBERS_PER_SESSION",
                file.max_subscribers_per_session,
                wide(runtime.max_subscribers),
            )?,
            test_concurrency_per_workspace: number(
                "RTC_TEST_CONCURRENCY_PER_WORKSPACE",
                file.test_concurrency_per_workspace,
                rtc_runtime::TestQueueLimits::per_workspace_default(test_concurrency),
            )?,
            max_test_runs_per_workspace: number(
                "RTC_MAX_TEST_RUNS_PER_WORKSPACE",
                file.max_test_runs_per_workspace,
                rtc_runtime::TestQueueLimits::default().max_queued,
            )?,
            realtime_connects_per_minute: number(
                "RTC_REALTIME_CONNECTS_PER_MINUTE",
                file.realtime_connects_per_minute,
                u64::from(features.realtime_connects_per_minute),
            )?,
            voice_max_sessions: number(
                "RTC_VOICE_MAX_SESSIONS",
                file.voice_max_sessions,
                u64::try_from(features.voice_max_sessions).unwrap_or(u64::MAX),
            )?,
            max_upstream_body_bytes: number(
                "RTC_MAX_UPSTREAM_BODY_BYTES",
                file.max_upstream_body_bytes,
                8 * 1024 * 1024,
            )?,
            max_upstream_line_bytes: number(
                "RTC_MAX_UPSTREAM_LINE_BYTES",
                file.max_upstream_line_bytes,
                1024 * 1024,
            )?,
            max_task_transcript_bytes: number(
                "RTC_MAX_TASK_TRANSCRIPT_BYTES",
                file.max_task_transcript_bytes,
                wide(features.max_task_transcript_bytes),
            )?,
            provider_checks_per_minute: number(
                "RTC_PROVIDER_CHECKS_PER_MINUTE",
                file.provider_checks_per_minute,
                30,
            )?,
            speech_checks_per_minute: number(
                "RTC_SPEECH_CHECKS_PER_MINUTE",
                file.speech_checks_per_minute,
                10,
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of the file's bounds is taken from the file, and
    /// nothing else is.
    #[test]
    fn the_keys_are_the_fields() {
        let mut table = toml::Table::new();
        for key in KEYS {
            table.insert(key.to_owned(), toml::Value::Integer(1));
        }
        table.insert("listen".to_owned(), toml::Value::String("x".into()));
        let file = LimitFile::take(&mut table).expect("every key is a field");
        assert_eq!(table.len(), 1, "only `listen` is left");
        let back = toml::Table::try_from(&file).expect("serializes");
        assert_eq!(back.len(), KEYS.len(), "every field is a key");
    }
}
