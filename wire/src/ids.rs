//! Identifiers. Every id is a UUIDv7 rendered as lowercase hex with dashes: time
//! ordered (so `order by id` is creation order) and portable as TEXT in both
//! databases. Ids from clients are parsed at the boundary (`parse`) so a malformed
//! id is a 404 before any query runs.

use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($name:ident) => {
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            pub fn new() -> Self {
                Self(uuid::Uuid::now_v7().to_string())
            }
            /// Accepts only a canonical UUID; anything else is not an id of ours.
            pub fn parse(s: &str) -> Option<Self> {
                let u = uuid::Uuid::try_parse(s).ok()?;
                Some(Self(u.to_string()))
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
            /// The last 8 characters, for humans (CLI, logs).
            pub fn short(&self) -> &str {
                &self.0[self.0.len().saturating_sub(8)..]
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(UserId);
id_type!(TokenId);
id_type!(SessionId);
id_type!(RunId);
id_type!(MessageId);
id_type!(FileId);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_rejects_garbage_and_normalises() {
        assert!(RunId::parse("nope").is_none());
        assert!(RunId::parse("'; drop table runs; --").is_none());
        let id = RunId::new();
        assert_eq!(RunId::parse(&id.0.to_uppercase()), Some(id.clone()));
        assert_eq!(id.short().len(), 8);
    }

    #[test]
    fn ids_are_time_ordered() {
        let a = MessageId::new();
        let b = MessageId::new();
        assert!(a < b);
    }
}
