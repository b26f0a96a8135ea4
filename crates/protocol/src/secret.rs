//! Write-only secrets (R-TR-4): values go in, only names come out.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PutSecretParams {
    /// 8 to 16,384 characters.
    #[schema(min_length = 8, max_length = 16384)]
    pub value: String,
}

impl std::fmt::Debug for PutSecretParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PutSecretParams { value: <redacted> }")
    }
}

/// What the API shows of a secret: never its value.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretInfo {
    pub name: String,
    pub created_at: String,
    pub updated_at: String,
}
