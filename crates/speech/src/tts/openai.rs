//! OpenAI-compatible text-to-speech (design §1.2, §4(e)): one
//! `POST {url}/audio/speech` per chunk, `{model, voice, input,
//! response_format, speed?, instructions?, stream_format:"audio"}` —
//! `stream_format` and `instructions` left out for `tts-1*` models — at
//! most two in flight per item, audio delivered in chunk order
//! ([`super::pipeline`]). The body is read by the response's
//! `Content-Type`, since compatible servers may ignore what was asked: raw
//! PCM16 at 24 kHz (or the type's `rate=`), or a WAV whose header gives
//! the rate.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::TtsEvent;
use super::pcm::PcmReader;
use super::pipeline::{Piece, Pipelined, Source};
use crate::config::{MAX_CHUNK_AUDIO_BYTES, TtsConfig, TtsFormat, join_path};
use crate::error::Scrub;
use crate::http::{media_type, next_piece, request_error, status_error};
use crate::{Result, SpeechError};

/// OpenAI `pcm` is 24 kHz.
pub const PCM_RATE: u32 = 24_000;
/// Requests in flight per item.
pub const IN_FLIGHT: usize = 2;

struct Speech {
    client: reqwest::Client,
    url: url::Url,
    key: Option<String>,
    /// The request body without `input`.
    template: Value,
    format: TtsFormat,
    timeout: Duration,
}

/// The request body of one chunk, without `input`.
pub(crate) fn request_template(cfg: &TtsConfig) -> Value {
    let legacy = cfg.model.starts_with("tts-1");
    let voice = if cfg.voice.starts_with("voice_") {
        json!({ "id": cfg.voice })
    } else {
        json!(cfg.voice)
    };
    let mut body = json!({
        "model": cfg.model,
        "voice": voice,
        "response_format": cfg.format.as_str(),
    });
    if let Some(speed) = cfg.speed {
        body["speed"] = json!(speed);
    }
    if !legacy {
        if let Some(instructions) = cfg.instructions.as_deref().filter(|i| !i.is_empty()) {
            body["instructions"] = json!(instructions);
        }
        body["stream_format"] = json!("audio");
    }
    body
}

pub(crate) fn open(
    cfg: &TtsConfig,
    events: mpsc::Sender<TtsEvent>,
    scrub: Scrub,
) -> Result<Pipelined> {
    if cfg.model.is_empty() || cfg.voice.is_empty() {
        return Err(SpeechError::Config(
            "an openai TTS needs a model and a voice".into(),
        ));
    }
    let url = join_path(&cfg.url, "/audio/speech")?;
    rtc_tools::net_guard::check_url(&url, cfg.policy)
        .map_err(|e| SpeechError::Blocked(e.to_string()))?;
    let client = match &cfg.http {
        Some(c) => c.clone(),
        None => crate::config::http_client(cfg.policy)?,
    };
    let source = Speech {
        client,
        url,
        key: cfg.api_key.clone(),
        template: request_template(cfg),
        format: cfg.format,
        timeout: cfg.timeout,
    };
    Ok(Pipelined::start(Arc::new(source), IN_FLIGHT, events, scrub))
}

impl Source for Speech {
    fn produce(&self, text: String, out: mpsc::UnboundedSender<Piece>) -> BoxFuture<'static, ()> {
        let mut body = self.template.clone();
        body["input"] = json!(text);
        let mut request = self.client.post(self.url.clone()).json(&body);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let (format, timeout) = (self.format, self.timeout);
        Box::pin(async move {
            let last = match fetch(request, format, timeout, &out).await {
                Ok(()) => Piece::Done,
                Err(e) => Piece::Failed(e),
            };
            let _ = out.send(last);
        })
    }
}

/// How the body is read, by its media type (`None`: what was asked).
fn reader_for(kind: Option<(String, String)>, asked: TtsFormat) -> Result<PcmReader> {
    let Some((kind, params)) = kind else {
        return Ok(match asked {
            TtsFormat::Pcm => PcmReader::raw(PCM_RATE),
            TtsFormat::Wav => PcmReader::wav(PCM_RATE),
        });
    };
    match kind.as_str() {
        "audio/wav" | "audio/x-wav" | "audio/wave" | "audio/vnd.wave" => {
            Ok(PcmReader::wav(PCM_RATE))
        }
        "audio/pcm" | "audio/l16" | "audio/raw" | "application/octet-stream" => {
            let rate = params
                .split(';')
                .filter_map(|p| p.trim().strip_prefix("rate="))
                .find_map(|r| r.trim().parse().ok())
                .unwrap_or(PCM_RATE);
            Ok(PcmReader::raw(rate))
        }
        other => Err(SpeechError::Protocol(format!(
            "the speech answer is {other}; only pcm and wav can be played"
        ))),
    }
}

async fn fetch(
    request: reqwest::RequestBuilder,
    format: TtsFormat,
    timeout: Duration,
    out: &mpsc::UnboundedSender<Piece>,
) -> Result<()> {
    let mut resp = match tokio::time::timeout(timeout, request.send()).await {
        Err(_) => return Err(SpeechError::Timeout(timeout)),
        Ok(Err(e)) => return Err(request_error(&e)),
        Ok(Ok(resp)) => resp,
    };
    if !resp.status().is_success() {
        return Err(status_error(resp, timeout).await);
    }
    let mut reader = reader_for(media_type(&resp), format)?;
    let mut total = 0;
    while let Some(piece) = next_piece(&mut resp, timeout).await? {
        total += piece.len();
        if total > MAX_CHUNK_AUDIO_BYTES {
            return Err(SpeechError::TooLarge(format!(
                "a chunk's audio exceeds {MAX_CHUNK_AUDIO_BYTES} bytes"
            )));
        }
        let pcm = reader.feed(&piece)?;
        let rate = reader.rate();
        if !pcm.is_empty() && out.send(Piece::Audio { pcm, rate }).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TtsDialect;

    #[test]
    fn stream_format_and_instructions_are_left_out_for_tts_1() {
        let mut cfg = TtsConfig::new(TtsDialect::OpenAi, "https://api.openai.com/v1");
        cfg.model = "gpt-4o-mini-tts".into();
        cfg.voice = "marin".into();
        cfg.instructions = Some("Calm.".into());
        cfg.speed = Some(1.25);
        assert_eq!(
            request_template(&cfg),
            json!({"model": "gpt-4o-mini-tts", "voice": "marin", "response_format": "pcm",
                   "speed": 1.25, "instructions": "Calm.", "stream_format": "audio"})
        );
        cfg.model = "tts-1-hd".into();
        cfg.voice = "voice_abc".into();
        cfg.format = TtsFormat::Wav;
        cfg.speed = None;
        assert_eq!(
            request_template(&cfg),
            json!({"model": "tts-1-hd", "voice": {"id": "voice_abc"}, "response_format": "wav"})
        );
    }

    #[test]
    fn the_content_type_decides() {
        let kind = |k: &str, p: &str| Some((k.to_owned(), p.to_owned()));
        let rate = |r: Result<PcmReader>| r.map(|r| r.rate()).unwrap_or(0);
        assert_eq!(
            rate(reader_for(kind("audio/pcm", ""), TtsFormat::Wav)),
            24_000
        );
        assert_eq!(
            rate(reader_for(kind("audio/l16", " rate=16000"), TtsFormat::Pcm)),
            16_000
        );
        assert!(reader_for(kind("audio/mpeg", ""), TtsFormat::Pcm).is_err());
        assert!(reader_for(None, TtsFormat::Pcm).is_ok());
    }
}
