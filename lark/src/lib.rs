//! `weft-lark`: everything Weft needs to speak Lark (Feishu), and a fake Lark to
//! test it against.
//!
//! * [`ws`] — the long connection: discovery, proto2 frames, ping/pong, watchdog,
//!   fragment reassembly, immediate acks, reconnect.
//! * [`rest`] — the OpenAPI client: tenant token, messages, reactions, CardKit, and
//!   error classification.
//! * [`content`] — what a message says: its text and the files to fetch, by kind.
//! * [`sender`] — rate-aware, coalescing card updates within Lark's limits.
//! * [`card`] — Card JSON 2.0 builders and the markdown sanitiser.
//! * [`text`] — what the bot says, in Chinese and English, and which of the two
//!   a chat gets.
//! * [`fake`] — a Lark server that speaks the real wire protocol, for tests and by
//!   hand (`weft-lark-fake`).
//!
//! The crate knows nothing about Weft runs or sessions; the gateway and worker
//! build the bot on top of it.

pub mod card;
pub mod content;
pub mod credentials;
pub mod event;
pub mod fake;
pub mod frame;
pub mod rest;
pub mod sender;
pub mod text;
pub mod ws;

pub use credentials::{AppCredentials, AppSecret};
