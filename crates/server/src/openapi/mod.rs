//! The OpenAPI document, generated from the handlers, and Swagger UI.

use axum::Router;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_swagger_ui::SwaggerUi;

use crate::routes::{
    assistants, health, interaction, live, mcp_servers, memories, realtime, secrets, sessions,
    tools, workspaces,
};

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("The admin token or a workspace API key"))
                    .build(),
            ),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "rtc-agent", description = "Agent platform server for conversational assistants."),
    modifiers(&BearerAuth),
    paths(
        health::healthz, health::readyz, health::metrics,
        workspaces::create, workspaces::list, workspaces::read, workspaces::rotate_key,
        secrets::put, secrets::list, secrets::read, secrets::remove,
        mcp_servers::create, mcp_servers::list, mcp_servers::read, mcp_servers::replace, mcp_servers::remove, mcp_servers::discover,
        tools::create, tools::list, tools::read, tools::replace, tools::remove,
        realtime::create, realtime::list, realtime::read, realtime::replace, realtime::remove,
        assistants::create, assistants::list, assistants::read, assistants::replace, assistants::remove,
        assistants::report, assistants::cleanup,
        sessions::create, sessions::list, sessions::read, sessions::messages, sessions::send, sessions::state, sessions::end,
        sessions::handoff_message, sessions::handoff_release, live::events, live::ws,
        interaction::todos, interaction::question, interaction::answer, interaction::goals, interaction::loops, interaction::resume_goal, interaction::tree,
        memories::list, memories::forget_user, memories::forget,
    ),
    components(schemas(
        rtc_protocol::SessionEvent, rtc_protocol::EventBody,
        rtc_protocol::ClientFrame, rtc_protocol::ErrorFrame,
    ))
)]
struct ApiDoc;

/// The OpenAPI document of the REST API.
pub fn api_doc() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// `/openapi.json` and Swagger UI at `/docs`.
pub fn docs_router() -> Router {
    SwaggerUi::new("/docs")
        .url("/openapi.json", api_doc())
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event kind and every client frame type has its schema in the
    /// document (R-API-6).
    #[test]
    fn events_and_frames_are_documented() {
        let doc = serde_json::to_value(api_doc()).unwrap_or_default();
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
