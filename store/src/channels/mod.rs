//! Channels (migration 0037, docs/schedules.md "Channels"): where a person's
//! notifications go besides the inbox — a Lark chat, a webhook, an email
//! address — each the person's own, and the channels a schedule delivers to.
//! What is sent to them, and how each try went, is the outbox's ([`outbox`]).

mod outbox;

use sqlx::any::AnyRow;

use super::{
    Conflict, OverLimit, Result, Store, StoreError, get_enum, get_i64, get_opt_str, get_str,
};
use weft_wire::api::{ChannelKind, ChannelTarget};
use weft_wire::ids::UserId;

pub use outbox::{DELIVERY_CHARS, DeliveryRecord, DeliveryWork};
use outbox::{DELIVERY_COLUMNS, LAST_DELIVERY, delivery_from};

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
        let now = weft_wire::time::now_ms();
        let id = format!("chn_{}", uuid::Uuid::now_v7().simple());
        let mut tx = self.begin().await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "select id from users where id = $1{}",
            self.lock_suffix()
        )))
        .bind(&user.0)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(StoreError::NotFound)?;
        let held: i64 = sqlx::query_scalar("select count(*) from channels where user_id = $1")
            .bind(&user.0)
            .fetch_one(&mut *tx)
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
        .execute(&mut *tx)
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
        let mut w = self.writer().await?;
        let done = sqlx::query(
            "update channels set name = $1, kind = $2, config = $3, waits = $4, updated_at = $5 where id = $6 and user_id = $7",
        )
        .bind(name)
        .bind(target.kind().as_str())
        .bind(config_json(&target))
        .bind(i64::from(waits))
        .bind(weft_wire::time::now_ms())
        .bind(id)
        .bind(&user.0)
        .execute(&mut *w)
        .await
        .map_err(|e| StoreError::unique(e, Conflict::ChannelNameTaken))?;
        drop(w);
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
        tx: &mut crate::TxConn,
        user: &UserId,
        schedule: &str,
        channels: &[String],
    ) -> Result<()> {
        sqlx::query("delete from schedule_channels where schedule_id = $1")
            .bind(schedule)
            .execute(&mut *tx)
            .await?;
        let mut seen = std::collections::HashSet::new();
        for channel in channels {
            if !seen.insert(channel) {
                continue;
            }
            let mine = sqlx::query("select 1 from channels where id = $1 and user_id = $2")
                .bind(channel)
                .bind(&user.0)
                .fetch_optional(&mut *tx)
                .await?;
            if mine.is_none() {
                return Err(StoreError::Invalid(format!(
                    "deliver: no channel {channel:?} of yours"
                )));
            }
            sqlx::query("insert into schedule_channels (schedule_id, channel_id) values ($1, $2)")
                .bind(schedule)
                .bind(channel)
                .execute(&mut *tx)
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

pub(super) fn target_from(kind: ChannelKind, config: &str) -> Result<ChannelTarget> {
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
