//! From directives and a conversation to what one step of the mock model does.

use std::time::Duration;

use super::{
    Cut, Directives, Fail, ReplySpec, ScriptError, describe_images, numbered_words, parse, tokens,
};
use crate::{ChatMessage, Image, StopReason, ToolCall, Usage};

/// What the mock model answers to one step, before attempts and timing.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Reasoning tokens (`t1 t2 … tn` for `@mock.think n`).
    pub think: Vec<String>,
    /// Reply tokens; concatenated they are the reply text.
    pub text: Vec<String>,
    pub tool_calls: Vec<ToolCall>,
    /// `@mock.panic`.
    pub panic: bool,
    /// `@mock.context`: replace `text` with the request's picture ([`Plan::describe`]).
    pub context: bool,
    pub stop: StopReason,
    /// `@mock.delay` (time to first token, inter-token latency), if given.
    pub delay: Option<(Duration, Duration)>,
    pub fail: Option<Fail>,
    pub cut: Option<Cut>,
    /// Words in the whole context, and in all of it but the last message (what a
    /// prefix cache would have seen on the previous call).
    pub input: u64,
    pub cache_read: u64,
}

/// One thing the mock emits, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Thinking(String),
    Text(String),
    ToolCall(ToolCall),
    /// Fail mid-stream (after a successful start) with this status.
    Fail(Fail),
    /// Drop the connection: no end marker.
    Cut,
    Finished {
        stop: StopReason,
        usage: Usage,
    },
}

impl Item {
    /// Tokens are what `@mock.delay`'s inter-token latency paces.
    pub fn is_token(&self) -> bool {
        matches!(self, Item::Thinking(_) | Item::Text(_) | Item::ToolCall(_))
    }
}

/// What one attempt does: fail before streaming, or stream these items.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Reject(Fail),
    Stream(Vec<Item>),
}

/// Plan the step answering `messages`. `max_tokens` truncates (reasoning first, as
/// real models count it) and turns the stop reason into `MaxTokens`.
pub fn plan(messages: &[ChatMessage], max_tokens: Option<u32>) -> Result<Plan, ScriptError> {
    if let Some(ChatMessage::System { content }) = messages.first()
        && content == crate::tokens::SUMMARY_INSTRUCTIONS
    {
        return Ok(summary_plan(messages, max_tokens));
    }
    let (user_text, images): (&str, &[Image]) = messages
        .iter()
        .rev()
        .find_map(|m| match m {
            ChatMessage::User { content, images } => Some((content.as_str(), images.as_slice())),
            _ => None,
        })
        .unwrap_or(("", &[]));
    let d: Directives = parse(user_text)?;
    let mut tool_calls = Vec::new();
    let trailing_results: Vec<String> = messages
        .iter()
        .rev()
        .map_while(|m| match m {
            ChatMessage::Tool { name, content, .. } => Some(format!("tool {name} said: {content}")),
            _ => None,
        })
        .collect();
    let mut text = if !trailing_results.is_empty() {
        let said: Vec<String> = trailing_results.into_iter().rev().collect();
        tokens(&said.join("; "))
    } else {
        for (i, (name, args)) in d.tools.iter().enumerate() {
            let id = match i {
                0 => format!("call_mock_{}", messages.len()),
                i => format!("call_mock_{}_{i}", messages.len()),
            };
            tool_calls.push(ToolCall {
                id,
                name: name.clone(),
                args: args.clone(),
            });
        }
        match &d.reply {
            Some(ReplySpec::Text(t)) => tokens(t),
            Some(ReplySpec::Words(n)) => numbered_words("w", *n),
            Some(ReplySpec::DescribeImages) => tokens(&describe_images(images)),
            None if !tool_calls.is_empty() => Vec::new(),
            None => tokens(&format!("You said: {user_text}")),
        }
    };
    let mut think = numbered_words("t", d.think);
    let mut stop = if !tool_calls.is_empty() {
        StopReason::ToolUse
    } else {
        StopReason::EndTurn
    };
    if let Some(max) = max_tokens.map(|m| m as usize) {
        let wanted = think.len() + text.len() + tool_calls.len();
        if wanted > max {
            think.truncate(max);
            text.truncate(max - think.len());
            tool_calls.clear();
            stop = StopReason::MaxTokens;
        }
    }
    let words: Vec<u64> = messages.iter().map(message_words).collect();
    let input: u64 = words.iter().sum();
    Ok(Plan {
        think,
        text,
        tool_calls,
        panic: d.panic,
        context: d.context,
        stop,
        delay: d.delay,
        fail: d.fail,
        cut: d.cut,
        input,
        cache_read: input - words.last().copied().unwrap_or(0),
    })
}

/// The most facts a mock summary keeps (the earliest win).
const SUMMARY_FACTS: usize = 60;

/// A summarising call: the reply keeps the earlier summary's facts and the first
/// ten words of every user line of the transcript, joined by ` | ` — so tests
/// can check what a summary carries forward, and it is the same every time.
fn summary_plan(messages: &[ChatMessage], max_tokens: Option<u32>) -> Plan {
    let transcript: String = messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::User { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut facts: Vec<String> = Vec::new();
    for line in transcript.lines() {
        if let Some(earlier) = line.strip_prefix(crate::tokens::EARLIER_SUMMARY) {
            facts.extend(
                earlier
                    .split(" | ")
                    .filter(|f| !f.trim().is_empty())
                    .map(str::to_string),
            );
        } else if let Some(said) = line.strip_prefix("user: ") {
            let first: Vec<&str> = said.split_whitespace().take(10).collect();
            if !first.is_empty() {
                facts.push(first.join(" "));
            }
        }
    }
    facts.truncate(SUMMARY_FACTS);
    // Like a real model, it stops at `max_tokens` (the earliest facts stay).
    let mut text = tokens(&facts.join(" | "));
    if let Some(max) = max_tokens {
        text.truncate(max as usize);
    }
    let words: Vec<u64> = messages.iter().map(message_words).collect();
    let input: u64 = words.iter().sum();
    Plan {
        think: Vec::new(),
        text,
        tool_calls: Vec::new(),
        panic: false,
        context: false,
        stop: StopReason::EndTurn,
        delay: None,
        fail: None,
        cut: None,
        input,
        cache_read: 0,
    }
}

/// The words of `messages`, as a plan's `input` counts them (the mock's tokens).
pub fn words_in(messages: &[ChatMessage]) -> u64 {
    messages.iter().map(message_words).sum()
}

fn message_words(m: &ChatMessage) -> u64 {
    let count = |s: &str| s.split_whitespace().count() as u64;
    match m {
        // Images are not words: the mock's usage counts text only.
        ChatMessage::System { content } | ChatMessage::User { content, .. } => count(content),
        ChatMessage::Tool { content, .. } => count(content),
        ChatMessage::Assistant {
            content,
            tool_calls,
            ..
        } => {
            count(content)
                + tool_calls
                    .iter()
                    .map(|c| 1 + count(&c.args.to_string()))
                    .sum::<u64>()
        }
    }
}

impl Plan {
    /// `@mock.context`: the reply becomes JSON describing what the model was sent.
    pub fn describe(&mut self, messages: &[ChatMessage], tools: &[crate::ToolSpec]) {
        let system: Vec<&str> = messages
            .iter()
            .filter_map(|m| match m {
                ChatMessage::System { content } => Some(content.as_str()),
                _ => None,
            })
            .collect();
        let roles: Vec<&str> = messages
            .iter()
            .map(|m| match m {
                ChatMessage::System { .. } => "system",
                ChatMessage::User { .. } => "user",
                ChatMessage::Assistant { .. } => "assistant",
                ChatMessage::Tool { .. } => "tool",
            })
            .collect();
        let users: Vec<&str> = messages
            .iter()
            .filter_map(|m| match m {
                ChatMessage::User { content, .. } => Some(content.as_str()),
                _ => None,
            })
            .collect();
        let picture = serde_json::json!({
            "system": system,
            "roles": roles,
            "users": users,
            "tools": tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            "input_words": self.input,
        });
        self.text = super::tokens(&picture.to_string());
        self.tool_calls.clear();
        self.stop = StopReason::EndTurn;
    }

    /// The items of attempt number `attempt` (1-based) of this step.
    pub fn outcome(&self, attempt: u32) -> Outcome {
        let (stop_after, last) = match (self.fail, self.cut) {
            (Some(fail), _) if attempt <= fail.times => match fail.after {
                None => return Outcome::Reject(fail),
                Some(n) => (n as usize, Item::Fail(fail)),
            },
            (_, Some(cut)) if attempt <= cut.times => (cut.after as usize, Item::Cut),
            _ => (usize::MAX, Item::Cut),
        };
        let tokens = self
            .think
            .iter()
            .map(|t| Item::Thinking(t.clone()))
            .chain(self.text.iter().map(|t| Item::Text(t.clone())))
            .chain(self.tool_calls.iter().map(|c| Item::ToolCall(c.clone())));
        let mut items: Vec<Item> = tokens.take(stop_after).collect();
        if stop_after != usize::MAX {
            items.push(last);
            return Outcome::Stream(items);
        }
        let usage = Usage {
            input: self.input,
            output: items.len() as u64,
            cache_read: self.cache_read,
            reasoning: self.think.len() as u64,
        };
        items.push(Item::Finished {
            stop: self.stop,
            usage,
        });
        Outcome::Stream(items)
    }

    /// The reply text (all text tokens).
    pub fn reply_text(&self) -> String {
        self.text.concat()
    }
}
