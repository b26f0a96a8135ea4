//! The error body every failing API call returns (R-API-2).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `{"error": {"code", "message", "field"?}}`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ErrorResponse {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable machine-readable code, e.g. `unknown_variable`.
    pub code: String,
    /// Human-readable explanation naming the offending field.
    pub message: String,
    /// Path of the offending field, e.g. `toolBindings[0].argumentBindings.tenant`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// Something a save accepted but the operator should know: the resource
/// works as saved only once it is dealt with (e.g. a URL on a private
/// address the outbound guard refuses until `RTC_OUTBOUND_ALLOW` lists it).
/// Answered with the saved resource, never stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SaveWarning {
    /// Stable machine-readable code, e.g. `private_address`.
    pub code: String,
    /// Path of the field it is about, e.g. `http.url`.
    pub field: String,
    pub message: String,
}
