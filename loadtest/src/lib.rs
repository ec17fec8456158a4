//! weft-loadtest: the tools that measure Weft and the fakes it is measured against.
//!
//! * [`mock_llm`] — an OpenAI- and Anthropic-compatible HTTP server scripted by the
//!   same `@mock.*` directives as the in-process `mock` provider, with server-wide
//!   latency, load-factor and fault-injection knobs.
//! * [`scenario`] / [`runner`] — virtual users that sign in, create sessions, send
//!   messages and read the run's SSE exactly as the web UI does ([`turn`]), and
//!   the scenarios of `weft-loadtest run`.
//! * [`stack`] / [`procs`] — the processes a benchmark starts itself, their chaos
//!   levers, and their memory and CPU read from `/proc`.
//! * [`langgraph`] — the same loop against LangGraph's server, for the comparison.
//! * [`bench`] — the standard suite in both modes, written to `BENCHMARKS.md`.
//! * [`saturate`] — what one Postgres and one Redis carry, driven through Weft's
//!   own store and bus code with no HTTP or model in the way.

pub mod bench;
pub mod client;
pub mod knowledge;
pub mod langgraph;
pub mod mock_llm;
pub mod procs;
pub mod report;
pub mod runner;
pub mod saturate;
pub mod scenario;
pub mod sse;
pub mod stack;
pub mod stats;
pub mod turn;
