//! Channels and the delivery outbox (migration 0037, docs/schedules.md
//! "Channels"): where a person's notifications go besides the inbox.
//!
//! A delivery is born in the transaction that writes its notification
//! ([`Store::fan_out`], called by `notify_scheduled`): one `deliveries` row and
//! one `notify.deliver` job per channel of the run's schedule. The
//! notification is unique by its key, and the fan-out only follows an insert
//! that happened, so a retried end of a run never makes a second delivery;
//! each delivery is a job of its own, so a receiver that is down delays only
//! its own (the worker's `jobs::deliver` retries it with backoff and records
//! each try here). Scheduled runs pay one more statement per notification
//! (the channel list) and two per channel; other runs pay nothing.

use sqlx::any::AnyRow;

use super::{
    Conflict, OverLimit, Result, Store, StoreError, WriteTx, get_enum, get_i64, get_opt_i64,
    get_opt_str, get_str,
};
use crate::api::{ChannelKind, ChannelTarget, DeliveryStatus, NotificationKind};
use crate::ids::UserId;
use crate::job::DeliverNotification;

/// The characters of a notification a delivery carries.
pub const DELIVERY_CHARS: usize = 4_000;
/// Deliveries listed at most.
pub const MAX_DELIVERIES_LISTED: i64 = 200;

/// A channel as stored (a webhook's secret included).
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelRecord {
    pub id: String,
    pub user_id: UserId,
    pub name: String,
    pub target: ChannelTarget,
    /// Also every wait of the owner's own runs.
    pub waits: bool,
    /// How many schedules deliver to it.
    pub schedules: u32,
    pub last_delivery: Option<DeliveryRecord>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// One notification's delivery to one channel.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryRecord {
    pub id: String,
    pub channel_id: String,
    /// `None` once the channel is deleted.
    pub channel_name: Option<String>,
    pub channel_kind: Option<ChannelKind>,
    pub notification_kind: NotificationKind,
    pub status: DeliveryStatus,
    pub attempts: u32,
    pub error: Option<String>,
    pub run_id: Option<String>,
    pub created_at: i64,
    pub delivered_at: Option<i64>,
}

/// What a delivery job needs to deliver: the delivery, its notification and
/// its channel as they are now.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryWork {
    pub delivery: DeliveryRecord,
    /// `None`: the channel was deleted after the notification was made.
    pub target: Option<ChannelTarget>,
    pub title: String,
    pub text: String,
    pub schedule_id: Option<String>,
    pub session_id: Option<String>,
    pub notification_created_at: i64,
    /// `<run>:end`, `<run>:<step>:wait` or `test:<id>` (the step of a
    /// `schedule_waiting` one names the waits it is about).
    pub notification_key: String,
    /// The owner's Lark open_id, for a DM.
    pub owner_open_id: Option<String>,
}

const DELIVERY_COLUMNS: &str = "d.id as d_id, d.channel_id as d_channel, c.name as d_channel_name, c.kind as d_channel_kind, n.kind as d_kind, d.status as d_status, d.attempts as d_attempts, d.error as d_error, d.run_id as d_run, d.created_at as d_created, d.delivered_at as d_delivered";

/// The newest delivery of each listed channel, joined.
const LAST_DELIVERY: &str = "left join deliveries d on d.id = (select m.id from deliveries m where m.channel_id = ch.id order by m.created_at desc, m.id desc limit 1)
     left join notifications n on n.id = d.notification_id
     left join channels c on c.id = d.channel_id";

const CHANNEL_COLUMNS: &str =
    "ch.id, ch.user_id, ch.name, ch.kind, ch.config, ch.waits, ch.created_at, ch.updated_at,
     (select count(*) from schedule_channels sc where sc.channel_id = ch.id) as schedules";

impl Store {
    /// Make a channel; refused past `max_per_user` and for a name the person
    /// has (`Conflict::ChannelNameTaken`).
    pub async fn create_channel(
        &self,
        user: &UserId,
        name: &str,
        target: &ChannelTarget,
        waits: bool,
        max_per_user: u64,
    ) -> Result<ChannelRecord> {
        let now = crate::time::now_ms();
        let id = format!("chn_{}", uuid::Uuid::now_v7().simple());
        let mut tx = self.begin().await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "select id from users where id = $1{}",
            self.lock_suffix()
        )))
        .bind(&user.0)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or(StoreError::NotFound)?;
        let held: i64 = sqlx::query_scalar("select count(*) from channels where user_id = $1")
            .bind(&user.0)
            .fetch_one(&mut **tx)
            .await?;
        if max_per_user > 0 && held as u64 >= max_per_user {
            return Err(StoreError::OverLimit(OverLimit::Channels {
                held: held as u64,
                limit: max_per_user,
            }));
        }
        sqlx::query(
            "insert into channels (id, user_id, name, kind, config, waits, created_at, updated_at)
             values ($1, $2, $3, $4, $5, $6, $7, $7)",
        )
        .bind(&id)
        .bind(&user.0)
        .bind(name)
        .bind(target.kind().as_str())
        .bind(config_json(target))
        .bind(i64::from(waits))
        .bind(now)
        .execute(&mut **tx)
        .await
        .map_err(|e| StoreError::unique(e, Conflict::ChannelNameTaken))?;
        tx.commit().await?;
        self.get_channel(user, &id).await
    }

    /// A person's channels, oldest first, each with its newest delivery.
    pub async fn list_channels(&self, user: &UserId) -> Result<Vec<ChannelRecord>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {CHANNEL_COLUMNS}, {DELIVERY_COLUMNS} from channels ch {LAST_DELIVERY}
             where ch.user_id = $1 order by ch.created_at, ch.id"
        )))
        .bind(&user.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(channel_from).collect()
    }

    /// One of the person's channels (`NotFound` for anyone else's).
    pub async fn get_channel(&self, user: &UserId, id: &str) -> Result<ChannelRecord> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {CHANNEL_COLUMNS}, {DELIVERY_COLUMNS} from channels ch {LAST_DELIVERY}
             where ch.id = $1 and ch.user_id = $2"
        )))
        .bind(id)
        .bind(&user.0)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(StoreError::NotFound)?;
        channel_from(&row)
    }

    /// Rename a channel, give it a new target (checked by the caller), or
    /// turn its waits on or off. A webhook target without a secret keeps the
    /// one it had.
    pub async fn update_channel(
        &self,
        user: &UserId,
        id: &str,
        name: Option<&str>,
        target: Option<&ChannelTarget>,
        waits: Option<bool>,
    ) -> Result<ChannelRecord> {
        let current = self.get_channel(user, id).await?;
        let name = name.unwrap_or(&current.name);
        let waits = waits.unwrap_or(current.waits);
        let target = match (target, &current.target) {
            (
                Some(ChannelTarget::Webhook { url, secret: None }),
                ChannelTarget::Webhook { secret, .. },
            ) => ChannelTarget::Webhook {
                url: url.clone(),
                secret: secret.clone(),
            },
            (Some(t), _) => t.clone(),
            (None, t) => t.clone(),
        };
        let _gate = self.write_gate().await;
        let done = sqlx::query(
            "update channels set name = $1, kind = $2, config = $3, waits = $4, updated_at = $5 where id = $6 and user_id = $7",
        )
        .bind(name)
        .bind(target.kind().as_str())
        .bind(config_json(&target))
        .bind(i64::from(waits))
        .bind(crate::time::now_ms())
        .bind(id)
        .bind(&user.0)
        .execute(&self.pool)
        .await
        .map_err(|e| StoreError::unique(e, Conflict::ChannelNameTaken))?;
        drop(_gate);
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        self.get_channel(user, id).await
    }

    /// Delete a channel: schedules stop delivering to it; its deliveries'
    /// history stays (without its name), and one still pending fails when
    /// its job finds the channel gone.
    pub async fn delete_channel(&self, user: &UserId, id: &str) -> Result<()> {
        self.delete_owned("channels", user, id).await
    }

    /// A channel's deliveries, newest first.
    pub async fn channel_deliveries(
        &self,
        user: &UserId,
        id: &str,
        limit: i64,
    ) -> Result<Vec<DeliveryRecord>> {
        self.get_channel(user, id).await?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {DELIVERY_COLUMNS} from deliveries d join notifications n on n.id = d.notification_id
             left join channels c on c.id = d.channel_id
             where d.channel_id = $1 and d.user_id = $2 order by d.created_at desc, d.id desc limit $3"
        )))
        .bind(id)
        .bind(&user.0)
        .bind(limit.clamp(1, MAX_DELIVERIES_LISTED))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(delivery_from).collect()
    }

    /// The deliveries of these runs' notifications, oldest first (a
    /// schedule's history shows them under each fire).
    pub async fn run_deliveries(&self, runs: &[String]) -> Result<Vec<DeliveryRecord>> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let json = serde_json::to_string(runs).expect("ids serialise");
        let each = self.dialect.each_text(1);
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {DELIVERY_COLUMNS} from deliveries d join notifications n on n.id = d.notification_id
             left join channels c on c.id = d.channel_id
             where d.run_id in ({each}) order by d.created_at, d.id"
        )))
        .bind(json)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(delivery_from).collect()
    }

    /// Send a test message to one of the person's channels, through the
    /// outbox like any other: the answer is its delivery, pending.
    pub async fn test_channel(&self, user: &UserId, id: &str) -> Result<DeliveryRecord> {
        let channel = self.get_channel(user, id).await?;
        let now = crate::time::now_ms();
        let notification = format!("ntf_{}", uuid::Uuid::now_v7().simple());
        let text = format!(
            "This is a test message from Weft to the channel \"{}\".",
            channel.name
        );
        let mut tx = self.begin().await?;
        sqlx::query(
            "insert into notifications (id, user_id, kind, key, title, body, created_at, read_at)
             values ($1, $2, $3, $4, $5, $6, $7, $7)",
        )
        .bind(&notification)
        .bind(&user.0)
        .bind(NotificationKind::ChannelTest.as_str())
        .bind(format!("test:{notification}"))
        .bind(format!("Test: {}", channel.name))
        .bind(&text)
        .bind(now)
        .execute(&mut **tx)
        .await?;
        let delivery = self
            .insert_delivery(&mut tx, &notification, &channel.id, user, None, &text, now)
            .await?;
        tx.commit().await?;
        self.delivery(&delivery)
            .await?
            .map(|w| w.delivery)
            .ok_or(StoreError::NotFound)
    }

    /// Write the deliveries of a notification just inserted in `tx`: one per
    /// channel of `run`'s schedule — and, for a notification that the run
    /// waits (`waiting`), per channel of its owner that takes waits — each
    /// with its job.
    pub(super) async fn fan_out(
        &self,
        tx: &mut WriteTx,
        notification: &str,
        run: &str,
        waiting: bool,
        text: &str,
        now: i64,
    ) -> Result<()> {
        let rows = sqlx::query(
            "select c.id as channel_id, r.user_id from runs r join channels c on c.user_id = r.user_id
             where r.id = $1
               and (c.id in (select sc.channel_id from schedule_channels sc where sc.schedule_id = r.schedule_id)
                    or ($2 = 1 and c.waits = 1))
             order by c.id",
        )
        .bind(run)
        .bind(i64::from(waiting))
        .fetch_all(&mut ***tx)
        .await?;
        let text: String = text.chars().take(DELIVERY_CHARS).collect();
        for row in &rows {
            let user = UserId(get_str(row, "user_id")?);
            let channel = get_str(row, "channel_id")?;
            self.insert_delivery(tx, notification, &channel, &user, Some(run), &text, now)
                .await?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    async fn insert_delivery(
        &self,
        tx: &mut WriteTx,
        notification: &str,
        channel: &str,
        user: &UserId,
        run: Option<&str>,
        text: &str,
        now: i64,
    ) -> Result<String> {
        let id = format!("dlv_{}", uuid::Uuid::now_v7().simple());
        sqlx::query(
            "insert into deliveries (id, notification_id, channel_id, user_id, run_id, status, text, created_at)
             values ($1, $2, $3, $4, $5, 'pending', $6, $7)",
        )
        .bind(&id)
        .bind(notification)
        .bind(channel)
        .bind(&user.0)
        .bind(run)
        .bind(text)
        .bind(now)
        .execute(&mut ***tx)
        .await?;
        self.insert_kind_job(
            tx,
            &DeliverNotification {
                delivery_id: id.clone(),
            },
            0,
        )
        .await?;
        Ok(id)
    }

    /// A delivery with what it delivers and where (`None`: it is gone, with
    /// its notification).
    pub async fn delivery(&self, id: &str) -> Result<Option<DeliveryWork>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {DELIVERY_COLUMNS}, c.config as d_config, n.title, d.text, n.schedule_id, n.session_id,
                 n.created_at as n_created, n.key as n_key, u.lark_open_id
             from deliveries d join notifications n on n.id = d.notification_id
             left join channels c on c.id = d.channel_id
             join users u on u.id = d.user_id
             where d.id = $1"
        )))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let delivery = delivery_from(&row)?;
        let target = match (delivery.channel_kind, get_opt_str(&row, "d_config")?) {
            (Some(kind), Some(config)) => Some(target_from(kind, &config)?),
            _ => None,
        };
        Ok(Some(DeliveryWork {
            delivery,
            target,
            title: get_str(&row, "title")?,
            text: get_str(&row, "text")?,
            schedule_id: get_opt_str(&row, "schedule_id")?,
            session_id: get_opt_str(&row, "session_id")?,
            notification_created_at: get_i64(&row, "n_created")?,
            notification_key: get_str(&row, "n_key")?,
            owner_open_id: get_opt_str(&row, "lark_open_id")?,
        }))
    }

    /// Record a try of a delivery: `Delivered`, `Failed` (for good) or
    /// `Pending` with the error it met (a retry follows).
    pub async fn delivery_tried(
        &self,
        id: &str,
        status: DeliveryStatus,
        error: Option<&str>,
    ) -> Result<()> {
        let now = crate::time::now_ms();
        let _gate = self.write_gate().await;
        sqlx::query(
            "update deliveries set status = $1, attempts = attempts + 1, error = $2,
                 delivered_at = case when $1 = 'delivered' then $3 else delivered_at end
             where id = $4 and status <> 'delivered'",
        )
        .bind(status.as_str())
        .bind(error)
        .bind(now)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// A delivery whose job gave up without recording its last try (its
    /// worker died each time): failed, with `error`.
    pub async fn delivery_gave_up(&self, id: &str, error: &str) -> Result<()> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "update deliveries set status = 'failed', error = coalesce(error, $1) where id = $2 and status = 'pending'",
        )
        .bind(error)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Whether `user` has talked to the bot in Lark chat `chat_id` (a Lark
    /// channel may only post where its owner is).
    pub async fn lark_chat_has_user(&self, user: &UserId, chat_id: &str) -> Result<bool> {
        let found = sqlx::query(
            "select 1 from sessions s join messages m on m.session_id = s.id
             where s.lark_chat_key is not null and (s.lark_chat_key = $1 or s.lark_chat_key like $2)
               and (m.author_id = $3 or s.user_id = $3) limit 1",
        )
        .bind(chat_id)
        // The caller checked the id's characters (no `%`); a `_` matching
        // any one character cannot reach another chat's `chat_id/thread` key.
        .bind(format!("{chat_id}/%"))
        .bind(&user.0)
        .fetch_optional(&self.pool)
        .await?;
        Ok(found.is_some())
    }

    /// A person's timezone (IANA), when they set one.
    pub async fn user_timezone(&self, user: &UserId) -> Result<Option<String>> {
        let row = sqlx::query("select timezone from users where id = $1")
            .bind(&user.0)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)?;
        get_opt_str(&row, "timezone")
    }

    /// Set (or with `None` clear) a person's timezone, checked by the caller.
    pub async fn set_user_timezone(&self, user: &UserId, timezone: Option<&str>) -> Result<()> {
        let _gate = self.write_gate().await;
        sqlx::query("update users set timezone = $1 where id = $2")
            .bind(timezone)
            .bind(&user.0)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The channels (ids) a schedule delivers to.
    pub(super) async fn schedule_channel_ids(
        &self,
        schedules: &[&str],
    ) -> Result<Vec<(String, String)>> {
        if schedules.is_empty() {
            return Ok(Vec::new());
        }
        let json = serde_json::to_string(schedules).expect("ids serialise");
        let each = self.dialect.each_text(1);
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select schedule_id, channel_id from schedule_channels where schedule_id in ({each}) order by channel_id"
        )))
        .bind(json)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| Ok((get_str(r, "schedule_id")?, get_str(r, "channel_id")?)))
            .collect()
    }

    /// Make `schedule` deliver to `channels` (each checked to be `user`'s:
    /// `Invalid` naming `deliver` otherwise), in `tx`.
    pub(super) async fn set_schedule_channels(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        user: &UserId,
        schedule: &str,
        channels: &[String],
    ) -> Result<()> {
        sqlx::query("delete from schedule_channels where schedule_id = $1")
            .bind(schedule)
            .execute(&mut **tx)
            .await?;
        let mut seen = std::collections::HashSet::new();
        for channel in channels {
            if !seen.insert(channel) {
                continue;
            }
            let mine = sqlx::query("select 1 from channels where id = $1 and user_id = $2")
                .bind(channel)
                .bind(&user.0)
                .fetch_optional(&mut **tx)
                .await?;
            if mine.is_none() {
                return Err(StoreError::Invalid(format!(
                    "deliver: no channel {channel:?} of yours"
                )));
            }
            sqlx::query("insert into schedule_channels (schedule_id, channel_id) values ($1, $2)")
                .bind(schedule)
                .bind(channel)
                .execute(&mut **tx)
                .await?;
        }
        Ok(())
    }
}

/// A target as stored: its settings without the kind (the `kind` column has it).
fn config_json(target: &ChannelTarget) -> String {
    let mut v = serde_json::to_value(target).expect("a target serialises");
    if let Some(o) = v.as_object_mut() {
        o.remove("kind");
    }
    v.to_string()
}

fn target_from(kind: ChannelKind, config: &str) -> Result<ChannelTarget> {
    let mut v: serde_json::Value = serde_json::from_str(config)
        .map_err(|e| StoreError::Other(format!("stored channel config: {e}")))?;
    if let Some(o) = v.as_object_mut() {
        o.insert("kind".into(), kind.as_str().into());
    }
    serde_json::from_value(v).map_err(|e| StoreError::Other(format!("stored channel config: {e}")))
}

fn channel_from(row: &AnyRow) -> Result<ChannelRecord> {
    let kind: ChannelKind = get_enum(row, "kind")?;
    Ok(ChannelRecord {
        id: get_str(row, "id")?,
        user_id: UserId(get_str(row, "user_id")?),
        name: get_str(row, "name")?,
        target: target_from(kind, &get_str(row, "config")?)?,
        waits: get_i64(row, "waits")? != 0,
        schedules: get_i64(row, "schedules")? as u32,
        last_delivery: match get_opt_str(row, "d_id")? {
            Some(_) => Some(delivery_from(row)?),
            None => None,
        },
        created_at: get_i64(row, "created_at")?,
        updated_at: get_i64(row, "updated_at")?,
    })
}

fn delivery_from(row: &AnyRow) -> Result<DeliveryRecord> {
    Ok(DeliveryRecord {
        id: get_str(row, "d_id")?,
        channel_id: get_str(row, "d_channel")?,
        channel_name: get_opt_str(row, "d_channel_name")?,
        channel_kind: get_opt_str(row, "d_channel_kind")?
            .map(|k| {
                k.parse()
                    .map_err(|()| StoreError::Other(format!("channel kind {k:?}")))
            })
            .transpose()?,
        notification_kind: get_enum(row, "d_kind")?,
        status: get_enum(row, "d_status")?,
        attempts: get_i64(row, "d_attempts")? as u32,
        error: get_opt_str(row, "d_error")?,
        run_id: get_opt_str(row, "d_run")?,
        created_at: get_i64(row, "d_created")?,
        delivered_at: get_opt_i64(row, "d_delivered")?,
    })
}
