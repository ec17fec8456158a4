//! REST errors and what the caller should do about them.
//!
//! Callers branch on [`ErrorClass`], not on raw codes: retry later, fall back to a
//! different shape of message, or give up. The codes come from the Go SDK
//! (`core/constants.go`) and the official node-sdk channel module (`errors.ts`).

/// Tenant / app / user access token invalid: refresh the token and retry once.
pub const TOKEN_INVALID_CODES: [i64; 3] = [99991663, 99991664, 99991671];
/// "Access denied. One of the following scopes is required: […]": the app
/// lacks a permission the call needs (a tenant admin grants it).
pub const CODE_SCOPE_MISSING: i64 = 99991672;
/// "request trigger frequency limit", sent with HTTP 429.
pub const CODE_RATE_LIMITED: i64 = 99991400;
/// The message replied to was recalled or deleted.
pub const REPLY_TARGET_GONE_CODES: [i64; 2] = [230020, 230017];
/// The content was rejected as malformed for its `msg_type`.
pub const FORMAT_ERROR_CODES: [i64; 2] = [230001, 230002];
/// "Failed to create card content": too many tables, element limits, etc.
pub const CODE_CARD_CONTENT_FAILED: i64 = 230099;
/// A CardKit update whose `sequence` is not above the card's last one
/// (inferred: the reference states the rule, not its code; the fake answers it).
pub const CODE_CARDKIT_SEQUENCE: i64 = 300317;

#[derive(Debug, thiserror::Error)]
pub enum LarkError {
    #[error("request to Lark failed: {0}")]
    Transport(#[from] reqwest::Error),
    #[error("Lark answered HTTP {status} code {code}: {msg}")]
    Api { status: u16, code: i64, msg: String },
    #[error("Lark answered HTTP {status} with an unreadable body: {detail}")]
    Decode { status: u16, detail: String },
    /// A downloaded file is larger than the caller takes; the rest was not read.
    #[error("the file is larger than the {limit} bytes accepted")]
    TooLarge { limit: u64 },
}

/// What to do about an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Transient (rate limit, server error, network): retry with backoff.
    Retryable,
    /// The request shape was refused; send something else instead.
    Fallback(Fallback),
    /// Retrying or reshaping will not help (permissions, validation, not found).
    Fatal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// Reply target recalled or deleted: send a new message to the chat instead.
    ReplyTargetGone,
    /// Content format refused: fall back from post/card to plain text.
    FormatRejected,
    /// Card content refused (230099, e.g. too many tables): simplify or split it.
    CardRejected,
}

impl LarkError {
    /// The Lark `code`, when the server sent one.
    pub fn code(&self) -> Option<i64> {
        match self {
            Self::Api { code, .. } => Some(*code),
            _ => None,
        }
    }

    pub fn class(&self) -> ErrorClass {
        match self {
            Self::Transport(_) => ErrorClass::Retryable,
            Self::Decode { status, .. } if *status >= 500 || *status == 429 => {
                ErrorClass::Retryable
            }
            Self::Decode { .. } | Self::TooLarge { .. } => ErrorClass::Fatal,
            Self::Api { status, code, .. } => classify(*status, *code),
        }
    }
}

fn classify(status: u16, code: i64) -> ErrorClass {
    if status == 429 || code == CODE_RATE_LIMITED {
        return ErrorClass::Retryable;
    }
    if REPLY_TARGET_GONE_CODES.contains(&code) {
        return ErrorClass::Fallback(Fallback::ReplyTargetGone);
    }
    if FORMAT_ERROR_CODES.contains(&code) {
        return ErrorClass::Fallback(Fallback::FormatRejected);
    }
    if code == CODE_CARD_CONTENT_FAILED {
        return ErrorClass::Fallback(Fallback::CardRejected);
    }
    // A token still refused after the refresh-and-retry may be a propagation race.
    if TOKEN_INVALID_CODES.contains(&code) || status >= 500 {
        return ErrorClass::Retryable;
    }
    ErrorClass::Fatal
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(status: u16, code: i64) -> LarkError {
        LarkError::Api {
            status,
            code,
            msg: String::new(),
        }
    }

    #[test]
    fn classes() {
        assert_eq!(api(429, 99991400).class(), ErrorClass::Retryable);
        assert_eq!(
            api(400, 230020).class(),
            ErrorClass::Fallback(Fallback::ReplyTargetGone)
        );
        assert_eq!(
            api(400, 230099).class(),
            ErrorClass::Fallback(Fallback::CardRejected)
        );
        assert_eq!(
            api(400, 230001).class(),
            ErrorClass::Fallback(Fallback::FormatRejected)
        );
        assert_eq!(api(400, 99992402).class(), ErrorClass::Fatal);
        assert_eq!(api(403, 99991401).class(), ErrorClass::Fatal);
        assert_eq!(api(503, 1).class(), ErrorClass::Retryable);
    }
}
