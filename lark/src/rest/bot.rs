//! The bot's own identity, needed to tell an @mention of the bot from others.

use reqwest::Method;
use serde::Deserialize;

use super::{Call, LarkError, RestClient};

/// `GET /open-apis/bot/v3/info` (answered flat: `{"code","msg","bot":{…}}`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct BotInfo {
    pub open_id: String,
    #[serde(default)]
    pub app_name: String,
    /// 2 = enabled; 0 = waiting for the tenant to install, 1 = disabled by the tenant.
    #[serde(default)]
    pub activate_status: i64,
}

impl RestClient {
    /// The bot's `open_id` and name. Also the cheapest call that proves the
    /// credentials work (it fetches a tenant token first).
    pub async fn bot_info(&self) -> Result<BotInfo, LarkError> {
        self.send_reading(
            Call {
                method: Method::GET,
                path: "/open-apis/bot/v3/info".into(),
                query: &[],
                body: None,
            },
            "bot",
        )
        .await
    }
}
