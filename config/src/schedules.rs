//! `[schedules]`: prompts agents run on their own (docs/schedules.md).

use serde::{Deserialize, Serialize};

/// Schedule settings (`[schedules]`, env `WEFT_SCHEDULES__<KEY>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct SchedulesConfig {
    /// Schedules one person may have; 0 turns the limit off.
    pub max_per_user: u64,
    /// The timezone of a schedule made without one (IANA).
    pub default_timezone: String,
    /// How often an idle worker looks for due schedules, in ms (a schedule
    /// made or changed is seen on the next look). Fire lateness is at most
    /// about this.
    pub poll_ms: u64,
    /// Fire transactions one worker process runs at once: each a batch of up
    /// to 32 fires into new sessions, or one fire into a chosen session
    /// (batches go one at a time on SQLite, whose one writer queues them).
    pub fire_concurrency: usize,
    /// Channels (notification destinations) one person may have; 0 turns
    /// the limit off.
    pub max_channels_per_user: u64,
    /// Time for one delivery's try (a webhook's whole POST, a Lark send), in ms.
    pub delivery_timeout_ms: u64,
}

impl Default for SchedulesConfig {
    fn default() -> Self {
        SchedulesConfig {
            max_per_user: 20,
            default_timezone: "UTC".into(),
            poll_ms: 1000,
            fire_concurrency: 8,
            max_channels_per_user: 20,
            delivery_timeout_ms: 10_000,
        }
    }
}

impl SchedulesConfig {
    pub fn validate(&self) -> Result<(), String> {
        crate::parse_timezone(&self.default_timezone)
            .map_err(|e| format!("schedules.default_timezone: {e}"))?;
        if !(100..=60_000).contains(&self.poll_ms) {
            return Err("schedules.poll_ms must be between 100 and 60000".into());
        }
        if !(1..=64).contains(&self.fire_concurrency) {
            return Err("schedules.fire_concurrency must be between 1 and 64".into());
        }
        if !(1_000..=120_000).contains(&self.delivery_timeout_ms) {
            return Err("schedules.delivery_timeout_ms must be between 1000 and 120000".into());
        }
        Ok(())
    }
}
