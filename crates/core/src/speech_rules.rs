//! Save-time (and session-start) rules of speech interfaces and of an
//! assistant's `speech` block (R-RT-8, design `voice-pipeline.md` §4(a)):
//! which `connection` fields each dialect takes, required or refused, and
//! their ranges; the interfaces a pipeline assistant names, of the right
//! kind, and its turn-taking bounds. Each rule answers the first failing
//! field with its stable code, in the order of the design's tables.

use std::collections::BTreeMap;

use rtc_protocol::{
    Assistant, RunMode, SpeechAudioFormat, SpeechConnection, SpeechDialect, SpeechInterface,
    SpeechKind, SpeechSettings, SpeechTurnDetectionKind,
};

use crate::error::{Rule, ValidationError};
use crate::names::check_display_name;
use crate::realtime::api_key_secret;

/// The longest `connection.url`.
pub const MAX_URL: usize = 2048;

/// Whether a connection field is required, allowed or refused by a dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    Required,
    Optional,
    No,
}

use Takes::{No, Optional, Required};

/// What one (kind, dialect) takes: the table of §4(a).
struct Spec {
    url: Takes,
    model: Takes,
    voice: Takes,
    language: Takes,
    sample_rate: Takes,
    format: Takes,
    api_key: Takes,
    speed: Takes,
    instructions: Takes,
    voice_settings: Takes,
    /// The `sampleRate`s accepted.
    rates: &'static [u32],
    /// The URL schemes accepted (none: no URL).
    schemes: &'static [&'static str],
}

const STT_RATES: &[u32] = &[8_000, 16_000, 24_000, 48_000];
const ELEVENLABS_RATES: &[u32] = &[8_000, 16_000, 22_050, 24_000, 44_100];
/// OpenAI's `pcm` is 24 kHz (a `wav` gives its own rate in its header).
const OPENAI_TTS_RATES: &[u32] = &[24_000];
/// espeak-ng speaks at 22 050 Hz, always.
const ESPEAK_RATES: &[u32] = &[22_050];
const HTTP: &[&str] = &["http", "https"];
const WS: &[&str] = &["ws", "wss"];

/// The dialects a kind offers: stt `openai`, `deepgram`; tts `openai`,
/// `elevenlabs`, `espeak`.
pub fn dialects_for(kind: SpeechKind) -> &'static [SpeechDialect] {
    match kind {
        SpeechKind::Stt => &[SpeechDialect::Openai, SpeechDialect::Deepgram],
        SpeechKind::Tts => &[
            SpeechDialect::Openai,
            SpeechDialect::Elevenlabs,
            SpeechDialect::Espeak,
        ],
    }
}

/// Whether an STT dialect decides the end of an utterance itself (turn
/// detection `stt`): Deepgram's endpointing; an OpenAI-compatible upload
/// has none.
pub fn has_endpointing(dialect: SpeechDialect) -> bool {
    dialect == SpeechDialect::Deepgram
}

fn spec(kind: SpeechKind, dialect: SpeechDialect) -> Option<Spec> {
    use SpeechDialect as D;
    use SpeechKind as K;
    let none = Spec {
        url: Required,
        model: Required,
        voice: No,
        language: No,
        sample_rate: Optional,
        format: No,
        api_key: Optional,
        speed: No,
        instructions: No,
        voice_settings: No,
        rates: STT_RATES,
        schemes: HTTP,
    };
    Some(match (kind, dialect) {
        (K::Stt, D::Openai) => Spec {
            language: Optional,
            ..none
        },
        (K::Stt, D::Deepgram) => Spec {
            model: Optional,
            language: Optional,
            api_key: Required,
            schemes: WS,
            ..none
        },
        (K::Tts, D::Openai) => Spec {
            voice: Required,
            format: Optional,
            speed: Optional,
            instructions: Optional,
            rates: OPENAI_TTS_RATES,
            ..none
        },
        (K::Tts, D::Elevenlabs) => Spec {
            voice: Required,
            language: Optional,
            api_key: Required,
            voice_settings: Optional,
            rates: ELEVENLABS_RATES,
            schemes: WS,
            ..none
        },
        (K::Tts, D::Espeak) => Spec {
            url: No,
            model: No,
            voice: Required,
            api_key: No,
            speed: Optional,
            rates: ESPEAK_RATES,
            schemes: &[],
            ..none
        },
        _ => return None,
    })
}

fn blank(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(|v| v.trim().is_empty())
}

/// A speech interface: a name, a dialect its kind offers, then the
/// connection's fields as the dialect takes them (§4(a)'s first table, in
/// its order). `secret_exists` says whether a `secret__` name is one of
/// the workspace's secrets.
pub fn validate_speech_interface(
    iface: &SpeechInterface,
    secret_exists: &dyn Fn(&str) -> bool,
) -> Rule {
    check_display_name(&iface.name, "name", 200)?;
    let c = &iface.connection;
    let Some(spec) = spec(iface.kind, c.dialect) else {
        let offered: Vec<&str> = dialects_for(iface.kind)
            .iter()
            .map(|d| d.as_str())
            .collect();
        return Err(ValidationError::new(
            "unsupported_dialect",
            "connection.dialect",
            format!(
                "the {} dialect is not offered for kind `{}`; use {}",
                c.dialect.as_str(),
                iface.kind.as_str(),
                offered.join(", ")
            ),
        ));
    };
    check_url(c, &spec)?;
    check_presence(c, &spec)?;
    check_api_key(c, secret_exists)?;
    check_ranges(c, &spec)?;
    check_values(c)
}

/// `url`: none for espeak, else a URL of the dialect's scheme with a host
/// and no credentials (the key goes in `apiKey`).
fn check_url(c: &SpeechConnection, spec: &Spec) -> Rule {
    const FIELD: &str = "connection.url";
    let dialect = c.dialect.as_str();
    match (&c.url, spec.url) {
        (Some(_), No) => {
            return Err(ValidationError::new(
                "unexpected_field",
                FIELD,
                format!("the {dialect} dialect runs locally and takes no `connection.url`"),
            ));
        }
        (None, Required) => {
            return Err(ValidationError::new(
                "missing_field",
                FIELD,
                format!("the {dialect} dialect needs `connection.url`, the provider's base URL"),
            ));
        }
        _ => {}
    }
    let Some(raw) = &c.url else { return Ok(()) };
    let parsed = url::Url::parse(raw).ok().filter(|u| {
        spec.schemes.contains(&u.scheme())
            && u.host_str().is_some_and(|h| !h.is_empty())
            && u.username().is_empty()
            && u.password().is_none()
    });
    if parsed.is_none() || raw.len() > MAX_URL {
        let schemes: Vec<String> = spec.schemes.iter().map(|s| format!("`{s}://`")).collect();
        return Err(ValidationError::new(
            "invalid_url",
            FIELD,
            format!(
                "`connection.url` must be a {} URL with a host and no credentials (the key goes in `apiKey`), at most {MAX_URL} characters; the {dialect} dialect appends its path",
                schemes.join(" or ")
            ),
        ));
    }
    Ok(())
}

/// Required fields present (`missing_field`), then fields the dialect does
/// not take absent (`unexpected_field`), each in the table's order. A
/// blank string is missing where the field is required, and given (so
/// refused as a value later) where it is optional.
fn check_presence(c: &SpeechConnection, spec: &Spec) -> Rule {
    let dialect = c.dialect.as_str();
    // (field, given, given and not blank, what the dialect takes)
    let text = |v: &Option<String>| (v.is_some(), !blank(v));
    let flag = |given: bool| (given, given);
    let fields: [(&str, (bool, bool), Takes); 9] = [
        ("connection.model", text(&c.model), spec.model),
        ("connection.voice", text(&c.voice), spec.voice),
        ("connection.language", text(&c.language), spec.language),
        (
            "connection.sampleRate",
            flag(c.sample_rate.is_some()),
            spec.sample_rate,
        ),
        ("connection.format", flag(c.format.is_some()), spec.format),
        ("connection.apiKey", text(&c.api_key), spec.api_key),
        ("connection.speed", flag(c.speed.is_some()), spec.speed),
        (
            "connection.instructions",
            flag(c.instructions.is_some()),
            spec.instructions,
        ),
        (
            "connection.voiceSettings",
            flag(c.voice_settings.is_some()),
            spec.voice_settings,
        ),
    ];
    if let Some((field, _, _)) = fields
        .iter()
        .find(|(_, (_, filled), takes)| !filled && *takes == Required)
    {
        return Err(ValidationError::new(
            "missing_field",
            *field,
            format!("the {dialect} dialect needs `{field}`"),
        ));
    }
    if let Some((field, _, _)) = fields
        .iter()
        .find(|(_, (given, _), takes)| *given && *takes == No)
    {
        return Err(ValidationError::new(
            "unexpected_field",
            *field,
            format!("the {dialect} dialect does not take `{field}`"),
        ));
    }
    Ok(())
}

/// `apiKey`: exactly one `{{secret__name}}` reference to an existing
/// secret.
fn check_api_key(c: &SpeechConnection, secret_exists: &dyn Fn(&str) -> bool) -> Rule {
    const FIELD: &str = "connection.apiKey";
    let Some(key) = &c.api_key else { return Ok(()) };
    let Some(secret) = api_key_secret(key) else {
        return Err(ValidationError::new(
            "invalid_placeholder",
            FIELD,
            "`connection.apiKey` must be one `{{secret__name}}` reference: store the key as a workspace secret",
        ));
    };
    if !secret_exists(&secret) {
        return Err(ValidationError::new(
            "unknown_secret",
            FIELD,
            format!("secret `{secret}` does not exist in this workspace"),
        ));
    }
    Ok(())
}

fn out_of_range(field: &str, message: String) -> ValidationError {
    ValidationError::new("out_of_range", field, message)
}

fn check_number(value: Option<f64>, field: &str, min: f64, max: f64) -> Rule {
    match value {
        Some(v) if !(min..=max).contains(&v) => Err(out_of_range(
            field,
            format!("`{field}` must be {min} to {max}"),
        )),
        _ => Ok(()),
    }
}

/// `sampleRate`, `speed` and `voiceSettings.*` within the table.
fn check_ranges(c: &SpeechConnection, spec: &Spec) -> Rule {
    if let Some(rate) = c.sample_rate.filter(|r| !spec.rates.contains(r)) {
        let list: Vec<String> = spec.rates.iter().map(u32::to_string).collect();
        return Err(out_of_range(
            "connection.sampleRate",
            format!(
                "the {} dialect takes `sampleRate` {} Hz here, not {rate}{}",
                c.dialect.as_str(),
                list.join(", "),
                if c.format == Some(SpeechAudioFormat::Wav) {
                    " (a `wav` answer gives its own rate)"
                } else {
                    ""
                }
            ),
        ));
    }
    match c.dialect {
        SpeechDialect::Espeak => check_number(c.speed, "connection.speed", 80.0, 450.0)?,
        _ => check_number(c.speed, "connection.speed", 0.25, 4.0)?,
    }
    if let Some(v) = &c.voice_settings {
        check_number(v.stability, "connection.voiceSettings.stability", 0.0, 1.0)?;
        check_number(
            v.similarity_boost,
            "connection.voiceSettings.similarityBoost",
            0.0,
            1.0,
        )?;
        check_number(v.speed, "connection.voiceSettings.speed", 0.7, 1.2)?;
    }
    Ok(())
}

/// Whether `tag` is a language tag: `^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$`.
pub fn valid_language(tag: &str) -> bool {
    let mut parts = tag.split('-');
    let primary = parts.next().unwrap_or_default();
    (2..=3).contains(&primary.len())
        && primary.bytes().all(|b| b.is_ascii_alphabetic())
        && parts.all(|p| (2..=8).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Whether `voice` is an espeak-ng `-v` value: `^[A-Za-z0-9_+-]{1,64}$`.
pub fn valid_espeak_voice(voice: &str) -> bool {
    (1..=64).contains(&voice.len())
        && voice
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'+' | b'-'))
}

/// An ElevenLabs voice id, a segment of the socket's path:
/// `^[A-Za-z0-9_-]{1,64}$`.
fn valid_voice_id(voice: &str) -> bool {
    (1..=64).contains(&voice.len())
        && voice
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// A model or voice name: not blank, no control characters.
fn valid_name(name: &str) -> bool {
    !name.trim().is_empty() && !name.chars().any(char::is_control)
}

/// `language`, `voice` and `model` values.
fn check_values(c: &SpeechConnection) -> Rule {
    if let Some(lang) = c.language.as_deref().filter(|l| !valid_language(l)) {
        return Err(ValidationError::new(
            "invalid_value",
            "connection.language",
            format!(
                "`connection.language` must be a language tag such as `en` or `en-US`; got {lang:?}"
            ),
        ));
    }
    if let Some(voice) = &c.voice {
        let (ok, shape) = match c.dialect {
            SpeechDialect::Espeak => (
                valid_espeak_voice(voice),
                "an espeak-ng voice: 1 to 64 letters, digits, `_`, `+` or `-` (e.g. `en-us`)",
            ),
            SpeechDialect::Elevenlabs => (
                valid_voice_id(voice),
                "an ElevenLabs voice id: 1 to 64 letters, digits, `_` or `-`",
            ),
            _ => (valid_name(voice), "a voice name without control characters"),
        };
        if !ok {
            return Err(ValidationError::new(
                "invalid_value",
                "connection.voice",
                format!("`connection.voice` must be {shape}"),
            ));
        }
    }
    if c.model.as_deref().is_some_and(|m| !valid_name(m)) {
        return Err(ValidationError::new(
            "invalid_value",
            "connection.model",
            "`connection.model` must be a model name without control characters",
        ));
    }
    Ok(())
}

/// The secret an interface's `apiKey` references, if any.
pub fn referenced_secret(iface: &SpeechInterface) -> Option<String> {
    api_key_secret(iface.connection.api_key.as_deref()?)
}

/// The speech interfaces an assistant names.
pub fn referenced_interfaces(assistant: &Assistant) -> Vec<String> {
    let Some(speech) = &assistant.speech else {
        return Vec::new();
    };
    [&speech.stt_interface_id, &speech.tts_interface_id]
        .into_iter()
        .flatten()
        .cloned()
        .collect()
}

/// The two interface fields of a `speech` block, with the kind each names.
fn interface_fields(speech: &SpeechSettings) -> [(&'static str, Option<&String>, SpeechKind); 2] {
    [
        (
            "speech.sttInterfaceId",
            speech.stt_interface_id.as_ref(),
            SpeechKind::Stt,
        ),
        (
            "speech.ttsInterfaceId",
            speech.tts_interface_id.as_ref(),
            SpeechKind::Tts,
        ),
    ]
}

/// An assistant's `speech` block (§4(a)'s second table, in its order):
/// pipeline only; both interfaces named, existing among `interfaces` (the
/// workspace's, by id) and of their kind; turn detection the STT can do;
/// the bounds of turn-taking, barge-in and the tool filler.
pub fn check_speech(
    run_mode: RunMode,
    speech: Option<&SpeechSettings>,
    interfaces: &BTreeMap<String, SpeechInterface>,
) -> Rule {
    let Some(speech) = speech else { return Ok(()) };
    if run_mode == RunMode::Realtime {
        return Err(ValidationError::new(
            "pipeline_only",
            "speech",
            "`speech` is for the pipeline run mode: a realtime assistant hears and speaks through its realtime interface",
        ));
    }
    let fields = interface_fields(speech);
    for (field, id, kind) in fields {
        if id.is_none_or(|id| id.trim().is_empty()) {
            return Err(ValidationError::new(
                "missing_field",
                field,
                format!(
                    "`speech` needs `{field}`, a speech interface of kind `{}`",
                    kind.as_str()
                ),
            ));
        }
    }
    for (field, id, _) in fields {
        if let Some(id) = id.filter(|id| !interfaces.contains_key(*id)) {
            return Err(ValidationError::new(
                "unknown_speech_interface",
                field,
                format!("speech interface `{id}` does not exist in this workspace"),
            ));
        }
    }
    for (field, id, kind) in fields {
        if let Some((id, iface)) = id.and_then(|id| Some((id, interfaces.get(id)?)))
            && iface.kind != kind
        {
            return Err(ValidationError::new(
                "speech_kind_mismatch",
                field,
                format!(
                    "speech interface `{id}` is of kind `{}`; `{field}` needs one of kind `{}`",
                    iface.kind.as_str(),
                    kind.as_str()
                ),
            ));
        }
    }
    let stt = speech
        .stt_interface_id
        .as_ref()
        .and_then(|id| interfaces.get(id));
    if speech.turn_detection.kind == SpeechTurnDetectionKind::Stt
        && let Some(stt) = stt.filter(|i| !has_endpointing(i.connection.dialect))
    {
        return Err(ValidationError::new(
            "unsupported_turn_detection",
            "speech.turnDetection.type",
            format!(
                "turn detection `stt` needs an STT that ends utterances itself (deepgram); the {} dialect has no endpointing: use `server_vad` or `none`",
                stt.connection.dialect.as_str()
            ),
        ));
    }
    check_turn_bounds(speech)
}

fn check_int(value: u32, field: &str, min: u32, max: u32) -> Rule {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(out_of_range(
            field,
            format!("`{field}` must be {min} to {max}"),
        ))
    }
}

fn check_turn_bounds(speech: &SpeechSettings) -> Rule {
    let t = &speech.turn_detection;
    check_number(
        Some(t.threshold),
        "speech.turnDetection.threshold",
        0.0,
        1.0,
    )?;
    check_int(
        t.prefix_padding_ms,
        "speech.turnDetection.prefixPaddingMs",
        0,
        2_000,
    )?;
    check_int(
        t.silence_duration_ms,
        "speech.turnDetection.silenceDurationMs",
        100,
        5_000,
    )?;
    check_int(
        t.max_utterance_ms,
        "speech.turnDetection.maxUtteranceMs",
        1_000,
        120_000,
    )?;
    check_int(
        speech.barge_in.min_speech_ms,
        "speech.bargeIn.minSpeechMs",
        0,
        3_000,
    )?;
    if let Some(filler) = &speech.tool_filler {
        check_int(filler.after_ms, "speech.toolFiller.afterMs", 0, 30_000)?;
        let chars = filler.text.chars().count();
        if filler.text.trim().is_empty() || chars > 500 {
            return Err(out_of_range(
                "speech.toolFiller.text",
                "`speech.toolFiller.text` must be 1 to 500 characters".to_owned(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "speech_rules_tests.rs"]
mod tests;
