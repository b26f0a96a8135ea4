//! Speech interfaces and an assistant's `speech` block through the binary
//! (design `voice-pipeline.md` §4(a), §4(i) scenarios 1–3): CRUD for every
//! dialect with the key kept a reference, espeak for the admin only, each
//! save-time rule with its code and field, interfaces in use kept, and
//! what creating a session checks again. `check` against the speech mocks
//! and the real espeak-ng is in `speech_interfaces/checks.rs`.

mod checks;

use rtc_store::{MasterKey, SecretBox, Store};
use serde_json::{Value, json};

use crate::harness::{Api, on_both};

const OPENAI_KEY: &str = "sk-speech-openai-0123456789";
const DEEPGRAM_KEY: &str = "dg-speech-0123456789";
const ELEVENLABS_KEY: &str = "el-speech-0123456789";

/// The secrets the interfaces below name.
pub async fn seed_keys(ws: &Api) -> anyhow::Result<()> {
    for (name, value) in [
        ("secret__openai_key", OPENAI_KEY),
        ("secret__deepgram_key", DEEPGRAM_KEY),
        ("secret__elevenlabs_key", ELEVENLABS_KEY),
    ] {
        ws.put(&format!("/v1/secrets/{name}"), json!({ "value": value }))
            .await?
            .assert_status(201);
    }
    Ok(())
}

pub fn stt_openai(url: &str) -> Value {
    json!({"id": "oa-stt", "name": "OpenAI STT", "kind": "stt",
        "connection": {"dialect": "openai", "url": url, "model": "gpt-4o-mini-transcribe",
            "language": "en", "sampleRate": 16000, "apiKey": "{{secret__openai_key}}"}})
}

pub fn stt_deepgram(url: &str) -> Value {
    json!({"id": "dg-nova3", "name": "Deepgram Nova-3", "kind": "stt",
        "connection": {"dialect": "deepgram", "url": url, "model": "nova-3",
            "language": "en-US", "sampleRate": 16000, "apiKey": "{{secret__deepgram_key}}"}})
}

pub fn tts_openai(url: &str) -> Value {
    json!({"id": "oa-tts", "name": "OpenAI TTS", "kind": "tts",
        "connection": {"dialect": "openai", "url": url, "model": "gpt-4o-mini-tts",
            "voice": "marin", "format": "pcm", "apiKey": "{{secret__openai_key}}"}})
}

pub fn tts_elevenlabs(url: &str) -> Value {
    json!({"id": "el-flash", "name": "ElevenLabs Flash", "kind": "tts",
        "connection": {"dialect": "elevenlabs", "url": url, "model": "eleven_flash_v2_5",
            "voice": "JBFqnCBsd6RMkjVDRZzb", "sampleRate": 24000,
            "voiceSettings": {"stability": 0.5, "similarityBoost": 0.75},
            "apiKey": "{{secret__elevenlabs_key}}"}})
}

pub fn tts_espeak() -> Value {
    json!({"id": "local-en", "name": "espeak-ng (en-us)", "kind": "tts",
        "connection": {"dialect": "espeak", "voice": "en-us", "speed": 175}})
}

/// The four provider interfaces at their public URLs.
fn public_interfaces() -> Vec<Value> {
    vec![
        stt_openai("https://api.openai.com/v1"),
        stt_deepgram("wss://api.deepgram.com"),
        tts_openai("https://api.openai.com/v1"),
        tts_elevenlabs("wss://api.elevenlabs.io"),
    ]
}

fn no_key_in(v: &Value) {
    let text = v.to_string();
    for key in [OPENAI_KEY, DEEPGRAM_KEY, ELEVENLABS_KEY] {
        assert!(!text.contains(key), "a key shown: {text}");
    }
}

on_both!(crud_for_every_dialect, |srv| {
    let (ws_id, ws) = srv.workspace("Voice").await?;
    let admin = srv.admin_in(&ws_id);
    seed_keys(&ws).await?;
    for body in public_interfaces() {
        let saved = ws.create("/v1/speech-interfaces", body.clone()).await?;
        assert_eq!(saved["connection"], body["connection"], "{saved}");
        assert!(saved["createdAt"].is_string() && saved["updatedAt"].is_string());
        let id = saved["id"].as_str().unwrap();
        let read = ws.get(&format!("/v1/speech-interfaces/{id}")).await?;
        let read = read.assert_status(200);
        assert_eq!(read["connection"]["apiKey"], body["connection"]["apiKey"]);
        assert_eq!(read["kind"], body["kind"]);
        no_key_in(read);
    }
    // A generated id when none is chosen.
    let mut unnamed = stt_openai("https://api.openai.com/v1");
    unnamed.as_object_mut().unwrap().remove("id");
    let generated = ws.create("/v1/speech-interfaces", unnamed).await?;
    assert!(generated["id"].as_str().unwrap().starts_with("si"));

    // espeak runs local processes: the admin's to create, change, delete.
    ws.post("/v1/speech-interfaces", tts_espeak())
        .await?
        .assert_error(403, "stdio_requires_admin", None);
    let espeak = admin.create("/v1/speech-interfaces", tts_espeak()).await?;
    assert_eq!(espeak["connection"]["voice"], "en-us");
    assert_eq!(espeak["connection"]["speed"].as_f64(), Some(175.0));
    let read = ws.get("/v1/speech-interfaces/local-en").await?;
    assert_eq!(read.assert_status(200)["connection"]["voice"], "en-us");
    let mut faster = tts_espeak();
    faster["connection"]["speed"] = json!(220);
    ws.put("/v1/speech-interfaces/local-en", faster.clone())
        .await?
        .assert_error(403, "stdio_requires_admin", None);
    ws.delete("/v1/speech-interfaces/local-en")
        .await?
        .assert_error(403, "stdio_requires_admin", None);
    let changed = admin.put("/v1/speech-interfaces/local-en", faster).await?;
    assert_eq!(changed.assert_status(200)["connection"]["speed"], 220.0);
    // Nor may a workspace key turn its own interface into an espeak one.
    let mut to_espeak = tts_espeak();
    to_espeak["id"] = json!("oa-tts");
    ws.put("/v1/speech-interfaces/oa-tts", to_espeak)
        .await?
        .assert_error(403, "stdio_requires_admin", None);

    let list = ws.get("/v1/speech-interfaces").await?;
    let data = list.assert_status(200)["data"].as_array().unwrap().clone();
    let ids: Vec<&str> = data.iter().filter_map(|i| i["id"].as_str()).collect();
    assert_eq!(ids.len(), 6, "{ids:?}");
    assert_eq!(&ids[..4], ["oa-stt", "dg-nova3", "oa-tts", "el-flash"]);
    no_key_in(&list.body);

    let mut renamed = tts_openai("https://api.openai.com/v1");
    renamed["connection"]["voice"] = json!("cedar");
    renamed["connection"]["format"] = json!("wav");
    let r = ws.put("/v1/speech-interfaces/oa-tts", renamed).await?;
    assert_eq!(r.assert_status(200)["connection"]["voice"], "cedar");
    ws.put(
        "/v1/speech-interfaces/ghost",
        tts_openai("https://api.openai.com/v1"),
    )
    .await?
    .assert_error(404, "not_found", None);
    ws.post(
        "/v1/speech-interfaces",
        stt_openai("https://api.openai.com/v1"),
    )
    .await?
    .assert_error(409, "already_exists", Some("id"));

    // The key's secret is in use while an interface names it.
    ws.delete("/v1/secrets/secret__deepgram_key")
        .await?
        .assert_error(409, "in_use", None);
    ws.delete("/v1/speech-interfaces/dg-nova3")
        .await?
        .assert_status(204);
    ws.get("/v1/speech-interfaces/dg-nova3")
        .await?
        .assert_error(404, "not_found", None);
    ws.delete("/v1/secrets/secret__deepgram_key")
        .await?
        .assert_status(204);
    admin
        .delete("/v1/speech-interfaces/local-en")
        .await?
        .assert_status(204);

    // Another workspace sees none of them.
    let (_, other) = srv.workspace("Other").await?;
    other
        .get("/v1/speech-interfaces/oa-tts")
        .await?
        .assert_error(404, "not_found", None);
    Ok(())
});

#[rustfmt::skip]
fn interface_rule_cases() -> Vec<(Value, &'static str, Value, &'static str, &'static str)> {
    let oa = "https://api.openai.com/v1";
    vec![
        (tts_openai(oa), "/connection/dialect", json!("deepgram"), "unsupported_dialect", "connection.dialect"),
        (stt_openai(oa), "/connection/dialect", json!("elevenlabs"), "unsupported_dialect", "connection.dialect"),
        (stt_deepgram("wss://api.deepgram.com"), "/connection/url", json!("https://api.deepgram.com"), "invalid_url", "connection.url"),
        (tts_openai(oa), "/connection/url", json!("wss://api.openai.com/v1"), "invalid_url", "connection.url"),
        (tts_elevenlabs("wss://api.elevenlabs.io"), "/connection/url", json!("wss://"), "invalid_url", "connection.url"),
        (tts_espeak(), "/connection/url", json!("https://example.com"), "unexpected_field", "connection.url"),
        (stt_openai(oa), "/connection/model", Value::Null, "missing_field", "connection.model"),
        (tts_elevenlabs("wss://api.elevenlabs.io"), "/connection/voice", Value::Null, "missing_field", "connection.voice"),
        (stt_deepgram("wss://api.deepgram.com"), "/connection/apiKey", Value::Null, "missing_field", "connection.apiKey"),
        (stt_openai(oa), "/connection/voice", json!("marin"), "unexpected_field", "connection.voice"),
        (tts_elevenlabs("wss://api.elevenlabs.io"), "/connection/format", json!("pcm"), "unexpected_field", "connection.format"),
        (tts_espeak(), "/connection/apiKey", json!("{{secret__openai_key}}"), "unexpected_field", "connection.apiKey"),
        (tts_openai(oa), "/connection/apiKey", json!(OPENAI_KEY), "invalid_placeholder", "connection.apiKey"),
        (stt_deepgram("wss://api.deepgram.com"), "/connection/apiKey", json!("Token {{secret__deepgram_key}}"), "invalid_placeholder", "connection.apiKey"),
        (tts_elevenlabs("wss://api.elevenlabs.io"), "/connection/apiKey", json!("{{secret__nope}}"), "unknown_secret", "connection.apiKey"),
        (stt_openai(oa), "/connection/sampleRate", json!(22050), "out_of_range", "connection.sampleRate"),
        (tts_elevenlabs("wss://api.elevenlabs.io"), "/connection/sampleRate", json!(48000), "out_of_range", "connection.sampleRate"),
        (tts_openai(oa), "/connection/speed", json!(4.5), "out_of_range", "connection.speed"),
        (tts_espeak(), "/connection/speed", json!(500), "out_of_range", "connection.speed"),
        (tts_elevenlabs("wss://api.elevenlabs.io"), "/connection/voiceSettings/speed", json!(1.5), "out_of_range", "connection.voiceSettings.speed"),
        (stt_deepgram("wss://api.deepgram.com"), "/connection/language", json!("english"), "invalid_value", "connection.language"),
        (tts_espeak(), "/connection/voice", json!("en us; rm"), "invalid_value", "connection.voice"),
    ]
}

/// Set (or, with `null`, remove) the value at a JSON pointer.
fn put(mut v: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let map = v.pointer_mut(parent).unwrap().as_object_mut().unwrap();
    if value.is_null() {
        map.remove(key);
    } else {
        map.insert(key.to_owned(), value);
    }
    v
}

on_both!(each_interface_rule_answers_its_code_and_field, |srv| {
    let (ws_id, ws) = srv.workspace("Rules").await?;
    let admin = srv.admin_in(&ws_id);
    seed_keys(&ws).await?;
    for (body, pointer, value, code, field) in interface_rule_cases() {
        let espeak = body["connection"]["dialect"] == "espeak";
        let caller = if espeak { &admin } else { &ws };
        let reply = caller
            .post("/v1/speech-interfaces", put(body, pointer, value.clone()))
            .await?;
        assert_eq!(
            (
                reply.status.as_u16(),
                reply.body["error"]["code"].as_str(),
                reply.body["error"]["field"].as_str()
            ),
            (422, Some(code), Some(field)),
            "{pointer}={value}: {}",
            reply.text
        );
    }
    // A dialect that does not exist is a shape the schema refuses, as
    // every unknown enum value of the API.
    ws.post(
        "/v1/speech-interfaces",
        put(
            stt_openai("https://api.openai.com/v1"),
            "/connection/dialect",
            json!("whisper"),
        ),
    )
    .await?
    .assert_error(422, "invalid_field", Some("connection.dialect"));
    // The outbound guard at save: loopback is private here.
    let reply = ws
        .post("/v1/speech-interfaces", tts_openai("http://127.0.0.1:9/v1"))
        .await?;
    reply.assert_error(422, "private_address", Some("connection.url"));
    assert!(reply.text.contains("RTC_OUTBOUND_ALLOW"), "{}", reply.text);
    ws.post("/v1/speech-interfaces", stt_deepgram("ws://localhost:9"))
        .await?
        .assert_error(422, "private_address", Some("connection.url"));
    let list = ws.get("/v1/speech-interfaces").await?;
    assert_eq!(list.assert_status(200)["data"], json!([]), "nothing saved");
    Ok(())
});

/// A pipeline assistant's `speech`, over `stt` and `tts`.
fn voice_assistant(stt: &str, tts: &str) -> Value {
    json!({"name": "Voice", "runMode": "pipeline", "systemPrompt": "Be brief.",
        "speech": {"sttInterfaceId": stt, "ttsInterfaceId": tts,
            "turnDetection": {"type": "stt", "silenceDurationMs": 600},
            "bargeIn": {"enabled": true, "minSpeechMs": 250},
            "toolFiller": {"afterMs": 1500, "text": "One moment, please."}}})
}

#[rustfmt::skip]
fn speech_rule_cases() -> Vec<(&'static str, Value, &'static str, &'static str)> {
    vec![
        ("/speech/sttInterfaceId", Value::Null, "missing_field", "speech.sttInterfaceId"),
        ("/speech/ttsInterfaceId", Value::Null, "missing_field", "speech.ttsInterfaceId"),
        ("/speech/sttInterfaceId", json!("ghost"), "unknown_speech_interface", "speech.sttInterfaceId"),
        ("/speech/ttsInterfaceId", json!("ghost"), "unknown_speech_interface", "speech.ttsInterfaceId"),
        ("/speech/sttInterfaceId", json!("el-flash"), "speech_kind_mismatch", "speech.sttInterfaceId"),
        ("/speech/ttsInterfaceId", json!("dg-nova3"), "speech_kind_mismatch", "speech.ttsInterfaceId"),
        ("/speech/sttInterfaceId", json!("oa-stt"), "unsupported_turn_detection", "speech.turnDetection.type"),
        // An unknown type is refused by the schema, as every unknown enum value.
        ("/speech/turnDetection/type", json!("semantic_vad"), "invalid_field", "speech.turnDetection.type"),
        ("/speech/turnDetection/threshold", json!(1.2), "out_of_range", "speech.turnDetection.threshold"),
        ("/speech/turnDetection/prefixPaddingMs", json!(2500), "out_of_range", "speech.turnDetection.prefixPaddingMs"),
        ("/speech/turnDetection/silenceDurationMs", json!(50), "out_of_range", "speech.turnDetection.silenceDurationMs"),
        ("/speech/turnDetection/maxUtteranceMs", json!(500), "out_of_range", "speech.turnDetection.maxUtteranceMs"),
        ("/speech/bargeIn/minSpeechMs", json!(4000), "out_of_range", "speech.bargeIn.minSpeechMs"),
        ("/speech/toolFiller/afterMs", json!(31000), "out_of_range", "speech.toolFiller.afterMs"),
        ("/speech/toolFiller/text", json!(""), "out_of_range", "speech.toolFiller.text"),
    ]
}

on_both!(assistant_speech_rules_and_interfaces_in_use, |srv| {
    let (_, ws) = srv.workspace("Assistants").await?;
    seed_keys(&ws).await?;
    for body in public_interfaces() {
        ws.create("/v1/speech-interfaces", body).await?;
    }
    let good = voice_assistant("dg-nova3", "el-flash");
    let saved = ws.create("/v1/assistants", good.clone()).await?;
    assert_eq!(saved["speech"]["turnDetection"]["type"], "stt");
    assert_eq!(
        saved["speech"]["turnDetection"]["threshold"], 0.5,
        "defaults filled"
    );
    let asst = saved["id"].as_str().unwrap().to_owned();
    for (pointer, value, code, field) in speech_rule_cases() {
        let reply = ws
            .post("/v1/assistants", put(good.clone(), pointer, value.clone()))
            .await?;
        reply.assert_error(422, code, Some(field));
    }
    // `speech` is for the pipeline run mode.
    let mut realtime = good.clone();
    realtime["runMode"] = json!("realtime");
    realtime["realtimeInterfaceId"] = json!("qwen-audio-realtime");
    ws.post("/v1/assistants", realtime)
        .await?
        .assert_error(422, "pipeline_only", Some("speech"));

    // In use: not deleted, not changed to the other kind, not changed so
    // that the assistant breaks (Deepgram's endpointing is what `stt`
    // turn detection needs).
    ws.delete("/v1/speech-interfaces/dg-nova3")
        .await?
        .assert_error(409, "in_use", None);
    ws.delete("/v1/speech-interfaces/el-flash")
        .await?
        .assert_error(409, "in_use", None);
    let mut as_stt = stt_openai("https://api.openai.com/v1");
    as_stt["id"] = json!("el-flash");
    ws.put("/v1/speech-interfaces/el-flash", as_stt)
        .await?
        .assert_error(409, "in_use", None);
    ws.put(
        "/v1/speech-interfaces/dg-nova3",
        stt_openai("https://api.openai.com/v1"),
    )
    .await?
    .assert_error(409, "breaks_assistant", None);
    // A change the assistant survives is saved.
    let mut slower = stt_deepgram("wss://api.deepgram.com");
    slower["connection"]["model"] = json!("nova-2");
    ws.put("/v1/speech-interfaces/dg-nova3", slower)
        .await?
        .assert_status(200);
    // An unused interface changes kind freely.
    let mut retyped = tts_openai("https://api.openai.com/v1");
    retyped["id"] = json!("oa-stt");
    ws.put("/v1/speech-interfaces/oa-stt", retyped)
        .await?
        .assert_status(200);
    // Once the assistant lets go, the interfaces go.
    let mut text_only = good.clone();
    text_only.as_object_mut().unwrap().remove("speech");
    ws.put(&format!("/v1/assistants/{asst}"), text_only)
        .await?
        .assert_status(200);
    ws.delete("/v1/speech-interfaces/dg-nova3")
        .await?
        .assert_status(204);
    ws.delete("/v1/speech-interfaces/el-flash")
        .await?
        .assert_status(204);
    Ok(())
});

on_both!(creating_a_session_checks_the_speech_again, |srv| {
    let (ws_id, ws) = srv.workspace("Sessions").await?;
    seed_keys(&ws).await?;
    for body in public_interfaces() {
        ws.create("/v1/speech-interfaces", body).await?;
    }
    let mut asst = voice_assistant("oa-stt", "el-flash");
    asst["speech"]["turnDetection"] = json!({"type": "server_vad"});
    let asst = ws.create("/v1/assistants", asst).await?;
    let asst = asst["id"].as_str().unwrap().to_owned();
    // Creating the session contacts no provider: the public hosts are not
    // reachable from the test machine, and it is created at once.
    let started = std::time::Instant::now();
    ws.create("/v1/sessions", json!({"assistantId": asst}))
        .await?;
    assert!(started.elapsed() < std::time::Duration::from_secs(5));

    // What the API refuses can still happen underneath it (an older
    // server, a restore): the interface changed kind since the save...
    let store = Store::connect(&srv.db.url, SecretBox::new(&MasterKey::generate())).await?;
    let tts: rtc_protocol::SpeechInterface = store.get(&ws_id, "el-flash").await?.unwrap();
    let mut changed = tts.clone();
    changed.kind = rtc_protocol::SpeechKind::Stt;
    store.update(&ws_id, "el-flash", changed).await?;
    ws.post("/v1/sessions", json!({"assistantId": asst}))
        .await?
        .assert_error(422, "speech_not_configured", Some("speech.ttsInterfaceId"));
    store.update(&ws_id, "el-flash", tts).await?;
    ws.create("/v1/sessions", json!({"assistantId": asst}))
        .await?;
    // ...or its key's secret is gone.
    let stt: rtc_protocol::SpeechInterface = store.get(&ws_id, "oa-stt").await?.unwrap();
    let mut keyless = stt.clone();
    keyless.connection.api_key = Some("{{secret__gone}}".to_owned());
    store.update(&ws_id, "oa-stt", keyless).await?;
    ws.post("/v1/sessions", json!({"assistantId": asst}))
        .await?
        .assert_error(422, "unknown_secret", Some("speech.sttInterfaceId"));
    store.update(&ws_id, "oa-stt", stt).await?;
    ws.create("/v1/sessions", json!({"assistantId": asst}))
        .await?;
    Ok(())
});
