//! weft-shared: everything the gateway, the worker, the CLI and the load tester must
//! agree on — configuration, the wire types (re-exported from `weft-wire`, which
//! clients use alone), and the three infrastructure handles: [`store::Store`] (the system of record),
//! [`queue::Queue`] (run jobs) and [`bus::Bus`] (run events and control signals).
//!
//! Each handle has an embedded implementation (SQLite / in-process) and a
//! distributed one (Postgres / Redis); callers never know which they hold.

pub mod auth;
pub mod blobs;
pub mod bus;
pub mod config;
pub mod login_limit;
pub mod memory_room;
pub mod notice;
pub mod private_fs;
pub mod prompt;
pub mod queue;
pub mod reload;
pub mod remember;
pub mod retry;
pub mod schedule_time;
pub mod skills;
pub mod store;
pub mod telemetry;

/// Version reported by `/health` and the CLI.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub use weft_wire::{api, builtin_agent, event, fold, ids, job, states, time};
