//! The test suites' one polling loop, shared by file (`#[path]`) between the
//! conformance suite (`cli/tests/conformance/harness.rs`) and the worker's crash
//! tests (`worker/tests/crash/rig.rs`): a test never sleeps to synchronise, it
//! waits for a state with a deadline. Not a test target itself (a `tests/`
//! subdirectory without `main.rs`).

use std::time::{Duration, Instant};

/// How often [`eventually`] asks.
pub const POLL: Duration = Duration::from_millis(50);

/// Waits until `probe` finds what it looks for (`Ok`), asking again every 50 ms;
/// after `within` the test fails naming `what` it waited for and what the probe
/// saw last (`Err`).
pub async fn eventually<T, E: std::fmt::Debug>(
    within: Duration,
    what: &str,
    probe: impl AsyncFnMut() -> Result<T, E>,
) -> T {
    eventually_with(within, POLL, what, String::new, probe).await
}

/// [`eventually`] on terms of its own: asking every `every` (less often than
/// [`POLL`] when each probe does something, such as starting a run), and
/// showing `context()` too when it fails — what a reader needs besides the
/// probe's last sighting (the processes' logs, all that did arrive), gathered
/// only then.
pub async fn eventually_with<T, E: std::fmt::Debug>(
    within: Duration,
    every: Duration,
    what: &str,
    context: impl FnOnce() -> String,
    mut probe: impl AsyncFnMut() -> Result<T, E>,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        match probe().await {
            Ok(found) => return found,
            Err(last) if Instant::now() >= deadline => {
                let context = context();
                let sep = if context.is_empty() { "" } else { "\n" };
                panic!("{what}: not within {within:?}; last seen: {last:?}{sep}{context}")
            }
            Err(_) => tokio::time::sleep(every).await,
        }
    }
}
