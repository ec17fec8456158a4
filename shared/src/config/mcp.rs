//! `[[mcp_servers]]`: Model Context Protocol servers whose tools the agent uses.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct McpServerConfig {
    /// Namespace of its tools (`<name>__<tool>`).
    pub name: String,
}
