//! What a voice engine needs from its session (design `voice-pipeline.md`
//! §4(a), §4(g)): the STT and TTS configurations, read afresh from the
//! session's speech interfaces (keys revealed), and what
//! `session.speech_ready` says of both sides. A test-mode session speaks
//! and hears through the built-in mocks and contacts no provider.

use rtc_protocol::{SpeechInterface, SpeechSide, SpeechTurnDetection};
use rtc_speech::turn_taking::{BargeIn, TurnDetection, TurnDetectionType, TurnSettings};
use rtc_speech::{SttConfig, SttDialect, TtsConfig, TtsDialect};

use crate::session::SessionCtx;
use crate::speech_interfaces::{stt_config, tts_config};
use crate::{Inner, Runtime, RuntimeError};

/// A voice session's speech, as the engine runs it.
pub(super) struct VoiceSetup {
    /// One item's TTS stream is opened with this.
    pub tts: TtsConfig,
    /// The session's STT stream.
    pub stt: SttConfig,
    pub stt_side: SpeechSide,
    pub tts_side: SpeechSide,
    /// A step's text is held until its end (the assistant has `skipTurn`,
    /// §4(f)).
    pub hold: bool,
    pub turn_detection: SpeechTurnDetection,
    pub barge_in: rtc_protocol::SpeechBargeIn,
    /// Said once per turn while tools run long (§4(f)).
    pub tool_filler: Option<rtc_protocol::SpeechToolFiller>,
}

impl VoiceSetup {
    /// The turn-taking machine's settings (design §4(d)).
    pub(super) fn turn_settings(&self) -> TurnSettings {
        let t = &self.turn_detection;
        let kind = match t.kind {
            rtc_protocol::SpeechTurnDetectionKind::ServerVad => TurnDetectionType::ServerVad,
            rtc_protocol::SpeechTurnDetectionKind::Stt => TurnDetectionType::Stt,
            rtc_protocol::SpeechTurnDetectionKind::None => TurnDetectionType::None,
        };
        #[allow(clippy::cast_possible_truncation, reason = "a 0–1 threshold")]
        TurnSettings {
            turn_detection: TurnDetection {
                kind,
                threshold: t.threshold as f32,
                prefix_padding_ms: u64::from(t.prefix_padding_ms),
                silence_duration_ms: u64::from(t.silence_duration_ms),
                max_utterance_ms: u64::from(t.max_utterance_ms),
            },
            barge_in: BargeIn {
                enabled: self.barge_in.enabled,
                min_speech_ms: u64::from(self.barge_in.min_speech_ms),
            },
        }
    }
}

/// The setup of `ctx` for a host that receives audio at `output_rate`.
pub(super) async fn of(
    inner: &std::sync::Arc<Inner>,
    ctx: &SessionCtx,
    output_rate: u32,
) -> Result<VoiceSetup, RuntimeError> {
    let assistant = &ctx.config.assistant;
    let Some(speech) = &assistant.speech else {
        return Err(not_configured("the assistant has no `speech` block"));
    };
    let hold = assistant.built_in_tools.skip_turn.is_some();
    let (stt, tts) = if ctx.config.test.is_some() {
        let mut tts = TtsConfig::new(TtsDialect::Mock, "");
        tts.sample_rate = output_rate;
        (SttConfig::new(SttDialect::Mock, ""), tts)
    } else {
        let rt = Runtime {
            inner: inner.clone(),
        };
        let policy = inner.config.mcp.policy;
        let stt_iface = interface(inner, ctx, speech.stt_interface_id.as_deref()).await?;
        let tts_iface = interface(inner, ctx, speech.tts_interface_id.as_deref()).await?;
        let stt_key = rt
            .speech_key(&ctx.workspace, &stt_iface, "speech.sttInterfaceId")
            .await?;
        let tts_key = rt
            .speech_key(&ctx.workspace, &tts_iface, "speech.ttsInterfaceId")
            .await?;
        let espeak = rt.espeak_access(&ctx.workspace);
        let mut stt = stt_config(&stt_iface, stt_key, policy)
            .ok_or_else(|| not_configured("the STT interface does not hear"))?;
        if speech.turn_detection.kind == rtc_protocol::SpeechTurnDetectionKind::Stt {
            stt.endpointing_ms = Some(speech.turn_detection.silence_duration_ms);
        }
        let tts = tts_config(&tts_iface, tts_key, policy, espeak)
            .ok_or_else(|| not_configured("the TTS interface does not speak"))?;
        (stt, tts)
    };
    let side = |dialect: &str, model: &str, voice: &str| SpeechSide {
        dialect: dialect.to_owned(),
        model: (!model.is_empty()).then(|| model.to_owned()),
        voice: (!voice.is_empty()).then(|| voice.to_owned()),
    };
    Ok(VoiceSetup {
        stt_side: side(
            stt.dialect.as_str(),
            stt.model.as_deref().unwrap_or_default(),
            "",
        ),
        tts_side: side(tts.dialect.as_str(), "", &tts.voice),
        stt,
        tts,
        hold,
        turn_detection: speech.turn_detection,
        barge_in: speech.barge_in,
        tool_filler: speech.tool_filler.clone(),
    })
}

/// The interface `id` of the session's workspace.
async fn interface(
    inner: &Inner,
    ctx: &SessionCtx,
    id: Option<&str>,
) -> Result<SpeechInterface, RuntimeError> {
    let Some(id) = id else {
        return Err(not_configured(
            "the assistant's `speech` names no interface",
        ));
    };
    inner
        .store
        .get::<SpeechInterface>(&ctx.workspace, id)
        .await?
        .ok_or_else(|| not_configured("a speech interface of the assistant no longer exists"))
}

fn not_configured(message: &str) -> RuntimeError {
    RuntimeError::Conflict {
        code: "speech_not_configured",
        message: message.to_owned(),
    }
}
