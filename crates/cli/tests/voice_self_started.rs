//! Turns the server starts by itself in a voice session wait while the
//! user speaks (design `voice-pipeline.md` §4(f), "Goals, loops,
//! sub-agent reports"): a goal's continuation or a loop tick that comes
//! due between `speech.started` and the end of that utterance starts no
//! turn; the user's words are answered first and the held work follows,
//! spoken. After an utterance with no words (a cough), the held goal
//! continuation, or a sub-agent's report that arrived meanwhile, starts at
//! once. The user "speaks" for as long as the test wants: the first part
//! of an utterance is sent, the test waits for the self-started work to
//! come due, then sends the rest.

use std::time::Duration;

use rtc_testkit::{Engine, MockLlm, MockReply, SpeechOpenAiMock, pilot_map};
use serde_json::{Value, json};

use crate::conversation::server;
use crate::harness::{Server, both};
use crate::realtime_support::Host;
use crate::voice::{OPENAI_KEY, openai_interfaces, voice_assistant, voice_host};
use crate::voice_audio::{speak, utterance};

/// What the user says over pilot 2700.
const WORDS: &str = "add the march figures too";
const WORDS_PILOT: u32 = 2700;
/// A pilot the STT mock maps to nothing: an utterance without words.
const NO_WORDS_PILOT: u32 = 3100;

struct Stage {
    _srv: Server,
    _llm: MockLlm,
    _speech: SpeechOpenAiMock,
    host: Host,
}

/// A voice session of an assistant with `features` on `llm`, its host
/// attached and ready.
async fn stage(engine: Engine, llm: MockLlm, features: Value) -> anyhow::Result<Option<Stage>> {
    let Some(srv) = server(engine, &llm).await? else {
        return Ok(None);
    };
    let speech =
        SpeechOpenAiMock::start(Some(OPENAI_KEY), pilot_map([(WORDS_PILOT, WORDS)])).await?;
    let (_, ws) = srv.workspace("A").await?;
    openai_interfaces(&ws, &speech.base_url).await?;
    let id = voice_assistant(&ws, json!({ "features": features })).await?;
    let (_, mut host) = voice_host(&srv, &ws, &id, json!({}), (16_000, 16_000)).await?;
    host.until_type("session.speech_ready").await?;
    Ok(Some(Stage {
        _srv: srv,
        _llm: llm,
        _speech: speech,
        host,
    }))
}

fn judge(satisfied: bool) -> MockReply {
    MockReply::text(&json!({"satisfied": satisfied, "reason": "judged"}).to_string())
}

/// The replies of a goal created by the first turn and judged (late,
/// while the user speaks) after it, then `then`.
fn goal_replies(then: impl IntoIterator<Item = MockReply>) -> Vec<MockReply> {
    let mut replies = vec![
        MockReply::call(
            "createGoal",
            json!({"condition": "the report is drafted", "max_turns": 3}),
        ),
        MockReply::text("On it."),
        MockReply::Delayed(Duration::from_millis(2_000), Box::new(judge(false))),
    ];
    replies.extend(then);
    replies
}

/// The typed turn `text` is answered; once its answer has played the user
/// speaks over `pilot` and goes on until a frame satisfying `due` (the
/// self-started work came due), then ends the utterance. Returns where
/// `speech.started` is among the frames seen.
async fn speak_through(
    host: &mut Host,
    text: &str,
    pilot: u32,
    due: impl Fn(&Value) -> bool,
) -> anyhow::Result<usize> {
    let pcm = utterance(
        "Please add the March figures to the report as well.",
        16_000,
        pilot,
    )
    .await?;
    // Whole 100 ms frames, about half of the speech.
    let half = (pcm.len() / 2) / 3_200 * 3_200;
    host.send(json!({"type": "user.message", "text": text}))
        .await?;
    host.until_type("turn.completed").await?;
    host.drain(Duration::from_millis(600)).await?;
    speak(host, &pcm[..half], 16_000).await?;
    host.until_type("speech.started").await?;
    let spoke_at = host.seen.len() - 1;
    host.until(Duration::from_secs(20), due).await?;
    // Whatever would start now has had time to.
    host.drain(Duration::from_millis(500)).await?;
    speak(host, &pcm[half..], 16_000).await?;
    Ok(spoke_at)
}

/// Read until a frame satisfying `pred`; where it is among those seen.
async fn seen_at(host: &mut Host, pred: impl Fn(&Value) -> bool) -> anyhow::Result<usize> {
    host.until(Duration::from_secs(20), pred).await?;
    Ok(host.seen.len() - 1)
}

/// How many turns started after the frame at `from`.
fn turns_started(host: &Host, from: usize) -> usize {
    host.seen[from..]
        .iter()
        .filter(|v| v["type"] == "turn.started")
        .count()
}

/// No turn started between the frames at `from` and `to`.
fn no_turn_between(host: &Host, from: usize, to: usize) {
    assert_eq!(
        turns_started(host, from) - turns_started(host, to),
        0,
        "a turn started while the user spoke"
    );
}

/// The user's words became their message; where it is.
async fn words_heard(host: &mut Host) -> anyhow::Result<usize> {
    let at = seen_at(host, |v| {
        v["type"] == "message.completed" && v["role"] == "user" && v["source"] == "audio"
    })
    .await?;
    assert_eq!(host.seen[at]["content"], WORDS);
    Ok(at)
}

/// The next input the runtime gave itself (a frame satisfying `input`,
/// containing `says`), and the assistant's answer to it: its text, once
/// its audio was sent.
async fn spoken_after_input(
    host: &mut Host,
    input: impl Fn(&Value) -> bool,
    says: &str,
) -> anyhow::Result<String> {
    let at = seen_at(host, input).await?;
    let content = host.seen[at]["content"].as_str().unwrap_or_default();
    assert!(content.contains(says), "{content}");
    spoken_answer(host).await
}

/// The next assistant answer: its text, once its audio was sent.
async fn spoken_answer(host: &mut Host) -> anyhow::Result<String> {
    let at = seen_at(host, |v| {
        v["type"] == "message.completed" && v["role"] == "assistant" && v["itemId"].is_string()
    })
    .await?;
    let answer = &host.seen[at];
    let item = answer["itemId"].as_str().unwrap_or_default();
    assert!(
        host.audio_ms(Some(item)) > 0,
        "its audio was sent: {answer}"
    );
    Ok(answer["content"].as_str().unwrap_or_default().to_owned())
}

fn goal_input(v: &Value) -> bool {
    v["type"] == "message.completed" && v["goalId"].is_string()
}

/// The goal was judged once, still active: its continuation is due.
fn goal_due(v: &Value) -> bool {
    v["type"] == "goal.updated"
        && v["goal"]["status"] == "active"
        && v["goal"]["completedTurns"] == 1
}

/// (a) A goal's continuation due while the user speaks (its judge answers
/// meanwhile) waits: the user's words are answered first, then the
/// continuation runs and is spoken.
async fn goal_waits_for_the_user(engine: Engine) -> anyhow::Result<()> {
    let replies = goal_replies([
        MockReply::text("Noted, March too."),
        judge(false),
        MockReply::text("Here is the draft with March."),
        judge(true),
    ]);
    let llm = MockLlm::start(replies).await?;
    let Some(mut st) = stage(engine, llm, json!({"goals": true})).await? else {
        return Ok(());
    };
    let host = &mut st.host;
    let spoke_at = speak_through(host, "Draft the report.", WORDS_PILOT, goal_due).await?;
    let heard_at = words_heard(host).await?;
    no_turn_between(host, spoke_at, heard_at);

    // The user's turn first, then the goal's continuation, both spoken.
    assert_eq!(spoken_answer(host).await?, "Noted, March too.");
    let continued = spoken_after_input(host, goal_input, "the report is drafted").await?;
    assert_eq!(continued, "Here is the draft with March.");
    assert_eq!(turns_started(host, heard_at), 2, "the user's, the goal's");
    Ok(())
}

/// (a) A loop tick due while the user speaks is skipped like a tick
/// during a running turn, not run: the user's words are answered, and a
/// later tick runs and is spoken.
async fn loop_tick_waits_for_the_user(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::start(vec![
        MockReply::call(
            "createLoop",
            json!({"prompt": "check the build", "interval_seconds": 2, "max_turns": 1}),
        ),
        MockReply::text("Watching."),
        MockReply::text("Noted, March too."),
        MockReply::text("The build is green."),
    ])
    .await?;
    let Some(mut st) = stage(engine, llm, json!({"loops": true})).await? else {
        return Ok(());
    };
    let host = &mut st.host;
    let skipped = |v: &Value| {
        v["type"] == "loop.updated" && v["loop"]["skippedTicks"] == 1 && v["loop"]["turnsDone"] == 0
    };
    let spoke_at = speak_through(host, "Watch the build.", WORDS_PILOT, skipped).await?;
    let heard_at = words_heard(host).await?;
    no_turn_between(host, spoke_at, heard_at);

    assert_eq!(spoken_answer(host).await?, "Noted, March too.");
    let tick = |v: &Value| v["type"] == "message.completed" && v["loopId"].is_string();
    let ticked = spoken_after_input(host, tick, "check the build").await?;
    assert_eq!(ticked, "The build is green.");
    assert_eq!(turns_started(host, heard_at), 2, "the user's, the tick's");
    Ok(())
}

/// The sound without words that began at `spoke_at` ended; where. No
/// turn started while it lasted.
async fn sound_ended(host: &mut Host, spoke_at: usize) -> anyhow::Result<usize> {
    let stopped_at = seen_at(host, |v| v["type"] == "speech.stopped").await?;
    no_turn_between(host, spoke_at, stopped_at);
    Ok(stopped_at)
}

/// Since the sound ended at `stopped_at`, one turn started (the held
/// work's), and no user message was made of it.
fn only_the_held_turn(host: &Host, stopped_at: usize) {
    assert_eq!(turns_started(host, stopped_at), 1);
    assert!(
        !host.seen.iter().any(|v| v["type"] == "message.completed"
            && v["source"] == "audio"
            && v["role"] == "user"),
        "no words, no user message"
    );
}

/// (b) An utterance with no words during which a goal's continuation came
/// due: no turn while it lasts, and the continuation starts right after
/// it, spoken.
async fn held_goal_starts_after_a_cough(engine: Engine) -> anyhow::Result<()> {
    let replies = goal_replies([MockReply::text("Here is the draft."), judge(true)]);
    let llm = MockLlm::start(replies).await?;
    let Some(mut st) = stage(engine, llm, json!({"goals": true})).await? else {
        return Ok(());
    };
    let host = &mut st.host;
    let spoke_at = speak_through(host, "Draft the report.", NO_WORDS_PILOT, goal_due).await?;
    let stopped_at = sound_ended(host, spoke_at).await?;
    let continued = spoken_after_input(host, goal_input, "the report is drafted").await?;
    assert_eq!(continued, "Here is the draft.");
    only_the_held_turn(host, stopped_at);
    Ok(())
}

/// (b) A sub-agent's report that arrives while the user makes a sound
/// without words is delivered right after it, and its turn is spoken.
async fn report_waits_for_a_cough(engine: Engine) -> anyhow::Result<()> {
    let llm = MockLlm::with_recorded_responder(|req| {
        let msgs = req["messages"].as_array().cloned().unwrap_or_default();
        let task = msgs
            .get(1)
            .and_then(|m| m["content"].as_str())
            .is_some_and(|c| c.starts_with("[Task from your parent agent"));
        let answers = msgs.iter().filter(|m| m["role"] == "assistant").count();
        match (task, answers) {
            // The sub-agent reports while the user makes a sound.
            (true, _) => MockReply::Delayed(
                Duration::from_millis(2_500),
                Box::new(MockReply::text("Nine to five.")),
            ),
            (false, 0) => MockReply::call(
                "subAgent",
                json!({"title": "Helper", "instruction": "Find the opening hours.", "mode": "async"}),
            ),
            (false, 1) => MockReply::text("Asked a helper."),
            (false, _) => MockReply::text("The helper says nine to five."),
        }
    })
    .await?;
    let Some(mut st) = stage(engine, llm, json!({"subAgents": true})).await? else {
        return Ok(());
    };
    let host = &mut st.host;
    let reported = |v: &Value| v["type"] == "subagent.completed";
    let spoke_at = speak_through(host, "When are they open?", NO_WORDS_PILOT, reported).await?;
    let stopped_at = sound_ended(host, spoke_at).await?;
    let report = |v: &Value| v["type"] == "message.completed" && v["fromSessionId"].is_string();
    let answered = spoken_after_input(host, report, "Nine to five.").await?;
    assert_eq!(answered, "The helper says nine to five.");
    only_the_held_turn(host, stopped_at);
    Ok(())
}

both!(goal_waits_for_the_user);
both!(loop_tick_waits_for_the_user);
both!(held_goal_starts_after_a_cough);
both!(report_waits_for_a_cough);
