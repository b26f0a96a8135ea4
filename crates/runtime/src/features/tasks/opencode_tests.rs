//! Unit tests of the OpenCode driver's configuration handling.
use serde_json::json;

use super::*;

#[test]
fn secret_references_are_rendered_and_other_placeholders_kept() {
    let config = json!({"provider": {"x": {"options": {"apiKey": "{{secret__key}}", "note": "{{other}} ok"}}},
                        "list": ["a{{secret__key}}b", 3]});
    let rendered = render_value(&config, &|n| (n == "secret__key").then(|| "K".to_owned()));
    assert_eq!(rendered["provider"]["x"]["options"]["apiKey"], "K");
    assert_eq!(rendered["provider"]["x"]["options"]["note"], "{{other}} ok");
    assert_eq!(rendered["list"], json!(["aKb", 3]));
    let mut strings = Vec::new();
    collect_strings(&config, &mut strings);
    assert_eq!(
        placeholders::secrets_in(strings.iter()),
        ["secret__key", "secret__key"]
    );
}

#[test]
fn a_new_password_or_configuration_makes_a_new_server_entry() {
    let backend: TaskBackend = serde_json::from_value(json!({
        "id": "tb_1", "name": "Coder", "type": "opencode", "updatedAt": "1",
        "opencode": {"baseUrl": "http://127.0.0.1:1", "password": "{{secret__pw}}",
                     "model": {"providerID": "mock", "modelID": "tools-0"}}}))
    .unwrap();
    let a = slot_version(&backend, Some(&Password::new("one")));
    assert_eq!(a, slot_version(&backend, Some(&Password::new("one"))));
    assert_ne!(a, slot_version(&backend, Some(&Password::new("two"))));
    let mut edited = backend.clone();
    edited.updated_at = Some("2".into());
    assert_ne!(a, slot_version(&edited, Some(&Password::new("one"))));
    assert!(!a.contains("one"));
}
