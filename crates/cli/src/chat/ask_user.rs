//! askUser in the terminal: each question of a call is shown in turn with
//! its options numbered 1., 2., … and a last "Other" choice; the user types
//! a number (several, for a multi-select question), or their own text.
//! Every line typed while a question is open is taken as its answer —
//! nothing dismisses it silently; a line that is no answer is refused
//! with the reason and the question stays.

use rtc_protocol::{AnswerValue, AskQuestion, AskUserQuestion};

/// A question set being answered.
pub struct Asking {
    pub call_id: String,
    questions: Vec<AskQuestion>,
    /// The sub-agent that asks, when it is not the session itself.
    pub sub_title: Option<String>,
    pub from_sub_agent: bool,
    answers: Vec<AnswerValue>,
    /// Options already picked, while waiting for the "Other" text.
    other: Option<Vec<String>>,
}

/// What a line typed while asking led to.
pub enum Step {
    /// Show this (when not empty) and wait for the next line.
    Prompt(String),
    /// Every question is answered: send these.
    Done(Vec<AnswerValue>),
}

/// How one line answers a question.
#[derive(Debug, PartialEq, Eq)]
enum Reply {
    Answer(AnswerValue),
    /// "Other" was chosen (with these options, for a multi-select
    /// question): its text comes next.
    Other(Vec<String>),
    Invalid(String),
}

impl Asking {
    pub fn new(q: AskUserQuestion) -> Self {
        Self {
            call_id: q.call_id,
            questions: q.questions,
            from_sub_agent: q.sub_session_id.is_some(),
            sub_title: q.sub_session_title.or(q.sub_session_id),
            answers: Vec::new(),
            other: None,
        }
    }

    /// Start again from the first question (the server refused the answers).
    pub fn restart(&mut self) -> String {
        self.answers.clear();
        self.other = None;
        self.show()
    }

    /// The current question with its numbered choices.
    pub fn show(&self) -> String {
        let i = self.answers.len();
        let Some(q) = self.questions.get(i) else {
            return String::new();
        };
        let mut text = String::from("?");
        if self.questions.len() > 1 {
            text.push_str(&format!(" ({} of {})", i + 1, self.questions.len()));
        }
        if let Some(who) = &self.sub_title {
            text.push_str(&format!(" [sub-agent \"{who}\" asks]"));
        }
        text.push_str(&format!(" [{}] {}", q.header.trim(), q.question.trim()));
        for (n, o) in q.options.iter().enumerate() {
            text.push_str(&format!("\n  {}. {}", n + 1, o.label.trim()));
            if !o.description.trim().is_empty() {
                text.push_str(&format!(" — {}", o.description.trim()));
            }
        }
        let other = q.options.len() + 1;
        text.push_str(&format!("\n  {other}. Other — type your own answer"));
        text.push_str(&if q.multi_select {
            format!("\n  (one or more numbers, like 1,{other} — or your own answer)")
        } else {
            format!("\n  (a number 1–{other}, or your own answer)")
        });
        text
    }

    /// The prompt for the next line.
    pub fn prompt(&self) -> &'static str {
        if self.other.is_some() {
            "your answer> "
        } else {
            "answer> "
        }
    }

    /// Take one typed line.
    pub fn input(&mut self, line: &str) -> Step {
        let i = self.answers.len();
        let Some(q) = self.questions.get(i) else {
            return Step::Done(self.answers.clone());
        };
        let text = line.trim();
        if let Some(picked) = self.other.take() {
            if text.is_empty() {
                self.other = Some(picked);
                return Step::Prompt(String::new());
            }
            let answer = if q.multi_select {
                let mut all = picked;
                all.push(text.to_owned());
                AnswerValue::Many(all)
            } else {
                AnswerValue::One(text.to_owned())
            };
            return self.next(answer);
        }
        match parse(q, text) {
            Reply::Answer(a) => self.next(a),
            Reply::Other(picked) => {
                self.other = Some(picked);
                Step::Prompt(String::new())
            }
            Reply::Invalid(why) => Step::Prompt(format!("  {why}")),
        }
    }

    fn next(&mut self, answer: AnswerValue) -> Step {
        self.answers.push(answer);
        if self.answers.len() == self.questions.len() {
            Step::Done(self.answers.clone())
        } else {
            Step::Prompt(self.show())
        }
    }
}

/// Read one line as the answer to `q`: numbers choose options (several
/// only when the question allows it; the last number is "Other"), any
/// other text is the user's own answer.
fn parse(q: &AskQuestion, text: &str) -> Reply {
    let other = q.options.len() + 1;
    if text.is_empty() {
        return Reply::Invalid(format!(
            "type a number 1–{other}, or your own answer (the question stays open)"
        ));
    }
    let tokens: Vec<&str> = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .collect();
    let numbers: Option<Vec<usize>> = tokens.iter().map(|t| t.parse().ok()).collect();
    let Some(numbers) = numbers else {
        let own = text.to_owned();
        return Reply::Answer(if q.multi_select {
            AnswerValue::Many(vec![own])
        } else {
            AnswerValue::One(own)
        });
    };
    if let Some(bad) = numbers.iter().find(|&&n| n == 0 || n > other) {
        return Reply::Invalid(format!(
            "{bad} is not one of the choices: type 1–{other}, or your own answer"
        ));
    }
    if numbers.len() > 1 && !q.multi_select {
        return Reply::Invalid(format!(
            "this question takes one answer: type one number (1–{other}) or your own answer"
        ));
    }
    let mut labels: Vec<String> = Vec::new();
    for &n in &numbers {
        if let Some(o) = q.options.get(n - 1)
            && !labels.contains(&o.label)
        {
            labels.push(o.label.clone());
        }
    }
    if numbers.contains(&other) {
        return Reply::Other(labels);
    }
    if q.multi_select {
        Reply::Answer(AnswerValue::Many(labels))
    } else {
        Reply::Answer(AnswerValue::One(labels.remove(0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtc_protocol::AskOption;

    fn question(multi: bool) -> AskQuestion {
        AskQuestion {
            question: "Which library?".into(),
            header: "Pick".into(),
            options: ["date-fns", "dayjs"]
                .map(|l| AskOption {
                    label: l.into(),
                    description: "d".into(),
                    preview: None,
                })
                .to_vec(),
            multi_select: multi,
        }
    }

    fn one(s: &str) -> Reply {
        Reply::Answer(AnswerValue::One(s.into()))
    }

    #[test]
    fn numbers_choose_options_and_the_last_is_other() {
        let q = question(false);
        assert_eq!(parse(&q, "2"), one("dayjs"));
        assert_eq!(parse(&q, "3"), Reply::Other(vec![]));
        assert!(matches!(parse(&q, "4"), Reply::Invalid(_)));
        assert!(matches!(parse(&q, "0"), Reply::Invalid(_)));
        assert!(matches!(parse(&q, "1,2"), Reply::Invalid(_)));
        assert!(matches!(parse(&q, ""), Reply::Invalid(_)));
        assert_eq!(parse(&q, "luxon, please"), one("luxon, please"));
    }

    #[test]
    fn a_multi_select_takes_several_numbers_and_other() {
        let q = question(true);
        let many =
            |v: &[&str]| Reply::Answer(AnswerValue::Many(v.iter().map(|s| (*s).into()).collect()));
        assert_eq!(parse(&q, "1, 2"), many(&["date-fns", "dayjs"]));
        assert_eq!(parse(&q, "2 2"), many(&["dayjs"]));
        assert_eq!(parse(&q, "1,3"), Reply::Other(vec!["date-fns".into()]));
        assert_eq!(parse(&q, "moment, luxon"), many(&["moment, luxon"]));
    }

    #[test]
    fn questions_are_asked_one_by_one_and_other_waits_for_its_text() {
        let mut a = Asking::new(AskUserQuestion {
            call_id: "c".into(),
            questions: vec![question(false), question(true)],
            sub_session_id: None,
            sub_session_title: None,
            spoken: false,
            item_id: None,
        });
        assert!(a.show().contains("(1 of 2)"));
        assert!(a.show().contains("  3. Other"));
        assert!(matches!(a.input("7"), Step::Prompt(p) if p.contains("not one of")));
        assert!(matches!(a.input("3"), Step::Prompt(p) if p.is_empty()));
        assert_eq!(a.prompt(), "your answer> ");
        assert!(matches!(a.input(""), Step::Prompt(_)));
        assert_eq!(a.prompt(), "your answer> ");
        assert!(matches!(a.input("luxon"), Step::Prompt(p) if p.contains("(2 of 2)")));
        let Step::Done(answers) = a.input("2,1") else {
            panic!("not done");
        };
        assert_eq!(
            answers,
            vec![
                AnswerValue::One("luxon".into()),
                AnswerValue::Many(vec!["dayjs".into(), "date-fns".into()])
            ]
        );
    }
}
