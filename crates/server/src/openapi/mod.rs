//! The OpenAPI document, generated from the handlers, and Swagger UI.

use axum::Router;
use utoipa::OpenApi;
use utoipa_swagger_ui::SwaggerUi;

mod contract;

use contract::Contract;

use crate::routes::conversation_tests::{assistant_tests, workflow_tests};
use crate::routes::{
    assistants, health, interaction, live, mcp_servers, memories, providers, realtime, secrets,
    sessions, speech, task_backends, tasks, tools, usage, workflows, workspaces,
};

#[derive(OpenApi)]
#[openapi(
    info(title = "rtc-agent", description = "Agent platform server for conversational assistants."),
    modifiers(&Contract),
    paths(
        health::healthz, health::readyz, health::metrics,
        workspaces::create, workspaces::list, workspaces::read, workspaces::rotate_key, workspaces::set_quota, workspaces::me,
        secrets::put, secrets::list, secrets::read, secrets::remove,
        mcp_servers::create, mcp_servers::list, mcp_servers::read, mcp_servers::replace, mcp_servers::remove, mcp_servers::discover,
        tools::create, tools::list, tools::read, tools::replace, tools::remove, tools::test,
        task_backends::create, task_backends::list, task_backends::read, task_backends::replace, task_backends::remove,
        realtime::create, realtime::list, realtime::read, realtime::replace, realtime::remove,
        speech::create, speech::list, speech::read, speech::replace, speech::remove, speech::check,
        assistants::create, assistants::list, assistants::read, assistants::replace, assistants::remove,
        assistants::report, assistants::cleanup,
        workflows::create, workflows::list, workflows::read, workflows::replace, workflows::remove,
        assistant_tests::list, assistant_tests::create, assistant_tests::read, assistant_tests::replace, assistant_tests::remove, assistant_tests::run, assistant_tests::run_all, assistant_tests::runs, assistant_tests::one_run, assistant_tests::suite_runs, assistant_tests::suite_run,
        workflow_tests::list, workflow_tests::create, workflow_tests::read, workflow_tests::replace, workflow_tests::remove, workflow_tests::run, workflow_tests::run_all, workflow_tests::runs, workflow_tests::one_run, workflow_tests::suite_runs, workflow_tests::suite_run,
        sessions::create, sessions::list, sessions::read, sessions::messages, sessions::send, sessions::state, sessions::end,
        sessions::handoff_message, sessions::handoff_release, live::events, live::ws,
        interaction::todos, interaction::question, interaction::answer, interaction::goals, interaction::loops, interaction::resume_goal, interaction::tree,
        tasks::list, tasks::read, tasks::cancel,
        memories::list, memories::forget_user, memories::forget,
        usage::report,
        providers::list, providers::check,
    ),
    components(schemas(
        rtc_protocol::SessionEvent, rtc_protocol::EventBody,
        rtc_protocol::ClientFrame, rtc_protocol::ErrorFrame, rtc_protocol::EphemeralFrame,
    ))
)]
struct ApiDoc;

/// The OpenAPI document of the REST API, as served.
pub fn api_json() -> &'static serde_json::Value {
    static DOC: std::sync::LazyLock<serde_json::Value> = std::sync::LazyLock::new(|| {
        let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or_default();
        contract::describe_event_streams(&mut doc);
        contract::admit_variant_tags(&mut doc);
        doc
    });
    &DOC
}

/// `/openapi.json` and Swagger UI at `/docs`.
pub fn docs_router() -> Router {
    SwaggerUi::new("/docs")
        .external_url_unchecked("/openapi.json", api_json().clone())
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
        let mut ops = Vec::new();
        for (path, item) in doc["paths"].as_object().into_iter().flatten() {
            for (method, op) in item.as_object().into_iter().flatten() {
                ops.push((path.clone(), method.clone(), op));
            }
        }
        ops
    }

    /// What a client generator needs: unique operation ids, every path
    /// parameter declared, a description on every response, and the
    /// statuses the extractors answer before a handler runs.
    #[test]
    fn every_operation_is_fully_described() {
        let doc = api_json();
        let ops = operations(doc);
        assert!(ops.len() >= 55, "{} operations", ops.len());
        let mut ids = std::collections::BTreeSet::new();
        for (path, method, op) in &ops {
            let label = format!("{method} {path}");
            let id = op["operationId"].as_str().unwrap_or_default();
            assert!(
                ids.insert(id.to_owned()),
                "{label}: operationId `{id}` repeats"
            );
            let params = op["parameters"].as_array().cloned().unwrap_or_default();
            for seg in path.split('/') {
                if let Some(name) = seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    assert!(
                        params.iter().any(|p| p["name"] == name
                            && p["in"] == "path"
                            && p["required"] == true),
                        "{label}: path parameter {name} is declared"
                    );
                }
            }
            let responses = op["responses"].as_object().cloned().unwrap_or_default();
            for (status, r) in &responses {
                assert!(
                    r["description"].as_str().is_some_and(|d| !d.is_empty()),
                    "{label}: response {status} has a description"
                );
            }
            let has = |s: &str| responses.contains_key(s);
            if op.get("security").is_some() {
                assert!(has("401"), "{label}: 401 documented");
            }
            if op.get("requestBody").is_some() {
                for s in ["400", "413", "415", "422"] {
                    assert!(has(s), "{label}: {s} documented");
                }
            }
        }
    }

    /// Who may call what is in the security requirements: the workspace
    /// routes need the admin token, a session's own routes also take its
    /// client token as `?token=`.
    #[test]
    fn access_is_documented() {
        let doc = api_json();
        let schemes = &doc["components"]["securitySchemes"];
        assert_eq!(schemes["sessionToken"]["in"], "query");
        assert_eq!(schemes["sessionToken"]["name"], "token");
        for (path, method, op) in operations(doc) {
            let security = op["security"].to_string();
            if path.starts_with("/v1/workspaces") {
                assert!(security.contains("adminToken"), "{method} {path}");
                assert!(op["responses"].get("403").is_some(), "{method} {path}: 403");
            }
            if method == "get" && path.starts_with("/v1/sessions/{id}") {
                assert!(
                    security.contains("sessionToken"),
                    "{method} {path}: ?token="
                );
            }
        }
    }

    /// Every event kind and every client frame type has its schema in the
    /// document (R-API-6).
    #[test]
    fn events_and_frames_are_documented() {
        let doc = api_json();
        let schemas = &doc["components"]["schemas"];
        let text = schemas.to_string();
        for kind in rtc_protocol::EventBody::KINDS {
            assert!(
                text.contains(&format!("\"{kind}\"")),
                "event {kind} is documented"
            );
        }
        for frame in [
            "client.hello",
            "user.message",
            "client_tool.result",
            "ask_user.answer",
            "resume",
        ] {
            assert!(
                text.contains(&format!("\"{frame}\"")),
                "frame {frame} is documented"
            );
        }
        for name in [
            "SessionEvent",
            "EventBody",
            "ClientFrame",
            "ErrorFrame",
            "ToolCompleted",
        ] {
            assert!(schemas.get(name).is_some(), "schema {name}");
        }
    }
}
