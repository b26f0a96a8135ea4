//! A voice host's audio in (design `voice-pipeline.md` §4(d), §4(i)):
//! espeak-ng speech with a pilot tone under it, sent as `audio.append`,
//! heard by the server's VAD, transcribed by the OpenAI STT mock (which
//! answers the transcript mapped to the pilot) and answered aloud by the
//! OpenAI TTS mock. Scenarios 5 (a whole turn), 8 (a 24 kHz host), 9
//! (manual commit) and 23's STT side (test mode's `[speech N ms]`).

use std::time::Duration;

use base64::Engine as _;
use rtc_testkit::{
    Engine, MockLlm, MockReply, PilotMap, SpeechOpenAiMock, pilot_map, silence, speech_with_pilot,
    to_pcm,
};
use serde_json::{Value, json};

use crate::conversation::server;
use crate::realtime_support::Host;
use crate::voice::{
    OPENAI_KEY, openai_interfaces, received_ms, tone_ms, voice_assistant, voice_host,
};

const QUESTION: &str = "where is my order";
const ANSWER: &str = "Your order A1 has shipped. It left our warehouse in Berlin this morning at nine. It should arrive at your door by Friday afternoon.";

/// Send `pcm` at `rate` as `audio.append` frames of 100 ms.
pub async fn speak(host: &mut Host, pcm: &[u8], rate: u32) -> anyhow::Result<()> {
    let frame = (rate / 10 * 2) as usize;
    for chunk in pcm.chunks(frame) {
        let audio = base64::engine::general_purpose::STANDARD.encode(chunk);
        host.send(json!({"type": "audio.append", "audio": audio}))
            .await?;
    }
    Ok(())
}

/// An utterance of `text` at `rate` over `pilot`, with 800 ms of silence.
pub async fn utterance(text: &str, rate: u32, pilot: u32) -> anyhow::Result<Vec<u8>> {
    let mut pcm = speech_with_pilot(text, rate, pilot).await?;
    pcm.extend(to_pcm(&silence(800, rate)));
    Ok(pcm)
}

/// A whole spoken turn at a host of `rate` Hz in and out, `turn` the
/// assistant's `turnDetection`; the host after `turn.completed`.
async fn spoken_turn(engine: Engine, rate: u32, turn: Value) -> anyhow::Result<()> {
    let llm = MockLlm::start(vec![MockReply::text(ANSWER)]).await?;
    let Some(srv) = server(engine, &llm).await? else {
        return Ok(());
    };
    let speech = SpeechOpenAiMock::start(Some(OPENAI_KEY), pilot_map([(2700, QUESTION)])).await?;
    let (_, ws) = srv.workspace("A").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    let id = voice_assistant(
        &ws,
        json!({"speech": {"sttInterfaceId": "oa-stt", "ttsInterfaceId": "oa-tts",
            "turnDetection": turn}}),
    )
    .await?;
    let manual = turn["type"] == "none";
    let (sid, mut host) = voice_host(&srv, &ws, &id, json!({}), (rate, rate)).await?;
    let ready = host.until_type("session.speech_ready").await?;
    assert_eq!(ready["stt"]["dialect"], "openai", "{ready}");
    assert_eq!(ready["tts"]["dialect"], "openai", "{ready}");
    assert!(speech.requests().is_empty(), "hello contacts no provider");

    speak(
        &mut host,
        &utterance("Where is my order?", rate, 2700).await?,
        rate,
    )
    .await?;
    host.until_type("speech.started").await?;
    if manual {
        // Nothing is transcribed until the host commits.
        host.drain(Duration::from_millis(1_500)).await?;
        assert!(host.of_type("speech.stopped").is_empty());
        assert!(speech.requests_to("/audio/transcriptions").is_empty());
        host.send(json!({"type": "audio.commit"})).await?;
    }
    host.until_type("speech.stopped").await?;
    let user = host
        .until(Duration::from_secs(20), |v| {
            v["type"] == "message.completed" && v["role"] == "user"
        })
        .await?;
    assert_eq!(user["content"], QUESTION);
    assert_eq!(user["source"], "audio");
    let done = host.until_type("turn.completed").await?;

    // One upload: a mono 16-bit WAV at the interface's 16 kHz, the model named.
    let uploads = speech.requests_to("/audio/transcriptions");
    assert_eq!(uploads.len(), 1, "{uploads:?}");
    let wav = uploads[0].wav.clone().unwrap_or_else(|| panic!("no WAV"));
    assert_eq!((wav.channels, wav.rate, wav.bits), (1, 16_000, 16));
    assert_eq!(uploads[0].fields["model"], "gpt-4o-mini-transcribe");
    assert_eq!(
        uploads[0].pilot,
        Some(2700),
        "the pilot survived resampling"
    );
    assert!(uploads[0].authorized);

    // The three-sentence answer took several TTS requests, as `pcm`.
    let tts = speech.requests_to("/audio/speech");
    assert!(tts.len() >= 2, "{tts:?}");
    assert!(tts.iter().all(|r| r.fields["response_format"] == "pcm"));
    // Each request spoke a piece of the answer, and together all of it.
    let inputs: Vec<String> = tts
        .iter()
        .map(|r| r.fields["input"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        inputs.iter().all(|i| ANSWER.contains(i.as_str())),
        "{inputs:?}"
    );
    assert_eq!(tone_ms(&inputs.concat()), tone_ms(ANSWER), "{inputs:?}");
    let assistant = crate::voice::last_answer(&host);
    assert_eq!(assistant["content"], ANSWER);
    let item = assistant["messageId"].as_str().unwrap_or_default();
    // Resampled from the TTS's 24 kHz: within a millisecond per request.
    let got = received_ms(&host, item);
    assert!(
        got.abs_diff(tone_ms(ANSWER)) <= tts.len() as u64,
        "{got} ms"
    );
    assert!(
        host.of_type("audio.delta")
            .iter()
            .all(|d| d["rate"] == rate && d["seq"].is_null())
    );

    // The latency of a spoken turn has all seven figures, consistent.
    let l = &done["latency"];
    let figures = [
        "endpointMs",
        "sttMs",
        "llmTtftMs",
        "chunkMs",
        "ttsTtfbMs",
        "serverMs",
    ];
    for f in figures.iter().chain(&["firstAudioMs"]) {
        assert!(l[f].as_u64().is_some(), "{f}: {done}");
    }
    let sum: u64 = figures.iter().map(|f| l[f].as_u64().unwrap_or(0)).sum();
    assert!(
        sum.abs_diff(l["firstAudioMs"].as_u64().unwrap_or(0)) <= 2,
        "{l}"
    );
    if !manual {
        // The end was decided about `silenceDurationMs` after the speech.
        assert!(l["endpointMs"].as_u64().unwrap_or(0) < 2_000, "{l}");
    }

    // Scenario 11: the server's share is on /metrics.
    let metrics = srv.anonymous().get("/metrics").await?;
    assert!(
        metrics.text.contains("rtc_voice_server_ms"),
        "{}",
        metrics.text
    );

    // The history holds both texts.
    let messages = ws.get(&format!("/v1/sessions/{sid}/messages")).await?;
    let texts: Vec<(String, String)> = messages.body["data"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert!(
        texts.contains(&("user".to_owned(), QUESTION.to_owned())),
        "{texts:?}"
    );
    assert!(
        texts.contains(&("assistant".to_owned(), ANSWER.to_owned())),
        "{texts:?}"
    );
    // The model heard the transcript.
    let asked = llm.requests();
    let last = asked.last().cloned().unwrap_or_default();
    assert!(last.to_string().contains(QUESTION), "{last}");
    Ok(())
}

/// Scenario 5: a spoken turn through the OpenAI STT and TTS.
async fn openai_turn(engine: Engine) -> anyhow::Result<()> {
    spoken_turn(
        engine,
        16_000,
        json!({"type": "server_vad", "silenceDurationMs": 500}),
    )
    .await
}

/// Scenario 8: a 24 kHz host; the STT still hears the right pilot at
/// 16 kHz, and the host gets the answer's length at 24 kHz.
async fn resampled_turn(engine: Engine) -> anyhow::Result<()> {
    spoken_turn(engine, 24_000, json!({"type": "server_vad"})).await
}

/// Scenario 9: turn detection `none` transcribes nothing until `audio.commit`.
async fn manual_commit(engine: Engine) -> anyhow::Result<()> {
    spoken_turn(engine, 16_000, json!({"type": "none"})).await
}

/// Scenario 23's STT side: test mode hears `[speech N ms]` and contacts
/// no provider.
async fn test_mode_hears(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::start(vec![MockReply::text("Heard you.")]).await?;
    let Some(srv) = server(engine, &llm).await? else {
        return Ok(());
    };
    let speech = SpeechOpenAiMock::start(Some(OPENAI_KEY), PilotMap::new()).await?;
    let (_, ws) = srv.workspace("A").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    let id = voice_assistant(&ws, json!({})).await?;
    let (_, mut host) =
        voice_host(&srv, &ws, &id, json!({"testMode": true}), (16_000, 16_000)).await?;
    host.until_type("session.speech_ready").await?;
    speak(
        &mut host,
        &utterance("Where is my order?", 16_000, 2700).await?,
        16_000,
    )
    .await?;
    let user = host
        .until(Duration::from_secs(20), |v| {
            v["type"] == "message.completed" && v["role"] == "user"
        })
        .await?;
    let text = user["content"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("[speech ") && text.ends_with(" ms]"),
        "{user}"
    );
    host.until_type("turn.completed").await?;
    assert!(speech.requests().is_empty(), "{:?}", speech.requests());
    Ok(())
}

/// Scenario 10: for a paced three-sentence answer, the first TTS request
/// and the first `audio.delta` come long before the model's stream ends.
async fn answers_stream(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::start(vec![MockReply::Spoken {
        text: ANSWER.to_owned(),
        calls: Vec::new(),
        pace: Duration::from_millis(250),
    }])
    .await?;
    let Some(srv) = server(engine, &llm).await? else {
        return Ok(());
    };
    let speech = SpeechOpenAiMock::start(Some(OPENAI_KEY), PilotMap::new()).await?;
    let (_, ws) = srv.workspace("A").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    let id = voice_assistant(&ws, json!({})).await?;
    let (_, mut host) = voice_host(&srv, &ws, &id, json!({}), (16_000, 16_000)).await?;
    host.until_type("session.speech_ready").await?;
    let sent = tokio::time::Instant::now();
    host.send(json!({"type": "user.message", "text": "Where is my order?"}))
        .await?;
    host.until_type("audio.delta").await?;
    let first_audio = sent.elapsed();
    let first_tts = speech.requests_to("/audio/speech").len();
    assert!(llm.requests().len() == 1, "one model call, still streaming");
    // 24 words, 3 a piece, 250 ms apart: the stream takes about 2 s.
    host.until(Duration::from_secs(20), |v| {
        v["type"] == "message.completed" && v["role"] == "assistant"
    })
    .await?;
    let stream_end = sent.elapsed();
    assert!(first_tts >= 1, "a TTS request before the first audio");
    assert!(stream_end >= Duration::from_millis(1_700), "{stream_end:?}");
    // The first sentence is 2 pieces (250 ms in); the stream's last piece
    // comes about 2 s in: the audio started long before.
    assert!(
        first_audio < Duration::from_millis(1_200),
        "first audio {first_audio:?}, answer done {stream_end:?}"
    );
    // The first request spoke the first sentence alone.
    let first = speech.requests_to("/audio/speech")[0].fields["input"].clone();
    assert_eq!(first, "Your order A1 has shipped.");
    Ok(())
}

crate::harness::both!(openai_turn);
crate::harness::both!(answers_stream);
crate::harness::both!(resampled_turn);
crate::harness::both!(manual_commit);
crate::harness::both!(test_mode_hears);
