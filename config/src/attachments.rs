//! `[attachments]`: what a message may carry, where the bytes live and how much
//! of a document the model reads. The total per message is `limits.attachments_bytes`.

use serde::{Deserialize, Serialize};

/// Attachment limits and storage (`[attachments]`, env `WEFT_ATTACHMENTS__<KEY>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct AttachmentsConfig {
    /// Images one message may carry.
    pub images_per_message: u32,
    /// Largest image, in bytes.
    pub image_bytes: u64,
    /// Documents one message may carry.
    pub documents_per_message: u32,
    /// Largest document, in bytes.
    pub document_bytes: u64,
    /// Bytes of a document's text the model reads inline (48 KiB ≈ 12k tokens);
    /// the rest it pages through with `read_output`.
    pub document_text_bytes: usize,
    /// Image bytes (as base64) all runs of one worker process may hold at once
    /// for their models; a run whose images do not fit waits for room, so a
    /// worker's memory stays bounded however many illustrated runs it has.
    pub worker_image_memory_bytes: u64,
    /// Bytes of attachment uploads one gateway process holds at once (a send
    /// with files takes about twice its body: the body and the decoded files).
    /// A send that finds no room within 10 s is 503 `unavailable` + `Retry-After`.
    pub gateway_upload_memory_bytes: u64,
    /// The share of `gateway_upload_memory_bytes` one user's uploads may hold at
    /// once (default: a quarter of it), so one user's slow uploads cannot take
    /// it all: past their share a user's send waits like any other, and gets
    /// 503 and `Retry-After` after 10 s, while other users still find room. A
    /// single send larger than the share still goes through, alone.
    pub upload_memory_per_user_bytes: Option<u64>,
    /// Where attachment bytes are kept: a directory (default `<data_dir>/files`),
    /// `file:///path`, or `s3://bucket/prefix` (an S3-compatible store, configured by
    /// the standard `AWS_*` variables: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_REGION`, `AWS_ENDPOINT_URL` for MinIO and the like). In distributed mode
    /// every gateway and worker must see the same store: a shared volume or S3.
    pub store: Option<String>,
}

impl Default for AttachmentsConfig {
    fn default() -> Self {
        AttachmentsConfig {
            images_per_message: 4,
            image_bytes: 4 << 20,
            documents_per_message: 3,
            document_bytes: 10 << 20,
            document_text_bytes: 48 << 10,
            worker_image_memory_bytes: 256 << 20,
            gateway_upload_memory_bytes: 512 << 20,
            upload_memory_per_user_bytes: None,
            store: None,
        }
    }
}

impl AttachmentsConfig {
    /// `upload_memory_per_user_bytes`, or a quarter of the gateway's budget; never
    /// more than the budget.
    pub fn upload_memory_per_user(&self) -> u64 {
        self.upload_memory_per_user_bytes
            .unwrap_or(self.gateway_upload_memory_bytes / 4)
            .min(self.gateway_upload_memory_bytes)
    }
}
