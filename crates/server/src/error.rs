//! The API's error type and its mapping to HTTP (R-API-2): every failure is
//! `{"error": {"code", "message", "field"?}}` with a 4xx for bad input; a
//! 5xx only for faults of the server itself, whose details go to the log,
//! never to the client.

use std::borrow::Cow;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rtc_core::ValidationError;
use rtc_core::mcp_rules::McpServerRejection;
use rtc_protocol::{ErrorDetail, ErrorResponse};
use rtc_store::StoreError;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: Cow<'static, str>,
    pub message: String,
    pub field: Option<String>,
    /// Sent as `Retry-After` (seconds).
    pub retry_after: Option<u64>,
}

pub type ApiResult<T, E = ApiError> = Result<T, E>;

impl ApiError {
    pub fn new(
        status: StatusCode,
        code: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            status,
            code: code.into(),
            message: message.into(),
            field: None,
            retry_after: None,
        }
    }

    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    pub fn not_found(what: &str, id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("{what} `{id}` does not exist"),
        )
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn forbidden(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, code, message)
    }

    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    pub fn unprocessable(
        code: &'static str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message).with_field(field)
    }

    /// A refused document answered 400 rather than 422: workflows answer
    /// every failure of their document so (design §4).
    pub fn bad_request(e: ValidationError) -> Self {
        Self::new(StatusCode::BAD_REQUEST, e.code, e.message).with_field(e.field)
    }

    /// A server fault: logged in full, reported without details.
    pub fn internal(context: &str, err: &dyn std::fmt::Display) -> Self {
        tracing::error!(%err, "{context}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal server error",
        )
    }
}

impl From<ValidationError> for ApiError {
    fn from(e: ValidationError) -> Self {
        Self::unprocessable(e.code, e.field, e.message)
    }
}

impl From<McpServerRejection> for ApiError {
    fn from(e: McpServerRejection) -> Self {
        match e {
            McpServerRejection::StdioRequiresAdmin => {
                Self::forbidden("stdio_requires_admin", e.to_string()).with_field("transport.type")
            }
            McpServerRejection::Invalid(v) => v.into(),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::AlreadyExists(id) => Self::conflict(
                "already_exists",
                format!("a resource with id `{id}` already exists"),
            )
            .with_field("id"),
            StoreError::InUse { referrers } => {
                let list: Vec<String> = referrers
                    .iter()
                    .map(|r| format!("{} `{}`", r.kind.as_str(), r.id))
                    .collect();
                Self::conflict("in_use", format!("still used by {}", list.join(", ")))
            }
            other => Self::internal("storage failure", &other),
        }
    }
}

impl From<rtc_runtime::RuntimeError> for ApiError {
    fn from(e: rtc_runtime::RuntimeError) -> Self {
        use rtc_runtime::RuntimeError as R;
        match e {
            R::NotFound { what, id } => Self::not_found(what, &id),
            R::Invalid(v) => v.into(),
            R::Conflict { code, message } => Self::conflict(code, message),
            R::TooMany { code, message } => Self::new(StatusCode::TOO_MANY_REQUESTS, code, message),
            R::Limited {
                code,
                message,
                retry_after_secs,
            } => Self {
                retry_after: Some(retry_after_secs.max(1)),
                ..Self::new(StatusCode::TOO_MANY_REQUESTS, code, message)
            },
            R::Store(s) => s.into(),
            R::Internal(m) => Self::internal("runtime failure", &m),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorResponse {
            error: ErrorDetail {
                code: self.code.into_owned(),
                message: self.message,
                field: self.field,
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}
