//! Reading run-event streams the way a client does, and the assertions every
//! streaming test shares (contiguous seqs, the text a client would show).

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::Value;

#[derive(Debug, Clone)]
pub struct Ev {
    pub seq: u64,
    pub ty: String,
    pub data: Value,
}

/// An SSE response being read.
pub struct Sse {
    inner: std::pin::Pin<Box<dyn futures::Stream<Item = Ev> + Send>>,
}

impl Sse {
    pub fn new(resp: reqwest::Response) -> Sse {
        let stream = resp
            .bytes_stream()
            .eventsource()
            .filter_map(|e| async move {
                let e = e.ok()?;
                let data: Value = serde_json::from_str(&e.data).ok()?;
                Some(Ev {
                    // Streams other than a run's (a knowledge base's) have no ids.
                    seq: e.id.parse().unwrap_or(0),
                    ty: e.event,
                    data,
                })
            });
        Sse {
            inner: Box::pin(stream),
        }
    }

    /// The next event, or None at the end of the stream.
    pub async fn next(&mut self) -> Option<Ev> {
        tokio::time::timeout(Duration::from_secs(30), self.inner.next())
            .await
            .expect("event within 30 s")
    }

    /// Read up to and including the terminal event.
    pub async fn until_terminal(&mut self) -> Vec<Ev> {
        let mut out = Vec::new();
        while let Some(ev) = self.next().await {
            let end = matches!(ev.ty.as_str(), "done" | "error" | "cancelled");
            out.push(ev);
            if end {
                break;
            }
        }
        out
    }

    /// Read until `pred` holds for an event (returned with everything before it).
    pub async fn until(&mut self, mut pred: impl FnMut(&Ev) -> bool) -> Vec<Ev> {
        let mut out = Vec::new();
        while let Some(ev) = self.next().await {
            let stop = pred(&ev);
            out.push(ev);
            if stop {
                break;
            }
        }
        out
    }
}

/// `w1 w2 … wn`, the mock's reply to `@mock.tokens n`.
pub fn words(n: usize) -> String {
    (1..=n)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The text a client shows: text deltas, honouring `retrying` and attempts.
pub fn rendered_text(events: &[Ev]) -> String {
    let mut steps: std::collections::BTreeMap<u64, String> = Default::default();
    for ev in events {
        match ev.ty.as_str() {
            "text" => steps
                .entry(ev.data["step"].as_u64().unwrap())
                .or_default()
                .push_str(ev.data["delta"].as_str().unwrap()),
            "retrying" => {
                steps.remove(&ev.data["step"].as_u64().unwrap());
            }
            "run_started" => {
                let from = ev.data["resume_step"].as_u64().unwrap();
                steps.retain(|s, _| *s < from);
            }
            _ => {}
        }
    }
    steps.values().cloned().collect()
}

/// Seqs strictly 1, 2, 3, … with no gap and no duplicate.
pub fn assert_contiguous(events: &[Ev]) {
    for (i, ev) in events.iter().enumerate() {
        assert_eq!(
            ev.seq,
            i as u64 + 1,
            "seq gap or duplicate at index {i}: {:?}",
            events.iter().map(|e| e.seq).collect::<Vec<_>>()
        );
    }
}
