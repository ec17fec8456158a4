//! When a schedule fires: a trigger read in an IANA timezone (docs/schedules.md).
//!
//! Cron patterns are read by `croner` in the schedule's own timezone
//! (`chrono-tz` carries the tz database, so a container without
//! `/usr/share/zoneinfo` computes the same times). Its daylight-saving rules
//! are the ones Vixie cron made familiar: a fixed time that falls in the hour a
//! spring-forward skips fires once, at the first minute after the gap (02:30
//! in Europe/Berlin on the last Sunday of March fires at 03:00 CEST); a fixed
//! time in the hour a fall-back repeats fires once, on its first pass.
//! `every_secs` counts from an anchor (the schedule's creation), so its times
//! do not drift with the lateness of each fire. Every time here is Unix ms.

use std::str::FromStr;

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;

use crate::api::Trigger;

/// The shortest `every_secs`.
pub const MIN_EVERY_SECS: u64 = 60;

/// A trigger that parsed, in its timezone.
#[derive(Debug, Clone)]
pub struct Timing {
    rule: Rule,
    tz: Tz,
}

#[derive(Debug, Clone)]
enum Rule {
    Cron(Box<Cron>),
    Every { secs: u64, anchor_ms: i64 },
    At(i64),
}

/// What is wrong with a trigger or timezone, naming the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimingError {
    /// `trigger.cron`, `trigger.every_secs`, `trigger.at` or `timezone`.
    pub field: &'static str,
    pub message: String,
}

impl std::fmt::Display for TimingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// An IANA timezone name, checked ([`weft_config::parse_timezone`]).
pub fn parse_timezone(name: &str) -> Result<Tz, TimingError> {
    weft_config::parse_timezone(name).map_err(|message| TimingError {
        field: "timezone",
        message,
    })
}

impl Timing {
    /// Parse `trigger` in `timezone`; `anchor_ms` is where `every_secs` counts from.
    pub fn new(trigger: &Trigger, timezone: &str, anchor_ms: i64) -> Result<Timing, TimingError> {
        let tz = parse_timezone(timezone)?;
        let rule = match trigger {
            Trigger::Cron(pattern) => {
                let fields = pattern.split_whitespace().count();
                if fields != 5 {
                    return Err(TimingError {
                        field: "trigger.cron",
                        message: format!(
                            "{pattern:?} has {fields} fields; a pattern has five: minute hour day-of-month month day-of-week (e.g. \"0 9 * * 1-5\")"
                        ),
                    });
                }
                let cron = Cron::from_str(pattern).map_err(|e| TimingError {
                    field: "trigger.cron",
                    message: format!("{pattern:?}: {e}"),
                })?;
                Rule::Cron(Box::new(cron))
            }
            Trigger::EverySecs(secs) => {
                if *secs < MIN_EVERY_SECS {
                    return Err(TimingError {
                        field: "trigger.every_secs",
                        message: format!("must be at least {MIN_EVERY_SECS} (got {secs})"),
                    });
                }
                if *secs > 366 * 86_400 {
                    return Err(TimingError {
                        field: "trigger.every_secs",
                        message: "must be at most a year (31622400)".into(),
                    });
                }
                Rule::Every {
                    secs: *secs,
                    anchor_ms,
                }
            }
            Trigger::At(at) => {
                let t = DateTime::parse_from_rfc3339(at.trim()).map_err(|e| TimingError {
                    field: "trigger.at",
                    message: format!(
                        "{at:?} is not an RFC 3339 time ({e}); e.g. 2026-12-24T18:00:00+08:00"
                    ),
                })?;
                Rule::At(t.timestamp_millis())
            }
        };
        Ok(Timing { rule, tz })
    }

    /// The first fire time strictly after `after_ms`; `None` when there is
    /// none (an `at` already past).
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        match &self.rule {
            Rule::At(at) => (*at > after_ms).then_some(*at),
            Rule::Every { secs, anchor_ms } => {
                let period = *secs as i64 * 1000;
                if after_ms < *anchor_ms {
                    return Some(anchor_ms + period);
                }
                let n = (after_ms - anchor_ms) / period + 1;
                Some(anchor_ms + n * period)
            }
            Rule::Cron(cron) => {
                let start = self.tz.from_utc_datetime(&utc(after_ms)?.naive_utc());
                cron.find_next_occurrence(&start, false)
                    .ok()
                    .map(|t| t.timestamp_millis())
            }
        }
    }

    /// The latest fire time at or before `now_ms`, counting from `from_ms` (a
    /// due fire time): what a `run_once` misfire runs for. Walks at most
    /// `limit` times forward (a minutely cron down for a week is 10,080).
    pub fn latest_due(&self, from_ms: i64, now_ms: i64, limit: usize) -> i64 {
        if let Rule::Every { secs, anchor_ms } = &self.rule {
            let period = *secs as i64 * 1000;
            if now_ms >= *anchor_ms && from_ms >= *anchor_ms {
                return anchor_ms + (now_ms - anchor_ms) / period * period;
            }
        }
        let mut latest = from_ms;
        for _ in 0..limit {
            match self.next_after(latest) {
                Some(t) if t <= now_ms => latest = t,
                _ => break,
            }
        }
        latest
    }

    /// `ms` as RFC 3339 in the timing's timezone (what a person reads).
    pub fn local(&self, ms: i64) -> String {
        utc(ms)
            .map(|t| t.with_timezone(&self.tz).to_rfc3339())
            .unwrap_or_default()
    }

    /// The trigger in words.
    pub fn describe(&self) -> String {
        match &self.rule {
            // croner ends its sentence with a full stop; the timezone follows it here.
            Rule::Cron(cron) => format!(
                "{} ({})",
                cron.describe().trim_end_matches('.'),
                self.tz.name()
            ),
            Rule::Every { secs, .. } => format!("Every {}", every_words(*secs)),
            Rule::At(at) => format!("Once, at {}", self.local(*at)),
        }
    }
}

fn utc(ms: i64) -> Option<DateTime<Utc>> {
    Utc.timestamp_millis_opt(ms).single()
}

fn every_words(secs: u64) -> String {
    let unit = |n: u64, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
    match secs {
        s if s % 86_400 == 0 => unit(s / 86_400, "day"),
        s if s % 3_600 == 0 => unit(s / 3_600, "hour"),
        s if s % 60 == 0 => unit(s / 60, "minute"),
        s => unit(s, "second"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(rfc: &str) -> i64 {
        DateTime::parse_from_rfc3339(rfc)
            .unwrap()
            .timestamp_millis()
    }

    #[test]
    fn weekdays_at_nine_in_shanghai() {
        let t = Timing::new(&Trigger::Cron("0 9 * * 1-5".into()), "Asia/Shanghai", 0).unwrap();
        // Friday 2026-12-04 10:00 in Shanghai: next is Monday 09:00 (+08:00), 01:00 UTC.
        let next = t.next_after(ms("2026-12-04T10:00:00+08:00")).unwrap();
        assert_eq!(next, ms("2026-12-07T01:00:00Z"));
        assert_eq!(t.local(next), "2026-12-07T09:00:00+08:00");
        assert!(t.describe().contains("09:00"), "{}", t.describe());
        assert!(
            t.describe().ends_with(" (Asia/Shanghai)"),
            "{}",
            t.describe()
        );
        assert!(!t.describe().contains(". ("), "{}", t.describe());
    }

    #[test]
    fn spring_forward_runs_once_after_the_gap_and_fall_back_once() {
        let t = Timing::new(&Trigger::Cron("30 2 * * *".into()), "Europe/Berlin", 0).unwrap();
        // 2026-03-29: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist.
        let first = t.next_after(ms("2026-03-28T12:00:00+01:00")).unwrap();
        assert_eq!(t.local(first), "2026-03-29T03:00:00+02:00");
        let second = t.next_after(first).unwrap();
        assert_eq!(t.local(second), "2026-03-30T02:30:00+02:00");
        // 2026-10-25: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice.
        let first = t.next_after(ms("2026-10-24T12:00:00+02:00")).unwrap();
        assert_eq!(t.local(first), "2026-10-25T02:30:00+02:00");
        let second = t.next_after(first).unwrap();
        assert_eq!(t.local(second), "2026-10-26T02:30:00+01:00");
    }

    #[test]
    fn every_counts_from_its_anchor_and_at_fires_once() {
        let t = Timing::new(&Trigger::EverySecs(60), "UTC", 1_000).unwrap();
        assert_eq!(t.next_after(1_000), Some(61_000));
        assert_eq!(t.next_after(61_500), Some(121_000));
        assert_eq!(t.latest_due(61_000, 200_000, 100), 181_000);
        let at = Timing::new(&Trigger::At("2026-12-24T18:00:00+08:00".into()), "UTC", 0).unwrap();
        let when = ms("2026-12-24T10:00:00Z");
        assert_eq!(at.next_after(when - 1), Some(when));
        assert_eq!(at.next_after(when), None);
        let minutely = Timing::new(&Trigger::Cron("* * * * *".into()), "UTC", 0).unwrap();
        assert_eq!(minutely.latest_due(60_000, 600_500, 10_000), 600_000);
        assert_eq!(minutely.latest_due(60_000, 600_500, 3), 240_000);
    }

    #[test]
    fn bad_input_names_its_field() {
        let field = |t: Trigger, tz: &str| Timing::new(&t, tz, 0).unwrap_err().field;
        assert_eq!(
            field(Trigger::Cron("61 9 * * *".into()), "UTC"),
            "trigger.cron"
        );
        assert_eq!(
            field(Trigger::Cron("0 0 9 * * *".into()), "UTC"),
            "trigger.cron"
        );
        assert_eq!(field(Trigger::EverySecs(59), "UTC"), "trigger.every_secs");
        assert_eq!(field(Trigger::At("tomorrow".into()), "UTC"), "trigger.at");
        assert_eq!(field(Trigger::EverySecs(60), "Mars/Olympus"), "timezone");
    }
}
