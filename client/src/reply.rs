//! A reply folded from its run's events: the protocol's one fold,
//! [`weft_wire::fold`] (the Lark card and the load tester use it too; the web's
//! reducer follows the same table of cases). [`Reply::apply`] returns the
//! [`Change`]s each event made, which the REPL and the one-shot render live.

pub use weft_wire::fold::{Change, Outcome, RunFold as Reply, ToolCall};
