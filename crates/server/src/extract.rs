//! Request extractors that fail with API errors: JSON bodies (content type,
//! size, syntax, and the path of the first invalid field) and callers
//! (admin token or workspace key).

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use serde::de::DeserializeOwned;
use utoipa::ToSchema;

use crate::AppState;
use crate::error::ApiError;

/// A JSON body, rejected with a clear 4xx when it is not one.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned + ToSchema, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let (headers, bytes) = read_body(req, state).await?;
        parse_json(&headers, &bytes).map(ApiJson)
    }
}

/// A JSON object body with the checks of [`ApiJson`] before the shape
/// (content type, size, syntax, an object, no NUL), for handlers that look
/// at the raw document before reading it into its type.
pub struct RawJson(pub serde_json::Value);

impl<S: Send + Sync> FromRequest<S> for RawJson {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let (headers, bytes) = read_body(req, state).await?;
        read_json_object(&headers, &bytes).map(RawJson)
    }
}

async fn read_body<S: Send + Sync>(
    req: Request,
    state: &S,
) -> Result<(HeaderMap, Bytes), ApiError> {
    let headers = req.headers().clone();
    let bytes = Bytes::from_request(req, state).await.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                "the request body is larger than the server accepts",
            )
        } else {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_body",
                "the request body could not be read",
            )
        }
    })?;
    Ok((headers, bytes))
}

/// A path parameter, rejected with a JSON 400 when it cannot be decoded.
pub struct ApiPath<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        if has_encoded_nul(parts.uri.path()) {
            // No id or name holds one (they are checked when chosen), so
            // nothing is there, and the database is not asked.
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                "no resource has the NUL character (%00) in its id or name",
            ));
        }
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(v)) => Ok(Self(v)),
            Err(e) => Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_path",
                e.body_text(),
            )),
        }
    }
}

/// Query parameters, rejected with a JSON 400 (`invalid_query`) when they
/// cannot be decoded (unknown names, wrong types).
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        if has_encoded_nul(query) {
            let name = url::form_urlencoded::parse(query.as_bytes())
                .find(|(k, v)| k.contains('\0') || v.contains('\0'))
                .map(|(k, _)| k.replace('\0', "%00"))
                .unwrap_or_default();
            return Err(invalid_field(
                name.clone(),
                format!("the query parameter `{name}` must not contain the NUL character (%00)"),
            ));
        }
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(Self(v)),
            Err(e) => Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                e.body_text(),
            )),
        }
    }
}

/// Parse an optional JSON body: an empty body or `null` is absent (the
/// default), anything else is parsed like [`parse_json`].
pub fn parse_optional_json<T: DeserializeOwned + ToSchema + Default>(
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<T, ApiError> {
    let text = bytes.trim_ascii();
    if text.is_empty() || text == b"null" {
        return Ok(T::default());
    }
    parse_json(headers, bytes)
}

/// Parse a JSON body with the header checks of [`ApiJson`]. Every body of
/// the API is a JSON object: an array, string, number or `null` is refused
/// (422 `invalid_body`) before it reaches the shape, so serde never names a
/// struct in its message. A body serde reads must also have the shape its
/// schema in the document describes ([`crate::body_schema`]).
pub fn parse_json<T: DeserializeOwned + ToSchema>(
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<T, ApiError> {
    read_json_object(headers, bytes).and_then(parse_value)
}

/// The body as a JSON object: the content type says JSON, the bytes are
/// JSON, it is an object, and no string in it holds a NUL.
pub fn read_json_object(headers: &HeaderMap, bytes: &[u8]) -> Result<serde_json::Value, ApiError> {
    let content_type = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if mime != "application/json" && !mime.ends_with("+json") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the request body must be JSON with `Content-Type: application/json`",
        ));
    }
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("the request body is not valid JSON: {e}"),
        )
    })?;
    if !value.is_object() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
            "the body must be a JSON object",
        ));
    }
    if let Some(field) = rtc_core::text::nul_field(&value) {
        return Err(nul_error(field));
    }
    Ok(value)
}

/// Read a JSON object read by [`read_json_object`] into `T`: serde names
/// the first bad field, and the shape must be the schema's
/// ([`crate::body_schema`]).
pub fn parse_value<T: DeserializeOwned + ToSchema>(
    value: serde_json::Value,
) -> Result<T, ApiError> {
    let shape = shape_error(&T::name(), &value);
    let parsed = serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.inner().to_string();
        let mut field = e.path().to_string();
        // Name the missing field itself, not its parent.
        if let Some(rest) = inner.strip_prefix("missing field `")
            && let Some(name) = rest.split('`').next()
        {
            field = if field == "." || field.is_empty() {
                name.to_owned()
            } else {
                format!("{field}.{name}")
            };
        }
        if field == "." {
            field.clear();
        }
        let message = if field.is_empty() {
            inner
        } else {
            format!("`{field}`: {inner}")
        };
        invalid_field(field, message)
    })?;
    // serde's message is the clearer one; the schema catches what serde
    // lets through.
    match shape {
        Some(e) => Err(e),
        None => Ok(parsed),
    }
}

/// The first way `value` does not have the shape of the named body schema,
/// as a 422 `invalid_field` naming the field.
pub fn shape_error(schema_name: &str, value: &serde_json::Value) -> Option<ApiError> {
    let (field, problem) = crate::body_schema::shape_problem(schema_name, value)?;
    let message = if field.is_empty() {
        problem
    } else {
        format!("`{field}`: {problem}")
    };
    Some(invalid_field(field, message))
}

/// A WebSocket frame's text holding a NUL character: the error to answer
/// (see [`rtc_core::text`]), or `None`.
pub fn refuse_nul(frame: &str) -> Option<ApiError> {
    rtc_core::text::nul_field_in_json(frame).map(nul_error)
}

fn nul_error(field: String) -> ApiError {
    let what = if field.is_empty() {
        "the body".to_owned()
    } else {
        format!("`{field}`")
    };
    invalid_field(
        field,
        format!("{what} must not contain the NUL character (U+0000)"),
    )
}

/// Whether a URI part holds a percent-encoded NUL (`%00`), which no id,
/// name or query value may contain (see [`rtc_core::text`]).
fn has_encoded_nul(part: &str) -> bool {
    part.as_bytes()
        .windows(3)
        .any(|w| w[0] == b'%' && w[1] == b'0' && w[2] == b'0')
}

fn invalid_field(field: String, message: String) -> ApiError {
    let err = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_field", message);
    if field.is_empty() {
        err
    } else {
        err.with_field(field)
    }
}

/// The bearer token of the `Authorization` header.
pub fn bearer_token(parts: &Parts) -> Option<String> {
    if let Some(v) = parts
        .headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        let mut it = v.splitn(2, ' ');
        if it.next().is_some_and(|s| s.eq_ignore_ascii_case("bearer")) {
            return it
                .next()
                .map(|t| t.trim().to_owned())
                .filter(|t| !t.is_empty());
        }
        return None;
    }
    None
}

/// Who is calling.
#[derive(Debug, Clone)]
pub enum Caller {
    Admin,
    Workspace { id: String },
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = bearer_token(parts).ok_or_else(|| {
            ApiError::unauthorized("missing `Authorization: Bearer <key>` header")
        })?;
        if state.auth.is_admin(&token) {
            return Ok(Self::Admin);
        }
        match state.store.workspace_by_key(&token).await? {
            Some(ws) => Ok(Self::Workspace { id: ws.id }),
            None => Err(ApiError::unauthorized("the API key is not valid")),
        }
    }
}

/// The admin token only.
pub struct Admin;

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        match Caller::from_request_parts(parts, state).await? {
            Caller::Admin => Ok(Self),
            Caller::Workspace { .. } => Err(ApiError::forbidden(
                "admin_required",
                "this call needs the admin token",
            )),
        }
    }
}

/// Header with which the admin token acts inside one workspace.
pub const WORKSPACE_HEADER: &str = "x-rtc-workspace";

/// The workspace a call acts in: a workspace key's own, or the one the admin
/// token names in `X-Rtc-Workspace`.
#[derive(Debug, Clone)]
pub struct Scope {
    pub workspace: String,
    pub is_admin: bool,
}

impl FromRequestParts<AppState> for Scope {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        match Caller::from_request_parts(parts, state).await? {
            Caller::Workspace { id } => {
                state.runtime.admit_request(&id).await?;
                Ok(Self {
                    workspace: id,
                    is_admin: false,
                })
            }
            Caller::Admin => {
                let id = parts
                    .headers
                    .get(WORKSPACE_HEADER)
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| {
                        ApiError::new(StatusCode::BAD_REQUEST, "workspace_required", "the admin token acts in a workspace named by the `X-Rtc-Workspace` header")
                            .with_field(WORKSPACE_HEADER)
                    })?;
                if state.store.workspace(id).await?.is_none() {
                    return Err(ApiError::not_found("workspace", id));
                }
                Ok(Self {
                    workspace: id.to_owned(),
                    is_admin: true,
                })
            }
        }
    }
}

/// The bearer token from the header, or from `?token=` (browsers cannot set
/// headers on a WebSocket or EventSource).
pub fn request_token(parts: &Parts) -> Option<String> {
    bearer_token(parts).or_else(|| {
        let q = axum::extract::Query::<std::collections::HashMap<String, String>>::try_from_uri(
            &parts.uri,
        )
        .ok()?;
        q.0.get("token").cloned().filter(|t| !t.is_empty())
    })
}

/// Access to one session (`/v1/sessions/{id}/…`): a workspace key of its
/// workspace, the admin token, or the session's own client token.
#[derive(Debug, Clone)]
pub struct SessionAccess {
    pub workspace: String,
    pub session: String,
}

impl FromRequestParts<AppState> for SessionAccess {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        // The session is the path's `{id}` (other parameters, like a
        // task's id, are the handler's).
        let ApiPath(mut params) =
            ApiPath::<std::collections::HashMap<String, String>>::from_request_parts(parts, state)
                .await?;
        let session = params.remove("id").unwrap_or_default();
        let token = request_token(parts).ok_or_else(|| {
            ApiError::unauthorized(
                "missing `Authorization: Bearer <key>` header or `token` query parameter",
            )
        })?;
        if state.auth.is_admin(&token) {
            let record = state
                .store
                .session_by_id(&session)
                .await?
                .ok_or_else(|| ApiError::not_found("session", &session))?;
            return Ok(Self {
                workspace: record.workspace_id,
                session,
            });
        }
        if let Some(ws) = state.store.workspace_by_key(&token).await? {
            state.runtime.admit_request(&ws.id).await?;
            return Ok(Self {
                workspace: ws.id,
                session,
            });
        }
        match state
            .runtime
            .client_token_workspace(&session, &token)
            .await?
        {
            Some(workspace) => {
                state.runtime.admit_request(&workspace).await?;
                Ok(Self { workspace, session })
            }
            None => Err(ApiError::unauthorized(
                "the token is not valid for this session",
            )),
        }
    }
}
