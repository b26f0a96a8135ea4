use serde_json::json;

use super::*;

#[test]
fn parses_and_classifies() {
    let got = parse(
        "https://x/{{order_id}}?r={{ input__region }}&k={{secret__key}}",
        "f",
    )
    .unwrap();
    assert_eq!(
        got,
        vec![
            Placeholder::Plain("order_id"),
            Placeholder::Input("region"),
            Placeholder::Secret("secret__key")
        ]
    );
    assert!(parse("no placeholders {single}", "f").unwrap().is_empty());
}

#[test]
fn rejects_malformed() {
    for bad in ["{{", "a {{b c}}", "{{}}", "{{1x}}", "{{a-b}}"] {
        let err = parse(bad, "http.url").unwrap_err();
        assert_eq!(
            (err.code, err.field.as_str()),
            ("invalid_placeholder", "http.url"),
            "{bad}"
        );
    }
}

#[test]
fn walks_json_with_paths() {
    let body = json!({"order": "{{order_id}}", "items": [{"t": "{{input__tenant}}"}], "n": 3});
    let got = parse_json(&body, "http.body").unwrap();
    let want = vec![
        ("http.body.order".to_owned(), Placeholder::Plain("order_id")),
        (
            "http.body.items[0].t".to_owned(),
            Placeholder::Input("tenant"),
        ),
    ];
    assert_eq!(got, want);
}

#[test]
fn renders() {
    let out = render("Hi {{name}}, {{ missing }}!", |n| {
        (n == "name").then(|| "Ann".to_owned())
    });
    assert_eq!(out, "Hi Ann, !");
}
