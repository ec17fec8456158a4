//! A TCP proxy between the client and the gateway that cuts one connection on
//! purpose, to prove the client re-attaches and prints each token exactly once.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Clone, Copy)]
pub enum Cut {
    /// Cut the first connection carrying an SSE response after `n` text events.
    AfterTextEvents(usize),
    /// Drop the first SSE response before any of it reaches the client (the
    /// request itself did reach the gateway).
    BeforeFirstSseResponse,
}

pub struct Proxy {
    pub url: String,
    cut_done: Arc<AtomicBool>,
}

impl Proxy {
    pub fn start(upstream: &str, cut: Cut) -> Proxy {
        let upstream = upstream.trim_start_matches("http://").to_string();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let cut_done = Arc::new(AtomicBool::new(false));
        let done = cut_done.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let Ok(server) = TcpStream::connect(&upstream) else {
                    return;
                };
                let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || copy(c2, s2, |_| false));
                let done = done.clone();
                let (c3, s3) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || {
                    let mut seen = String::new();
                    copy_until(s3, c3, &mut seen, cut, &done);
                    let _ = client.shutdown(Shutdown::Both);
                    let _ = server.shutdown(Shutdown::Both);
                });
            }
        });
        Proxy { url, cut_done }
    }

    pub fn did_cut(&self) -> bool {
        self.cut_done.load(Ordering::SeqCst)
    }
}

fn copy(mut from: TcpStream, mut to: TcpStream, _stop: impl Fn(&[u8]) -> bool) {
    let mut buf = [0u8; 8192];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 || to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// Server → client, watching for the moment to cut.
fn copy_until(
    mut from: TcpStream,
    mut to: TcpStream,
    seen: &mut String,
    cut: Cut,
    done: &AtomicBool,
) {
    let mut buf = [0u8; 8192];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let chunk = String::from_utf8_lossy(&buf[..n]);
        seen.push_str(&chunk);
        let sse = seen.contains("text/event-stream");
        match cut {
            Cut::BeforeFirstSseResponse if sse && !done.swap(true, Ordering::SeqCst) => return,
            Cut::AfterTextEvents(k)
                if sse
                    && seen.matches("event: text").count() >= k
                    && !done.load(Ordering::SeqCst) =>
            {
                // Forward only up to the end of the k-th text event's id line,
                // so the client holds a partial event when the line drops.
                done.store(true, Ordering::SeqCst);
                let _ = to.write_all(&buf[..n / 2]);
                return;
            }
            _ => {}
        }
        if to.write_all(&buf[..n]).is_err() {
            return;
        }
    }
}
