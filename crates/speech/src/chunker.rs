//! The chunker (design `voice-pipeline.md` §4(e)): a model's streamed text
//! for one spoken item goes in as deltas, chunks for TTS come out as soon
//! as a sentence (or, for the first chunk, a long clause) is complete.
//!
//! - A *sentence end* is `. ! ? …` followed by whitespace, or `。！？；`
//!   (no space needed). `Mr. Mrs. Ms. Dr. St. e.g. i.e. etc. vs.`, a `.`
//!   between digits and the `.` of an ordered-list marker (`2. ` at the
//!   start of a line) are not ends. Closing quotes, brackets and markdown
//!   emphasis right after the mark (`"Go." `, `**Done.** `) stay in the
//!   chunk.
//! - The first chunk is released at the first sentence end once it holds
//!   ≥ 10 characters, else at a clause mark (`, ; :` followed by
//!   whitespace, or `— ，、：`) once it holds ≥ 40.
//! - Later chunks are released at a sentence end once they hold ≥ 40
//!   characters, so short sentences are merged.
//! - A chunk reaching 300 characters is cut at its last whitespace (or at
//!   300 characters when it has none, as CJK text may); [`Chunker::finish`]
//!   flushes the rest.
//!
//! Every decision depends only on the text, never on where the deltas were
//! split: a mark at the end of what has arrived waits for the next
//! character. Each [`Chunk`] carries both what TTS gets (markdown emphasis,
//! inline code ticks, heading hashes, list bullets and code fences removed,
//! whitespace collapsed) and the exact original text it covers, so the
//! stored message can be rebuilt from the chunks that were played.

mod markup;

use std::ops::Range;

use markup::{LineTracker, MarkupCleaner};

/// The first chunk is released at a sentence end once it has this many
/// characters.
pub const FIRST_SENTENCE_MIN_CHARS: usize = 10;
/// … or at a clause mark once it has this many.
pub const FIRST_CLAUSE_MIN_CHARS: usize = 40;
/// Later chunks are released at a sentence end once they have this many.
pub const LATER_SENTENCE_MIN_CHARS: usize = 40;
/// No chunk's spoken text is longer than this many characters (nor its
/// original, from its first non-whitespace character, unless text with
/// nothing to speak was carried into it).
pub const MAX_CHUNK_CHARS: usize = 300;

/// Abbreviations whose `.` ends no sentence (compared case-insensitively).
const ABBREVIATIONS: [&str; 9] = [
    "mr.", "mrs.", "ms.", "dr.", "st.", "e.g.", "i.e.", "etc.", "vs.",
];

/// One piece of an item's text released to TTS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// What TTS gets: markup removed, whitespace collapsed to single
    /// spaces, trimmed. Empty only for the last chunk of an item whose tail
    /// is nothing but whitespace or markup: send nothing to TTS for it, but
    /// keep its `original`.
    pub spoken: String,
    /// The exact text of the item this chunk covers, with the whitespace
    /// before it: the `original`s of an item's chunks, concatenated, are the
    /// item's text.
    pub original: String,
    /// Where `original` sits in the item's text, in bytes.
    pub range: Range<usize>,
}

impl Chunk {
    /// Whether TTS gets nothing for this chunk.
    pub fn is_silent(&self) -> bool {
        self.spoken.is_empty()
    }
}

/// Streaming chunker for one spoken item. After [`Chunker::finish`] it is
/// empty again and may take the next item.
#[derive(Debug, Clone, Default)]
pub struct Chunker {
    /// Text received and not yet released.
    pending: String,
    /// Released text whose spoken form was empty; it is prepended to the
    /// next chunk's original.
    carry: String,
    /// Bytes of the item's text before `carry` (the end of the last chunk).
    emitted_bytes: usize,
    /// Chunks given out for this item.
    chunks_emitted: usize,
    /// Whether the text before `pending` ends at the start of a line.
    line: LineTracker,
    markup: MarkupCleaner,
}

/// What the scan of the pending text decided.
enum Decision {
    /// Nothing can be released before more text arrives.
    Wait,
    /// Release `pending[..end]` (a byte offset).
    ReleaseAt(usize),
}

/// What a character is to the chunker.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    Sentence { needs_space: bool },
    Clause { needs_space: bool },
}

impl Chunker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Take the next delta of the item's text; returns the chunks it
    /// completes, in order.
    pub fn push(&mut self, delta: &str) -> Vec<Chunk> {
        self.pending.push_str(delta);
        let mut out = Vec::new();
        while let Decision::ReleaseAt(end) = self.next_release() {
            if let Some(chunk) = self.release(end) {
                out.push(chunk);
            }
        }
        out
    }

    /// The item's text has ended: release what is left (at most one chunk)
    /// and start over for the next item.
    pub fn finish(&mut self) -> Vec<Chunk> {
        let mut out = Vec::new();
        if !self.pending.is_empty() || !self.carry.is_empty() {
            let piece = std::mem::take(&mut self.pending);
            let spoken = self.markup.clean(&piece, None);
            let original = std::mem::take(&mut self.carry) + &piece;
            let start = self.emitted_bytes;
            out.push(Chunk {
                spoken,
                range: start..start + original.len(),
                original,
            });
        }
        *self = Self::default();
        out
    }

    /// Release `pending[..end]`: a chunk, or carried text when nothing of
    /// it is spoken.
    fn release(&mut self, end: usize) -> Option<Chunk> {
        let next = self.pending[end..].chars().next();
        let piece: String = self.pending.drain(..end).collect();
        self.line.advance(&piece);
        let spoken = self.markup.clean(&piece, next);
        self.carry.push_str(&piece);
        if spoken.is_empty() {
            return None;
        }
        let original = std::mem::take(&mut self.carry);
        let start = self.emitted_bytes;
        self.emitted_bytes += original.len();
        self.chunks_emitted += 1;
        Some(Chunk {
            spoken,
            range: start..self.emitted_bytes,
            original,
        })
    }

    /// Find where the next chunk ends, if that is already decided.
    fn next_release(&self) -> Decision {
        let content = self.pending.trim_start();
        let lead = self.pending.len() - content.len();
        // One character past the cap decides a mark at the cap, and tells
        // whether the chunk has reached the cap at all.
        let chars: Vec<(usize, char)> = content.char_indices().take(MAX_CHUNK_CHARS + 2).collect();
        let first = self.chunks_emitted == 0;
        for (k, &(_, c)) in chars.iter().enumerate() {
            if k >= MAX_CHUNK_CHARS {
                break;
            }
            let Some(mark) = mark_of(c) else { continue };
            let mut after = k + 1;
            while after < chars.len() && is_closer(chars[after].1) {
                after += 1;
            }
            let len = after;
            if len > MAX_CHUNK_CHARS {
                continue;
            }
            let Some(&(next_byte, next)) = chars.get(after) else {
                // The mark ends what has arrived: the next character decides.
                return Decision::Wait;
            };
            let (is_sentence, needs_space) = match mark {
                Mark::Sentence { needs_space } => (true, needs_space),
                Mark::Clause { needs_space } => (false, needs_space),
            };
            if needs_space && !next.is_whitespace() {
                continue;
            }
            if c == '.' && !self.period_ends_sentence(lead, &chars, k) {
                continue;
            }
            let qualifies = if is_sentence {
                len >= if first {
                    FIRST_SENTENCE_MIN_CHARS
                } else {
                    LATER_SENTENCE_MIN_CHARS
                }
            } else {
                first && len >= FIRST_CLAUSE_MIN_CHARS
            };
            if qualifies {
                return Decision::ReleaseAt(lead + next_byte);
            }
        }
        if chars.len() <= MAX_CHUNK_CHARS {
            return Decision::Wait;
        }
        // The chunk reached the cap: cut at its last whitespace, else hard.
        let cut = (1..=MAX_CHUNK_CHARS)
            .rev()
            .find(|&w| chars[w].1.is_whitespace())
            .unwrap_or(MAX_CHUNK_CHARS);
        Decision::ReleaseAt(lead + chars[cut].0)
    }

    /// Whether the `.` at `chars[k]` (followed by whitespace) ends a
    /// sentence: not after an abbreviation, not between digits, not the dot
    /// of an ordered-list marker.
    fn period_ends_sentence(&self, lead: usize, chars: &[(usize, char)], k: usize) -> bool {
        let before = k.checked_sub(1).map(|i| chars[i].1);
        let after = chars.get(k + 1).map(|&(_, c)| c);
        if before.is_some_and(|c| c.is_ascii_digit()) && after.is_some_and(|c| c.is_ascii_digit()) {
            return false;
        }
        let token_start = chars[..k]
            .iter()
            .rposition(|&(_, c)| c.is_whitespace())
            .map_or(0, |i| i + 1);
        let token: String = chars[token_start..=k].iter().map(|&(_, c)| c).collect();
        let bare = token.trim_start_matches(is_opener).to_lowercase();
        if ABBREVIATIONS.contains(&bare.as_str()) {
            return false;
        }
        let digits = &token[..token.len() - 1];
        if !digits.is_empty() && digits.len() <= 3 && digits.bytes().all(|b| b.is_ascii_digit()) {
            let token_byte = lead + chars[token_start].0;
            if self.line.starts_line(&self.pending[..token_byte]) {
                return false;
            }
        }
        true
    }
}

fn mark_of(c: char) -> Option<Mark> {
    match c {
        '.' | '!' | '?' | '…' => Some(Mark::Sentence { needs_space: true }),
        '。' | '！' | '？' | '；' => Some(Mark::Sentence { needs_space: false }),
        ',' | ';' | ':' => Some(Mark::Clause { needs_space: true }),
        '—' | '，' | '、' | '：' => Some(Mark::Clause { needs_space: false }),
        _ => None,
    }
}

/// Characters that may follow a mark and still belong to its sentence:
/// closing quotes and brackets, markdown emphasis and code ticks.
fn is_closer(c: char) -> bool {
    matches!(
        c,
        '"' | '\''
            | '”'
            | '’'
            | ')'
            | ']'
            | '»'
            | '」'
            | '』'
            | '）'
            | '】'
            | '*'
            | '_'
            | '`'
            | '~'
    )
}

/// Characters that may open a word before an abbreviation: `("Dr.`.
fn is_opener(c: char) -> bool {
    matches!(
        c,
        '"' | '\'' | '“' | '‘' | '(' | '[' | '«' | '*' | '_' | '¿' | '¡'
    )
}

#[cfg(test)]
#[path = "chunker_tests.rs"]
mod tests;
