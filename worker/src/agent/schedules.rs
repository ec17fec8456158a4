//! Schedules from chat (docs/schedules.md): `schedule_create` makes one for
//! the person speaking — by default into this conversation ("post it here"),
//! run by this conversation's agent and model — and `schedule_list` shows
//! theirs. `schedule_create` changes what will happen without anyone asking
//! later, so it has side effects and defaults to the `confirm` policy: the
//! person sees the schedule, its times in words, before it exists.

use weft_config::LiveConfig;
use weft_llm::ToolSpec;
use weft_shared::api::{Misfire, Overlap, Trigger};
use weft_shared::ids::{SessionId, UserId};
use weft_shared::schedule_time::Timing;
use weft_shared::time::now_ms;
use weft_store::{NewSchedule, Store, StoreError};
use weft_tools::{Tool, ToolContext};

pub(crate) const SCHEDULE_CREATE: &str = "schedule_create";
pub(crate) const SCHEDULE_LIST: &str = "schedule_list";

pub(crate) struct ScheduleCreate {
    pub store: Store,
    pub live: LiveConfig,
}

impl ScheduleCreate {
    /// The ids of the person's channels named in `names` (a JSON array);
    /// an unknown name is an error listing the ones they have.
    async fn channels_named(
        &self,
        user: &UserId,
        names: &serde_json::Value,
    ) -> Result<Vec<String>, String> {
        let Some(names) = names.as_array().filter(|n| !n.is_empty()) else {
            return Ok(Vec::new());
        };
        let channels = self
            .store
            .list_channels(user)
            .await
            .map_err(|e| format!("reading the person's channels failed: {e}"))?;
        let mut ids = Vec::new();
        for name in names {
            let name = name.as_str().unwrap_or_default().trim();
            match channels.iter().find(|c| c.name == name || c.id == name) {
                Some(c) => ids.push(c.id.clone()),
                None => {
                    let have: Vec<&str> = channels.iter().map(|c| c.name.as_str()).collect();
                    return Err(match have.is_empty() {
                        true => format!(
                            "deliver: the person has no channels (they make them on the web page's Channels, or with `weft channels add`); there is no {name:?}"
                        ),
                        false => format!(
                            "deliver: no channel {name:?}; the person's channels are: {}",
                            have.join(", ")
                        ),
                    });
                }
            }
        }
        Ok(ids)
    }
}

#[async_trait::async_trait]
impl Tool for ScheduleCreate {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SCHEDULE_CREATE.into(),
            description: "Schedule a prompt to run on its own later, for the person you are \
                talking to: on a cron (five fields, minute first, in their timezone), every \
                N seconds (at least 60), or once at a time. Each time, the prompt runs as a \
                new message — into this conversation by default, or a fresh one each time. \
                Give exactly one of cron, every_secs or at. Use the person's own timezone \
                (IANA, e.g. Asia/Shanghai) when they name a local time."
                .into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "prompt": {"type": "string", "description": "What to do each time, as the person would ask it."},
                    "name": {"type": "string", "description": "A short name (default: the prompt's first line)."},
                    "cron": {"type": "string", "description": "e.g. \"0 9 * * 1-5\": 09:00 on weekdays."},
                    "every_secs": {"type": "integer", "minimum": 60},
                    "at": {"type": "string", "description": "RFC 3339, e.g. 2026-12-24T18:00:00+08:00."},
                    "timezone": {"type": "string", "description": "IANA; default the person's own (their account setting), else the server's."},
                    "target": {"type": "string", "enum": ["here", "new_session"], "description": "Default here: this conversation."},
                    "deliver": {"type": "array", "items": {"type": "string"}, "description": "Names of the person's channels (a Lark chat or DM, a webhook, an email) to also send each result to; schedule_list shows them."}
                },
                "required": ["prompt"],
                "additionalProperties": false
            }),
        }
    }

    fn side_effects(&self) -> bool {
        true
    }

    async fn call(&self, args: serde_json::Value, ctx: &ToolContext) -> Result<String, String> {
        let config = self.live.get();
        let prompt = args["prompt"].as_str().unwrap_or_default().trim();
        if prompt.is_empty() {
            return Err("prompt must not be empty".into());
        }
        let trigger = match (
            args["cron"].as_str(),
            args["every_secs"].as_u64(),
            args["at"].as_str(),
        ) {
            (Some(c), None, None) => Trigger::Cron(c.trim().to_string()),
            (None, Some(s), None) => Trigger::EverySecs(s),
            (None, None, Some(a)) => Trigger::At(a.trim().to_string()),
            _ => return Err("give exactly one of cron, every_secs or at".into()),
        };
        let user = UserId(ctx.user_id.clone());
        let own = match args["timezone"].as_str() {
            Some(_) => None,
            None => self
                .store
                .user_timezone(&user)
                .await
                .map_err(|e| format!("reading the person's timezone failed: {e}"))?,
        };
        let timezone = args["timezone"]
            .as_str()
            .or(own.as_deref())
            .unwrap_or(&config.schedules.default_timezone)
            .trim()
            .to_string();
        let now = now_ms();
        let timing = Timing::new(&trigger, &timezone, now).map_err(|e| e.to_string())?;
        let Some(first) = timing.next_after(now) else {
            return Err("trigger.at: is in the past".into());
        };
        let here = SessionId(ctx.session_id.clone());
        // This conversation's agent and model, as its owner set them.
        let session = self
            .store
            .get_session_unscoped(&here)
            .await
            .map_err(|e| format!("reading this conversation failed: {e}"))?;
        let target_here = args["target"].as_str() != Some("new_session");
        // "Here" only in the person's own conversation (in a shared Lark chat
        // the session is whoever spoke first's).
        if target_here && session.user_id != user {
            return Err(
                "this conversation is not this person's own; use target new_session".into(),
            );
        }
        let name = match args["name"].as_str().map(str::trim) {
            Some(n) if !n.is_empty() => n.chars().take(200).collect(),
            _ => weft_store::auto_title(prompt),
        };
        let deliver = self.channels_named(&user, &args["deliver"]).await?;
        let new = NewSchedule {
            user_id: user,
            name,
            agent: session.agent.clone(),
            model: session.model.clone(),
            prompt: prompt.to_string(),
            trigger,
            timezone,
            enabled: true,
            session_id: target_here.then_some(here),
            misfire: Misfire::RunOnce,
            overlap: Overlap::Skip,
            deliver,
        };
        match self
            .store
            .create_schedule(&new, config.schedules.max_per_user)
            .await
        {
            Ok(s) => Ok(format!(
                "Scheduled {:?} (id {}): {}. First run {}{}.",
                s.name,
                s.id,
                timing.describe(),
                timing.local(first),
                if target_here {
                    ", in this conversation"
                } else {
                    ", each in a new conversation"
                }
            )),
            Err(StoreError::OverLimit(_)) => Err(format!(
                "this person has {} schedules, the most allowed; they can delete one first",
                config.schedules.max_per_user
            )),
            Err(e) => Err(format!("scheduling failed: {e}")),
        }
    }
}

pub(crate) struct ScheduleList {
    pub store: Store,
}

#[async_trait::async_trait]
impl Tool for ScheduleList {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: SCHEDULE_LIST.into(),
            description: "List the schedules of the person you are talking to — what runs \
                when, whether paused, how the last run went, where results are delivered — \
                and the channels they can deliver to."
                .into(),
            parameters: serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false}),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, _args: serde_json::Value, ctx: &ToolContext) -> Result<String, String> {
        let user = UserId(ctx.user_id.clone());
        let schedules = self
            .store
            .list_schedules(&user)
            .await
            .map_err(|e| format!("reading schedules failed: {e}"))?;
        let channels = self
            .store
            .list_channels(&user)
            .await
            .map_err(|e| format!("reading channels failed: {e}"))?;
        let channel_name = |id: &String| {
            channels
                .iter()
                .find(|c| &c.id == id)
                .map_or(id.clone(), |c| c.name.clone())
        };
        let mut out = String::new();
        if schedules.is_empty() {
            out.push_str("This person has no schedules.\n");
        }
        for s in schedules {
            let timing = s.timing().ok();
            let when = timing.as_ref().map(Timing::describe).unwrap_or_default();
            let next = match (s.enabled, s.next_fire_at, &timing) {
                (false, _, _) => "paused".to_string(),
                (true, Some(n), Some(t)) => format!("next {}", t.local(n)),
                _ => "will not run again".to_string(),
            };
            let last = s
                .last_fire
                .map(|f| format!("; last: {}", f.outcome.as_str()))
                .unwrap_or_default();
            let deliver = match s.deliver.is_empty() {
                true => String::new(),
                false => format!(
                    "\n  delivered to: {}",
                    s.deliver
                        .iter()
                        .map(channel_name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            out.push_str(&format!(
                "- {} ({}): {when}; {next}{last}\n  prompt: {}{deliver}\n",
                s.name, s.id, s.prompt
            ));
        }
        match channels.is_empty() {
            true => out.push_str(
                "Channels: none (made on the web page's Channels, or with `weft channels add`).",
            ),
            false => {
                out.push_str("Channels (for deliver): ");
                let named: Vec<String> = channels
                    .iter()
                    .map(|c| format!("{} ({})", c.name, c.target.kind().as_str()))
                    .collect();
                out.push_str(&named.join(", "));
            }
        }
        Ok(out)
    }
}
