//! `weft schedules …` flags and dispatch; the commands themselves are
//! `weft_client::schedules`. Triggers, timezones and names are checked by the
//! gateway (its 422 names the field), so these flags only shape the request.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{ArgGroup, Args, Subcommand};
use weft_client::ClientError;
use weft_client::api::Gateway;
use weft_client::schedules::{self as sched, Misfire, Overlap, Trigger, Zone};

/// After `weft schedules --help`.
pub const EXAMPLES: &str = "\
Examples:
  every weekday at 9:00 Shanghai time:
    weft schedules add --name standup --cron \"0 9 * * 1-5\" --tz Asia/Shanghai \"Summarise yesterday's merged PRs\"
  every 90 minutes, or once at a time:
    weft schedules add --every 90m \"Check the build and tell me what broke\"
    weft schedules add --at 2026-12-24T18:00:00+08:00 \"Remind me to call home\"
  list them (id, name, when, next fire, state, last fire):
    weft schedules
  fire one now, then watch its run:
    weft schedules run standup       # prints `weft -r SESSION`
  its history (due time, lateness, outcome, run status, deliveries):
    weft schedules fires standup
  deliver its notifications to channels too (`weft channels` makes them):
    weft schedules deliver standup ops-hook
  pause, resume, rename, remove (by id, short id or name):
    weft schedules pause standup";

const ADD_EXAMPLES: &str = "\
Examples:
  every weekday at 9:00 Shanghai time:
    weft schedules add --name standup --cron \"0 9 * * 1-5\" --tz Asia/Shanghai \"Summarise yesterday's merged PRs\"
  every hour and a half, in a session you already have, never two at once:
    weft schedules add --every 90m --session 1a2b3c4d --overlap skip \"Check the build\"
  once, on Christmas Eve at 18:00 Beijing time:
    weft schedules add --at 2026-12-24T18:00:00+08:00 \"Remind me to call home\"
  with each result also posted to a webhook and emailed (`weft channels` lists them):
    weft schedules add --every 1h --deliver ops-hook --deliver me-mail \"Check the build\"

Cron is five fields, minute first (minute hour day-of-month month weekday), read
in the schedule's timezone. Without --tz, TZ is used when it names a zone
(e.g. TZ=Europe/Berlin), else the gateway's default (UTC unless its admin set one).";

const DELIVER_EXAMPLES: &str = "\
Examples:
  weft schedules deliver standup ops-hook me-mail   # to these two (and the inbox)
  weft schedules deliver standup --none             # the inbox only

The channels named replace the ones it had. `weft schedules` shows each
schedule's channels; `weft schedules fires standup`, how each delivery went.";

#[derive(Debug, Subcommand)]
pub enum SchedulesCommand {
    /// Your schedules (the default): id, name, the trigger in words, the next
    /// fire in the schedule's timezone, enabled or paused, the channels it
    /// delivers to, and how the last fire went.
    List,
    /// Make a schedule: prints the trigger in words and its next 3 fire times, then creates it.
    #[command(after_help = ADD_EXAMPLES)]
    Add(AddArgs),
    /// Stop firing until resumed (missed times are not made up).
    #[command(after_help = "Example:\n  weft schedules pause standup")]
    Pause {
        /// Schedule id, the short id `weft schedules` shows, or its name.
        id: String,
    },
    /// Fire again, from the next time after now.
    #[command(after_help = "Example:\n  weft schedules resume standup")]
    Resume {
        /// Schedule id, the short id `weft schedules` shows, or its name.
        id: String,
    },
    /// Give a schedule another name.
    #[command(after_help = "Example:\n  weft schedules rename 1a2b3c4d \"morning standup\"")]
    Rename {
        /// Schedule id, the short id `weft schedules` shows, or its name.
        id: String,
        /// The new name (at most 200 characters).
        name: String,
    },
    /// Set the channels a schedule's notifications (a run finished, or waits
    /// for you) go to besides your inbox: exactly the ones named, replacing
    /// what it had; --none for the inbox only.
    #[command(after_help = DELIVER_EXAMPLES)]
    Deliver {
        /// Schedule id, the short id `weft schedules` shows, or its name.
        id: String,
        /// Channels: id, the short id `weft channels` shows, or name.
        #[arg(value_name = "CHANNEL", required_unless_present = "none")]
        channels: Vec<String>,
        /// No channels: notify your inbox only.
        #[arg(long, conflicts_with = "channels")]
        none: bool,
    },
    /// Delete a schedule and its fire history (the sessions it made stay).
    #[command(after_help = "Example:\n  weft schedules rm standup")]
    Rm {
        /// Schedule id, the short id `weft schedules` shows, or its name.
        id: String,
    },
    /// Fire now, outside the trigger: prints the fire, its run and session, and
    /// how to watch it. Exit 1 when nothing runs (the previous run still
    /// going with --overlap skip, or the gateway refused it).
    #[command(after_help = "Example:\n  weft schedules run standup && weft -r SESSION")]
    Run {
        /// Schedule id, the short id `weft schedules` shows, or its name.
        id: String,
    },
    /// A schedule's fires, newest first: the time each was due, how late it was
    /// claimed, how it went, its run's status and session, and why one was
    /// refused; under each, its deliveries (channel, status, attempts, error).
    #[command(after_help = "Example:\n  weft schedules fires standup --limit 10")]
    Fires {
        /// Schedule id, the short id `weft schedules` shows, or its name.
        id: String,
        /// How many (1–200).
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("trigger").required(true).args(["cron", "every", "at"])))]
pub struct AddArgs {
    /// A name to know it by (default: the prompt's first line).
    #[arg(long)]
    name: Option<String>,
    /// Five fields, minute first, in the schedule's timezone: "0 9 * * 1-5" is
    /// 09:00 Monday to Friday.
    #[arg(long, value_name = "PATTERN")]
    cron: Option<String>,
    /// Every so long, counted from now: 1h, 90m, 3600s, 1h30m, 2d (at least a minute).
    #[arg(long, value_name = "LENGTH", value_parser = sched::parse_every)]
    every: Option<u64>,
    /// Once, at an RFC 3339 time, e.g. 2026-12-24T18:00:00+08:00.
    #[arg(long, value_name = "RFC3339")]
    at: Option<String>,
    /// IANA timezone the trigger is read in, e.g. Asia/Shanghai (default: TZ
    /// when it names one, else the gateway's default).
    #[arg(long, value_name = "ZONE")]
    tz: Option<String>,
    /// The agent that runs it (`weft agents` lists them; default: the default agent).
    #[arg(long, value_name = "ID")]
    agent: Option<String>,
    /// Post each fire into this session of yours (full id or a unique suffix)
    /// instead of a new session each time.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// A fire found late after downtime: run once for the latest missed time
    /// (default run_once), or skip it.
    #[arg(long, value_parser = PossibleValuesParser::new(Misfire::ALL.iter().map(|m| m.as_str()))
        .map(|s| s.parse::<Misfire>().expect("one of Misfire::ALL")))]
    misfire: Option<Misfire>,
    /// A fire while the previous run is still going: skip it (default), or
    /// queue it behind that run.
    #[arg(long, value_parser = PossibleValuesParser::new(Overlap::ALL.iter().map(|o| o.as_str()))
        .map(|s| s.parse::<Overlap>().expect("one of Overlap::ALL")))]
    overlap: Option<Overlap>,
    /// Also deliver its notifications to this channel (id, short id or name;
    /// repeat for more). `weft channels` lists yours.
    #[arg(long, value_name = "CHANNEL")]
    deliver: Vec<String>,
    /// What the agent is asked each time.
    #[arg(value_name = "PROMPT")]
    prompt: String,
}

impl AddArgs {
    fn into_new(self) -> sched::NewSchedule {
        let trigger = match (self.cron, self.every, self.at) {
            (Some(c), _, _) => Trigger::Cron(c),
            (None, Some(secs), _) => Trigger::EverySecs(secs),
            (None, None, Some(at)) => Trigger::At(at),
            (None, None, None) => unreachable!("clap requires one of --cron, --every, --at"),
        };
        sched::NewSchedule {
            name: self.name,
            trigger,
            zone: Zone::choose(self.tz),
            agent: self.agent,
            session: self.session,
            misfire: self.misfire,
            overlap: self.overlap,
            deliver: self.deliver,
            prompt: self.prompt,
        }
    }
}

/// Run one `weft schedules` command; the answer is the exit code.
pub async fn run(gw: &Gateway, cmd: Option<SchedulesCommand>) -> Result<u8, ClientError> {
    let done = |()| weft_client::exit::OK;
    match cmd.unwrap_or(SchedulesCommand::List) {
        SchedulesCommand::List => sched::list(gw).await.map(done),
        SchedulesCommand::Add(args) => sched::add(gw, args.into_new()).await.map(done),
        SchedulesCommand::Pause { id } => sched::pause(gw, &id).await.map(done),
        SchedulesCommand::Resume { id } => sched::resume(gw, &id).await.map(done),
        SchedulesCommand::Rename { id, name } => sched::rename(gw, &id, &name).await.map(done),
        SchedulesCommand::Deliver {
            id,
            channels,
            none: _,
        } => sched::deliver(gw, &id, &channels).await.map(done),
        SchedulesCommand::Rm { id } => sched::remove(gw, &id).await.map(done),
        SchedulesCommand::Run { id } => sched::run_now(gw, &id).await.map(|started| {
            if started {
                weft_client::exit::OK
            } else {
                weft_client::exit::RUN_FAILED
            }
        }),
        SchedulesCommand::Fires { id, limit } => sched::fires(gw, &id, limit).await.map(done),
    }
}
