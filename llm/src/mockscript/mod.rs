//! The `@mock.*` directive language (docs/agent.md, "The mock provider"), shared by
//! the in-process [`crate::mock::MockProvider`] and `weft-loadtest`'s mock LLM
//! server so both behave identically.
//!
//! Directives are read from the last user message. Each starts at `@mock.` and runs
//! to the next `@mock.` or the end of its line, so several may share a line:
//! `@mock.tokens 300 @mock.delay 0 50`. A typo is an error (the mock answers it
//! like a provider answers a bad request) rather than silently ignored.
//!
//! Beyond the table in docs/agent.md the grammar has a few knobs for the wire
//! tests and chaos runs: `@mock.fail <status> [times=k] [after=n] [retry_after=s]`
//! (`after=n`: fail mid-stream after `n` tokens; `retry_after`: the delay hint) and
//! `@mock.cut <n> [times=k]` (the stream stops after `n` tokens without its end marker).
//! Several `@mock.tool` directives make one step call several tools at once, and
//! `@mock.panic` makes the in-process mock panic inside the worker (every attempt),
//! which the worker must survive. `@mock.context` replies with a JSON picture of
//! the request (system prompt, messages, tools offered). `@mock.describe_images`
//! replies with one line per image of the last user message,
//! `image <n>: <mime>, <decoded byte count> bytes, sha256 <hex>` ([`describe_images`]),
//! so a test can see that the images reached the model whole.
//!
//! Replies: `@mock.reply` text, else `@mock.tokens n` words `w1 … wn`, else
//! `@mock.describe_images` (whichever of the three comes last wins), else (unless
//! a tool is called) `You said: <the whole last user message>`, directives included.
//! `@mock.think n` reasons `t1 … tn` first. After a tool result the reply is
//! `tool <name> said: <output>`. Usage counts words: input is the whole context,
//! cache reads all but its last message, output every emitted token (a tool call is
//! one), reasoning the think words.
//!
//! [`plan`] turns the directives plus the conversation into a [`Plan`];
//! [`Plan::outcome`] picks what a given attempt does; [`pace`] times it.

mod images;
mod pace;
mod plan;

pub use images::describe_images;
pub use pace::{Timing, pace};
pub use plan::{Item, Outcome, Plan, plan, words_in};

use std::time::Duration;

/// The most words `@mock.tokens` / `@mock.think` may ask for each. The demo model
/// is open to every user: 200,000 words was a 1.5 MB reply per message, kept in
/// the event log for a day. 20,000 is still far beyond any real reply.
pub const MAX_WORDS: u32 = 20_000;
/// The longest first-token delay of `@mock.delay` (the load tester's slow-start
/// scenario waits ten minutes).
pub const MAX_TTFT: Duration = Duration::from_secs(600);
/// The longest pause between two tokens.
pub const MAX_ITL: Duration = Duration::from_secs(60);
/// The longest a whole scripted reply may take (first token, then every word of
/// thinking and reply at the inter-token pause). Before, `@mock.delay` took any
/// u32 of milliseconds: a single reply could hold a worker slot for ~49 days.
pub const MAX_REPLY_TIME: Duration = Duration::from_secs(1800);

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScriptError {
    #[error("unknown directive @mock.{0}")]
    Unknown(String),
    #[error("@mock.{directive}: {problem}")]
    Invalid {
        directive: &'static str,
        problem: String,
    },
}

/// What the last user message asks for. Later directives override earlier ones.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Directives {
    pub reply: Option<ReplySpec>,
    pub delay: Option<(Duration, Duration)>,
    pub think: u32,
    /// `@mock.tool` calls, in order (several make one step with parallel calls).
    pub tools: Vec<(String, serde_json::Value)>,
    /// `@mock.panic`: the in-process mock panics (tests of the worker's panic isolation).
    pub panic: bool,
    /// `@mock.context`: the reply describes the request the model was sent (JSON:
    /// the system prompt, the messages, the tools offered), so tests can see it.
    pub context: bool,
    pub fail: Option<Fail>,
    pub cut: Option<Cut>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ReplySpec {
    Text(String),
    Words(u32),
    /// `@mock.describe_images`: what the last user message's images were.
    DescribeImages,
}

/// `@mock.fail`: the first `times` attempts fail with `status`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fail {
    pub status: u16,
    pub times: u32,
    /// Fail mid-stream (after HTTP 200) once this many tokens were sent.
    pub after: Option<u32>,
    pub retry_after: Option<Duration>,
}

/// `@mock.cut`: the first `times` attempts lose the connection after `after` tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cut {
    pub after: u32,
    pub times: u32,
}

/// Parse every directive in `text`. Text outside directives is ignored.
pub fn parse(text: &str) -> Result<Directives, ScriptError> {
    let mut out = Directives::default();
    for line in text.lines() {
        for chunk in directive_chunks(line) {
            let (name, rest) = chunk.split_once(char::is_whitespace).unwrap_or((chunk, ""));
            apply(&mut out, name, rest.trim())?;
        }
    }
    check_reply_time(&out)?;
    Ok(out)
}

/// Refuse a script whose reply would take longer than [`MAX_REPLY_TIME`].
fn check_reply_time(d: &Directives) -> Result<(), ScriptError> {
    let Some((ttft, itl)) = d.delay else {
        return Ok(());
    };
    let reply_words = match &d.reply {
        Some(ReplySpec::Words(n)) => u64::from(*n),
        Some(ReplySpec::Text(t)) => t.split_whitespace().count() as u64,
        Some(ReplySpec::DescribeImages) | None => 1,
    };
    let words = reply_words + u64::from(d.think);
    let total = ttft.as_millis() as u64 + words.saturating_mul(itl.as_millis() as u64);
    if total > MAX_REPLY_TIME.as_millis() as u64 {
        return Err(invalid(
            "delay",
            format!(
                "this reply would take {} s; at most {} s",
                total / 1000,
                MAX_REPLY_TIME.as_secs()
            ),
        ));
    }
    Ok(())
}

/// The text after each `@mock.` that starts a word (so `me@mock.example` is not one),
/// up to the next such `@mock.` or the end of the line.
fn directive_chunks(line: &str) -> Vec<&str> {
    const MARK: &str = "@mock.";
    let starts: Vec<usize> = line
        .match_indices(MARK)
        .map(|(i, _)| i)
        .filter(|&i| {
            line[..i]
                .chars()
                .next_back()
                .is_none_or(char::is_whitespace)
        })
        .collect();
    let ends = starts.iter().skip(1).copied().chain([line.len()]);
    starts
        .iter()
        .zip(ends)
        .map(|(&s, e)| line[s + MARK.len()..e].trim())
        .collect()
}

fn apply(out: &mut Directives, name: &str, rest: &str) -> Result<(), ScriptError> {
    let mut words = rest.split_whitespace();
    match name {
        "reply" => out.reply = Some(ReplySpec::Text(rest.to_owned())),
        "tokens" => out.reply = Some(ReplySpec::Words(word_count("tokens", words.next())?)),
        "think" => out.think = word_count("think", words.next())?,
        "delay" => {
            let ttft = millis("delay", words.next())?;
            let itl = words
                .next()
                .map_or(Ok(Duration::ZERO), |w| millis("delay", Some(w)))?;
            if ttft > MAX_TTFT || itl > MAX_ITL {
                return Err(invalid(
                    "delay",
                    format!(
                        "at most {} ms before the first token and {} ms between tokens",
                        MAX_TTFT.as_millis(),
                        MAX_ITL.as_millis()
                    ),
                ));
            }
            out.delay = Some((ttft, itl));
        }
        "tool" => {
            let (tool, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            if tool.is_empty() {
                return Err(invalid("tool", "expected a tool name"));
            }
            let args = match args.trim() {
                "" => serde_json::json!({}),
                json => serde_json::from_str(json)
                    .map_err(|e| invalid("tool", format!("arguments are not JSON: {e}")))?,
            };
            out.tools.push((tool.to_owned(), args));
        }
        "fail" => out.fail = Some(parse_fail(words)?),
        "panic" => out.panic = true,
        "context" => out.context = true,
        "describe_images" => out.reply = Some(ReplySpec::DescribeImages),
        "cut" => {
            let after = number("cut", words.next())?;
            let mut cut = Cut { after, times: 1 };
            for opt in words {
                match opt.split_once('=') {
                    Some(("times", v)) => cut.times = number("cut", Some(v))?,
                    _ => return Err(invalid("cut", format!("unknown option {opt:?}"))),
                }
            }
            out.cut = Some(cut);
        }
        other => return Err(ScriptError::Unknown(other.to_owned())),
    }
    Ok(())
}

fn parse_fail<'a>(mut words: impl Iterator<Item = &'a str>) -> Result<Fail, ScriptError> {
    let status = number("fail", words.next())?;
    if !(400..=599).contains(&status) {
        return Err(invalid(
            "fail",
            format!("status {status} is not an error status"),
        ));
    }
    let mut fail = Fail {
        status: status as u16,
        times: 1,
        after: None,
        retry_after: None,
    };
    for opt in words {
        match opt.split_once('=') {
            Some(("times", v)) => fail.times = number("fail", Some(v))?,
            Some(("after", v)) => fail.after = Some(number("fail", Some(v))?),
            Some(("retry_after", v)) => {
                let secs: f64 = v.parse().map_err(|_| invalid("fail", "bad retry_after"))?;
                if !(0.0..=86_400.0).contains(&secs) {
                    return Err(invalid("fail", "retry_after out of range"));
                }
                fail.retry_after = Some(Duration::from_secs_f64(secs));
            }
            _ => return Err(invalid("fail", format!("unknown option {opt:?}"))),
        }
    }
    Ok(fail)
}

fn invalid(directive: &'static str, problem: impl Into<String>) -> ScriptError {
    ScriptError::Invalid {
        directive,
        problem: problem.into(),
    }
}

fn number(directive: &'static str, word: Option<&str>) -> Result<u32, ScriptError> {
    let word = word.ok_or_else(|| invalid(directive, "expected a number"))?;
    word.parse()
        .map_err(|_| invalid(directive, format!("{word:?} is not a number")))
}

fn word_count(directive: &'static str, word: Option<&str>) -> Result<u32, ScriptError> {
    let n = number(directive, word)?;
    if n > MAX_WORDS {
        return Err(invalid(directive, format!("at most {MAX_WORDS} words")));
    }
    Ok(n)
}

fn millis(directive: &'static str, word: Option<&str>) -> Result<Duration, ScriptError> {
    Ok(Duration::from_millis(u64::from(number(directive, word)?)))
}

/// Split text into stream tokens: each word with the whitespace that follows it.
/// Concatenating the tokens gives the text back exactly.
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_space = false;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if in_space && !space && i > start && !text[start..i].trim().is_empty() {
            out.push(text[start..i].to_owned());
            start = i;
        }
        in_space = space;
    }
    if start < text.len() {
        out.push(text[start..].to_owned());
    }
    out
}

/// `prefix1 prefix2 … prefixN` as tokens.
pub fn numbered_words(prefix: &str, n: u32) -> Vec<String> {
    (1..=n)
        .map(|i| {
            if i < n {
                format!("{prefix}{i} ")
            } else {
                format!("{prefix}{i}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
