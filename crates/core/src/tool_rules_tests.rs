use rtc_protocol::McpToolInfo;
use serde_json::{Value, json};

use super::*;
use crate::test_support::put as with;

fn tool(v: Value) -> Tool {
    serde_json::from_value(v).unwrap()
}

fn http_tool() -> Value {
    json!({
        "name": "query_order",
        "type": "http",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "tenant": {"type": "string"}}, "required": ["order_id"]},
        "templateInputs": [{"name": "region", "required": true}],
        "http": {
            "method": "POST",
            "url": "https://api.example.com/{{input__region}}/orders/{{order_id}}",
            "headers": {"Authorization": "Bearer {{secret__api_key}}"},
            "body": {"tenant": "{{tenant}}"}
        }
    })
}

fn ctx_with(discovered: Option<&McpToolInfo>) -> ToolContext<'_> {
    ToolContext {
        secret_exists: &|n| n == "secret__api_key",
        discovered,
        is_reserved: &|n| n == "askUser" || n == "endConversation",
    }
}

#[test]
fn valid_http_tool_passes_and_keeps_its_fields() {
    let t = validate_tool(tool(http_tool()), &ctx_with(None)).unwrap();
    assert_eq!(
        serde_json::to_value(&t).unwrap(),
        serde_json::to_value(tool(http_tool())).unwrap()
    );
}

#[test]
fn http_rules_table() {
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        ("/name", json!("bad name"), "invalid_name", "name"),
        ("/name", json!("endConversation"), "reserved_name", "name"),
        (
            "/parameters",
            json!({"type": "string"}),
            "invalid_schema",
            "parameters",
        ),
        (
            "/parameters",
            json!({"type": "object", "properties": {"a": {"type": "nonsense"}}}),
            "invalid_schema",
            "parameters",
        ),
        (
            "/http/url",
            json!("ftp://x/{{order_id}}/{{input__region}}"),
            "invalid_url",
            "http.url",
        ),
        (
            "/http/url",
            json!("https://{{order_id}}/v1/{{input__region}}"),
            "placeholder_in_host",
            "http.url",
        ),
        (
            "/http/url",
            json!("https://api.example.com:{{order_id}}/{{input__region}}"),
            "placeholder_in_host",
            "http.url",
        ),
        (
            "/http/url",
            json!("https://{{order_id}}@api.example.com/{{input__region}}"),
            "placeholder_in_host",
            "http.url",
        ),
        (
            "/http/url",
            json!("https://user:{{order_id}}@api.example.com/{{input__region}}"),
            "placeholder_in_host",
            "http.url",
        ),
        (
            "/http/url",
            json!("https://api.example.com{{order_id}}/{{input__region}}"),
            "placeholder_in_host",
            "http.url",
        ),
        (
            "/http/url",
            json!("https://api.{{order_id}}.example.com/{{input__region}}"),
            "placeholder_in_host",
            "http.url",
        ),
        (
            "/http/url",
            json!("{{order_id}}://api.example.com/{{input__region}}"),
            "placeholder_in_host",
            "http.url",
        ),
        (
            "/http/url",
            json!("http{{order_id}}://api.example.com/{{input__region}}"),
            "placeholder_in_host",
            "http.url",
        ),
        (
            "/http/url",
            json!("https:{{order_id}}/{{input__region}}"),
            "placeholder_in_host",
            "http.url",
        ),
        (
            "/http/url",
            json!("https:\\\\{{order_id}}\\{{input__region}}"),
            "placeholder_in_host",
            "http.url",
        ),
        (
            "/http/url",
            json!("https://{{input__region}}/orders/{{order_id}}"),
            "placeholder_in_host",
            "http.url",
        ),
        (
            "/http/url",
            json!("not a url {{input__region}}"),
            "invalid_url",
            "http.url",
        ),
        (
            "/http/url",
            json!("https://x/{{nope}}/{{input__region}}"),
            "unknown_parameter",
            "http.url",
        ),
        (
            "/http/url",
            json!("https://x/{{secret__api_key}}/{{input__region}}"),
            "secret_outside_headers",
            "http.url",
        ),
        (
            "/http/url",
            json!("https://x/{{input__zone}}"),
            "unknown_template_input",
            "http.url",
        ),
        (
            "/http/url",
            json!("https://x/{{order_id}}"),
            "unused_template_input",
            "templateInputs[0].name",
        ),
        (
            "/http/body",
            json!({"k": "{{secret__api_key}}"}),
            "secret_outside_headers",
            "http.body.k",
        ),
        (
            "/http/body",
            json!({"k": ["{{ghost}}"]}),
            "unknown_parameter",
            "http.body.k[0]",
        ),
        (
            "/http/headers",
            json!({"X-Key": "{{secret__missing}}"}),
            "unknown_secret",
            "http.headers.X-Key",
        ),
        (
            "/http/headers",
            json!({"Bad Name": "v"}),
            "invalid_header",
            "http.headers.Bad Name",
        ),
        (
            "/http/headers",
            json!({"X": "{{oops"}),
            "invalid_placeholder",
            "http.headers.X",
        ),
        (
            "/http/timeoutMs",
            json!(0),
            "out_of_range",
            "http.timeoutMs",
        ),
        (
            "/http/timeoutMs",
            json!(120_001),
            "out_of_range",
            "http.timeoutMs",
        ),
        (
            "/templateInputs",
            json!([{"name": "region"}, {"name": "region"}]),
            "duplicate_name",
            "templateInputs[1].name",
        ),
        (
            "/templateInputs",
            json!([{"name": "1x"}]),
            "invalid_name",
            "templateInputs[0].name",
        ),
        ("/http", Value::Null, "missing_field", "http"),
    ];
    for (pointer, value, code, field) in cases {
        let err = validate_tool(
            tool(with(http_tool(), pointer, value.clone())),
            &ctx_with(None),
        )
        .unwrap_err();
        assert_eq!(
            (err.code, err.field.as_str()),
            (code, field),
            "{pointer} = {value}: {}",
            err.message
        );
    }
}

/// Placeholders may fill the path, the query and the fragment.
#[test]
fn placeholders_after_the_authority_pass() {
    for url in [
        "https://api.example.com/{{input__region}}/orders/{{order_id}}",
        "https://api.example.com:8443/{{input__region}}?id={{order_id}}#{{tenant}}",
        "https://api.example.com?r={{input__region}}&id={{order_id}}",
        "https://u:p@api.example.com/{{input__region}}/{{order_id}}",
    ] {
        let v = with(http_tool(), "/http/url", json!(url));
        assert!(
            validate_tool(tool(v), &ctx_with(None)).is_ok(),
            "{url} refused"
        );
    }
}

#[test]
fn url_origin_len_table() {
    let cases = [
        ("https://api.example.com/v1", "https://api.example.com"),
        ("https://api.example.com", "https://api.example.com"),
        ("https://h:8080?q", "https://h:8080"),
        ("https://h#f", "https://h"),
        ("https://u:p@h/x", "https://u:p@h"),
        ("https:h/x", "https:h"),
        ("https:///h/x", "https:///h"),
        ("https:\\\\h\\x", "https:\\\\h"),
        ("no-scheme/x", ""),
    ];
    for (template, origin) in cases {
        assert_eq!(&template[..url_origin_len(template)], origin, "{template}");
    }
}

#[test]
fn client_tool_rules() {
    let base = json!({"name": "set_photo_button_visible", "type": "client", "client": {"functionName": "setPhotoButtonVisible"}});
    let t = validate_tool(tool(base.clone()), &ctx_with(None)).unwrap();
    assert_eq!(t.parameters, Some(empty_parameters()));
    let c = t.client.unwrap();
    assert!(c.wait_for_response);
    assert_eq!(c.timeout_ms, 30_000);
    let cases = vec![
        (
            "/client/functionName",
            json!(""),
            "invalid_name",
            "client.functionName",
        ),
        (
            "/client/functionName",
            json!("9fn"),
            "invalid_name",
            "client.functionName",
        ),
        (
            "/client",
            json!({"functionName": "f", "timeoutMs": 600_001}),
            "out_of_range",
            "client.timeoutMs",
        ),
        (
            "/templateInputs",
            json!([{"name": "x"}]),
            "unused_template_input",
            "templateInputs[0].name",
        ),
    ];
    for (pointer, value, code, field) in cases {
        let mut v = base.clone();
        if pointer == "/templateInputs" {
            v["templateInputs"] = value;
        } else {
            v = with(v, pointer, value);
        }
        let err = validate_tool(tool(v), &ctx_with(None)).unwrap_err();
        assert_eq!((err.code, err.field.as_str()), (code, field));
    }
    let mixed = json!({"name": "x", "type": "client", "client": {"functionName": "f"}, "http": {"method": "GET", "url": "https://x"}});
    assert_eq!(
        validate_tool(tool(mixed), &ctx_with(None))
            .unwrap_err()
            .code,
        "unexpected_field"
    );
}

#[test]
fn mcp_tool_takes_the_discovered_schema() {
    let base = json!({"name": "echo", "type": "mcp", "mcp": {"serverId": "mcp_1", "remoteToolName": "echo"}});
    let remote = McpToolInfo {
        name: "echo".into(),
        description: None,
        input_schema: json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
        output_schema: None,
    };
    let t = validate_tool(tool(base.clone()), &ctx_with(Some(&remote))).unwrap();
    assert_eq!(t.parameters.as_ref(), Some(&remote.input_schema));
    let err = validate_tool(tool(base), &ctx_with(None)).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_str()),
        ("unknown_remote_tool", "mcp.remoteToolName")
    );
}

#[test]
fn unknown_fields_are_rejected_by_the_wire_type() {
    let mut v = http_tool();
    v["http"]["verb"] = json!("GET");
    assert!(serde_json::from_value::<Tool>(v).is_err());
}
