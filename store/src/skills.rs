//! Skills uploaded by admins, and the effective set (uploads over `skills_dir`).

use std::collections::BTreeMap;
use std::path::Path;

use super::{Result, Store, StoreError, get_str};
use weft_shared::skills::{Skill, load_dir};
use weft_wire::time::now_ms;

impl Store {
    pub async fn put_skill(&self, skill: &Skill) -> Result<()> {
        let files =
            serde_json::to_string(&skill.files).map_err(|e| StoreError::Other(e.to_string()))?;
        let mut tx = self.begin().await?;
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
        .execute(&mut *tx)
        .await?;
        super::revisions::bump_prompt(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn delete_skill(&self, name: &str) -> Result<bool> {
        let mut tx = self.begin().await?;
        let done = sqlx::query("delete from skills where name = $1")
            .bind(name)
            .execute(&mut *tx)
            .await?;
        super::revisions::bump_prompt(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    /// Every skill: the folders of `dir`, then uploads (which win by name).
    pub async fn skills(&self, dir: Option<&Path>) -> Result<Vec<Skill>> {
        let uploads = self.uploaded_skills().await?;
        Ok(merge_skills(dir.map(load_dir).unwrap_or_default(), uploads))
    }

    /// The skills admins uploaded (without the folders of `skills_dir`).
    pub async fn uploaded_skills(&self) -> Result<Vec<Skill>> {
        let rows = sqlx::query("select name, description, body, files from skills")
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(Skill {
                    name: get_str(r, "name")?,
                    description: get_str(r, "description")?,
                    body: get_str(r, "body")?,
                    files: serde_json::from_str(&get_str(r, "files")?)
                        .map_err(|e| StoreError::Other(format!("skill files: {e}")))?,
                })
            })
            .collect()
    }
}

/// The effective skills: `from_dir`, then `uploads` (which win by name), by name.
pub fn merge_skills(from_dir: Vec<Skill>, uploads: Vec<Skill>) -> Vec<Skill> {
    let mut by_name: BTreeMap<String, Skill> =
        from_dir.into_iter().map(|s| (s.name.clone(), s)).collect();
    for skill in uploads {
        by_name.insert(skill.name.clone(), skill);
    }
    by_name.into_values().collect()
}
