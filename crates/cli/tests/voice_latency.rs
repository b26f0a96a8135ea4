//! Scenario 11 (design `voice-pipeline.md` §4(e), §4(i)): a spoken turn's
//! latency figures are consistent with the mocks' delays, and
//! `firstAudioMs` agrees with what the host measured itself, from its last
//! voiced frame sent to its first `audio.delta` received. The `serverMs`
//! target is the bench's (`benches/voice_latency.rs`), not asserted here.

use std::time::{Duration, Instant};

use base64::Engine as _;
use rtc_testkit::{Engine, MockLlm, MockReply, SpeechOpenAiMock, pilot_map, to_samples};
use serde_json::json;

use crate::conversation::server;
use crate::voice::{OPENAI_KEY, openai_interfaces, voice_assistant, voice_host};
use crate::voice_audio::utterance;

const STT_DELAY: u64 = 150;
const LLM_DELAY: u64 = 120;
const TTS_DELAY: u64 = 100;
/// How much earlier than `firstAudioMs` the host may see the first audio:
/// its clock starts after its send returns, the server's when the frame
/// is heard (normally later).
const EARLIER: u64 = 50;
/// How much later: the frames sent at once queue at the server, and the
/// first `audio.delta` crosses loopback.
const LATER: u64 = 150;

async fn figures_match_mocks_and_host(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::start(vec![MockReply::Delayed(
        Duration::from_millis(LLM_DELAY),
        Box::new(MockReply::text("It has shipped.")),
    )])
    .await?;
    let Some(srv) = server(engine, &llm).await? else {
        return Ok(());
    };
    let speech =
        SpeechOpenAiMock::start(Some(OPENAI_KEY), pilot_map([(2700, "where is it")])).await?;
    speech.set_stt_delay(Duration::from_millis(STT_DELAY));
    speech.set_first_byte_delay(Duration::from_millis(TTS_DELAY));
    let (_, ws) = srv.workspace("A").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    let id = voice_assistant(
        &ws,
        json!({"speech": {"sttInterfaceId": "oa-stt", "ttsInterfaceId": "oa-tts",
            "turnDetection": {"type": "server_vad", "silenceDurationMs": 300}}}),
    )
    .await?;
    let (_, mut host) = voice_host(&srv, &ws, &id, json!({}), (16_000, 16_000)).await?;
    host.until_type("session.speech_ready").await?;

    // The utterance in 100 ms frames; the host's clock starts when the
    // frame holding the last sound has been sent.
    let pcm = utterance("Where is it?", 16_000, 2700).await?;
    let last_sound = to_samples(&pcm)
        .iter()
        .rposition(|s| s.unsigned_abs() > 300)
        .unwrap_or(0);
    let mut zero = None;
    for (i, chunk) in pcm.chunks(3_200).enumerate() {
        let audio = base64::engine::general_purpose::STANDARD.encode(chunk);
        host.send(json!({"type": "audio.append", "audio": audio}))
            .await?;
        if i == last_sound * 2 / 3_200 {
            zero = Some(Instant::now());
        }
    }
    let zero = zero.unwrap_or_else(|| panic!("no sound in the utterance"));
    host.until_type("audio.delta").await?;
    let host_ms = u64::try_from(zero.elapsed().as_millis())?;
    let done = host.until_type("turn.completed").await?;

    let l = &done["latency"];
    let get = |f: &str| {
        l[f].as_u64()
            .unwrap_or_else(|| panic!("{f} missing: {done}"))
    };
    let (endpoint, stt, ttft, chunk, ttfb, first, own) = (
        get("endpointMs"),
        get("sttMs"),
        get("llmTtftMs"),
        get("chunkMs"),
        get("ttsTtfbMs"),
        get("firstAudioMs"),
        get("serverMs"),
    );
    // Each provider's figure holds its mock's delay, and not much more.
    assert!((STT_DELAY..STT_DELAY + 2_000).contains(&stt), "{l}");
    assert!((LLM_DELAY..LLM_DELAY + 2_000).contains(&ttft), "{l}");
    assert!((TTS_DELAY..TTS_DELAY + 2_000).contains(&ttfb), "{l}");
    // The answer is one sentence in one token: released at the stream's end.
    assert!(chunk < 1_000, "{l}");
    // The frames came at once: the silence ending the turn was heard at once.
    assert!(endpoint < 1_000, "{l}");
    // The parts add up to the first audio.
    assert!(
        (endpoint + stt + ttft + chunk + ttfb + own).abs_diff(first) <= 2,
        "{l}"
    );
    // The host saw the first audio when the server says it wrote it.
    assert!(
        host_ms + EARLIER >= first && host_ms <= first + LATER,
        "host measured {host_ms} ms, firstAudioMs {first}: {l}"
    );
    Ok(())
}

crate::harness::both!(figures_match_mocks_and_host);
