//! weft-shared: the infrastructure the servers share — the two handles besides
//! the store, [`queue::Queue`] (run jobs) and [`bus::Bus`] (run events and
//! control signals), blobs, telemetry, passwords and tokens, retries — and the
//! wire types re-exported from `weft-wire` (which clients use alone).
//! Configuration is `weft-config`, the system of record `weft-store`; both sit
//! beside this crate (config below it, the store above it).
//!
//! Each handle has an embedded implementation (in-process) and a distributed
//! one (Redis); callers never know which they hold.

pub mod auth;
pub mod blobs;
pub mod bus;
pub mod login_limit;
pub mod memory_room;
pub mod notice;
pub mod private_fs;
pub mod prompt;
pub mod queue;
pub mod remember;
pub mod retry;
pub mod schedule_time;
pub mod skills;
pub mod telemetry;

/// Version reported by `/health` and the CLI.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub use weft_wire::{api, builtin_agent, event, fold, ids, job, states, time};
