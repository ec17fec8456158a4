//! What the model gets of a message's attachments, loaded once per attempt from
//! the file store.
//!
//! - Images go to a vision model as images — only the newest
//!   [`IMAGES_IN_VIEW`] of the conversation: older ones become a line naming them,
//!   so a long illustrated conversation does not hold (or send) every image it
//!   ever had; one attempt holds at most 8 × 4 MiB of image bytes (as base64).
//!   A model without vision (`vision = false`) gets a line instead, so it can
//!   tell the user rather than guess.
//! - Documents go as their text (extracted once, by the gateway), each in a
//!   `<document>` block, cut at `attachments.document_text_bytes` with a pointer
//!   the model follows with `read_output` (id `file_<id>`), like a long tool output.
//! - A file that cannot be loaded becomes a line saying so; the run goes on.
//! - Images held for models count against the worker's
//!   `attachments.worker_image_memory_bytes` (256 MiB): an attempt takes room for
//!   its images before loading them and keeps it until it ends; one that does not
//!   fit waits (an attempt larger than the whole budget takes all of it).

use std::collections::HashMap;

use base64::Engine;
use tokio::sync::OwnedSemaphorePermit;
use weft_config::{AttachmentsConfig, ModelConfig};
use weft_llm::Image;
use weft_shared::api::AttachmentKind;
use weft_shared::blobs::Blobs;
use weft_shared::ids::FileId;
use weft_shared::memory_room::{MemoryRoom, human_size as size};
use weft_store::{Attachment, Message};

/// Images of a conversation the model sees at once (the newest ones).
pub const IMAGES_IN_VIEW: usize = 8;

/// The `read_output` id of a document's whole text.
pub fn pointer_id(id: &FileId) -> String {
    format!("file_{}", id.0)
}

/// An attachment as the model gets it.
#[derive(Debug, Clone)]
pub enum Loaded {
    Image(Image),
    /// Text for the user message: a document block or a note.
    Text(String),
}

/// The loaded attachments of a context, by id.
pub type Files = HashMap<FileId, Loaded>;

fn note(a: &Attachment, why: &str) -> Loaded {
    Loaded::Text(format!(
        "[attached {} \"{}\" ({}, {}): {why}]",
        match a.kind {
            AttachmentKind::Image => "image",
            AttachmentKind::Document => "document",
        },
        a.name,
        a.mime,
        size(a.bytes)
    ))
}

/// Load what the model gets of every attachment in `msgs`, taking room in
/// `image_room` (KiB) for the images first; the room is held until the permit drops.
pub async fn load(
    blobs: &Blobs,
    msgs: &[std::sync::Arc<Message>],
    model: &ModelConfig,
    cfg: &AttachmentsConfig,
    image_room: &MemoryRoom,
) -> (Files, Option<OwnedSemaphorePermit>) {
    let all: Vec<&Attachment> = msgs.iter().flat_map(|m| m.attachments.iter()).collect();
    let images: Vec<&&Attachment> = all
        .iter()
        .filter(|a| a.kind == AttachmentKind::Image)
        .collect();
    let shown_from = images.len().saturating_sub(IMAGES_IN_VIEW);
    let newest: std::collections::HashSet<&FileId> =
        images[shown_from..].iter().map(|a| &a.id).collect();
    let permit = if model.sees_images() && !newest.is_empty() {
        // base64 is 4/3 of the bytes.
        let bytes = images[shown_from..]
            .iter()
            .map(|a| a.bytes.div_ceil(3) * 4)
            .sum();
        Some(image_room.take(bytes).await)
    } else {
        None
    };
    let mut out = Files::new();
    for a in all {
        let loaded = match a.kind {
            AttachmentKind::Image if !model.sees_images() => note(
                a,
                "this model cannot see images; say so, and suggest a model with vision",
            ),
            AttachmentKind::Image if !newest.contains(&a.id) => {
                note(a, "shown earlier in the conversation; no longer in view")
            }
            AttachmentKind::Image => match blobs.get(&a.sha256).await {
                Ok(bytes) => Loaded::Image(Image {
                    mime: a.mime.clone(),
                    data: base64::engine::general_purpose::STANDARD
                        .encode(&bytes)
                        .into(),
                }),
                Err(e) => {
                    tracing::warn!(error = %e, file = %a.id, "loading an image failed");
                    note(a, "it could not be loaded")
                }
            },
            AttachmentKind::Document if a.unreadable.is_some() => {
                let why = a.unreadable.as_deref().unwrap_or_default();
                note(
                    a,
                    &format!("it could not be read ({why}); say so if it matters"),
                )
            }
            AttachmentKind::Document => match blobs.get_text(&a.sha256).await {
                Ok(text) => Loaded::Text(document_block(a, &text, cfg.document_text_bytes)),
                Err(e) => {
                    tracing::warn!(error = %e, file = %a.id, "loading a document's text failed");
                    note(a, "its text could not be loaded")
                }
            },
        };
        out.insert(a.id.clone(), loaded);
    }
    (out, permit)
}

/// A document's text for the model, cut at `cap` bytes with a `read_output` pointer.
pub fn document_block(a: &Attachment, text: &str, cap: usize) -> String {
    let body = if text.len() > cap {
        super::truncate::head_with_pointer(text, cap, &pointer_id(&a.id))
    } else {
        text.to_string()
    };
    format!(
        "<document name=\"{}\" type=\"{}\">\n{body}\n</document>",
        a.name.replace('"', "'"),
        a.mime
    )
}

/// A user message's text with its documents and notes after it, and its images.
pub fn user_content(m: &Message, files: &Files) -> (String, Vec<Image>) {
    // In a shared conversation the model is told who is speaking.
    let mut text = match &m.author_name {
        Some(name) => format!("[{name}] {}", m.content),
        None => m.content.clone(),
    };
    let mut images = Vec::new();
    for a in &m.attachments {
        match files.get(&a.id) {
            Some(Loaded::Image(img)) => images.push(img.clone()),
            Some(Loaded::Text(t)) => {
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                text.push_str(t);
            }
            None => {
                if let Loaded::Text(t) = note(a, "not loaded for this step") {
                    if !text.is_empty() {
                        text.push_str("\n\n");
                    }
                    text.push_str(&t);
                }
            }
        }
    }
    (text, images)
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_shared::ids::{MessageId, SessionId};

    fn doc(name: &str) -> Attachment {
        Attachment {
            id: FileId::new(),
            message_id: MessageId::new(),
            session_id: SessionId::new(),
            name: name.into(),
            kind: AttachmentKind::Document,
            mime: "application/pdf".into(),
            bytes: 2048,
            sha256: "ab".repeat(32),
            text_chars: Some(10),
            unreadable: None,
        }
    }

    #[test]
    fn long_documents_are_cut_with_a_pointer_to_the_rest() {
        let a = doc("report.pdf");
        let short = document_block(&a, "hello", 100);
        assert_eq!(
            short,
            "<document name=\"report.pdf\" type=\"application/pdf\">\nhello\n</document>"
        );
        let long = document_block(&a, &"x".repeat(500), 100);
        assert!(long.contains(&pointer_id(&a.id)), "{long}");
        assert!(long.contains("showing 100 of 500 bytes"), "{long}");
    }
}
