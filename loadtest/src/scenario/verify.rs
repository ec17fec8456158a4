//! After a scenario: read every session back through the API and check that each
//! user message got exactly one complete reply. Sessions are closed-loop, so a
//! correct history alternates user → assistant; an abandoned last turn is waited
//! for (bounded) before reading.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::SessionLog;
use crate::report::Verification;

/// Check every session; waits at most `patience` for runs still active.
pub async fn verify(logs: &[SessionLog], expect: &str, patience: Duration) -> Verification {
    let until = Instant::now() + patience;
    let results: Vec<Verification> = futures::stream::iter(logs)
        .map(|log| verify_one(log, expect, until))
        .buffer_unordered(16)
        .collect()
        .await;
    let mut v = Verification::default();
    for r in results {
        v.sessions += r.sessions;
        v.user_messages += r.user_messages;
        v.accepted_by_client += r.accepted_by_client;
        v.complete_replies += r.complete_replies;
        v.lost += r.lost;
        v.duplicated += r.duplicated;
        v.wrong += r.wrong;
        v.unfinished_sessions += r.unfinished_sessions;
    }
    v
}

async fn verify_one(log: &SessionLog, expect: &str, until: Instant) -> Verification {
    let mut v = Verification {
        sessions: 1,
        accepted_by_client: log.accepted,
        ..Verification::default()
    };
    let mut client = log.client.clone();
    // Wait for the session to go idle (its last run may still be recovering).
    loop {
        match client.session(&log.session).await {
            Ok(s) if s.active_run_id.is_none() => break,
            Ok(_) => {}
            Err(_) => client.fail_over(),
        }
        if Instant::now() >= until {
            v.unfinished_sessions = 1;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let messages = match client.all_messages(&log.session).await {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(error = %e, session = %log.session, "reading messages failed");
            v.lost = log.accepted;
            return v;
        }
    };
    let mut runs = HashSet::new();
    let mut answered = true;
    for m in &messages {
        match m.role.as_str() {
            "user" => {
                v.user_messages += 1;
                if !answered {
                    v.lost += 1;
                }
                answered = false;
            }
            "assistant" => {
                let new_run = m.run_id.as_ref().is_none_or(|r| runs.insert(r.clone()));
                if answered || !new_run {
                    v.duplicated += 1;
                    continue;
                }
                answered = true;
                if m.content == expect {
                    v.complete_replies += 1;
                } else {
                    v.wrong += 1;
                }
            }
            _ => {}
        }
    }
    if !answered {
        v.lost += 1;
    }
    v
}
