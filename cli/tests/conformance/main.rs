//! The conformance suite: every test runs against both backends — embedded
//! (SQLite, in-process queue and bus) and distributed (`weft serve` + `weft worker`
//! processes on Postgres and Redis, a fresh database and key prefix per test).

mod harness;
mod pgproxy;
mod sse;

mod access;
mod agents;
mod api;
mod approvals;
mod attachments;
mod channels;
mod crash;
mod delegation;
mod drain;
mod hardening;
mod hostile;
mod input;
mod knowledge;
mod lark;
mod lifecycle;
mod limits;
mod mcp;
mod memory;
mod multitask;
mod otel;
mod plans;
mod providers;
mod questions;
mod reload;
mod schedules;
mod security;
mod signin;
mod streaming;
mod todos;
mod tool_calls;
mod tools;
mod transport;
mod turns;

/// Generate `name::embedded` and `name::distributed` tests from `async fn name(Backend)`.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn embedded() {
                super::$name($crate::harness::Backend::Embedded).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn distributed() {
                super::$name($crate::harness::Backend::Distributed).await
            }
        }
    )*};
}
