//! Undo, redo, regenerate, edit (docs/agent.md, "Undo, redo, regenerate, edit"). A
//! turn is a run and the messages it carries (the user's message(s) and everything
//! the agent did). Nothing is deleted: undone messages are hidden (`hidden = 1`)
//! until a redo, replaced replies are kept as alternatives (`hidden = 2`) the owner
//! can switch back to. All of it is refused while the session has an active run,
//! and each operation is one transaction under the session's lock, so two clients
//! (or two gateways) cannot interleave.

use super::session_writes::{insert_run, lock_session, rewrite_history};
use super::user_limits::{LimitCheck, RunLimits, check_run_limits};
use super::{Result, Store, StoreError, get_opt_str, get_str};
use weft_wire::ids::{RunId, SessionId, UserId};
use weft_wire::time::now_ms;

/// What a turn operation did.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnOutcome {
    /// Undo or redo: the turn (run) whose messages were hidden or shown again.
    Done {
        run: RunId,
    },
    /// Regenerate or edit: the new run to enqueue.
    Started {
        run: RunId,
    },
    /// A run is active in the session.
    RunActive {
        run: RunId,
    },
    /// Nothing to undo / redo / regenerate.
    Nothing,
    /// Undo in a shared conversation: the last turn was asked by someone else.
    NotYours {
        asked_by: UserId,
    },
    TooManyActive,
    RateLimited {
        retry_after_secs: u64,
    },
}

/// One reply of the last turn: the one shown and the alternatives.
#[derive(Debug, Clone, PartialEq)]
pub struct Alternative {
    pub run: RunId,
    pub reply: String,
    /// The question it answered, when an edit changed it since.
    pub user_text: Option<String>,
    pub shown: bool,
    pub created_at: i64,
}

/// The session's newest turn that is shown, if any: `(run, group root)`.
async fn last_shown_turn<C>(tx: &mut C, session: &SessionId) -> Result<Option<(RunId, RunId)>>
where
    for<'c> &'c mut C: sqlx::Executor<'c, Database = sqlx::Any>,
{
    let row = sqlx::query(
        "select m.run_id, r.turn_of from messages m join runs r on r.id = m.run_id
         where m.session_id = $1 and m.hidden = 0 and m.run_id is not null
         order by m.ord desc limit 1",
    )
    .bind(&session.0)
    .fetch_optional(&mut *tx)
    .await?;
    Ok(match row {
        Some(r) => {
            let run = RunId(get_str(&r, "run_id")?);
            let root = get_opt_str(&r, "turn_of")?.map_or_else(|| run.clone(), RunId);
            Some((run, root))
        }
        None => None,
    })
}

/// Who asked the turn `root` began: its run's user (in a shared conversation
/// not always the session's owner).
async fn asked_by(tx: &mut crate::TxConn, root: &RunId) -> Result<UserId> {
    let row = sqlx::query("select user_id from runs where id = $1")
        .bind(&root.0)
        .fetch_one(&mut *tx)
        .await?;
    Ok(UserId(get_str(&row, "user_id")?))
}

async fn active_run(tx: &mut crate::TxConn, session: &SessionId) -> Result<Option<RunId>> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "select id from runs where session_id = $1 and status in {}",
        super::runs::ACTIVE
    )))
    .bind(&session.0)
    .fetch_optional(&mut *tx)
    .await?;
    row.map(|r| get_str(&r, "id").map(RunId)).transpose()
}

/// The reply of `shown` becomes an alternative (its question, when it is the
/// turn's own, stays).
async fn keep_as_alternative(tx: &mut crate::TxConn, shown: &RunId, root: &RunId) -> Result<()> {
    sqlx::query(
        "update messages set hidden = 2 where run_id = $1 and hidden = 0 and (role <> 'user' or run_id <> $2)",
    )
    .bind(&shown.0)
    .bind(&root.0)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

/// Drop the summary when it covers any of the messages of `run`.
async fn forget_summary_covering(
    tx: &mut crate::TxConn,
    session: &SessionId,
    run: &RunId,
) -> Result<()> {
    sqlx::query(
        "delete from session_summaries where session_id = $1 and upto_ord >=
             (select min(ord) from messages where run_id = $2)",
    )
    .bind(&session.0)
    .bind(&run.0)
    .execute(&mut *tx)
    .await?;
    Ok(())
}

impl Store {
    /// Hide the newest shown turn (the user's message and the agent's reply).
    /// Takes the last shown turn out of `user`'s session. With `asker`, only when
    /// that user asked it (a shared conversation: see docs/lark.md, "Who is
    /// speaking").
    pub async fn undo_turn(
        &self,
        user: &UserId,
        session: &SessionId,
        asker: Option<&UserId>,
    ) -> Result<TurnOutcome> {
        self.get_session(user, session).await?;
        let mut tx = self.begin().await?;
        lock_session(&mut tx, self.lock_suffix(), session).await?;
        rewrite_history(&mut tx, session).await?;
        if let Some(run) = active_run(&mut tx, session).await? {
            return Ok(TurnOutcome::RunActive { run });
        }
        let Some((run, root)) = last_shown_turn(&mut *tx, session).await? else {
            return Ok(TurnOutcome::Nothing);
        };
        let asked_by = asked_by(&mut tx, &root).await?;
        if asker.is_some_and(|a| a != &asked_by) {
            return Ok(TurnOutcome::NotYours { asked_by });
        }
        forget_summary_covering(&mut tx, session, &run).await?;
        // The turn's own user messages, and the shown reply (whichever run of
        // its group that is); alternatives stay alternatives.
        sqlx::query(
            "update messages set hidden = 1 where session_id = $1 and hidden = 0 and run_id in
                 (select id from runs where id = $2 or id = (select turn_of from runs where id = $2)
                     or turn_of = (select coalesce(turn_of, id) from runs where id = $2))",
        )
        .bind(&session.0)
        .bind(&run.0)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(TurnOutcome::Done { run })
    }

    /// Show again the turn undone last, if nothing was said after it.
    pub async fn redo_turn(&self, user: &UserId, session: &SessionId) -> Result<TurnOutcome> {
        self.get_session(user, session).await?;
        let mut tx = self.begin().await?;
        lock_session(&mut tx, self.lock_suffix(), session).await?;
        rewrite_history(&mut tx, session).await?;
        if let Some(run) = active_run(&mut tx, session).await? {
            return Ok(TurnOutcome::RunActive { run });
        }
        // The earliest undone turn after everything shown.
        let row = sqlx::query(
            "select run_id from messages where session_id = $1 and hidden = 1
                 and ord > coalesce((select max(ord) from messages where session_id = $1 and hidden = 0), '')
             order by ord limit 1",
        )
        .bind(&session.0)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            return Ok(TurnOutcome::Nothing);
        };
        let first = RunId(get_str(&row, "run_id")?);
        // Everything that undo hid together: the runs of that turn's group.
        sqlx::query(
            "update messages set hidden = 0 where session_id = $1 and hidden = 1 and run_id in
                 (select id from runs where coalesce(turn_of, id) = (select coalesce(turn_of, id) from runs where id = $2))",
        )
        .bind(&session.0)
        .bind(&first.0)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(TurnOutcome::Done { run: first })
    }

    /// Answer the newest turn's question again (with `new_text`: after editing
    /// it). The reply shown so far becomes an alternative. The new run is the
    /// turn's asker's (their limits, their instructions); with `asker`, only
    /// that user may do it.
    pub async fn regenerate_turn(
        &self,
        user: &UserId,
        session: &SessionId,
        new_text: Option<&str>,
        asker: Option<&UserId>,
        limits: &RunLimits,
    ) -> Result<TurnOutcome> {
        let rec = self.get_session(user, session).await?;
        let now = now_ms();
        let mut tx = self.begin().await?;
        lock_session(&mut tx, self.lock_suffix(), session).await?;
        rewrite_history(&mut tx, session).await?;
        if let Some(run) = active_run(&mut tx, session).await? {
            return Ok(TurnOutcome::RunActive { run });
        }
        let Some((shown, root)) = last_shown_turn(&mut *tx, session).await? else {
            return Ok(TurnOutcome::Nothing);
        };
        // The question: the root run's user messages.
        let question = sqlx::query(
            "select id, content from messages where run_id = $1 and role = 'user' order by ord desc limit 1",
        )
        .bind(&root.0)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(question) = question else {
            return Ok(TurnOutcome::Nothing);
        };
        let asked_by = asked_by(&mut tx, &root).await?;
        if asker.is_some_and(|a| a != &asked_by) {
            return Ok(TurnOutcome::NotYours { asked_by });
        }
        let user = &asked_by;
        match check_run_limits(&mut tx, self.lock_suffix(), user, limits, now).await? {
            LimitCheck::Within => {}
            LimitCheck::TooManyActive => return Ok(TurnOutcome::TooManyActive),
            LimitCheck::RateLimited { retry_after_secs } => {
                return Ok(TurnOutcome::RateLimited { retry_after_secs });
            }
        }
        forget_summary_covering(&mut tx, session, &root).await?;
        if let Some(text) = new_text {
            // Each reply remembers the question it answered.
            sqlx::query(
                "update runs set user_text = $1 where (id = $2 or turn_of = $2) and user_text is null",
            )
            .bind(get_str(&question, "content")?)
            .bind(&root.0)
            .execute(&mut *tx)
            .await?;
            sqlx::query("update messages set content = $1 where id = $2")
                .bind(text)
                .bind(get_str(&question, "id")?)
                .execute(&mut *tx)
                .await?;
        }
        // The shown reply (not the question) becomes an alternative.
        keep_as_alternative(&mut tx, &shown, &root).await?;
        let run = RunId::new();
        insert_run(
            &mut tx, &run, session, user, &rec.model, &rec.agent, None, now,
        )
        .await?;
        sqlx::query("update runs set turn_of = $1, user_text = $2 where id = $3")
            .bind(&root.0)
            .bind(new_text)
            .bind(&run.0)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(TurnOutcome::Started { run })
    }

    /// The replies of the newest turn: the one shown and its alternatives.
    pub async fn alternatives(
        &self,
        user: &UserId,
        session: &SessionId,
    ) -> Result<Vec<Alternative>> {
        self.get_session(user, session).await?;
        let mut tx = self.pool.begin().await?;
        let Some((shown, root)) = last_shown_turn(&mut *tx, session).await? else {
            return Ok(Vec::new());
        };
        let rows = sqlx::query(
            "select r.id, r.user_text, r.created_at,
                 (select m.content from messages m where m.run_id = r.id and m.role = 'assistant'
                  order by m.ord desc limit 1) as reply
             from runs r where (r.id = $1 or r.turn_of = $1) and r.status = 'succeeded'
             order by r.created_at",
        )
        .bind(&root.0)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        rows.iter()
            .map(|r| {
                let run = RunId(get_str(r, "id")?);
                Ok(Alternative {
                    shown: run == shown,
                    run,
                    reply: get_opt_str(r, "reply")?.unwrap_or_default(),
                    user_text: get_opt_str(r, "user_text")?,
                    created_at: super::get_i64(r, "created_at")?,
                })
            })
            .collect()
    }

    /// Show `choice`'s reply for the newest turn (and the question it answered).
    pub async fn choose_alternative(
        &self,
        user: &UserId,
        session: &SessionId,
        choice: &RunId,
    ) -> Result<TurnOutcome> {
        self.get_session(user, session).await?;
        let mut tx = self.begin().await?;
        lock_session(&mut tx, self.lock_suffix(), session).await?;
        rewrite_history(&mut tx, session).await?;
        if let Some(run) = active_run(&mut tx, session).await? {
            return Ok(TurnOutcome::RunActive { run });
        }
        let Some((shown, root)) = last_shown_turn(&mut *tx, session).await? else {
            return Ok(TurnOutcome::Nothing);
        };
        let chosen = sqlx::query(
            "select user_text from runs where id = $1 and (id = $2 or turn_of = $2) and status = 'succeeded'",
        )
        .bind(&choice.0)
        .bind(&root.0)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(StoreError::NotFound)?;
        if shown != *choice {
            keep_as_alternative(&mut tx, &shown, &root).await?;
            sqlx::query("update messages set hidden = 0 where run_id = $1 and hidden = 2")
                .bind(&choice.0)
                .execute(&mut *tx)
                .await?;
            // The question it answered, if an edit changed it since.
            if let Some(text) = get_opt_str(&chosen, "user_text")? {
                sqlx::query(
                    "update messages set content = $1 where id =
                         (select id from messages where run_id = $2 and role = 'user' order by ord desc limit 1)",
                )
                .bind(text)
                .bind(&root.0)
                .execute(&mut *tx)
                .await?;
            }
            forget_summary_covering(&mut tx, session, &root).await?;
        }
        tx.commit().await?;
        Ok(TurnOutcome::Done {
            run: choice.clone(),
        })
    }
}
