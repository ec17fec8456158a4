//! The `Store` called directly, on both databases: every scenario runs once on
//! SQLite (embedded mode) and once on Postgres (distributed mode), each on a
//! fresh database of its own (`harness`). One module per area of the store.

mod harness;

mod agents;
mod approvals;
mod attachments;
mod channels;
mod connections;
mod delegations;
mod jobs;
mod knowledge;
mod lark;
mod lark_inbox;
mod limits;
mod memories;
mod messages;
mod plans;
mod purge;
mod questions;
mod reaper;
mod runs;
mod schedules;
mod send;
mod sessions;
mod tokens;
mod users;
mod vectors;
