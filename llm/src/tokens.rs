//! Token estimates for fitting a conversation into a model's window. Exact
//! counts need each provider's tokenizer (and Anthropic publishes none); the
//! estimate errs high so a context planned under the window stays under it:
//! about 4 characters per token for ASCII text (English runs 4–4.5 with GPT
//! tokenizers), one token per character beyond ASCII (CJK is 1–1.5 characters
//! per token), and a few tokens of framing per message.

use crate::ChatMessage;

/// Framing per message (role markers, separators).
const PER_MESSAGE: u64 = 4;

pub fn estimate(text: &str) -> u64 {
    let (ascii, other) = text.chars().fold((0u64, 0u64), |(a, o), c| {
        if c.is_ascii() { (a + 1, o) } else { (a, o + 1) }
    });
    ascii.div_ceil(4) + other
}

pub fn estimate_message(m: &ChatMessage) -> u64 {
    PER_MESSAGE
        + match m {
            ChatMessage::System { content } | ChatMessage::User { content } => estimate(content),
            ChatMessage::Tool { name, content, .. } => estimate(name) + estimate(content),
            ChatMessage::Assistant {
                content,
                tool_calls,
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
        };
        assert_eq!(estimate_message(&m), 4 + 3);
    }
}
