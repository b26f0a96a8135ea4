//! What must hold after every restart, as pure checks over what the API
//! (and, for loop ticks, the store) shows. Each returns the problems it
//! found, in words.

use std::collections::BTreeMap;

use rtc_core::time::rfc3339_from_millis;
use rtc_store::TickRow;
use serde_json::Value;

/// One session the campaign opened, and what it was told.
#[derive(Debug, Default)]
pub struct Tracked {
    pub id: String,
    /// User messages answered 2xx.
    pub acked: Vec<String>,
    /// User messages in flight when the server was killed (no answer).
    pub unacked: Vec<String>,
    /// The loop of this session, if it is the loop session.
    pub loop_id: Option<String>,
}

/// (a) Every acknowledged user message is in the history exactly once,
/// one in flight at the kill at most once, and no user message twice.
pub fn history(s: &Tracked, messages: &[Value]) -> Vec<String> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for m in messages {
        if m["role"] == "user" && m["name"].is_null() {
            *seen.entry(m["content"].as_str().unwrap_or("")).or_default() += 1;
        }
    }
    let mut problems = Vec::new();
    for text in &s.acked {
        match seen.get(text.as_str()).copied().unwrap_or(0) {
            1 => {}
            0 => problems.push(format!(
                "acknowledged message `{text}` is missing from {}",
                s.id
            )),
            n => problems.push(format!(
                "acknowledged message `{text}` is {n} times in {}",
                s.id
            )),
        }
    }
    for (text, n) in &seen {
        if *n > 1 && !s.acked.iter().any(|a| a == text) {
            problems.push(format!("user message `{text}` is {n} times in {}", s.id));
        }
    }
    problems
}

/// (c) and (e): the session's events have `seq` 1..n, and turns never
/// overlap: each `turn.started` is followed by its `turn.completed` (or
/// recovery's, which names no turn) before the next one starts. A turn
/// may be open at the end only where `open_allowed` (the loop session,
/// whose ticks go on).
pub fn events(session: &str, events: &[Value], open_allowed: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let seqs: Vec<i64> = events
        .iter()
        .map(|e| e["seq"].as_i64().unwrap_or(-1))
        .collect();
    if let Some(at) = seqs
        .iter()
        .enumerate()
        .position(|(i, s)| *s != i as i64 + 1)
    {
        let around = &seqs[at.saturating_sub(2)..(at + 3).min(seqs.len())];
        problems.push(format!(
            "{session}: event seq {} where {} was due (around: {around:?})",
            seqs[at],
            at + 1
        ));
    }
    let mut open: Option<(String, i64)> = None;
    for e in events {
        let seq = e["seq"].as_i64().unwrap_or(-1);
        match e["type"].as_str() {
            Some("turn.started") => {
                let id = e["turnId"].as_str().unwrap_or("").to_owned();
                if let Some((other, at)) = &open {
                    problems.push(format!(
                        "{session}: turn {id} started at seq {seq} while turn {other} (seq {at}) was still running"
                    ));
                }
                open = Some((id, seq));
            }
            Some("turn.completed") => {
                let id = e["turnId"].as_str();
                match (&open, id) {
                    (None, _) => problems.push(format!(
                        "{session}: a turn.completed at seq {seq} with no turn running: {e}"
                    )),
                    (Some((running, _)), Some(id)) if running != id => problems.push(format!(
                        "{session}: turn {id} completed at seq {seq} while turn {running} was running"
                    )),
                    _ => {}
                }
                open = None;
            }
            _ => {}
        }
    }
    if let (Some((id, at)), false) = (&open, open_allowed) {
        problems.push(format!(
            "{session}: turn {id} (started at seq {at}) never completed"
        ));
    }
    problems
}

/// The loop inputs (`message.completed` with this `loopId`) of a
/// session's events: (timestamp, content).
pub fn loop_inputs<'a>(events: &'a [Value], loop_id: &str) -> Vec<(&'a str, &'a str)> {
    events
        .iter()
        .filter(|e| e["type"] == "message.completed" && e["loopId"] == loop_id)
        .map(|e| {
            (
                e["timestamp"].as_str().unwrap_or(""),
                e["content"].as_str().unwrap_or(""),
            )
        })
        .collect()
}

/// (d) No tick ran twice: the loop's ticks are numbered 1..n; each loop
/// input belongs to the last tick claimed before it, and no tick has two;
/// a tick recorded as ran has exactly one, a skipped one none; the turn
/// number an input names counts the ticks that ran before it; the loop's
/// `turnsDone` and `skippedTicks` count the recorded outcomes. `ticks`
/// and `listed` are one snapshot; `inputs` are those recorded before it.
pub fn ticks(
    loop_id: &str,
    ticks: &[TickRow],
    inputs: &[(&str, &str)],
    listed: &Value,
) -> Vec<String> {
    let mut problems = Vec::new();
    let seqs: Vec<i64> = ticks.iter().map(|t| t.seq).collect();
    if seqs != (1..=seqs.len() as i64).collect::<Vec<_>>() {
        problems.push(format!("{loop_id}: tick numbers {seqs:?} are not 1..n"));
    }
    let started: Vec<String> = ticks
        .iter()
        .map(|t| rfc3339_from_millis(t.started_at))
        .collect();
    let mut per_tick = vec![Vec::new(); ticks.len()];
    for (at, content) in inputs {
        match started.iter().rposition(|s| s.as_str() <= *at) {
            Some(i) => per_tick[i].push(*content),
            None => problems.push(format!(
                "{loop_id}: input `{content}` at {at} before any tick was claimed"
            )),
        }
    }
    let mut ran_before = 0;
    for (t, got) in ticks.iter().zip(&per_tick) {
        let want = match t.outcome.as_deref() {
            Some("ran") => Some(1),
            Some("skipped") => Some(0),
            _ => None,
        };
        if got.len() > 1 || want.is_some_and(|w| w != got.len()) {
            problems.push(format!(
                "{loop_id}: tick {} ({:?}) has {} inputs: {got:?}",
                t.seq,
                t.outcome,
                got.len()
            ));
        }
        if let Some(content) = got.first() {
            let prefix = format!("[Loop {loop_id}, turn {} of ", ran_before + 1);
            if !content.starts_with(&prefix) {
                problems.push(format!(
                    "{loop_id}: tick {} gave `{content}`, expected it to start with `{prefix}`",
                    t.seq
                ));
            }
        }
        if t.outcome.as_deref() == Some("ran") {
            ran_before += 1;
        }
    }
    let skipped = ticks
        .iter()
        .filter(|t| t.outcome.as_deref() == Some("skipped"))
        .count();
    if listed["turnsDone"].as_i64() != Some(ran_before) {
        problems.push(format!(
            "{loop_id}: turnsDone is {} but {ran_before} ticks ran",
            listed["turnsDone"]
        ));
    }
    if listed["skippedTicks"].as_i64() != Some(skipped as i64) {
        problems.push(format!(
            "{loop_id}: skippedTicks is {} but {skipped} ticks were skipped",
            listed["skippedTicks"]
        ));
    }
    problems
}
