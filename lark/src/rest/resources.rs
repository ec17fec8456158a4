//! Files and images users send, fetched with the official "get message resource"
//! call: `GET /open-apis/im/v1/messages/{message_id}/resources/{file_key}?type=image|file`.
//!
//! The answer is the file's raw bytes with its `Content-Type` (and a
//! `Content-Disposition`), or Lark's JSON error with a 4xx status — e.g. 234003
//! "File not in message." when the key does not belong to that message, 234037
//! past Lark's own 100 MB cap. A caller names the most it will take: a declared
//! `Content-Length` above it is refused before the body is read, and an
//! undeclared body is read only until it passes the limit, so a 100 MB file
//! never sits in memory to be refused afterwards.

use std::time::Duration;

use reqwest::Method;

use super::{Call, LarkError, RestClient, error_from_body};

/// A whole download may take this long (a normal call gets the client's 15 s).
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(120);

/// The `type` a resource is fetched as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceType {
    /// An `image` message's `image_key`, or an `img` element of a `post`.
    Image,
    /// A `file` message's `file_key` (also audio and video).
    File,
}

impl ResourceType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Image => "image",
            Self::File => "file",
        }
    }
}

/// A downloaded resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub bytes: Vec<u8>,
    /// What Lark says the file is; only a hint, the bytes decide.
    pub content_type: Option<String>,
}

impl RestClient {
    /// Downloads resource `file_key` of message `message_id`, at most
    /// `max_bytes` of it: a larger file is [`LarkError::TooLarge`].
    pub async fn download_resource(
        &self,
        message_id: &str,
        file_key: &str,
        kind: ResourceType,
        max_bytes: u64,
    ) -> Result<Resource, LarkError> {
        let call = Call {
            method: Method::GET,
            path: format!("/open-apis/im/v1/messages/{message_id}/resources/{file_key}"),
            query: &[("type", kind.as_str())],
            body: None,
        };
        let call = &call;
        self.with_token(&call.path, |token| async move {
            self.download_once(call, &token, max_bytes).await
        })
        .await
    }

    async fn download_once(
        &self,
        call: &Call<'_>,
        token: &str,
        max_bytes: u64,
    ) -> Result<Resource, LarkError> {
        let mut response = self
            .request(call, token)?
            .timeout(DOWNLOAD_TIMEOUT)
            .send()
            .await?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await?;
            return Err(error_from_body(status.as_u16(), &text));
        }
        let too_large = LarkError::TooLarge { limit: max_bytes };
        if response.content_length().is_some_and(|n| n > max_bytes) {
            return Err(too_large);
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            if (bytes.len() + chunk.len()) as u64 > max_bytes {
                return Err(too_large);
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Resource {
            bytes,
            content_type,
        })
    }
}
