//! Voice activity (design `voice-pipeline.md` §1.6, §4(d)): the `earshot`
//! detector scores 16 ms frames (256 samples at 16 kHz) from 0 to 1, and a
//! frame is voiced when its score reaches the threshold (`0.5` by
//! default). [`Vad`] takes PCM16 mono at 16 kHz in slices of any size —
//! even an odd number of bytes — frames it and reports every completed
//! frame with its position in the stream, so the turn-taking machine can
//! work in audio time.

use std::fmt;

use earshot::Detector;

/// The rate the detector works at; host audio is resampled to it first.
pub const VAD_SAMPLE_RATE: u32 = 16_000;
/// Samples per frame.
pub const FRAME_SAMPLES: usize = 256;
/// Milliseconds per frame.
pub const FRAME_MS: u64 = 16;
/// Samples per millisecond at [`VAD_SAMPLE_RATE`].
pub const SAMPLES_PER_MS: u64 = 16;
/// The default voiced threshold (`turnDetection.threshold`).
pub const DEFAULT_THRESHOLD: f32 = 0.5;

/// One scored frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VadFrame {
    /// The frame's number in the stream, from 0.
    pub index: u64,
    /// Its first sample's offset in the stream, at 16 kHz.
    pub start_sample: u64,
    /// earshot's score, 0 to 1.
    pub score: f32,
    /// Whether the score reached the threshold.
    pub voiced: bool,
}

impl VadFrame {
    /// Where the frame starts, in ms from the stream's start.
    pub fn start_ms(&self) -> u64 {
        self.start_sample / SAMPLES_PER_MS
    }

    /// Where the frame ends, in samples.
    pub fn end_sample(&self) -> u64 {
        self.start_sample + FRAME_SAMPLES as u64
    }
}

/// A voice activity detector for one audio stream (one per session).
pub struct Vad {
    detector: Box<Detector>,
    threshold: f32,
    /// Samples of the frame being filled.
    frame: Vec<i16>,
    /// The low byte of a sample split between two slices.
    odd_byte: Option<u8>,
    /// Frames scored so far.
    frames: u64,
}

impl fmt::Debug for Vad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Vad")
            .field("threshold", &self.threshold)
            .field("buffered_samples", &self.frame.len())
            .field("frames", &self.frames)
            .finish_non_exhaustive()
    }
}

impl Default for Vad {
    fn default() -> Self {
        Self::new(DEFAULT_THRESHOLD)
    }
}

impl Vad {
    /// A detector whose frames are voiced at `threshold` and above
    /// (clamped to 0–1; not a number means the default).
    pub fn new(threshold: f32) -> Self {
        Self {
            detector: Detector::default_boxed(),
            threshold: clamp_threshold(threshold),
            frame: Vec::with_capacity(FRAME_SAMPLES),
            odd_byte: None,
            frames: 0,
        }
    }

    pub fn threshold(&self) -> f32 {
        self.threshold
    }

    pub fn set_threshold(&mut self, threshold: f32) {
        self.threshold = clamp_threshold(threshold);
    }

    /// Samples taken so far (including those of an unfinished frame).
    pub fn samples_seen(&self) -> u64 {
        self.frames * FRAME_SAMPLES as u64 + self.frame.len() as u64
    }

    /// Take little-endian PCM16 mono at 16 kHz; returns the frames it
    /// completes. A trailing odd byte waits for the next slice.
    pub fn push_pcm16(&mut self, pcm16_le: &[u8]) -> Vec<VadFrame> {
        let mut bytes = pcm16_le;
        let mut samples = Vec::with_capacity(bytes.len() / 2 + 1);
        if let Some(low) = self.odd_byte.take() {
            match bytes.split_first() {
                Some((&high, rest)) => {
                    samples.push(i16::from_le_bytes([low, high]));
                    bytes = rest;
                }
                None => {
                    self.odd_byte = Some(low);
                    return Vec::new();
                }
            }
        }
        let pairs = bytes.chunks_exact(2);
        if let [last] = pairs.remainder() {
            self.odd_byte = Some(*last);
        }
        samples.extend(pairs.map(|pair| i16::from_le_bytes([pair[0], pair[1]])));
        self.push_samples(&samples)
    }

    /// Take samples at 16 kHz; returns the frames they complete.
    pub fn push_samples(&mut self, mut samples: &[i16]) -> Vec<VadFrame> {
        let mut out = Vec::with_capacity((self.frame.len() + samples.len()) / FRAME_SAMPLES);
        while !samples.is_empty() {
            let take = (FRAME_SAMPLES - self.frame.len()).min(samples.len());
            self.frame.extend_from_slice(&samples[..take]);
            samples = &samples[take..];
            if self.frame.len() == FRAME_SAMPLES {
                out.push(self.score_frame());
            }
        }
        out
    }

    /// Forget the stream: the next sample is sample 0 again.
    pub fn reset(&mut self) {
        self.detector.reset();
        self.frame.clear();
        self.odd_byte = None;
        self.frames = 0;
    }

    fn score_frame(&mut self) -> VadFrame {
        let score = self.detector.predict_i16(&self.frame).clamp(0.0, 1.0);
        self.frame.clear();
        let index = self.frames;
        self.frames += 1;
        VadFrame {
            index,
            start_sample: index * FRAME_SAMPLES as u64,
            score,
            voiced: score >= self.threshold,
        }
    }
}

fn clamp_threshold(threshold: f32) -> f32 {
    if threshold.is_nan() {
        DEFAULT_THRESHOLD
    } else {
        threshold.clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;
    use crate::wav;

    const SENTENCE: &str =
        "Hello, I would like to book a table for two people tomorrow evening, please.";

    /// espeak-ng's speech at 16 kHz, or `None` when espeak-ng is missing.
    fn espeak_speech(text: &str) -> Option<Vec<i16>> {
        let output = match Command::new("espeak-ng")
            .args(["--stdout", "-v", "en-us", text])
            .output()
        {
            Ok(output) if output.status.success() => output,
            Ok(output) => panic!(
                "espeak-ng failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ),
            Err(error) => {
                eprintln!(
                    "SKIPPED the espeak-ng part: espeak-ng is not runnable ({error}); \
                     install it with `apt-get install -y espeak-ng`"
                );
                return None;
            }
        };
        let (format, data) = wav::split_samples(&output.stdout).unwrap();
        assert_eq!(
            (format.sample_rate, format.channels, format.bits_per_sample),
            (22_050, 1, 16)
        );
        let samples: Vec<i16> = data
            .chunks_exact(2)
            .map(|b| i16::from_le_bytes([b[0], b[1]]))
            .collect();
        Some(resample(&samples, 22_050, 16_000))
    }

    /// Linear interpolation, enough for a test signal.
    fn resample(input: &[i16], from: u32, to: u32) -> Vec<i16> {
        let out_len = input.len() as u64 * u64::from(to) / u64::from(from);
        (0..out_len)
            .map(|n| {
                let position = n * u64::from(from);
                let index = (position / u64::from(to)) as usize;
                let frac = (position % u64::from(to)) as f64 / f64::from(to);
                let a = f64::from(input[index]);
                let b = f64::from(*input.get(index + 1).unwrap_or(&input[index]));
                (a + (b - a) * frac).round() as i16
            })
            .collect()
    }

    fn silence(ms: usize) -> Vec<i16> {
        vec![0; ms * 16]
    }

    fn voiced_share(frames: &[VadFrame]) -> f64 {
        frames.iter().filter(|f| f.voiced).count() as f64 / frames.len().max(1) as f64
    }

    fn as_bytes(samples: &[i16]) -> Vec<u8> {
        samples.iter().flat_map(|s| s.to_le_bytes()).collect()
    }

    #[test]
    fn silence_is_never_voiced_and_quiet_noise_hardly() {
        let mut vad = Vad::default();
        let frames = vad.push_samples(&silence(2000));
        assert_eq!(frames.len(), 125);
        assert!(
            frames.iter().all(|f| !f.voiced && f.score < 0.5),
            "{frames:?}"
        );
        // Faint hiss (deterministic pseudo-noise, ±40).
        let mut state = 7u32;
        let hiss: Vec<i16> = (0..32_000)
            .map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                ((state >> 16) % 81) as i16 - 40
            })
            .collect();
        let frames = Vad::default().push_samples(&hiss);
        assert!(voiced_share(&frames) < 0.05, "{}", voiced_share(&frames));
    }

    #[test]
    fn frames_are_the_same_whatever_the_slice_sizes() {
        let signal: Vec<i16> = espeak_speech(SENTENCE).unwrap_or_else(|| {
            (0..40_000)
                .map(|n| ((n as f64 * 0.09).sin() * 8000.0 * ((n / 4000) % 2) as f64) as i16)
                .collect()
        });
        let bytes = as_bytes(&signal);
        let whole = Vad::default().push_pcm16(&bytes);
        assert_eq!(whole.len(), signal.len() / FRAME_SAMPLES);
        let mut vad = Vad::default();
        let mut sliced = Vec::new();
        let mut at = 0;
        for size in [1usize, 3, 77, 512, 513, 2, 1001].iter().cycle() {
            if at >= bytes.len() {
                break;
            }
            let end = (at + size).min(bytes.len());
            sliced.extend(vad.push_pcm16(&bytes[at..end]));
            at = end;
        }
        assert_eq!(sliced, whole);
        assert_eq!(vad.samples_seen(), signal.len() as u64);
        for (i, frame) in whole.iter().enumerate() {
            assert_eq!(frame.index, i as u64);
            assert_eq!(frame.start_sample, i as u64 * 256);
            assert_eq!(frame.start_ms(), i as u64 * 16);
        }
    }

    #[test]
    fn espeak_speech_is_mostly_voiced_and_the_silence_around_it_is_not() {
        let Some(speech) = espeak_speech(SENTENCE) else {
            // Without espeak-ng, still check the silence half of the claim.
            let frames = Vad::default().push_samples(&silence(1000));
            assert!(frames.iter().all(|f| !f.voiced));
            return;
        };
        assert!(
            speech.len() > 16_000 * 2,
            "espeak-ng spoke {} samples",
            speech.len()
        );
        let speech_frames = Vad::default().push_samples(&speech);
        let share = voiced_share(&speech_frames);
        eprintln!(
            "earshot: {:.0} % of espeak-ng speech frames voiced",
            share * 100.0
        );
        assert!(
            share >= 0.6,
            "only {:.0} % of speech frames voiced",
            share * 100.0
        );

        // 1 s of silence, the speech, 1 s of silence: voiced frames lie in
        // the speech (plus a short tail of the detector's context).
        let mut stream = silence(1000);
        stream.extend_from_slice(&speech);
        stream.extend(silence(1000));
        let frames = Vad::default().push_samples(&stream);
        let speech_start = 16_000u64;
        let speech_end = speech_start + speech.len() as u64;
        let leading = &frames[..(speech_start as usize / FRAME_SAMPLES)];
        assert!(
            leading.iter().all(|f| !f.voiced),
            "silence before speech is unvoiced"
        );
        let trailing: Vec<&VadFrame> = frames
            .iter()
            .filter(|f| f.start_sample >= speech_end + 200 * SAMPLES_PER_MS)
            .collect();
        assert!(trailing.len() > 40);
        assert!(
            trailing.iter().all(|f| !f.voiced),
            "silence after speech is unvoiced"
        );
        let inside = frames
            .iter()
            .filter(|f| f.start_sample >= speech_start && f.end_sample() <= speech_end);
        let inside: Vec<VadFrame> = inside.copied().collect();
        assert!(voiced_share(&inside) >= 0.6);
    }

    #[test]
    fn a_vad_can_move_between_tasks() {
        fn assert_send<T: Send + 'static>(_: &T) {}
        assert_send(&Vad::default());
    }

    #[test]
    fn the_threshold_decides_voiced() {
        let mut strict = Vad::new(1.0);
        let mut lax = Vad::new(0.0);
        let audio = espeak_speech("Testing one two three.").unwrap_or_else(|| silence(500));
        let strict_frames = strict.push_samples(&audio);
        let lax_frames = lax.push_samples(&audio);
        for (s, l) in strict_frames.iter().zip(&lax_frames) {
            assert_eq!(s.score, l.score);
            assert!(l.voiced);
            assert_eq!(s.voiced, s.score >= 1.0);
        }
        assert_eq!(Vad::new(f32::NAN).threshold(), DEFAULT_THRESHOLD);
        assert_eq!(Vad::new(7.0).threshold(), 1.0);
        let mut vad = Vad::default();
        vad.push_samples(&silence(100));
        vad.reset();
        assert_eq!(vad.samples_seen(), 0);
        assert_eq!(vad.push_samples(&silence(16))[0].index, 0);
    }
}
