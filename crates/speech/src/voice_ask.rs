//! `askUser` by voice (design `voice-pipeline.md` §4(f), R-AU, R-BX-5):
//! the question spoken with its options, and the next final transcript
//! matched to them.
//!
//! - **Spoken**: `question + " " + labels` joined by `", "` (or `"、"` when
//!   the question has CJK characters), ending with a full stop; a
//!   sub-agent's question is prefixed `"<title>: "`.
//! - **Heard**: a label (any case, punctuation and fillers such as "the …
//!   one" or "please" ignored), a number 1–4, its English word or ordinal
//!   ("two", "second", "the second one", "2nd", also `第二个`), else the
//!   transcript as free text ("Other"). A multi-select answer is split at
//!   commas and " and " when every part names an option.

use crate::prefix::is_cjk;

/// What a spoken answer chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Options by index (0-based), each once, in the order spoken.
    Options(Vec<usize>),
    /// The user's own words (the transcript, trimmed).
    Other(String),
}

impl Answer {
    /// The answer as the text path takes it: the chosen labels, or the
    /// free text.
    pub fn to_labels(&self, options: &[&str]) -> Vec<String> {
        match self {
            Answer::Options(indexes) => indexes
                .iter()
                .filter_map(|&i| options.get(i).map(|label| label.trim().to_owned()))
                .collect(),
            Answer::Other(text) => vec![text.clone()],
        }
    }
}

/// The text TTS speaks for one question.
pub fn spoken_question(question: &str, labels: &[&str], sub_agent_title: Option<&str>) -> String {
    let question = question.trim();
    let cjk = question.chars().any(is_cjk);
    let labels: Vec<&str> = labels
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    let mut spoken = String::new();
    if let Some(title) = sub_agent_title.map(str::trim).filter(|t| !t.is_empty()) {
        spoken.push_str(title);
        spoken.push_str(": ");
    }
    spoken.push_str(question);
    if !labels.is_empty() {
        if !question.is_empty() {
            spoken.push(' ');
        }
        spoken.push_str(&labels.join(if cjk { "、" } else { ", " }));
    }
    let ends_a_sentence = spoken
        .chars()
        .next_back()
        .is_some_and(|c| matches!(c, '.' | '!' | '?' | '…' | '。' | '！' | '？'));
    if !ends_a_sentence && !spoken.is_empty() {
        spoken.push(if cjk { '。' } else { '.' });
    }
    spoken
}

/// Match a final transcript to a question's option labels.
pub fn match_answer(transcript: &str, options: &[&str], multi_select: bool) -> Answer {
    if let Some(index) = match_one(transcript, options) {
        return Answer::Options(vec![index]);
    }
    if multi_select {
        let parts: Vec<&str> = split_choices(transcript)
            .into_iter()
            .filter(|p| !normalize(p).is_empty())
            .collect();
        if parts.len() > 1 {
            let matched: Option<Vec<usize>> = parts.iter().map(|p| match_one(p, options)).collect();
            if let Some(indexes) = matched {
                let mut chosen = Vec::new();
                for index in indexes {
                    if !chosen.contains(&index) {
                        chosen.push(index);
                    }
                }
                return Answer::Options(chosen);
            }
        }
    }
    Answer::Other(transcript.trim().to_owned())
}

/// One option named by `text`: its label, or its number.
fn match_one(text: &str, options: &[&str]) -> Option<usize> {
    let words = normalize(text);
    if words.is_empty() {
        return None;
    }
    let labels: Vec<String> = options.iter().map(|o| normalize(o).join(" ")).collect();
    let whole = words.join(" ");
    if let Some(i) = labels.iter().position(|l| !l.is_empty() && *l == whole) {
        return Some(i);
    }
    let core = strip_fillers(&words);
    if core.is_empty() {
        return None;
    }
    let core_text = core.join(" ");
    if let Some(i) = labels.iter().position(|l| !l.is_empty() && *l == core_text) {
        return Some(i);
    }
    let [word] = core else { return None };
    let number = number_of(word)?;
    (1..=options.len()).contains(&number).then(|| number - 1)
}

/// Lowercase words, punctuation dropped.
fn normalize(text: &str) -> Vec<String> {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect::<String>()
        .to_lowercase();
    cleaned.split_whitespace().map(str::to_owned).collect()
}

/// Words around the choice that name nothing: "the second one please",
/// "number two", "option B".
fn strip_fillers(words: &[String]) -> &[String] {
    const LEADING: [&str; 9] = [
        "the", "number", "option", "choice", "answer", "um", "uh", "oh", "maybe",
    ];
    const TRAILING: [&str; 4] = ["one", "option", "please", "thanks"];
    let mut start = 0;
    let mut end = words.len();
    while start < end && LEADING.contains(&words[start].as_str()) {
        start += 1;
    }
    // "one" alone is the number one, not a filler.
    while end - start > 1 && TRAILING.contains(&words[end - 1].as_str()) {
        end -= 1;
    }
    &words[start..end]
}

/// 1–4 as a digit, an English word or ordinal, or Chinese (`二`, `第二`,
/// `第二个`).
fn number_of(word: &str) -> Option<usize> {
    let english = match word {
        "1" | "one" | "first" | "1st" => Some(1),
        "2" | "two" | "second" | "2nd" => Some(2),
        "3" | "three" | "third" | "3rd" => Some(3),
        "4" | "four" | "fourth" | "4th" => Some(4),
        _ => None,
    };
    if english.is_some() {
        return english;
    }
    let han = word.trim_start_matches('第');
    let han = han
        .strip_suffix('个')
        .or_else(|| han.strip_suffix('项'))
        .or_else(|| han.strip_suffix('种'))
        .unwrap_or(han);
    match han {
        "一" | "1" => Some(1),
        "二" | "两" | "2" => Some(2),
        "三" | "3" => Some(3),
        "四" | "4" => Some(4),
        _ => None,
    }
}

/// Split at commas (any width), `、` and the word "and".
fn split_choices(transcript: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    for piece in transcript.split([',', '，', '、']) {
        let mut rest = piece;
        while let Some(at) = find_and(rest) {
            parts.push(&rest[..at]);
            rest = &rest[at + " and ".len()..];
        }
        parts.push(rest);
    }
    parts
}

/// Where " and " (any case) starts in `text`.
fn find_and(text: &str) -> Option<usize> {
    text.as_bytes()
        .windows(5)
        .position(|w| w.eq_ignore_ascii_case(b" and "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZES: [&str; 3] = ["Small", "Medium", "Large"];

    #[test]
    fn a_question_is_spoken_with_its_labels() {
        assert_eq!(
            spoken_question("Which size would you like?", &SIZES, None),
            "Which size would you like? Small, Medium, Large."
        );
        assert_eq!(
            spoken_question(
                "Which size?",
                &[" Small ", "", "Large!"],
                Some("Booking agent")
            ),
            "Booking agent: Which size? Small, Large!"
        );
        assert_eq!(
            spoken_question("您想要哪个尺寸？", &["小", "中", "大"], None),
            "您想要哪个尺寸？ 小、中、大。"
        );
        assert_eq!(spoken_question("Ready?", &[], Some("  ")), "Ready?");
    }

    #[test]
    fn labels_match_in_any_case_with_punctuation_and_fillers() {
        for heard in [
            "medium",
            "Medium.",
            "MEDIUM!",
            "the medium one",
            "Medium, please.",
        ] {
            assert_eq!(
                match_answer(heard, &SIZES, false),
                Answer::Options(vec![1]),
                "{heard}"
            );
        }
        let long = ["Window seat", "Aisle seat"];
        assert_eq!(
            match_answer("Aisle seat.", &long, false),
            Answer::Options(vec![1])
        );
    }

    #[test]
    fn numbers_words_and_ordinals_choose_by_position() {
        for (heard, index) in [
            ("2", 1),
            ("two", 1),
            ("Second.", 1),
            ("The second one.", 1),
            ("the 2nd one", 1),
            ("Number three.", 2),
            ("option 1", 0),
            ("One.", 0),
            ("the first", 0),
            ("第二个", 1),
            ("三", 2),
        ] {
            assert_eq!(
                match_answer(heard, &SIZES, false),
                Answer::Options(vec![index]),
                "{heard}"
            );
        }
        // Four options at most, and only as many as there are.
        assert_eq!(
            match_answer("four", &SIZES, false),
            Answer::Other("four".into())
        );
        assert_eq!(
            match_answer("five", &SIZES, false),
            Answer::Other("five".into())
        );
    }

    #[test]
    fn anything_else_is_free_text() {
        assert_eq!(
            match_answer("  Something in between, maybe.  ", &SIZES, false),
            Answer::Other("Something in between, maybe.".into())
        );
        assert_eq!(
            match_answer("small and large", &SIZES, false),
            Answer::Other("small and large".into()),
            "one answer only"
        );
        assert_eq!(
            match_answer("", &SIZES, false),
            Answer::Other(String::new())
        );
        assert_eq!(
            match_answer("the", &SIZES, false),
            Answer::Other("the".into())
        );
    }

    #[test]
    fn multi_select_splits_at_commas_and_and() {
        let toppings = ["Cheese", "Ham", "Salt and pepper", "Olives"];
        assert_eq!(
            match_answer("Cheese, olives and ham.", &toppings, true),
            Answer::Options(vec![0, 3, 1])
        );
        assert_eq!(
            match_answer("the first and the fourth one", &toppings, true),
            Answer::Options(vec![0, 3])
        );
        assert_eq!(
            match_answer("Salt and pepper", &toppings, true),
            Answer::Options(vec![2])
        );
        assert_eq!(
            match_answer("cheese, cheese and 1", &toppings, true),
            Answer::Options(vec![0])
        );
        assert_eq!(
            match_answer("Cheese and something spicy", &toppings, true),
            Answer::Other("Cheese and something spicy".into())
        );
        assert_eq!(
            match_answer("奶酪、火腿", &["奶酪", "火腿"], true),
            Answer::Options(vec![0, 1])
        );
    }

    #[test]
    fn answers_turn_into_labels() {
        assert_eq!(
            Answer::Options(vec![2, 0]).to_labels(&SIZES),
            ["Large", "Small"]
        );
        assert_eq!(Answer::Other("tiny".into()).to_labels(&SIZES), ["tiny"]);
    }
}
