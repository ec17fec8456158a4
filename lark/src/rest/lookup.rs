//! Reading, not writing: a message by id (what a reply quotes, and whether the
//! message replied to is the bot's), a chat's latest messages (a group's
//! background, `[lark] group_context_messages`) and a user's display name (who
//! is speaking in a group). Each needs a permission a tenant admin may not have
//! granted (`im:message:readonly`, `im:message.group_msg`,
//! `contact:user.base:readonly`); callers treat an error as "not known" and
//! fall back.

use reqwest::Method;
use serde::Deserialize;

use super::{Call, LarkError, RestClient};

/// A message as `GET /open-apis/im/v1/messages/:message_id` answers it.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct FetchedMessage {
    #[serde(default)]
    pub message_id: String,
    #[serde(default)]
    pub parent_id: String,
    #[serde(default)]
    pub chat_id: String,
    #[serde(default)]
    pub msg_type: String,
    #[serde(default)]
    pub sender: FetchedSender,
    #[serde(default)]
    pub body: FetchedBody,
    #[serde(default)]
    pub deleted: bool,
    /// Milliseconds since the epoch, as a string.
    #[serde(default)]
    pub create_time: String,
    #[serde(default)]
    pub mentions: Vec<FetchedMention>,
}

/// Someone a fetched message @mentions (`id` is an open_id for users).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct FetchedMention {
    #[serde(default)]
    pub key: String,
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub name: String,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct FetchedSender {
    /// An `open_id` for users, the `app_id` for apps (see `id_type`).
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub id_type: String,
    /// `user` or `app`.
    #[serde(default)]
    pub sender_type: String,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct FetchedBody {
    /// The content document as a JSON string, as in events.
    #[serde(default)]
    pub content: String,
}

impl FetchedMessage {
    /// Sent by the app `app_id` (the bot itself)?
    pub fn is_from_app(&self, app_id: &str) -> bool {
        self.sender.sender_type == "app" && self.sender.id == app_id
    }
}

#[derive(Debug, Default, Deserialize)]
struct Items {
    #[serde(default)]
    items: Vec<FetchedMessage>,
}

#[derive(Debug, Default, Deserialize)]
struct UserData {
    #[serde(default)]
    user: ContactUser,
}

#[derive(Debug, Default, Deserialize)]
struct ContactUser {
    #[serde(default)]
    name: String,
    #[serde(default)]
    en_name: String,
}

impl RestClient {
    /// One message by id; `None` when Lark answers without it.
    pub async fn get_message(&self, message_id: &str) -> Result<Option<FetchedMessage>, LarkError> {
        let items: Items = self
            .send(Call {
                method: Method::GET,
                path: format!("/open-apis/im/v1/messages/{message_id}"),
                query: &[],
                body: None,
            })
            .await?;
        Ok(items.items.into_iter().next())
    }

    /// The newest `count` messages of chat `chat_id` (at most 50, Lark's page
    /// size limit), newest first.
    pub async fn chat_messages(
        &self,
        chat_id: &str,
        count: u32,
    ) -> Result<Vec<FetchedMessage>, LarkError> {
        let page_size = count.clamp(1, 50).to_string();
        let items: Items = self
            .send(Call {
                method: Method::GET,
                path: "/open-apis/im/v1/messages".to_owned(),
                query: &[
                    ("container_id_type", "chat"),
                    ("container_id", chat_id),
                    ("sort_type", "ByCreateTimeDesc"),
                    ("page_size", &page_size),
                ],
                body: None,
            })
            .await?;
        Ok(items.items)
    }

    /// A user's display name (`name`, else `en_name`) by `open_id`; `None`
    /// when Lark knows no name.
    pub async fn user_name(&self, open_id: &str) -> Result<Option<String>, LarkError> {
        let data: UserData = self
            .send(Call {
                method: Method::GET,
                path: format!("/open-apis/contact/v3/users/{open_id}"),
                query: &[("user_id_type", "open_id")],
                body: None,
            })
            .await?;
        let ContactUser { name, en_name } = data.user;
        Ok([name, en_name].into_iter().find(|n| !n.trim().is_empty()))
    }
}
