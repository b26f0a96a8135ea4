//! What every operation shares, added to the generated document so that it
//! describes the server exactly (R-API-2, R-API-6): path parameters, the
//! `X-Rtc-Workspace` header of workspace-scoped calls, the error statuses
//! the extractors answer before a handler runs (401, 403, 400, 413, 415,
//! 422), and a description on every response.
//!
//! The handlers' annotations say what is particular to each operation
//! (bodies, success and domain statuses, `operation_id`) and who may call
//! it, as security requirements:
//! - `adminToken`: the admin token only (403 `admin_required` otherwise);
//! - `bearer` alone: a workspace key, or the admin token naming the
//!   workspace in `X-Rtc-Workspace`;
//! - `bearer` or `sessionToken`: one session's calls, which also accept
//!   that session's client token as `?token=`.

use utoipa::Modify;
use utoipa::openapi::path::{Operation, Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{
    ContentBuilder, ObjectBuilder, OpenApi, Ref, RefOr, Required, ResponseBuilder, Type,
};

/// The shared part of every operation; see the module documentation.
pub struct Contract;

impl Modify for Contract {
    fn modify(&self, openapi: &mut OpenApi) {
        add_security_schemes(openapi);
        for (path, item) in openapi.paths.paths.iter_mut() {
            for op in [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
            ]
            .into_iter()
            .flatten()
            {
                complete(path, op);
            }
        }
    }
}

fn add_security_schemes(openapi: &mut OpenApi) {
    let components = openapi.components.get_or_insert_with(Default::default);
    let bearer = |text: &str| {
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some(text))
                .build(),
        )
    };
    components.add_security_scheme(
        "bearer",
        bearer(
            "A workspace API key, or the admin token with the workspace named in the `X-Rtc-Workspace` header",
        ),
    );
    components.add_security_scheme("adminToken", bearer("The admin token"));
    components.add_security_scheme(
        "sessionToken",
        SecurityScheme::ApiKey(ApiKey::Query(ApiKeyValue::with_description(
            "token",
            "The session's client token (`clientToken` of the created session), \
             for browsers that cannot set headers on a WebSocket or EventSource",
        ))),
    );
}

/// How an operation may be called, from its security requirements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Public,
    Admin,
    Workspace,
    Session,
}

fn access(op: &Operation) -> Access {
    let Some(requirements) = &op.security else {
        return Access::Public;
    };
    let text = serde_json::to_string(requirements).unwrap_or_default();
    if text.contains("\"adminToken\"") {
        Access::Admin
    } else if text.contains("\"sessionToken\"") {
        Access::Session
    } else if text.contains("\"bearer\"") {
        Access::Workspace
    } else {
        Access::Public
    }
}

fn complete(path: &str, op: &mut Operation) {
    let access = access(op);
    let params = op.parameters.get_or_insert_with(Vec::new);
    for name in path_params(path) {
        if !params
            .iter()
            .any(|p| matches!(p, RefOr::T(p) if p.name == name))
        {
            params.push(RefOr::T(path_param(path, name)));
        }
    }
    if access == Access::Workspace {
        params.push(RefOr::T(workspace_header()));
    }
    let has_path = path.contains('{');
    let has_query = params
        .iter()
        .any(|p| matches!(p, RefOr::T(p) if p.parameter_in == ParameterIn::Query));
    if params.is_empty() {
        op.parameters = None;
    }
    let has_body = op.request_body.is_some();

    let mut bad_request = Vec::new();
    if has_body {
        bad_request
            .push("`invalid_json` (the body is not JSON) or `invalid_body` (it could not be read)");
    }
    if has_path {
        bad_request.push("`invalid_path` (a path parameter could not be decoded)");
    }
    if has_query {
        bad_request.push("`invalid_query` (an unknown or ill-typed query parameter)");
    }
    if access == Access::Workspace {
        bad_request.push("`workspace_required` (the admin token without `X-Rtc-Workspace`)");
    }
    if !bad_request.is_empty() {
        add_error(
            op,
            "400",
            &format!("Malformed request: {}.", bad_request.join("; ")),
        );
    }
    if access != Access::Public {
        add_error(
            op,
            "401",
            "`unauthorized`: the credentials are missing or not valid for this call.",
        );
    }
    if access == Access::Admin {
        add_error(
            op,
            "403",
            "`admin_required`: this call needs the admin token.",
        );
    }
    if has_path || access == Access::Workspace {
        add_error(
            op,
            "404",
            "`not_found`: the resource (or the workspace named by `X-Rtc-Workspace`) does not exist in this workspace.",
        );
    }
    if has_query && !has_body {
        add_error(
            op,
            "422",
            "`invalid_field` (a query parameter holds the NUL character) or a validation code; `field` names the parameter.",
        );
    }
    if has_body {
        add_error(
            op,
            "413",
            "`payload_too_large`: the body is larger than the server accepts.",
        );
        add_error(
            op,
            "415",
            "`unsupported_media_type`: the body must be sent with `Content-Type: application/json`.",
        );
        add_error(
            op,
            "422",
            "`invalid_body` (not a JSON object), `invalid_field` (a field of the wrong shape or an unknown field) \
             or a validation code; `field` names the offending field.",
        );
    }
    for (status, response) in op.responses.responses.iter_mut() {
        if let RefOr::T(r) = response
            && r.description.is_empty()
        {
            r.description = default_description(status).to_owned();
        }
    }
}

/// The `{name}`s of a path template.
fn path_params(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
}

fn path_param(path: &str, name: &str) -> Parameter {
    // The resource a parameter names is the path segment before it.
    let before = path
        .split('/')
        .take_while(|seg| *seg != format!("{{{name}}}"))
        .last()
        .unwrap_or("");
    let noun = match before {
        "workspaces" => "workspace",
        "secrets" => "secret",
        "mcp-servers" => "MCP server",
        "tools" => "tool",
        "realtime-interfaces" => "realtime interface",
        "speech-interfaces" => "speech interface",
        "assistants" => "assistant",
        "workflows" => "workflow",
        "sessions" => "session",
        "memories" => "memory",
        "goals" => "goal",
        other => other,
    };
    let what = if name == "name" { "name" } else { "id" };
    let mut schema = ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1));
    if before == "secrets" {
        // `check_secret_name`: `secret__` and an identifier, 64 in all.
        schema = schema.pattern(Some(r"^secret__[A-Za-z0-9_]{1,56}$"));
    }
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Path)
        .required(Required::True)
        .description(Some(format!("The {noun}'s {what}")))
        .schema(Some(schema))
        .build()
}

fn workspace_header() -> Parameter {
    ParameterBuilder::new()
        .name("X-Rtc-Workspace")
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some(
            "With the admin token, the workspace to act in (required then). Ignored with a workspace key.",
        ))
        .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
        .build()
}

/// Document an error status unless the handler's annotation already does.
fn add_error(op: &mut Operation, status: &str, description: &str) {
    let responses = &mut op.responses.responses;
    if let Some(RefOr::T(existing)) = responses.get_mut(status) {
        if existing.description.is_empty() {
            existing.description = description.to_owned();
        }
        return;
    }
    let response = ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorResponse")))
                .build(),
        )
        .build();
    responses.insert(status.to_owned(), RefOr::T(response));
}

fn default_description(status: &str) -> &'static str {
    match status {
        "200" => "OK.",
        "201" => "Created.",
        "204" => "Done; no content.",
        "400" => "Malformed request.",
        "401" => "`unauthorized`: the credentials are missing or not valid for this call.",
        "403" => "Forbidden; `code` says why.",
        "404" => "`not_found`: the resource does not exist in this workspace.",
        "409" => {
            "Conflict with the current state; `code` says which (`already_exists`, `in_use`, …)."
        }
        "422" => "A field is not valid; `code` says why and `field` names it.",
        "429" => "A limit was reached; `code` names it.",
        "424" => "A server this call depends on could not be reached.",
        "503" => "Not ready.",
        _ => "See `code` and `message`.",
    }
}

/// An event stream's schema describes each event as OpenAPI 3.1 readers
/// (schemathesis among them) take it: the SSE fields, with `data` a JSON
/// text whose own schema is the one the handler names.
pub fn describe_event_streams(doc: &mut serde_json::Value) {
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for op in paths
        .values_mut()
        .filter_map(|item| item.as_object_mut())
        .flat_map(|item| item.values_mut())
    {
        let Some(responses) = op["responses"].as_object_mut() else {
            continue;
        };
        for response in responses.values_mut() {
            let Some(media) = response
                .pointer_mut("/content/text~1event-stream")
                .and_then(|m| m.as_object_mut())
            else {
                continue;
            };
            let Some(data) = media.get("schema").cloned() else {
                continue;
            };
            media.insert(
                "schema".to_owned(),
                serde_json::json!({
                    "type": "object",
                    "required": ["data"],
                    "properties": {
                        "id": {"type": "string", "description": "The event's `seq`."},
                        "event": {"type": "string", "description": "The event's `type`."},
                        "data": {
                            "type": "string",
                            "contentMediaType": "application/json",
                            "contentSchema": data,
                        },
                    },
                }),
            );
        }
    }
}

/// A variant of an internally tagged enum whose fields are a struct of
/// their own (`WorkflowNode::Agent(AgentNode)`) is documented as
/// `allOf [AgentNode, {type}]`; a struct that denies unknown fields
/// (`additionalProperties: false`) would then refuse its own tag, so no
/// value could match. The tag is admitted among the struct's properties
/// (the `allOf` keeps requiring it).
pub fn admit_variant_tags(doc: &mut serde_json::Value) {
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(|s| s.as_object_mut())
    else {
        return;
    };
    let mut tags: Vec<(String, String, serde_json::Value)> = Vec::new();
    for schema in schemas.values() {
        for variant in schema["oneOf"].as_array().into_iter().flatten() {
            let Some([first, second]) = variant["allOf"].as_array().map(Vec::as_slice) else {
                continue;
            };
            let (Some(target), Some(props)) = (
                first["$ref"].as_str().and_then(|r| r.rsplit('/').next()),
                second["properties"].as_object(),
            ) else {
                continue;
            };
            for (tag, tag_schema) in props {
                tags.push((target.to_owned(), tag.clone(), tag_schema.clone()));
            }
        }
    }
    for (target, tag, tag_schema) in tags {
        let Some(schema) = schemas.get_mut(&target) else {
            continue;
        };
        if schema["additionalProperties"] != serde_json::Value::Bool(false) {
            continue;
        }
        let Some(props) = schema["properties"].as_object_mut() else {
            continue;
        };
        match props.get_mut(&tag) {
            // One struct in several variants: each variant's tag value.
            Some(existing) => {
                if let (Some(values), Some(more)) = (
                    existing.get_mut("enum").and_then(|e| e.as_array_mut()),
                    tag_schema["enum"].as_array(),
                ) {
                    for v in more {
                        if !values.contains(v) {
                            values.push(v.clone());
                        }
                    }
                }
            }
            None => {
                props.insert(tag, tag_schema);
            }
        }
    }
}
