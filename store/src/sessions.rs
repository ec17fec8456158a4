//! Sessions (conversations). Every query is scoped to the owner: another user's
//! session is indistinguishable from one that does not exist.

use sqlx::any::AnyRow;

use super::runs::{ACTIVE, ActiveRun, RunStatus};
use super::{Result, Store, StoreError, get_enum, get_i64, get_opt_str, get_str};
use weft_wire::api::SessionDto;
use weft_wire::ids::{RunId, SessionId, UserId};
use weft_wire::time::{now_ms, rfc3339};

#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    pub id: SessionId,
    pub user_id: UserId,
    pub title: String,
    pub model: String,
    pub agent: String,
    pub source: String,
    pub active_run_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// Knowledge bases (ids) this session searches besides its agent's
    /// (migration 0023).
    pub knowledge: Vec<String>,
}

impl SessionRecord {
    pub(super) fn from_row(row: &AnyRow) -> Result<SessionRecord> {
        Ok(SessionRecord {
            id: SessionId(get_str(row, "id")?),
            user_id: UserId(get_str(row, "user_id")?),
            title: get_str(row, "title")?,
            model: get_str(row, "model")?,
            agent: get_str(row, "agent")?,
            source: get_str(row, "source")?,
            active_run_id: get_opt_str(row, "active_run_id")?,
            created_at: get_i64(row, "created_at")?,
            updated_at: get_i64(row, "updated_at")?,
            knowledge: serde_json::from_str(&get_str(row, "knowledge")?)
                .map_err(|e| StoreError::Other(format!("sessions.knowledge: {e}")))?,
        })
    }

    pub fn to_dto(&self) -> SessionDto {
        SessionDto {
            id: self.id.0.clone(),
            title: self.title.clone(),
            model: self.model.clone(),
            agent: self.agent.clone(),
            // `mode`: the older name of `agent`, kept on the wire.
            mode: self.agent.clone(),
            source: self.source.clone(),
            active_run_id: self.active_run_id.clone(),
            created_at: rfc3339(self.created_at),
            updated_at: rfc3339(self.updated_at),
            knowledge: self.knowledge.clone(),
        }
    }
}

/// Position in the newest-first session list: `updated_at` then `id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionCursor {
    pub updated_at: i64,
    pub id: String,
}

impl SessionCursor {
    pub fn encode(&self) -> String {
        format!("{}.{}", self.updated_at, self.id)
    }
    pub fn parse(s: &str) -> Option<SessionCursor> {
        let (ts, id) = s.split_once('.')?;
        Some(SessionCursor {
            updated_at: ts.parse().ok()?,
            id: SessionId::parse(id)?.0,
        })
    }
}

pub(super) const SELECT: &str = "select s.id, s.user_id, s.title, s.model, s.agent, s.source, s.created_at, s.updated_at, s.knowledge,
    (select r.id from runs r where r.session_id = s.id and r.status in ('queued', 'running', 'waiting_approval', 'waiting_input', 'waiting_agents')) as active_run_id
    from sessions s";

/// Escape `%`, `_` and `\` for a `like … escape '\'` pattern.
fn like_pattern(q: &str) -> String {
    let mut out = String::with_capacity(q.len() + 2);
    out.push('%');
    for c in q.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

impl Store {
    pub async fn create_session(
        &self,
        user: &UserId,
        title: &str,
        model: &str,
        agent: &str,
        source: &str,
    ) -> Result<SessionRecord> {
        let now = now_ms();
        let rec = SessionRecord {
            id: SessionId::new(),
            user_id: user.clone(),
            title: title.to_string(),
            model: model.to_string(),
            agent: agent.to_string(),
            source: source.to_string(),
            active_run_id: None,
            created_at: now,
            updated_at: now,
            knowledge: Vec::new(),
        };
        let mut w = self.writer().await?;
        sqlx::query("insert into sessions (id, user_id, title, title_lower, model, agent, source, created_at, updated_at) values ($1, $2, $3, $4, $5, $6, $7, $8, $8)")
            .bind(&rec.id.0)
            .bind(&user.0)
            .bind(title)
            .bind(title.to_lowercase())
            .bind(model)
            .bind(agent)
            .bind(source)
            .bind(now)
            .execute(&mut *w)
            .await?;
        Ok(rec)
    }

    pub async fn get_session(&self, user: &UserId, id: &SessionId) -> Result<SessionRecord> {
        let sql = const_format(SELECT, " where s.id = $1 and s.user_id = $2");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&id.0)
            .bind(&user.0)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        SessionRecord::from_row(&row)
    }

    /// Session `id`, whoever asks: for a worker acting in it (in a shared Lark
    /// conversation the run's user is the speaker, not the session's owner).
    pub async fn get_session_unscoped(&self, id: &SessionId) -> Result<SessionRecord> {
        let sql = const_format(SELECT, " where s.id = $1");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&id.0)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        SessionRecord::from_row(&row)
    }

    /// Newest first; `q` filters titles (case-insensitive substring).
    pub async fn list_sessions(
        &self,
        user: &UserId,
        q: Option<&str>,
        limit: i64,
        cursor: Option<&SessionCursor>,
    ) -> Result<(Vec<SessionRecord>, Option<SessionCursor>)> {
        let sql = const_format(
            SELECT,
            " where s.user_id = $1 and s.parent_session_id is null
              and ($2 = '' or s.title_lower like $2 escape '\\')
              and ($3 = 0 or s.updated_at < $4 or (s.updated_at = $4 and s.id < $5))
              order by s.updated_at desc, s.id desc limit $6",
        );
        let pattern = q
            .filter(|q| !q.trim().is_empty())
            .map(|q| like_pattern(q.trim()))
            .unwrap_or_default();
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&user.0)
            .bind(pattern)
            .bind(i64::from(cursor.is_some()))
            .bind(cursor.map(|c| c.updated_at).unwrap_or(0))
            .bind(cursor.map(|c| c.id.clone()).unwrap_or_default())
            .bind(limit + 1)
            .fetch_all(&self.pool)
            .await?;
        let mut out = rows
            .iter()
            .map(SessionRecord::from_row)
            .collect::<Result<Vec<_>>>()?;
        let next = if out.len() as i64 > limit {
            out.truncate(limit as usize);
            out.last().map(|s| SessionCursor {
                updated_at: s.updated_at,
                id: s.id.0.clone(),
            })
        } else {
            None
        };
        Ok((out, next))
    }

    pub async fn update_session(
        &self,
        user: &UserId,
        id: &SessionId,
        title: Option<&str>,
        model: Option<&str>,
        agent: Option<&str>,
    ) -> Result<SessionRecord> {
        let current = self.get_session(user, id).await?;
        let title = title.unwrap_or(&current.title);
        let mut w = self.writer().await?;
        sqlx::query("update sessions set title = $1, title_lower = $2, model = $3, agent = $4, updated_at = $5 where id = $6 and user_id = $7")
            .bind(title)
            .bind(title.to_lowercase())
            .bind(model.unwrap_or(&current.model))
            .bind(agent.unwrap_or(&current.agent))
            .bind(now_ms())
            .bind(&id.0)
            .bind(&user.0)
            .execute(&mut *w)
            .await?;
        drop(w);
        self.get_session(user, id).await
    }

    /// Sets the knowledge bases (ids) `session` searches besides its agent's;
    /// duplicates are dropped, order kept. The caller checked that whoever
    /// adds a base may open it (a search checks again, for the person asking).
    pub async fn set_session_knowledge(
        &self,
        owner: &UserId,
        session: &SessionId,
        bases: &[String],
    ) -> Result<SessionRecord> {
        let mut ids: Vec<&String> = Vec::with_capacity(bases.len());
        for id in bases {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        let json = serde_json::to_string(&ids).map_err(|e| StoreError::Other(e.to_string()))?;
        let mut w = self.writer().await?;
        sqlx::query(
            "update sessions set knowledge = $1, updated_at = $2 where id = $3 and user_id = $4",
        )
        .bind(json)
        .bind(now_ms())
        .bind(&session.0)
        .bind(&owner.0)
        .execute(&mut *w)
        .await?;
        drop(w);
        self.get_session(owner, session).await
    }

    /// Run `run` (and its session, while it still names `gone`) with model
    /// `to`: `gone` is no longer configured.
    pub async fn fall_back_model(
        &self,
        run: &weft_wire::ids::RunId,
        session: &SessionId,
        gone: &str,
        to: &str,
    ) -> Result<()> {
        let mut tx = self.begin().await?;
        sqlx::query("update sessions set model = $1 where id = $2 and model = $3")
            .bind(to)
            .bind(&session.0)
            .bind(gone)
            .execute(&mut *tx)
            .await?;
        sqlx::query("update runs set model = $1 where id = $2")
            .bind(to)
            .bind(&run.0)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Delete a session with its messages and runs, in one transaction. Returns
    /// the runs that were still active: they end `cancelled` (by `"deleted"`),
    /// which the caller announces — to their workers, or to their streams when no
    /// worker had claimed them (docs/protocol.md, "Sessions, double texting,
    /// cancel, deleting").
    pub async fn delete_session(&self, user: &UserId, id: &SessionId) -> Result<Vec<ActiveRun>> {
        let mut tx = self.begin().await?;
        let owned = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select id from sessions where id = $1 and user_id = $2{}",
            self.lock_suffix()
        )))
        .bind(&id.0)
        .bind(&user.0)
        .fetch_optional(&mut *tx)
        .await?;
        if owned.is_none() {
            return Err(StoreError::NotFound);
        }
        // With it go the sessions of the runs it delegated (and theirs),
        // deepest first.
        let tree = sqlx::query(
            "with recursive tree(id, depth) as (
                 select id, 0 from sessions where id = $1
                 union all
                 select s.id, t.depth + 1 from sessions s join tree t on s.parent_session_id = t.id
             )
             select id from tree order by depth desc",
        )
        .bind(&id.0)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| get_str(r, "id"))
        .collect::<Result<Vec<_>>>()?;
        let mut active = Vec::new();
        let now = weft_wire::time::now_ms();
        for session in &tree {
            let ending =
                active_runs_where(&mut tx, self.lock_suffix(), "session_id", session).await?;
            // A delegated run deleted with its session (not its parent's): the
            // parent goes on without it. It is back in `queued`, and the
            // reaper enqueues it (this door does not reach the queue).
            for run in &ending {
                super::delegations::settle_child(
                    &mut tx,
                    self.lock_suffix(),
                    &run.id,
                    super::delegations::DelegationStatus::Cancelled,
                    "",
                    now,
                )
                .await?;
            }
            active.extend(ending);
            for table in [
                "delete from messages where session_id = $1",
                "delete from runs where session_id = $1",
                "delete from sessions where id = $1",
            ] {
                sqlx::query(table).bind(session).execute(&mut *tx).await?;
            }
        }
        tx.commit().await?;
        Ok(active)
    }
}

/// The active runs whose `column` (`session_id` or `user_id`) is `value`, locked.
pub(super) async fn active_runs_where(
    tx: &mut crate::TxConn,
    lock: &str,
    column: &'static str,
    value: &str,
) -> Result<Vec<ActiveRun>> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "select id, status from runs where {column} = $1 and status in {ACTIVE}{lock}"
    )))
    .bind(value)
    .fetch_all(&mut *tx)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(ActiveRun {
                id: RunId(get_str(r, "id")?),
                // Only a running run has a worker that will end its stream.
                was_queued: get_enum::<RunStatus>(r, "status")? != RunStatus::Running,
            })
        })
        .collect()
}

fn const_format(a: &str, b: &str) -> String {
    let mut s = String::with_capacity(a.len() + b.len());
    s.push_str(a);
    s.push_str(b);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(like_pattern("A_b%"), "%a\\_b\\%%");
    }

    #[test]
    fn cursors_round_trip_and_reject_junk() {
        let c = SessionCursor {
            updated_at: 5,
            id: SessionId::new().0,
        };
        assert_eq!(SessionCursor::parse(&c.encode()), Some(c));
        assert_eq!(SessionCursor::parse("5.x' or 1=1"), None);
    }
}
