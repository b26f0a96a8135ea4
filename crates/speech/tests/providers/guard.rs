//! The outbound guard: without `AllowPrivate`, every dialect refuses a
//! provider on this machine, by address or by name.

use rtc_speech::{
    AddressPolicy, SpeechError, SttConfig, SttDialect, TtsConfig, TtsDialect, connect_stt, open_tts,
};

fn stt(dialect: SttDialect, url: &str) -> SttConfig {
    let mut cfg = SttConfig::new(dialect, url);
    cfg.model = Some("whisper-1".into());
    cfg.api_key = Some("k".into());
    cfg.policy = AddressPolicy::PublicOnly;
    cfg
}

fn tts(dialect: TtsDialect, url: &str) -> TtsConfig {
    let mut cfg = TtsConfig::new(dialect, url);
    cfg.model = "m".into();
    cfg.voice = "v".into();
    cfg.api_key = Some("k".into());
    cfg.policy = AddressPolicy::PublicOnly;
    cfg
}

fn blocked<T>(r: rtc_speech::Result<T>) -> bool {
    matches!(r, Err(SpeechError::Blocked(_)))
}

#[tokio::test]
async fn private_providers_are_refused_for_every_dialect() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let port = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("{e}"))
        .port();
    for host in ["127.0.0.1", "localhost"] {
        let http = format!("http://{host}:{port}/v1");
        let ws = format!("ws://{host}:{port}");
        assert!(
            blocked(
                connect_stt(&stt(SttDialect::Deepgram, &ws))
                    .await
                    .map(|_| ())
            ),
            "{ws}"
        );
        assert!(
            blocked(
                open_tts(&tts(TtsDialect::ElevenLabs, &ws))
                    .await
                    .map(|_| ())
            ),
            "{ws}"
        );
        if host == "127.0.0.1" {
            // An address is refused before anything is sent.
            assert!(blocked(
                connect_stt(&stt(SttDialect::OpenAi, &http))
                    .await
                    .map(|_| ())
            ));
            assert!(blocked(
                open_tts(&tts(TtsDialect::OpenAi, &http)).await.map(|_| ())
            ));
        }
    }
}

#[tokio::test]
async fn a_name_for_this_machine_is_refused_when_the_http_request_goes_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let port = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("{e}"))
        .port();
    let url = format!("http://localhost:{port}/v1");
    let spoken = crate::speak(&tts(TtsDialect::OpenAi, &url), &["Hi."]).await;
    assert_eq!(spoken.error.map(|e| e.0).as_deref(), Some("blocked"));
    let (mut stt, mut events) = connect_stt(&stt(SttDialect::OpenAi, &url))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    stt.audio(&[1, 0, 2, 0])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    stt.finalize().await.unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        crate::until_final(&mut events).await.pop(),
        Some(rtc_speech::SttEvent::Error { code, .. }) if code == "blocked"
    ));
}
