//! stdio environment values: masked in answers, kept when sent back masked.

use std::collections::BTreeMap;

use super::*;

fn stdio(env: &[(&str, &str)]) -> McpServer {
    McpServer {
        id: Some("mcp_1".into()),
        name: "local".into(),
        description: String::new(),
        transport: McpTransport::Stdio {
            command: "node".into(),
            args: vec![],
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
        },
        timeout_seconds: None,
        created_at: None,
        updated_at: None,
    }
}

fn env_of(server: &McpServer) -> BTreeMap<String, String> {
    match &server.transport {
        McpTransport::Stdio { env, .. } => env.clone(),
        McpTransport::StreamableHttp { .. } => BTreeMap::new(),
    }
}

#[test]
fn env_values_are_masked_and_kept_when_sent_back_masked() {
    let stored = stdio(&[("TOKEN", "tok-value-1"), ("MODE", "fast")]);
    let shown = masked(stored.clone());
    assert_eq!(
        env_of(&shown),
        BTreeMap::from([
            ("MODE".into(), "***".into()),
            ("TOKEN".into(), "***".into())
        ])
    );
    // Unchanged `***` keeps the stored value; a new value replaces it.
    let mut sent = stdio(&[("TOKEN", "***"), ("MODE", "slow")]);
    keep_masked_env(&mut sent, Some(&stored)).unwrap();
    assert_eq!(
        env_of(&sent),
        BTreeMap::from([
            ("MODE".into(), "slow".into()),
            ("TOKEN".into(), "tok-value-1".into())
        ])
    );
    // `***` for a variable that has no stored value is refused.
    let mut unknown = stdio(&[("OTHER", "***")]);
    let err = keep_masked_env(&mut unknown, Some(&stored)).unwrap_err();
    assert_eq!(err.field, "transport.env.OTHER");
    let mut created = stdio(&[("TOKEN", "***")]);
    assert!(keep_masked_env(&mut created, None).is_err());
}

#[test]
fn a_call_timeout_is_bounded() {
    let mut server = stdio(&[]);
    for (t, ok) in [
        (None, true),
        (Some(1), true),
        (Some(600), true),
        (Some(0), false),
        (Some(601), false),
    ] {
        server.timeout_seconds = t;
        let r = validate_mcp_server(&server, Caller::Admin, &|_| true);
        assert_eq!(r.is_ok(), ok, "{t:?}");
        if let Err(McpServerRejection::Invalid(e)) = r {
            assert_eq!(
                (e.code, e.field.as_str()),
                ("invalid_timeout", "timeoutSeconds")
            );
        }
    }
}
