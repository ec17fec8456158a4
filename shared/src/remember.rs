//! What may be remembered (docs/memory.md): a memory's text is 1–2,000
//! characters and never a secret. Keys, passwords and tokens are refused by
//! pattern wherever a memory is written — the `remember` tool, the API, the
//! extraction job — so neither a person pasting one nor a model copying one
//! out of a conversation stores it.

use std::sync::LazyLock;

use regex::RegexSet;

use weft_config::MAX_MEMORY_CHARS;

/// Why a text cannot be a memory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotRemembered {
    #[error("a memory needs some text")]
    Empty,
    #[error("a memory is at most {MAX_MEMORY_CHARS} characters (this one is {0})")]
    TooLong(usize),
    #[error("that looks like a secret ({0}); secrets are never remembered")]
    Secret(&'static str),
}

/// What each pattern finds, in the order of [`PATTERNS`].
const KINDS: &[&str] = &[
    "an API key",
    "an API key",
    "an access key",
    "a GitHub token",
    "a Slack token",
    "a private key",
    "a JSON web token",
    "a bearer token",
    "a password",
    "a password",
    "a key or token",
    "a connection string with a password",
];

static PATTERNS: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new([
        r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}",
        r"\b(?:AIza[0-9A-Za-z_-]{30,}|xai-[A-Za-z0-9]{20,})",
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
        r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
        r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{16,}",
        r"(?i)\b(?:password|passwd|pwd|passcode)\b\s*(?:is|[:=：])\s*\S{4,}",
        r"(?:密码|口令)\s*(?:是|为|[:=：])\s*\S{4,}",
        r"(?i)\b(?:api[_ -]?key|secret|token|access[_ -]?key)\b\s*(?:is|[:=：])\s*[A-Za-z0-9._~+/=-]{12,}",
        r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@",
    ])
    .expect("secret patterns compile")
});

/// `text` trimmed, when it may be a memory.
pub fn check(text: &str) -> Result<&str, NotRemembered> {
    let text = text.trim();
    if text.is_empty() {
        return Err(NotRemembered::Empty);
    }
    let chars = text.chars().count();
    if chars > MAX_MEMORY_CHARS {
        return Err(NotRemembered::TooLong(chars));
    }
    if let Some(i) = PATTERNS.matches(text).iter().next() {
        return Err(NotRemembered::Secret(KINDS[i]));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_refused_and_ordinary_facts_kept() {
        for secret in [
            "my key is sk-proj-abcdefghijklmnopqrstuvwx",
            "anthropic sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAA",
            "AWS AKIAIOSFODNN7EXAMPLE for the staging account",
            "ghp_0123456789abcdefghijklmnopqrstuvwxyz",
            "xoxb-1234567890-abcdefghij",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=",
            "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "use Authorization: Bearer abcdefghijklmnop1234",
            "my password is hunter22",
            "Password: correct-horse",
            "我的密码是 zhang1234",
            "the api key: 0123456789abcdefABCD",
            "postgres://app:s3cret@db.internal/app",
        ] {
            assert!(
                matches!(check(secret), Err(NotRemembered::Secret(_))),
                "{secret:?} was kept"
            );
        }
        for fact in [
            "prefers answers in Chinese",
            "works on the payments team; their manager is Li Wei",
            "asked to reset their password last week",
            "我在支付团队工作",
            "the token budget for summaries is 600",
            "deploys with `kubectl apply -k deploy/`",
            "https://example.com/docs is the team wiki",
        ] {
            assert_eq!(check(fact), Ok(fact), "{fact:?} was refused");
        }
    }

    #[test]
    fn length_is_counted_in_characters() {
        assert_eq!(check("   "), Err(NotRemembered::Empty));
        assert_eq!(
            check(&"记".repeat(MAX_MEMORY_CHARS)).map(|t| t.chars().count()),
            Ok(MAX_MEMORY_CHARS)
        );
        assert_eq!(
            check(&"记".repeat(MAX_MEMORY_CHARS + 1)),
            Err(NotRemembered::TooLong(MAX_MEMORY_CHARS + 1))
        );
    }
}
