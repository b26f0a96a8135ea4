//! Test audio for the speech mocks (design `voice-pipeline.md` §4(i)):
//! user speech is real espeak-ng output resampled to the rate under test
//! with a *pilot tone* mixed under it (2300/2700/3100/3500 Hz at amplitude
//! 1200); the STT mocks find the pilot with a Goertzel filter over the
//! utterance and answer the transcript mapped to it. A wrong rate moves
//! the pilot and no longer matches. TTS mocks answer a 440 Hz sine of
//! 20 ms per non-whitespace character, as test mode does. Also: a WAV
//! reader for what clients upload. Samples are PCM16 mono little-endian.

use std::collections::BTreeMap;
use std::f64::consts::TAU;
use std::process::Stdio;

use anyhow::Context as _;

/// The pilot tones, one per scripted transcript.
pub const PILOTS: [u32; 4] = [2300, 2700, 3100, 3500];
/// The pilot's peak amplitude (PCM16 scale).
pub const PILOT_AMPLITUDE: f64 = 1200.0;
/// The TTS mocks' tone.
pub const TTS_TONE_HZ: f64 = 440.0;
/// Milliseconds of TTS tone per non-whitespace character.
pub const TTS_MS_PER_CHAR: u64 = 20;
/// The TTS tone's peak.
pub const TTS_AMPLITUDE: f64 = 8000.0;
/// The smallest estimated pilot amplitude that counts.
const PILOT_FLOOR: f64 = 300.0;

/// Pilot frequency → the transcript an STT mock answers for it.
pub type PilotMap = BTreeMap<u32, String>;

/// A [`PilotMap`] from pairs.
pub fn pilot_map<'a>(pairs: impl IntoIterator<Item = (u32, &'a str)>) -> PilotMap {
    pairs
        .into_iter()
        .map(|(hz, t)| (hz, t.to_owned()))
        .collect()
}

pub fn to_samples(pcm: &[u8]) -> Vec<i16> {
    pcm.chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]))
        .collect()
}

pub fn to_pcm(samples: &[i16]) -> Vec<u8> {
    samples.iter().flat_map(|s| s.to_le_bytes()).collect()
}

/// Milliseconds of PCM16 mono `bytes` at `rate`.
pub fn pcm_ms(bytes: usize, rate: u32) -> u64 {
    (bytes as u64 / 2) * 1000 / u64::from(rate.max(1))
}

/// `ms` of a sine at `hz` with peak `amplitude`.
pub fn sine(hz: f64, ms: u64, rate: u32, amplitude: f64) -> Vec<i16> {
    let n = ms * u64::from(rate) / 1000;
    (0..n)
        .map(|i| {
            let t = i as f64 / f64::from(rate);
            (amplitude * (TAU * hz * t).sin()).round() as i16
        })
        .collect()
}

pub fn silence(ms: u64, rate: u32) -> Vec<i16> {
    vec![0; usize::try_from(ms * u64::from(rate) / 1000).unwrap_or(0)]
}

/// How long a TTS mock speaks `text`.
pub fn tts_ms(text: &str) -> u64 {
    text.chars().filter(|c| !c.is_whitespace()).count() as u64 * TTS_MS_PER_CHAR
}

/// The TTS mocks' answer to `text` at `rate`, as PCM16 bytes.
pub fn tts_tone(text: &str, rate: u32) -> Vec<u8> {
    to_pcm(&sine(TTS_TONE_HZ, tts_ms(text), rate, TTS_AMPLITUDE))
}

/// The amplitude of the `hz` component of `samples` (Goertzel).
pub fn tone_amplitude(samples: &[i16], rate: u32, hz: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let w = TAU * hz / f64::from(rate);
    let coeff = 2.0 * w.cos();
    let (mut s1, mut s2) = (0.0f64, 0.0f64);
    for &x in samples {
        let s0 = f64::from(x) + coeff * s1 - s2;
        s2 = s1;
        s1 = s0;
    }
    let power = (s1 * s1 + s2 * s2 - coeff * s1 * s2).max(0.0);
    2.0 * power.sqrt() / samples.len() as f64
}

/// The pilot under `samples`: the strongest of [`PILOTS`] when it is at
/// least 300 in amplitude and three times the next.
pub fn pilot_of(samples: &[i16], rate: u32) -> Option<u32> {
    let mut found: Vec<(f64, u32)> = PILOTS
        .iter()
        .map(|&hz| (tone_amplitude(samples, rate, f64::from(hz)), hz))
        .collect();
    found.sort_by(|a, b| b.0.total_cmp(&a.0));
    let (best, hz) = found[0];
    let next = found[1].0;
    (best >= PILOT_FLOOR && best >= 3.0 * next).then_some(hz)
}

/// RMS of samples.
pub fn rms(samples: &[i16]) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let sum: f64 = samples.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    (sum / samples.len() as f64).sqrt()
}

/// Linear-interpolation resampling.
pub fn resample(samples: &[i16], from: u32, to: u32) -> Vec<i16> {
    if from == to || samples.is_empty() {
        return samples.to_vec();
    }
    let out_len = (samples.len() as u64 * u64::from(to) / u64::from(from)) as usize;
    let step = f64::from(from) / f64::from(to);
    (0..out_len)
        .map(|i| {
            let pos = i as f64 * step;
            let at = pos.floor() as usize;
            let frac = pos - at as f64;
            let a = f64::from(samples[at.min(samples.len() - 1)]);
            let b = f64::from(samples[(at + 1).min(samples.len() - 1)]);
            (a + (b - a) * frac).round() as i16
        })
        .collect()
}

/// The espeak-ng binary tests use: `RTC_ESPEAK_BIN`, else `espeak-ng`.
pub fn espeak_program() -> String {
    std::env::var("RTC_ESPEAK_BIN")
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| "espeak-ng".to_owned())
}

/// espeak-ng speaking `text` with `voice`: its samples at 22 050 Hz.
pub async fn espeak_speech(text: &str, voice: &str) -> anyhow::Result<Vec<i16>> {
    let program = espeak_program();
    let output = tokio::process::Command::new(&program)
        .args(["--stdout", "-v", voice, text])
        .stdin(Stdio::null())
        .output()
        .await
        .with_context(|| {
            format!("cannot run {program}; install it with `apt-get install -y espeak-ng`")
        })?;
    anyhow::ensure!(
        output.status.success(),
        "{program} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let wav = parse_wav(&output.stdout)?;
    anyhow::ensure!(wav.rate == 22_050, "espeak-ng wrote {} Hz", wav.rate);
    Ok(wav.samples)
}

/// espeak-ng speech of `text` at `rate` with `pilot` Hz mixed under it
/// (amplitude 1200, from the first to the last sound), as PCM16 bytes.
/// Pad it with [`silence`] to end a turn.
pub async fn speech_with_pilot(text: &str, rate: u32, pilot: u32) -> anyhow::Result<Vec<u8>> {
    let speech = resample(&espeak_speech(text, "en-us").await?, 22_050, rate);
    Ok(to_pcm(&mix_pilot(&speech, rate, pilot)))
}

/// `samples` with the pilot added from the first to the last sample
/// louder than 300.
pub fn mix_pilot(samples: &[i16], rate: u32, pilot: u32) -> Vec<i16> {
    let loud = |s: &i16| s.unsigned_abs() > 300;
    let first = samples.iter().position(loud).unwrap_or(0);
    let last = samples.iter().rposition(loud).unwrap_or(0);
    samples
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            if i < first || i > last {
                return s;
            }
            let t = i as f64 / f64::from(rate);
            let p = PILOT_AMPLITUDE * (TAU * f64::from(pilot) * t).sin();
            (f64::from(s) + p).round().clamp(-32768.0, 32767.0) as i16
        })
        .collect()
}

/// A WAV as a client uploaded it.
#[derive(Debug, Clone, PartialEq)]
pub struct Wav {
    pub format: u16,
    pub channels: u16,
    pub rate: u32,
    pub bits: u16,
    /// The samples (16-bit only; empty otherwise).
    pub samples: Vec<i16>,
}

impl Wav {
    pub fn ms(&self) -> u64 {
        self.samples.len() as u64 * 1000 / u64::from(self.rate.max(1))
    }
}

/// Read a WAV strictly enough to catch a bad upload: RIFF/WAVE, a `fmt `
/// chunk, then `data` (its size trusted only up to the end of the input).
pub fn parse_wav(bytes: &[u8]) -> anyhow::Result<Wav> {
    anyhow::ensure!(
        bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WAVE",
        "not a RIFF/WAVE file"
    );
    let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    let u32_at =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let mut at = 12;
    let mut fmt = None;
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let size = u32_at(at + 4) as usize;
        let body = at + 8;
        if id == b"fmt " {
            anyhow::ensure!(size >= 16 && body + 16 <= bytes.len(), "short fmt chunk");
            fmt = Some((
                u16_at(body),
                u16_at(body + 2),
                u32_at(body + 4),
                u16_at(body + 14),
            ));
        } else if id == b"data" {
            let (format, channels, rate, bits) = fmt.context("data before fmt")?;
            let end = body.saturating_add(size).min(bytes.len());
            let samples = if bits == 16 {
                to_samples(&bytes[body..end])
            } else {
                Vec::new()
            };
            return Ok(Wav {
                format,
                channels,
                rate,
                bits,
                samples,
            });
        }
        at = body + size + (size & 1);
    }
    anyhow::bail!("no data chunk")
}

/// A 16-bit mono WAV of `samples` (real sizes, or placeholders as
/// espeak-ng writes them).
pub fn wav_bytes(samples: &[i16], rate: u32, placeholder_sizes: bool) -> Vec<u8> {
    let data = u32::try_from(samples.len() * 2).unwrap_or(u32::MAX);
    let (riff, data) = if placeholder_sizes {
        (0x7fff_f024, 0x7fff_f000)
    } else {
        (36 + data, data)
    };
    let mut out = b"RIFF".to_vec();
    out.extend_from_slice(&u32::to_le_bytes(riff));
    out.extend_from_slice(b"WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00");
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * 2).to_le_bytes());
    out.extend_from_slice(b"\x02\x00\x10\x00data");
    out.extend_from_slice(&data.to_le_bytes());
    out.extend_from_slice(&to_pcm(samples));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pilot_is_found_under_noise_and_lost_at_a_wrong_rate() {
        let rate = 16_000;
        let noise: Vec<i16> = (0..rate as usize)
            .map(|i| ((i * 7919 % 4001) as i16 - 2000) * 2)
            .collect();
        let mixed = mix_pilot(&noise, rate, 2700);
        assert_eq!(pilot_of(&mixed, rate), Some(2700));
        assert_eq!(pilot_of(&noise, rate), None);
        assert_eq!(pilot_of(&mixed, 24_000), None, "read at the wrong rate");
        let up = resample(&mixed, rate, 24_000);
        assert_eq!(pilot_of(&up, 24_000), Some(2700));
    }

    #[test]
    fn wavs_round_trip() {
        let samples = sine(440.0, 100, 8000, 1000.0);
        for placeholder in [false, true] {
            let wav = parse_wav(&wav_bytes(&samples, 8000, placeholder))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(
                (wav.channels, wav.rate, wav.bits, wav.ms()),
                (1, 8000, 16, 100)
            );
        }
        assert_eq!(tts_ms("Hi there!"), 160);
    }
}
