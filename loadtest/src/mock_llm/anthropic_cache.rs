//! Anthropic's prompt cache as the mock keeps it, so a client's `cache_control`
//! breakpoints decide what its usage reports, as they do at Anthropic.
//!
//! The prompt is a sequence of prefixes ending at block boundaries: first the tools
//! and system prompt together, then after each content block of each message.
//! A request may mark at most four blocks with `cache_control: {"type":
//! "ephemeral"}` (a fifth is a 400, as is another type). For each breakpoint the
//! cache looks for the longest prefix it holds among that boundary and the 20
//! before it (Anthropic's look-back), reads it (`cache_read_input_tokens`), and
//! writes the prefixes of every breakpoint (`cache_creation_input_tokens`: what the
//! last breakpoint adds to what was read). Entries live five minutes from their
//! last use. A prefix's identity is a hash of its blocks without their
//! `cache_control`, so moving a breakpoint along a conversation still finds the
//! earlier prefix. Not modelled: the model's minimum cacheable length (1,024 tokens
//! for most models): the mock's prompts are words, and tests want small ones.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;
use weft_llm::ChatMessage;
use weft_llm::mockscript::words_in;

use super::anthropic_wire::{AnthropicError, MessagesRequest, messages as chat_messages, text_of};

const TTL: Duration = Duration::from_secs(300);
const LOOK_BACK: usize = 20;
const MAX_BREAKPOINTS: usize = 4;
/// Past this many entries the cache starts over (a load test sends millions).
const MAX_ENTRIES: usize = 100_000;

/// What a request read from the cache and wrote to it, in the mock's tokens.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(super) struct Cached {
    pub read: u64,
    pub written: u64,
}

#[derive(Default)]
pub(super) struct PromptCache(Mutex<HashMap<u64, Instant>>);

/// A prefix end: after the system prompt (`block == None`), or after block
/// `block` of message `message`.
#[derive(Debug, Clone, Copy)]
struct Boundary {
    message: usize,
    block: Option<usize>,
    hash: u64,
}

impl PromptCache {
    /// Read and write the cache for `req`; refuse breakpoints the API refuses.
    pub fn account(&self, req: &MessagesRequest) -> Result<Cached, AnthropicError> {
        let (boundaries, marked) = boundaries(req)?;
        if marked.is_empty() {
            return Ok(Cached::default());
        }
        let now = Instant::now();
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, used| now.duration_since(*used) < TTL);
        let fresh = |k: usize| map.contains_key(&boundaries[k].hash);
        let hit = marked
            .iter()
            .filter_map(|&b| (b.saturating_sub(LOOK_BACK)..=b).rev().find(|&k| fresh(k)))
            .max();
        let last = *marked.last().expect("not empty");
        let words = |k: Option<usize>| k.map_or(Ok(0), |k| prefix_words(req, boundaries[k]));
        let read = words(hit)?;
        let written = match hit {
            Some(h) if h >= last => 0,
            _ => words(Some(last))?.saturating_sub(read),
        };
        if map.len() >= MAX_ENTRIES {
            map.clear();
        }
        for k in hit.into_iter().chain(marked.iter().copied()) {
            map.insert(boundaries[k].hash, now);
        }
        Ok(Cached { read, written })
    }
}

/// Every prefix boundary in order, and the indices of the marked ones.
fn boundaries(req: &MessagesRequest) -> Result<(Vec<Boundary>, Vec<usize>), AnthropicError> {
    let mut h = DefaultHasher::new();
    let mut marks = 0;
    let mut marked = Vec::new();
    let mut head_marked = false;
    for tool in blocks(req.tools.as_ref()) {
        head_marked |= breakpoint(tool, &mut marks)?;
        stripped(tool).hash(&mut h);
    }
    match &req.system {
        Some(Value::String(s)) => s.hash(&mut h),
        system => {
            for b in blocks(system.as_ref()) {
                head_marked |= breakpoint(b, &mut marks)?;
                stripped(b).hash(&mut h);
            }
        }
    }
    let mut out = vec![Boundary {
        message: 0,
        block: None,
        hash: h.finish(),
    }];
    if head_marked {
        marked.push(0);
    }
    for (i, m) in req.messages.iter().enumerate() {
        m["role"].as_str().hash(&mut h);
        let content = &m["content"];
        let list: Vec<&Value> = match content {
            Value::String(_) => vec![content],
            _ => blocks(Some(content)).collect(),
        };
        for (j, b) in list.into_iter().enumerate() {
            if breakpoint(b, &mut marks)? {
                marked.push(out.len());
            }
            stripped(b).hash(&mut h);
            out.push(Boundary {
                message: i,
                block: Some(j),
                hash: h.finish(),
            });
        }
    }
    if marks > MAX_BREAKPOINTS {
        return Err(AnthropicError::invalid(format!(
            "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {marks}."
        )));
    }
    Ok((out, marked))
}

fn blocks(list: Option<&Value>) -> impl Iterator<Item = &Value> {
    list.and_then(Value::as_array).into_iter().flatten()
}

/// Whether `block` is a breakpoint, counting it; an unknown kind is a 400.
fn breakpoint(block: &Value, marks: &mut usize) -> Result<bool, AnthropicError> {
    let Some(control) = block.get("cache_control").filter(|c| !c.is_null()) else {
        return Ok(false);
    };
    if control["type"] != "ephemeral" {
        return Err(AnthropicError::invalid(format!(
            "cache_control.type: Input should be 'ephemeral', got {}",
            control["type"]
        )));
    }
    *marks += 1;
    Ok(true)
}

/// `block` as its prefix's identity sees it: without its breakpoint.
fn stripped(block: &Value) -> String {
    let mut b = block.clone();
    if let Some(o) = b.as_object_mut() {
        o.remove("cache_control");
    }
    b.to_string()
}

/// The mock's tokens up to and including `end`.
fn prefix_words(req: &MessagesRequest, end: Boundary) -> Result<u64, AnthropicError> {
    let mut prefix = req.clone();
    match end.block {
        None => prefix.messages.clear(),
        Some(j) => {
            prefix.messages.truncate(end.message + 1);
            if let Some(list) = prefix.messages[end.message]["content"].as_array_mut() {
                list.truncate(j + 1);
            }
        }
    }
    if prefix.messages.is_empty() {
        // The head alone: the converter wants a message.
        let system = req.system.as_ref().map(text_of).unwrap_or_default();
        return Ok(words_in(&[ChatMessage::System { content: system }]));
    }
    Ok(words_in(&chat_messages(&prefix)?))
}
