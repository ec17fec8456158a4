//! The Lark bot end to end: real `weft` processes (embedded, or gateways and
//! workers on Postgres and Redis) against `weft-lark`'s fake Lark server, which
//! speaks the real long-connection and REST protocols (validated against the
//! official `lark-oapi` SDK in the lark crate's tests). Users are simulated by
//! pushing `im.message.receive_v1` events and clicking card buttons
//! (`card.action.trigger`); what they would see is read back from the messages
//! the fake holds (cards as last patched or answered, CardKit entities as last
//! updated) and its records.

mod access;
mod approvals;
mod attachments;
mod channels;
mod control;
mod durability;
mod flood;
mod gestures;
mod knowledge;
mod language;
mod memory;
mod order;
mod overdue;
mod plans;
mod questions;
mod replies;
mod resilience;
mod schedules;
mod speakers;
mod todos;
mod traces;
mod world;
