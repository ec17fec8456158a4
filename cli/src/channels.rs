//! `weft channels …` flags and dispatch; the commands themselves are
//! `weft_client::channels`. URLs, addresses and chats are checked by the
//! gateway (its 422 names the field), so these flags only shape the request.

use std::time::Duration;

use clap::{ArgGroup, Args, Subcommand};
use weft_client::ClientError;
use weft_client::api::Gateway;
use weft_client::channels::{self as ch, ChannelTarget};

/// How long `weft channels test --wait` waits for the test to land.
const TEST_WAIT: Duration = Duration::from_secs(15);

/// After `weft channels --help`.
pub const EXAMPLES: &str = "\
Examples:
  a signed webhook (the secret is printed once), then a test that waits for it:
    weft channels add ops-hook --webhook https://hooks.example.com/weft
    weft channels test ops-hook --wait
  an email address, your Lark DMs, a Lark group chat:
    weft channels add me-mail --email me@example.com
    weft channels add lark-dm --lark
    weft channels add team --lark --chat oc_1a2b3c
  have a schedule deliver to it (besides your inbox):
    weft schedules add --cron \"0 9 * * 1-5\" --deliver ops-hook \"Summarise yesterday's PRs\"
    weft schedules deliver standup ops-hook
  list them (kind, target, schedules using each, how the last delivery went):
    weft channels
  a channel's deliveries, newest first:
    weft channels deliveries ops-hook";

const ADD_EXAMPLES: &str = "\
Examples:
  weft channels add ops-hook --webhook https://hooks.example.com/weft
  weft channels add ops-hook --webhook https://hooks.example.com/weft --secret \"$HOOK_SECRET\"
  weft channels add me-mail --email me@example.com
  weft channels add lark-dm --lark --waits    (also every question and approval of yours)
  weft channels add team --lark --chat oc_1a2b3c

A webhook gets each notification as a JSON POST with Weft-Event, Weft-Delivery
(the same id on every retry: drop repeats) and Weft-Signature: t=<unix secs>,
v1=<hex HMAC-SHA256 of \"<t>.<body>\" under the secret>. The URL must be one the
server's SSRF guard accepts (no private addresses unless its admin allows them).
Email needs the server's [email] settings; Lark needs its [lark] settings and,
for a DM, your account linked to Lark.";

#[derive(Debug, Subcommand)]
pub enum ChannelsCommand {
    /// Your channels (the default): id, name, kind, where it posts, how many
    /// schedules deliver to it, and how its newest delivery went.
    List,
    /// Make a channel: a webhook, an email address, or Lark (a DM or a group chat).
    #[command(after_help = ADD_EXAMPLES)]
    Add(AddArgs),
    /// Give a channel another name.
    #[command(after_help = "Example:\n  weft channels rename ops-hook alerts")]
    Rename {
        /// Channel id, the short id `weft channels` shows, or its name.
        id: String,
        /// The new name (at most 100 characters, unique among yours).
        name: String,
    },
    /// Delete a channel: schedules stop delivering to it; its history stays.
    #[command(after_help = "Example:\n  weft channels rm ops-hook")]
    Rm {
        /// Channel id, the short id `weft channels` shows, or its name.
        id: String,
    },
    /// Send a test message through the same outbox (and retries) as every
    /// delivery. With --wait, wait up to 15 s for it: exit 0 when delivered,
    /// 1 (with the error) when it failed or is still being retried.
    #[command(after_help = "Example:\n  weft channels test ops-hook --wait")]
    Test {
        /// Channel id, the short id `weft channels` shows, or its name.
        id: String,
        /// Wait (up to 15 s) until it is delivered or has failed.
        #[arg(long)]
        wait: bool,
    },
    /// A channel's deliveries, newest first: when, what (a test, a run that
    /// finished or waits for you), status, attempts, when it arrived, the run,
    /// and the last error.
    #[command(after_help = "Example:\n  weft channels deliveries ops-hook --limit 10")]
    Deliveries {
        /// Channel id, the short id `weft channels` shows, or its name.
        id: String,
        /// How many (1–200).
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Whether the channel also gets every question, approval and plan of
    /// your own runs (outside Lark chats, which show them already), to answer
    /// away from the screen — a Lark channel with buttons to click.
    #[command(after_help = "Example:\n  weft channels waits lark-dm on")]
    Waits {
        /// Channel id, the short id `weft channels` shows, or its name.
        id: String,
        #[arg(value_parser = ["on", "off"])]
        state: String,
    },
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["webhook", "email", "lark"])))]
pub struct AddArgs {
    /// A name to know it by, unique among yours (at most 100 characters), e.g. ops-hook.
    name: String,
    /// POST each notification, signed, to this http(s) URL.
    #[arg(long, value_name = "URL")]
    webhook: Option<String>,
    /// With --webhook: the signing secret, 16–256 characters (default: one is
    /// made and printed this once).
    #[arg(long, value_name = "SECRET", requires = "webhook")]
    secret: Option<String>,
    /// Email each notification to this address (needs the server's [email] settings).
    #[arg(long, value_name = "ADDRESS")]
    email: Option<String>,
    /// Send each notification on Lark: a direct message to you, or with
    /// --chat to a group chat.
    #[arg(long)]
    lark: bool,
    /// With --lark: a group chat (oc_…) where you have talked to the bot.
    #[arg(long, value_name = "CHAT_ID", requires = "lark")]
    chat: Option<String>,
    /// Also send every question, approval and plan of your own runs here
    /// (not only your schedules'): answer from your phone.
    #[arg(long)]
    waits: bool,
}

impl AddArgs {
    fn target(self) -> (String, ChannelTarget, bool) {
        let target = match (self.webhook, self.email) {
            (Some(url), _) => ChannelTarget::Webhook {
                url,
                secret: self.secret,
            },
            (None, Some(to)) => ChannelTarget::Email { to },
            (None, None) => ChannelTarget::Lark { chat_id: self.chat },
        };
        (self.name, target, self.waits)
    }
}

/// Run one `weft channels` command; the answer is the exit code.
pub async fn run(gw: &Gateway, cmd: Option<ChannelsCommand>) -> Result<u8, ClientError> {
    let done = |()| weft_client::exit::OK;
    match cmd.unwrap_or(ChannelsCommand::List) {
        ChannelsCommand::List => ch::list(gw).await.map(done),
        ChannelsCommand::Add(args) => {
            let (name, target, waits) = args.target();
            ch::add(gw, &name, target, waits).await.map(done)
        }
        ChannelsCommand::Rename { id, name } => ch::rename(gw, &id, &name).await.map(done),
        ChannelsCommand::Rm { id } => ch::remove(gw, &id).await.map(done),
        ChannelsCommand::Test { id, wait } => {
            let sent = ch::test(gw, &id).await?;
            match wait {
                true => Ok(ch::wait(gw, &sent, TEST_WAIT).await?.exit_code()),
                false => {
                    println!(
                        "`weft channels deliveries {}` shows how it went (or wait for it with --wait)",
                        weft_client::session::short(&sent.channel.id)
                    );
                    Ok(weft_client::exit::OK)
                }
            }
        }
        ChannelsCommand::Deliveries { id, limit } => ch::deliveries(gw, &id, limit).await.map(done),
        ChannelsCommand::Waits { id, state } => {
            ch::set_waits(gw, &id, state == "on").await.map(done)
        }
    }
}
