//! WAV framing (design `voice-pipeline.md` §1.1, §1.2, §1.5): a PCM16 mono
//! utterance wrapped in a 44-byte RIFF header for the OpenAI-compatible
//! transcription upload, and a header reader for WAV streams that comes
//! from TTS providers and espeak-ng. Streamed WAVs carry placeholder sizes
//! (espeak-ng writes `0x7ffff000` as the data size), so the reader finds
//! the `data` chunk and never trusts its size: the samples are the rest of
//! the stream.

use thiserror::Error;

/// The format tag of integer PCM.
pub const FORMAT_PCM: u16 = 1;
/// The format tag of IEEE float samples.
pub const FORMAT_IEEE_FLOAT: u16 = 3;
/// The format tag of `WAVE_FORMAT_EXTENSIBLE`; the real format is the
/// first two bytes of its sub-format GUID.
pub const FORMAT_EXTENSIBLE: u16 = 0xFFFE;

/// The size of the header [`encode_pcm16_mono`] writes.
pub const CANONICAL_HEADER_LEN: usize = 44;

/// A chunk before `data` larger than this is taken as garbage rather than
/// waited for: real headers (`fmt `, `LIST`, `fact`) are a few hundred bytes.
const MAX_HEADER_CHUNK: u32 = 1 << 20;

/// Why a WAV could not be written or read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WavError {
    /// More bytes are needed before the header can be read (a stream that
    /// has not delivered its whole header yet).
    #[error("the WAV header is incomplete")]
    Incomplete,
    /// The bytes are not a WAV this reader understands.
    #[error("not a WAV stream: {0}")]
    Invalid(&'static str),
    /// The samples do not fit a RIFF size field.
    #[error("{bytes} bytes of samples do not fit a WAV file")]
    TooLong { bytes: usize },
}

/// What the `fmt ` chunk says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WavFormat {
    /// [`FORMAT_PCM`], [`FORMAT_IEEE_FLOAT`], … (an extensible header is
    /// resolved to its sub-format).
    pub format_tag: u16,
    pub channels: u16,
    pub sample_rate: u32,
    pub bits_per_sample: u16,
}

impl WavFormat {
    /// Whether the samples are 16-bit integer PCM, the only encoding the
    /// voice pipeline plays without conversion.
    pub fn is_pcm16(&self) -> bool {
        self.format_tag == FORMAT_PCM && self.bits_per_sample == 16
    }
}

/// A parsed header: the format and where the samples begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WavHeader {
    pub format: WavFormat,
    /// The byte offset of the first sample; everything after it is audio.
    pub data_offset: usize,
}

/// Wrap little-endian PCM16 mono samples at `sample_rate` in a canonical
/// 44-byte WAV header. An odd trailing byte is dropped.
pub fn encode_pcm16_mono(pcm16_le: &[u8], sample_rate: u32) -> Result<Vec<u8>, WavError> {
    let data = &pcm16_le[..pcm16_le.len() & !1];
    let too_long = WavError::TooLong { bytes: data.len() };
    let data_len = u32::try_from(data.len()).map_err(|_| too_long.clone())?;
    let riff_len = data_len.checked_add(36).ok_or(too_long)?;
    let block_align: u16 = 2;
    let byte_rate = sample_rate.saturating_mul(u32::from(block_align));
    let mut out = Vec::with_capacity(CANONICAL_HEADER_LEN + data.len());
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&riff_len.to_le_bytes());
    out.extend_from_slice(b"WAVE");
    out.extend_from_slice(b"fmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&FORMAT_PCM.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&sample_rate.to_le_bytes());
    out.extend_from_slice(&byte_rate.to_le_bytes());
    out.extend_from_slice(&block_align.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data_len.to_le_bytes());
    out.extend_from_slice(data);
    Ok(out)
}

/// Read a WAV header from the start of a stream. The `data` chunk's size
/// is ignored (the samples are everything from `data_offset` on); chunks
/// before it (`LIST`, `fact`, …) are skipped by their sizes.
///
/// Gives [`WavError::Incomplete`] when `bytes` ends before the `data`
/// chunk's header: call again with more of the stream.
pub fn parse_header(bytes: &[u8]) -> Result<WavHeader, WavError> {
    if bytes.len() < 12 {
        return if is_prefix_of_riff(bytes) {
            Err(WavError::Incomplete)
        } else {
            Err(WavError::Invalid("no RIFF/WAVE signature"))
        };
    }
    if &bytes[0..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return Err(WavError::Invalid("no RIFF/WAVE signature"));
    }
    let mut format: Option<WavFormat> = None;
    let mut position = 12usize;
    loop {
        let Some(chunk_header) = bytes.get(position..position + 8) else {
            return Err(WavError::Incomplete);
        };
        let id = &chunk_header[0..4];
        let size = read_u32(chunk_header, 4);
        let body_start = position + 8;
        if id == b"data" {
            let format = format.ok_or(WavError::Invalid("the data chunk comes before fmt"))?;
            return Ok(WavHeader {
                format,
                data_offset: body_start,
            });
        }
        if size > MAX_HEADER_CHUNK {
            return Err(WavError::Invalid("a header chunk is implausibly large"));
        }
        // usize is at least 32 bits on every target this server builds for.
        let size = size as usize;
        let Some(body) = bytes.get(body_start..body_start + size) else {
            return Err(WavError::Incomplete);
        };
        if id == b"fmt " {
            format = Some(parse_format(body)?);
        }
        // Chunks are padded to an even length.
        position = body_start + size + (size & 1);
    }
}

/// Read a whole WAV: its format and its sample bytes (the rest of the
/// input after the `data` chunk's header, whatever its size field says).
pub fn split_samples(bytes: &[u8]) -> Result<(WavFormat, &[u8]), WavError> {
    let header = parse_header(bytes)?;
    Ok((header.format, &bytes[header.data_offset..]))
}

fn parse_format(body: &[u8]) -> Result<WavFormat, WavError> {
    if body.len() < 16 {
        return Err(WavError::Invalid("the fmt chunk is shorter than 16 bytes"));
    }
    let mut format_tag = read_u16(body, 0);
    let channels = read_u16(body, 2);
    let sample_rate = read_u32(body, 4);
    let bits_per_sample = read_u16(body, 14);
    if format_tag == FORMAT_EXTENSIBLE {
        // cbSize (2), valid bits (2), channel mask (4), then the GUID whose
        // first two bytes are the format tag.
        if body.len() < 26 {
            return Err(WavError::Invalid("the extensible fmt chunk is too short"));
        }
        format_tag = read_u16(body, 24);
    }
    if channels == 0 || sample_rate == 0 || bits_per_sample == 0 {
        return Err(WavError::Invalid(
            "the fmt chunk names no channels, rate or sample size",
        ));
    }
    Ok(WavFormat {
        format_tag,
        channels,
        sample_rate,
        bits_per_sample,
    })
}

fn is_prefix_of_riff(bytes: &[u8]) -> bool {
    let signature = b"RIFF";
    let head = &bytes[..bytes.len().min(4)];
    signature.starts_with(head)
}

fn read_u16(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcm(samples: &[i16]) -> Vec<u8> {
        samples.iter().flat_map(|s| s.to_le_bytes()).collect()
    }

    /// The header espeak-ng 1.51 writes (read with `xxd`): placeholder
    /// sizes, 22 050 Hz, mono, 16 bits.
    fn espeak_header() -> Vec<u8> {
        let mut h = Vec::new();
        h.extend_from_slice(b"RIFF");
        h.extend_from_slice(&0x7fff_f024u32.to_le_bytes());
        h.extend_from_slice(b"WAVEfmt ");
        h.extend_from_slice(&16u32.to_le_bytes());
        h.extend_from_slice(&1u16.to_le_bytes());
        h.extend_from_slice(&1u16.to_le_bytes());
        h.extend_from_slice(&22_050u32.to_le_bytes());
        h.extend_from_slice(&44_100u32.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&16u16.to_le_bytes());
        h.extend_from_slice(b"data");
        h.extend_from_slice(&0x7fff_f000u32.to_le_bytes());
        h
    }

    #[test]
    fn an_encoded_utterance_reads_back_with_its_format_and_samples() {
        let samples = pcm(&[0, 1000, -1000, i16::MAX, i16::MIN]);
        let wav = encode_pcm16_mono(&samples, 16_000).unwrap();
        assert_eq!(wav.len(), CANONICAL_HEADER_LEN + samples.len());
        assert_eq!(&wav[0..4], b"RIFF");
        assert_eq!(read_u32(&wav, 4) as usize, wav.len() - 8);
        assert_eq!(read_u32(&wav, 28), 32_000, "byte rate");
        assert_eq!(read_u32(&wav, 40) as usize, samples.len(), "data size");
        let (format, data) = split_samples(&wav).unwrap();
        assert_eq!(
            format,
            WavFormat {
                format_tag: FORMAT_PCM,
                channels: 1,
                sample_rate: 16_000,
                bits_per_sample: 16
            }
        );
        assert!(format.is_pcm16());
        assert_eq!(data, &samples[..]);
    }

    #[test]
    fn an_odd_trailing_byte_is_dropped_and_empty_audio_is_a_valid_file() {
        let wav = encode_pcm16_mono(&[1, 2, 3], 24_000).unwrap();
        assert_eq!(wav.len(), CANONICAL_HEADER_LEN + 2);
        let empty = encode_pcm16_mono(&[], 8_000).unwrap();
        let header = parse_header(&empty).unwrap();
        assert_eq!(header.data_offset, 44);
        assert_eq!(header.format.sample_rate, 8_000);
    }

    #[test]
    fn placeholder_sizes_are_ignored_and_the_samples_are_the_rest_of_the_stream() {
        let mut stream = espeak_header();
        stream.extend_from_slice(&pcm(&[5, 6, 7]));
        let (format, data) = split_samples(&stream).unwrap();
        assert_eq!(format.sample_rate, 22_050);
        assert_eq!(format.channels, 1);
        assert_eq!(data, &pcm(&[5, 6, 7])[..]);
    }

    #[test]
    fn chunks_before_data_are_skipped_with_their_padding() {
        let mut h = Vec::new();
        h.extend_from_slice(b"RIFF\0\0\0\0WAVE");
        // A LIST chunk of odd size (padded by one byte) before fmt.
        h.extend_from_slice(b"LIST");
        h.extend_from_slice(&5u32.to_le_bytes());
        h.extend_from_slice(b"INFOx\0");
        // An 18-byte fmt (cbSize present).
        h.extend_from_slice(b"fmt ");
        h.extend_from_slice(&18u32.to_le_bytes());
        h.extend_from_slice(&1u16.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&24_000u32.to_le_bytes());
        h.extend_from_slice(&96_000u32.to_le_bytes());
        h.extend_from_slice(&4u16.to_le_bytes());
        h.extend_from_slice(&16u16.to_le_bytes());
        h.extend_from_slice(&0u16.to_le_bytes());
        h.extend_from_slice(b"fact");
        h.extend_from_slice(&4u32.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(b"data");
        h.extend_from_slice(&0xffff_ffffu32.to_le_bytes());
        let offset = h.len();
        h.extend_from_slice(&[9, 9]);
        let header = parse_header(&h).unwrap();
        assert_eq!(header.data_offset, offset);
        assert_eq!(header.format.channels, 2);
        assert_eq!(header.format.sample_rate, 24_000);
    }

    #[test]
    fn an_extensible_header_resolves_to_its_sub_format() {
        let mut h = Vec::new();
        h.extend_from_slice(b"RIFF\0\0\0\0WAVEfmt ");
        h.extend_from_slice(&40u32.to_le_bytes());
        h.extend_from_slice(&FORMAT_EXTENSIBLE.to_le_bytes());
        h.extend_from_slice(&1u16.to_le_bytes());
        h.extend_from_slice(&48_000u32.to_le_bytes());
        h.extend_from_slice(&96_000u32.to_le_bytes());
        h.extend_from_slice(&2u16.to_le_bytes());
        h.extend_from_slice(&16u16.to_le_bytes());
        h.extend_from_slice(&22u16.to_le_bytes());
        h.extend_from_slice(&16u16.to_le_bytes());
        h.extend_from_slice(&4u32.to_le_bytes());
        // KSDATAFORMAT_SUBTYPE_PCM: 00000001-0000-0010-8000-00aa00389b71
        h.extend_from_slice(&[
            1, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xaa, 0, 0x38, 0x9b, 0x71,
        ]);
        h.extend_from_slice(b"data\0\0\0\0");
        let header = parse_header(&h).unwrap();
        assert!(header.format.is_pcm16());
        assert_eq!(header.format.sample_rate, 48_000);
    }

    #[test]
    fn a_header_arriving_in_pieces_is_incomplete_until_the_data_chunk_starts() {
        let header = espeak_header();
        for cut in 0..header.len() {
            assert_eq!(
                parse_header(&header[..cut]),
                Err(WavError::Incomplete),
                "cut at {cut}"
            );
        }
        assert_eq!(parse_header(&header).unwrap().data_offset, 44);
    }

    #[test]
    fn what_is_not_a_wav_is_refused() {
        assert!(matches!(
            parse_header(b"ID3\x04 an mp3 stream"),
            Err(WavError::Invalid(_))
        ));
        assert!(matches!(parse_header(b"OggS"), Err(WavError::Invalid(_))));
        let mut data_first = b"RIFF\0\0\0\0WAVEdata\0\0\0\0".to_vec();
        data_first.extend_from_slice(&[0; 8]);
        assert!(matches!(
            parse_header(&data_first),
            Err(WavError::Invalid(_))
        ));
        let mut huge = b"RIFF\0\0\0\0WAVEJUNK".to_vec();
        huge.extend_from_slice(&0x7fff_0000u32.to_le_bytes());
        assert!(matches!(parse_header(&huge), Err(WavError::Invalid(_))));
        let mut short_fmt = b"RIFF\0\0\0\0WAVEfmt ".to_vec();
        short_fmt.extend_from_slice(&4u32.to_le_bytes());
        short_fmt.extend_from_slice(&[1, 0, 1, 0]);
        assert!(matches!(
            parse_header(&short_fmt),
            Err(WavError::Invalid(_))
        ));
    }
}
