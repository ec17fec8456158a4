//! Channels (docs/schedules.md "Channels"): where a person's notifications go
//! besides the inbox — a Lark chat or DM, a signed webhook, an email address.
//! A schedule names the channels its notifications are delivered to
//! (`deliver`); each delivery is an outbox row and a background job, retried
//! with backoff, so a dead receiver never blocks another and a retried
//! delivery never posts twice.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::api::NotificationKind;

/// Where a channel delivers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChannelTarget {
    /// A Lark chat where the owner has talked to the bot; without `chat_id`,
    /// a direct message to the owner (their account must be linked to Lark).
    Lark {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        chat_id: Option<String>,
    },
    /// An `http(s)` endpoint that the SSRF guard accepts. Each POST carries
    /// the JSON body signed with HMAC-SHA256 of `"{timestamp}.{body}"` under
    /// `secret`, in `Weft-Signature: t=<unix seconds>,v1=<hex>`.
    Webhook {
        url: String,
        /// Given on create (or generated: `whsec_…`) and returned only then,
        /// and by a patch that sets a new one; reads leave it out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        secret: Option<String>,
    },
    /// An address, sent through the SMTP server the admin set (`[email]`).
    Email { to: String },
}

impl ChannelTarget {
    pub fn kind(&self) -> ChannelKind {
        match self {
            ChannelTarget::Lark { .. } => ChannelKind::Lark,
            ChannelTarget::Webhook { .. } => ChannelKind::Webhook,
            ChannelTarget::Email { .. } => ChannelKind::Email,
        }
    }
}

/// A channel's kind (`channels.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChannelKind {
    Lark,
    Webhook,
    Email,
}

spelled!(ChannelKind {
    Lark => "lark",
    Webhook => "webhook",
    Email => "email",
});

/// Where one delivery is (`deliveries.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Not delivered yet: waiting for its first try or for a retry (`error`
    /// says what the last try met).
    Pending,
    Delivered,
    /// Given up: a refusal no retry can fix, or every attempt failed.
    Failed,
}

spelled!(DeliveryStatus {
    Pending => "pending",
    Delivered => "delivered",
    Failed => "failed",
});

/// One notification's delivery to one channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DeliveryDto {
    pub id: String,
    pub channel_id: String,
    /// Absent once the channel is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_name: Option<String>,
    /// Absent once the channel is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_kind: Option<ChannelKind>,
    /// What was delivered.
    pub notification_kind: NotificationKind,
    pub status: DeliveryStatus,
    /// Tries made so far.
    pub attempts: u32,
    /// What the last failed try met (a status code, a refusal, a timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<String>,
}

/// A channel as its owner sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChannelDto {
    pub id: String,
    pub name: String,
    pub target: ChannelTarget,
    /// A webhook's secret, shortened for recognising it (`whsec_…3f9a`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_hint: Option<String>,
    /// Also every question, approval and plan of the owner's own runs
    /// (outside Lark conversations), not only their schedules'.
    pub waits: bool,
    /// How many schedules deliver to it.
    pub schedules: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_delivery: Option<DeliveryDto>,
    pub created_at: String,
    pub updated_at: String,
}

/// `POST /v1/channels`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateChannelRequest {
    /// Unique among the person's channels, e.g. `ops-webhook`.
    pub name: String,
    pub target: ChannelTarget,
    /// Also every question, approval and plan of the owner's own runs;
    /// default false: only the notifications of schedules that name it.
    #[serde(default)]
    pub waits: bool,
}

/// `PATCH /v1/channels/{id}`. A new webhook target without a `secret` keeps
/// the old one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateChannelRequest {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub target: Option<ChannelTarget>,
    /// Turn taking every wait of the owner's own runs on or off.
    #[serde(default)]
    pub waits: Option<bool>,
}

/// `GET /v1/channels`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ChannelList {
    pub channels: Vec<ChannelDto>,
}

/// `GET /v1/channels/{id}/deliveries`: newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DeliveryList {
    pub deliveries: Vec<DeliveryDto>,
}

/// `GET/PUT /v1/me/timezone`: the timezone the person's schedules default
/// to (IANA), and what applies now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TimezoneDto {
    /// Theirs; `null`: none set, the server's applies.
    pub timezone: Option<String>,
    /// What applies now: `timezone`, or the server's default
    /// (`schedules.default_timezone`).
    pub effective: String,
}

/// `PUT /v1/me/timezone`: an IANA name (case matters: `Asia/Shanghai`), or
/// `null` to take the server's again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetTimezoneRequest {
    pub timezone: Option<String>,
}

/// The JSON body a webhook channel receives (`Weft-Event` names `event`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WebhookPayload {
    /// The delivery's id, the same on every retry of it: a receiver that
    /// saw it already can drop it (also in `Weft-Delivery`).
    pub id: String,
    /// `schedule.finished`, `schedule.waiting`, `run.waiting` or `channel.test`.
    pub event: String,
    pub title: String,
    /// The outcome and the reply (or what the run waits for), up to 4,000
    /// characters.
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// When the notification was made (RFC 3339, UTC).
    pub created_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_have_the_documented_shapes() {
        let t: ChannelTarget = serde_json::from_str(r#"{"kind":"lark"}"#).unwrap();
        assert_eq!(t, ChannelTarget::Lark { chat_id: None });
        let t: ChannelTarget =
            serde_json::from_str(r#"{"kind":"webhook","url":"https://example.com/h"}"#).unwrap();
        assert_eq!(t.kind(), ChannelKind::Webhook);
        assert_eq!(
            serde_json::to_string(&ChannelTarget::Email {
                to: "a@example.com".into()
            })
            .unwrap(),
            r#"{"kind":"email","to":"a@example.com"}"#
        );
        for k in ChannelKind::ALL {
            assert_eq!(k.as_str().parse::<ChannelKind>(), Ok(*k));
        }
        for s in DeliveryStatus::ALL {
            assert_eq!(
                serde_json::to_string(s).unwrap(),
                format!("\"{}\"", s.as_str())
            );
        }
    }
}
