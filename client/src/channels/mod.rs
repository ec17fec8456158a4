//! `weft channels …`: where your notifications go besides the inbox — a signed
//! webhook, an email address, a Lark chat or direct message — from the
//! terminal: list, add, rename, remove, send a test (and wait to see it
//! land), and a channel's delivery history. Schedules name the channels they
//! deliver to (`weft schedules deliver`).
//!
//! Every check of a target is the gateway's (`/v1/channels`): a URL its SSRF
//! guard refuses, an email channel on a server without SMTP, a Lark chat you
//! are not in are its 422s, which name the field, printed as they come.
//! Channels are named as schedules are ([`crate::listing`]): by id,
//! a unique name, or the short id the list shows.

pub mod words;

use std::io::Write;
use std::time::Duration;

pub use weft_wire::api::ChannelTarget;
use weft_wire::api::{
    ChannelDto, CreateChannelRequest, DeliveryDto, DeliveryStatus, UpdateChannelRequest,
};

use crate::api::Gateway;
use crate::error::Result;
use crate::listing::{self, table};
use crate::render::truncate;
use crate::session::short;
use crate::when;

/// How often `test --wait` asks how the test went.
const POLL: Duration = Duration::from_millis(300);

/// The channel `id` means: a full id, else a unique name, else a unique
/// suffix of an id.
async fn find(gw: &Gateway, id: &str) -> Result<ChannelDto> {
    let all = gw.channels().await?.channels;
    listing::pick(&all, id).cloned()
}

/// `weft channels` / `weft channels list`: one channel a line.
pub async fn list(gw: &Gateway) -> Result<()> {
    let channels = gw.channels().await?.channels;
    let mut out = std::io::stdout().lock();
    if channels.is_empty() {
        writeln!(
            out,
            "no channels yet; make one with `weft channels add` (see `weft channels add --help`)"
        )?;
        return Ok(());
    }
    let mut rows = vec![
        [
            "ID",
            "NAME",
            "KIND",
            "TARGET",
            "SCHEDULES",
            "WAITS",
            "LAST DELIVERY",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for c in &channels {
        rows.push(vec![
            short(&c.id).to_string(),
            truncate(&c.name, 32),
            c.target.kind().as_str().to_string(),
            words::target(&c.target),
            c.schedules.to_string(),
            if c.waits { "yes" } else { "-" }.to_string(),
            words::last_delivery(c),
        ]);
    }
    write!(out, "{}", table(&rows))?;
    Ok(())
}

/// `weft channels add NAME …`: a webhook made without `--secret` prints the
/// secret the gateway made for it, the one time it is shown. `waits`: it also
/// takes every question, approval and plan of your own runs.
pub async fn add(gw: &Gateway, name: &str, target: ChannelTarget, waits: bool) -> Result<()> {
    let chose_secret = matches!(
        target,
        ChannelTarget::Webhook {
            secret: Some(_),
            ..
        }
    );
    let req = CreateChannelRequest {
        name: name.to_string(),
        target,
        waits,
    };
    let c = gw.create_channel(&req).await?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "created channel {} ({}): {}",
        c.name,
        short(&c.id),
        words::kind_and_target(&c)
    )?;
    match &c.target {
        ChannelTarget::Webhook {
            secret: Some(secret),
            ..
        } if !chose_secret => {
            writeln!(out, "secret: {secret}")?;
            writeln!(
                out,
                "  copy it now: it will not be shown again. Your receiver checks each POST's\n  Weft-Signature (t=<secs>,v1=<hex HMAC-SHA256 of \"t.body\">) with it."
            )?;
        }
        ChannelTarget::Webhook { .. } => {
            let hint = c.secret_hint.as_deref().unwrap_or("");
            writeln!(out, "signed with the secret you gave ({hint})")?;
        }
        _ => {}
    }
    writeln!(out, "try it: weft channels test {} --wait", short(&c.id))?;
    Ok(())
}

pub async fn rename(gw: &Gateway, id: &str, name: &str) -> Result<()> {
    let c = find(gw, id).await?;
    let change = UpdateChannelRequest {
        name: Some(name.to_string()),
        target: None,
        waits: None,
    };
    let c = gw.update_channel(&c.id, &change).await?;
    println!("renamed {} to {}", short(&c.id), c.name);
    Ok(())
}

/// `weft channels waits ID on|off`: whether the channel also takes every
/// question, approval and plan of your own runs (outside Lark chats).
pub async fn set_waits(gw: &Gateway, id: &str, on: bool) -> Result<()> {
    let c = find(gw, id).await?;
    let change = UpdateChannelRequest {
        name: None,
        target: None,
        waits: Some(on),
    };
    let c = gw.update_channel(&c.id, &change).await?;
    match c.waits {
        true => println!(
            "{} ({}) now also gets every question, approval and plan of your own runs",
            c.name,
            short(&c.id)
        ),
        false => println!(
            "{} ({}) now gets only the notifications of the schedules that name it",
            c.name,
            short(&c.id)
        ),
    }
    Ok(())
}

/// `weft channels rm ID`: schedules stop delivering to it; its history stays.
pub async fn remove(gw: &Gateway, id: &str) -> Result<()> {
    let c = find(gw, id).await?;
    gw.delete_channel(&c.id).await?;
    let mut said = format!("deleted channel {} ({})", c.name, short(&c.id));
    match c.schedules {
        0 => {}
        1 => said.push_str("; 1 schedule no longer delivers to it"),
        n => said.push_str(&format!("; {n} schedules no longer deliver to it")),
    }
    println!("{said}");
    Ok(())
}

/// A test message on its way: the channel and its delivery.
pub struct SentTest {
    pub channel: ChannelDto,
    pub delivery: DeliveryDto,
}

/// How a test went, as far as `--wait` saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestOutcome {
    Delivered,
    /// Given up: the error no retry fixes, or the last of every try.
    Failed(String),
    /// Still being tried when the wait ended (the last try's error, if any).
    StillPending(Option<String>),
}

impl TestOutcome {
    /// 0 only for a test that arrived.
    pub fn exit_code(&self) -> u8 {
        match self {
            TestOutcome::Delivered => crate::exit::OK,
            TestOutcome::Failed(_) | TestOutcome::StillPending(_) => crate::exit::RUN_FAILED,
        }
    }
}

/// `weft channels test ID`: one test message, through the same outbox (and
/// retries) as every delivery.
pub async fn test(gw: &Gateway, id: &str) -> Result<SentTest> {
    let channel = find(gw, id).await?;
    let delivery = gw.test_channel(&channel.id).await?;
    println!(
        "sent a test message to {} ({})",
        channel.name,
        words::kind_and_target(&channel)
    );
    Ok(SentTest { channel, delivery })
}

/// `--wait`: asks how the test went until it is delivered or failed, or
/// `within` has passed; says so (a failure's error on stderr).
pub async fn wait(gw: &Gateway, sent: &SentTest, within: Duration) -> Result<TestOutcome> {
    let deadline = tokio::time::Instant::now() + within;
    let name = &sent.channel.name;
    let mut last = sent.delivery.clone();
    loop {
        // Newest first: the test is near the top unless a burst of
        // deliveries came after it.
        let list = gw.channel_deliveries(&sent.channel.id, 50).await?;
        if let Some(d) = list.deliveries.into_iter().find(|d| d.id == last.id) {
            last = d;
        }
        match last.status {
            DeliveryStatus::Delivered => {
                println!("delivered to {name} ({})", words::attempts(last.attempts));
                return Ok(TestOutcome::Delivered);
            }
            DeliveryStatus::Failed => {
                let why = last
                    .error
                    .as_deref()
                    .map_or_else(|| "no reason given".into(), |e| words::error(e, 300));
                eprintln!(
                    "weft: the test to {name} failed ({}): {why}",
                    words::attempts(last.attempts)
                );
                return Ok(TestOutcome::Failed(why));
            }
            DeliveryStatus::Pending if tokio::time::Instant::now() >= deadline => {
                let why = last.error.as_deref().map_or_else(String::new, |e| {
                    format!("; the last try met: {}", words::error(e, 300))
                });
                eprintln!(
                    "weft: the test to {name} is not delivered after {} s ({}{why}); the gateway keeps trying: `weft channels deliveries {}` shows how it goes",
                    within.as_secs(),
                    words::attempts(last.attempts),
                    short(&sent.channel.id)
                );
                return Ok(TestOutcome::StillPending(last.error));
            }
            DeliveryStatus::Pending => tokio::time::sleep(POLL).await,
        }
    }
}

/// `weft channels deliveries ID`: its deliveries, newest first.
pub async fn deliveries(gw: &Gateway, id: &str, limit: u32) -> Result<()> {
    let c = find(gw, id).await?;
    let list = gw.channel_deliveries(&c.id, limit).await?.deliveries;
    let mut out = std::io::stdout().lock();
    if list.is_empty() {
        writeln!(
            out,
            "nothing delivered to {} yet; send a test with `weft channels test {} --wait`",
            c.name,
            short(&c.id)
        )?;
        return Ok(());
    }
    let mut rows = vec![
        [
            "CREATED",
            "WHAT",
            "STATUS",
            "ATTEMPTS",
            "DELIVERED",
            "RUN",
            "ERROR",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for d in &list {
        rows.push(vec![
            when::local(&d.created_at),
            words::what(d).to_string(),
            d.status.as_str().to_string(),
            d.attempts.to_string(),
            d.delivered_at
                .as_deref()
                .map_or_else(|| "-".into(), when::local),
            d.run_id.as_deref().map_or("-", short).to_string(),
            d.error
                .as_deref()
                .map_or_else(String::new, |e| words::error(e, 80)),
        ]);
    }
    write!(out, "{}", table(&rows))?;
    Ok(())
}
