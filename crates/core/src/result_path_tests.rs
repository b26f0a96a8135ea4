use serde_json::json;

use super::*;

#[test]
fn parses_and_reads() {
    let v = json!({"status": "shipped", "data": {"items": [{"id": 7}, {"id": 8}]}, "m": [[1, 2]]});
    let cases = [
        ("status", Some(json!("shipped"))),
        ("data.items[1].id", Some(json!(8))),
        ("m[0][1]", Some(json!(2))),
        ("data.items[5].id", None),
        ("nope", None),
    ];
    for (path, want) in cases {
        assert_eq!(
            ResultPath::parse(path).unwrap().get(&v).cloned(),
            want,
            "{path}"
        );
    }
}

#[test]
fn rejects_bad_paths() {
    for bad in ["", ".a", "a.", "a..b", "a[", "a[x]", "a[0]b", "a]"] {
        assert!(ResultPath::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn filters_keep_nesting() {
    let v = json!({"status": "ok", "secret": "s", "data": {"items": [{"id": 1, "pii": "x"}]}});
    let paths: Vec<_> = ["status", "data.items[0].id"]
        .iter()
        .map(|p| ResultPath::parse(p).unwrap())
        .collect();
    assert_eq!(
        filter(&v, &paths),
        json!({"status": "ok", "data": {"items": [{"id": 1}]}})
    );
}
