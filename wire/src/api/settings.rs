//! Config reload and the web settings (`/v1/admin/reload`, `/v1/admin/settings`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One thing a reload changed: `models.gpt-4o: added`,
/// `limits.runs_per_minute_per_user: 60 → 120`, `mcp.files: restarted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ConfigChangeDto {
    pub key: String,
    pub change: String,
}

/// A reload or a save that was applied: what changed on the replica that
/// answered (empty: nothing did); every other replica applies it within 2 s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ReloadResponse {
    pub changes: Vec<ConfigChangeDto>,
    /// The config version every replica now reads its config for.
    pub version: i64,
}

/// The settings admins may edit in the web UI, as this replica runs them:
/// `models`, `limits`, `tools` (policies and the web tools) and
/// `mcp_servers`. Secrets show as `••••••`; sent back unchanged they keep
/// their value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SettingsDto {
    #[schema(value_type = Object)]
    pub settings: serde_json::Value,
    /// The config version (0 before the first save or reload).
    pub version: i64,
    /// Who saved or reloaded last, and when (RFC 3339).
    pub updated_by: Option<String>,
    pub updated_at: Option<String>,
}

/// `PUT /v1/admin/settings`: the sections to replace (any of `models`,
/// `limits`, `tools`, `mcp_servers`), each whole, as `GET` shows them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SaveSettingsRequest {
    #[schema(value_type = Object)]
    pub settings: serde_json::Map<String, serde_json::Value>,
}
