//! A minimal `text/event-stream` reader that stamps each event with its arrival
//! time, which is what the load tester measures (a generic SSE crate hides it).
//!
//! Only `id`, `event` and `data` matter here; comments (`: ping`) are skipped and
//! multi-line `data` is joined with `\n`, as the SSE spec says.

use std::time::Instant;

use bytes::{Buf, BytesMut};
use futures::{Stream, StreamExt};

/// One event as received.
#[derive(Debug, Clone, Default)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: String,
    pub data: String,
    pub at: Option<Instant>,
}

/// Reads events off a byte stream (a `reqwest` body).
pub struct SseReader<S> {
    body: S,
    buf: BytesMut,
    done: bool,
}

/// Why a read stopped without an event.
#[derive(Debug)]
pub enum SseEnd {
    /// The server closed the body cleanly.
    Closed,
    /// The connection failed mid-body.
    Broken(String),
}

impl<S, B, E> SseReader<S>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    pub fn new(body: S) -> Self {
        SseReader {
            body,
            buf: BytesMut::with_capacity(4096),
            done: false,
        }
    }

    /// The next event, or why there is none.
    pub async fn next(&mut self) -> Result<SseEvent, SseEnd> {
        loop {
            if let Some(ev) = self.take_event() {
                return Ok(ev);
            }
            if self.done {
                return Err(SseEnd::Closed);
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.buf.extend_from_slice(chunk.as_ref()),
                Some(Err(e)) => return Err(SseEnd::Broken(e.to_string())),
                None => self.done = true,
            }
        }
    }

    /// Parse one complete event (terminated by a blank line) out of the buffer.
    fn take_event(&mut self) -> Option<SseEvent> {
        loop {
            let end = find_blank_line(&self.buf)?;
            let block = self.buf.split_to(end.0);
            self.buf.advance(end.1);
            let mut ev = SseEvent::default();
            let mut any = false;
            for line in String::from_utf8_lossy(&block).split('\n') {
                let line = line.strip_suffix('\r').unwrap_or(line);
                if line.is_empty() || line.starts_with(':') {
                    continue;
                }
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "id" => ev.id = Some(value.to_owned()),
                    "event" => ev.event = value.to_owned(),
                    "data" => {
                        if any {
                            ev.data.push('\n');
                        }
                        ev.data.push_str(value);
                        any = true;
                    }
                    _ => {}
                }
            }
            if any || ev.id.is_some() || !ev.event.is_empty() {
                ev.at = Some(Instant::now());
                return Some(ev);
            }
        }
    }
}

/// (start of the blank line separator, its length).
fn find_blank_line(buf: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while i + 1 < buf.len() {
        if buf[i] == b'\n' {
            if buf[i + 1] == b'\n' {
                return Some((i, 2));
            }
            if buf[i + 1] == b'\r' && buf.get(i + 2) == Some(&b'\n') {
                return Some((i, 3));
            }
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn splits_events_across_chunks_and_skips_comments() {
        let chunks: Vec<Result<&[u8], String>> = vec![
            Ok(b": ping\n\nid: 1\nevent: text\nda"),
            Ok(b"ta: {\"a\":1}\n\nid: 2\ndata: x\ndata: y\n\n"),
        ];
        let mut r = SseReader::new(futures::stream::iter(chunks));
        let a = r.next().await.unwrap();
        assert_eq!(
            (a.id.as_deref(), a.event.as_str(), a.data.as_str()),
            (Some("1"), "text", "{\"a\":1}")
        );
        let b = r.next().await.unwrap();
        assert_eq!(b.data, "x\ny");
        assert!(matches!(r.next().await, Err(SseEnd::Closed)));
    }
}
