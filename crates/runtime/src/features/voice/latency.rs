//! A voice turn's latency figures (design `voice-pipeline.md` §4(e)):
//! the instants the speaker saw, turned into `turn.completed.latency`, and
//! the server's own share recorded in the `rtc_voice_server_ms` histogram.

use std::time::Instant;

use rtc_protocol::TurnLatency;

/// What one turn's speaker saw, each the first of its kind.
#[derive(Debug, Default)]
pub(super) struct Timings {
    /// Time zero: the end of the user's speech, or a typed turn's first
    /// model request.
    pub zero: Option<Instant>,
    /// End of speech → end-of-turn decision, and decision → transcript.
    pub endpoint_ms: Option<u64>,
    pub stt_ms: Option<u64>,
    /// The model request of the step that gave the first token.
    pub request: Option<Instant>,
    pub first_token: Option<Instant>,
    pub first_chunk: Option<Instant>,
    pub first_audio_byte: Option<Instant>,
    pub first_audio_out: Option<Instant>,
}

fn ms(from: Option<Instant>, to: Option<Instant>) -> Option<u64> {
    let (from, to) = (from?, to?);
    Some(u64::try_from(to.saturating_duration_since(from).as_millis()).unwrap_or(u64::MAX))
}

impl Timings {
    /// A model step is requested now.
    pub fn step_started(&mut self, now: Instant) {
        self.zero.get_or_insert(now);
        if self.first_token.is_none() {
            self.request = Some(now);
        }
    }

    /// The user's speech that starts the next turn (see `Cmd::Heard`).
    pub fn heard(&mut self, speech_end: Instant, decided: Instant, transcribed: Instant) {
        *self = Self {
            zero: Some(speech_end),
            endpoint_ms: ms(Some(speech_end), Some(decided)),
            stt_ms: ms(Some(decided), Some(transcribed)),
            ..Self::default()
        };
    }

    /// The turn's figures, `None` when it spoke nothing; the timings start
    /// over for the next turn.
    pub fn take(&mut self) -> Option<TurnLatency> {
        let t = std::mem::take(self);
        t.first_audio_out?;
        let llm_ttft_ms = ms(t.request, t.first_token);
        let chunk_ms = ms(t.first_token, t.first_chunk);
        let tts_ttfb_ms = ms(t.first_chunk, t.first_audio_byte);
        let first_audio_ms = ms(t.zero, t.first_audio_out);
        let parts = [t.endpoint_ms, t.stt_ms, llm_ttft_ms, chunk_ms, tts_ttfb_ms]
            .into_iter()
            .flatten()
            .fold(0u64, u64::saturating_add);
        let server_ms = first_audio_ms.map(|f| f.saturating_sub(parts));
        if let Some(s) = server_ms {
            #[allow(clippy::cast_precision_loss, reason = "milliseconds")]
            metrics::histogram!("rtc_voice_server_ms").record(s as f64);
        }
        Some(TurnLatency {
            endpoint_ms: t.endpoint_ms,
            stt_ms: t.stt_ms,
            llm_ttft_ms,
            chunk_ms,
            tts_ttfb_ms,
            first_audio_ms,
            server_ms,
        })
    }
}
