//! What TTS must not read aloud (design §4(e)): markdown emphasis (`*`,
//! `_` at a word's edge, `~~`), inline code ticks, heading hashes, list
//! bullets and code fence lines. Code inside a fence is kept as it is.
//! Chunks are cleaned one after another, so the state (start of a line,
//! inside a fence) runs across them.

/// Whether the text seen so far ends at the start of a line: nothing but
/// spaces and tabs since the last newline, or since the item's start.
#[derive(Debug, Clone, Copy)]
pub(super) struct LineTracker {
    at_line_start: bool,
}

impl Default for LineTracker {
    fn default() -> Self {
        Self {
            at_line_start: true,
        }
    }
}

impl LineTracker {
    /// Account for `text`, which follows what was seen.
    pub(super) fn advance(&mut self, text: &str) {
        self.at_line_start = self.starts_line(text);
    }

    /// Whether what was seen followed by `text` ends at a line start.
    pub(super) fn starts_line(&self, text: &str) -> bool {
        match text.rfind('\n') {
            Some(newline) => is_indent(&text[newline + 1..]),
            None => self.at_line_start && is_indent(text),
        }
    }
}

fn is_indent(text: &str) -> bool {
    text.chars().all(|c| c == ' ' || c == '\t')
}

/// Removes markup from consecutive pieces of one item's text.
#[derive(Debug, Clone)]
pub(super) struct MarkupCleaner {
    at_line_start: bool,
    in_fence: bool,
    previous: Option<char>,
}

impl Default for MarkupCleaner {
    fn default() -> Self {
        Self {
            at_line_start: true,
            in_fence: false,
            previous: None,
        }
    }
}

impl MarkupCleaner {
    /// The spoken form of `piece` (whitespace collapsed, trimmed); `next`
    /// is the character after it, if known (it decides whether a final `_`
    /// is inside a word).
    pub(super) fn clean(&mut self, piece: &str, next: Option<char>) -> String {
        let chars: Vec<char> = piece.chars().collect();
        let mut out = String::with_capacity(piece.len());
        let mut i = 0;
        while i < chars.len() {
            if self.at_line_start {
                i = self.skip_line_markers(&chars, i, &mut out);
                continue;
            }
            let c = chars[i];
            let following = chars.get(i + 1).copied().or(next);
            i += 1;
            if c == '\n' {
                out.push(' ');
                self.at_line_start = true;
            } else if self.in_fence {
                out.push(c);
            } else {
                match c {
                    '*' | '`' => {}
                    '~' if following == Some('~') => i += 1,
                    '_' if !(self.previous.is_some_and(char::is_alphanumeric)
                        && following.is_some_and(char::is_alphanumeric)) => {}
                    _ => out.push(c),
                }
            }
            self.previous = Some(c);
        }
        out.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// At the start of a line: skip indentation, then a fence line, a
    /// heading's hashes or a bullet. Returns where to go on.
    fn skip_line_markers(&mut self, chars: &[char], start: usize, out: &mut String) -> usize {
        let mut i = start;
        while i < chars.len() && (chars[i] == ' ' || chars[i] == '\t') {
            i += 1;
        }
        if i == chars.len() {
            // The line goes on in the next piece.
            return i;
        }
        self.at_line_start = false;
        let rest = &chars[i..];
        if rest.starts_with(&['`', '`', '`']) || rest.starts_with(&['~', '~', '~']) {
            self.in_fence = !self.in_fence;
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            out.push(' ');
            return i;
        }
        if self.in_fence {
            return i;
        }
        let hashes = rest.iter().take_while(|&&c| c == '#').count();
        if (1..=6).contains(&hashes) && rest.get(hashes).is_some_and(|c| *c == ' ' || *c == '\t') {
            self.previous = Some(' ');
            return i + hashes + 1;
        }
        if matches!(rest[0], '-' | '*' | '+' | '•')
            && rest.get(1).is_some_and(|c| *c == ' ' || *c == '\t')
        {
            self.previous = Some(' ');
            return i + 2;
        }
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(text: &str) -> String {
        MarkupCleaner::default().clean(text, None)
    }

    #[test]
    fn emphasis_ticks_headings_and_bullets_are_not_spoken() {
        assert_eq!(clean("## The *plan*"), "The plan");
        assert_eq!(
            clean("**Bold**, __strong__ and _soft_ ~~gone~~."),
            "Bold, strong and soft gone."
        );
        assert_eq!(clean("Run `make` now."), "Run make now.");
        assert_eq!(
            clean("Steps:\n- eggs\n* milk\n  + flour\n1. mix"),
            "Steps: eggs milk flour 1. mix"
        );
        assert_eq!(clean("#hashtag and a - dash"), "#hashtag and a - dash");
    }

    #[test]
    fn snake_case_and_single_tildes_stay() {
        assert_eq!(
            clean("call my_function with ~5 items"),
            "call my_function with ~5 items"
        );
    }

    #[test]
    fn fence_lines_go_and_code_inside_stays_verbatim() {
        assert_eq!(
            clean("Here:\n```rust\nlet _x = *y; // # not a heading\n- not a bullet\n```\nDone."),
            "Here: let _x = *y; // # not a heading - not a bullet Done."
        );
    }

    #[test]
    fn state_runs_across_pieces() {
        let mut cleaner = MarkupCleaner::default();
        assert_eq!(cleaner.clean("Intro.", Some('\n')), "Intro.");
        assert_eq!(cleaner.clean("\n# Title\n```", Some('\n')), "Title");
        assert_eq!(
            cleaner.clean("\n**kept** as code\n", Some('`')),
            "**kept** as code"
        );
        assert_eq!(cleaner.clean("```\n- after", None), "after");
        let mut word = MarkupCleaner::default();
        assert_eq!(word.clean("snake_", Some('c')), "snake_");
    }

    #[test]
    fn line_tracker_knows_line_starts() {
        let mut line = LineTracker::default();
        assert!(line.starts_line("  "));
        line.advance("Hello");
        assert!(!line.starts_line(" "));
        assert!(line.starts_line(" there\n\t"));
        line.advance("\n");
        assert!(line.starts_line(""));
    }
}
