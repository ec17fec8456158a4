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
