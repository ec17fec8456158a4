//! The send transaction (docs/runs.md, "One chat turn, in full", step 1): validate
//! against the session's active run and the user's limits, then write the user
//! message and — unless it waits behind an active run — the new run, atomically.
//! The session row is the serialisation point for the session (locked `for update`
//! on Postgres; SQLite's `begin immediate` serialises all writers); the user's row,
//! locked last, for the user's run limits (`user_limits`), which every run a send
//! creates is checked against — an interrupt's too. A message that would wait
//! behind an active run is refused when `queued_messages_per_session` already wait.
//! A message with files is checked against its user's storage quota under the same
//! lock (`storage_quota`).

use super::attachments::{NewAttachment, insert_attachments};
use super::messages::{NEXT_SEQ, order_key};
use super::runs::{ACTIVE, ActiveRun, RunStatus};
use super::session_writes::{attach_queued, end_as_cancelled, insert_run, touch_session};
use super::storage_quota::{StorageUse, check_storage};
use super::user_limits::{LimitCheck, RunLimits, check_run_limits};
use super::{
    Conflict, Dialect, Result, Store, StoreError, get_enum, get_i64, get_opt_str, get_str,
};
use weft_wire::api::Multitask;
use weft_wire::ids::{MessageId, RunId, SessionId, UserId};
use weft_wire::time::now_ms;

/// A message as its front door checked it (who may use which model and agent,
/// which files were accepted): what the run service sends
/// (`weft_runs::Runs::send`), and the part of a [`SendRequest`] the caller
/// decides.
#[derive(Debug, Clone)]
pub struct NewMessage {
    /// Who speaks: the message's author and the user of the run it starts —
    /// whose run limits, storage quota and idempotency keys count.
    pub user: UserId,
    /// Who owns the session: `user`, except in a shared Lark conversation,
    /// where the bot, having checked the chat's binding, sends every member's
    /// message into the session of whoever spoke first.
    pub session_owner: UserId,
    /// The speaker's name in a shared conversation (see migration 0013).
    pub author_name: Option<String>,
    pub session: SessionId,
    pub text: String,
    /// Files already stored (see `store::attachments`), in order.
    pub attachments: Vec<NewAttachment>,
    pub model: Option<String>,
    /// The agent the run uses (none: the session's).
    pub agent: Option<String>,
    pub multitask: Multitask,
    pub idempotency_key: Option<String>,
    /// The Lark message this one came from (the bot replies to it).
    pub lark_message_id: Option<String>,
    /// Plan mode: the run proposes a plan before anything is carried out. A
    /// plan starts a run of its own, so it never waits behind an active run:
    /// `enqueue` is refused like `reject` (`interrupt` still works).
    pub plan: bool,
}

/// A send: the message, and the limits and trace context it is sent under.
#[derive(Debug, Clone)]
pub struct SendRequest {
    pub message: NewMessage,
    /// The user's run limits, checked whenever the send creates a run.
    pub limits: RunLimits,
    /// Messages that may wait behind a session's active run; 0 disables.
    pub queued_messages_per_session: u64,
    /// Bytes of distinct attachments the user may store; 0 disables.
    pub storage_bytes_per_user: u64,
    /// The W3C trace context of the request, stored on the run it creates so
    /// every attempt of the run continues that trace.
    pub traceparent: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    pub run_id: RunId,
    pub message_id: MessageId,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SendOutcome {
    Started {
        run: NewRun,
        interrupted: Option<ActiveRun>,
    },
    Queued {
        message_id: MessageId,
        active_run_id: RunId,
    },
    /// The idempotency key was seen before: nothing new was written.
    Replayed {
        message_id: MessageId,
        run_id: Option<RunId>,
    },
    Rejected {
        active_run_id: RunId,
    },
    TooManyActive,
    RateLimited {
        retry_after_secs: u64,
    },
    /// `queued_messages_per_session` messages already wait behind the active run.
    QueueFull {
        active_run_id: RunId,
    },
    /// The message's files would take the user past `storage_bytes_per_user`.
    OverStorage(StorageUse),
}

impl Store {
    /// The send transaction (docs/runs.md, "One chat turn, in full", step 1).
    pub async fn send_message(&self, req: &SendRequest) -> Result<SendOutcome> {
        let mut tx = self.begin().await?;
        let outcome = self.send_in(&mut tx, req).await?;
        if matches!(
            outcome,
            SendOutcome::Started { .. } | SendOutcome::Queued { .. }
        ) {
            tx.commit().await?;
        }
        Ok(outcome)
    }

    /// The send transaction's work inside `tx`, which the caller commits when
    /// the outcome is `Started` or `Queued` (a refusal writes nothing, except
    /// an `interrupt` that ended the active run and was then refused by the
    /// run limits: its caller rolls back). A schedule's fire sends in the
    /// transaction that claims the fire (`store::schedules`).
    pub(super) async fn send_in(
        &self,
        tx: &mut crate::TxConn,
        req: &SendRequest,
    ) -> Result<SendOutcome> {
        let now = now_ms();
        let look = self.look_before_send(tx, req).await?;

        if let Some(seen) = look.replayed {
            return Ok(seen);
        }

        let mut interrupted = None;
        if let Some((active_id, status)) = look.active {
            match req.message.multitask {
                Multitask::Reject | Multitask::Enqueue if req.message.plan => {
                    return Ok(SendOutcome::Rejected {
                        active_run_id: active_id,
                    });
                }
                Multitask::Reject => {
                    return Ok(SendOutcome::Rejected {
                        active_run_id: active_id,
                    });
                }
                Multitask::Enqueue => {
                    let cap = req.queued_messages_per_session;
                    if cap > 0 && look.waiting as u64 >= cap {
                        return Ok(SendOutcome::QueueFull {
                            active_run_id: active_id,
                        });
                    }
                    if let Some(usage) = self.check_storage(tx, req).await? {
                        return Ok(SendOutcome::OverStorage(usage));
                    }
                    let message_id = insert_user_message(tx, req, None, now).await?;
                    remember_key(tx, req, &message_id, None, now).await?;
                    touch_session(tx, &req.message.session, now)?;
                    return Ok(SendOutcome::Queued {
                        message_id,
                        active_run_id: active_id,
                    });
                }
                Multitask::Interrupt => {
                    // A delegated run interrupted in its own session: its
                    // parent is back in `queued`, and the reaper enqueues it
                    // (this door does not reach the queue).
                    end_as_cancelled(tx, self.lock_suffix(), &active_id, "interrupt", now).await?;
                    interrupted = Some(ActiveRun {
                        id: active_id,
                        was_queued: status == RunStatus::Queued,
                    });
                }
            }
        }
        // Counted after the interrupt above: the run it ended is no longer active
        // (and a refusal rolls the cancel back with everything else).
        match check_run_limits(tx, self.lock_suffix(), &req.message.user, &req.limits, now).await? {
            LimitCheck::Within => {}
            LimitCheck::TooManyActive => return Ok(SendOutcome::TooManyActive),
            LimitCheck::RateLimited { retry_after_secs } => {
                return Ok(SendOutcome::RateLimited { retry_after_secs });
            }
        }
        if let Some(usage) = self.check_storage(tx, req).await? {
            return Ok(SendOutcome::OverStorage(usage));
        }
        let session = look.session;
        let model = req
            .message
            .model
            .clone()
            .unwrap_or(get_str(&session, "model")?);
        let agent = req
            .message
            .agent
            .clone()
            .unwrap_or(get_str(&session, "agent")?);
        let run_id = RunId::new();
        insert_run(
            tx,
            &run_id,
            &req.message.session,
            &req.message.user,
            &model,
            &agent,
            req.traceparent.as_deref(),
            now,
        )
        .await?;
        if req.message.plan {
            sqlx::query("update runs set plan = 1 where id = $1")
                .bind(&run_id.0)
                .execute(&mut *tx)
                .await?;
        }
        // Messages that were waiting behind the interrupted run (or stranded by a
        // run that ended without its worker) join this one.
        if look.waiting > 0 {
            attach_queued(tx, &req.message.session, &run_id).await?;
        }
        let message_id = insert_user_message(tx, req, Some(&run_id), now).await?;
        remember_key(tx, req, &message_id, Some(&run_id), now).await?;
        if get_str(&session, "title")?.is_empty() {
            sqlx::query("update sessions set title = $1, title_lower = $2 where id = $3")
                .bind(auto_title(&req.message.text))
                .bind(auto_title(&req.message.text).to_lowercase())
                .bind(&req.message.session.0)
                .execute(&mut *tx)
                .await?;
        }
        touch_session(tx, &req.message.session, now)?;
        Ok(SendOutcome::Started {
            run: NewRun { run_id, message_id },
            interrupted,
        })
    }

    /// The user's storage quota for the message's files (the user's row locked).
    async fn check_storage(
        &self,
        tx: &mut crate::TxConn,
        req: &SendRequest,
    ) -> Result<Option<StorageUse>> {
        check_storage(
            tx,
            self.lock_suffix(),
            &req.message.user,
            &req.message.attachments,
            req.storage_bytes_per_user,
        )
        .await
    }

    /// Everything the send decides on, in one round trip (the send holds SQLite's
    /// single writer, so each statement it waits on delays every other writer):
    /// the session, a replayed idempotency key, the active run and whether
    /// messages wait in the session (on Postgres after locking the session's row,
    /// in a statement of its own). The user's limits are counted later, under the
    /// user's lock, and only when a run is to be created.
    async fn look_before_send(
        &self,
        tx: &mut crate::TxConn,
        req: &SendRequest,
    ) -> Result<SendLook> {
        let lock = self.lock_suffix();
        if !lock.is_empty() {
            // Lock the session in a statement of its own. A read-committed
            // statement that waited for the lock would still read the runs, keys
            // and waiting messages of the snapshot it started with, missing what
            // the send that held the lock just committed (a parallel send then
            // failed on `runs_one_active` instead of waiting behind that run).
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "select id from sessions where id = $1 and user_id = $2{lock}"
            )))
            .bind(&req.message.session.0)
            .bind(&req.message.session_owner.0)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound)?;
        }
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select s.title, s.model, s.agent, k.message_id as seen_message, k.run_id as seen_run,
                 r.id as active_id, r.status as active_status,
                 (select count(*) from messages m where m.session_id = s.id and m.queued = 1) as waiting
             from sessions s
             left join idempotency_keys k on k.user_id = $2 and k.key = $3
             left join runs r on r.session_id = s.id and r.status in {ACTIVE}
             where s.id = $1 and s.user_id = $4"
        )))
        .bind(&req.message.session.0)
        .bind(&req.message.user.0)
        .bind(req.message.idempotency_key.as_deref())
        .bind(&req.message.session_owner.0)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(StoreError::NotFound)?;

        let replayed = match get_opt_str(&row, "seen_message")? {
            Some(message_id) => Some(SendOutcome::Replayed {
                message_id: MessageId(message_id),
                run_id: get_opt_str(&row, "seen_run")?.map(RunId),
            }),
            None => None,
        };
        let mut active = match get_opt_str(&row, "active_id")? {
            Some(id) => Some((RunId(id), get_enum::<RunStatus>(&row, "active_status")?)),
            None => None,
        };
        if let (Some((id, _)), true) = (&active, self.dialect == Dialect::Postgres) {
            // Lock the active run too, so its worker's end (which creates the
            // follow-up for queued messages) waits for this message; re-check it,
            // since it may have ended while we waited.
            active = sqlx::query(sqlx::AssertSqlSafe(format!(
                "select id, status from runs where id = $1 and status in {ACTIVE}{lock}"
            )))
            .bind(&id.0)
            .fetch_optional(&mut *tx)
            .await?
            .map(|r| Ok::<_, StoreError>((RunId(get_str(&r, "id")?), get_enum(&r, "status")?)))
            .transpose()?;
        }

        Ok(SendLook {
            waiting: get_i64(&row, "waiting")?,
            session: row,
            replayed,
            active,
        })
    }
}

/// What [`Store::look_before_send`] found.
struct SendLook {
    /// The session row: `title`, `model`, `agent`.
    session: sqlx::any::AnyRow,
    replayed: Option<SendOutcome>,
    active: Option<(RunId, RunStatus)>,
    /// Messages waiting in the session.
    waiting: i64,
}

async fn insert_user_message(
    tx: &mut crate::TxConn,
    req: &SendRequest,
    run: Option<&RunId>,
    now: i64,
) -> Result<MessageId> {
    let id = MessageId::new();
    // `seq`: the send's transaction holds the session's row and bumps its
    // write count after this (`touch_session`). Deferred: nothing reads what
    // it returns, so on SQLite it goes with the next statement or the commit
    // (`writer`'s module doc).
    tx.defer(sqlx::query(sqlx::AssertSqlSafe(format!(
        "insert into messages (id, session_id, role, content, run_id, queued, created_at, ord, lark_message_id, author_id, author_name, seq) values ($1, $2, 'user', $3, $4, $5, $6, $7, $8, $9, $10, {NEXT_SEQ})"
    )))
    .bind(&id.0)
    .bind(&req.message.session.0)
    .bind(&req.message.text)
    .bind(run.map(|r| r.0.clone()))
    .bind(i64::from(run.is_none()))
    .bind(now)
    .bind(order_key(run, "user", 0, &id))
    .bind(req.message.lark_message_id.as_deref())
    .bind(&req.message.user.0)
    .bind(req.message.author_name.as_deref()))?;
    insert_attachments(
        tx,
        &req.message.user,
        &req.message.session,
        &id,
        &req.message.attachments,
        now,
    )
    .await?;
    Ok(id)
}

async fn remember_key(
    tx: &mut crate::TxConn,
    req: &SendRequest,
    message: &MessageId,
    run: Option<&RunId>,
    now: i64,
) -> Result<()> {
    let Some(key) = &req.message.idempotency_key else {
        return Ok(());
    };
    sqlx::query("insert into idempotency_keys (user_id, key, session_id, message_id, run_id, created_at) values ($1, $2, $3, $4, $5, $6)")
        .bind(&req.message.user.0)
        .bind(key)
        .bind(&req.message.session.0)
        .bind(&message.0)
        .bind(run.map(|r| r.0.clone()))
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(|e| StoreError::unique(e, Conflict::IdempotencyKeyRace))?;
    Ok(())
}

/// A session title from its first message (and a schedule's default name
/// from its prompt): the first line, at most 60 characters.
pub fn auto_title(text: &str) -> String {
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
