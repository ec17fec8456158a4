//! Each worker's view of its MCP servers, for `GET /v1/mcp` on any gateway.

use super::{Result, Store, get_i64, get_str};
use weft_wire::time::now_ms;

impl Store {
    /// A worker's MCP servers as it sees them (JSON of `McpServerDto`s).
    pub async fn put_mcp_status(&self, worker: &str, servers_json: &str) -> Result<()> {
        let now = now_ms();
        let mut w = self.writer().await?;
        sqlx::query(
            "insert into mcp_status (worker_id, servers, updated_at) values ($1, $2, $3)
             on conflict (worker_id) do update set servers = excluded.servers, updated_at = excluded.updated_at",
        )
        .bind(worker)
        .bind(servers_json)
        .bind(now)
        .execute(&mut *w)
        .await?;
        sqlx::query("delete from mcp_status where updated_at < $1")
            .bind(now - 3_600_000)
            .execute(&mut *w)
            .await?;
        Ok(())
    }

    /// `(worker, servers JSON, updated_at)` of workers that reported since `since`.
    pub async fn mcp_status(&self, since: i64) -> Result<Vec<(String, String, i64)>> {
        let rows = sqlx::query(
            "select worker_id, servers, updated_at from mcp_status where updated_at >= $1 order by worker_id",
        )
        .bind(since)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok((
                    get_str(r, "worker_id")?,
                    get_str(r, "servers")?,
                    get_i64(r, "updated_at")?,
                ))
            })
            .collect()
    }
}
