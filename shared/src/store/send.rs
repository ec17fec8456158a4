//! The send transaction (ARCHITECTURE §4 step 1): validate against the session's
//! active run and the user's limits, then write the user message and — unless it
//! waits behind an active run — the new run, atomically. The session row is the
//! serialisation point (locked `for update` on Postgres; SQLite's `begin immediate`
//! serialises all writers).

use super::messages::order_key;
use super::runs::{
    ACTIVE, ActiveRun, NewRun, RunStatus, SendOutcome, SendRequest, attach_queued,
    end_as_cancelled, insert_run, touch_session,
};
use super::{Result, Store, StoreError, get_enum, get_i64, get_opt_i64, get_opt_str, get_str};
use crate::api::Multitask;
use crate::ids::{MessageId, RunId, SessionId};
use crate::time::now_ms;

impl Store {
    /// The send transaction (ARCHITECTURE §4 step 1).
    pub async fn send_message(&self, req: &SendRequest) -> Result<SendOutcome> {
        let mut tx = self.begin().await?;
        let now = now_ms();
        let lock = self.lock_suffix();
        let session = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select id, title, model, mode from sessions where id = $1 and user_id = $2{lock}"
        )))
        .bind(&req.session.0)
        .bind(&req.user.0)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or(StoreError::NotFound)?;

        if let Some(key) = &req.idempotency_key {
            let seen = sqlx::query(
                "select message_id, run_id from idempotency_keys where user_id = $1 and key = $2",
            )
            .bind(&req.user.0)
            .bind(key)
            .fetch_optional(&mut **tx)
            .await?;
            if let Some(row) = seen {
                return Ok(SendOutcome::Replayed {
                    message_id: MessageId(get_str(&row, "message_id")?),
                    run_id: get_opt_str(&row, "run_id")?.map(RunId),
                });
            }
        }

        let active = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select id, status from runs where session_id = $1 and status in {ACTIVE}{lock}"
        )))
        .bind(&req.session.0)
        .fetch_optional(&mut **tx)
        .await?;

        let mut interrupted = None;
        if let Some(row) = active {
            let active_id = RunId(get_str(&row, "id")?);
            let status: RunStatus = get_enum(&row, "status")?;
            match req.multitask {
                Multitask::Reject => {
                    return Ok(SendOutcome::Rejected {
                        active_run_id: active_id,
                    });
                }
                Multitask::Enqueue => {
                    let message_id =
                        insert_user_message(&mut tx, &req.session, None, &req.text, now).await?;
                    remember_key(&mut tx, req, &message_id, None, now).await?;
                    touch_session(&mut tx, &req.session, now).await?;
                    tx.commit().await?;
                    return Ok(SendOutcome::Queued {
                        message_id,
                        active_run_id: active_id,
                    });
                }
                Multitask::Interrupt => {
                    end_as_cancelled(&mut tx, &active_id, "interrupt", now).await?;
                    interrupted = Some(ActiveRun {
                        id: active_id,
                        was_queued: status == RunStatus::Queued,
                    });
                }
            }
        } else if let Some(outcome) = self.check_user_limits(&mut tx, req, now).await? {
            return Ok(outcome);
        }

        let model = req.model.clone().unwrap_or(get_str(&session, "model")?);
        let mode = req.mode.clone().unwrap_or(get_str(&session, "mode")?);
        let run_id = RunId::new();
        insert_run(
            &mut tx,
            &run_id,
            &req.session,
            &req.user,
            &model,
            &mode,
            now,
        )
        .await?;
        // Messages that were waiting behind the interrupted run join this one.
        attach_queued(&mut tx, &req.session, &run_id).await?;
        let message_id =
            insert_user_message(&mut tx, &req.session, Some(&run_id), &req.text, now).await?;
        remember_key(&mut tx, req, &message_id, Some(&run_id), now).await?;
        if get_str(&session, "title")?.is_empty() {
            sqlx::query("update sessions set title = $1, title_lower = $2 where id = $3")
                .bind(auto_title(&req.text))
                .bind(auto_title(&req.text).to_lowercase())
                .bind(&req.session.0)
                .execute(&mut **tx)
                .await?;
        }
        touch_session(&mut tx, &req.session, now).await?;
        tx.commit().await?;
        Ok(SendOutcome::Started {
            run: NewRun { run_id, message_id },
            interrupted,
        })
    }

    async fn check_user_limits(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        req: &SendRequest,
        now: i64,
    ) -> Result<Option<SendOutcome>> {
        if req.active_runs_per_user > 0 {
            let row = sqlx::query(sqlx::AssertSqlSafe(format!(
                "select count(*) as n from runs where user_id = $1 and status in {ACTIVE}"
            )))
            .bind(&req.user.0)
            .fetch_one(&mut **tx)
            .await?;
            if get_i64(&row, "n")? as u64 >= req.active_runs_per_user {
                return Ok(Some(SendOutcome::TooManyActive));
            }
        }
        if req.runs_per_minute_per_user > 0 {
            let row = sqlx::query("select count(*) as n, min(created_at) as oldest from runs where user_id = $1 and created_at > $2")
                .bind(&req.user.0)
                .bind(now - 60_000)
                .fetch_one(&mut **tx)
                .await?;
            if get_i64(&row, "n")? as u64 >= req.runs_per_minute_per_user {
                let oldest = get_opt_i64(&row, "oldest")?.unwrap_or(now);
                let wait_ms = (oldest + 60_000 - now).max(1000);
                return Ok(Some(SendOutcome::RateLimited {
                    retry_after_secs: (wait_ms as u64).div_ceil(1000),
                }));
            }
        }
        Ok(None)
    }
}

async fn insert_user_message(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    session: &SessionId,
    run: Option<&RunId>,
    text: &str,
    now: i64,
) -> Result<MessageId> {
    let id = MessageId::new();
    sqlx::query(
        "insert into messages (id, session_id, role, content, run_id, queued, created_at, ord) values ($1, $2, 'user', $3, $4, $5, $6, $7)",
    )
    .bind(&id.0)
    .bind(&session.0)
    .bind(text)
    .bind(run.map(|r| r.0.clone()))
    .bind(i64::from(run.is_none()))
    .bind(now)
    .bind(order_key(run, "user", 0, &id))
    .execute(&mut **tx)
    .await?;
    Ok(id)
}

async fn remember_key(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    req: &SendRequest,
    message: &MessageId,
    run: Option<&RunId>,
    now: i64,
) -> Result<()> {
    let Some(key) = &req.idempotency_key else {
        return Ok(());
    };
    sqlx::query("insert into idempotency_keys (user_id, key, session_id, message_id, run_id, created_at) values ($1, $2, $3, $4, $5, $6)")
        .bind(&req.user.0)
        .bind(key)
        .bind(&req.session.0)
        .bind(&message.0)
        .bind(run.map(|r| r.0.clone()))
        .bind(now)
        .execute(&mut **tx)
        .await
        .map_err(|e| StoreError::unique(e, "idempotency_key_race"))?;
    Ok(())
}

/// A session title from its first message: the first line, at most 60 characters.
fn auto_title(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let mut title: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        title.push('…');
    }
    title
}

#[cfg(test)]
mod tests {
    #[test]
    fn auto_titles() {
        assert_eq!(super::auto_title("\n  hello world \nmore"), "hello world");
        assert_eq!(super::auto_title(&"字".repeat(70)).chars().count(), 61);
    }
}
