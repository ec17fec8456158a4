//! Schedules (docs/schedules.md): a prompt an agent runs on its own, at times a
//! trigger names, in its owner's timezone. Each fire is claimed in the database
//! by `(schedule, fire time)` in the transaction that creates its run, so it
//! happens once whatever the number of replicas, restarts and deploys.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::states::RunStatus;

/// When a schedule fires: exactly one of `{cron}` (five fields, minute first,
/// read in the schedule's timezone), `{every_secs}` (at least 60, counted
/// from the schedule's creation) or `{at}` (RFC 3339, once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// e.g. `0 9 * * 1-5`: 09:00 on weekdays.
    Cron(String),
    EverySecs(u64),
    /// e.g. `2026-12-24T18:00:00+08:00`.
    At(String),
}

/// Where a fire's run goes: a fresh session each time, or one session the
/// owner has (each fire a new message in it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleTarget {
    NewSession,
    Session(String),
}

/// What a fire found late (the cluster was down past its time) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Misfire {
    /// Record the missed time and wait for the next one.
    Skip,
    /// Run once, for the latest missed time, however many were missed.
    RunOnce,
}

/// What a fire does while the schedule's previous run is still active.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Overlap {
    /// Record the fire as skipped; nothing runs.
    Skip,
    /// Run anyway: in a session target the message waits behind the active
    /// run (double texting's `enqueue`); a new session starts at once.
    Queue,
}

/// How a fire went (`schedule_fires.outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FireOutcome {
    /// A run was created (`run_id`).
    Started,
    /// The message waits behind the target session's active run (`overlap = queue`).
    Queued,
    /// The previous fire's run was still active (`overlap = skip`).
    Skipped,
    /// Found late after downtime, with `misfire = skip`.
    Missed,
    /// The run could not be created (`detail` says why: the owner's run
    /// limits, the target session gone, an unknown agent).
    Refused,
}

/// A schedule as its owner sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ScheduleDto {
    pub id: String,
    pub name: String,
    pub agent: String,
    pub prompt: String,
    pub trigger: Trigger,
    /// IANA, e.g. `Asia/Shanghai`.
    pub timezone: String,
    pub enabled: bool,
    pub target: ScheduleTarget,
    pub misfire: Misfire,
    pub overlap: Overlap,
    /// The channels (ids) its notifications are delivered to, besides the
    /// owner's inbox.
    #[serde(default)]
    pub deliver: Vec<String>,
    /// RFC 3339 in the schedule's timezone; absent when it will not fire
    /// again (paused, or an `{at}` that fired).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_fire_at: Option<String>,
    /// The trigger in words, e.g. "At 09:00, on Monday, …".
    pub describe: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_fire: Option<FireDto>,
    pub created_at: String,
    pub updated_at: String,
}

/// One fire of a schedule, newest first in its history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FireDto {
    /// The time the trigger named (RFC 3339, UTC); with the schedule, the
    /// fire's unique key. A "run now" fire has the time it was asked for.
    pub fire_at: String,
    /// When it was claimed (RFC 3339, UTC): `fired_at - fire_at` is its lateness.
    pub fired_at: String,
    pub outcome: FireOutcome,
    /// Asked for with "run now", not by the trigger.
    pub manual: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The run's status now, while it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_status: Option<RunStatus>,
    /// Why a fire was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Its run's notifications' deliveries to the schedule's channels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deliveries: Vec<crate::api::DeliveryDto>,
}

/// `POST /v1/schedules`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateScheduleRequest {
    /// Default: the prompt's first line.
    #[serde(default)]
    pub name: Option<String>,
    /// Default: the default agent (`agent`).
    #[serde(default)]
    pub agent: Option<String>,
    pub prompt: String,
    pub trigger: Trigger,
    /// IANA; default the owner's (`/v1/me/timezone`), else `schedules.default_timezone` (UTC unless set).
    #[serde(default)]
    pub timezone: Option<String>,
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Default: `new_session`.
    #[serde(default)]
    pub target: Option<ScheduleTarget>,
    /// Default: `run_once`.
    #[serde(default)]
    pub misfire: Option<Misfire>,
    /// Default: `skip`.
    #[serde(default)]
    pub overlap: Option<Overlap>,
    /// Channel ids to deliver its notifications to (default: none, the
    /// inbox only).
    #[serde(default)]
    pub deliver: Option<Vec<String>>,
}

/// `PATCH /v1/schedules/{id}`: the fields to change. A new trigger or
/// timezone, or enabling a paused schedule, sets the next fire time from now.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateScheduleRequest {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub trigger: Option<Trigger>,
    #[serde(default)]
    pub timezone: Option<String>,
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default)]
    pub target: Option<ScheduleTarget>,
    #[serde(default)]
    pub misfire: Option<Misfire>,
    #[serde(default)]
    pub overlap: Option<Overlap>,
    #[serde(default)]
    pub deliver: Option<Vec<String>>,
}

/// `GET /v1/schedules`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ScheduleList {
    pub schedules: Vec<ScheduleDto>,
}

/// `GET /v1/schedules/{id}/fires`: newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FireList {
    pub fires: Vec<FireDto>,
}

/// `POST /v1/schedules/preview`: a trigger's next fire times, for a form
/// that shows them as the person types.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PreviewRequest {
    pub trigger: Trigger,
    #[serde(default)]
    pub timezone: Option<String>,
    /// How many (1–20, default 5).
    #[serde(default)]
    pub count: Option<u32>,
}

/// The next fire times, RFC 3339 in the timezone, and the trigger in words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PreviewResponse {
    pub timezone: String,
    pub describe: String,
    pub next: Vec<String>,
}

/// `as_str` / `FromStr` in the wire spelling, which the database stores too.
macro_rules! spelled {
    ($ty:ident { $($variant:ident => $word:literal),+ $(,)? }) => {
        impl $ty {
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $word),+ }
            }
        }
        impl std::str::FromStr for $ty {
            type Err = ();
            fn from_str(s: &str) -> Result<Self, ()> {
                $ty::ALL.iter().copied().find(|v| v.as_str() == s).ok_or(())
            }
        }
    };
}

spelled!(Misfire { Skip => "skip", RunOnce => "run_once" });
spelled!(Overlap { Skip => "skip", Queue => "queue" });
spelled!(FireOutcome {
    Started => "started",
    Queued => "queued",
    Skipped => "skipped",
    Missed => "missed",
    Refused => "refused",
});

/// What a notification is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum NotificationKind {
    /// A scheduled run ended (its outcome and the start of its reply).
    ScheduleFinished,
    /// A scheduled run waits for its owner: an approval, a question or a plan.
    ScheduleWaiting,
    /// A test message its owner sent to a channel (`POST /v1/channels/{id}/test`).
    ChannelTest,
    /// A run of the person's own (not a schedule's) waits for them: written
    /// only when they have a channel that takes waits (`waits: true`), to
    /// answer away from the screen.
    RunWaiting,
}

spelled!(NotificationKind {
    ScheduleFinished => "schedule_finished",
    ScheduleWaiting => "schedule_waiting",
    ChannelTest => "channel_test",
    RunWaiting => "run_waiting",
});

/// One entry of a person's inbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct NotificationDto {
    pub id: String,
    pub kind: NotificationKind,
    /// e.g. the schedule's name.
    pub title: String,
    /// e.g. "succeeded: Yesterday 3 issues were opened …".
    pub body: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_id: Option<String>,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_at: Option<String>,
}

/// `GET /v1/me/notifications`: newest first, and how many are unread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct NotificationList {
    pub notifications: Vec<NotificationDto>,
    pub unread: u64,
}

/// `POST /v1/me/notifications/read`: mark these read (none given: all).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MarkReadRequest {
    #[serde(default)]
    pub ids: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_and_targets_have_the_documented_shapes() {
        let t: Trigger = serde_json::from_str(r#"{"cron":"0 9 * * 1-5"}"#).unwrap();
        assert_eq!(t, Trigger::Cron("0 9 * * 1-5".into()));
        let t: Trigger = serde_json::from_str(r#"{"every_secs":60}"#).unwrap();
        assert_eq!(t, Trigger::EverySecs(60));
        assert_eq!(
            serde_json::to_string(&Trigger::At("2026-12-24T18:00:00+08:00".into())).unwrap(),
            r#"{"at":"2026-12-24T18:00:00+08:00"}"#
        );
        let t: ScheduleTarget = serde_json::from_str(r#""new_session""#).unwrap();
        assert_eq!(t, ScheduleTarget::NewSession);
        let t: ScheduleTarget = serde_json::from_str(r#"{"session":"s1"}"#).unwrap();
        assert_eq!(t, ScheduleTarget::Session("s1".into()));
        for o in FireOutcome::ALL {
            let json = serde_json::to_string(o).unwrap();
            assert_eq!(json, format!("\"{}\"", o.as_str()));
            assert_eq!(o.as_str().parse::<FireOutcome>(), Ok(*o));
        }
        assert_eq!("run_once".parse::<Misfire>(), Ok(Misfire::RunOnce));
        assert_eq!("queue".parse::<Overlap>(), Ok(Overlap::Queue));
    }
}
