//! A person's inbox (migration 0036, docs/schedules.md "Notifications"): what
//! happened while nobody watched. Rows are written inside the transaction that
//! ends a scheduled run or stores its waits, keyed so a retried transaction
//! never notifies twice, and only for runs a schedule made: a run a person
//! sent and watches notifies nobody (and costs no statement).

use sqlx::any::AnyRow;

use super::{Result, Store, get_i64, get_opt_i64, get_opt_str, get_str};
use weft_wire::api::NotificationKind;
use weft_wire::ids::{RunId, UserId};

/// The characters of a reply an end's notification carries.
const BODY_CHARS: usize = 300;
/// Notifications listed at most.
pub const MAX_LISTED: i64 = 200;

#[derive(Debug, Clone, PartialEq)]
pub struct NotificationRecord {
    pub id: String,
    pub kind: NotificationKind,
    pub title: String,
    pub body: String,
    pub session_id: Option<String>,
    pub run_id: Option<String>,
    pub schedule_id: Option<String>,
    pub created_at: i64,
    pub read_at: Option<i64>,
}

/// What the inbox keeps of a notification's text: its first
/// [`BODY_CHARS`] characters (the channels get more, `channels::DELIVERY_CHARS`).
fn inbox_body(body: &str) -> String {
    let mut short: String = body.chars().take(BODY_CHARS).collect();
    if short.chars().count() == BODY_CHARS {
        short.push('…');
    }
    short
}

impl Store {
    /// Notify the owner of scheduled run `run` (its schedule's name as the
    /// title) in `tx`: `kind` with `body`, once per `key`; and, the first
    /// time, deliver it to the schedule's channels (`channels::fan_out`).
    pub(super) async fn notify_scheduled(
        &self,
        tx: &mut super::WriteTx,
        run: &RunId,
        kind: NotificationKind,
        key: &str,
        body: &str,
        now: i64,
    ) -> Result<()> {
        let short = inbox_body(body);
        let id = format!("ntf_{}", uuid::Uuid::now_v7().simple());
        let made = sqlx::query(
            "insert into notifications (id, user_id, kind, key, title, body, session_id, run_id, schedule_id, created_at)
             select $1, r.user_id, $2, $3, s.name, $4, r.session_id, r.id, s.id, $5
             from runs r join schedules s on s.id = r.schedule_id where r.id = $6
             on conflict (key) do nothing",
        )
        .bind(&id)
        .bind(kind.as_str())
        .bind(key)
        .bind(short)
        .bind(now)
        .bind(&run.0)
        .execute(&mut **tx)
        .await?;
        if made.rows_affected() == 1 {
            let waiting = kind == NotificationKind::ScheduleWaiting;
            self.fan_out(tx, &id, &run.0, waiting, body, now).await?;
        }
        Ok(())
    }

    /// Notify the owner that `run` — their own, not a schedule's — waits for
    /// them, in `tx`; only when they have a channel that takes waits and the
    /// run is not of a Lark conversation (whose chat shows its cards
    /// already), so other runs pay this one statement and write nothing.
    pub(super) async fn notify_run_waiting(
        &self,
        tx: &mut super::WriteTx,
        run: &RunId,
        key: &str,
        body: &str,
        now: i64,
    ) -> Result<()> {
        let short = inbox_body(body);
        let id = format!("ntf_{}", uuid::Uuid::now_v7().simple());
        let made = sqlx::query(
            "insert into notifications (id, user_id, kind, key, title, body, session_id, run_id, created_at)
             select $1, r.user_id, $2, $3, se.title, $4, r.session_id, r.id, $5
             from runs r join sessions se on se.id = r.session_id
             where r.id = $6 and se.lark_chat_key is null
               and exists (select 1 from channels c where c.user_id = r.user_id and c.waits = 1)
             on conflict (key) do nothing",
        )
        .bind(&id)
        .bind(NotificationKind::RunWaiting.as_str())
        .bind(key)
        .bind(short)
        .bind(now)
        .bind(&run.0)
        .execute(&mut **tx)
        .await?;
        if made.rows_affected() == 1 {
            self.fan_out(tx, &id, &run.0, true, body, now).await?;
        }
        Ok(())
    }
    /// A person's notifications, newest first (`unread_only`: those not read),
    /// and how many are unread.
    pub async fn notifications(
        &self,
        user: &UserId,
        unread_only: bool,
        limit: i64,
    ) -> Result<(Vec<NotificationRecord>, u64)> {
        let rows = sqlx::query(
            "select id, kind, title, body, session_id, run_id, schedule_id, created_at, read_at
             from notifications where user_id = $1 and ($2 = 0 or read_at is null)
             order by created_at desc, id desc limit $3",
        )
        .bind(&user.0)
        .bind(i64::from(unread_only))
        .bind(limit.clamp(1, MAX_LISTED))
        .fetch_all(&self.pool)
        .await?;
        let unread: i64 = sqlx::query_scalar(
            "select count(*) from notifications where user_id = $1 and read_at is null",
        )
        .bind(&user.0)
        .fetch_one(&self.pool)
        .await?;
        let list = rows.iter().map(notification_from).collect::<Result<_>>()?;
        Ok((list, unread as u64))
    }

    /// Mark `ids` read (all of the person's when `None`); others' ids are ignored.
    pub async fn mark_notifications_read(
        &self,
        user: &UserId,
        ids: Option<&[String]>,
    ) -> Result<u64> {
        let now = weft_wire::time::now_ms();
        let mut w = self.writer().await?;
        let done = match ids {
            None => {
                sqlx::query(
                    "update notifications set read_at = $1 where user_id = $2 and read_at is null",
                )
                .bind(now)
                .bind(&user.0)
                .execute(&mut *w)
                .await?
            }
            Some(ids) => {
                let json = serde_json::to_string(ids).expect("ids serialise");
                let each = self.dialect.each_text(3);
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "update notifications set read_at = $1 where user_id = $2 and read_at is null and id in ({each})"
                )))
                .bind(now)
                .bind(&user.0)
                .bind(json)
                .execute(&mut *w)
                .await?
            }
        };
        Ok(done.rows_affected())
    }
}

fn notification_from(row: &AnyRow) -> Result<NotificationRecord> {
    let kind = get_str(row, "kind")?;
    Ok(NotificationRecord {
        id: get_str(row, "id")?,
        kind: kind
            .parse()
            .map_err(|()| super::StoreError::Other(format!("notification kind {kind:?}")))?,
        title: get_str(row, "title")?,
        body: get_str(row, "body")?,
        session_id: get_opt_str(row, "session_id")?,
        run_id: get_opt_str(row, "run_id")?,
        schedule_id: get_opt_str(row, "schedule_id")?,
        created_at: get_i64(row, "created_at")?,
        read_at: get_opt_i64(row, "read_at")?,
    })
}
