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
    )
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
