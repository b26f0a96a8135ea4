//! Audio bodies as they stream in: raw PCM16 (an odd byte carried to the
//! next piece) or a WAV whose header is read for its format and skipped
//! without trusting its sizes ([`crate::wav`]; a streamed WAV, like
//! espeak-ng's, carries placeholders). Only 16-bit mono PCM is accepted.

use bytes::Bytes;

use crate::{Result, SpeechError};

/// The most header bytes read before the `data` chunk must have started.
const MAX_HEADER_BYTES: usize = 64 * 1024;

/// Turns body pieces into even-length PCM16.
#[derive(Debug)]
pub(crate) struct PcmReader {
    /// Header bytes not yet understood (`None` once in the data).
    header: Option<Vec<u8>>,
    rate: u32,
    carry: Option<u8>,
}

impl PcmReader {
    /// Raw PCM16 at `rate`.
    pub(crate) fn raw(rate: u32) -> Self {
        Self {
            header: None,
            rate,
            carry: None,
        }
    }

    /// A WAV; `fallback_rate` until its header is read.
    pub(crate) fn wav(fallback_rate: u32) -> Self {
        Self {
            header: Some(Vec::new()),
            rate: fallback_rate,
            carry: None,
        }
    }

    /// The rate (from the header once read).
    pub(crate) fn rate(&self) -> u32 {
        self.rate
    }

    /// The PCM in `piece` (possibly empty).
    pub(crate) fn feed(&mut self, piece: &[u8]) -> Result<Bytes> {
        let data: Vec<u8> = match self.header.as_mut() {
            None => piece.to_vec(),
            Some(header) => {
                header.extend_from_slice(piece);
                match parse_header(header)? {
                    None if header.len() > MAX_HEADER_BYTES => {
                        return Err(SpeechError::Protocol(
                            "the WAV header has no data chunk".into(),
                        ));
                    }
                    None => return Ok(Bytes::new()),
                    Some((rate, start)) => {
                        self.rate = rate;
                        let rest = header.split_off(start);
                        self.header = None;
                        rest
                    }
                }
            }
        };
        Ok(self.even(data))
    }

    fn even(&mut self, data: Vec<u8>) -> Bytes {
        let mut out = Vec::with_capacity(data.len() + 1);
        if let Some(b) = self.carry.take() {
            out.push(b);
        }
        out.extend_from_slice(&data);
        if out.len() % 2 == 1 {
            self.carry = out.pop();
        }
        Bytes::from(out)
    }
}

/// `(rate, data offset)` once the header up to the `data` chunk is in
/// ([`crate::wav::parse_header`]), refused unless 16-bit mono PCM.
fn parse_header(b: &[u8]) -> Result<Option<(u32, usize)>> {
    use crate::wav::WavError;
    match crate::wav::parse_header(b) {
        Err(WavError::Incomplete) => Ok(None),
        Err(e) => Err(SpeechError::Protocol(e.to_string())),
        Ok(h) if !h.format.is_pcm16() || h.format.channels != 1 => {
            Err(SpeechError::Protocol(format!(
                "the WAV is format {}, {} channel(s), {} bits; 16-bit mono PCM is needed",
                h.format.format_tag, h.format.channels, h.format.bits_per_sample
            )))
        }
        Ok(h) => Ok(Some((h.format.sample_rate, h.data_offset))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(rate: u32, extra: &[u8]) -> Vec<u8> {
        let mut h = b"RIFF\xff\xff\xff\x7fWAVEfmt ".to_vec();
        h.extend_from_slice(&16u32.to_le_bytes());
        h.extend_from_slice(&[1, 0, 1, 0]);
        h.extend_from_slice(&rate.to_le_bytes());
        h.extend_from_slice(&(rate * 2).to_le_bytes());
        h.extend_from_slice(&[2, 0, 16, 0]);
        h.extend_from_slice(extra);
        h.extend_from_slice(b"data\x00\xf0\xff\x7f");
        h
    }

    #[test]
    fn a_streamed_wav_is_read_byte_by_byte_and_its_sizes_ignored() {
        let mut body = header(22_050, b"LIST\x04\x00\x00\x00abcd");
        body.extend_from_slice(&[1, 2, 3, 4, 5]);
        let mut reader = PcmReader::wav(24_000);
        let mut pcm = Vec::new();
        for b in &body {
            pcm.extend_from_slice(&reader.feed(&[*b]).unwrap_or_else(|e| panic!("{e}")));
        }
        assert_eq!(reader.rate(), 22_050);
        assert_eq!(pcm, vec![1, 2, 3, 4]);
    }

    #[test]
    fn stereo_and_non_wav_are_refused() {
        let mut stereo = header(16_000, b"");
        stereo[22] = 2;
        assert!(PcmReader::wav(0).feed(&stereo).is_err());
        assert!(
            PcmReader::wav(0)
                .feed(b"ID3\x03\x00\x00\x00\x00\x00\x00\x00\x00")
                .is_err()
        );
    }

    #[test]
    fn raw_pcm_carries_odd_bytes() {
        let mut reader = PcmReader::raw(24_000);
        assert_eq!(
            reader.feed(&[1, 2, 3]).unwrap_or_default().as_ref(),
            &[1, 2]
        );
        assert_eq!(reader.feed(&[4]).unwrap_or_default().as_ref(), &[3, 4]);
    }
}
