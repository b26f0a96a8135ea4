//! Settings: what their `Debug` shows, and what loading refuses.

use super::*;

#[test]
fn debug_hides_the_admin_token_master_key_and_database_password() {
    let settings = Settings {
        listen: "127.0.0.1:0".into(),
        database_url: "postgres://rtc:db-password-123@localhost:5432/rtc".into(),
        data_dir: PathBuf::from("."),
        admin_token: Some("admin-token-canary-1".into()),
        master_key: Some("master-key-canary-2".into()),
        allow_private_network: false,
        outbound_allow: rtc_tools::net_guard::AddressPolicy::PublicOnly,
        max_body_bytes: 1024,
        json_logs: false,
        llm: ProviderSettings {
            base_url: "http://llm".into(),
            api_key: Some("llm-key-canary-3".into()),
            model: "m".into(),
            small_model: None,
            token_parameter: None,
            sampling: None,
            vision: None,
            context_window: None,
            models: Default::default(),
            max_tools: None,
            streams_per_connection: None,
        },
        small_model: "m".into(),
        max_steps_per_turn: 1,
        idle_session_secs: 1,
        shutdown_grace_secs: 1,
        header_read_timeout_secs: 1,
        loop_poll_ms: 1,
        loop_lease_secs: 1,
        loop_max_hours: 1,
        subagent_max_depth: 1,
        subagent_max_children: 1,
        subagent_max_sessions: 1,
        subagent_max_tree_total: 1,
        max_sessions_per_workspace: 1,
        max_event_result_bytes: 1,
        max_message_bytes: 1,
        max_end_reason_chars: 1,
        test_concurrency: 1,
        limits: crate::limit_settings::LimitSettings::load(&Default::default(), 4).unwrap(),
        metrics_token: Some("metrics-token-canary-4".into()),
        cors_origins: Vec::new(),
        instance_id: None,
        web: WebSettings::default(),
        providers: BTreeMap::new(),
    };
    let shown = format!("{settings:?}");
    for secret in [
        "admin-token-canary-1",
        "master-key-canary-2",
        "llm-key-canary-3",
        "db-password-123",
        "metrics-token-canary-4",
    ] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    assert!(
        shown.contains("admin_token: Some(\"[redacted]\")"),
        "{shown}"
    );
    assert!(
        shown.contains("postgres://rtc:[redacted]@localhost:5432/rtc"),
        "{shown}"
    );
}

#[test]
fn cors_origins_are_origins() {
    assert_eq!(
        super::cors_origins(Some(" https://a.example , http://localhost:3000,".into())).unwrap(),
        ["https://a.example", "http://localhost:3000"]
    );
    assert_eq!(super::cors_origins(Some("*".into())).unwrap(), ["*"]);
    assert!(super::cors_origins(None).unwrap().is_empty());
    for bad in ["a.example", "https://a.example/path", "ftp://a", "https://"] {
        assert!(super::cors_origins(Some(bad.into())).is_err(), "{bad}");
    }
}

#[test]
fn streams_per_connection_is_at_least_one_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let load = |text: &str| {
        let path = dir.path().join("rtc.toml");
        std::fs::write(&path, text).unwrap();
        Settings::load(Some(&path), Overrides::default())
    };
    let named = "[providers.local]\nbase_url = \"https://gw.example/v1\"\nmodel = \"m\"\n";
    let s = load(&format!(
        "llm_streams_per_connection = 50\n{named}streams_per_connection = 20\n"
    ))
    .unwrap();
    assert_eq!(s.llm.streams_per_connection.map(|n| n.get()), Some(50));
    assert_eq!(
        s.providers["local"].streams_per_connection.map(|n| n.get()),
        Some(20)
    );
    let e = load("llm_streams_per_connection = 0\n").unwrap_err();
    assert!(
        format!("{e:#}").contains("llm_streams_per_connection"),
        "{e:#}"
    );
    let e = load(&format!("{named}streams_per_connection = 0\n")).unwrap_err();
    assert!(format!("{e:#}").contains("nonzero"), "{e:#}");
}
