//! The delivery outbox (migration 0037, docs/schedules.md "Channels").
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

use super::super::{
    Result, Store, StoreError, WriteTx, get_enum, get_i64, get_opt_i64, get_opt_str, get_str,
};
use super::target_from;
use weft_wire::api::{ChannelKind, ChannelTarget, DeliveryStatus, NotificationKind};
use weft_wire::ids::UserId;
use weft_wire::job::DeliverNotification;

/// The characters of a notification a delivery carries.
pub const DELIVERY_CHARS: usize = 4_000;
/// Deliveries listed at most.
pub const MAX_DELIVERIES_LISTED: i64 = 200;

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

pub(super) const DELIVERY_COLUMNS: &str = "d.id as d_id, d.channel_id as d_channel, c.name as d_channel_name, c.kind as d_channel_kind, n.kind as d_kind, d.status as d_status, d.attempts as d_attempts, d.error as d_error, d.run_id as d_run, d.created_at as d_created, d.delivered_at as d_delivered";

/// The newest delivery of each listed channel, joined.
pub(super) const LAST_DELIVERY: &str = "left join deliveries d on d.id = (select m.id from deliveries m where m.channel_id = ch.id order by m.created_at desc, m.id desc limit 1)
     left join notifications n on n.id = d.notification_id
     left join channels c on c.id = d.channel_id";

impl Store {
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
        let now = weft_wire::time::now_ms();
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
        .execute(&mut *tx)
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
    pub(crate) async fn fan_out(
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
        .fetch_all(&mut **tx)
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
        .execute(&mut **tx)
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
        let now = weft_wire::time::now_ms();
        let mut w = self.writer().await?;
        sqlx::query(
            "update deliveries set status = $1, attempts = attempts + 1, error = $2,
                 delivered_at = case when $1 = 'delivered' then $3 else delivered_at end
             where id = $4 and status <> 'delivered'",
        )
        .bind(status.as_str())
        .bind(error)
        .bind(now)
        .bind(id)
        .execute(&mut *w)
        .await?;
        Ok(())
    }

    /// A delivery whose job gave up without recording its last try (its
    /// worker died each time): failed, with `error`.
    pub async fn delivery_gave_up(&self, id: &str, error: &str) -> Result<()> {
        let mut w = self.writer().await?;
        sqlx::query(
            "update deliveries set status = 'failed', error = coalesce(error, $1) where id = $2 and status = 'pending'",
        )
        .bind(error)
        .bind(id)
        .execute(&mut *w)
        .await?;
        Ok(())
    }
}

pub(super) fn delivery_from(row: &AnyRow) -> Result<DeliveryRecord> {
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
