//! Chunker tests: the release rules of §4(e) one by one, then the property
//! that any split of the same text gives the same chunks.

use super::*;

fn chunk_all(text: &str) -> Vec<Chunk> {
    let mut chunker = Chunker::new();
    let mut chunks = chunker.push(text);
    chunks.extend(chunker.finish());
    chunks
}

fn chunk_pieces<'a>(pieces: impl IntoIterator<Item = &'a str>) -> Vec<Chunk> {
    let mut chunker = Chunker::new();
    let mut chunks = Vec::new();
    for piece in pieces {
        chunks.extend(chunker.push(piece));
    }
    chunks.extend(chunker.finish());
    chunks
}

fn spoken(chunks: &[Chunk]) -> Vec<&str> {
    chunks.iter().map(|c| c.spoken.as_str()).collect()
}

/// The originals rebuild the text, the ranges are contiguous and point at
/// the originals, no chunk is over the cap.
fn assert_well_formed(text: &str, chunks: &[Chunk]) {
    let mut at = 0;
    for chunk in chunks {
        assert_eq!(chunk.range.start, at, "{chunks:#?}");
        assert_eq!(&text[chunk.range.clone()], chunk.original);
        assert!(chunk.original.trim_start().chars().count() <= MAX_CHUNK_CHARS);
        at = chunk.range.end;
    }
    assert_eq!(at, text.len());
    let rebuilt: String = chunks.iter().map(|c| c.original.as_str()).collect();
    assert_eq!(rebuilt, text);
}

#[test]
fn the_first_sentence_goes_out_alone_and_later_short_ones_are_merged() {
    let text = "Hello there. How are you doing today? I am fine, thanks for asking about it. Bye.";
    let chunks = chunk_all(text);
    assert_eq!(
        spoken(&chunks),
        [
            "Hello there.",
            "How are you doing today? I am fine, thanks for asking about it.",
            "Bye."
        ]
    );
    assert_eq!(
        chunks[1].original,
        " How are you doing today? I am fine, thanks for asking about it."
    );
    assert_well_formed(text, &chunks);
}

#[test]
fn the_first_chunk_is_released_as_soon_as_its_sentence_ends() {
    let mut chunker = Chunker::new();
    assert!(
        chunker.push("Hi. Sure thing").is_empty(),
        "\"Hi.\" is under 10 characters"
    );
    assert!(chunker.push("!").is_empty(), "the next character decides");
    let first = chunker.push(" Let me");
    assert_eq!(spoken(&first), ["Hi. Sure thing!"]);
    assert!(chunker.push(" look.").is_empty());
    assert_eq!(spoken(&chunker.finish()), ["Let me look."]);
}

#[test]
fn a_long_first_clause_is_released_at_a_clause_mark() {
    let text = "Well, that depends on quite a number of different factors, including the weather and the time";
    let chunks = chunk_all(text);
    assert_eq!(
        spoken(&chunks),
        [
            "Well, that depends on quite a number of different factors,",
            "including the weather and the time"
        ]
    );
    // Later chunks never split at a clause mark.
    let later = "Okay then. Well, that depends on quite a number of different factors, including the weather. Yes.";
    assert_eq!(
        spoken(&chunk_all(later)),
        [
            "Okay then.",
            "Well, that depends on quite a number of different factors, including the weather.",
            "Yes."
        ]
    );
}

#[test]
fn cjk_marks_need_no_space() {
    let text = "你好！今天天气很好。我们去公园吧，好不好？";
    let chunks = chunk_all(text);
    assert_eq!(
        spoken(&chunks),
        ["你好！今天天气很好。", "我们去公园吧，好不好？"]
    );
    assert_well_formed(text, &chunks);
    // The first clause mark counts for CJK too, once the chunk is long.
    let long = format!("{}，后面还有。", "长".repeat(45));
    assert_eq!(chunk_all(&long)[0].spoken, format!("{}，", "长".repeat(45)));
}

#[test]
fn abbreviations_decimals_and_list_numbers_end_no_sentence() {
    let text = "Dr. Smith met Mrs. Jones, e.g. at St. Mary's, i.e. the church vs. the hall etc. and walked 3.5 miles. Next we go home now and rest a while.";
    let chunks = chunk_all(text);
    assert_eq!(
        spoken(&chunks),
        [
            "Dr. Smith met Mrs. Jones, e.g. at St. Mary's,",
            "i.e. the church vs. the hall etc. and walked 3.5 miles.",
            "Next we go home now and rest a while."
        ]
    );
    let list = "Here is the recipe for you today:\n1. Preheat the oven to a high heat.\n2. Mix the flour with the water well.";
    let chunks = chunk_all(list);
    assert_eq!(
        spoken(&chunks),
        [
            "Here is the recipe for you today: 1. Preheat the oven to a high heat.",
            "2. Mix the flour with the water well."
        ]
    );
    // A number ending a sentence mid-line is an end.
    assert_eq!(
        spoken(&chunk_all("It opened in 1999. And it still runs.")),
        ["It opened in 1999.", "And it still runs."]
    );
}

#[test]
fn numbers_with_commas_and_times_are_not_clauses() {
    let text = "The population of the whole metropolitan area is 1,250,000 at 10:30 in the morning";
    let chunks = chunk_all(text);
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].spoken, text);
}

#[test]
fn closing_quotes_and_emphasis_stay_with_their_sentence() {
    let text =
        "She said \"Go now.\" Then **we left.** And then we walked for a very long time together.";
    let chunks = chunk_all(text);
    assert_eq!(
        spoken(&chunks),
        [
            "She said \"Go now.\"",
            "Then we left. And then we walked for a very long time together."
        ]
    );
    assert_eq!(
        chunks[1].original,
        " Then **we left.** And then we walked for a very long time together."
    );
}

#[test]
fn a_chunk_reaching_the_cap_is_cut_at_its_last_whitespace() {
    let words: Vec<String> = (0..120).map(|i| format!("word{i}")).collect();
    let text = words.join(" ");
    let chunks = chunk_all(&text);
    assert!(chunks.len() >= 3, "{chunks:#?}");
    for chunk in &chunks[..chunks.len() - 1] {
        let n = chunk.original.trim_start().chars().count();
        assert!(n <= MAX_CHUNK_CHARS && n > MAX_CHUNK_CHARS - 10, "{n}");
        assert!(
            chunk.spoken.ends_with(|c: char| c.is_ascii_digit()),
            "cut between words"
        );
    }
    assert_well_formed(&text, &chunks);
    // Without whitespace (CJK without marks), the cut is at the cap.
    let han = "字".repeat(700);
    let chunks = chunk_all(&han);
    let counts: Vec<usize> = chunks.iter().map(|c| c.spoken.chars().count()).collect();
    assert_eq!(counts, [300, 300, 100]);
    assert_well_formed(&han, &chunks);
}

#[test]
fn a_sentence_ending_exactly_at_the_cap_goes_out_whole() {
    let body = "a".repeat(MAX_CHUNK_CHARS - 1);
    let text = format!("Start. {body}. Tail");
    let chunks = chunk_all(&text);
    assert_eq!(chunks[1].spoken, format!("{body}."));
    assert_eq!(chunks[2].spoken, "Tail");
}

#[test]
fn markup_is_not_spoken_but_is_kept_in_the_originals() {
    let text = "## The plan\n\n**First**, we *check* the `config` file today.\n\n- item one is here and it is long enough.\n- item_two stays as it is written here.\n\n```sh\nmake test\n```\nThat is all.\n";
    let chunks = chunk_all(text);
    assert_eq!(
        spoken(&chunks),
        [
            "The plan First, we check the config file today.",
            "item one is here and it is long enough.",
            "item_two stays as it is written here. make test That is all.",
            ""
        ]
    );
    assert_well_formed(text, &chunks);
}

#[test]
fn a_tail_of_only_markup_is_a_silent_chunk() {
    let text = "Here is the code you asked for.\n```";
    let chunks = chunk_all(text);
    assert_eq!(spoken(&chunks), ["Here is the code you asked for.", ""]);
    assert!(chunks[1].is_silent());
    assert_well_formed(text, &chunks);
    assert!(chunk_all("").is_empty());
}

#[test]
fn finish_starts_the_next_item_afresh() {
    let mut chunker = Chunker::new();
    chunker.push("One sentence here. Two");
    chunker.finish();
    let chunks = chunker.push("Hi there, friend. And more");
    assert_eq!(
        spoken(&chunks),
        ["Hi there, friend."],
        "a first chunk again"
    );
    assert_eq!(chunks[0].range, 0..17);
}

/// Texts that exercise every rule, for the split property.
fn corpus() -> Vec<String> {
    let mut texts: Vec<String> = [
        "Hello there. How are you doing today? I am fine, thanks for asking about it. Bye.",
        "Dr. Smith met Mrs. Jones, e.g. at St. Mary's, i.e. the church vs. the hall etc. and walked 3.5 miles. Next we go home.",
        "Well, that depends on quite a number of different factors, including the weather… Really! Yes? No.",
        "你好！今天天气很好。我们去公园吧，好不好？可以、也行：走吧；",
        "She said \"Go now.\" Then **we left.** And then — quietly — we walked for a very long time together.",
        "## The plan\n\n**First**, we *check* the `config`.\n\n1. item one is here.\n2. item_two stays.\n```sh\nmake test\n```\nDone.\n",
        "  \n  Leading space. Then   many\n\nnewlines. 10:30, 1,000, 2.5. End",
        "Emoji 👋🏽 work too. Ça va très bien, merci beaucoup pour votre question très intéressante. Fin.",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let words: Vec<String> = (0..90).map(|i| format!("w{i}")).collect();
    texts.push(format!("{} and the end. Short.", words.join(" ")));
    texts.push("字".repeat(650) + "。尾");
    texts
}

/// A small deterministic generator for split points.
fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *seed >> 33
}

fn random_pieces(text: &str, seed: u64) -> Vec<&str> {
    let boundaries: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    let mut state = seed;
    let mut pieces = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let step = 1 + (lcg(&mut state) % 12) as usize;
        let next = boundaries
            .iter()
            .copied()
            .find(|&b| b > at)
            .unwrap_or(text.len());
        let end = boundaries
            .iter()
            .copied()
            .filter(|&b| b >= next)
            .nth(step - 1)
            .unwrap_or(text.len());
        pieces.push(&text[at..end]);
        at = end;
    }
    pieces
}

#[test]
fn any_split_of_the_same_text_gives_the_same_chunks() {
    for text in corpus() {
        let whole = chunk_all(&text);
        assert_well_formed(&text, &whole);
        let by_char: Vec<&str> = text
            .char_indices()
            .map(|(i, c)| &text[i..i + c.len_utf8()])
            .collect();
        assert_eq!(chunk_pieces(by_char), whole, "char by char: {text:?}");
        for (cut, _) in text.char_indices().skip(1) {
            assert_eq!(
                chunk_pieces([&text[..cut], &text[cut..]]),
                whole,
                "split at {cut}: {text:?}"
            );
        }
        for seed in 0..40 {
            let pieces = random_pieces(&text, seed);
            assert_eq!(pieces.concat(), text);
            assert_eq!(
                chunk_pieces(pieces.iter().copied()),
                whole,
                "seed {seed}: {text:?}"
            );
        }
        let with_empty = [&text[..0], text.as_str(), ""];
        assert_eq!(chunk_pieces(with_empty), whole);
    }
}
