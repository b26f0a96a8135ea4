//! `askUser {questions}` (R-AU-1..3, R-BX-5): 1–4 multiple-choice
//! questions for the user; the turn stops until they answer. The rules are
//! checked here and each broken one is named to the model; answers are
//! matched tolerantly (label, number, or free text as "Other").

use crate::builtins::ArgumentError;
use crate::features::interaction::InteractionService;
use rtc_core::llm::ToolSpec;
use rtc_protocol::{AnswerValue, Answers, AskQuestion};
use serde::Deserialize;
use serde_json::{Value, json};

pub const NAME: &str = "askUser";

const DESCRIPTION: &str = "Ask the user 1-4 multiple-choice questions and wait for the answers: to learn preferences, resolve ambiguity, or get a decision before going on. The user can always answer \"Other\" with their own text instead of an option.
- question: the full question, ending with a question mark.
- header: a short tag shown next to it (at most 12 characters).
- options: 2-4 choices, each with a label (1-5 words) and a description of what choosing it means; preview (optional, single-select only) is shown when the option is focused.
- multiSelect: true lets the user pick several options.
Your turn ends when you ask; the answers arrive as this tool's result.";

pub fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "questions": {
                "type": "array", "minItems": 1, "maxItems": 4,
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {"type": "string", "description": "The full question, ending with a question mark."},
                        "header": {"type": "string", "description": "A short tag (at most 12 characters)."},
                        "options": {
                            "type": "array", "minItems": 2, "maxItems": 4,
                            "items": {
                                "type": "object",
                                "properties": {
                                    "label": {"type": "string", "description": "1-5 words."},
                                    "description": {"type": "string", "description": "What choosing this means."},
                                    "preview": {"type": "string", "description": "Shown when the option is focused; single-select questions only."}
                                },
                                "required": ["label", "description"],
                                "additionalProperties": false
                            }
                        },
                        "multiSelect": {"type": "boolean", "default": false}
                    },
                    "required": ["question", "header", "options"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["questions"],
        "additionalProperties": false
    })
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: NAME.to_owned(),
        description: DESCRIPTION.to_owned(),
        parameters: parameters(),
    }
}

#[derive(Deserialize)]
struct Args {
    questions: Vec<AskQuestion>,
}

/// The model's questions, or the first broken rule, named.
pub fn parse(arguments: &str) -> Result<Vec<AskQuestion>, ArgumentError> {
    counts(arguments)?;
    let args: Args = crate::builtins::parse_arguments(&parameters(), arguments)?;
    for (i, q) in args.questions.iter().enumerate() {
        let at = format!("questions[{i}]");
        let text = q.question.trim();
        if !(text.ends_with('?') || text.ends_with('？')) {
            return Err(format!(
                "rule question_mark: {at}.question must be a full question ending with a question mark"
            ).into());
        }
        let header = q.header.trim();
        if header.is_empty() || header.chars().count() > 12 {
            return Err(format!(
                "rule header_length: {at}.header must be 1 to 12 characters, got {}",
                header.chars().count()
            )
            .into());
        }
        for (j, o) in q.options.iter().enumerate() {
            let words = o.label.split_whitespace().count();
            if !(1..=5).contains(&words) {
                return Err(format!(
                    "rule label_words: {at}.options[{j}].label must be 1 to 5 words, got {words}"
                )
                .into());
            }
            if o.description.trim().is_empty() {
                return Err(format!(
                    "rule option_description: {at}.options[{j}].description must say what choosing it means"
                ).into());
            }
            if q.multi_select && o.preview.is_some() {
                return Err(format!(
                    "rule preview_single_select: {at}.options[{j}].preview is only allowed on single-select questions"
                ).into());
            }
            if q.options[..j]
                .iter()
                .any(|p| p.label.trim().eq_ignore_ascii_case(o.label.trim()))
            {
                return Err(format!(
                    "rule distinct_labels: {at}.options[{j}].label repeats another option's label"
                )
                .into());
            }
        }
        if args.questions[..i]
            .iter()
            .any(|p| p.question.trim() == text)
        {
            return Err(format!(
                "rule distinct_questions: {at}.question repeats an earlier question"
            )
            .into());
        }
    }
    Ok(args.questions)
}

/// The count rules, named (the schema checks them too, less readably).
fn counts(arguments: &str) -> Result<(), ArgumentError> {
    let Ok(value) = serde_json::from_str::<Value>(arguments) else {
        return Ok(()); // the schema check reports it
    };
    let Some(questions) = value.get("questions").and_then(Value::as_array) else {
        return Ok(());
    };
    if !(1..=4).contains(&questions.len()) {
        return Err(format!(
            "rule question_count: ask 1 to 4 questions, got {}",
            questions.len()
        )
        .into());
    }
    for (i, q) in questions.iter().enumerate() {
        if let Some(options) = q.get("options").and_then(Value::as_array)
            && !(2..=4).contains(&options.len())
        {
            return Err(format!(
                "rule option_count: questions[{i}] needs 2 to 4 options, got {}",
                options.len()
            )
            .into());
        }
    }
    Ok(())
}

/// The longest answer to one question, in characters.
pub const MAX_ANSWER_CHARS: usize = 2_000;

/// The most text all answers together may hold (keys included), in bytes.
pub const MAX_ANSWERS_BYTES: usize = 16 * 1024;

/// Why answers do not fit the questions; `index` is the question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerError {
    pub index: Option<usize>,
    pub message: String,
}

/// The answers in the questions' order; keys of an object name questions
/// by their text (surrounding space and case ignored).
fn in_order(questions: &[AskQuestion], answers: &Answers) -> Result<Vec<AnswerValue>, AnswerError> {
    let by_question = match answers {
        Answers::InOrder(list) => return Ok(list.clone()),
        Answers::ByQuestion(map) => map,
    };
    let same = |a: &str, b: &str| a.trim().eq_ignore_ascii_case(b.trim());
    if let Some(unknown) = by_question
        .keys()
        .find(|k| !questions.iter().any(|q| same(k, &q.question)))
    {
        return Err(AnswerError {
            index: None,
            message: format!("\"{unknown}\" is not one of the questions asked"),
        });
    }
    questions
        .iter()
        .enumerate()
        .map(|(i, q)| {
            by_question
                .iter()
                .find(|(k, _)| same(k, &q.question))
                .map(|(_, v)| v.clone())
                .ok_or_else(|| AnswerError {
                    index: Some(i),
                    message: format!("no answer for \"{}\"", q.question),
                })
        })
        .collect()
}

/// Each answer as the model reads it: the option's label for a label (any
/// case) or its number, the user's own text otherwise ("Other"); several
/// choices of a multi-select question joined with ", ".
pub fn match_answers(
    questions: &[AskQuestion],
    answers: &Answers,
) -> Result<Vec<String>, AnswerError> {
    let total = answers_bytes(answers);
    if total > MAX_ANSWERS_BYTES {
        return Err(AnswerError {
            index: None,
            message: format!(
                "the answers hold {total} bytes of text; the limit is {MAX_ANSWERS_BYTES}"
            ),
        });
    }
    let answers = in_order(questions, answers)?;
    if answers.len() != questions.len() {
        return Err(AnswerError {
            index: None,
            message: format!(
                "expected {} answers, one per question, got {}",
                questions.len(),
                answers.len()
            ),
        });
    }
    questions
        .iter()
        .zip(answers)
        .enumerate()
        .map(|(i, (q, a))| match_one(i, q, &a))
        .collect()
}

/// The answer to question `i` as the model reads it: its options' labels
/// (each once) or the user's own text.
fn match_one(i: usize, q: &AskQuestion, a: &AnswerValue) -> Result<String, AnswerError> {
    let chars = value_chars(a);
    if chars > MAX_ANSWER_CHARS {
        return Err(AnswerError {
            index: Some(i),
            message: format!(
                "the answer is {chars} characters long; the limit is {MAX_ANSWER_CHARS}"
            ),
        });
    }
    let parts: Vec<String> = match a {
        AnswerValue::Many(list) => list.clone(),
        AnswerValue::One(s) if q.multi_select => {
            let split: Vec<String> = s.split(',').map(str::to_owned).collect();
            if split.len() > 1 && split.iter().all(|p| option_for(q, p).is_some()) {
                split
            } else {
                vec![s.clone()]
            }
        }
        AnswerValue::One(s) => vec![s.clone()],
    };
    let parts: Vec<&str> = parts
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .collect();
    if parts.is_empty() {
        return Err(AnswerError {
            index: Some(i),
            message: "the answer is empty".into(),
        });
    }
    if parts.len() > 1 && !q.multi_select {
        return Err(AnswerError {
            index: Some(i),
            message: "this question takes one answer".into(),
        });
    }
    // Every option once, plus one "Other" text.
    let most = q.options.len() + 1;
    if parts.len() > most {
        return Err(AnswerError {
            index: Some(i),
            message: format!(
                "{} selections for {} options; choose at most {most} (the options and one text of your own)",
                parts.len(),
                q.options.len()
            ),
        });
    }
    let mut chosen: Vec<String> = Vec::new();
    for p in parts {
        let answer = option_for(q, p).unwrap_or_else(|| p.to_owned());
        if !chosen.contains(&answer) {
            chosen.push(answer);
        }
    }
    Ok(chosen.join(", "))
}

/// The bytes of text in all answers, keys included; stops counting once
/// over the limit.
fn answers_bytes(answers: &Answers) -> usize {
    let mut total = 0usize;
    let mut add = |n: usize| {
        total = total.saturating_add(n);
        total <= MAX_ANSWERS_BYTES
    };
    match answers {
        Answers::InOrder(list) => {
            for v in list {
                if !value_bytes(v).iter().all(|&n| add(n)) {
                    break;
                }
            }
        }
        Answers::ByQuestion(map) => {
            for (k, v) in map {
                if !add(k.len()) || !value_bytes(v).iter().all(|&n| add(n)) {
                    break;
                }
            }
        }
    }
    total
}

/// The byte length of each string of one answer (an empty string counts
/// one, so a long list of empty picks is counted too).
fn value_bytes(v: &AnswerValue) -> Vec<usize> {
    match v {
        AnswerValue::One(s) => vec![s.len().max(1)],
        AnswerValue::Many(list) => list.iter().map(|s| s.len().max(1)).collect(),
    }
}

fn value_chars(v: &AnswerValue) -> usize {
    match v {
        AnswerValue::One(s) => s.chars().count(),
        AnswerValue::Many(list) => list.iter().map(|s| s.chars().count()).sum(),
    }
}

fn option_for(q: &AskQuestion, answer: &str) -> Option<String> {
    let answer = answer.trim();
    if let Ok(n) = answer.parse::<usize>() {
        return q.options.get(n.checked_sub(1)?).map(|o| o.label.clone());
    }
    q.options
        .iter()
        .find(|o| o.label.trim().eq_ignore_ascii_case(answer))
        .map(|o| o.label.clone())
}

/// The tool result the model receives (R-AU-3), exactly.
pub fn result_text(questions: &[AskQuestion], answers: &[String]) -> String {
    let pairs: Vec<String> = questions
        .iter()
        .zip(answers)
        .map(|(q, a)| format!("\"{}\"=\"{a}\"", q.question.trim()))
        .collect();
    format!(
        "User has answered your questions: {}. You can now continue with the user's answers in mind.",
        pairs.join(", ")
    )
}

crate::builtins::built_in!(AskUser, ask_user, |cx| InteractionService::of(cx.rt)
    .ask_user(cx.session, cx.call));

#[cfg(test)]
#[path = "ask_user_tests.rs"]
mod tests;
