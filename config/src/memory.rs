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
    /// Learn from finished turns in the background (the `memory.extract`
    /// job): new facts, changed ones, the person's profile.
    pub extract: bool,
    /// The model that extracts (none: the session's).
    pub model: Option<String>,
    /// The most estimated tokens of conversation one extraction reads (the
    /// newest turns first); the person's related memories come on top.
    pub extract_max_tokens: u64,
    /// How long after a turn ends its extraction waits: the turns of a
    /// conversation within it are read together, in one model call.
    pub extract_after_secs: u64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            enabled: true,
            prompt_budget_tokens: 600,
            max_per_user: 1000,
            extract: true,
            model: None,
            extract_max_tokens: 4000,
            extract_after_secs: 30,
        }
    }
}

impl MemoryConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.max_per_user == 0 {
            return Err("memory.max_per_user must be at least 1".into());
        }
        if self.extract_max_tokens < 100 {
            return Err("memory.extract_max_tokens must be at least 100".into());
        }
        Ok(())
    }
}
