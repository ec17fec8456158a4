//! The admins' settings saved from the web and the config version every
//! replica polls (`config_settings`, one row; see `config::live`).

use serde_json::Value;

use super::{Result, Store, StoreError, get_i64, get_opt_str, get_str};
use weft_wire::time::now_ms;

/// The saved settings and their version.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigSettings {
    /// Bumped by every save and every reload anywhere: a replica that sees a
    /// new one reads its config again.
    pub version: i64,
    /// The settings document (`{}` when only reloads bumped the version).
    pub document: Value,
    pub updated_at: i64,
    pub updated_by: Option<String>,
    /// The SHA-256 (hex) of the config file the replica that made this
    /// version read; `None` without a file (see `crate::reload`).
    pub file_hash: Option<String>,
}

impl Store {
    /// The saved settings; `None` before the first save or reload.
    pub async fn config_settings(&self) -> Result<Option<ConfigSettings>> {
        let row = sqlx::query(
            "select version, document, updated_at, updated_by, file_hash from config_settings where id = 1",
        )
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let document = serde_json::from_str(&get_str(&row, "document")?)
            .map_err(|e| StoreError::Other(format!("config_settings.document: {e}")))?;
        Ok(Some(ConfigSettings {
            version: get_i64(&row, "version")?,
            document,
            updated_at: get_i64(&row, "updated_at")?,
            updated_by: get_opt_str(&row, "updated_by")?,
            file_hash: get_opt_str(&row, "file_hash")?,
        }))
    }

    /// The config version (0 before the first save or reload): one small row,
    /// read by every replica about once a second.
    pub async fn config_version(&self) -> Result<i64> {
        let row = sqlx::query("select version from config_settings where id = 1")
            .fetch_optional(&self.pool)
            .await?;
        row.map_or(Ok(0), |r| get_i64(&r, "version"))
    }

    /// Saves `document` as the settings; the new version. `file_hash`: the
    /// config file this replica read with them.
    pub async fn put_config_settings(
        &self,
        document: &Value,
        by: &str,
        file_hash: Option<&str>,
    ) -> Result<i64> {
        self.write_settings(Some(&document.to_string()), by, file_hash)
            .await
    }

    /// A new version without new settings (a reload of the file): every
    /// replica reads its config again.
    pub async fn bump_config_version(&self, by: &str, file_hash: Option<&str>) -> Result<i64> {
        self.write_settings(None, by, file_hash).await
    }

    async fn write_settings(
        &self,
        document: Option<&str>,
        by: &str,
        file_hash: Option<&str>,
    ) -> Result<i64> {
        let mut w = self.writer().await?;
        let keep = if document.is_some() {
            "document = excluded.document,"
        } else {
            ""
        };
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "insert into config_settings (id, document, version, updated_at, updated_by, file_hash)
             values (1, $1, 1, $2, $3, $4)
             on conflict (id) do update set {keep} version = config_settings.version + 1,
                 updated_at = excluded.updated_at, updated_by = excluded.updated_by,
                 file_hash = excluded.file_hash
             returning version"
        )))
        .bind(document.unwrap_or("{}"))
        .bind(now_ms())
        .bind(by)
        .bind(file_hash)
        .fetch_one(&mut *w)
        .await?;
        get_i64(&row, "version")
    }
}
