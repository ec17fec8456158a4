//! Credentials: argon2id password hashes and API tokens.
//!
//! Tokens are 32 random bytes, shown once as `weft_<base62>` (the prefix makes a
//! leaked token greppable), and stored only as their SHA-256, so a database leak
//! yields nothing usable. Password hashing is deliberately slow: callers run it on
//! a blocking thread.

use argon2::Argon2;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use rand::Rng;
use sha2::{Digest, Sha256};

pub const TOKEN_PREFIX: &str = "weft_";
/// The longest username, in characters (at creation and at sign-in).
pub const MAX_USERNAME_CHARS: usize = 64;

/// Why a name may not become a new username. Usernames are what people read to
/// tell accounts apart (the admin list, approvals "decided by …", logs), so a
/// new one is plain lowercase ASCII: `a-z 0-9 . _ - @`, starting with a letter or
/// a digit. That leaves no room for look-alikes — `аdmin` with a Cyrillic `а`,
/// fullwidth `ａｄｍｉｎ`, zero-width joiners, right-to-left overrides, mixed
/// scripts, `Admin` next to `admin`. Names already stored are left as they are
/// (and still sign in); only new ones are checked.
pub fn check_new_username(name: &str) -> Result<(), String> {
    const RULE: &str = "usernames are 1 to 64 lowercase ASCII letters, digits and . _ - @, starting with a letter or digit";
    let count = name.chars().count();
    if !(1..=MAX_USERNAME_CHARS).contains(&count) {
        return Err(format!("{RULE}; this one has {count} characters"));
    }
    if let Some(c) = name.chars().find(|c| !c.is_ascii()) {
        return Err(format!(
            "{RULE}; U+{:04X} is not ASCII (a look-alike, invisible or direction character is never allowed)",
            c as u32
        ));
    }
    if name.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(format!(
            "{RULE}; use lowercase ({:?})",
            name.to_ascii_lowercase()
        ));
    }
    if let Some(c) = name.chars().find(|c| {
        !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-' | '@'))
    }) {
        return Err(format!("{RULE}; {c:?} is not allowed"));
    }
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(format!("{RULE}; it starts with {:?}", &name[..1]));
    }
    Ok(())
}

/// Why a Lark `open_id` may not name an auto-created user (`lark:<open_id>`): Lark's
/// ids are ASCII letters, digits, `_` and `-` (`ou_7d8a6e…`); anything else
/// is not one, and must not become a username.
pub fn check_lark_open_id(open_id: &str) -> Result<(), String> {
    let ok = (1..=MAX_USERNAME_CHARS - "lark:".len()).contains(&open_id.len())
        && open_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "a Lark open_id is 1 to {} ASCII letters, digits, _ and -; {open_id:?} is not one",
            MAX_USERNAME_CHARS - "lark:".len()
        ))
    }
}
const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// A fresh secret token (`weft_` + 43 base62 characters ≈ 256 bits).
pub fn new_token() -> String {
    let mut rng = rand::rng();
    let body: String = (0..43)
        .map(|_| BASE62[rng.random_range(0..BASE62.len())] as char)
        .collect();
    format!("{TOKEN_PREFIX}{body}")
}

/// What the database stores for a token.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

pub fn hash_password(password: &str) -> anyhow::Result<String> {
    let hash = Argon2::default()
        .hash_password(password.as_bytes())
        .map_err(|e| anyhow::anyhow!("hashing password: {e}"))?;
    Ok(hash.to_string())
}

pub fn verify_password(password: &str, phc: &str) -> bool {
    Argon2::default()
        .verify_password(password.as_bytes(), phc)
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_usernames_are_plain_lowercase_ascii() {
        for ok in [
            "alice",
            "bob.smith",
            "a_b-c",
            "ana@example.com",
            "admin2",
            "7of9",
        ] {
            assert_eq!(check_new_username(ok), Ok(()), "{ok}");
        }
        for bad in [
            "\u{0430}dmin",  // Cyrillic а
            "ａｄｍｉｎ",    // fullwidth
            "ad\u{200D}min", // zero-width joiner
            "admin\u{200B}", // zero-width space
            "\u{202E}nimda", // right-to-left override
            "admіn",         // Ukrainian і
            "Admin",
            "ad min",
            "lark:ou_x", // only Lark's auto-created users have the prefix
            ".admin",
            "-admin",
            "",
        ] {
            let err = check_new_username(bad).unwrap_err();
            assert!(err.contains("lowercase ASCII"), "{bad:?}: {err}");
        }
        assert!(check_new_username(&"a".repeat(65)).is_err());
        assert!(
            check_new_username("\u{0430}dmin")
                .unwrap_err()
                .contains("U+0430")
        );
    }

    #[test]
    fn lark_open_ids_are_ascii_ids() {
        assert_eq!(
            check_lark_open_id("ou_7d8a6e6df7621556ce0d21922b676706"),
            Ok(())
        );
        for bad in [
            "",
            "ou_\u{0430}",
            "ou x",
            "ou:x",
            "ou_\u{202E}",
            &"o".repeat(60),
        ] {
            assert!(check_lark_open_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn tokens_are_prefixed_unique_and_hashed() {
        let a = new_token();
        let b = new_token();
        assert!(a.starts_with(TOKEN_PREFIX));
        assert_eq!(a.len(), 48);
        assert_ne!(a, b);
        assert_eq!(token_hash(&a), token_hash(&a));
        assert_ne!(token_hash(&a), token_hash(&b));
        assert!(!token_hash(&a).contains(&a));
    }

    #[test]
    fn passwords_verify() {
        let h = hash_password("correct horse").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse", &h));
        assert!(!verify_password("wrong", &h));
        assert!(!verify_password("x", "not a hash"));
    }
}
