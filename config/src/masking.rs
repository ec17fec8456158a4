//! What admins see of the config: secrets masked (`GET /v1/admin/settings`,
//! the change list of a reload), and a mask sent back put back to the secret
//! it stands for.

use serde_json::Value;

use super::Config;
use super::live::to_value;

/// Keys whose values are never shown (a change says only `changed`).
const SECRET_KEYS: &[&str] = &[
    "api_key",
    "app_secret",
    "admin_token",
    "database_url",
    "redis_url",
    "secret_access_key",
    "smtp_url",
    "password",
    "token",
    "env",
    "headers",
];

pub(super) fn is_secret(key: &str) -> bool {
    key.rsplit('.')
        .next()
        .is_some_and(|last| SECRET_KEYS.contains(&last))
}

/// `config` as admins may see it: every secret replaced by [`MASK`] (an
/// empty one stays empty, so "not set" still shows).
pub fn masked(config: &Config) -> Value {
    let mut v = to_value(config);
    mask(&mut v, "");
    v
}

/// What a secret shows as; sent back unchanged, it means "keep the current one".
pub const MASK: &str = "••••••";

fn mask(v: &mut Value, key: &str) {
    if is_secret(key) {
        match v {
            Value::String(s) if !s.is_empty() => *s = MASK.to_owned(),
            Value::Object(map) => map.values_mut().for_each(|x| {
                if let Value::String(s) = x {
                    *s = MASK.to_owned();
                }
            }),
            _ => {}
        }
        return;
    }
    match v {
        Value::Object(map) => {
            for (k, x) in map.iter_mut() {
                mask(x, k);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|x| mask(x, key)),
        _ => {}
    }
}

/// `edited` with every [`MASK`] put back to the secret it stands for in
/// `current` (the same path; list items matched by their `id` or `name`).
pub fn unmask(edited: &mut Value, current: &Value) {
    match (edited, current) {
        (Value::String(s), Value::String(now)) if s == MASK => *s = now.clone(),
        (Value::Object(map), Value::Object(now)) => {
            for (k, x) in map.iter_mut() {
                if let Some(n) = now.get(k) {
                    unmask(x, n);
                }
            }
        }
        (Value::Array(items), Value::Array(now)) => {
            for item in items.iter_mut() {
                let key = ["id", "name"]
                    .into_iter()
                    .find_map(|k| item[k].as_str().map(|v| (k, v.to_owned())));
                let matched = key.and_then(|(k, v)| now.iter().find(|n| n[k] == v.as_str()));
                if let Some(n) = matched {
                    unmask(item, n);
                }
            }
        }
        _ => {}
    }
}
