//! End-to-end tests: the real `rtc-agent` binary, driven over HTTP, on
//! SQLite and on PostgreSQL.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod harness;

mod assistants;
mod auth;
mod builtins;
mod chat;
mod connections;
mod console;
mod console_builders;
mod console_first_hour;
mod console_realtime;
mod console_speech;
mod console_testing;
mod console_voice;
mod contract;
mod conversation;
mod crash_safety;
mod doctor;
mod errors;
mod goals;
mod hardening;
mod instances;
mod instances_work;
mod interaction;
mod isolation;
mod loops;
mod mcp;
mod memory;
mod migration;
mod operations;
mod otel;
mod outbound;
mod providers;
mod quotas;
mod realtime;
mod realtime_barge;
mod realtime_sessions;
mod realtime_support;
mod sdk_js;
mod secrets;
mod shutdown;
mod speech_interfaces;
mod subagents;
mod task_backends;
mod tasks_opencode;
mod tasks_reasoner;
mod tasks_support;
mod test_mode;
mod tool_trial;
mod tools;
mod usage;
mod voice;
mod voice_ask;
mod voice_audio;
mod voice_deepgram;
mod voice_end;
mod voice_handoff;
mod voice_providers;
mod voice_tools;
mod voice_turns;
mod web;
mod workflow_sessions;
mod workflows;
