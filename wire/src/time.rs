//! Wall-clock helpers. The database stores unix milliseconds (portable across
//! Postgres and SQLite); the API renders RFC 3339.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// RFC 3339 (UTC, millisecond precision) for a unix-ms timestamp.
pub fn rfc3339(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    ::time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| {
            t.format(&::time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

/// A long stretch in whole minutes, rounded down, as people say it: `3 min`,
/// `59 min`, `1 h`, `1 h 5 min` — `min` and `h` are the words to use (the Lark
/// card says them in Chinese too). How long a run is still working.
pub fn whole_minutes(ms: u64, min: &str, h: &str) -> String {
    let minutes = ms / 60_000;
    match (minutes / 60, minutes % 60) {
        (0, m) => format!("{m} {min}"),
        (hours, 0) => format!("{hours} {h}"),
        (hours, m) => format!("{hours} {h} {m} {min}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn whole_minutes_round_down_and_turn_into_hours() {
        let said = |ms| super::whole_minutes(ms, "min", "h");
        assert_eq!(said(180_000), "3 min");
        assert_eq!(said(239_999), "3 min");
        assert_eq!(said(12 * 60_000 + 59_000), "12 min");
        assert_eq!(said(60 * 60_000), "1 h");
        assert_eq!(said(65 * 60_000 + 30_000), "1 h 5 min");
        assert_eq!(
            super::whole_minutes(125 * 60_000, "分钟", "小时"),
            "2 小时 5 分钟"
        );
    }

    #[test]
    fn renders_rfc3339() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(
            super::rfc3339(1_764_460_000_123),
            "2025-11-29T23:46:40.123Z"
        );
    }
}
