//! Test support shared by the crates' integration tests: throwaway
//! databases on both engines, the real `rtc-agent` binary started as a
//! child process, the real MCP "everything" server from npm, a real
//! `opencode serve` (npm `opencode-ai`), a scripted
//! OpenAI-compatible mock LLM, a scripted mock realtime (speech-to-speech)
//! provider, dialect-accurate speech mocks (OpenAI-compatible STT/TTS,
//! Deepgram, ElevenLabs) with pilot-tone test audio, and the stand-ins
//! workflow tests share.
//!
//! PostgreSQL tests need `RTC_TEST_POSTGRES_URL` (an admin URL of a running
//! cluster; `scripts/test` starts one). Each test gets its own database.
//! Without the variable a PostgreSQL test fails with a message saying so,
//! unless `RTC_TEST_SKIP_POSTGRES=1` is set for a quick SQLite-only run.

mod db;
mod hostile_http;
mod mcp;
mod misbehaving;
mod mock_llm;
mod opencode;
mod processes;
mod realtime_mock;
mod realtime_mock_conn;
mod realtime_mock_script;
mod server;
mod speech_audio;
mod speech_deepgram_listen;
mod speech_deepgram_mock;
mod speech_elevenlabs_mock;
mod speech_openai_mock;
mod speech_openai_speech;
mod workflow_stand_ins;

pub use db::{Engine, TestDatabase};
pub use hostile_http::{Hostile, hostile_http};
pub use mcp::{McpHttpServer, everything_stdio_command, repo_root};
pub use mock_llm::{Misbehaviour, MockLlm, MockReply, request_tokens};
pub use opencode::{
    OPENCODE_MODELS, OPENCODE_OFFLINE_ENV, OpencodeServer, opencode_binary, opencode_reply,
    opencode_test_config, twenty_words,
};
pub use processes::{cpu_time, processes_with, rss_kib};
pub use realtime_mock::{
    ClientFrame, MockConnection, RealtimeFlavor, RealtimeMock, RealtimeScript, SPEECH_RMS,
    ScriptedResponse, Step, pcm16_rms,
};
pub use server::{ClosedPort, ServerProcess, TEST_ADMIN_TOKEN, api_client, free_port};
pub use speech_audio::{
    PILOT_AMPLITUDE, PILOTS, PilotMap, TTS_MS_PER_CHAR, TTS_TONE_HZ, Wav, espeak_program,
    espeak_speech, mix_pilot, parse_wav, pcm_ms, pilot_map, pilot_of, resample, rms as speech_rms,
    silence, sine, speech_with_pilot, to_pcm, to_samples, tone_amplitude, tts_ms, tts_tone,
    wav_bytes,
};
pub use speech_deepgram_mock::{
    DeepgramConnection, DeepgramFrame, DeepgramMock, LoggedFrame, NET_0001,
};
pub use speech_elevenlabs_mock::{ElevenLabsConnection, ElevenLabsFrame, ElevenLabsMock};
pub use speech_openai_mock::{
    OPENAI_PCM_RATE, SpeechOpenAiMock, SpeechRequest, SttAnswer, TtsAnswer,
};
pub use workflow_stand_ins::{OrderService, StageScript, judge_requests, stage_requests};

/// Install the TLS crypto provider reqwest needs (ring). Idempotent.
pub fn init_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
