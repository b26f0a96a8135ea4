//! Running conversation tests (R-BX-10): one test is a test-mode session
//! of its assistant or workflow, driven turn by turn like a user would
//! (an open askUser question is answered with the next turn), then
//! judged: tool calls, variables and end reason by `rtc_core::test_rules`,
//! the success criterion by the small model. Runs are stored. Runs wait
//! for a slot of the fair gate (`RuntimeConfig::tests`): a bounded number
//! at once, fewer per workspace, served in turn across workspaces, and a
//! workspace with too many runs admitted is refused (`too_many_test_runs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rtc_core::llm::{ChatMessage, OutputFormat};
use rtc_core::test_rules::{Observed, judge_expectations};
use rtc_core::time::rfc3339_from_millis;
use rtc_protocol::{
    AnswerParams, AnswerValue, Answers, Assistant, ConversationTest, CreateSessionParams,
    EventBody, ExpectationKind, ExpectationResult, Message, MessageRole, ObservedToolCall,
    SessionStatus, TestRun, TestRunStatus,
};
use rtc_store::{ResourceKind, TestTarget, new_id, now_millis};
use serde_json::{Value, json};

use crate::session::SessionConfig;
use crate::small_model::SmallModel;
use crate::{Runtime, RuntimeError};

/// Runs kept per test.
pub const RUNS_KEPT: usize = 50;
/// The end reason of a test session still open when its run is done.
const FINISHED: &str = "test run finished";
/// Events read per page when the run collects its tool calls.
const EVENT_PAGE: i64 = 500;
/// Longest transcript the judge reads, in characters (the end is kept).
const JUDGE_TRANSCRIPT_CHARS: usize = 60_000;

/// What the drive of a run leaves behind, even when it is cut off.
#[derive(Default)]
struct Drive {
    session: Option<String>,
    turns_sent: usize,
}

/// A run of `test` with nothing observed yet: status `error`, no error
/// text, started at `started_at` (ms).
pub(crate) fn errored_run(
    test: &ConversationTest,
    target: TestTarget<'_>,
    started_at: i64,
) -> TestRun {
    TestRun {
        id: new_id("trun"),
        test_id: test.id.clone().unwrap_or_default(),
        test_name: test.name.clone(),
        assistant_id: (target.kind == ResourceKind::Assistant).then(|| target.id.to_owned()),
        workflow_id: (target.kind == ResourceKind::Workflow).then(|| target.id.to_owned()),
        status: TestRunStatus::Error,
        error: None,
        session_id: None,
        expectations: Vec::new(),
        transcript: Vec::new(),
        tool_calls: Vec::new(),
        variables: Default::default(),
        end_reason: None,
        turns_sent: 0,
        started_at: rfc3339_from_millis(started_at),
        duration_ms: 0,
    }
}

impl Runtime {
    /// Admit up to `n` runs of `workspace` (at least one), or refuse
    /// (429 `too_many_test_runs`) when it has no room for one more.
    pub(crate) fn admit_test_runs(
        &self,
        workspace: &str,
        n: usize,
    ) -> Result<Vec<crate::fair_gate::Ticket>, RuntimeError> {
        self.inner.test_slots.admit_up_to(workspace, n).map_err(|r| {
            RuntimeError::TooMany {
                code: "too_many_test_runs",
                message: format!(
                    "the workspace has {} test runs queued or running and may have at most {} (RTC_MAX_TEST_RUNS_PER_WORKSPACE); wait for some to finish",
                    r.admitted, r.max
                ),
            }
        })
    }

    /// Run an admitted test in its own task, which goes on when the
    /// caller goes away; the ticket comes back for the suite's next test
    /// (none when the task failed).
    pub(crate) async fn run_admitted(
        &self,
        workspace: &str,
        target: TestTarget<'_>,
        test: &ConversationTest,
        ticket: crate::fair_gate::Ticket,
    ) -> (
        Result<TestRun, RuntimeError>,
        Option<crate::fair_gate::Ticket>,
    ) {
        let rt = self.clone();
        let (workspace, kind, id) = (workspace.to_owned(), target.kind, target.id.to_owned());
        let test = test.clone();
        let ran = tokio::spawn(async move {
            let slot = ticket.wait().await;
            let target = TestTarget { kind, id: &id };
            let run = rt.run_test_to_end(&workspace, target, &test).await;
            (run, slot.into_ticket())
        })
        .await;
        match ran {
            Ok((run, ticket)) => (run, Some(ticket)),
            Err(e) => (
                Err(RuntimeError::Internal(format!("a test run failed: {e}"))),
                None,
            ),
        }
    }

    async fn run_test_to_end(
        &self,
        workspace: &str,
        target: TestTarget<'_>,
        test: &ConversationTest,
    ) -> Result<TestRun, RuntimeError> {
        let started_at = now_millis();
        let clock = Instant::now();
        let mut drive = Drive::default();
        let limit = Duration::from_secs(u64::from(test.timeout_seconds));
        let mut error =
            match tokio::time::timeout(limit, self.drive_test(workspace, target, test, &mut drive))
                .await
            {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(_) => Some(format!(
                    "the run took longer than its {} s (timeoutSeconds)",
                    test.timeout_seconds
                )),
            };
        let mut run = errored_run(test, target, started_at);
        run.session_id = drive.session.clone();
        run.turns_sent = drive.turns_sent;
        if let Some(session) = &drive.session {
            let (config, failed_calls) = self.observe(workspace, session, &mut run).await?;
            // A model call that failed is no pass, whatever was expected.
            if error.is_none()
                && let Some(why) = failed_calls.first()
            {
                error = Some(format!("a model call failed during the run: {why}"));
            }
            let seen = Observed {
                tool_calls: &run.tool_calls,
                variables: &run.variables,
                end_reason: run.end_reason.as_deref(),
            };
            run.expectations = judge_expectations(&test.expect, &seen);
            if error.is_none()
                && let Some(criterion) = &test.expect.success_criterion
            {
                let (verdict, failure) = self
                    .judge_criterion(&config.assistant, criterion, &run)
                    .await;
                run.expectations.push(verdict);
                error = failure;
            }
        }
        run.status = match &error {
            Some(_) => TestRunStatus::Error,
            None if run.expectations.iter().all(|e| e.passed) => TestRunStatus::Passed,
            None => TestRunStatus::Failed,
        };
        run.error = error;
        run.duration_ms = u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.inner
            .store
            .insert_test_run(workspace, &run, RUNS_KEPT)
            .await?;
        Ok(run)
    }

    /// Open the test-mode session and send the turns, each once the
    /// session has settled after the one before.
    async fn drive_test(
        &self,
        workspace: &str,
        target: TestTarget<'_>,
        test: &ConversationTest,
        drive: &mut Drive,
    ) -> Result<(), RuntimeError> {
        let (assistant_id, workflow_id) = match target.kind {
            ResourceKind::Workflow => (None, Some(target.id.to_owned())),
            _ => (Some(target.id.to_owned()), None),
        };
        let params = CreateSessionParams {
            assistant_id,
            workflow_id,
            user_id: test.user_id.clone(),
            dynamic_variables: test.variables.clone(),
            test_mode: true,
            scripted_results: test.tool_responses.clone(),
        };
        let id = self.create_session(workspace, params).await?.id;
        drive.session = Some(id.clone());
        self.settle(workspace, &id).await?;
        for turn in &test.turns {
            if self.session(workspace, &id).await?.status == SessionStatus::Ended {
                break;
            }
            match self.pending_question(workspace, &id).await? {
                Some(q) => {
                    let answers = vec![AnswerValue::One(turn.clone()); q.questions.len().max(1)];
                    let params = AnswerParams {
                        call_id: Some(q.call_id),
                        answers: Answers::InOrder(answers),
                    };
                    self.answer(workspace, &id, params).await?;
                }
                None => {
                    self.send_user_message(workspace, &id, turn).await?;
                }
            }
            drive.turns_sent += 1;
            self.settle(workspace, &id).await?;
        }
        Ok(())
    }

    /// Wait until no turn runs and none is about to (a goal's or an inbox
    /// item's turn starts inside the turn before it ends).
    async fn settle(&self, workspace: &str, id: &str) -> Result<(), RuntimeError> {
        let ctx = self.inner.session_in(workspace, id).await?;
        loop {
            ctx.wait_turn().await;
            self.inner.journal.flush().await;
            let pending = ctx
                .user_turns_pending
                .load(std::sync::atomic::Ordering::SeqCst);
            if ctx.turn.lock().await.is_none() && pending == 0 {
                return Ok(());
            }
        }
    }

    /// Fill what the run saw; end a session still open. The session's
    /// configuration is kept for the judge (the context goes with the end).
    async fn observe(
        &self,
        workspace: &str,
        id: &str,
        run: &mut TestRun,
    ) -> Result<(Arc<SessionConfig>, Vec<String>), RuntimeError> {
        let config = self.inner.session_in(workspace, id).await?.config.clone();
        let record = self.session(workspace, id).await?;
        run.variables = record.variables;
        run.end_reason = record.end_reason;
        run.transcript = self.messages(workspace, id).await?;
        let (calls, failures) = self.observed_calls(id).await?;
        run.tool_calls = calls;
        if record.status != SessionStatus::Ended {
            // The run is over: the session must not count as active.
            self.end(workspace, id, Some(FINISHED.to_owned())).await?;
        }
        Ok((config, failures))
    }

    /// Every tool call of the session with what the model was shown, and
    /// the model calls that failed (their error events).
    async fn observed_calls(
        &self,
        id: &str,
    ) -> Result<(Vec<ObservedToolCall>, Vec<String>), RuntimeError> {
        let mut calls: Vec<(String, ObservedToolCall)> = Vec::new();
        let mut failures = Vec::new();
        let mut after = 0;
        loop {
            let page = self.inner.store.events_after(id, after, EVENT_PAGE).await?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            for ev in page {
                match ev.body {
                    EventBody::ToolCalled(c) => calls.push((
                        c.call_id,
                        ObservedToolCall {
                            name: c.name,
                            arguments: serde_json::from_str(&c.arguments)
                                .unwrap_or(Value::String(c.arguments)),
                            result: None,
                            is_error: false,
                        },
                    )),
                    EventBody::ToolCompleted(done) => {
                        if let Some((_, call)) =
                            calls.iter_mut().find(|(id, _)| *id == done.call_id)
                        {
                            call.result = done.result;
                            call.is_error = done.is_error;
                        }
                    }
                    EventBody::Error(e) if MODEL_FAILURES.contains(&e.code.as_str()) => {
                        failures.push(format!("{}: {}", e.code, e.message));
                    }
                    _ => {}
                }
            }
        }
        Ok((calls.into_iter().map(|(_, c)| c).collect(), failures))
    }

    /// The small model's verdict on the success criterion, and the run's
    /// error when it could not give one.
    async fn judge_criterion(
        &self,
        assistant: &Assistant,
        criterion: &str,
        run: &TestRun,
    ) -> (ExpectationResult, Option<String>) {
        let model = SmallModel::for_assistant(&self.inner.settings, assistant);
        let system = "You judge whether a conversation between a user and an AI assistant meets a success criterion. Tool calls and their results are shown. Answer only a JSON object {\"pass\": true or false, \"reason\": \"one sentence\"}.";
        let user = format!(
            "Success criterion: {criterion}\n\nConversation:\n{}",
            transcript_text(&run.transcript)
        );
        let messages = vec![
            ChatMessage::System {
                content: system.to_owned(),
            },
            ChatMessage::User { content: user },
        ];
        // A strict schema, as the workflow judge asks; the answer is still
        // read leniently (small models answer equivalent shapes).
        let output = OutputFormat::JsonSchema {
            name: "test_verdict".to_owned(),
            schema: json!({"type": "object", "additionalProperties": false,
                "properties": {"pass": {"type": "boolean"}, "reason": {"type": "string"}},
                "required": ["pass", "reason"]}),
        };
        let answer = match model.complete(messages, output).await {
            Ok(a) => a,
            Err(e) => {
                let why = format!("the judge (small model) failed: {e}");
                return (criterion_result(criterion, false, why.clone()), Some(why));
            }
        };
        let parsed = verdict_json(&answer);
        match verdict(&parsed) {
            Some(pass) => {
                let reason = ["reason", "explanation", "rationale"]
                    .iter()
                    .find_map(|k| parsed.get(*k).and_then(Value::as_str))
                    .unwrap_or("no reason given");
                (criterion_result(criterion, pass, reason.to_owned()), None)
            }
            None => {
                let why = format!("the judge did not answer {{\"pass\": …}}: {answer:.200}");
                (criterion_result(criterion, false, why.clone()), Some(why))
            }
        }
    }
}

/// The JSON object of a judge's answer, also when fenced in ``` or
/// surrounded by words.
fn verdict_json(answer: &str) -> Value {
    let trimmed = answer.trim();
    if let Ok(v) = serde_json::from_str::<Value>(trimmed) {
        return v;
    }
    match (trimmed.find('{'), trimmed.rfind('}')) {
        (Some(a), Some(b)) if a < b => serde_json::from_str(&trimmed[a..=b]).unwrap_or(json!({})),
        _ => json!({}),
    }
}

/// Pass or fail in the shapes small models give: `pass`, `passed`,
/// `success` or `met` as a boolean (or "true"/"false"), or `verdict` /
/// `result` as "pass"/"fail".
fn verdict(v: &Value) -> Option<bool> {
    let flag = |x: &Value| match x {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "pass" | "passed" | "yes" => Some(true),
            "false" | "fail" | "failed" | "no" => Some(false),
            _ => None,
        },
        _ => None,
    };
    ["pass", "passed", "success", "met", "verdict", "result"]
        .iter()
        .find_map(|k| v.get(*k).and_then(flag))
}

fn criterion_result(criterion: &str, passed: bool, detail: String) -> ExpectationResult {
    ExpectationResult {
        kind: ExpectationKind::SuccessCriterion,
        subject: criterion.to_owned(),
        passed,
        detail,
    }
}

/// The error events that say a model call failed (a run with one is an
/// error, never a pass).
const MODEL_FAILURES: &[&str] = &[
    "llm_failed",
    "stream_cut",
    "context_length_exceeded",
    "token_quota_exceeded",
    "content_filter",
];

/// The transcript as the judge reads it: one line per message.
fn transcript_text(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        let who = match m.role {
            MessageRole::User => "User".to_owned(),
            MessageRole::Assistant => "Assistant".to_owned(),
            MessageRole::HumanAgent => "Human agent".to_owned(),
            MessageRole::Tool => format!("Tool result ({})", m.name.as_deref().unwrap_or("tool")),
        };
        for call in &m.tool_calls {
            out.push_str(&format!(
                "Assistant calls {}({})\n",
                call.name, call.arguments
            ));
        }
        if !m.content.is_empty() {
            out.push_str(&format!("{who}: {}\n", m.content));
        }
    }
    let chars = out.chars().count();
    if chars > JUDGE_TRANSCRIPT_CHARS {
        out = out.chars().skip(chars - JUDGE_TRANSCRIPT_CHARS).collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_in_the_shapes_small_models_give() {
        for (answer, expected) in [
            (r#"{"pass": true, "reason": "ok"}"#, Some(true)),
            (r#"{"passed": false}"#, Some(false)),
            (r#"{"verdict": "PASS"}"#, Some(true)),
            (r#"{"result": "fail"}"#, Some(false)),
            (r#"{"success": "true"}"#, Some(true)),
            ("```json\n{\"pass\": true}\n```", Some(true)),
            (
                r#"Verdict: {"pass": false, "reason": "no"} done"#,
                Some(false),
            ),
            (r#"{"score": 3}"#, None),
            ("yes", None),
        ] {
            assert_eq!(verdict(&verdict_json(answer)), expected, "{answer}");
        }
    }
}
