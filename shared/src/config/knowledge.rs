//! `[knowledge]`: knowledge bases — document limits, chunk sizes and search
//! (docs/knowledge.md).

use serde::{Deserialize, Serialize};

/// Knowledge base settings (`[knowledge]`, env `WEFT_KNOWLEDGE__<KEY>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct KnowledgeConfig {
    /// Largest document one upload may add (50 MiB); larger ones are refused
    /// with 413 naming this limit.
    pub max_document_bytes: u64,
    /// Most documents one base may hold; past it uploads are refused with 413.
    pub max_documents_per_base: u64,
    /// Target size of a chunk, in estimated tokens.
    pub chunk_tokens: u64,
    /// Tokens a chunk repeats from the one before it in the same section.
    pub chunk_overlap_tokens: u64,
    /// Chunks on each side of a hit that come with it to the model.
    pub neighbours: u32,
    /// Results a search returns when the caller does not say.
    pub default_top_k: u32,
    /// `knowledge_mode = "auto"`: the most tokens of passages put in the
    /// context before the model is called (best first; a passage that does
    /// not fit is left out).
    pub auto_budget_tokens: u64,
}

impl Default for KnowledgeConfig {
    fn default() -> Self {
        KnowledgeConfig {
            max_document_bytes: 50 << 20,
            max_documents_per_base: 10_000,
            chunk_tokens: 400,
            chunk_overlap_tokens: 60,
            neighbours: 1,
            default_top_k: 5,
            auto_budget_tokens: 1500,
        }
    }
}

/// Base names: 1–64 characters of letters, digits, spaces and `-_.`, not
/// starting or ending with a space (they are typed in `/kb use NAME` and
/// `weft knowledge add NAME`).
pub fn valid_base_name(name: &str) -> bool {
    let count = name.chars().count();
    (1..=64).contains(&count)
        && name.trim() == name
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.'))
}

/// The most results one search may ask for.
pub const MAX_TOP_K: u32 = 50;

impl KnowledgeConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.max_document_bytes == 0 || self.max_documents_per_base == 0 {
            return Err(
                "knowledge.max_document_bytes and max_documents_per_base must be at least 1".into(),
            );
        }
        if !(32..=8192).contains(&self.chunk_tokens) {
            return Err("knowledge.chunk_tokens must be between 32 and 8192".into());
        }
        if self.chunk_overlap_tokens * 2 > self.chunk_tokens {
            return Err(
                "knowledge.chunk_overlap_tokens must be at most half of chunk_tokens".into(),
            );
        }
        if self.neighbours > 5 {
            return Err("knowledge.neighbours must be at most 5".into());
        }
        if !(1..=MAX_TOP_K).contains(&self.default_top_k) {
            return Err(format!(
                "knowledge.default_top_k must be between 1 and {MAX_TOP_K}"
            ));
        }
        Ok(())
    }
}
