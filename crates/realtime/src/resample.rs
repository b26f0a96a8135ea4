//! PCM16 mono rate conversion between the host and the provider (16 kHz ⇄
//! 24 kHz and any other pair): linear interpolation, streaming, so chunk
//! boundaries leave no clicks and no samples are lost between chunks.

/// A converter from one rate to another, fed chunk by chunk.
#[derive(Debug, Clone)]
pub struct Resampler {
    from: u32,
    to: u32,
    /// The last input sample of the previous chunk.
    last: i16,
    /// Where the next output sample falls, in input samples after `last`,
    /// scaled by `to` (an exact integer position).
    pos: u64,
}

impl Resampler {
    pub fn new(from: u32, to: u32) -> Self {
        Self {
            from: from.max(1),
            to: to.max(1),
            last: 0,
            pos: 0,
        }
    }

    /// Whether the rates differ.
    pub fn converts(&self) -> bool {
        self.from != self.to
    }

    /// Convert one chunk of little-endian PCM16 (an odd trailing byte is
    /// dropped).
    pub fn process(&mut self, pcm: &[u8]) -> Vec<u8> {
        let input: Vec<i16> = pcm
            .chunks_exact(2)
            .map(|b| i16::from_le_bytes([b[0], b[1]]))
            .collect();
        if !self.converts() {
            return pcm[..input.len() * 2].to_vec();
        }
        let (from, to) = (u64::from(self.from), u64::from(self.to));
        let mut out =
            Vec::with_capacity(input.len() * self.to as usize / self.from as usize * 2 + 4);
        // Positions are in units of 1/to input samples; sample k of this
        // chunk sits at (k + 1) * to (position 0 is `last`).
        let end = input.len() as u64 * to;
        while self.pos < end {
            let index = (self.pos / to) as usize;
            let frac = (self.pos % to) as i64;
            let a = if index == 0 {
                self.last
            } else {
                input[index - 1]
            };
            let b = input[index];
            let v = i64::from(a) + (i64::from(b) - i64::from(a)) * frac / to as i64;
            out.extend_from_slice(&(v as i16).to_le_bytes());
            self.pos += from;
        }
        self.pos -= end;
        if let Some(&l) = input.last() {
            self.last = l;
        }
        out
    }
}

/// Milliseconds of PCM16 mono audio of `bytes` bytes at `rate` Hz.
pub fn duration_ms(bytes: usize, rate: u32) -> u32 {
    let samples = (bytes / 2) as u64;
    u32::try_from(samples * 1000 / u64::from(rate.max(1))).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcm(samples: &[i16]) -> Vec<u8> {
        samples.iter().flat_map(|s| s.to_le_bytes()).collect()
    }

    #[test]
    fn lengths_follow_the_ratio_across_chunks() {
        let mut up = Resampler::new(16_000, 24_000);
        let chunk = pcm(&[100; 320]); // 20 ms at 16 kHz
        let total: usize = (0..50).map(|_| up.process(&chunk).len()).sum();
        assert_eq!(total / 2, 24_000, "one second in, one second out");
        let mut down = Resampler::new(24_000, 16_000);
        let chunk = pcm(&[100; 480]);
        let total: usize = (0..50).map(|_| down.process(&chunk).len()).sum();
        assert_eq!(total / 2, 16_000);
    }

    #[test]
    fn a_ramp_stays_a_ramp_and_equal_rates_pass_through() {
        let mut up = Resampler::new(1, 2);
        let out = up.process(&pcm(&[0, 100, 200]));
        let samples: Vec<i16> = out
            .chunks_exact(2)
            .map(|b| i16::from_le_bytes([b[0], b[1]]))
            .collect();
        // One input sample of delay: the first output sits on the sample before
        // the chunk (silence at the start).
        assert_eq!(samples, [0, 0, 0, 50, 100, 150]);
        let mut same = Resampler::new(24_000, 24_000);
        assert_eq!(same.process(&pcm(&[1, 2, 3])), pcm(&[1, 2, 3]));
        assert_eq!(duration_ms(48_000, 24_000), 1000);
    }
}
