use serde_json::json;

use super::*;

fn call(questions: serde_json::Value) -> String {
    json!({ "questions": questions }).to_string()
}

fn one() -> serde_json::Value {
    json!({"question": "Which date library?", "header": "Date lib", "options": [
        {"label": "date-fns", "description": "Light, tree-shakable"},
        {"label": "dayjs", "description": "Moment-compatible, 2 KB", "preview": "dayjs().format()"}]})
}

#[test]
fn valid_questions_pass() {
    let qs = parse(&call(json!([one()]))).unwrap();
    assert_eq!(qs[0].options[1].label, "dayjs");
    let zh = json!({"question": "使用哪个日期格式化库？", "header": "日期库", "options": [
        {"label": "date-fns", "description": "轻量级"}, {"label": "dayjs", "description": "2KB"}]});
    assert!(
        parse(&call(json!([zh]))).is_ok(),
        "full-width question mark"
    );
}

#[test]
fn every_rule_is_named() {
    let mut no_mark = one();
    no_mark["question"] = json!("Which date library");
    let mut long_header = one();
    long_header["header"] = json!("Date library choice");
    let mut wordy = one();
    wordy["options"][0]["label"] = json!("the one that is light and fast");
    let mut preview_multi = one();
    preview_multi["multiSelect"] = json!(true);
    let mut same_labels = one();
    same_labels["options"][1]["label"] = json!("Date-FNS");
    let mut one_option = one();
    one_option["options"] = json!([{"label": "a", "description": "b"}]);
    let mut no_description = one();
    no_description["options"][0]["description"] = json!(" ");
    for (questions, rule) in [
        (json!([no_mark]), "question_mark"),
        (json!([long_header]), "header_length"),
        (json!([wordy]), "label_words"),
        (json!([preview_multi]), "preview_single_select"),
        (json!([same_labels]), "distinct_labels"),
        (json!([one(), one()]), "distinct_questions"),
        (json!([no_description]), "option_description"),
        (json!([one_option]), "option_count"),
        (json!([one(), one(), one(), one(), one()]), "question_count"),
        (json!([]), "question_count"),
    ] {
        let err = parse(&call(questions)).unwrap_err();
        assert!(err.contains(&format!("rule {rule}")), "{rule}: {err}");
    }
}

#[test]
fn answers_by_label_number_or_free_text() {
    let mut multi = one();
    multi["multiSelect"] = json!(true);
    multi["question"] = json!("Which formats?");
    multi["options"][1]
        .as_object_mut()
        .unwrap()
        .remove("preview");
    let qs = parse(&call(json!([one(), multi]))).unwrap();
    let answers =
        |a: serde_json::Value| match_answers(&qs, &serde_json::from_value::<Answers>(a).unwrap());
    assert_eq!(
        answers(json!(["DAYJS", ["1", "dayjs"]])).unwrap(),
        ["dayjs", "date-fns, dayjs"]
    );
    assert_eq!(
        answers(json!(["2", "1, 2"])).unwrap(),
        ["dayjs", "date-fns, dayjs"]
    );
    assert_eq!(
        answers(json!(["Luxon, probably", "none of these, thanks"])).unwrap(),
        ["Luxon, probably", "none of these, thanks"]
    );
    assert_eq!(
        answers(json!(["5", "1"])).unwrap()[0],
        "5",
        "out of range is free text"
    );
    assert_eq!(answers(json!(["1"])).unwrap_err().index, None);
    assert_eq!(answers(json!(["  ", "1"])).unwrap_err().index, Some(0));
    assert_eq!(
        answers(json!([["1", "2"], "1"])).unwrap_err().index,
        Some(0)
    );
    // Keyed by the question's text, in any order and case.
    assert_eq!(
        answers(json!({"which formats?": ["1"], "Which date library?": "2"})).unwrap(),
        ["dayjs", "date-fns"]
    );
    assert_eq!(
        answers(json!({"Which date library?": "2"}))
            .unwrap_err()
            .index,
        Some(1)
    );
    assert!(
        answers(json!({"Which date library?": "2", "Which formats?": "1", "Why?": "x"}))
            .unwrap_err()
            .message
            .contains("Why?")
    );
}

#[test]
fn the_result_text_is_exact() {
    let qs = parse(&call(json!([one()]))).unwrap();
    assert_eq!(
        result_text(&qs, &["date-fns".to_owned()]),
        "User has answered your questions: \"Which date library?\"=\"date-fns\". You can now continue with the user's answers in mind."
    );
}

#[test]
fn answers_beyond_the_caps_are_refused_quickly() {
    let mut multi = one();
    multi["multiSelect"] = json!(true);
    multi["question"] = json!("Which formats?");
    multi["options"][1]
        .as_object_mut()
        .unwrap()
        .remove("preview");
    let qs = parse(&call(json!([one(), multi]))).unwrap();
    let answers =
        |a: serde_json::Value| match_answers(&qs, &serde_json::from_value::<Answers>(a).unwrap());
    // Two options plus one "Other": three selections at most.
    assert_eq!(
        answers(json!(["1", ["1", "2", "my own"]])).unwrap()[1],
        "date-fns, dayjs, my own"
    );
    let err = answers(json!(["1", ["1", "2", "mine", "yours"]])).unwrap_err();
    assert_eq!(err.index, Some(1), "{err:?}");
    assert!(err.message.contains("at most 3"), "{err:?}");
    // One answer's text.
    assert!(answers(json!(["x".repeat(MAX_ANSWER_CHARS), "1"])).is_ok());
    let err = answers(json!(["x".repeat(MAX_ANSWER_CHARS + 1), "1"])).unwrap_err();
    assert_eq!(err.index, Some(0), "{err:?}");
    // All answers together, however they are spread.
    let many: Vec<String> = (0..10)
        .map(|i| format!("{i}{}", "y".repeat(1_999)))
        .collect();
    let err = answers(json!(["1", many])).unwrap_err();
    assert_eq!(err.index, None, "{err:?}");
    assert!(err.message.contains("bytes"), "{err:?}");
    // 80,000 distinct picks (the review's 5.6 s) are refused at once.
    let picks: Vec<String> = (0..80_000).map(|i| format!("pick {i}")).collect();
    let started = std::time::Instant::now();
    assert_eq!(answers(json!(["1", picks])).unwrap_err().index, None);
    let keyed: serde_json::Map<String, serde_json::Value> = (0..20_000)
        .map(|i| (format!("question {i}?"), json!("1")))
        .collect();
    assert_eq!(
        answers(serde_json::Value::Object(keyed)).unwrap_err().index,
        None
    );
    assert!(started.elapsed() < std::time::Duration::from_millis(500));
}
