//! What every button of an approval, question or plan card carries back in
//! its callback `value` besides its answer: a [`ClickContext`]. The worker
//! writes it (the card driver in a chat, a delivery to a channel) and the
//! gateway reads it from the click; one definition, so the two cannot drift.

use serde_json::{Map, Value, json};
use weft_wire::ids::RunId;

use crate::text::Lang;

const RUN: &str = "run_id";
const STEP: &str = "step";
const LANG: &str = "lang";

/// The run and step a card's wait belongs to — where the gateway finds the
/// approval, question or plan without a lookup that ignores ownership — and
/// the chat's language, so the click's toast and redrawn card speak it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClickContext {
    pub run: RunId,
    pub step: u32,
    pub lang: Lang,
}

impl ClickContext {
    /// The keys a card's buttons carry (each card adds its own answer keys).
    pub fn to_map(&self) -> Map<String, Value> {
        Map::from_iter([
            (RUN.to_owned(), json!(self.run.0)),
            (STEP.to_owned(), json!(self.step)),
            (LANG.to_owned(), json!(self.lang.code())),
        ])
    }

    /// The run and step of a clicked card; `None` when either is missing or
    /// not what [`ClickContext::to_map`] writes.
    pub fn step_of(value: &Map<String, Value>) -> Option<(RunId, u32)> {
        let run = value
            .get(RUN)
            .and_then(Value::as_str)
            .and_then(RunId::parse)?;
        let step = value.get(STEP).and_then(Value::as_u64)?;
        Some((run, u32::try_from(step).ok()?))
    }

    /// The language a clicked card was drawn in.
    pub fn lang_of(value: &Value) -> Option<Lang> {
        value
            .get(LANG)
            .and_then(Value::as_str)
            .and_then(Lang::parse)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_card_carries_reads_back() {
        let sent = ClickContext {
            run: RunId::new(),
            step: 3,
            lang: Lang::Zh,
        };
        let mut value = sent.to_map();
        value.insert("approval_id".into(), json!("apr_1"));
        assert_eq!(ClickContext::step_of(&value), Some((sent.run.clone(), 3)));
        assert_eq!(
            ClickContext::lang_of(&Value::Object(value.clone())),
            Some(Lang::Zh)
        );
        value.insert(STEP.into(), json!(-1));
        assert_eq!(ClickContext::step_of(&value), None);
        value.insert(RUN.into(), json!("'; drop table runs; --"));
        value.insert(STEP.into(), json!(3));
        assert_eq!(ClickContext::step_of(&value), None);
        assert_eq!(ClickContext::lang_of(&json!({"lang": "fr"})), None);
    }
}
