//! Runs of conversation tests answered at once (R-BX-10): a run of all of
//! a target's tests, or of one, is admitted (as many of its tests as the
//! workspace's bound leaves room for, at least one; a longer suite runs
//! its tests one after another through the tickets it got), stored as
//! `running` and answered with its id; its tests run in a task of their
//! own, each finished run written as it lands, with a heartbeat so a
//! reader can tell a run whose server stopped (`abandoned`). Callers read
//! the run until its status is no longer `running`.

use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use rtc_core::time::rfc3339_from_millis;
use rtc_protocol::{ConversationTest, TestRun, TestSuiteRun, TestSuiteStatus};
use rtc_store::{TestTarget, new_id, now_millis};

use crate::fair_gate::Ticket;
use crate::{Runtime, RuntimeError};

/// Runs of tests kept per assistant or workflow.
pub const SUITE_RUNS_KEPT: usize = 50;
/// How often a running run says it is alive (well inside
/// `rtc_store::ABANDONED_AFTER_MS`).
const HEARTBEAT: Duration = Duration::from_secs(5);

impl Runtime {
    /// Admit and start a run of `tests` of `target`; answers the stored
    /// run at once (429 `too_many_test_runs` when the workspace has no
    /// room for one more run). An empty list is a finished run.
    pub async fn start_test_run(
        &self,
        workspace: &str,
        target: TestTarget<'_>,
        tests: Vec<ConversationTest>,
    ) -> Result<TestSuiteRun, RuntimeError> {
        let tickets = self.admit_test_runs(workspace, tests.len())?;
        let now = rfc3339_from_millis(now_millis());
        let suite = TestSuiteRun {
            id: new_id("tsrun"),
            status: if tests.is_empty() {
                TestSuiteStatus::Finished
            } else {
                TestSuiteStatus::Running
            },
            total: tests.len(),
            passed: 0,
            failed: 0,
            errors: 0,
            runs: Vec::new(),
            finished_at: tests.is_empty().then(|| now.clone()),
            started_at: now,
        };
        self.inner
            .store
            .insert_suite_run(workspace, target, &suite, SUITE_RUNS_KEPT)
            .await?;
        if !tests.is_empty() {
            let rt = self.clone();
            let (workspace, kind, id) = (workspace.to_owned(), target.kind, target.id.to_owned());
            let running = suite.clone();
            // Supervised: shutdown stops a suite still running (its runs
            // are recorded as they finish).
            self.inner.background.spawn(async move {
                rt.drive_suite(
                    &workspace,
                    TestTarget { kind, id: &id },
                    tests,
                    tickets,
                    running,
                )
                .await;
            });
        }
        Ok(suite)
    }

    /// Run the admitted tests, writing each finished run as it lands and
    /// beating the run's heart while any is queued or running.
    async fn drive_suite(
        &self,
        workspace: &str,
        target: TestTarget<'_>,
        tests: Vec<ConversationTest>,
        tickets: Vec<Ticket>,
        mut suite: TestSuiteRun,
    ) {
        // As many tests run (or wait for a slot) at once as there are
        // tickets; each finished test hands its ticket to the next.
        let mut queue = 0..tests.len();
        let all = &tests;
        let run = |i: usize, ticket: Ticket| async move {
            let (result, ticket) = self.run_admitted(workspace, target, &all[i], ticket).await;
            (i, result, ticket)
        };
        let mut pending = FuturesUnordered::new();
        for ticket in tickets {
            if let Some(i) = queue.next() {
                pending.push(run(i, ticket));
            }
        }
        let mut finished: Vec<Option<TestRun>> = vec![None; tests.len()];
        let mut heartbeat = tokio::time::interval(HEARTBEAT);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        heartbeat.tick().await;
        loop {
            tokio::select! {
                next = pending.next() => {
                    let Some((i, result, ticket)) = next else { break };
                    finished[i] = Some(result.unwrap_or_else(|e| failed_run(&tests[i], target, &e)));
                    if let Some(ticket) = ticket
                        && let Some(j) = queue.next()
                    {
                        pending.push(run(j, ticket));
                    }
                    suite.runs = finished.iter().flatten().cloned().collect();
                    suite.recount();
                    self.write_suite(workspace, &suite).await;
                }
                _ = heartbeat.tick() => {
                    if let Err(e) = self.inner.store.beat_suite_run(workspace, &suite.id).await {
                        tracing::warn!(run = %suite.id, error = %e, "a test run's heartbeat was not stored");
                    }
                }
            }
        }
        // Tests no ticket was left for (their runs' tasks failed).
        for i in queue {
            let e = RuntimeError::Internal("no slot was left to run it".into());
            finished[i] = Some(failed_run(&tests[i], target, &e));
        }
        suite.runs = finished.iter().flatten().cloned().collect();
        suite.recount();
        suite.status = TestSuiteStatus::Finished;
        suite.finished_at = Some(rfc3339_from_millis(now_millis()));
        self.write_suite(workspace, &suite).await;
    }

    async fn write_suite(&self, workspace: &str, suite: &TestSuiteRun) {
        if let Err(e) = self.inner.store.update_suite_run(workspace, suite).await {
            tracing::warn!(run = %suite.id, error = %e, "a test run's progress was not stored");
        }
    }
}

/// The run of a test that could not be run to its end (the store failed
/// under it): an `error` naming why.
fn failed_run(test: &ConversationTest, target: TestTarget<'_>, e: &RuntimeError) -> TestRun {
    let mut run = crate::conversation_tests::errored_run(test, target, now_millis());
    run.error = Some(format!("the run could not finish: {e}"));
    run
}
