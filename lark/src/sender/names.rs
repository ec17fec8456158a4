//! Who is speaking in a group, by name: what the model reads (`[Alice] can
//! you …`) and the web UI shows. Names come from the contact API
//! (`GET /open-apis/contact/v3/users/:open_id`), which needs a scope
//! (`contact:user.base:readonly`) a tenant admin may not have granted; without
//! it a speaker is a short, stable id (`user-3f9a1c`, the open_id's tail), and
//! the process logs one warning an hour rather than one per message.
//!
//! Names are cached in memory per replica for an hour (a renamed colleague is
//! seen within the hour); a failed lookup is not retried for that open_id for
//! the same hour. At 10,000 entries the cache starts over: one contact call per
//! active speaker per hour is far below Lark's per-app limits.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::RateAwareSender;

const KEEP: Duration = Duration::from_secs(3600);
const MAX_ENTRIES: usize = 10_000;
/// A lookup is not worth holding a reply for longer than this.
const LOOKUP_WITHIN: Duration = Duration::from_secs(3);

#[derive(Default)]
pub struct Names {
    known: Mutex<HashMap<String, (Option<String>, Instant)>>,
    warned_at: Mutex<Option<Instant>>,
}

impl Names {
    /// The display name of `open_id`, or its short id.
    pub async fn of(&self, sender: &RateAwareSender, open_id: &str) -> String {
        if let Some((name, _)) = self
            .known
            .lock()
            .expect("names lock")
            .get(open_id)
            .filter(|(_, at)| at.elapsed() < KEEP)
        {
            return name.clone().unwrap_or_else(|| short_id(open_id));
        }
        let name = match tokio::time::timeout(LOOKUP_WITHIN, sender.user_name(open_id)).await {
            Ok(Ok(name)) => name,
            Ok(Err(e)) => {
                self.warn(&format!("{e}"));
                None
            }
            Err(_) => {
                self.warn("the contact API did not answer within 3 s");
                None
            }
        };
        let mut known = self.known.lock().expect("names lock");
        if known.len() >= MAX_ENTRIES {
            known.clear();
        }
        known.insert(open_id.to_owned(), (name.clone(), Instant::now()));
        name.unwrap_or_else(|| short_id(open_id))
    }

    fn warn(&self, why: &str) {
        let mut at = self.warned_at.lock().expect("names lock");
        if at.is_none_or(|t| t.elapsed() >= KEEP) {
            *at = Some(Instant::now());
            tracing::warn!(
                error = why,
                "lark user names cannot be read (grant the app contact:user.base:readonly); group members show as short ids"
            );
        }
    }
}

/// `user-` and the last six characters of an open_id: stable, short, and
/// distinct enough within one group.
pub fn short_id(open_id: &str) -> String {
    let tail: String = open_id
        .chars()
        .rev()
        .take(6)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("user-{tail}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn short_ids_are_the_tail() {
        assert_eq!(super::short_id("ou_0123456789abcdef"), "user-abcdef");
        assert_eq!(super::short_id("ou"), "user-ou");
    }
}
