use serde_json::json;

use super::*;

#[test]
fn body_placeholders_keep_types() {
    let args = json!({"order_id": "A 1", "qty": 3, "flags": {"x": true}})
        .as_object()
        .unwrap()
        .clone();
    let inputs = BTreeMap::from([("region".to_owned(), "cn".to_owned())]);
    let body = json!({"id": "{{order_id}}", "n": "{{ qty }}", "f": "{{flags}}", "label": "order {{order_id}} in {{input__region}}", "list": ["{{qty}}"]});
    assert_eq!(
        render_json(&body, &args, &inputs),
        json!({"id": "A 1", "n": 3, "f": {"x": true}, "label": "order A 1 in cn", "list": [3]})
    );
}

#[test]
fn url_values_are_encoded_and_secrets_only_in_headers() {
    let args = json!({"q": "a b&c"}).as_object().unwrap().clone();
    let inputs = BTreeMap::new();
    let secrets = CallSecrets(BTreeMap::from([("secret__k".to_owned(), "v".to_owned())]));
    assert_eq!(
        render("https://x/?q={{q}}", |n| lookup(
            n, &args, &inputs, None, true
        )),
        "https://x/?q=a+b%26c"
    );
    assert_eq!(
        render("{{secret__k}}", |n| lookup(n, &args, &inputs, None, false)),
        ""
    );
    assert_eq!(
        render("Bearer {{secret__k}}", |n| lookup(
            n,
            &args,
            &inputs,
            Some(&secrets),
            false
        )),
        "Bearer v"
    );
    assert_eq!(format!("{secrets:?}"), "[\"secret__k\"]");
}

#[test]
fn echoed_secrets_are_scrubbed() {
    let secrets = CallSecrets(BTreeMap::from([(
        "secret__k".to_owned(),
        "sk-live-123".to_owned(),
    )]));
    let echoed = json!({"headers": {"authorization": "Bearer sk-live-123"}, "list": ["sk-live-123"], "n": 1});
    assert_eq!(
        secrets.scrub(echoed),
        json!({"headers": {"authorization": "Bearer [redacted]"}, "list": ["[redacted]"], "n": 1})
    );
    assert_eq!(secrets.scrub_text("x sk-live-123 y"), "x [redacted] y");
}
