//! What the user heard of an interrupted answer (design
//! `voice-pipeline.md` §4(d) "Played prefix", pitfalls 2 and 3).
//!
//! Each spoken item keeps its chunks in audio time: `(text, start_ms,
//! audio_ms)`, optionally with per-character alignment from the TTS
//! (ElevenLabs `alignment`). Given how far playback got, the played prefix
//! is every chunk that finished playing, whole, plus the part of the
//! playing chunk that was heard:
//! - with alignment, the characters that start before the played position;
//! - otherwise, a share of the chunk proportional to the played share of
//!   its audio, counted in non-whitespace characters;
//!
//! then cut back to the last word boundary and trimmed. A played position
//! beyond the audio sent is clamped to it.
//!
//! The server's own estimate, used when the host does not report
//! `playback.interrupted` in time: an item whose first `audio.delta` left
//! at `t0` has played `min(sentMs, now − t0)`, and is still playing until
//! `t0 + sentMs + 300 ms`.

/// How long after its last audio is sent an item is taken to be still
/// playing (the host's jitter buffer and output latency).
pub const PLAYBACK_MARGIN_MS: u64 = 300;

/// One character of TTS alignment, in the item's audio time (the same
/// clock as [`ChunkAudio::start_ms`]; ElevenLabs gives times relative to
/// each audio message, which the caller offsets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlignedChar {
    pub ch: char,
    pub start_ms: u64,
    pub duration_ms: u64,
}

/// One chunk of a spoken item and where its audio lies.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChunkAudio {
    /// The chunk's text as it is to be stored: the chunker's
    /// [`crate::chunker::Chunk::original`], which carries the whitespace
    /// before it, so that whole chunks concatenate back into the item.
    pub text: String,
    /// Where the chunk's audio starts in the item's audio, in ms.
    pub start_ms: u64,
    /// How long the chunk's audio is, in ms. `0` for a silent chunk (only
    /// markup), which counts as played once the audio before it has.
    pub audio_ms: u64,
    /// Per-character timing of what TTS spoke, if the provider gives it;
    /// empty otherwise.
    pub alignment: Vec<AlignedChar>,
}

impl ChunkAudio {
    /// A chunk whose audio starts at `start_ms` in the item and has no
    /// audio yet.
    pub fn new(text: impl Into<String>, start_ms: u64) -> Self {
        Self {
            text: text.into(),
            start_ms,
            audio_ms: 0,
            alignment: Vec::new(),
        }
    }

    /// Account for the next piece of this chunk's audio as the TTS stream
    /// delivers it: `duration_ms` long, with its alignment `(char,
    /// start_ms, duration_ms)` relative to the piece's start (ElevenLabs'
    /// `alignment` of one audio message; empty when there is none).
    pub fn push_audio(&mut self, duration_ms: u64, alignment: &[(char, u32, u32)]) {
        let piece_start = self.end_ms();
        self.alignment
            .extend(alignment.iter().map(|&(ch, start, duration)| AlignedChar {
                ch,
                start_ms: piece_start + u64::from(start),
                duration_ms: u64::from(duration),
            }));
        self.audio_ms += duration_ms;
    }

    fn end_ms(&self) -> u64 {
        self.start_ms.saturating_add(self.audio_ms)
    }
}

/// A spoken item: the chunks whose audio has been sent, in order. Chunks
/// whose audio has not started are not listed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpokenItem {
    pub chunks: Vec<ChunkAudio>,
}

impl SpokenItem {
    /// The item's audio sent so far, in ms (the end of its last chunk).
    pub fn sent_ms(&self) -> u64 {
        self.chunks
            .iter()
            .map(ChunkAudio::end_ms)
            .max()
            .unwrap_or(0)
    }

    /// The text heard after `played_ms` of the item's audio; see
    /// [`played_prefix`].
    pub fn played_prefix(&self, played_ms: u64) -> String {
        played_prefix(self, played_ms)
    }
}

/// The text of `item` heard after `played_ms` of its audio: finished chunks
/// whole, the playing one up to the played position (by alignment, else
/// proportionally by non-whitespace characters), cut back to the last word
/// boundary, trimmed. `played_ms` beyond what was sent is clamped.
pub fn played_prefix(item: &SpokenItem, played_ms: u64) -> String {
    let played = played_ms.min(item.sent_ms());
    let mut heard = String::new();
    for chunk in &item.chunks {
        if played >= chunk.end_ms() {
            heard.push_str(&chunk.text);
            continue;
        }
        if played > chunk.start_ms {
            let leading = &chunk.text[..chunk.text.len() - chunk.text.trim_start().len()];
            heard.push_str(leading);
            let partial = if chunk.alignment.is_empty() {
                proportional_prefix(chunk, played)
            } else {
                aligned_prefix(chunk, played)
            };
            heard.push_str(&partial);
        }
        break;
    }
    heard.trim().to_string()
}

/// With alignment: the characters that start before `played`, cut back to
/// a word boundary.
fn aligned_prefix(chunk: &ChunkAudio, played: u64) -> String {
    let spoken: String = chunk.alignment.iter().map(|t| t.ch).collect();
    let started = chunk
        .alignment
        .iter()
        .take_while(|t| t.start_ms < played)
        .map(|t| t.ch.len_utf8())
        .sum::<usize>();
    cut_to_word_boundary(&spoken, started).to_string()
}

/// Without alignment: the played share of the chunk's non-whitespace
/// characters, cut back to a word boundary.
fn proportional_prefix(chunk: &ChunkAudio, played: u64) -> String {
    let text = chunk.text.trim_start();
    let total = text.chars().filter(|c| !c.is_whitespace()).count() as u64;
    let into = played.saturating_sub(chunk.start_ms);
    let heard = total
        .saturating_mul(into)
        .checked_div(chunk.audio_ms)
        .unwrap_or(0);
    let mut seen = 0u64;
    let mut end = 0usize;
    for (at, c) in text.char_indices() {
        if seen == heard {
            break;
        }
        if !c.is_whitespace() {
            seen += 1;
        }
        end = at + c.len_utf8();
    }
    cut_to_word_boundary(text, end).to_string()
}

/// `text[..end]`, moved back to the last word boundary: the end of the
/// text, whitespace on either side, a CJK character on either side (each
/// is a word of its own), or the end of a word followed only by its
/// punctuation (`friend|.` but not `don|'t`).
fn cut_to_word_boundary(text: &str, end: usize) -> &str {
    let mut cut = end.min(text.len());
    while cut > 0 && !is_word_boundary(text, cut) {
        cut = text[..cut]
            .char_indices()
            .next_back()
            .map_or(0, |(at, _)| at);
    }
    &text[..cut]
}

fn is_word_boundary(text: &str, at: usize) -> bool {
    let before = text[..at].chars().next_back();
    let after = text[at..].chars().next();
    match (before, after) {
        (_, None) | (None, _) => true,
        (Some(b), Some(a)) => {
            b.is_whitespace()
                || a.is_whitespace()
                || is_cjk(b)
                || is_cjk(a)
                || (b.is_alphanumeric() && only_punctuation_follows(&text[at..]))
        }
    }
}

/// Whether `rest` starts with punctuation that runs to whitespace or the
/// end (a word's trailing punctuation).
fn only_punctuation_follows(rest: &str) -> bool {
    rest.chars()
        .take_while(|c| !c.is_whitespace())
        .all(|c| !c.is_alphanumeric())
}

/// Scripts written without spaces between words, and their punctuation.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3000..=0x303F     // CJK symbols and punctuation
        | 0x3040..=0x30FF   // hiragana, katakana
        | 0x3400..=0x4DBF   // CJK extension A
        | 0x4E00..=0x9FFF   // CJK unified ideographs
        | 0xAC00..=0xD7AF   // hangul syllables
        | 0xF900..=0xFAFF   // CJK compatibility ideographs
        | 0xFF00..=0xFFEF   // fullwidth forms
        | 0x20000..=0x2FA1F)
}

/// The server's estimate of what an item has played: what was sent, or
/// the time since its first `audio.delta` left, whichever is less.
pub fn estimate_played_ms(sent_ms: u64, elapsed_since_first_delta_ms: u64) -> u64 {
    sent_ms.min(elapsed_since_first_delta_ms)
}

/// A host's reported `playedMs`, never past what was sent (pitfall 3).
pub fn clamp_played_ms(reported_ms: u64, sent_ms: u64) -> u64 {
    reported_ms.min(sent_ms)
}

/// When an item whose first `audio.delta` left at `first_delta_at_ms`,
/// with `sent_ms` of audio sent, stops playing by the server's estimate.
pub fn playback_ends_at_ms(first_delta_at_ms: u64, sent_ms: u64) -> u64 {
    first_delta_at_ms
        .saturating_add(sent_ms)
        .saturating_add(PLAYBACK_MARGIN_MS)
}

/// Whether that item is still playing at `now_ms` (same clock as
/// `first_delta_at_ms`).
pub fn still_playing(first_delta_at_ms: u64, sent_ms: u64, now_ms: u64) -> bool {
    now_ms < playback_ends_at_ms(first_delta_at_ms, sent_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(text: &str, start_ms: u64, audio_ms: u64) -> ChunkAudio {
        ChunkAudio {
            text: text.into(),
            start_ms,
            audio_ms,
            alignment: Vec::new(),
        }
    }

    fn item(chunks: Vec<ChunkAudio>) -> SpokenItem {
        SpokenItem { chunks }
    }

    /// Alignment of `text` at a fixed `ms` per character from `start`.
    fn aligned(text: &str, start: u64, ms: u64) -> Vec<AlignedChar> {
        text.chars()
            .enumerate()
            .map(|(i, ch)| AlignedChar {
                ch,
                start_ms: start + i as u64 * ms,
                duration_ms: ms,
            })
            .collect()
    }

    #[test]
    fn the_playing_chunk_is_cut_proportionally_back_to_a_word() {
        // 17 non-whitespace characters over 1700 ms: 100 ms each.
        let it = item(vec![chunk("Hello there friend.", 0, 1700)]);
        assert_eq!(it.played_prefix(0), "");
        assert_eq!(it.played_prefix(400), "", "\"Hell\" is no word yet");
        assert_eq!(it.played_prefix(500), "Hello");
        assert_eq!(it.played_prefix(800), "Hello", "mid-word goes back");
        assert_eq!(it.played_prefix(1000), "Hello there");
        assert_eq!(
            it.played_prefix(1699),
            "Hello there friend",
            "its full stop is no word"
        );
        assert_eq!(it.played_prefix(1700), "Hello there friend.");
    }

    #[test]
    fn finished_chunks_are_whole_and_the_originals_join_up() {
        let it = item(vec![
            chunk("**First** sentence here.", 0, 1000),
            chunk(" Second one is longer.", 1000, 2000),
            chunk("\n\nThird.", 3000, 500),
        ]);
        assert_eq!(it.sent_ms(), 3500);
        assert_eq!(it.played_prefix(1000), "**First** sentence here.");
        // 18 non-whitespace characters in 2000 ms; 1200 ms in: 10 → "Second one" + "i".
        assert_eq!(
            it.played_prefix(2200),
            "**First** sentence here. Second one"
        );
        assert_eq!(
            it.played_prefix(3500),
            "**First** sentence here. Second one is longer.\n\nThird."
        );
    }

    #[test]
    fn a_played_position_past_what_was_sent_is_clamped() {
        let it = item(vec![chunk("Only this was sent.", 0, 900)]);
        assert_eq!(it.played_prefix(60_000), "Only this was sent.");
        assert_eq!(played_prefix(&SpokenItem::default(), 1000), "");
        // A silent tail chunk counts once the audio before it has played.
        let with_tail = item(vec![chunk("Said it.", 0, 800), chunk("\n```", 800, 0)]);
        assert_eq!(with_tail.played_prefix(5000), "Said it.\n```");
        assert_eq!(with_tail.played_prefix(700), "Said it");
    }

    #[test]
    fn a_gap_between_chunks_plays_nothing_of_the_next() {
        let it = item(vec![
            chunk("One two.", 0, 1000),
            chunk(" Three four.", 1500, 1000),
        ]);
        assert_eq!(it.played_prefix(1200), "One two.");
        assert_eq!(it.played_prefix(1500), "One two.");
    }

    #[test]
    fn alignment_gives_the_characters_started_before_the_position() {
        let spoken = "Hello there friend. ";
        let mut second = chunk(" Hello there **friend**.", 1000, 2000);
        second.alignment = aligned(spoken, 1000, 50);
        let it = item(vec![chunk("Intro.", 0, 1000), second]);
        // 1000 + 8 × 50: "Hello th" started → back to "Hello".
        assert_eq!(it.played_prefix(1400), "Intro. Hello");
        // The space after "there" has started: "Hello there" is whole.
        assert_eq!(it.played_prefix(1000 + 11 * 50 + 1), "Intro. Hello there");
        assert_eq!(
            it.played_prefix(1000 + 19 * 50 + 1),
            "Intro. Hello there friend."
        );
        assert_eq!(it.played_prefix(1000), "Intro.");
    }

    #[test]
    fn audio_pieces_with_relative_alignment_add_up() {
        let mut second = ChunkAudio::new(" Good day.", 800);
        let piece = |text: &str| -> Vec<(char, u32, u32)> {
            text.chars()
                .enumerate()
                .map(|(i, c)| (c, i as u32 * 100, 100))
                .collect()
        };
        second.push_audio(500, &piece("Good "));
        second.push_audio(500, &piece("day. "));
        assert_eq!(second.audio_ms, 1000);
        assert_eq!(
            second.alignment[5].start_ms,
            800 + 500,
            "the second piece is offset"
        );
        let it = item(vec![chunk("Hi.", 0, 800), second]);
        assert_eq!(it.sent_ms(), 1800);
        assert_eq!(it.played_prefix(800 + 501), "Hi. Good");
        assert_eq!(
            it.played_prefix(800 + 601),
            "Hi. Good",
            "\"da\" is mid-word"
        );
        assert_eq!(it.played_prefix(800 + 701), "Hi. Good day");
        assert_eq!(it.played_prefix(1800), "Hi. Good day.");
    }

    #[test]
    fn an_apostrophe_is_inside_a_word() {
        // 5 non-whitespace characters over 500 ms: "don'" heard.
        let it = item(vec![chunk("I don't", 0, 600)]);
        assert_eq!(it.played_prefix(480), "I");
        assert_eq!(it.played_prefix(600), "I don't");
    }

    #[test]
    fn cjk_text_is_cut_at_any_character() {
        // 5 characters over 1000 ms.
        let it = item(vec![chunk("你好世界。", 0, 1000)]);
        assert_eq!(it.played_prefix(450), "你好");
        assert_eq!(it.played_prefix(999), "你好世界");
    }

    #[test]
    fn the_servers_estimate() {
        assert_eq!(estimate_played_ms(2000, 1200), 1200);
        assert_eq!(estimate_played_ms(2000, 9000), 2000);
        assert_eq!(clamp_played_ms(5000, 3000), 3000);
        assert_eq!(clamp_played_ms(100, 3000), 100);
        assert_eq!(playback_ends_at_ms(10_000, 2000), 12_300);
        assert!(still_playing(10_000, 2000, 12_299));
        assert!(!still_playing(10_000, 2000, 12_300));
        assert_eq!(playback_ends_at_ms(u64::MAX, 5), u64::MAX);
    }
}
