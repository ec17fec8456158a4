//! Token estimates for fitting a conversation into a model's window. Exact
//! counts need each provider's tokenizer (and Anthropic publishes none); the
//! estimate errs high so a context planned under the window stays under it:
//! about 4 characters per token for ASCII text (English runs 4–4.5 with GPT
//! tokenizers), one token per character beyond ASCII (CJK is 1–1.5 characters
//! per token), and a few tokens of framing per message.
//!
//! An image costs a fixed [`IMAGE_TOKENS`], never the length of its base64: the
//! providers bill images by their pixels, and the bytes of a compressed screenshot
//! say little about those (a 4 MiB PNG counted as text would look like a million
//! tokens and push the whole conversation out of the window).

use crate::ChatMessage;

/// Framing per message (role markers, separators).
const PER_MESSAGE: u64 = 4;

/// What one image is counted as. Anthropic charges about `width × height / 750`
/// tokens and scales an image down until it fits about 1.15 megapixels, so its
/// largest image costs about 1,600 (1092×1092 is 1,590). OpenAI's high-detail
/// images cost 85 tokens plus 170 per 512-pixel tile after scaling to fit 2048 and
/// then 768 on the short side: at most 8 tiles, 1,445 tokens. We do not know an
/// image's size here, so every image is counted at the top of both: the estimate
/// errs high, like the rest of this module.
pub const IMAGE_TOKENS: u64 = 1_600;

pub fn estimate(text: &str) -> u64 {
    let (ascii, other) = text.chars().fold((0u64, 0u64), |(a, o), c| {
        if c.is_ascii() { (a + 1, o) } else { (a, o + 1) }
    });
    ascii.div_ceil(4) + other
}

pub fn estimate_message(m: &ChatMessage) -> u64 {
    PER_MESSAGE
        + match m {
            ChatMessage::System { content } => estimate(content),
            ChatMessage::User { content, images } => {
                estimate(content) + IMAGE_TOKENS * images.len() as u64
            }
            ChatMessage::Tool { name, content, .. } => estimate(name) + estimate(content),
            ChatMessage::Assistant {
                content,
                tool_calls,
                ..
            } => {
                estimate(content)
                    + tool_calls
                        .iter()
                        .map(|c| estimate(&c.name) + estimate(&c.args.to_string()))
                        .sum::<u64>()
            }
        }
}

pub fn estimate_all(messages: &[ChatMessage]) -> u64 {
    messages.iter().map(estimate_message).sum()
}

/// The system prompt of a summarising call; the mock model recognises it.
pub const SUMMARY_INSTRUCTIONS: &str = "Summarise the conversation below for your own later use. Keep every fact, name, number, decision and open question the user may refer back to; drop pleasantries. Write plain prose or short bullet points, in the conversation's language. Begin with the earlier summary's facts when one is given.";

/// How a transcript line of an earlier summary starts.
pub const EARLIER_SUMMARY: &str = "Earlier summary: ";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_by_four_and_wide_characters_one_each() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("abcd"), 1);
        assert_eq!(estimate("abcde"), 2);
        assert_eq!(estimate("你好"), 2);
        let m = ChatMessage::User {
            content: "hello world!".into(),
            images: Vec::new(),
        };
        assert_eq!(estimate_message(&m), 4 + 3);
    }

    #[test]
    fn an_image_costs_a_fixed_amount_whatever_its_size() {
        let with = |data: String| ChatMessage::User {
            content: "what is this?".into(),
            images: vec![
                crate::Image {
                    mime: "image/png".into(),
                    data: data.clone().into(),
                },
                crate::Image {
                    mime: "image/jpeg".into(),
                    data: data.into(),
                },
            ],
        };
        let small = estimate_message(&with("iVBORw0KGgo=".into()));
        let large = estimate_message(&with("A".repeat(4 << 20)));
        assert_eq!(small, 4 + 4 + 2 * IMAGE_TOKENS);
        assert_eq!(large, small, "the base64 is never counted as text");
    }
}
