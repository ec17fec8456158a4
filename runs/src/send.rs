//! The send path: one message into a session, and the run it starts (or the
//! active run it waits behind). Every channel's messages come through
//! [`Runs::send`]; the store's one transaction decides (ARCHITECTURE, "one chat
//! turn"), and what follows it (announce the run an `interrupt` cancelled,
//! enqueue the new one) is done here so no front door can forget it.

use weft_shared::ids::{MessageId, RunId};
use weft_store::{NewMessage, SendOutcome, SendRequest};

use crate::{Refusal, Runs};

/// What a send did, for callers that answer in their own way (HTTP, Lark).
#[derive(Debug, Clone, PartialEq)]
pub enum Submitted {
    /// A run was started (or found again by its idempotency key).
    Run {
        run_id: RunId,
        message_id: MessageId,
    },
    /// The message waits behind the session's active run (double texting).
    Queued {
        message_id: MessageId,
        active_run_id: Option<String>,
    },
}

/// A send that went through.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    pub submitted: Submitted,
    /// Whether this call wrote the message; false when its idempotency key
    /// found an earlier one (whose files are already stored: the caller's
    /// copies of them are not needed).
    pub written: bool,
}

impl Runs {
    /// The checks of a message's text every channel shares, cheap enough to
    /// run before any file of it is read.
    pub fn check_text(&self, text: &str, has_files: bool) -> Result<(), Refusal> {
        if text.trim().is_empty() && !has_files {
            return Err(Refusal::Invalid("text must not be empty".into()));
        }
        let limit = self.live.get().limits.message_chars;
        if text.chars().count() as u64 > limit {
            return Err(Refusal::TooLong { limit });
        }
        Ok(())
    }

    /// Send `msg`: the one path that creates runs from messages, whatever the
    /// channel, with every limit checked in the send transaction.
    pub async fn send(&self, msg: NewMessage) -> Result<Sent, Refusal> {
        self.check_text(&msg.text, !msg.attachments.is_empty())?;
        let config = self.live.get();
        let limits = &config.limits;
        let (session_owner, session) = (msg.session_owner.clone(), msg.session.clone());
        let outcome = self
            .store
            .send_message(&SendRequest {
                message: msg,
                limits: weft_store::RunLimits::from(limits),
                queued_messages_per_session: limits.queued_messages_per_session,
                storage_bytes_per_user: limits.storage_bytes_per_user,
                traceparent: weft_shared::telemetry::current_traceparent(),
            })
            .await?;
        let written = |submitted| Sent {
            submitted,
            written: true,
        };
        match outcome {
            SendOutcome::Started { run, interrupted } => {
                if let Some(active) = interrupted {
                    self.announce_cancel(&active).await;
                    self.cancel_children(&active.id).await;
                }
                self.enqueue(run.run_id.clone()).await;
                Ok(written(Submitted::Run {
                    run_id: run.run_id,
                    message_id: run.message_id,
                }))
            }
            SendOutcome::Queued {
                message_id,
                active_run_id,
            } => Ok(written(Submitted::Queued {
                message_id,
                active_run_id: Some(active_run_id.0),
            })),
            SendOutcome::Replayed { message_id, run_id } => {
                let submitted = match run_id {
                    Some(run_id) => Submitted::Run { run_id, message_id },
                    None => Submitted::Queued {
                        message_id,
                        active_run_id: self
                            .store
                            .get_session(&session_owner, &session)
                            .await?
                            .active_run_id,
                    },
                };
                Ok(Sent {
                    submitted,
                    written: false,
                })
            }
            SendOutcome::Rejected { active_run_id } => Err(Refusal::RunActive { active_run_id }),
            SendOutcome::TooManyActive => Err(Refusal::TooManyActive {
                limit: limits.active_runs_per_user,
            }),
            SendOutcome::RateLimited { retry_after_secs } => Err(Refusal::RateLimited {
                per_minute: limits.runs_per_minute_per_user,
                retry_after_secs,
            }),
            SendOutcome::QueueFull { active_run_id } => Err(Refusal::QueueFull {
                active_run_id,
                limit: limits.queued_messages_per_session,
            }),
            SendOutcome::OverStorage(usage) => Err(Refusal::OverStorage {
                usage,
                limit: limits.storage_bytes_per_user,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A service over a fresh embedded store with `message_chars` = 5.
    async fn runs() -> (Runs, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("weft.db").display());
        let store = weft_store::Store::connect(&url).await.unwrap();
        let mut config = weft_config::Config::default();
        config.limits.message_chars = 5;
        let live = weft_config::LiveConfig::fixed(config);
        let bus = std::sync::Arc::new(weft_shared::bus::MemoryBus::new(100));
        let queue = std::sync::Arc::new(weft_shared::queue::MemoryQueue::default());
        (Runs::new(store, bus, queue, live), dir)
    }

    #[tokio::test]
    async fn a_message_is_checked_before_anything_is_written() {
        let (runs, _dir) = runs().await;
        assert!(matches!(
            runs.check_text("  \n", false),
            Err(Refusal::Invalid(_))
        ));
        // Files alone are a message.
        assert!(runs.check_text("", true).is_ok());
        // Characters, not bytes: five CJK characters fit, six do not.
        assert!(runs.check_text("你好你好你", false).is_ok());
        let long = runs.check_text("你好你好你好", false).unwrap_err();
        assert!(matches!(long, Refusal::TooLong { limit: 5 }));
        assert_eq!(long.to_string(), "text is longer than 5 characters");
    }
}
