//! A model's reasoning as it is kept: with the assistant turn it came before, in the
//! store, and sent back to the provider that signed it. One definition for the
//! model crate, the store and the API.

use serde::{Deserialize, Serialize};

/// One block of a model's reasoning, kept with the assistant turn it came before.
///
/// Anthropic's extended thinking streams a `thinking` block's text, then its
/// `signature`; with thinking on, the turn that asked for tools must come back
/// starting with its blocks exactly as they were (or the API answers 400), so
/// they are kept whole, in order, and stored with the step's checkpoint. A
/// `redacted_thinking` block carries only encrypted `data`. Providers without
/// signatures (OpenAI-compatible `reasoning_content`) leave `signature` empty:
/// such a block is shown to people but never sent back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reasoning {
    Thinking {
        thinking: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
}

impl Reasoning {
    /// The readable text (empty for a redacted block).
    pub fn text(&self) -> &str {
        match self {
            Reasoning::Thinking { thinking, .. } => thinking,
            Reasoning::RedactedThinking { .. } => "",
        }
    }

    /// Whether the provider can check this block when it is sent back.
    pub fn is_signed(&self) -> bool {
        match self {
            Reasoning::Thinking { signature, .. } => !signature.is_empty(),
            Reasoning::RedactedThinking { .. } => true,
        }
    }
}
