//! Speech interfaces as the runtime uses them (R-RT-8, design
//! `voice-pipeline.md` §4(a)): an interface's `connection` turned into the
//! `rtc-speech` configuration of a connection (its key revealed from the
//! workspace's secrets, the server's outbound policy, the server's espeak
//! limiter); `check`, one request to the provider; and what starting a
//! session checks again of an assistant's `speech` block, without
//! contacting any provider.

use std::time::{Duration, Instant};

use rtc_protocol::{
    Assistant, RunMode, SpeechAudioFormat, SpeechCheck, SpeechDialect, SpeechInterface, SpeechKind,
};
use rtc_speech::{
    AddressPolicy, EspeakAccess, SttConfig, SttDialect, TtsConfig, TtsDialect, TtsFormat,
    VoiceSettings,
};

use crate::composition::AssistantDeps;
use crate::{Runtime, RuntimeError};

/// How long one `check` may take, connecting included.
pub const CHECK_WITHIN: Duration = Duration::from_secs(15);

/// Whether the espeak-ng binary is there (`RTC_ESPEAK_BIN`, else
/// `espeak-ng` on `PATH`).
pub fn espeak_installed() -> bool {
    rtc_speech::tts::espeak::espeak_binary().is_some()
}

/// The STT configuration of `iface` (`None` for a TTS interface), with
/// its key revealed.
pub(crate) fn stt_config(
    iface: &SpeechInterface,
    api_key: Option<String>,
    policy: AddressPolicy,
) -> Option<SttConfig> {
    let c = &iface.connection;
    let dialect = match (iface.kind, c.dialect) {
        (SpeechKind::Stt, SpeechDialect::Openai) => SttDialect::OpenAi,
        (SpeechKind::Stt, SpeechDialect::Deepgram) => SttDialect::Deepgram,
        _ => return None,
    };
    let mut cfg = SttConfig::new(dialect, c.url.clone().unwrap_or_default());
    cfg.model = c.model.clone();
    cfg.language = c.language.clone();
    cfg.sample_rate = c.sample_rate.unwrap_or(16_000);
    cfg.api_key = api_key;
    cfg.policy = policy;
    Some(cfg)
}

/// The TTS configuration of `iface` (`None` for an STT interface), with
/// its key revealed; an espeak interface runs under `espeak`.
pub(crate) fn tts_config(
    iface: &SpeechInterface,
    api_key: Option<String>,
    policy: AddressPolicy,
    espeak: EspeakAccess,
) -> Option<TtsConfig> {
    let c = &iface.connection;
    let (dialect, rate) = match (iface.kind, c.dialect) {
        (SpeechKind::Tts, SpeechDialect::Openai) => (TtsDialect::OpenAi, 24_000),
        (SpeechKind::Tts, SpeechDialect::Elevenlabs) => {
            (TtsDialect::ElevenLabs, c.sample_rate.unwrap_or(24_000))
        }
        (SpeechKind::Tts, SpeechDialect::Espeak) => (TtsDialect::Espeak, 22_050),
        _ => return None,
    };
    let mut cfg = TtsConfig::new(dialect, c.url.clone().unwrap_or_default());
    cfg.model = c.model.clone().unwrap_or_default();
    cfg.voice = c.voice.clone().unwrap_or_default();
    cfg.language = c.language.clone();
    cfg.sample_rate = rate;
    cfg.format = match c.format {
        Some(SpeechAudioFormat::Wav) => TtsFormat::Wav,
        Some(SpeechAudioFormat::Pcm) | None => TtsFormat::Pcm,
    };
    cfg.speed = c.speed;
    cfg.instructions = c.instructions.clone();
    cfg.voice_settings = c.voice_settings.map(|v| VoiceSettings {
        stability: v.stability,
        similarity_boost: v.similarity_boost,
        speed: v.speed,
    });
    cfg.api_key = api_key;
    cfg.policy = policy;
    cfg.espeak = (dialect == TtsDialect::Espeak).then_some(espeak);
    Some(cfg)
}

impl Runtime {
    /// The revealed key of `iface`: `Ok(None)` without one, 422
    /// `unknown_secret` at `field` when its secret is gone.
    pub(crate) async fn speech_key(
        &self,
        workspace: &str,
        iface: &SpeechInterface,
        field: &str,
    ) -> Result<Option<String>, RuntimeError> {
        let Some(secret) = rtc_core::speech_rules::referenced_secret(iface) else {
            return Ok(None);
        };
        match self.inner.store.reveal_secret(workspace, &secret).await? {
            Some(value) => Ok(Some(value.expose().to_owned())),
            None => Err(unknown_secret(&secret, field).into()),
        }
    }

    /// Who runs an espeak process for `workspace`.
    pub(crate) fn espeak_access(&self, workspace: &str) -> EspeakAccess {
        EspeakAccess {
            limiter: self.inner.espeak.clone(),
            workspace: workspace.to_owned(),
            binary: None,
        }
    }

    /// `POST /v1/speech-interfaces/{id}/check`: one request within
    /// [`CHECK_WITHIN`] — a TTS speaks "This is a test.", an STT hears 1 s
    /// of silence — answered with the latency, the audio spoken, or the
    /// provider's (scrubbed) error. A key whose secret is gone is 422
    /// `unknown_secret`.
    pub async fn check_speech_interface(
        &self,
        workspace: &str,
        iface: &SpeechInterface,
    ) -> Result<SpeechCheck, RuntimeError> {
        let key = self
            .speech_key(workspace, iface, "connection.apiKey")
            .await?;
        let policy = self.address_policy();
        let started = Instant::now();
        let report = match iface.kind {
            SpeechKind::Stt => match stt_config(iface, key, policy) {
                Some(cfg) => rtc_speech::check::check_stt(&cfg, CHECK_WITHIN).await,
                None => return Err(not_runnable(iface)),
            },
            SpeechKind::Tts => {
                match tts_config(iface, key, policy, self.espeak_access(workspace)) {
                    Some(cfg) => rtc_speech::check::check_tts(&cfg, CHECK_WITHIN).await,
                    None => return Err(not_runnable(iface)),
                }
            }
        };
        let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(SpeechCheck {
            ok: report.ok,
            latency_ms: report.latency_ms.unwrap_or(elapsed),
            audio_ms: report.audio_ms,
            error: report.error,
        })
    }

    /// What `POST /v1/sessions` checks again of a pipeline assistant's
    /// `speech` (after its rules, which `validate_assistant` ran): each
    /// interface's key secret still exists (422 `unknown_secret` at the
    /// interface's field). No provider is contacted.
    pub(crate) async fn check_session_speech(
        &self,
        workspace: &str,
        assistant: &Assistant,
        deps: &AssistantDeps,
    ) -> Result<(), RuntimeError> {
        let Some(speech) = assistant
            .speech
            .as_ref()
            .filter(|_| assistant.run_mode == RunMode::Pipeline)
        else {
            return Ok(());
        };
        for (field, id) in [
            ("speech.sttInterfaceId", &speech.stt_interface_id),
            ("speech.ttsInterfaceId", &speech.tts_interface_id),
        ] {
            let Some(iface) = id.as_ref().and_then(|id| deps.speech_interfaces.get(id)) else {
                continue;
            };
            let Some(secret) = rtc_core::speech_rules::referenced_secret(iface) else {
                continue;
            };
            if self
                .inner
                .store
                .secret_info(workspace, &secret)
                .await?
                .is_none()
            {
                return Err(unknown_secret(&secret, field).into());
            }
        }
        Ok(())
    }
}

fn unknown_secret(secret: &str, field: &str) -> rtc_core::ValidationError {
    rtc_core::ValidationError::new(
        "unknown_secret",
        field,
        format!(
            "secret `{secret}` (the speech interface's API key) does not exist in this workspace: create it first"
        ),
    )
}

/// A stored interface whose dialect its kind does not offer (saved by an
/// older server): nothing to run.
fn not_runnable(iface: &SpeechInterface) -> RuntimeError {
    rtc_core::ValidationError::new(
        "unsupported_dialect",
        "connection.dialect",
        format!(
            "the {} dialect is not offered for kind `{}`",
            iface.connection.dialect.as_str(),
            iface.kind.as_str()
        ),
    )
    .into()
}

/// The code a session's start answers for a `speech` rule the workspace
/// no longer meets: an interface deleted or changed since the assistant
/// was saved is `speech_not_configured`.
pub(crate) fn at_session_start(code: &'static str) -> &'static str {
    match code {
        "unknown_speech_interface" | "speech_kind_mismatch" => "speech_not_configured",
        other => other,
    }
}
