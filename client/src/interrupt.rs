//! Ctrl-C as a stream of events. One listener is created before a reply starts
//! and lives as long as it, so no interrupt is missed between polls; once one
//! exists the signal no longer kills the process, and the caller decides.

pub struct Interrupts {
    #[cfg(unix)]
    inner: tokio::signal::unix::Signal,
}

impl Interrupts {
    pub fn new() -> std::io::Result<Interrupts> {
        #[cfg(unix)]
        {
            let inner = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
            Ok(Interrupts { inner })
        }
        #[cfg(not(unix))]
        Ok(Interrupts {})
    }

    /// The next Ctrl-C.
    pub async fn next(&mut self) {
        #[cfg(unix)]
        {
            self.inner.recv().await;
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
