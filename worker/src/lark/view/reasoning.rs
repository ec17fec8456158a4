//! The model's reasoning as the card shows it: per step what it thought and
//! for how long (by the events' own timestamps, so a card rebuilt from the log
//! shows the same seconds), and how many tokens that was.
//!
//! Tokens come from the run's `usage` once a step reports it (providers count
//! reasoning tokens exactly, when they do at all); before that, and for
//! providers that report none, the text is estimated like the context is
//! (`weft_llm::tokens`: ~4 ASCII characters a token, one per other character).

use std::collections::BTreeMap;

use weft_lark::card::Reasoning;

/// One step's thinking.
#[derive(Debug, Clone, PartialEq)]
struct Thought {
    text: String,
    /// Unix ms of its first and latest delta.
    first: i64,
    last: i64,
    /// Unix ms of the first answer text or call after it.
    ended: Option<i64>,
}

impl Thought {
    fn ms(&self) -> u64 {
        (self.ended.unwrap_or(self.last) - self.first).max(0) as u64
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Thinking {
    steps: BTreeMap<u32, Thought>,
    /// Reasoning tokens the latest `usage` reported, and the steps it covered.
    reported: u64,
    reported_upto: Option<u32>,
    /// Nothing but thinking since the model started it.
    now: bool,
}

impl Thinking {
    /// A reasoning delta of `step`, published at `ts`.
    pub fn think(&mut self, step: u32, delta: &str, ts: i64) {
        let thought = self.steps.entry(step).or_insert(Thought {
            text: String::new(),
            first: ts,
            last: ts,
            ended: None,
        });
        thought.text.push_str(delta);
        thought.last = ts;
        thought.ended = None;
        self.now = true;
    }

    /// The answer or a call of `step` began at `ts`: its thinking is over.
    pub fn answered(&mut self, step: u32, ts: i64) {
        if let Some(thought) = self.steps.get_mut(&step)
            && thought.ended.is_none()
        {
            thought.ended = Some(ts);
        }
        self.now = false;
    }

    /// `usage` reported `reasoning` tokens for every step so far.
    pub fn reported(&mut self, reasoning: u64) {
        self.reported = reasoning;
        self.reported_upto = self.steps.keys().next_back().copied();
    }

    /// Steps from `step` on start again (a retry, a new attempt).
    pub fn drop_from(&mut self, step: u32) {
        self.steps.retain(|s, _| *s < step);
    }

    pub fn drop_step(&mut self, step: u32) {
        self.steps.remove(&step);
    }

    /// What the card shows, once there was any thinking; `open` while the
    /// model still thinks and the reply goes on.
    pub fn shown(&self, open: bool) -> Option<Reasoning> {
        let (_, latest) = self.steps.iter().next_back()?;
        let unreported: u64 = self
            .steps
            .iter()
            .filter(|(step, _)| self.reported_upto.is_none_or(|upto| **step > upto))
            .map(|(_, t)| weft_llm::tokens::estimate(&t.text))
            .sum();
        let estimated: u64 = self
            .steps
            .values()
            .map(|t| weft_llm::tokens::estimate(&t.text))
            .sum();
        let tokens = if self.reported > 0 {
            self.reported + unreported
        } else {
            estimated
        };
        Some(Reasoning {
            text: latest.text.clone(),
            thinking: open && self.now,
            ms: self.steps.values().map(Thought::ms).sum(),
            tokens,
        })
    }
}
