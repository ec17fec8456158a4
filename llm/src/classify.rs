//! Turning an HTTP failure into [`LlmError`], shared by every HTTP provider and the
//! in-process mock so that `@mock.fail 429` behaves exactly like a real 429.
//!
//! The rules are the official SDKs' retry contract (see `llm-wire.md` §1.3):
//! `x-should-retry` wins when present; otherwise 408, 409, 429 and every 5xx are
//! transient. The delay hint comes from `retry-after-ms`, else `retry-after`
//! (seconds, fractional allowed, or an HTTP date). Whether a hint is too long to
//! honour is the retry policy's call ([`crate::retry`]), not the classifier's.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

use crate::LlmError;

/// Classify a non-success HTTP status. `reason` should already carry the provider's
/// error message; the status is prefixed here so logs and `retrying` events show it.
pub fn classify_status(
    status: u16,
    reason: &str,
    retry_after: Option<Duration>,
    should_retry: Option<bool>,
) -> LlmError {
    let transient = should_retry.unwrap_or(matches!(status, 408 | 409 | 429) || status >= 500);
    let reason = format!("HTTP {status}: {reason}");
    if transient {
        LlmError::Transient {
            reason,
            retry_after,
        }
    } else {
        LlmError::Fatal {
            reason,
            status: Some(status),
        }
    }
}

/// Classify from a response's status and headers.
pub(crate) fn classify_response(status: u16, headers: &HeaderMap, reason: &str) -> LlmError {
    classify_status(
        status,
        reason,
        parse_retry_after(headers),
        should_retry(headers),
    )
}

/// The server's retry hint: `retry-after-ms`, else `retry-after` as seconds or HTTP date.
pub fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return non_negative_secs(ms / 1000.0);
    }
    let value = header("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return non_negative_secs(secs);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

fn non_negative_secs(secs: f64) -> Option<Duration> {
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)))
}

fn should_retry(headers: &HeaderMap) -> Option<bool> {
    match headers.get("x-should-retry")?.to_str().ok()?.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

impl LlmError {
    pub fn is_transient(&self) -> bool {
        matches!(self, LlmError::Transient { .. })
    }

    /// The server's retry hint, for transient errors that carried one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Transient { retry_after, .. } => *retry_after,
            LlmError::Fatal { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn statuses_follow_the_sdk_contract() {
        for status in [408, 409, 429, 500, 502, 503, 529] {
            assert!(
                classify_status(status, "x", None, None).is_transient(),
                "{status}"
            );
        }
        for status in [400, 401, 403, 404, 413, 422] {
            let err = classify_status(status, "x", None, None);
            assert!(matches!(err, LlmError::Fatal { status: Some(s), .. } if s == status));
        }
    }

    #[test]
    fn x_should_retry_wins() {
        let h = headers(&[("x-should-retry", "false")]);
        assert!(!classify_response(503, &h, "busy").is_transient());
        let h = headers(&[("x-should-retry", "true")]);
        assert!(classify_response(400, &h, "odd").is_transient());
    }

    #[test]
    fn retry_after_ms_beats_seconds() {
        let h = headers(&[("retry-after-ms", "1500"), ("retry-after", "9")]);
        assert_eq!(parse_retry_after(&h), Some(Duration::from_millis(1500)));
        let h = headers(&[("retry-after", "2.5")]);
        assert_eq!(parse_retry_after(&h), Some(Duration::from_millis(2500)));
        assert_eq!(
            parse_retry_after(&headers(&[("retry-after", "soon")])),
            None
        );
    }

    #[test]
    fn retry_after_http_date_is_relative_to_now() {
        let at = SystemTime::now() + Duration::from_secs(30);
        let h = headers(&[("retry-after", &httpdate::fmt_http_date(at))]);
        let d = parse_retry_after(&h).unwrap();
        assert!(
            d <= Duration::from_secs(30) && d >= Duration::from_secs(25),
            "{d:?}"
        );
    }
}
