//! Conversation tests (R-BX-10) of assistants and of workflows: CRUD under
//! `/v1/assistants/{id}/tests` and `/v1/workflows/{id}/tests`, a run of
//! one test or of all of them (in test mode, bounded by
//! `RTC_TEST_CONCURRENCY` across requests) answered at once and read at
//! `…/tests/runs/{runId}` until it ends, and the stored runs, newest
//! first. The two families share every handler body; `test_endpoints!`
//! writes their annotated entry points.

use std::collections::BTreeSet;

use axum::Json;
use axum::http::StatusCode;
use rtc_protocol::{
    Assistant, ConversationTest, ListResponse, TestRun, TestSuiteRun, TestSuiteStatus, Workflow,
};
use rtc_store::{ResourceKind, TestTarget};

use crate::{ApiError, ApiResult, AppState};

/// The variables a test of the target may set and expect: its declared
/// dynamic variables (a workflow's globals). 404 when the target is not
/// in the workspace.
async fn declared(
    s: &AppState,
    workspace: &str,
    target: TestTarget<'_>,
) -> ApiResult<BTreeSet<String>> {
    let variables = match target.kind {
        ResourceKind::Workflow => {
            let w = super::load::<Workflow>(s, workspace, target.id).await?;
            rtc_core::workflow_stage::base_assistant(&w).dynamic_variables
        }
        _ => {
            super::load::<Assistant>(s, workspace, target.id)
                .await?
                .dynamic_variables
        }
    };
    Ok(variables.into_iter().map(|v| v.name).collect())
}

async fn load_test(
    s: &AppState,
    workspace: &str,
    target: TestTarget<'_>,
    test_id: &str,
) -> ApiResult<ConversationTest> {
    declared(s, workspace, target).await?;
    s.store
        .test(workspace, target, test_id)
        .await?
        .ok_or_else(|| ApiError::not_found("test", test_id))
}

pub(crate) async fn list(
    s: &AppState,
    workspace: &str,
    target: TestTarget<'_>,
) -> ApiResult<Json<ListResponse<ConversationTest>>> {
    declared(s, workspace, target).await?;
    Ok(Json(ListResponse::new(
        s.store.tests(workspace, target).await?,
    )))
}

pub(crate) async fn create(
    s: &AppState,
    workspace: &str,
    target: TestTarget<'_>,
    test: ConversationTest,
) -> ApiResult<(StatusCode, Json<ConversationTest>)> {
    let vars = declared(s, workspace, target).await?;
    rtc_core::test_rules::validate_test(&test, &vars)?;
    let saved = s.store.insert_test(workspace, target, test).await?;
    Ok((StatusCode::CREATED, Json(saved)))
}

pub(crate) async fn read(
    s: &AppState,
    workspace: &str,
    target: TestTarget<'_>,
    test_id: &str,
) -> ApiResult<Json<ConversationTest>> {
    load_test(s, workspace, target, test_id).await.map(Json)
}

pub(crate) async fn replace(
    s: &AppState,
    workspace: &str,
    target: TestTarget<'_>,
    test_id: &str,
    test: ConversationTest,
) -> ApiResult<Json<ConversationTest>> {
    let vars = declared(s, workspace, target).await?;
    rtc_core::test_rules::validate_test(&test, &vars)?;
    s.store
        .update_test(workspace, target, test_id, test)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("test", test_id))
}

pub(crate) async fn remove(
    s: &AppState,
    workspace: &str,
    target: TestTarget<'_>,
    test_id: &str,
) -> ApiResult<StatusCode> {
    declared(s, workspace, target).await?;
    if s.store.delete_test(workspace, target, test_id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("test", test_id))
    }
}

pub(crate) async fn run(
    s: &AppState,
    workspace: &str,
    target: TestTarget<'_>,
    test_id: &str,
) -> ApiResult<(StatusCode, Json<TestSuiteRun>)> {
    let test = load_test(s, workspace, target, test_id).await?;
    started(
        s.runtime
            .start_test_run(workspace, target, vec![test])
            .await?,
    )
}

pub(crate) async fn run_all(
    s: &AppState,
    workspace: &str,
    target: TestTarget<'_>,
) -> ApiResult<(StatusCode, Json<TestSuiteRun>)> {
    declared(s, workspace, target).await?;
    let tests = s.store.tests(workspace, target).await?;
    started(s.runtime.start_test_run(workspace, target, tests).await?)
}

/// 202 while the run goes on, 200 when it had nothing to run.
fn started(run: TestSuiteRun) -> ApiResult<(StatusCode, Json<TestSuiteRun>)> {
    let status = if run.status == TestSuiteStatus::Running {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(run)))
}

pub(crate) async fn suite_runs(
    s: &AppState,
    workspace: &str,
    target: TestTarget<'_>,
) -> ApiResult<Json<ListResponse<TestSuiteRun>>> {
    declared(s, workspace, target).await?;
    let limit = i64::try_from(rtc_runtime::SUITE_RUNS_KEPT).unwrap_or(i64::MAX);
    Ok(Json(ListResponse::new(
        s.store.suite_runs(workspace, target, limit).await?,
    )))
}

pub(crate) async fn suite_run(
    s: &AppState,
    workspace: &str,
    target: TestTarget<'_>,
    run_id: &str,
) -> ApiResult<Json<TestSuiteRun>> {
    declared(s, workspace, target).await?;
    s.store
        .suite_run(workspace, target, run_id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("test run", run_id))
}

pub(crate) async fn runs(
    s: &AppState,
    workspace: &str,
    target: TestTarget<'_>,
    test_id: &str,
) -> ApiResult<Json<ListResponse<TestRun>>> {
    load_test(s, workspace, target, test_id).await?;
    let limit = i64::try_from(rtc_runtime::RUNS_KEPT).unwrap_or(i64::MAX);
    Ok(Json(ListResponse::new(
        s.store.test_runs(workspace, test_id, limit).await?,
    )))
}

pub(crate) async fn one_run(
    s: &AppState,
    workspace: &str,
    target: TestTarget<'_>,
    test_id: &str,
    run_id: &str,
) -> ApiResult<Json<TestRun>> {
    load_test(s, workspace, target, test_id).await?;
    s.store
        .test_run(workspace, test_id, run_id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("test run", run_id))
}

/// The annotated handlers and router of one family of tests.
macro_rules! test_endpoints {
    (
        $module:ident, $kind:expr, $tag:literal,
        tests: $tests:literal, test: $test:literal, run: $run:literal, run_all: $run_all:literal,
        runs: $runs:literal, one_run: $one_run:literal, suite_runs: $suite_runs:literal, suite_run: $suite_run:literal,
        ops: [$list_op:literal, $create_op:literal, $read_op:literal, $replace_op:literal,
              $remove_op:literal, $run_op:literal, $run_all_op:literal, $runs_op:literal, $one_run_op:literal,
              $suite_runs_op:literal, $suite_run_op:literal]
    ) => {
        pub mod $module {
            use axum::extract::State;
            use axum::http::StatusCode;
            use axum::routing::{get, post};
            use axum::{Json, Router};
            use rtc_protocol::{ConversationTest, ErrorResponse, ListResponse, TestRun, TestSuiteRun};
            use rtc_store::TestTarget;

            use crate::extract::{ApiJson, ApiPath, Scope};
            use crate::{ApiResult, AppState};

            fn target(id: &str) -> TestTarget<'_> {
                TestTarget { kind: $kind, id }
            }

            pub fn router() -> Router<AppState> {
                Router::new()
                    .route($tests, get(list).post(create))
                    .route($run_all, post(run_all))
                    .route($suite_runs, get(suite_runs))
                    .route($suite_run, get(suite_run))
                    .route($test, get(read).put(replace).delete(remove))
                    .route($run, post(run))
                    .route($runs, get(runs))
                    .route($one_run, get(one_run))
            }

            /// The conversation tests, oldest first.
            #[utoipa::path(get, operation_id = $list_op, path = $tests, tag = $tag, security(("bearer" = [])),
                responses((status = 200, body = ListResponse<ConversationTest>), (status = 404, body = ErrorResponse)))]
            pub async fn list(scope: Scope, State(s): State<AppState>, ApiPath(id): ApiPath<String>) -> ApiResult<Json<ListResponse<ConversationTest>>> {
                super::list(&s, &scope.workspace, target(&id)).await
            }

            /// Store a conversation test (422 names the field of a bad one).
            #[utoipa::path(post, operation_id = $create_op, path = $tests, tag = $tag, request_body = ConversationTest, security(("bearer" = [])),
                responses((status = 201, body = ConversationTest), (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
            pub async fn create(scope: Scope, State(s): State<AppState>, ApiPath(id): ApiPath<String>, ApiJson(test): ApiJson<ConversationTest>) -> ApiResult<(StatusCode, Json<ConversationTest>)> {
                super::create(&s, &scope.workspace, target(&id), test).await
            }

            #[utoipa::path(get, operation_id = $read_op, path = $test, tag = $tag, security(("bearer" = [])),
                responses((status = 200, body = ConversationTest), (status = 404, body = ErrorResponse)))]
            pub async fn read(scope: Scope, State(s): State<AppState>, ApiPath((id, test_id)): ApiPath<(String, String)>) -> ApiResult<Json<ConversationTest>> {
                super::read(&s, &scope.workspace, target(&id), &test_id).await
            }

            #[utoipa::path(put, operation_id = $replace_op, path = $test, tag = $tag, request_body = ConversationTest, security(("bearer" = [])),
                responses((status = 200, body = ConversationTest), (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)))]
            pub async fn replace(scope: Scope, State(s): State<AppState>, ApiPath((id, test_id)): ApiPath<(String, String)>, ApiJson(test): ApiJson<ConversationTest>) -> ApiResult<Json<ConversationTest>> {
                super::replace(&s, &scope.workspace, target(&id), &test_id, test).await
            }

            /// Delete a test with its runs.
            #[utoipa::path(delete, operation_id = $remove_op, path = $test, tag = $tag, security(("bearer" = [])),
                responses((status = 204, description = "deleted"), (status = 404, body = ErrorResponse)))]
            pub async fn remove(scope: Scope, State(s): State<AppState>, ApiPath((id, test_id)): ApiPath<(String, String)>) -> ApiResult<StatusCode> {
                super::remove(&s, &scope.workspace, target(&id), &test_id).await
            }

            /// Start a run of this test in a test-mode session: answers 202
            /// at once with the run (`status: running`); read it at
            /// `…/tests/runs/{runId}` until it ends. The test's own run is
            /// stored with its runs too.
            #[utoipa::path(post, operation_id = $run_op, path = $run, tag = $tag, security(("bearer" = [])),
                responses((status = 202, body = TestSuiteRun), (status = 404, body = ErrorResponse),
                    (status = 429, description = "the workspace has its most test runs queued or running (`too_many_test_runs`)", body = ErrorResponse)))]
            pub async fn run(scope: Scope, State(s): State<AppState>, ApiPath((id, test_id)): ApiPath<(String, String)>) -> ApiResult<(StatusCode, Json<TestSuiteRun>)> {
                super::run(&s, &scope.workspace, target(&id), &test_id).await
            }

            /// Start a run of every test, a bounded number at once: 202 with
            /// the run (200 and `finished` when there are no tests); read
            /// it at `…/tests/runs/{runId}` until it ends.
            #[utoipa::path(post, operation_id = $run_all_op, path = $run_all, tag = $tag, security(("bearer" = [])),
                responses((status = 202, body = TestSuiteRun), (status = 200, body = TestSuiteRun, description = "no tests: a finished, empty run"), (status = 404, body = ErrorResponse),
                    (status = 429, description = "the workspace has its most test runs queued or running (`too_many_test_runs`)", body = ErrorResponse)))]
            pub async fn run_all(scope: Scope, State(s): State<AppState>, ApiPath(id): ApiPath<String>) -> ApiResult<(StatusCode, Json<TestSuiteRun>)> {
                super::run_all(&s, &scope.workspace, target(&id)).await
            }

            /// The runs of tests, newest first (the newest 50 are kept).
            #[utoipa::path(get, operation_id = $suite_runs_op, path = $suite_runs, tag = $tag, security(("bearer" = [])),
                responses((status = 200, body = ListResponse<TestSuiteRun>), (status = 404, body = ErrorResponse)))]
            pub async fn suite_runs(scope: Scope, State(s): State<AppState>, ApiPath(id): ApiPath<String>) -> ApiResult<Json<ListResponse<TestSuiteRun>>> {
                super::suite_runs(&s, &scope.workspace, target(&id)).await
            }

            /// One run of tests: `running` with the runs finished so far,
            /// then `finished` (or `abandoned` when its server stopped).
            #[utoipa::path(get, operation_id = $suite_run_op, path = $suite_run, tag = $tag, security(("bearer" = [])),
                responses((status = 200, body = TestSuiteRun), (status = 404, body = ErrorResponse)))]
            pub async fn suite_run(scope: Scope, State(s): State<AppState>, ApiPath((id, run_id)): ApiPath<(String, String)>) -> ApiResult<Json<TestSuiteRun>> {
                super::suite_run(&s, &scope.workspace, target(&id), &run_id).await
            }

            /// The test's stored runs, newest first (the newest 50 are kept).
            #[utoipa::path(get, operation_id = $runs_op, path = $runs, tag = $tag, security(("bearer" = [])),
                responses((status = 200, body = ListResponse<TestRun>), (status = 404, body = ErrorResponse)))]
            pub async fn runs(scope: Scope, State(s): State<AppState>, ApiPath((id, test_id)): ApiPath<(String, String)>) -> ApiResult<Json<ListResponse<TestRun>>> {
                super::runs(&s, &scope.workspace, target(&id), &test_id).await
            }

            #[utoipa::path(get, operation_id = $one_run_op, path = $one_run, tag = $tag, security(("bearer" = [])),
                responses((status = 200, body = TestRun), (status = 404, body = ErrorResponse)))]
            pub async fn one_run(scope: Scope, State(s): State<AppState>, ApiPath((id, test_id, run_id)): ApiPath<(String, String, String)>) -> ApiResult<Json<TestRun>> {
                super::one_run(&s, &scope.workspace, target(&id), &test_id, &run_id).await
            }
        }
    };
}

test_endpoints!(
    assistant_tests, rtc_store::ResourceKind::Assistant, "assistants",
    tests: "/v1/assistants/{id}/tests", test: "/v1/assistants/{id}/tests/{test_id}",
    run: "/v1/assistants/{id}/tests/{test_id}/run", run_all: "/v1/assistants/{id}/tests/run",
    runs: "/v1/assistants/{id}/tests/{test_id}/runs", one_run: "/v1/assistants/{id}/tests/{test_id}/runs/{run_id}",
    suite_runs: "/v1/assistants/{id}/tests/runs", suite_run: "/v1/assistants/{id}/tests/runs/{run_id}",
    ops: ["listAssistantTests", "createAssistantTest", "getAssistantTest", "replaceAssistantTest",
          "deleteAssistantTest", "runAssistantTest", "runAssistantTests", "listAssistantTestRuns", "getAssistantTestRun",
          "listAssistantTestSuiteRuns", "getAssistantTestSuiteRun"]
);

test_endpoints!(
    workflow_tests, rtc_store::ResourceKind::Workflow, "workflows",
    tests: "/v1/workflows/{id}/tests", test: "/v1/workflows/{id}/tests/{test_id}",
    run: "/v1/workflows/{id}/tests/{test_id}/run", run_all: "/v1/workflows/{id}/tests/run",
    runs: "/v1/workflows/{id}/tests/{test_id}/runs", one_run: "/v1/workflows/{id}/tests/{test_id}/runs/{run_id}",
    suite_runs: "/v1/workflows/{id}/tests/runs", suite_run: "/v1/workflows/{id}/tests/runs/{run_id}",
    ops: ["listWorkflowTests", "createWorkflowTest", "getWorkflowTest", "replaceWorkflowTest",
          "deleteWorkflowTest", "runWorkflowTest", "runWorkflowTests", "listWorkflowTestRuns", "getWorkflowTestRun",
          "listWorkflowTestSuiteRuns", "getWorkflowTestSuiteRun"]
);
