//! weft-client: the terminal client of Weft, as a library the `weft` binary calls.
//!
//! It speaks only HTTP + SSE to a gateway (docs/protocol.md) using the wire types
//! of `weft-shared`, so it works the same against `weft up` on this laptop and a
//! gateway on another continent. Layers, bottom up:
//!
//! * [`config`] — where the gateway and token come from (flags, env, the 0600 file).
//! * [`api`] — typed requests and the error mapping people can act on.
//! * [`clean`] — every string an answer or event carries, stripped of terminal
//!   escapes and control characters as it is decoded.
//! * [`stream`] — one run's event stream with automatic re-attach (`Last-Event-ID`),
//!   deduplicated by `seq`, so a dropped connection never repeats or loses output.
//! * [`reply`] — folds events into a reply, honouring `retrying` and resumed attempts.
//! * [`attach`] — files named with `-f` or `/attach`, checked then, read when sent.
//! * [`oneshot`], [`repl`], [`commands`] — the three ways a person uses it;
//!   [`knowledge`], [`schedules`] and [`channels`] are command families of
//!   their own.
//!
//! Nothing here touches a database or starts server machinery; the binary runs it
//! on a current-thread tokio runtime.

pub mod api;
pub mod attach;
pub mod channels;
pub mod clean;
pub mod commands;
pub mod config;
pub mod error;
pub mod interrupt;
pub mod knowledge;
pub(crate) mod listing;
pub mod oneshot;
pub mod render;
pub mod repl;
pub mod reply;
pub mod schedules;
pub mod session;
pub mod stream;
pub(crate) mod when;

pub use error::ClientError;

/// Exit codes of the client commands (the contract).
pub mod exit {
    pub const OK: u8 = 0;
    /// The run failed or was cancelled (`weft knowledge add`: a file was
    /// refused or could not be indexed).
    pub const RUN_FAILED: u8 = 1;
    pub const USAGE: u8 = 2;
    /// Authentication or connection problem.
    pub const CONNECTION: u8 = 3;
}
