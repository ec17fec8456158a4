//! One MCP server tool as a Weft [`Tool`]: the call goes to whatever
//! connection the server has *now*, so a tool handed out before a restart
//! still works after it.

use std::sync::Arc;

use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, MetaObject, RequestMetaObject,
    ResourceContents,
};
use weft_llm::ToolSpec;

use super::status::{Slot, ToolEntry};
use crate::{Tool, ToolContext};

pub(crate) struct McpTool {
    pub slot: Arc<Slot>,
    pub entry: ToolEntry,
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.entry.spec.clone()
    }

    fn side_effects(&self) -> bool {
        true
    }

    fn read_only(&self) -> bool {
        self.entry.read_only
    }

    /// The server's configured policy (`confirm` unless the admin chose).
    fn default_policy(&self) -> weft_config::ToolPolicy {
        self.slot.config.policy
    }

    /// Dropping the future sends `notifications/cancelled` to the server
    /// (rmcp's request guard), so a timed-out call stops there too.
    async fn call(&self, args: serde_json::Value, ctx: &ToolContext) -> Result<String, String> {
        let arguments = match args {
            serde_json::Value::Object(map) => Some(map),
            serde_json::Value::Null => None,
            other => return Err(format!("arguments must be a JSON object, got {other}")),
        };
        let link = self.slot.link()?;
        let mut params = CallToolRequestParams::new(self.entry.remote.clone());
        params.arguments = arguments;
        if !ctx.call_key.is_empty() {
            let mut meta = MetaObject::default();
            meta.insert(
                crate::IDEMPOTENCY_META_KEY.into(),
                ctx.call_key.clone().into(),
            );
            params.meta = Some(RequestMetaObject(meta));
        }
        match link.peer.call_tool(params).await {
            Ok(result) => render(result),
            Err(e) => {
                let server = self.slot.name();
                if matches!(
                    e,
                    ServiceError::TransportClosed | ServiceError::TransportSend(_)
                ) {
                    self.slot.report_broken(link.generation, e.to_string());
                    Err(format!(
                        "MCP server {server:?} went away during the call ({e}); it is being restarted"
                    ))
                } else if let ServiceError::McpError(data) = &e {
                    Err(format!(
                        "MCP server {server:?} refused the call: {} (code {})",
                        data.message, data.code.0
                    ))
                } else {
                    Err(format!("MCP server {server:?}: {e}"))
                }
            }
        }
    }
}

/// Text parts joined by newlines; other parts summarised; `isError` ⇒ `Err`.
pub(crate) fn render(result: CallToolResult) -> Result<String, String> {
    let mut parts: Vec<String> = result.content.iter().map(render_block).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = parts.join("\n");
    if result.is_error == Some(true) {
        Err(if text.is_empty() {
            "the tool reported an error without a message".into()
        } else {
            text
        })
    } else {
        Ok(text)
    }
}

fn render_block(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!("[image: {}, {}]", i.mime_type, base64_size(&i.data)),
        ContentBlock::Audio(a) => format!("[audio: {}, {}]", a.mime_type, base64_size(&a.data)),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource: {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource: {uri}, {}, {}]",
                mime_type.as_deref().unwrap_or("binary"),
                base64_size(blob)
            ),
            _ => "[resource]".into(),
        },
        ContentBlock::ResourceLink(link) => {
            format!("[resource link: {} ({})]", link.uri, link.name)
        }
        _ => "[unsupported content]".into(),
    }
}

/// The decoded size of base64 `data`, for people: `812 B`, `12 KB`, `3.4 MB`.
fn base64_size(data: &str) -> String {
    let data = data.trim_end();
    let padding = data.chars().rev().take_while(|&c| c == '=').count();
    let bytes = (data.len() / 4 * 3 + (data.len() % 4).saturating_sub(1)).saturating_sub(padding);
    match bytes {
        b if b < 1024 => format!("{b} B"),
        b if b < 1024 * 1024 => format!("{} KB", (b + 512) / 1024),
        b => format!("{:.1} MB", b as f64 / (1024.0 * 1024.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_decoded_sizes() {
        assert_eq!(base64_size("aGk="), "2 B");
        assert_eq!(base64_size("aGVsbG8="), "5 B");
        assert_eq!(base64_size(&"A".repeat(16384)), "12 KB");
        assert_eq!(base64_size(&"A".repeat(4 * 1024 * 1024)), "3.0 MB");
    }

    #[test]
    fn text_is_joined_and_errors_are_err() {
        let ok = CallToolResult::success(vec![
            ContentBlock::text("one"),
            ContentBlock::image("aGVsbG8=", "image/png"),
            ContentBlock::text("two"),
        ]);
        assert_eq!(render(ok).unwrap(), "one\n[image: image/png, 5 B]\ntwo");
        let err = CallToolResult::error(vec![ContentBlock::text("no such file")]);
        assert_eq!(render(err).unwrap_err(), "no such file");
        let empty_err = CallToolResult::error(vec![]);
        assert!(render(empty_err).unwrap_err().contains("without a message"));
    }
}
