//! Skills uploaded by admins, and the effective set (uploads over `skills_dir`).

use std::collections::BTreeMap;
use std::path::Path;

use super::{Result, Store, StoreError, get_str};
use crate::skills::{Skill, load_dir};
use crate::time::now_ms;

impl Store {
    pub async fn put_skill(&self, skill: &Skill) -> Result<()> {
        let files =
            serde_json::to_string(&skill.files).map_err(|e| StoreError::Other(e.to_string()))?;
        let _gate = self.write_gate().await;
        sqlx::query(
            "insert into skills (name, description, body, files, updated_at) values ($1, $2, $3, $4, $5)
             on conflict (name) do update set description = excluded.description, body = excluded.body,
                 files = excluded.files, updated_at = excluded.updated_at",
        )
        .bind(&skill.name)
        .bind(&skill.description)
        .bind(&skill.body)
        .bind(files)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn delete_skill(&self, name: &str) -> Result<bool> {
        let _gate = self.write_gate().await;
        let done = sqlx::query("delete from skills where name = $1")
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Every skill: the folders of `dir`, then uploads (which win by name).
    pub async fn skills(&self, dir: Option<&Path>) -> Result<Vec<Skill>> {
        let mut by_name: BTreeMap<String, Skill> = dir
            .map(load_dir)
            .unwrap_or_default()
            .into_iter()
            .map(|s| (s.name.clone(), s))
            .collect();
        let rows = sqlx::query("select name, description, body, files from skills")
            .fetch_all(&self.pool)
            .await?;
        for r in rows {
            let skill = Skill {
                name: get_str(&r, "name")?,
                description: get_str(&r, "description")?,
                body: get_str(&r, "body")?,
                files: serde_json::from_str(&get_str(&r, "files")?)
                    .map_err(|e| StoreError::Other(format!("skill files: {e}")))?,
            };
            by_name.insert(skill.name.clone(), skill);
        }
        Ok(by_name.into_values().collect())
    }
}
