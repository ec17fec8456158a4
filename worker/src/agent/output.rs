//! Long tool outputs: the model sees the head and a pointer; the whole output is
//! stored (`tool_outputs`) and read page by page with the `read_output` tool, so a
//! 5 MB page does not fill the context window, and nothing is lost.

use weft_llm::ToolSpec;
use weft_store::Store;
use weft_tools::{Tool, ToolContext};

use crate::context::truncate::cut;

/// The longest page `read_output` returns at once.
const MAX_PAGE: u64 = 64 << 10;

/// `read_output {id, offset, length}`: a page of a stored output of this session.
pub(crate) struct ReadOutput {
    pub store: Store,
    /// Documents' text (ids `file_<id>`: see `context::files`).
    pub blobs: weft_shared::blobs::Blobs,
    pub page: u64,
}

impl ReadOutput {
    /// A stored output, or the whole text of a document of this conversation.
    async fn content(&self, session: &str, id: &str) -> Result<Option<String>, String> {
        let failed = |e: &dyn std::fmt::Display| format!("reading the output failed: {e}");
        let Some(file) = id.strip_prefix("file_") else {
            return self
                .store
                .tool_output(session, id)
                .await
                .map_err(|e| failed(&e));
        };
        let Some(file) = weft_shared::ids::FileId::parse(file) else {
            return Ok(None);
        };
        let a = match self.store.session_attachment(session, &file).await {
            Ok(a) => a,
            Err(weft_store::StoreError::NotFound) => return Ok(None),
            Err(e) => return Err(failed(&e)),
        };
        self.blobs
            .get_text(&a.sha256)
            .await
            .map(Some)
            .map_err(|e| failed(&e))
    }
}

#[async_trait::async_trait]
impl Tool for ReadOutput {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_output".into(),
            description: "Read more of a long tool output or attached document that was truncated. Pass the id from the truncation note and the byte offset to continue from.".into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "The stored output's id."},
                    "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to start at."},
                    "length": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "description": "Bytes to read (default: the usual cap)."}
                },
                "required": ["id"],
                "additionalProperties": false
            }),
        }
    }

    /// Reads what this run already produced.
    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, args: serde_json::Value, ctx: &ToolContext) -> Result<String, String> {
        let id = args["id"].as_str().unwrap_or_default();
        let offset = args["offset"].as_u64().unwrap_or(0);
        let length = args["length"]
            .as_u64()
            .unwrap_or(self.page)
            .clamp(1, MAX_PAGE);
        let Some(content) = self.content(&ctx.session_id, id).await? else {
            return Err(format!("no stored output {id:?} in this conversation"));
        };
        let total = content.len() as u64;
        if offset >= total {
            return Err(format!("offset {offset} is past the end ({total} bytes)"));
        }
        let mut start = offset as usize;
        while !content.is_char_boundary(start) {
            start -= 1;
        }
        let page = cut(&content[start..], length as usize);
        let end = start + page.len();
        let tail = if end as u64 >= total {
            format!("[bytes {start}–{end} of {total}: the end]")
        } else {
            format!("[bytes {start}–{end} of {total}: continue with offset {end}]")
        };
        Ok(format!("{page}\n\n{tail}"))
    }
}
