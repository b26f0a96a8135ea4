//! Bounds on the HTML webFetch converts, so that no page can exhaust a
//! thread's stack or hold a CPU for long: the converters (readability,
//! htmd, the Markdown writer) recurse once per level of the tree and some
//! of their passes are quadratic in its depth (10,000 nested `<div>` took
//! 13 s; 30,000 overflowed the stack). Two checks: a linear scan of the raw
//! HTML that refuses absurd nesting or element counts before anything is
//! parsed (generous, since it only approximates the parser's tree), and
//! the exact depth of the parsed tree, walked without recursion.

use dom_query::Document;

/// Deepest parsed tree converted. Real pages stay well under a hundred
/// levels.
pub const MAX_DEPTH: usize = 512;
/// Deepest nesting the raw scan lets through to the parser; above
/// [`MAX_DEPTH`] because the scan does not apply every implied end tag.
pub const MAX_SCANNED_DEPTH: usize = 4 * MAX_DEPTH;
/// Most start tags converted (the 1.2 MB page of the benchmark corpus has
/// ~20,000).
pub const MAX_ELEMENTS: usize = 400_000;

/// Why a page is not converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    #[error("the page is too deeply nested to convert (more than {max} levels of elements)")]
    TooDeep { max: usize },
    #[error("the page has too many elements to convert (more than {max})")]
    TooManyElements { max: usize },
}

/// A tag name, lowercased and hashed (FNV-1a), so the scan allocates
/// nothing per tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tag(u64);

impl Tag {
    const fn of(name: &[u8]) -> Self {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let mut i = 0;
        while i < name.len() {
            hash ^= name[i].to_ascii_lowercase() as u64;
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
            i += 1;
        }
        Self(hash)
    }
}

macro_rules! tags {
    ($($name:literal),* $(,)?) => { &[$(Tag::of($name.as_bytes())),*] };
}

/// Elements without content or end tag.
const VOID: &[Tag] = tags![
    "area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta", "param",
    "source", "track", "wbr", "frame",
];

/// Elements whose content is text up to their own end tag.
const RAW_TEXT: &[Tag] = tags![
    "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript",
];

/// SVG and MathML, where `<x/>` closes itself.
const FOREIGN: &[Tag] = tags!["svg", "math"];

/// Scope boundaries for end tags in general (the parser's, in part).
const BARRIERS: &[Tag] = tags![
    "applet", "body", "caption", "html", "marquee", "object", "table", "td", "template", "th",
];
/// Table parts close within their table.
const TABLE_PARTS: &[Tag] = tags!["caption", "tbody", "thead", "tfoot", "tr", "td", "th"];
const TABLE_PART_BARRIERS: &[Tag] = tags!["html", "body", "template", "table"];
const TABLE_BARRIERS: &[Tag] = tags!["html", "body", "template"];
const TABLE: Tag = Tag::of(b"table");

/// Start tags that close an open paragraph.
const CLOSES_P: &[Tag] = tags![
    "p",
    "div",
    "ul",
    "ol",
    "dl",
    "table",
    "pre",
    "blockquote",
    "section",
    "article",
    "aside",
    "header",
    "footer",
    "nav",
    "main",
    "figure",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "li",
    "dt",
    "dd",
];
const P: Tag = Tag::of(b"p");
const LI: Tag = Tag::of(b"li");
const DT_DD: &[Tag] = tags!["dt", "dd"];
const CELLS: &[Tag] = tags!["td", "th"];
const CELL_CLOSERS: &[Tag] = tags!["td", "th", "tr"];
const TR: Tag = Tag::of(b"tr");
const OPTION: Tag = Tag::of(b"option");
const OPTION_CLOSERS: &[Tag] = tags!["option", "optgroup"];

/// How far up the open elements an end tag looks for its start tag.
const END_TAG_REACH: usize = 64;

/// The raw scan: refuses nesting beyond [`MAX_SCANNED_DEPTH`] and more
/// than [`MAX_ELEMENTS`] start tags, in one pass over the bytes.
pub fn check_source(html: &str) -> Result<(), ConvertError> {
    check_source_with(html, MAX_SCANNED_DEPTH, MAX_ELEMENTS).map_err(|e| match e {
        // The converter's limit is the one worth naming.
        ConvertError::TooDeep { .. } => ConvertError::TooDeep { max: MAX_DEPTH },
        other => other,
    })
}

pub(crate) fn check_source_with(
    html: &str,
    max_depth: usize,
    max_elements: usize,
) -> Result<(), ConvertError> {
    let bytes = html.as_bytes();
    let mut open: Vec<Tag> = Vec::new();
    let mut foreign = 0usize;
    let mut elements = 0usize;
    let mut i = 0;
    while let Some(lt) = memchr::memchr(b'<', &bytes[i..]) {
        i += lt + 1;
        match bytes.get(i) {
            Some(b'!') if bytes[i..].starts_with(b"!--") => {
                i = memchr::memmem::find(&bytes[i + 3..], b"-->")
                    .map_or(bytes.len(), |e| i + 3 + e + 3);
            }
            Some(b'!' | b'?') => {
                i = memchr::memchr(b'>', &bytes[i..]).map_or(bytes.len(), |e| i + e + 1);
            }
            Some(b'/') => {
                let (name, end) = tag_name(bytes, i + 1);
                i = tag_end(bytes, end).0;
                let Some(name) = name else {
                    continue;
                };
                let Some(up) = open
                    .iter()
                    .rev()
                    .take(END_TAG_REACH)
                    .take_while(|o| **o == name || !is_barrier(**o, name))
                    .position(|o| *o == name)
                else {
                    continue;
                };
                for popped in open.drain(open.len() - up - 1..) {
                    if FOREIGN.contains(&popped) {
                        foreign -= 1;
                    }
                }
            }
            Some(b) if b.is_ascii_alphabetic() => {
                let (name, end) = tag_name(bytes, i);
                let (after, self_closing) = tag_end(bytes, end);
                i = after;
                let Some(name) = name else {
                    continue;
                };
                elements += 1;
                if elements > max_elements {
                    return Err(ConvertError::TooManyElements { max: max_elements });
                }
                if VOID.contains(&name) || (self_closing && foreign > 0) {
                    continue;
                }
                if RAW_TEXT.contains(&name) {
                    i = raw_text_end(bytes, i, name);
                    continue;
                }
                while open.last().is_some_and(|top| implied_end(*top, name)) {
                    open.pop();
                }
                if FOREIGN.contains(&name) {
                    foreign += 1;
                }
                open.push(name);
                if open.len() > max_depth {
                    return Err(ConvertError::TooDeep { max: max_depth });
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether an end tag `end_tag` stops at the open element `open` without
/// closing it.
fn is_barrier(open: Tag, end_tag: Tag) -> bool {
    if end_tag == TABLE {
        TABLE_BARRIERS.contains(&open)
    } else if TABLE_PARTS.contains(&end_tag) {
        TABLE_PART_BARRIERS.contains(&open)
    } else {
        BARRIERS.contains(&open)
    }
}

/// Whether a start tag `name` closes the open element `top` first (the
/// common implied end tags: paragraphs, list items, cells, options).
fn implied_end(top: Tag, name: Tag) -> bool {
    if top == P {
        CLOSES_P.contains(&name)
    } else if top == LI {
        name == LI
    } else if DT_DD.contains(&top) {
        DT_DD.contains(&name)
    } else if CELLS.contains(&top) {
        CELL_CLOSERS.contains(&name)
    } else if top == TR {
        name == TR
    } else if top == OPTION {
        OPTION_CLOSERS.contains(&name)
    } else {
        false
    }
}

/// The tag name starting at `from` (none when empty), and where it ends.
fn tag_name(bytes: &[u8], from: usize) -> (Option<Tag>, usize) {
    let from = from.min(bytes.len());
    let len = bytes[from..]
        .iter()
        .position(|b| b.is_ascii_whitespace() || matches!(b, b'/' | b'>'))
        .unwrap_or(bytes.len() - from);
    let name = &bytes[from..from + len];
    ((!name.is_empty()).then(|| Tag::of(name)), from + len)
}

/// Past the `>` closing a tag whose attributes start at `from` (quoted
/// values may hold `>`); whether it ended in `/>`.
fn tag_end(bytes: &[u8], from: usize) -> (usize, bool) {
    let mut at = from;
    while let Some(found) = bytes
        .get(at..)
        .and_then(|rest| memchr::memchr3(b'>', b'"', b'\'', rest))
    {
        let pos = at + found;
        match bytes[pos] {
            b'>' => return (pos + 1, pos > from && bytes[pos - 1] == b'/'),
            quote => match memchr::memchr(quote, &bytes[pos + 1..]) {
                Some(close) => at = pos + 1 + close + 1,
                None => return (bytes.len(), false),
            },
        }
    }
    (bytes.len(), false)
}

/// Past the end tag of the raw-text element `name` whose content starts
/// at `from`.
fn raw_text_end(bytes: &[u8], from: usize, name: Tag) -> usize {
    let mut at = from;
    while let Some(found) = memchr::memmem::find(&bytes[at..], b"</") {
        let lt = at + found;
        let (found, end) = tag_name(bytes, lt + 2);
        if found == Some(name) {
            return tag_end(bytes, end).0;
        }
        at = lt + 2;
    }
    bytes.len()
}

/// The exact check on the parsed tree: refuses one deeper than
/// [`MAX_DEPTH`] (counted in nodes from the document), walked iteratively.
pub fn check_tree(doc: &Document) -> Result<(), ConvertError> {
    check_tree_with(doc, MAX_DEPTH)
}

pub(crate) fn check_tree_with(doc: &Document, max_depth: usize) -> Result<(), ConvertError> {
    let mut node = doc.root().first_child();
    let mut depth = 1;
    while let Some(current) = node {
        if depth > max_depth {
            return Err(ConvertError::TooDeep { max: max_depth });
        }
        if let Some(child) = current.first_child() {
            node = Some(child);
            depth += 1;
            continue;
        }
        let mut climbing = current;
        node = loop {
            if let Some(sibling) = climbing.next_sibling() {
                break Some(sibling);
            }
            match climbing.parent() {
                Some(parent) if depth > 1 => {
                    climbing = parent;
                    depth -= 1;
                }
                _ => break None,
            }
        };
    }
    Ok(())
}

#[cfg(test)]
#[path = "limits_tests.rs"]
mod tests;
