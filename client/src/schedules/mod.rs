//! `weft schedules …`: prompts an agent runs on its own, from the terminal —
//! list, add (after showing the next fire times the gateway previews), pause,
//! resume, rename, remove, run now, the channels it delivers to, and a
//! schedule's fire history with each fire's deliveries.
//!
//! Every check of a trigger or timezone is the gateway's (`/v1/schedules`):
//! the client sends what was typed and prints the 422 that names the field, so
//! the rules cannot drift between the web form, the API and here. Schedules
//! are named as sessions are, by a full id or a unique suffix of one (the short
//! id the list shows), or by a unique name ([`listing`], which `weft channels`
//! shares).

use std::io::Write;

pub use crate::when::parse_every;
use weft_wire::api::{
    ChannelDto, CreateScheduleRequest, FireDto, FireOutcome, PreviewRequest, PreviewResponse,
    ScheduleDto, ScheduleTarget, UpdateScheduleRequest,
};
pub use weft_wire::api::{Misfire, Overlap, Trigger};

use crate::api::Gateway;
use crate::error::{ClientError, Result};
use crate::listing::{self, table};
use crate::render::truncate;
use crate::session::{self, short};
use crate::when;

/// How many fire times `add` shows before it creates.
const PREVIEW_COUNT: u32 = 3;

/// The timezone a new schedule is read in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Zone {
    /// `--tz`: a wrong one is the person's to fix (the gateway's 422).
    Given(String),
    /// `TZ` in the environment, when it names a zone rather than a rule or a
    /// file; one the gateway does not know falls back to its default.
    FromEnv(String),
    /// The gateway's `schedules.default_timezone` (the field left out).
    GatewayDefault,
}

impl Zone {
    /// `--tz` if given, else `TZ`, else the gateway's default.
    pub fn choose(flag: Option<String>) -> Zone {
        match flag {
            Some(tz) => Zone::Given(tz),
            None => std::env::var("TZ")
                .ok()
                .and_then(|tz| zone_name(&tz))
                .map_or(Zone::GatewayDefault, Zone::FromEnv),
        }
    }

    fn name(&self) -> Option<String> {
        match self {
            Zone::Given(tz) | Zone::FromEnv(tz) => Some(tz.clone()),
            Zone::GatewayDefault => None,
        }
    }
}

/// The zone name in a `TZ` value: `Asia/Shanghai`, `:Asia/Shanghai` and
/// `/usr/share/zoneinfo/Asia/Shanghai` name one; `/etc/localtime` and empty
/// values do not (POSIX rules such as `CST-8` are left to the gateway, which
/// knows the IANA names that look like them, `EST5EDT`).
fn zone_name(tz: &str) -> Option<String> {
    let tz = tz.trim().trim_start_matches(':');
    let tz = match tz.split_once("zoneinfo/") {
        Some((_, name)) => name,
        None if tz.starts_with('/') => return None,
        None => tz,
    };
    (!tz.is_empty()).then(|| tz.to_string())
}

/// What `weft schedules add` asks for.
#[derive(Debug, Clone)]
pub struct NewSchedule {
    pub name: Option<String>,
    pub trigger: Trigger,
    pub zone: Zone,
    pub agent: Option<String>,
    /// A session of yours (full id or a unique suffix); none: a new session each fire.
    pub session: Option<String>,
    pub misfire: Option<Misfire>,
    pub overlap: Option<Overlap>,
    /// Channels (name, id or short id) to deliver its notifications to,
    /// besides the inbox; none: the inbox only.
    pub deliver: Vec<String>,
    pub prompt: String,
}

/// The schedule `id` means: a full id, else a unique name, else a unique
/// suffix of an id (the short id the list shows).
async fn find(gw: &Gateway, id: &str) -> Result<ScheduleDto> {
    let all = gw.schedules().await?.schedules;
    listing::pick(&all, id).cloned()
}

/// `started (succeeded)`, `refused`, `skipped (run now)`.
fn outcome(f: &FireDto) -> String {
    let mut s = f.outcome.as_str().to_string();
    if let Some(status) = f.run_status {
        s.push_str(&format!(" ({})", status.as_str()));
    }
    if f.manual {
        s.push_str(" [run now]");
    }
    s
}

/// `weft schedules` / `weft schedules list`: one schedule a line.
pub async fn list(gw: &Gateway) -> Result<()> {
    let schedules = gw.schedules().await?.schedules;
    let mut out = std::io::stdout().lock();
    if schedules.is_empty() {
        writeln!(
            out,
            "no schedules yet; make one with `weft schedules add` (see `weft schedules add --help`)"
        )?;
        return Ok(());
    }
    // Only a gateway that delivers anywhere is asked for channels.
    let channels = match schedules.iter().any(|s| !s.deliver.is_empty()) {
        true => gw.channels().await?.channels,
        false => Vec::new(),
    };
    let mut rows = vec![
        [
            "ID",
            "NAME",
            "WHEN",
            "NEXT FIRE",
            "STATE",
            "DELIVERS TO",
            "LAST FIRE",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for s in &schedules {
        rows.push(vec![
            short(&s.id).to_string(),
            truncate(&s.name, 32),
            s.describe.clone(),
            s.next_fire_at
                .as_deref()
                .map_or_else(|| "-".into(), when::local),
            if s.enabled { "enabled" } else { "paused" }.into(),
            channel_names(&s.deliver, &channels),
            s.last_fire.as_ref().map_or_else(|| "-".into(), outcome),
        ]);
    }
    write!(out, "{}", table(&rows))?;
    Ok(())
}

/// `ops-hook, mail` for a schedule's `deliver`, a channel this list does not
/// know by its short id; `-` for the inbox only.
fn channel_names(deliver: &[String], channels: &[ChannelDto]) -> String {
    if deliver.is_empty() {
        return "-".into();
    }
    let names: Vec<String> = deliver
        .iter()
        .map(|id| {
            channels
                .iter()
                .find(|c| &c.id == id)
                .map_or_else(|| short(id).to_string(), |c| truncate(&c.name, 24))
        })
        .collect();
    names.join(", ")
}

/// The caller's channels when `typed` names any (none typed asks nothing),
/// and the ids of those it names (each a name, id or short id).
async fn channel_ids(gw: &Gateway, typed: &[String]) -> Result<(Vec<ChannelDto>, Vec<String>)> {
    if typed.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let all = gw.channels().await?.channels;
    let mut ids = Vec::new();
    for t in typed {
        let id = &listing::pick(&all, t)?.id;
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    Ok((all, ids))
}

/// The trigger's next times, in the zone chosen; a `TZ` the gateway does not
/// know gives way to its default (said on stderr), a `--tz` does not.
async fn preview(gw: &Gateway, trigger: &Trigger, zone: Zone) -> Result<(Zone, PreviewResponse)> {
    let ask = |zone: &Zone| PreviewRequest {
        trigger: trigger.clone(),
        timezone: zone.name(),
        count: Some(PREVIEW_COUNT),
    };
    match gw.preview_schedule(&ask(&zone)).await {
        Ok(p) => Ok((zone, p)),
        Err(ClientError::Api {
            status: 422,
            message,
            ..
        }) if matches!(zone, Zone::FromEnv(_)) && message.starts_with("timezone") => {
            eprintln!(
                "weft: TZ={} is not a timezone the gateway knows; using its default",
                zone.name().unwrap_or_default()
            );
            let zone = Zone::GatewayDefault;
            let p = gw.preview_schedule(&ask(&zone)).await?;
            Ok((zone, p))
        }
        Err(e) => Err(e),
    }
}

/// `weft schedules add`: print what the trigger means and its next fire
/// times, then create the schedule.
pub async fn add(gw: &Gateway, new: NewSchedule) -> Result<()> {
    if new.prompt.trim().is_empty() {
        return Err(ClientError::Usage(
            "the prompt is empty: say what the agent should do each time".into(),
        ));
    }
    let target = match &new.session {
        Some(id) => Some(ScheduleTarget::Session(session::find(gw, id).await?.id)),
        None => None,
    };
    let (channels, deliver) = channel_ids(gw, &new.deliver).await?;
    let (zone, shown) = preview(gw, &new.trigger, new.zone).await?;
    let mut out = std::io::stdout().lock();
    // A cron's words name their timezone already: `At 09:00, … (Asia/Shanghai)`.
    if shown.describe.contains(&format!("({})", shown.timezone)) {
        writeln!(out, "{}", shown.describe)?;
    } else {
        writeln!(out, "{} — timezone {}", shown.describe, shown.timezone)?;
    }
    if shown.next.is_empty() {
        writeln!(out, "  it will not fire again")?;
    }
    for (i, t) in shown.next.iter().enumerate() {
        let label = if i == 0 { "next:" } else { "" };
        writeln!(out, "  {label:<6}{}", when::local(t))?;
    }
    let s = gw
        .create_schedule(&CreateScheduleRequest {
            name: new.name,
            agent: new.agent,
            prompt: new.prompt,
            trigger: new.trigger,
            timezone: zone.name(),
            enabled: None,
            target,
            misfire: new.misfire,
            overlap: new.overlap,
            deliver: (!deliver.is_empty()).then_some(deliver),
        })
        .await?;
    writeln!(
        out,
        "created schedule {} ({}), agent {}, {}",
        s.name,
        short(&s.id),
        s.agent,
        match &s.target {
            ScheduleTarget::NewSession => "a new session each time".to_string(),
            ScheduleTarget::Session(id) => format!("in session {}", short(id)),
        }
    )?;
    if !s.deliver.is_empty() {
        writeln!(
            out,
            "delivers to {} (and your inbox)",
            channel_names(&s.deliver, &channels)
        )?;
    }
    Ok(())
}

async fn update(gw: &Gateway, id: &str, change: UpdateScheduleRequest) -> Result<ScheduleDto> {
    let s = find(gw, id).await?;
    gw.update_schedule(&s.id, &change).await
}

fn next_words(s: &ScheduleDto) -> String {
    s.next_fire_at.as_deref().map_or_else(
        || "it will not fire again".into(),
        |t| format!("next fire {}", when::local(t)),
    )
}

/// `weft schedules pause ID`: no fires until resumed (missed ones are not made up).
pub async fn pause(gw: &Gateway, id: &str) -> Result<()> {
    let change = UpdateScheduleRequest {
        enabled: Some(false),
        ..Default::default()
    };
    let s = update(gw, id, change).await?;
    println!("paused {} ({})", s.name, short(&s.id));
    Ok(())
}

/// `weft schedules resume ID`: fires again from its next time after now.
pub async fn resume(gw: &Gateway, id: &str) -> Result<()> {
    let change = UpdateScheduleRequest {
        enabled: Some(true),
        ..Default::default()
    };
    let s = update(gw, id, change).await?;
    println!("resumed {} ({}); {}", s.name, short(&s.id), next_words(&s));
    Ok(())
}

pub async fn rename(gw: &Gateway, id: &str, name: &str) -> Result<()> {
    let change = UpdateScheduleRequest {
        name: Some(name.to_string()),
        ..Default::default()
    };
    let s = update(gw, id, change).await?;
    println!("renamed {} to {}", short(&s.id), s.name);
    Ok(())
}

/// `weft schedules deliver ID CHANNEL…`: its notifications go to exactly
/// these channels (each a name, id or short id) besides the inbox; none: the
/// inbox only.
pub async fn deliver(gw: &Gateway, id: &str, channels: &[String]) -> Result<()> {
    let s = find(gw, id).await?;
    let (all, ids) = channel_ids(gw, channels).await?;
    let change = UpdateScheduleRequest {
        deliver: Some(ids),
        ..Default::default()
    };
    let s = gw.update_schedule(&s.id, &change).await?;
    if s.deliver.is_empty() {
        println!("{} ({}) now notifies your inbox only", s.name, short(&s.id));
    } else {
        println!(
            "{} ({}) now delivers to {} (and your inbox)",
            s.name,
            short(&s.id),
            channel_names(&s.deliver, &all)
        );
    }
    Ok(())
}

/// `weft schedules rm ID`: the schedule and its history; its runs and their
/// sessions stay.
pub async fn remove(gw: &Gateway, id: &str) -> Result<()> {
    let s = find(gw, id).await?;
    gw.delete_schedule(&s.id).await?;
    println!(
        "deleted schedule {} ({}); the sessions it made stay",
        s.name,
        short(&s.id)
    );
    Ok(())
}

/// `weft schedules run ID`: one fire now. True when it started (or queued) a
/// run; a fire the overlap rule skipped or the gateway refused is false.
pub async fn run_now(gw: &Gateway, id: &str) -> Result<bool> {
    let s = find(gw, id).await?;
    let fire = gw.run_schedule(&s.id).await?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "fired {} ({}) at {}: {}",
        s.name,
        short(&s.id),
        when::local(&fire.fire_at),
        fire.outcome.as_str()
    )?;
    if let Some(run) = &fire.run_id {
        writeln!(out, "run {run}")?;
    }
    if let Some(session) = &fire.session_id {
        writeln!(out, "session {session}")?;
        writeln!(out, "watch it: weft -r {session}")?;
    }
    let started = matches!(fire.outcome, FireOutcome::Started | FireOutcome::Queued);
    if !started {
        let why = match (&fire.detail, fire.outcome) {
            (Some(d), _) => d.clone(),
            (None, FireOutcome::Skipped) => {
                "its previous run is still going (overlap: skip)".into()
            }
            (None, _) => "no run was started".into(),
        };
        writeln!(out, "nothing runs: {why}")?;
    }
    Ok(started)
}

/// `weft schedules fires ID`: its history, newest first.
pub async fn fires(gw: &Gateway, id: &str, limit: u32) -> Result<()> {
    let s = find(gw, id).await?;
    let fires = gw.schedule_fires(&s.id, limit).await?.fires;
    let mut out = std::io::stdout().lock();
    if fires.is_empty() {
        writeln!(out, "{} has not fired yet; {}", s.name, next_words(&s))?;
        return Ok(());
    }
    let mut rows = vec![
        [
            "FIRE TIME",
            "LATE",
            "OUTCOME",
            "RUN STATUS",
            "SESSION",
            "DETAIL",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for f in &fires {
        let mut outcome = f.outcome.as_str().to_string();
        if f.manual {
            outcome.push_str(" (run now)");
        }
        rows.push(vec![
            when::local(&f.fire_at),
            when::lateness(&f.fire_at, &f.fired_at),
            outcome,
            f.run_status.map_or("-", |r| r.as_str()).to_string(),
            f.session_id.as_deref().map_or("-", short).to_string(),
            f.detail
                .as_deref()
                .map_or_else(String::new, |d| truncate(d, 80)),
        ]);
    }
    let mut lines = listing::table_lines(&rows).into_iter();
    writeln!(out, "{}", lines.next().unwrap_or_default())?;
    for (f, line) in fires.iter().zip(lines) {
        writeln!(out, "{line}")?;
        for d in &f.deliveries {
            writeln!(out, "  -> {}", crate::channels::words::delivery(d))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tz_values_that_name_a_zone() {
        assert_eq!(zone_name("Asia/Shanghai").as_deref(), Some("Asia/Shanghai"));
        assert_eq!(
            zone_name(":Europe/Berlin").as_deref(),
            Some("Europe/Berlin")
        );
        assert_eq!(
            zone_name("/usr/share/zoneinfo/America/New_York").as_deref(),
            Some("America/New_York")
        );
        assert_eq!(zone_name(":/etc/localtime"), None);
        assert_eq!(zone_name("  "), None);
    }
}
