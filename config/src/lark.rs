//! `[lark]`: the Lark / Feishu bot.

use serde::{Deserialize, Serialize};

use super::{ConfigError, Secret};

/// The Lark / Feishu bot (`[lark]`, env `WEFT_LARK__<KEY>`). Gateways hold the
/// long connection (ingress); workers stream reply cards (egress): both need it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct LarkConfig {
    /// The self-built app's id (`cli_…`). Empty ⇒ the bot is off.
    pub app_id: String,
    /// The app secret (`WEFT_LARK__APP_SECRET`).
    pub app_secret: Secret,
    /// `https://open.feishu.cn` (Feishu), `https://open.larksuite.com` (Lark).
    pub base_url: String,
    /// In groups, answer only when the bot is @mentioned.
    pub require_mention: bool,
    /// Chat ids (`oc_…`) the bot answers in; empty ⇒ every chat the app is in.
    pub allowed_chats: Vec<String>,
    /// Lark API calls per second this process may make (Lark allows 50 per app:
    /// with several workers, give each its share).
    pub calls_per_second: u32,
    /// Messages one gateway handles at once, across all chats (another chat's
    /// message waits for a free one, in its own task). A message takes one only
    /// once the messages before it in its chat are done, so one busy chat holds
    /// one; button clicks have their own as many.
    pub max_concurrent_messages: usize,
    /// Messages that may wait in line in one chat (or thread) of one gateway,
    /// the one being handled included; past it a message is not handled: the
    /// first such is answered in the chat that the bot is busy, the rest only
    /// logged, until the line has room again. 0: no limit.
    pub queued_messages_per_chat: usize,
    /// How long a gateway's hold on a stored, not yet handled message lasts
    /// without renewal (it renews every quarter of it while it lives). When a
    /// gateway dies, another takes its messages over once this has run out, so
    /// it is also how late those answers come.
    pub inbox_lease_ms: u64,
    /// The language of a chat whose message shows none (an emoji, a number, a
    /// picture): `zh`, `en`, or `auto` — the platform's, Chinese on Feishu
    /// (`open.feishu.cn`), English elsewhere. A message with Chinese
    /// characters is answered in Chinese, one with Latin letters only in
    /// English, whatever this says.
    pub language: LarkLanguage,
    /// A group's background: the last N messages of the group (who wrote
    /// what) go with each reply's context, read when the reply starts with
    /// the app's permission to read group messages (`im:message.group_msg`).
    /// 0 (the default) turns it off; at most 50. One more Lark call per reply
    /// in a group; a missing permission is one warning card per chat per hour.
    pub group_context_messages: u32,
}

/// `[lark] language`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LarkLanguage {
    #[default]
    Auto,
    Zh,
    En,
}

impl Default for LarkConfig {
    fn default() -> Self {
        LarkConfig {
            app_id: String::new(),
            app_secret: Secret::default(),
            base_url: "https://open.feishu.cn".into(),
            require_mention: true,
            allowed_chats: Vec::new(),
            calls_per_second: 50,
            max_concurrent_messages: 256,
            queued_messages_per_chat: 32,
            language: LarkLanguage::Auto,
            inbox_lease_ms: 20_000,
            group_context_messages: 0,
        }
    }
}

impl LarkLanguage {
    /// `auto`, `zh` or `en`, as written in the setting.
    pub fn code(self) -> &'static str {
        match self {
            LarkLanguage::Auto => "auto",
            LarkLanguage::Zh => "zh",
            LarkLanguage::En => "en",
        }
    }
}

impl LarkConfig {
    pub fn enabled(&self) -> bool {
        !self.app_id.is_empty()
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !self.enabled() {
            return Ok(());
        }
        let bad = |m: String| Err(ConfigError::Invalid(format!("lark.{m}")));
        if self.app_secret.expose().is_empty() {
            return bad(
                "app_secret is required when lark.app_id is set (or WEFT_LARK__APP_SECRET)".into(),
            );
        }
        let Some((scheme, rest)) = self.base_url.split_once("://") else {
            return bad(format!("base_url {:?} is not a URL", self.base_url));
        };
        let host = rest.split(['/', '?']).next().unwrap_or("");
        let host = match host.rsplit_once(':') {
            Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
            _ => host,
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let loopback = host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        match scheme {
            "https" => {}
            "http" if loopback => {}
            _ => {
                return bad(format!(
                    "base_url must use https:// (plain http only for a loopback host), got {:?}",
                    self.base_url
                ));
            }
        }
        if self.calls_per_second == 0 {
            return bad("calls_per_second must be at least 1".into());
        }
        if self.max_concurrent_messages == 0 {
            return bad("max_concurrent_messages must be at least 1".into());
        }
        if self.group_context_messages > 50 {
            return bad(format!(
                "group_context_messages is at most 50 (Lark's page size), got {}",
                self.group_context_messages
            ));
        }
        if self.inbox_lease_ms < 400 {
            return bad("inbox_lease_ms must be at least 400".into());
        }
        Ok(())
    }
}
