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
        render_url("https://x/?q={{q}}", |n| lookup(n, &args, &inputs, None)).unwrap(),
        "https://x/?q=a+b%26c"
    );
    assert_eq!(
        render("{{secret__k}}", |n| lookup(n, &args, &inputs, None)),
        ""
    );
    assert_eq!(
        render("Bearer {{secret__k}}", |n| lookup(
            n,
            &args,
            &inputs,
            Some(&secrets)
        )),
        "Bearer v"
    );
    assert_eq!(format!("{secrets:?}"), "[\"secret__k\"]");
}

/// A value stays inside the part of the URL it fills: it cannot pop or
/// add a path segment, start a query or a fragment, or reach the host.
#[test]
fn url_values_cannot_change_the_url_shape() {
    let cases: &[(&str, &str, Result<&str, &str>)] = &[
        ("https://x/orders/{{v}}", "A-1", Ok("https://x/orders/A-1")),
        (
            "https://x/orders/{{v}}",
            "a b",
            Ok("https://x/orders/a%20b"),
        ),
        (
            "https://x/orders/{{v}}",
            "../admin",
            Ok("https://x/orders/..%2Fadmin"),
        ),
        (
            "https://x/orders/{{v}}/items",
            "a/b",
            Ok("https://x/orders/a%2Fb/items"),
        ),
        (
            "https://x/orders/{{v}}",
            "a\\b",
            Ok("https://x/orders/a%5Cb"),
        ),
        (
            "https://x/orders/{{v}}",
            "1?admin=1",
            Ok("https://x/orders/1%3Fadmin%3D1"),
        ),
        (
            "https://x/orders/{{v}}",
            "1#top",
            Ok("https://x/orders/1%23top"),
        ),
        (
            "https://x/orders/{{v}}",
            "%2e%2e",
            Ok("https://x/orders/%252e%252e"),
        ),
        (
            "https://x/orders/{{v}}",
            "\t\n",
            Ok("https://x/orders/%09%0A"),
        ),
        (
            "https://x/orders/{{v}}.json",
            "..",
            Ok("https://x/orders/...json"),
        ),
        (
            "https://x/orders/{{v}}",
            "..",
            Err("may not be `.` or `..`"),
        ),
        ("https://x/orders/{{v}}", ".", Err("may not be `.` or `..`")),
        (
            "https://x/orders/{{v}}/items",
            "..",
            Err("may not be `.` or `..`"),
        ),
        (
            "https://x/orders/%2e{{v}}",
            ".",
            Err("may not be `.` or `..`"),
        ),
        (
            "https://x\\orders\\{{v}}",
            "..",
            Err("may not be `.` or `..`"),
        ),
        (
            "https://x/s?q={{v}}",
            "a&admin=1#f",
            Ok("https://x/s?q=a%26admin%3D1%23f"),
        ),
        ("https://x/s?q={{v}}", "..", Ok("https://x/s?q=..")),
        ("https://x/s#{{v}}", "a b", Ok("https://x/s#a+b")),
        ("https://{{v}}/s", "evil.example", Err("scheme or host")),
        ("https://x{{v}}/s", ".evil.example", Err("scheme or host")),
        ("https://x:{{v}}/s", "1", Err("scheme or host")),
    ];
    for (template, value, expected) in cases {
        let args = json!({"v": value}).as_object().unwrap().clone();
        let got = render_url(template, |n| lookup(n, &args, &BTreeMap::new(), None));
        match (expected, got) {
            (Ok(want), Ok(url)) => {
                assert_eq!(&url, want, "{template} with {value:?}");
                assert_eq!(
                    url::Url::parse(&url).unwrap().as_str(),
                    url,
                    "{template} with {value:?}: parsing keeps the shape"
                );
            }
            (Err(want), Err(e)) => assert!(e.to_string().contains(want), "{template}: {e}"),
            (want, got) => panic!("{template} with {value:?}: expected {want:?}, got {got:?}"),
        }
    }
}

#[test]
fn echoed_secrets_are_scrubbed() {
    let secrets = CallSecrets(BTreeMap::from([(
        "secret__k".to_owned(),
        "sk-live-123".to_owned(),
    )]));
    let echoed = json!({"headers": {"authorization": "Bearer sk-live-123"}, "list": ["sk-live-123"], "n": 1});
    let scrubber = secrets.scrubber();
    let mut echoed = echoed;
    scrubber.scrub_value(&mut echoed);
    assert_eq!(
        echoed,
        json!({"headers": {"authorization": "Bearer [redacted]"}, "list": ["[redacted]"], "n": 1})
    );
    assert_eq!(scrubber.scrub_str("x sk-live-123 y"), "x [redacted] y");
}
