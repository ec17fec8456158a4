//! A TCP proxy between Weft and Postgres that a test stops and starts: a
//! database outage with the database itself untouched (other tests share it).
//!
//! [`PgProxy::stop`] closes the listening socket (new connections are refused, as
//! with a Postgres that is down) and cuts every connection through it (what a
//! crashed or restarted server does to its clients); [`PgProxy::start`] listens
//! on the same port again. Point `WEFT_DATABASE_URL` at [`PgProxy::url`].

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const POSTGRES: &str = "127.0.0.1:5432";

pub struct PgProxy {
    addr: SocketAddr,
    running: Mutex<Option<Running>>,
}

/// The listener's task and the token that cuts its connections.
struct Running {
    accept: JoinHandle<()>,
    cut: CancellationToken,
}

impl PgProxy {
    /// Listens on a free loopback port.
    pub async fn start_new() -> Arc<PgProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("proxy binds");
        let proxy = Arc::new(PgProxy {
            addr: listener.local_addr().unwrap(),
            running: Mutex::new(None),
        });
        proxy.serve(listener);
        proxy
    }

    /// `postgres://` URL of database `db` through the proxy.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@{}/{db}", self.addr)
    }

    /// Refuses new connections and cuts the live ones.
    pub fn stop(&self) {
        if let Some(running) = self.running.lock().unwrap().take() {
            running.accept.abort();
            running.cut.cancel();
        }
    }

    /// Listens again on the same port.
    pub async fn start(&self) {
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(listener) => break listener,
                // The aborted accept task may not have dropped its socket yet.
                Err(_) if tries < 50 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("the proxy could not listen on {} again: {e}", self.addr),
            }
        };
        self.serve(listener);
    }

    fn serve(&self, listener: TcpListener) {
        let cut = CancellationToken::new();
        let token = cut.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let token = token.clone();
                tokio::spawn(async move { pipe(client, token).await });
            }
        });
        *self.running.lock().unwrap() = Some(Running { accept, cut });
    }
}

impl Drop for PgProxy {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn pipe(mut client: TcpStream, cut: CancellationToken) {
    let Ok(mut server) = TcpStream::connect(POSTGRES).await else {
        return;
    };
    tokio::select! {
        _ = cut.cancelled() => {}
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
    }
}
