//! Channels and deliveries in the words `weft channels` prints: where a
//! channel posts, how its newest delivery went, what a delivery carried.

use weft_wire::api::{ChannelDto, ChannelTarget, DeliveryDto, DeliveryStatus, NotificationKind};

use crate::render::truncate;
use crate::session::short;

/// Where it posts: `webhook https://…`, `email ops@example.com`, `Lark chat
/// oc_…`, `Lark direct message`.
pub fn target(t: &ChannelTarget) -> String {
    match t {
        ChannelTarget::Webhook { url, .. } => truncate(url, 60),
        ChannelTarget::Email { to } => truncate(to, 60),
        ChannelTarget::Lark {
            chat_id: Some(chat),
        } => format!("chat {chat}"),
        ChannelTarget::Lark { chat_id: None } => "direct message to you".into(),
    }
}

/// `webhook https://…` for one channel in a sentence.
pub fn kind_and_target(c: &ChannelDto) -> String {
    format!("{} {}", c.target.kind().as_str(), target(&c.target))
}

/// How the newest delivery went: `delivered`, `failed: 404 …`, `pending
/// (3 attempts): timed out`, `-` when nothing was sent yet.
pub fn last_delivery(c: &ChannelDto) -> String {
    let Some(d) = &c.last_delivery else {
        return "-".into();
    };
    let mut s = d.status.as_str().to_string();
    if d.status == DeliveryStatus::Pending && d.attempts > 0 {
        s.push_str(&format!(" ({})", attempts(d.attempts)));
    }
    match &d.error {
        Some(e) if d.status != DeliveryStatus::Delivered => format!("{s}: {}", error(e, 60)),
        _ => s,
    }
}

/// `1 attempt`, `3 attempts`, `not tried yet`.
pub fn attempts(n: u32) -> String {
    match n {
        0 => "not tried yet".into(),
        1 => "1 attempt".into(),
        n => format!("{n} attempts"),
    }
}

/// One delivery, channel first (a fire's, under it in `weft schedules
/// fires`): `ops (webhook): delivered, 1 attempt`, `mail (email): failed,
/// 9 attempts: 550 no such user`.
pub fn delivery(d: &DeliveryDto) -> String {
    let channel = match (&d.channel_name, d.channel_kind) {
        (Some(name), Some(kind)) => format!("{name} ({})", kind.as_str()),
        (Some(name), None) => name.clone(),
        (None, _) => format!("{} (deleted)", short(&d.channel_id)),
    };
    let mut s = format!("{channel}: {}, {}", d.status.as_str(), attempts(d.attempts));
    if let Some(e) = &d.error {
        s.push_str(&format!(": {}", error(e, 100)));
    }
    s
}

/// A delivery's error on one line of at most `max` columns: a receiver's
/// answer may be an indented HTML page.
pub fn error(e: &str, max: usize) -> String {
    truncate(&e.split_whitespace().collect::<Vec<_>>().join(" "), max)
}

/// What a delivery carried, in a word or two.
pub fn what(d: &DeliveryDto) -> &'static str {
    match d.notification_kind {
        NotificationKind::ChannelTest => "test",
        NotificationKind::ScheduleFinished => "run finished",
        NotificationKind::ScheduleWaiting | NotificationKind::RunWaiting => "run waiting",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(status: DeliveryStatus, attempts: u32, error: Option<&str>) -> DeliveryDto {
        DeliveryDto {
            id: "dlv_1".into(),
            channel_id: "chn_1".into(),
            channel_name: Some("ops".into()),
            channel_kind: None,
            notification_kind: NotificationKind::ChannelTest,
            status,
            attempts,
            error: error.map(str::to_string),
            run_id: None,
            created_at: "2026-01-05T01:00:00Z".into(),
            delivered_at: None,
        }
    }

    fn channel(target: ChannelTarget, last: Option<DeliveryDto>) -> ChannelDto {
        ChannelDto {
            id: "chn_1".into(),
            name: "ops".into(),
            target,
            secret_hint: None,
            waits: false,
            schedules: 0,
            last_delivery: last,
            created_at: "2026-01-05T01:00:00Z".into(),
            updated_at: "2026-01-05T01:00:00Z".into(),
        }
    }

    #[test]
    fn targets_say_where_they_post() {
        let hook = ChannelTarget::Webhook {
            url: "https://example.com/hook".into(),
            secret: None,
        };
        assert_eq!(
            kind_and_target(&channel(hook, None)),
            "webhook https://example.com/hook"
        );
        let dm = ChannelTarget::Lark { chat_id: None };
        assert_eq!(
            kind_and_target(&channel(dm, None)),
            "lark direct message to you"
        );
        let chat = ChannelTarget::Lark {
            chat_id: Some("oc_1".into()),
        };
        assert_eq!(target(&chat), "chat oc_1");
    }

    #[test]
    fn the_last_delivery_shows_its_error_until_delivered() {
        let mail = || ChannelTarget::Email {
            to: "a@example.com".into(),
        };
        assert_eq!(last_delivery(&channel(mail(), None)), "-");
        let retrying = sent(
            DeliveryStatus::Pending,
            3,
            Some("the receiver answered 503"),
        );
        assert_eq!(
            last_delivery(&channel(mail(), Some(retrying))),
            "pending (3 attempts): the receiver answered 503"
        );
        let failed = sent(DeliveryStatus::Failed, 1, Some("550 no such user"));
        assert_eq!(
            last_delivery(&channel(mail(), Some(failed))),
            "failed: 550 no such user"
        );
        let done = sent(DeliveryStatus::Delivered, 2, Some("timed out"));
        assert_eq!(last_delivery(&channel(mail(), Some(done))), "delivered");
        let page = "the receiver answered 502: <html>\n    <body>\n\tBad gateway";
        assert_eq!(
            error(page, 100),
            "the receiver answered 502: <html> <body> Bad gateway"
        );
        assert_eq!(error(page, 30), "the receiver answered 502: <h…");
    }

    #[test]
    fn a_fires_delivery_names_its_channel() {
        let mut d = sent(DeliveryStatus::Failed, 9, Some("connection refused"));
        d.channel_kind = Some(weft_wire::api::ChannelKind::Webhook);
        assert_eq!(
            delivery(&d),
            "ops (webhook): failed, 9 attempts: connection refused"
        );
        d.channel_name = None;
        d.channel_id = "chn_0198aaaa1234abcd".into();
        d.status = DeliveryStatus::Pending;
        d.attempts = 0;
        d.error = None;
        assert_eq!(delivery(&d), "1234abcd (deleted): pending, not tried yet");
    }
}
