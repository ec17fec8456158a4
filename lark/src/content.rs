//! What a Lark message says, read from its `message_type` and `content` (the
//! JSON string every message event and message read carries): its text, and the
//! images and files to fetch by key. Pure, so the bot's rules on top of it
//! (`gateway/src/lark/inbound.rs`) and the quoted-message reader share one
//! reading of each kind: `text`; `post` (paragraphs as lines, `img` elements as
//! images; a video makes it unreadable); `image`; `file`; and, for fetched
//! messages, `interactive` cards by their words.

use serde_json::Value;

use crate::event::Mention;
use crate::rest::ResourceType;

/// The key Lark uses for an @everyone mention.
pub const MENTION_ALL: &str = "@_all";

/// A file or image of a message, fetched from Lark by the message id and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LarkFile {
    /// The message that carries it, when not the one being handled (a quoted
    /// message's image or file).
    pub message_id: Option<String>,
    pub key: String,
    pub kind: ResourceType,
    /// A `file` message's `file_name`; images have no name.
    pub name: Option<String>,
}

/// The text and files of a `text`, `post`, `image` or `file` message; otherwise
/// the kind of content that cannot be read.
pub fn readable(message_type: &str, content: &str) -> Result<(String, Vec<LarkFile>), String> {
    let raw = content;
    let content = || serde_json::from_str::<Value>(raw).ok();
    let key = |v: &Value, field: &str| {
        v[field]
            .as_str()
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
    };
    let kind = message_type;
    match kind {
        "text" => content()
            .and_then(|v| v["text"].as_str().map(|t| (t.to_owned(), Vec::new())))
            .ok_or_else(|| kind.to_owned()),
        "post" => post(raw).ok_or_else(|| "post with video".to_owned()),
        "image" => content()
            .and_then(|v| key(&v, "image_key"))
            .map(|key| (String::new(), vec![image(key)]))
            .ok_or_else(|| kind.to_owned()),
        "file" => content()
            .and_then(|v| {
                let file = LarkFile {
                    message_id: None,
                    key: key(&v, "file_key")?,
                    kind: ResourceType::File,
                    name: key(&v, "file_name"),
                };
                Some((String::new(), vec![file]))
            })
            .ok_or_else(|| kind.to_owned()),
        other => Err(other.to_owned()),
    }
}

fn image(key: String) -> LarkFile {
    LarkFile {
        message_id: None,
        key,
        kind: ResourceType::Image,
        name: None,
    }
}

/// A post's paragraphs as lines and its `img` elements as images; `None` when
/// it carries a video (`media`) or is malformed.
fn post(content: &str) -> Option<(String, Vec<LarkFile>)> {
    let v: Value = serde_json::from_str(content).ok()?;
    // Posts may arrive wrapped in a locale key (`{"zh_cn": {…}}`).
    let post = if v.get("content").is_some() {
        &v
    } else {
        v.as_object()?
            .values()
            .find(|x| x.get("content").is_some())?
    };
    let mut lines = Vec::new();
    let mut images = Vec::new();
    if let Some(title) = post["title"].as_str().filter(|t| !t.is_empty()) {
        lines.push(title.to_owned());
    }
    for paragraph in post["content"].as_array()? {
        let mut line = String::new();
        for node in paragraph.as_array()? {
            match node["tag"].as_str().unwrap_or_default() {
                "text" | "a" | "md" | "code_block" => {
                    line.push_str(node["text"].as_str().unwrap_or_default())
                }
                "at" => {
                    line.push_str(&format!(
                        "@_at_{}",
                        node["user_id"].as_str().unwrap_or_default()
                    ));
                }
                "img" => {
                    if let Some(key) = node["image_key"].as_str().filter(|k| !k.is_empty()) {
                        images.push(image(key.to_owned()));
                    }
                }
                "media" => return None,
                _ => {}
            }
        }
        lines.push(line);
    }
    Some((lines.join("\n"), images))
}

/// Removes the bot's mention placeholder; other mentions become `@name`.
pub fn strip_mentions(text: &str, mentions: &[Mention], bot_open_id: &str) -> String {
    let mut out = text.to_owned();
    for m in mentions.iter().filter(|m| !m.key.is_empty()) {
        let replacement = if m.id.open_id == bot_open_id && !bot_open_id.is_empty() {
            String::new()
        } else if m.key == MENTION_ALL {
            "@all".to_owned()
        } else {
            format!("@{}", m.name)
        };
        // Posts spell mentions by user id instead of by key.
        let by_user = (!m.id.user_id.is_empty()).then(|| format!("@_at_{}", m.id.user_id));
        for key in std::iter::once(m.key.clone()).chain(by_user) {
            if replacement.is_empty() {
                out = out.replace(&format!("{key} "), "");
            }
            out = out.replace(&key, &replacement);
        }
    }
    out.trim().to_owned()
}

/// The readable text and files of a fetched message's content (one the bot
/// did not receive itself, such as a quoted one): read as an incoming message
/// is ([`readable`]), and a card by its words; anything else reads as nothing.
pub fn fetched(msg_type: &str, content: &str) -> (String, Vec<LarkFile>) {
    match readable(msg_type, content) {
        Ok(read) => read,
        Err(_) if msg_type == "interactive" => {
            let mut words = Vec::new();
            card_words(
                &serde_json::from_str(content).unwrap_or(Value::Null),
                &mut words,
            );
            (words.join("\n"), Vec::new())
        }
        Err(_) => (String::new(), Vec::new()),
    }
}

fn card_words(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                match (k.as_str(), x) {
                    ("content" | "text", Value::String(s)) if !s.trim().is_empty() => {
                        out.push(s.clone())
                    }
                    _ => card_words(x, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|x| card_words(x, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_kind_reads_as_text_and_files() {
        let text = json!({"text": "the plan"}).to_string();
        assert_eq!(readable("text", &text), Ok(("the plan".into(), Vec::new())));
        let (_, files) = readable("image", &json!({"image_key": "img_1"}).to_string()).unwrap();
        assert_eq!(
            (files[0].key.as_str(), files[0].kind),
            ("img_1", ResourceType::Image)
        );
        let file = json!({"file_key": "f_1", "file_name": "a.pdf"}).to_string();
        let (_, files) = readable("file", &file).unwrap();
        assert_eq!(files[0].name.as_deref(), Some("a.pdf"));
        let post = json!({"zh_cn": {"title": "T", "content": [[{"tag": "text", "text": "one"},
            {"tag": "img", "image_key": "img_2"}], [{"tag": "md", "text": "two"}]]}})
        .to_string();
        let (text, files) = readable("post", &post).unwrap();
        assert_eq!((text.as_str(), files.len()), ("T\none\ntwo", 1));
        let video = json!({"content": [[{"tag": "media", "file_key": "v"}]]}).to_string();
        assert_eq!(readable("post", &video), Err("post with video".into()));
        assert_eq!(readable("audio", "{}"), Err("audio".into()));
        assert_eq!(readable("text", "not json"), Err("text".into()));
        let card = json!({"body": {"elements": [{"tag": "markdown", "content": "It is 4 pm."}]}})
            .to_string();
        assert_eq!(fetched("interactive", &card).0, "It is 4 pm.");
        assert_eq!(fetched("audio", "{}"), (String::new(), Vec::new()));
    }
}
