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

#[cfg(test)]
mod tests {
    #[test]
    fn renders_rfc3339() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(
            super::rfc3339(1_764_460_000_123),
            "2025-11-29T23:46:40.123Z"
        );
    }
}
