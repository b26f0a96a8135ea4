//! `POST /v1/speech-interfaces/{id}/check` (design §4(a)): one request to
//! the provider. A TTS speaks "This is a test."; an STT gets 1 s of
//! silence. The answer is `{ok, latencyMs, audioMs?, error?}`, where
//! `latencyMs` is the time to the first audio byte or the transcript
//! (Deepgram: to the end of the handshake, as `Finalize` on silence may
//! not be answered).

use std::time::Duration;

use tokio::time::Instant;

use crate::{SttConfig, SttDialect, SttEvent, TtsChunk, TtsConfig, TtsEvent};

/// What a TTS speaks in a check.
pub const CHECK_TEXT: &str = "This is a test.";

/// The outcome of a check.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CheckReport {
    pub ok: bool,
    pub latency_ms: Option<u64>,
    /// TTS: the milliseconds of audio spoken.
    pub audio_ms: Option<u64>,
    /// The failure (scrubbed like every provider text).
    pub error: Option<String>,
}

impl CheckReport {
    fn failed(error: impl std::fmt::Display) -> Self {
        Self {
            error: Some(error.to_string()),
            ..Self::default()
        }
    }
}

fn ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Speak [`CHECK_TEXT`] within `within`.
pub async fn check_tts(cfg: &TtsConfig, within: Duration) -> CheckReport {
    let started = Instant::now();
    let deadline = started + within;
    let run = async {
        let (mut tts, mut events) = match crate::open_tts(cfg).await {
            Ok(opened) => opened,
            Err(e) => return CheckReport::failed(e),
        };
        let pushed = tts.push(TtsChunk::new(CHECK_TEXT)).await;
        if let Err(e) = pushed.and(tts.finish().await) {
            return CheckReport::failed(e);
        }
        let (mut first, mut audio_ms) = (None, 0u64);
        while let Some(event) = events.recv().await {
            match event {
                TtsEvent::Audio { pcm, rate, .. } => {
                    first.get_or_insert_with(|| ms(started));
                    audio_ms += (pcm.len() as u64 / 2) * 1000 / u64::from(rate.max(1));
                }
                TtsEvent::ChunkDone { .. } => {}
                TtsEvent::Done => {
                    return CheckReport {
                        ok: first.is_some(),
                        latency_ms: first,
                        audio_ms: Some(audio_ms),
                        error: first.is_none().then(|| "no audio came back".to_owned()),
                    };
                }
                TtsEvent::Error { message, .. } => return CheckReport::failed(message),
            }
        }
        CheckReport::failed("the stream ended without its end")
    };
    tokio::time::timeout_at(deadline, run)
        .await
        .unwrap_or_else(|_| CheckReport::failed(format!("no answer within {within:?}")))
}

/// Send 1 s of silence and finalize, within `within`.
pub async fn check_stt(cfg: &SttConfig, within: Duration) -> CheckReport {
    let started = Instant::now();
    let deadline = started + within;
    let run = async {
        let (mut stt, mut events) = match crate::connect_stt(cfg).await {
            Ok(opened) => opened,
            Err(e) => return CheckReport::failed(e),
        };
        let connected = ms(started);
        let silence = vec![0u8; cfg.sample_rate as usize * 2];
        let sent = stt.audio(&silence).await;
        if let Err(e) = sent.and(stt.finalize().await) {
            return CheckReport::failed(e);
        }
        let streaming = cfg.dialect == SttDialect::Deepgram;
        let wait = if streaming {
            Duration::from_secs(1)
        } else {
            Duration::MAX
        };
        let answered = tokio::time::timeout(wait, async {
            while let Some(event) = events.recv().await {
                match event {
                    SttEvent::Final { .. } => return Ok(ms(started)),
                    SttEvent::Error { message, .. } => return Err(message),
                    SttEvent::Closed => return Err("the connection closed".to_owned()),
                    _ => {}
                }
            }
            Err("the connection closed".to_owned())
        })
        .await;
        let _ = stt.close().await;
        match answered {
            Ok(Ok(latency)) => CheckReport {
                ok: true,
                latency_ms: Some(latency),
                ..CheckReport::default()
            },
            Ok(Err(message)) => CheckReport::failed(message),
            // Deepgram said nothing about silence: the handshake is the check.
            Err(_) => CheckReport {
                ok: true,
                latency_ms: Some(connected),
                ..CheckReport::default()
            },
        }
    };
    tokio::time::timeout_at(deadline, run)
        .await
        .unwrap_or_else(|_| CheckReport::failed(format!("no answer within {within:?}")))
}
