//! `[memory]`: what the assistant remembers about each person (docs/memory.md).

use serde::{Deserialize, Serialize};

/// The longest memory, in characters.
pub const MAX_MEMORY_CHARS: usize = 2000;

/// Memory settings (`[memory]`, env `WEFT_MEMORY__<KEY>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryConfig {
    /// Memory for everyone (each person may still turn theirs off).
    pub enabled: bool,
    /// The most estimated tokens of memories put in a run's system prompt:
    /// pinned ones first, then those most related to the turn.
    pub prompt_budget_tokens: u64,
    /// The most memories one person keeps; past it adding one is refused
    /// (the model is told to forget or merge first).
    pub max_per_user: u64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            enabled: true,
            prompt_budget_tokens: 600,
            max_per_user: 1000,
        }
    }
}

impl MemoryConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.max_per_user == 0 {
            return Err("memory.max_per_user must be at least 1".into());
        }
        Ok(())
    }
}
