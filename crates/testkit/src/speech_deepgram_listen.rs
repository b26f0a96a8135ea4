//! What the mock Deepgram does with one connection's audio
//! (`speech_deepgram_mock.rs`): RMS segmentation in 10 ms windows counted
//! in audio time, `SpeechStarted` (with `vad_events`), interim results
//! (with `interim_results`), a final `Results` with `speech_final` after
//! `endpointing` ms of silence (Deepgram's default 10 ms; none with
//! `endpointing=false`), `UtteranceEnd` after `utterance_end_ms` of
//! silence following the last final word, and the `from_finalize` result
//! of `Finalize`. A segment's transcript is the one mapped to the pilot
//! tone found over the segment.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::speech_audio::{pilot_of, rms, to_samples};

/// The connection's query, as the mock understood it.
#[derive(Debug, Clone)]
pub(crate) struct ListenParams {
    pub(crate) rate: u32,
    pub(crate) interim: bool,
    pub(crate) vad_events: bool,
    /// `None`: `endpointing=false`.
    pub(crate) endpointing_ms: Option<u64>,
    pub(crate) utterance_end_ms: Option<u64>,
}

impl ListenParams {
    /// The query's parameters, or the 400 message Deepgram-like servers give.
    pub(crate) fn parse(query: &BTreeMap<String, String>) -> Result<Self, String> {
        match query.get("encoding").map(String::as_str) {
            Some("linear16") => {}
            other => return Err(format!("the mock takes encoding=linear16, not {other:?}")),
        }
        let rate: u32 = query
            .get("sample_rate")
            .and_then(|r| r.parse().ok())
            .filter(|r| (8_000..=48_000).contains(r))
            .ok_or("sample_rate is required for linear16 (8000–48000)")?;
        if query.get("channels").is_some_and(|c| c != "1") {
            return Err("the mock takes channels=1".into());
        }
        let flag = |name: &str| query.get(name).is_some_and(|v| v == "true");
        let endpointing_ms = match query.get("endpointing").map(String::as_str) {
            None => Some(10),
            Some("false") => None,
            Some(ms) => Some(ms.parse().map_err(|_| "endpointing must be ms or false")?),
        };
        let utterance_end_ms = match query.get("utterance_end_ms") {
            None => None,
            Some(ms) => {
                let ms: u64 = ms.parse().map_err(|_| "utterance_end_ms must be ms")?;
                if !flag("interim_results") {
                    return Err("utterance_end_ms needs interim_results=true".into());
                }
                Some(ms)
            }
        };
        Ok(Self {
            rate,
            interim: flag("interim_results"),
            vad_events: flag("vad_events"),
            endpointing_ms,
            utterance_end_ms,
        })
    }
}

/// The knobs a connection reads from the mock.
pub(crate) struct Ear<'a> {
    pub(crate) speech_rms: f64,
    pub(crate) interim_every_ms: u64,
    pub(crate) finalize_empty_answers: bool,
    /// The transcript of a segment with this pilot.
    pub(crate) transcript: &'a dyn Fn(Option<u32>) -> String,
}

pub(crate) struct Listener {
    p: ListenParams,
    window: usize,
    partial: Vec<i16>,
    /// Samples processed (audio time).
    t: u64,
    in_speech: bool,
    seg_start: u64,
    seg: Vec<i16>,
    silence: u64,
    last_interim: u64,
    interims: usize,
    /// Where the last final word ended, while an `UtteranceEnd` is owed.
    last_word_end: Option<u64>,
    request_id: String,
}

impl Listener {
    pub(crate) fn new(p: ListenParams, request_id: String) -> Self {
        Self {
            window: (p.rate / 100) as usize,
            p,
            partial: Vec::new(),
            t: 0,
            in_speech: false,
            seg_start: 0,
            seg: Vec::new(),
            silence: 0,
            last_interim: 0,
            interims: 0,
            last_word_end: None,
            request_id,
        }
    }

    fn samples(&self, ms: u64) -> u64 {
        ms * u64::from(self.p.rate) / 1000
    }

    fn secs(&self, samples: u64) -> f64 {
        (samples as f64 / f64::from(self.p.rate) * 1000.0).round() / 1000.0
    }

    /// Seconds of audio received.
    pub(crate) fn duration(&self) -> f64 {
        self.secs(self.t)
    }

    /// The messages this audio causes.
    pub(crate) fn audio(&mut self, pcm: &[u8], ear: &Ear<'_>) -> Vec<Value> {
        let mut out = Vec::new();
        self.partial.extend(to_samples(pcm));
        let windows = self.partial.len() / self.window.max(1);
        let taken: Vec<i16> = self.partial.drain(..windows * self.window).collect();
        for frame in taken.chunks(self.window.max(1)) {
            self.frame(frame, ear, &mut out);
        }
        out
    }

    fn frame(&mut self, frame: &[i16], ear: &Ear<'_>, out: &mut Vec<Value>) {
        let voiced = rms(frame) >= ear.speech_rms;
        let n = frame.len() as u64;
        if voiced {
            if !self.in_speech {
                self.in_speech = true;
                self.seg_start = self.t;
                self.seg.clear();
                self.last_interim = self.t;
                self.interims = 0;
                self.last_word_end = None;
                if self.p.vad_events {
                    out.push(json!({"type": "SpeechStarted", "channel": [0],
                        "timestamp": self.secs(self.t)}));
                }
            }
            self.silence = 0;
        } else if self.in_speech {
            self.silence += n;
        }
        if self.in_speech {
            self.seg.extend_from_slice(frame);
        }
        self.t += n;
        if self.in_speech
            && self.p.interim
            && self.t - self.last_interim >= self.samples(ear.interim_every_ms)
        {
            self.last_interim = self.t;
            self.interims += 1;
            let text = (ear.transcript)(pilot_of(&self.seg, self.p.rate));
            let words: Vec<&str> = text.split_whitespace().take(self.interims).collect();
            if !words.is_empty() {
                let end = self.t - self.silence;
                out.push(self.results(self.seg_start, end, &words.join(" "), [false; 3]));
            }
        }
        if let Some(ms) = self.p.endpointing_ms
            && self.in_speech
            && self.silence >= self.samples(ms).max(1)
        {
            out.extend(self.end_segment(ear, true, false));
        }
        if let (Some(end), Some(ms)) = (self.last_word_end, self.p.utterance_end_ms)
            && !self.in_speech
            && self.t - end >= self.samples(ms)
        {
            self.last_word_end = None;
            out.push(json!({"type": "UtteranceEnd", "channel": [0, 1],
                "last_word_end": self.secs(end)}));
        }
    }

    /// The final result of the open segment (none when there is none).
    fn end_segment(
        &mut self,
        ear: &Ear<'_>,
        speech_final: bool,
        from_finalize: bool,
    ) -> Option<Value> {
        if !self.in_speech {
            return None;
        }
        self.in_speech = false;
        let end = self.t - self.silence;
        let text = (ear.transcript)(pilot_of(&self.seg, self.p.rate));
        if !text.is_empty() {
            self.last_word_end = Some(end);
        }
        Some(self.results(
            self.seg_start,
            end,
            &text,
            [true, speech_final, from_finalize],
        ))
    }

    /// `Finalize`: the pending segment as a `from_finalize` result; with
    /// nothing pending, an empty one only when the knob says so.
    pub(crate) fn finalize(&mut self, ear: &Ear<'_>) -> Vec<Value> {
        let mut out: Vec<Value> = self.end_segment(ear, false, true).into_iter().collect();
        if out.is_empty() && ear.finalize_empty_answers {
            out.push(self.results(self.t, self.t, "", [true, false, true]));
        }
        out
    }

    /// `CloseStream`: the pending segment, then `Metadata`.
    pub(crate) fn close(&mut self, ear: &Ear<'_>) -> Vec<Value> {
        let mut out: Vec<Value> = self.end_segment(ear, false, false).into_iter().collect();
        out.push(json!({"type": "Metadata", "transaction_key": "deprecated",
            "request_id": self.request_id, "sha256": "0".repeat(64),
            "created": "2026-01-01T00:00:00.000Z", "duration": self.duration(),
            "channels": 1, "models": ["mock-model-uuid"],
            "model_info": {"mock-model-uuid": {"name": "mock", "version": "1", "arch": "mock"}}}));
        out
    }

    /// `[is_final, speech_final, from_finalize]`.
    fn results(&self, start: u64, end: u64, text: &str, flags: [bool; 3]) -> Value {
        let words: Vec<&str> = text.split_whitespace().collect();
        let span = end.saturating_sub(start) / words.len().max(1) as u64;
        let words: Vec<Value> = words
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let from = start + span * i as u64;
                json!({"word": w.to_lowercase(), "punctuated_word": w, "confidence": 0.99,
                       "start": self.secs(from), "end": self.secs(from + span)})
            })
            .collect();
        json!({"type": "Results", "channel_index": [0, 1],
            "duration": self.secs(end.saturating_sub(start)), "start": self.secs(start),
            "is_final": flags[0], "speech_final": flags[1], "from_finalize": flags[2],
            "channel": {"alternatives": [{"transcript": text, "confidence": 0.99, "words": words}]},
            "metadata": {"request_id": self.request_id, "model_uuid": "mock-model-uuid",
                         "model_info": {"name": "mock", "version": "1", "arch": "mock"}}})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::speech_audio::{mix_pilot, silence, sine, to_pcm};

    fn params(query: &[(&str, &str)]) -> Result<ListenParams, String> {
        let q = query
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        ListenParams::parse(&q)
    }

    #[test]
    fn speech_then_silence_gives_the_deepgram_sequence() {
        let p = params(&[
            ("encoding", "linear16"),
            ("sample_rate", "16000"),
            ("interim_results", "true"),
            ("vad_events", "true"),
            ("endpointing", "300"),
            ("utterance_end_ms", "1000"),
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        let mut listener = Listener::new(p, "req".into());
        let transcript = |pilot: Option<u32>| match pilot {
            Some(2300) => "Book a table for two".to_owned(),
            _ => String::new(),
        };
        let ear = Ear {
            speech_rms: 500.0,
            interim_every_ms: 400,
            finalize_empty_answers: false,
            transcript: &transcript,
        };
        let speech = mix_pilot(&sine(200.0, 1000, 16_000, 3000.0), 16_000, 2300);
        let mut out = listener.audio(&to_pcm(&speech), &ear);
        out.extend(listener.audio(&to_pcm(&silence(1500, 16_000)), &ear));
        let kinds: Vec<String> = out
            .iter()
            .map(|m| match m["type"].as_str() {
                Some("Results") if m["is_final"] == true => format!("final:{}", m["speech_final"]),
                Some("Results") => "interim".to_owned(),
                other => other.unwrap_or_default().to_owned(),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "SpeechStarted",
                "interim",
                "interim",
                "interim",
                "final:true",
                "UtteranceEnd"
            ]
        );
        let last_final = &out[4];
        assert_eq!(
            last_final["channel"]["alternatives"][0]["transcript"],
            "Book a table for two"
        );
        assert!(listener.finalize(&ear).is_empty(), "nothing pending");
        assert!(params(&[("encoding", "opus"), ("sample_rate", "16000")]).is_err());
        assert!(params(&[("encoding", "linear16")]).is_err());
    }
}
