//! The files and images of a Lark message, fetched so they go with it as
//! attachments.
//!
//! Each is downloaded with the official "get message resource" call (rate-aware,
//! retried like every Lark call) and read only as far as an attachment may be
//! large — the larger of `attachments.image_bytes` and `document_bytes` — and
//! the message's files together only up to `limits.attachments_bytes`, so what
//! a message makes the gateway hold stays bounded whatever Lark serves (up to
//! 100 MB a file). Before each download the gateway takes room for that much in
//! its upload memory (`attachments.gateway_upload_memory_bytes`, shared with
//! the HTTP sends; from the sender's share of it), held until the files are
//! stored. What they are and every
//! other limit is decided by [`crate::uploads::accept`], as for any channel: by
//! their bytes.

use std::time::Duration;

use bytes::Bytes;
use weft_config::Config;
use weft_lark::rest::{LarkError, ResourceType};
use weft_shared::ids::UserId;
use weft_shared::memory_room::SharedPermit;

use super::lark_retrying;
use crate::error::{ApiError, ApiResult};
use crate::lark::Bot;
use crate::lark::inbound::LarkFile;
use crate::uploads::Upload;

/// How long a download waits for upload memory before the message is refused
/// (as an HTTP send would be).
const ROOM_PATIENCE: Duration = Duration::from_secs(10);

/// A message's files, and the upload memory they hold until they are stored.
pub(super) struct Fetched {
    pub uploads: Vec<Upload>,
    pub room: Vec<SharedPermit>,
}

impl Bot {
    /// Downloads `files` of Lark message `message_id`, named for the model:
    /// images `image-<n>.<type>`, files by their own name.
    pub(super) async fn fetch_files(
        &self,
        user: &UserId,
        message_id: &str,
        files: &[LarkFile],
    ) -> ApiResult<Fetched> {
        let caps = Caps::of(&self.state.config());
        let (mut total, mut images) = (0u64, 0);
        let mut uploads = Vec::with_capacity(files.len());
        let mut held = Vec::with_capacity(files.len());
        for file in files {
            let name = match file.kind {
                ResourceType::Image => {
                    images += 1;
                    format!("image-{images}")
                }
                ResourceType::File => file.name.clone().unwrap_or_else(|| file.key.clone()),
            };
            let room = caps.file.min(caps.message - total);
            let Some(permit) = self
                .state
                .upload_room
                .take_within(&user.0, room, ROOM_PATIENCE)
                .await
            else {
                metrics::counter!("weft_upload_waits_refused_total").increment(1);
                return Err(ApiError::Overloaded {
                    message: "too many files are being uploaded right now; try again in a moment"
                        .into(),
                    retry_after_secs: 2,
                });
            };
            held.push(permit);
            let fetched = lark_retrying(|| {
                self.sender.download_resource(
                    file.message_id.as_deref().unwrap_or(message_id),
                    &file.key,
                    file.kind,
                    room,
                )
            })
            .await;
            let resource = match fetched {
                Ok(resource) => resource,
                Err(LarkError::TooLarge { .. }) if room < caps.file => {
                    return Err(ApiError::PayloadTooLarge(format!(
                        "attachments_bytes: the files of this message total more than the {} a message may carry",
                        mib(caps.message)
                    )));
                }
                Err(LarkError::TooLarge { .. }) => {
                    return Err(ApiError::PayloadTooLarge(format!(
                        "{}: {name} is more than the {} a file may be",
                        caps.file_limit,
                        mib(caps.file)
                    )));
                }
                Err(e) => {
                    tracing::warn!(lark.message_id = %message_id, error = %e, "fetching a file from lark failed");
                    return Err(ApiError::Unavailable(format!(
                        "{name} could not be fetched from Lark ({e})"
                    )));
                }
            };
            total += resource.bytes.len() as u64;
            let name = match file.kind {
                ResourceType::Image => format!("{name}.{}", image_extension(&resource.bytes)),
                ResourceType::File => name,
            };
            uploads.push(Upload {
                name,
                declared: None,
                bytes: Bytes::from(resource.bytes),
            });
        }
        Ok(Fetched {
            uploads,
            room: held,
        })
    }
}

/// How much is read from Lark, and which limit that is.
struct Caps {
    /// One file: the larger of the image and document limits (a file's kind is
    /// known only from its bytes), within the message's.
    file: u64,
    file_limit: &'static str,
    /// All files of the message.
    message: u64,
}

impl Caps {
    fn of(config: &Config) -> Caps {
        let (a, message) = (&config.attachments, config.limits.attachments_bytes);
        let (file, file_limit) = if a.image_bytes > a.document_bytes {
            (a.image_bytes, "image_bytes")
        } else {
            (a.document_bytes, "document_bytes")
        };
        if message < file {
            Caps {
                file: message,
                file_limit: "attachments_bytes",
                message,
            }
        } else {
            Caps {
                file,
                file_limit,
                message,
            }
        }
    }
}

/// The extension of an image's type; `png` for bytes that are no image we take
/// (the upload check then refuses them by their content, not their name).
fn image_extension(bytes: &[u8]) -> &'static str {
    match weft_files::detect("image", None, bytes).map(|d| d.mime) {
        Ok(weft_files::mime::JPEG) => "jpg",
        Ok(weft_files::mime::GIF) => "gif",
        Ok(weft_files::mime::WEBP) => "webp",
        _ => "png",
    }
}

fn mib(n: u64) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / f64::from(1 << 20))
    } else {
        format!("{} KiB", n.div_ceil(1024))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_up_to_the_larger_attachment_limit_within_the_message() {
        let mut config = Config::default();
        let caps = Caps::of(&config);
        assert_eq!((caps.file, caps.file_limit), (10 << 20, "document_bytes"));
        assert_eq!(caps.message, 20 << 20);
        config.attachments.image_bytes = 12 << 20;
        assert_eq!(Caps::of(&config).file_limit, "image_bytes");
        config.limits.attachments_bytes = 1 << 20;
        let caps = Caps::of(&config);
        assert_eq!((caps.file, caps.file_limit), (1 << 20, "attachments_bytes"));
    }

    #[test]
    fn images_are_named_by_their_type() {
        assert_eq!(image_extension(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), "png");
        assert_eq!(image_extension(b"\xff\xd8\xff\xe0\0\x10JFIF\0"), "jpg");
        assert_eq!(image_extension(b"GIF89a\x01\0\x01\0"), "gif");
        assert_eq!(image_extension(b"not an image"), "png");
    }
}
