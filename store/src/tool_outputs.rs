//! Tool outputs over the cap (`tools.output_cap_bytes`), kept whole so the
//! model can page through them with `read_output`.

use super::{Result, Store, get_str};
use weft_wire::time::now_ms;

impl Store {
    /// Keep a long tool output whole; returns its id for `read_output`.
    pub async fn store_tool_output(
        &self,
        run: &str,
        session: &str,
        call_id: &str,
        name: &str,
        content: &str,
    ) -> Result<String> {
        let id = format!("out_{}", uuid::Uuid::now_v7().simple());
        let mut w = self.writer().await?;
        sqlx::query(
            "insert into tool_outputs (id, run_id, session_id, call_id, name, content, bytes, created_at)
             values ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&id)
        .bind(run)
        .bind(session)
        .bind(call_id)
        .bind(name)
        .bind(content)
        .bind(content.len() as i64)
        .bind(now_ms())
        .execute(&mut *w)
        .await?;
        Ok(id)
    }

    /// A stored output of `session` (outputs of other sessions do not exist here).
    pub async fn tool_output(&self, session: &str, id: &str) -> Result<Option<String>> {
        let row = sqlx::query("select content from tool_outputs where id = $1 and session_id = $2")
            .bind(id)
            .bind(session)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| get_str(&r, "content")).transpose()
    }
}
