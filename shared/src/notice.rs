//! Typed [`Notice`]s: which topic carries what, and publishing that never fails
//! the change it tells of (a notice is a hint to watchers; the database holds
//! the change whatever happens to it).

use std::sync::Arc;

use crate::api::KnowledgeEvent;
use crate::bus::{Bus, Notice};

/// The topic of a knowledge base's documents.
pub fn knowledge_topic(base: &str) -> String {
    format!("knowledge:{base}")
}

/// Tell the watchers of knowledge base `base` (its documents page, `weft
/// knowledge add`) what changed.
pub async fn knowledge(bus: &dyn Bus, base: &str, event: &KnowledgeEvent) {
    let notice = Notice {
        topic: Arc::from(knowledge_topic(base)),
        kind: Arc::from(event.name()),
        json: Arc::from(serde_json::to_string(event).unwrap_or_default()),
    };
    if let Err(e) = bus.notify(&notice).await {
        tracing::debug!(knowledge.id = base, error = %e, "a knowledge notice was not sent");
    }
}
